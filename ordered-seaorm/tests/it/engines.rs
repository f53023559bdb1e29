//! Every operation, async, against the real engines (SQLite always; PostgreSQL and
//! MariaDB when `ORDERED_PG_URL` / `ORDERED_MYSQL_URL` are set; `ORDERED_REQUIRE_DBS=1`
//! turns a missing URL into a failure).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use ordered_core::adapter::sql;
use ordered_seaorm::migration::{Backfill, add_ordering, adopt_ordering, drop_ordering};
use ordered_seaorm::{
    Error, Id, OrderedEntity, OrderedTable, OrderingError, Placement, Position, PositionStrategy,
    RebalancePolicy, dialect,
};
use sea_orm::{DbBackend, TransactionTrait};
use sea_orm_migration::SchemaManager;

mod track {
    use ordered_seaorm::DeriveOrdered;
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
    #[sea_orm(table_name = "sea_tracks")]
    #[ordered(parent_table = "sea_playlists", version = "version")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        #[ordered(scope)]
        pub playlist_id: i64,
        pub title: String,
        #[ordered(position)]
        pub position: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn derived_entity_playlist_scenario() {
    use sea_orm::{ActiveModelTrait, Set};
    for (engine, url) in engines() {
        let db = connect(engine, &url, "derive").await;
        let spec = track::Entity::spec();
        assert_eq!(
            (spec.table, spec.parent, spec.position, spec.version),
            ("sea_tracks", "playlist_id", "position", Some("version"))
        );
        let d = dialect(db.get_database_backend()).unwrap();
        let q = |s: &str| sql::quote(d, s);
        exec(&db, &format!("DROP TABLE IF EXISTS {}", q("sea_tracks"))).await;
        exec(&db, &format!("DROP TABLE IF EXISTS {}", q("sea_playlists"))).await;
        let parent_spec = spec
            .with_parent_id("id")
            .with_id_type(ordered_core::KeyType::Int)
            .with_parent_type(ordered_core::KeyType::Int)
            .with_split_by(&[])
            .with_null_scope(ordered_core::NullScope::Refused)
            .with_link(false)
            .without_filter();
        for m in [
            ordered_seaorm::__private::core_migration::create_parent_table(d, &parent_spec, &[]),
            ordered_seaorm::__private::core_migration::create_table(
                d,
                &spec,
                &[("title", "VARCHAR(100) NOT NULL")],
            ),
        ] {
            for s in &m.up {
                exec(&db, s).await;
            }
        }
        exec(
            &db,
            &format!(
                "INSERT INTO {} ({}) VALUES (1)",
                q("sea_playlists"),
                q("id")
            ),
        )
        .await;
        let mut made = BTreeMap::new();
        for title in ["Intro", "Demo", "Credits"] {
            let m = track::Entity::ordered()
                .untyped()
                .insert_last(&db, ordered_seaorm::Id::Int(1), |txn, slot| {
                    Box::pin(async move {
                        track::ActiveModel {
                            playlist_id: Set(slot.scope()?),
                            title: Set(title.to_owned()),
                            position: Set(slot.int()?),
                            ..Default::default()
                        }
                        .insert(txn)
                        .await
                    })
                })
                .await
                .unwrap()
                .value;
            made.insert(title, m.id);
        }
        let o = track::Entity::ordered().untyped();
        let moved = o
            .move_before(
                &db,
                ordered_seaorm::Id::Int(made["Credits"]),
                ordered_seaorm::Id::Int(made["Demo"]),
            )
            .await
            .unwrap();
        assert_eq!(moved.rows_written, 1);
        let setup = o
            .insert_between(
                &db,
                ordered_seaorm::Id::Int(1),
                Some(ordered_seaorm::Id::Int(made["Credits"])),
                Some(ordered_seaorm::Id::Int(made["Demo"])),
                |txn, slot| {
                    Box::pin(async move {
                        track::ActiveModel {
                            playlist_id: Set(slot.scope()?),
                            title: Set("Setup".to_owned()),
                            position: Set(slot.int()?),
                            ..Default::default()
                        }
                        .insert(txn)
                        .await
                    })
                },
            )
            .await
            .unwrap()
            .value;
        assert_eq!(
            ids(&db, spec, ordered_seaorm::Id::Int(1)).await,
            [made["Intro"], made["Credits"], setup.id, made["Demo"]],
            "{engine}"
        );
        let stale = o
            .move_between(
                &db,
                ordered_seaorm::Id::Int(made["Intro"]),
                Some(ordered_seaorm::Id::Int(made["Credits"])),
                Some(ordered_seaorm::Id::Int(made["Demo"])),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(stale.refusal(), Some(OrderingError::StaleNeighbours { .. })),
            "{engine}: {stale}"
        );
        o.rebalance(&db, ordered_seaorm::Id::Int(1)).await.unwrap();
        let pos: Vec<Position> = sound(&db, spec, ordered_seaorm::Id::Int(1))
            .await
            .into_iter()
            .map(|r| r.position)
            .collect();
        assert_eq!(pos, [1024, 2048, 3072, 4096].map(Position::Int), "{engine}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_operation_and_stale_requests() {
    for (engine, url) in engines() {
        for (sname, strategy) in [
            ("gapped", &GAPPED as &'static dyn PositionStrategy),
            ("keys", &KEYS),
        ] {
            let test = format!("ops_{sname}");
            let db = connect(engine, &url, &test).await;
            let spec = spec_for(&test, strategy, RebalancePolicy::Window);
            reset(
                &db,
                &spec,
                &[ordered_seaorm::Id::Int(1), ordered_seaorm::Id::Int(2)],
            )
            .await;
            let o = OrderedTable::new(spec);
            let a = add(&db, spec, ordered_seaorm::Id::Int(1), Placement::Last, "a").await;
            let b = add(&db, spec, ordered_seaorm::Id::Int(1), Placement::First, "b").await;
            let d = add(
                &db,
                spec,
                ordered_seaorm::Id::Int(1),
                Placement::After(a),
                "d",
            )
            .await;
            let e = add(
                &db,
                spec,
                ordered_seaorm::Id::Int(1),
                Placement::Before(a),
                "e",
            )
            .await;
            let f = add(
                &db,
                spec,
                ordered_seaorm::Id::Int(1),
                Placement::Index(2),
                "f",
            )
            .await;
            let g = add(
                &db,
                spec,
                ordered_seaorm::Id::Int(1),
                Placement::Between {
                    prev: Some(f),
                    next: Some(a),
                },
                "g",
            )
            .await;
            assert_eq!(
                ids(&db, spec, ordered_seaorm::Id::Int(1)).await,
                [b, e, f, g, a, d]
            );
            o.move_after(&db, b, d).await.unwrap();
            o.move_to_start(&db, d).await.unwrap();
            o.move_to_end(&db, e).await.unwrap();
            o.move_between(&db, a, Some(d), Some(f)).await.unwrap();
            o.move_to_index(&db, d, 3).await.unwrap();
            o.move_up(&db, b).await.unwrap();
            o.move_down(&db, a).await.unwrap();
            o.swap(&db, f, e).await.unwrap();
            assert_eq!(
                ids(&db, spec, ordered_seaorm::Id::Int(1)).await,
                [e, a, g, b, d, f],
                "{engine} {sname}"
            );
            assert_eq!(o.index_of(&db, b).await.unwrap(), 3);
            o.move_to_parent(&db, g, ordered_seaorm::Id::Int(2), Placement::First)
                .await
                .unwrap();
            o.remove(&db, d).await.unwrap();
            let out = o
                .reorder(&db, ordered_seaorm::Id::Int(1), &[f, e, a, b])
                .await
                .unwrap();
            assert_eq!(out.rows_written, 1);
            assert_eq!(
                ids(&db, spec, ordered_seaorm::Id::Int(1)).await,
                [f, e, a, b]
            );
            assert_eq!(ids(&db, spec, ordered_seaorm::Id::Int(2)).await, [g]);
            sound(&db, spec, ordered_seaorm::Id::Int(1)).await;
            // stale and bad requests: typed, and nothing changes
            let before = o.list(&db, 1).await.unwrap();
            let cases: Vec<(Result<ordered_seaorm::Outcome, Error>, OrderingError)> = vec![
                (
                    o.move_before(&db, ordered_seaorm::Id::Int(999), a).await,
                    OrderingError::NotFound {
                        id: ordered_seaorm::Id::Int(999),
                    },
                ),
                (
                    o.move_after(&db, a, g).await,
                    OrderingError::NotInCollection {
                        id: g,
                        parent: ordered_seaorm::Id::Int(1),
                    },
                ),
                (
                    o.move_after(&db, a, a).await,
                    OrderingError::SelfReference { id: a },
                ),
                (
                    o.move_between(&db, b, Some(f), Some(a)).await,
                    OrderingError::StaleNeighbours {
                        prev: Some(f),
                        next: Some(a),
                    },
                ),
                (
                    o.move_to_index(&db, a, 9).await,
                    OrderingError::IndexOutOfRange { index: 9 },
                ),
                (
                    o.clone().expect_version(0).move_to_end(&db, a).await,
                    OrderingError::VersionConflict {
                        parent: ordered_seaorm::Id::Int(1),
                        expected: 0,
                        actual: 17,
                    },
                ),
            ];
            for (i, (got, want)) in cases.into_iter().enumerate() {
                let err = got.expect_err("must fail");
                assert_eq!(
                    err.refusal(),
                    Some(&want),
                    "{engine} {sname} case {i}: {err}"
                );
            }
            let missing = o
                .insert_last(&db, ordered_seaorm::Id::Int(77), inserter(spec, "x".into()))
                .await
                .unwrap_err();
            assert_eq!(
                missing.refusal(),
                Some(&OrderingError::ParentNotFound {
                    parent: ordered_seaorm::Id::Int(77)
                })
            );
            assert_eq!(o.list(&db, 1).await.unwrap(), before, "{engine} {sname}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_tasks_hundred_moves_into_one_gap() {
    for (engine, url) in engines() {
        for (sname, strategy) in [
            ("tight", &TIGHT as &'static dyn PositionStrategy),
            ("shortkeys", &SHORT_KEYS),
        ] {
            let test = format!("conc_{sname}");
            let db = connect(engine, &url, &test).await;
            let spec = spec_for(&test, strategy, RebalancePolicy::Window);
            reset(&db, &spec, &[ordered_seaorm::Id::Int(1)]).await;
            let mut items = Vec::new();
            for i in 0..40 {
                items.push(
                    add(
                        &db,
                        spec,
                        ordered_seaorm::Id::Int(1),
                        Placement::Last,
                        &format!("i{i}"),
                    )
                    .await,
                );
            }
            let anchor = items[0];
            let outcomes = Arc::new(Mutex::new(BTreeMap::<&'static str, u64>::new()));
            let mut tasks = Vec::new();
            for w in 0..8u64 {
                let (db, items, outcomes) = (db.clone(), items.clone(), outcomes.clone());
                tasks.push(tokio::spawn(async move {
                    let mut x = 0x9E37_79B9_7F4A_7C15_u64 ^ (w + 1);
                    for _ in 0..100 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let item = items[1 + (x % (items.len() as u64 - 1)) as usize];
                        let kind = match OrderedTable::new(spec).move_after(&db, item, anchor).await
                        {
                            Ok(_) => "ok",
                            Err(Error::RetriesExhausted { .. }) => "retries exhausted",
                            Err(e) => panic!("unexpected {e}"),
                        };
                        *outcomes.lock().unwrap().entry(kind).or_default() += 1;
                    }
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
            let outcomes = outcomes.lock().unwrap().clone();
            let ok = outcomes.get("ok").copied().unwrap_or(0);
            assert!(ok >= 720, "{engine} {sname}: {outcomes:?}");
            let rows = sound(&db, spec, ordered_seaorm::Id::Int(1)).await;
            let mut got: Vec<Id> = rows.iter().map(|r| r.id).collect();
            assert_eq!(got[0], anchor);
            got.sort_unstable();
            let mut want = items.clone();
            want.sort_unstable();
            assert_eq!(got, want, "{engine} {sname}: lost or duplicated");
            eprintln!("seaorm {engine} {sname}: {outcomes:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn schema_manager_migrations_up_down_up() {
    for (engine, url) in engines() {
        for (sname, strategy) in [
            ("gapped", &GAPPED as &'static dyn PositionStrategy),
            ("keys", &KEYS),
        ] {
            let test = format!("mig_{sname}");
            // one SQLite connection, SeaORM's default: with several, a connection that did
            // not run the DDL was seen reading a stale schema after DROP COLUMN
            let db = connect_with(engine, &url, &test, 1).await;
            let spec = spec_for(&test, strategy, RebalancePolicy::Window);
            let d = dialect(db.get_database_backend()).unwrap();
            let q = |s: &str| sql::quote(d, s);
            exec(&db, &format!("DROP TABLE IF EXISTS {}", q(spec.table))).await;
            exec(
                &db,
                &format!("DROP TABLE IF EXISTS {}", q(spec.parent_table)),
            )
            .await;
            let pk = match db.get_database_backend() {
                DbBackend::Postgres => "BIGSERIAL PRIMARY KEY",
                DbBackend::MySql => "BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY",
                _ => "INTEGER PRIMARY KEY AUTOINCREMENT",
            };
            exec(
                &db,
                &format!("CREATE TABLE {} ({} {pk})", q(spec.parent_table), q("id")),
            )
            .await;
            exec(&db, &format!(
                "CREATE TABLE {} ({} {pk}, {} BIGINT NOT NULL, {} VARCHAR(100) NOT NULL DEFAULT '', FOREIGN KEY ({}) REFERENCES {} ({}))",
                q(spec.table), q("id"), q("parent_id"), q("title"), q("parent_id"), q(spec.parent_table), q("id")
            )).await;
            exec(
                &db,
                &format!(
                    "INSERT INTO {} ({}) VALUES (1)",
                    q(spec.parent_table),
                    q("id")
                ),
            )
            .await;
            for _ in 0..3 {
                exec(
                    &db,
                    &format!(
                        "INSERT INTO {} ({}) VALUES (1)",
                        q(spec.table),
                        q("parent_id")
                    ),
                )
                .await;
            }
            let manager = SchemaManager::new(&db);
            add_ordering(&manager, &spec, Backfill::By(&["id"]))
                .await
                .unwrap();
            drop_ordering(&manager, &spec).await.unwrap();
            add_ordering(&manager, &spec, Backfill::By(&["id"]))
                .await
                .unwrap();
            // a second run is refused before any change (on MySQL/MariaDB it used to add
            // the version column, then fail on the position column)
            let again = add_ordering(&manager, &spec, Backfill::By(&["id"]))
                .await
                .unwrap_err();
            assert!(
                again
                    .to_string()
                    .contains("already has its position column"),
                "{engine} {sname}: {again}"
            );
            assert_eq!(
                ids(&db, spec, ordered_seaorm::Id::Int(1)).await,
                [1, 2, 3],
                "{engine} {sname}"
            );
            sound(&db, spec, ordered_seaorm::Id::Int(1)).await;
            OrderedTable::new(spec)
                .move_to_start(&db, ordered_seaorm::Id::Int(3))
                .await
                .unwrap();
            assert_eq!(ids(&db, spec, ordered_seaorm::Id::Int(1)).await, [3, 1, 2]);
            drop_ordering(&manager, &spec).await.unwrap();
            if sname == "gapped" {
                // the app's own integer column, taken over with its order (2, 0, 1)
                exec(
                    &db,
                    &format!(
                        "ALTER TABLE {} ADD COLUMN {} INTEGER NULL",
                        q(spec.table),
                        q("position")
                    ),
                )
                .await;
                for (id, position) in [(1, 2), (2, 0), (3, 1)] {
                    exec(
                        &db,
                        &format!(
                            "UPDATE {} SET {} = {position} WHERE {} = {id}",
                            q(spec.table),
                            q("position"),
                            q("id")
                        ),
                    )
                    .await;
                }
                adopt_ordering(&manager, &spec, &[]).await.unwrap();
                assert_eq!(
                    ids(&db, spec, ordered_seaorm::Id::Int(1)).await,
                    [2, 3, 1],
                    "{engine} adopted"
                );
                sound(&db, spec, ordered_seaorm::Id::Int(1)).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn inside_the_callers_transaction() {
    for (engine, url) in engines() {
        let db = connect(engine, &url, "nested").await;
        let spec = spec_for("nested", &GAPPED, RebalancePolicy::Window);
        reset(&db, &spec, &[ordered_seaorm::Id::Int(1)]).await;
        let a = add(&db, spec, ordered_seaorm::Id::Int(1), Placement::Last, "a").await;
        let b = add(&db, spec, ordered_seaorm::Id::Int(1), Placement::Last, "b").await;
        let txn = db.begin().await.unwrap();
        OrderedTable::new(spec)
            .move_to_start(&txn, b)
            .await
            .unwrap();
        assert_eq!(ids(&txn, spec, ordered_seaorm::Id::Int(1)).await, [b, a]);
        // a refusal leaves the caller's transaction usable
        let e = OrderedTable::new(spec).swap(&txn, a, a).await.unwrap_err();
        assert!(matches!(
            e.refusal(),
            Some(OrderingError::SelfReference { .. })
        ));
        txn.rollback().await.unwrap();
        assert_eq!(
            ids(&db, spec, ordered_seaorm::Id::Int(1)).await,
            [a, b],
            "{engine}"
        );
        let txn = db.begin().await.unwrap();
        OrderedTable::new(spec)
            .move_to_start(&txn, b)
            .await
            .unwrap();
        txn.commit().await.unwrap();
        assert_eq!(
            ids(&db, spec, ordered_seaorm::Id::Int(1)).await,
            [b, a],
            "{engine}"
        );
    }
}

/// Request records through SeaORM: the migration makes the table, a repeat under a key
/// is replayed, and inside the caller's transaction the record rolls back with it (the
/// repeat then applies). On SQLite (a database of the test's own) the table is then
/// dropped, and a keyed write says how to make it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn request_records_through_the_migration_and_the_callers_transaction() {
    use ordered_seaorm::migration::{create_requests_table, drop_requests_table};
    for (engine, url) in engines() {
        let db = connect(engine, &url, "records").await;
        let spec = spec_for("records", &GAPPED, RebalancePolicy::Window);
        reset(&db, &spec, &[ordered_seaorm::Id::Int(1)]).await;
        let manager = SchemaManager::new(&db);
        create_requests_table(&manager).await.unwrap();
        let q = |s: &str| sql::quote(dialect(db.get_database_backend()).unwrap(), s);
        exec(
            &db,
            &format!(
                "DELETE FROM {} WHERE {} = '{}'",
                q("ordered_requests"),
                q("table_name"),
                spec.table
            ),
        )
        .await;
        let one = ordered_seaorm::Id::Int(1);
        let a = add(&db, spec, one, Placement::Last, "a").await;
        let b = add(&db, spec, one, Placement::Last, "b").await;
        let c = add(&db, spec, one, Placement::Last, "c").await;
        let keyed = |k: &str| OrderedTable::new(spec).request_key(k.to_owned());
        let first = keyed("up-c").move_up(&db, c).await.unwrap();
        let again = keyed("up-c").move_up(&db, c).await.unwrap();
        assert!(!first.replayed && again.replayed, "{engine}");
        assert_eq!(again.changes, first.changes, "{engine}");
        assert_eq!(
            ids(&db, spec, one).await,
            [a, c, b],
            "{engine}: moved twice"
        );
        // the caller's transaction rolled back: its record went with it
        let txn = db.begin().await.unwrap();
        keyed("up-b").move_up(&txn, b).await.unwrap();
        txn.rollback().await.unwrap();
        let applied = keyed("up-b").move_up(&db, b).await.unwrap();
        assert!(
            !applied.replayed,
            "{engine}: a rolled-back record was found"
        );
        assert_eq!(ids(&db, spec, one).await, [a, b, c], "{engine}");
        // committed with it: replayed
        let txn = db.begin().await.unwrap();
        keyed("up-c2").move_up(&txn, c).await.unwrap();
        txn.commit().await.unwrap();
        assert!(keyed("up-c2").move_up(&db, c).await.unwrap().replayed);
        assert_eq!(ids(&db, spec, one).await, [a, c, b], "{engine}");
        if engine == "sqlite" {
            drop_requests_table(&manager).await.unwrap();
            let e = keyed("up-b2").move_up(&db, b).await.unwrap_err();
            assert!(
                matches!(
                    e.refusal(),
                    Some(OrderingError::SchemaMismatch { table, .. }) if table == "ordered_requests"
                ),
                "{engine}: {e}"
            );
            assert_eq!(ids(&db, spec, one).await, [a, c, b], "{engine}");
        }
    }
}
