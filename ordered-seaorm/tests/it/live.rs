//! What a live app needs from the SeaORM adapter, on the real engines: inserting the
//! app's `ActiveModel`, the before-commit hook, the versioned read, errors a handler maps
//! (also through `DbErr`), one bound for generic code, and the answer for the caller's own
//! SQLite transactions.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

use ordered_seaorm::migration::{create_ordered_table, create_parent_table};
use ordered_seaorm::{
    Error, OrderedConnection, OrderedEntity, OrderingError, Placement, Request, Spec, Status,
    refusal,
};
use sea_orm::{ActiveModelTrait, ConnectionTrait, DbErr, EntityTrait, QueryOrder, Set, Statement};
use sea_orm_migration::SchemaManager;

mod card {
    use ordered_seaorm::DeriveOrdered;
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
    #[sea_orm(table_name = "live_cards")]
    #[ordered(parent_table = "live_columns", version = "version")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        #[ordered(scope)]
        pub column_id: i64,
        pub title: String,
        #[ordered(position)]
        pub position: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

use crate::common::*;

/// The migration's description, written without the entity.
const CARDS: Spec = Spec::new("live_cards", "column_id", "live_columns").with_version("version");

async fn migrate(db: &sea_orm::DatabaseConnection) {
    let d = ordered_seaorm::dialect(db.get_database_backend()).unwrap();
    let q = |s: &str| ordered_core::adapter::sql::quote(d, s);
    for t in ["live_outbox", "live_cards", "live_columns"] {
        exec(db, &format!("DROP TABLE IF EXISTS {}", q(t))).await;
    }
    let manager = SchemaManager::new(db);
    create_parent_table(&manager, &CARDS, &[]).await.unwrap();
    create_ordered_table(&manager, &CARDS, &[("title", "VARCHAR(100) NOT NULL")])
        .await
        .unwrap();
    exec(db, "CREATE TABLE live_outbox (card BIGINT NOT NULL)").await;
    exec(db, "INSERT INTO live_columns (id) VALUES (1), (2)").await;
}

fn card(title: &str) -> card::ActiveModel {
    card::ActiveModel {
        title: Set(title.to_owned()),
        ..Default::default()
    }
}

async fn titles(db: &impl ConnectionTrait, column: i64) -> Vec<String> {
    use sea_orm::{ColumnTrait, QueryFilter};
    card::Entity::find()
        .filter(card::Column::ColumnId.eq(column))
        .order_by_asc(card::Column::Position)
        .all(db)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.title)
        .collect()
}

async fn outbox_rows(db: &impl ConnectionTrait) -> i64 {
    let int = if db.get_database_backend() == sea_orm::DbBackend::MySql {
        "SIGNED"
    } else {
        "BIGINT"
    };
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            format!("SELECT CAST(COUNT(*) AS {int}) AS n FROM live_outbox"),
        ))
        .await
        .unwrap()
        .unwrap();
    row.try_get::<i64>("", "n").unwrap()
}

