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

use ordered_seaorm::migration::{Backfill, add_ordering, drop_ordering};
use ordered_seaorm::{
    Dialect, Error, Fractional, Gapped, Id, OrderedEntity, Ordering, OrderingError, Placement,
    Position, PositionStrategy, RebalancePolicy, Slot, Spec, dialect, sql,
};
use sea_orm::{
    ConnectionTrait, Database, DatabaseConnection, DbBackend, DbErr, Statement, TransactionTrait,
};
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

static GAPPED: Gapped = Gapped::DEFAULT;
static TIGHT: Gapped = Gapped::new(4);
static KEYS: Fractional = Fractional::DEFAULT;
static SHORT_KEYS: Fractional = Fractional::new(ordered_seaorm::key::Alphabet::BASE62, 10);

fn engines() -> Vec<(&'static str, String)> {
    let required = std::env::var("ORDERED_REQUIRE_DBS").is_ok_and(|v| v == "1");
    let mut out = vec![("sqlite", String::new())];
    for (name, var) in [
        ("postgres", "ORDERED_PG_URL"),
        ("mysql", "ORDERED_MYSQL_URL"),
    ] {
        match std::env::var(var) {
            Ok(url) if !url.is_empty() => out.push((name, url)),
            _ if required => panic!("ORDERED_REQUIRE_DBS=1 but {var} is not set"),
            _ => eprintln!("skipped {name}: {var} is not set"),
        }
    }
    out
}

async fn connect(engine: &str, url: &str, db: &str) -> DatabaseConnection {
    connect_with(engine, url, db, 8).await
}

async fn connect_with(engine: &str, url: &str, db: &str, sqlite_pool: u32) -> DatabaseConnection {
    if engine == "sqlite" {
        let path = std::env::temp_dir().join(format!("ordered-sea-{db}.db"));
        for ext in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
        }
        let mut opts =
            sea_orm::ConnectOptions::new(format!("sqlite://{}?mode=rwc", path.display()));
        opts.max_connections(sqlite_pool).min_connections(1);
        let c = Database::connect(opts).await.unwrap();
        c.execute_unprepared("PRAGMA journal_mode = WAL")
            .await
            .unwrap();
        c
    } else {
        let mut opts = sea_orm::ConnectOptions::new(url.to_owned());
        opts.max_connections(10);
        Database::connect(opts)
            .await
            .unwrap_or_else(|e| panic!("{engine} at {url}: {e}"))
    }
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn spec_for(test: &str, strategy: &'static dyn PositionStrategy, policy: RebalancePolicy) -> Spec {
    Spec {
        table: leak(format!("s_{test}_i")),
        id: "id",
        parent: "parent_id",
        position: "position",
        parent_table: leak(format!("s_{test}_p")),
        parent_id: "id",
        version: Some("version"),
        unique: None,
        strategy,
        policy,
    }
}

async fn exec(db: &impl ConnectionTrait, s: &str) {
    db.execute_unprepared(s)
        .await
        .unwrap_or_else(|e| panic!("{s}: {e}"));
}

async fn reset(db: &DatabaseConnection, spec: &Spec, parents: &[Id]) {
    let d = dialect(db.get_database_backend()).unwrap();
    let q = |s: &str| sql::quote(d, s);
    exec(db, &format!("DROP TABLE IF EXISTS {}", q(spec.table))).await;
    exec(
        db,
        &format!("DROP TABLE IF EXISTS {}", q(spec.parent_table)),
    )
    .await;
    use ordered_seaorm::__private::core_migration::{create_parent_table, create_table};
    for m in [
        create_parent_table(d, spec, &[("name", "VARCHAR(100)")]),
        create_table(d, spec, &[("title", "VARCHAR(100) NOT NULL")]),
    ] {
        for s in &m.up {
            exec(db, s).await;
        }
    }
    for p in parents {
        exec(
            db,
            &format!(
                "INSERT INTO {} ({}, {}) VALUES ({p}, 'p{p}')",
                q(spec.parent_table),
                q("id"),
                q("name")
            ),
        )
        .await;
    }
}