/// Generic application code needs one bound.
async fn bump_to_top<E: OrderedEntity, C: OrderedConnection>(
    db: &C,
    item: i64,
) -> Result<u64, Error> {
    Ok(E::ordered()
        .untyped()
        .move_to_start(db, ordered_seaorm::Id::Int(item))
        .await?
        .rows_written)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_board_on_every_engine() {
    for (engine, url) in engines() {
        let db = connect(engine, &url, "live").await;
        migrate(&db).await;
        let spec = card::Entity::spec();
        assert_eq!(
            (
                spec.table,
                spec.parent,
                spec.position,
                spec.parent_table,
                spec.version
            ),
            (
                CARDS.table,
                CARDS.parent,
                CARDS.position,
                CARDS.parent_table,
                CARDS.version
            )
        );
        let cards = card::Entity::ordered().untyped();

        // the app's ActiveModel: the library sets the scope and the position
        let a = cards
            .insert_model(&db, 1, Placement::Last, card("a"))
            .await
            .unwrap();
        assert_eq!((a.value.column_id, a.value.position), (1, 1024), "{engine}");
        assert_eq!(a.outcome.changes.rows[0].id, a.value.id);
        let b = cards
            .insert_model(&db, 1, Placement::Last, card("b"))
            .await
            .unwrap()
            .value;
        let c = cards
            .insert_model(
                &db,
                1,
                Placement::Before(ordered_seaorm::Id::Int(b.id)),
                card("c"),
            )
            .await
            .unwrap()
            .value;
        assert_eq!(titles(&db, 1).await, ["a", "c", "b"], "{engine}");
        // insert_model takes the new id from the inserted model; a closure that does not
        // report it (Slot::inserted_id) costs the statement that reads it back
        let told = cards
            .insert_model(&db, 2, Placement::Last, card("x"))
            .await
            .unwrap();
        let plain = cards
            .insert_last(&db, ordered_seaorm::Id::Int(2), |txn, slot| {
                let mut row = card("y");
                Box::pin(async move {
                    row.column_id = Set(slot.scope()?);
                    row.position = Set(slot.int()?);
                    row.insert(txn).await
                })
            })
            .await
            .unwrap();
        assert_eq!(
            told.outcome.statements + 1,
            plain.outcome.statements,
            "{engine}"
        );
        assert_eq!(told.outcome.changes.rows[0].id, told.value.id);
        assert_eq!(plain.outcome.changes.rows[0].id, plain.value.id);
        assert_eq!(titles(&db, 2).await, ["x", "y"], "{engine}");
        // a missing parent is refused before anything is inserted
        let e = cards
            .insert_model(&db, 9, Placement::Last, card("z"))
            .await
            .unwrap_err();
        assert_eq!(
            (e.code(), e.status()),
            ("parent_not_found", Status::NotFound)
        );

        // the hook: committed with the move, rolled back with a failure
        let moved = cards
            .apply(
                &db,
                Request::MoveToParent {
                    item: ordered_seaorm::Id::Int(c.id),
                    parent: ordered_seaorm::Id::Int(2),
                    at: Placement::Last,
                },
                |txn, changes| {
                    Box::pin(async move {
                        for ch in &changes.rows {
                            txn.execute_unprepared(&format!(
                                "INSERT INTO live_outbox (card) VALUES ({})",
                                ch.id
                            ))
                            .await?;
                        }
                        Ok(())
                    })
                },
            )
            .await
            .unwrap();
        assert_eq!(moved.changes.rows.len(), 1);
        assert_eq!(
            (moved.changes.rows[0].id, moved.changes.rows[0].parent),
            (ordered_seaorm::Id::from(c.id), ordered_seaorm::Id::Int(2))
        );
        assert_eq!(
            moved.changes.versions.len(),
            2,
            "{engine}: both columns' versions"
        );
        assert_eq!(outbox_rows(&db).await, 1, "{engine}");
        let before = cards.list_versioned(&db, 1).await.unwrap();
        let failed = cards
            .apply(
                &db,
                Request::Move {
                    item: ordered_seaorm::Id::Int(b.id),
                    at: Placement::First,
                },
                |txn, _| {
                    Box::pin(async move {
                        txn.execute_unprepared("INSERT INTO live_outbox (card) VALUES (-1)")
                            .await?;
                        Err(DbErr::Custom("the outbox refused".into()))
                    })
                },
            )
            .await;
        assert!(
            matches!(failed, Err(Error::Database(DbErr::Custom(_)))),
            "{failed:?}"
        );
        assert_eq!(
            cards.list_versioned(&db, 1).await.unwrap(),
            before,
            "{engine}: nothing moved"
        );
        assert_eq!(
            outbox_rows(&db).await,
            1,
            "{engine}: the hook's row is rolled back"
        );

        // the versioned read: the version of the very rows listed
        let seen = cards.list_versioned(&db, 1).await.unwrap();
        assert_eq!(seen.rows, cards.list(&db, 1).await.unwrap());
        let v = seen.version.unwrap();
        cards
            .clone()
            .expect_version(v)
            .move_before(
                &db,
                ordered_seaorm::Id::Int(b.id),
                ordered_seaorm::Id::Int(a.value.id),
            )
            .await
            .unwrap();
        let stale = cards
            .clone()
            .expect_version(v)
            .move_before(
                &db,
                ordered_seaorm::Id::Int(a.value.id),
                ordered_seaorm::Id::Int(b.id),
            )
            .await
            .unwrap_err();
        assert_eq!(
            (stale.code(), stale.status().http()),
            ("version_conflict", 409),
            "{engine}"
        );
        assert_eq!(
            stale.to_string(),
            format!(
                "collection 1 is at version {}, not {v}: re-read the list",
                v + 1
            )
        );

        // through DbErr (what `?` in a `db.transaction` closure does), the refusal is typed
        let as_db: DbErr = stale.into();
        assert_eq!(
            refusal(&as_db),
            Some(&OrderingError::VersionConflict {
                parent: ordered_seaorm::Id::Int(1),
                expected: v,
                actual: v + 1
            })
        );
        assert!(refusal(&DbErr::Custom("other".into())).is_none());
        let stale_move = cards
            .move_between(
                &db,
                ordered_seaorm::Id::Int(a.value.id),
                Some(ordered_seaorm::Id::Int(a.value.id)),
                None,
            )
            .await
            .unwrap_err();
        assert_eq!(stale_move.code(), "self_reference");

        // the schema as the protocol needs it; an adopted table without the constraint is not
        cards.check_schema(&db).await.unwrap();
        exec(&db, "DROP TABLE IF EXISTS live_plain").await;
        exec(
            &db,
            "CREATE TABLE live_plain (id BIGINT PRIMARY KEY, column_id BIGINT NOT NULL, position BIGINT NOT NULL)",
        )
        .await;
        let plain =
            ordered_seaorm::OrderedTable::new(Spec::new("live_plain", "column_id", "live_columns"));
        let e = plain.check_schema(&db).await.unwrap_err();
        assert_eq!(
            (e.code(), e.status()),
            ("schema_mismatch", Status::Internal),
            "{engine}: {e}"
        );
        exec(&db, "DROP TABLE live_plain").await;

        // one bound for generic code
        assert_eq!(
            bump_to_top::<card::Entity, _>(&db, a.value.id)
                .await
                .unwrap(),
            1
        );
        let txn = ordered_seaorm::begin(&db).await.unwrap();
        assert_eq!(bump_to_top::<card::Entity, _>(&txn, b.id).await.unwrap(), 1);
        txn.commit().await.unwrap();
        assert_eq!(titles(&db, 1).await, ["b", "a"], "{engine}");
    }
}

/// SQLite: the caller's DEFERRED transaction that read before another connection wrote
/// cannot write; the error says to open it IMMEDIATE, and `ordered_seaorm::begin` does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferred_sqlite_transaction_gets_a_typed_error_and_begin_avoids_it() {
    use sea_orm::TransactionTrait;
    let db = connect("sqlite", "", "live_deferred").await;
    migrate(&db).await;
    let cards = card::Entity::ordered().untyped();
    let a = cards
        .insert_model(&db, 1, Placement::Last, card("a"))
        .await
        .unwrap()
        .value;
    let b = cards
        .insert_model(&db, 1, Placement::Last, card("b"))
        .await
        .unwrap()
        .value;

    // SeaORM's default begin() is DEFERRED: the read pins a snapshot, a write by another
    // connection commits, and the deferred transaction can no longer take the write lock
    let deferred = db.begin().await.unwrap();
    assert_eq!(titles(&deferred, 1).await, ["a", "b"]);
    cards
        .move_to_start(&db, ordered_seaorm::Id::Int(b.id))
        .await
        .unwrap();
    let e = cards
        .move_to_start(&deferred, ordered_seaorm::Id::Int(a.id))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::SqliteDeferred(_)), "{e:?}");
    assert!(e.is_retryable());
    assert!(e.to_string().contains("ordered_seaorm::begin"), "{e}");
    deferred.rollback().await.unwrap();

    // the same sequence in a transaction opened by ordered_seaorm::begin succeeds: the
    // other writer waits for it instead
    let immediate = ordered_seaorm::begin(&db).await.unwrap();
    assert_eq!(titles(&immediate, 1).await, ["b", "a"]);
    let other = {
        let db = db.clone();
        let cards = cards.clone();
        tokio::spawn(async move {
            cards
                .move_to_start(&db, ordered_seaorm::Id::Int(b.id))
                .await
        })
    };
    cards
        .move_to_start(&immediate, ordered_seaorm::Id::Int(a.id))
        .await
        .unwrap();
    immediate.commit().await.unwrap();
    other.await.unwrap().unwrap();
    assert_eq!(titles(&db, 1).await, ["b", "a"]);
}