/// Inserts an item row with raw SQL (tables named per test have no entity).
async fn insert_item(
    txn: &sea_orm::DatabaseTransaction,
    spec: Spec,
    title: String,
    slot: Slot,
) -> Result<Id, DbErr> {
    let backend = txn.get_database_backend();
    let d = dialect(backend).map_err(DbErr::from)?;
    let q = |s: &str| sql::quote(d, s);
    let pos: sea_orm::Value = match &slot.position {
        Position::Int(v) => (*v).into(),
        Position::Key(k) => k.clone().into(),
    };
    let (ph, returning) = match d {
        Dialect::Postgres => (
            "$1, $2, $3",
            format!(" RETURNING CAST({} AS BIGINT) AS id", q("id")),
        ),
        Dialect::Sqlite => ("?, ?, ?", format!(" RETURNING {} AS id", q("id"))),
        Dialect::Mysql => ("?, ?, ?", String::new()),
    };
    let stmt = Statement::from_sql_and_values(
        backend,
        format!(
            "INSERT INTO {} ({}, {}, {}) VALUES ({ph}){returning}",
            q(spec.table),
            q("parent_id"),
            q("title"),
            q("position")
        ),
        [slot.parent.into(), title.into(), pos],
    );
    if d == Dialect::Mysql {
        return Ok(txn.execute_raw(stmt).await?.last_insert_id() as Id);
    }
    let row = txn
        .query_one_raw(stmt)
        .await?
        .ok_or_else(|| DbErr::RecordNotInserted)?;
    row.try_get::<i64>("", "id")
}

fn inserter(
    spec: Spec,
    title: String,
) -> impl for<'a> FnMut(&'a sea_orm::DatabaseTransaction, Slot) -> ordered_seaorm::InsertFuture<'a, Id>
+ Send {
    move |txn, slot| {
        let t = title.clone();
        Box::pin(async move { insert_item(txn, spec, t, slot).await })
    }
}

async fn add(db: &DatabaseConnection, spec: Spec, parent: Id, at: Placement, title: &str) -> Id {
    let o = Ordering::new(spec);
    let f = inserter(spec, title.to_owned());
    let r = match at {
        Placement::First => o.insert_first(db, parent, f).await,
        Placement::Last => o.insert_last(db, parent, f).await,
        Placement::Before(a) => o.insert_before(db, parent, a, f).await,
        Placement::After(a) => o.insert_after(db, parent, a, f).await,
        Placement::Between { prev, next } => o.insert_between(db, parent, prev, next, f).await,
        Placement::Index(i) => o.insert_at_index(db, parent, i, f).await,
    };
    r.unwrap_or_else(|e| panic!("insert {title}: {e}")).value
}

async fn ids(db: &impl ConnectionTrait, spec: Spec, parent: Id) -> Vec<Id> {
    Ordering::new(spec)
        .list(db, parent)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect()
}

async fn sound(db: &DatabaseConnection, spec: Spec, parent: Id) -> Vec<ordered_seaorm::Row> {
    let rows = Ordering::new(spec).list(db, parent).await.unwrap();
    let report = Ordering::new(spec).verify(db, parent).await.unwrap();
    assert!(report.is_ok(), "{report:?}");
    assert!(rows.windows(2).all(|w| w[0].position < w[1].position));
    rows
}

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
        let parent_spec = Spec {
            parent_id: "id",
            ..spec
        };
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
            let m = track::Entity::ordering()
                .insert_last(&db, 1, |txn, slot| {
                    Box::pin(async move {
                        track::ActiveModel {
                            playlist_id: Set(slot.parent),
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
        let o = track::Entity::ordering();
        let moved = o
            .move_before(&db, made["Credits"], made["Demo"])
            .await
            .unwrap();
        assert_eq!(moved.rows_written, 1);
        let setup = o
            .insert_between(
                &db,
                1,
                Some(made["Credits"]),
                Some(made["Demo"]),
                |txn, slot| {
                    Box::pin(async move {
                        track::ActiveModel {
                            playlist_id: Set(slot.parent),
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
            ids(&db, spec, 1).await,
            [made["Intro"], made["Credits"], setup.id, made["Demo"]],
            "{engine}"
        );
        let stale = o
            .move_between(
                &db,
                made["Intro"],
                Some(made["Credits"]),
                Some(made["Demo"]),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(
                stale.ordering(),
                Some(OrderingError::StaleNeighbours { .. })
            ),
            "{engine}: {stale}"
        );
        o.rebalance(&db, 1).await.unwrap();
        let pos: Vec<Position> = sound(&db, spec, 1)
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
            reset(&db, &spec, &[1, 2]).await;
            let o = Ordering::new(spec);
            let a = add(&db, spec, 1, Placement::Last, "a").await;
            let b = add(&db, spec, 1, Placement::First, "b").await;
            let d = add(&db, spec, 1, Placement::After(a), "d").await;
            let e = add(&db, spec, 1, Placement::Before(a), "e").await;
            let f = add(&db, spec, 1, Placement::Index(2), "f").await;
            let g = add(
                &db,
                spec,
                1,
                Placement::Between {
                    prev: Some(f),
                    next: Some(a),
                },
                "g",
            )
            .await;
            assert_eq!(ids(&db, spec, 1).await, [b, e, f, g, a, d]);
            o.move_after(&db, b, d).await.unwrap();
            o.move_to_start(&db, d).await.unwrap();
            o.move_to_end(&db, e).await.unwrap();
            o.move_between(&db, a, Some(d), Some(f)).await.unwrap();
            o.move_to_index(&db, d, 3).await.unwrap();
            o.move_up(&db, b).await.unwrap();
            o.move_down(&db, a).await.unwrap();
            o.swap(&db, f, e).await.unwrap();
            assert_eq!(
                ids(&db, spec, 1).await,
                [e, a, g, b, d, f],
                "{engine} {sname}"
            );
            assert_eq!(o.index_of(&db, b).await.unwrap(), 3);
            o.move_to_parent(&db, g, 2, Placement::First).await.unwrap();
            o.remove(&db, d).await.unwrap();
            let out = o.reorder(&db, 1, &[f, e, a, b]).await.unwrap();
            assert_eq!(out.rows_written, 1);
            assert_eq!(ids(&db, spec, 1).await, [f, e, a, b]);
            assert_eq!(ids(&db, spec, 2).await, [g]);
            sound(&db, spec, 1).await;
            // stale and bad requests: typed, and nothing changes
            let before = o.list(&db, 1).await.unwrap();
            let cases: Vec<(Result<ordered_seaorm::Outcome, Error>, OrderingError)> = vec![
                (
                    o.move_before(&db, 999, a).await,
                    OrderingError::NotFound { id: 999 },
                ),
                (
                    o.move_after(&db, a, g).await,
                    OrderingError::NotInCollection { id: g, parent: 1 },
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
                        parent: 1,
                        expected: 0,
                        actual: 17,
                    },
                ),
            ];
            for (i, (got, want)) in cases.into_iter().enumerate() {
                let err = got.expect_err("must fail");
                assert_eq!(
                    err.ordering(),
                    Some(&want),
                    "{engine} {sname} case {i}: {err}"
                );
            }
            let missing = o
                .insert_last(&db, 77, inserter(spec, "x".into()))
                .await
                .unwrap_err();
            assert_eq!(
                missing.ordering(),
                Some(&OrderingError::ParentNotFound { parent: 77 })
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
            reset(&db, &spec, &[1]).await;
            let mut items = Vec::new();
            for i in 0..40 {
                items.push(add(&db, spec, 1, Placement::Last, &format!("i{i}")).await);
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
                        let kind = match Ordering::new(spec).move_after(&db, item, anchor).await {
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
            let rows = sound(&db, spec, 1).await;
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
            assert_eq!(ids(&db, spec, 1).await, [1, 2, 3], "{engine} {sname}");
            sound(&db, spec, 1).await;
            Ordering::new(spec).move_to_start(&db, 3).await.unwrap();
            assert_eq!(ids(&db, spec, 1).await, [3, 1, 2]);
            drop_ordering(&manager, &spec).await.unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn inside_the_callers_transaction() {
    for (engine, url) in engines() {
        let db = connect(engine, &url, "nested").await;
        let spec = spec_for("nested", &GAPPED, RebalancePolicy::Window);
        reset(&db, &spec, &[1]).await;
        let a = add(&db, spec, 1, Placement::Last, "a").await;
        let b = add(&db, spec, 1, Placement::Last, "b").await;
        let txn = db.begin().await.unwrap();
        Ordering::new(spec).move_to_start(&txn, b).await.unwrap();
        assert_eq!(ids(&txn, spec, 1).await, [b, a]);
        // a refusal leaves the caller's transaction usable
        let e = Ordering::new(spec).swap(&txn, a, a).await.unwrap_err();
        assert!(matches!(
            e.ordering(),
            Some(OrderingError::SelfReference { .. })
        ));
        txn.rollback().await.unwrap();
        assert_eq!(ids(&db, spec, 1).await, [a, b], "{engine}");
        let txn = db.begin().await.unwrap();
        Ordering::new(spec).move_to_start(&txn, b).await.unwrap();
        txn.commit().await.unwrap();
        assert_eq!(ids(&db, spec, 1).await, [b, a], "{engine}");
    }
}
