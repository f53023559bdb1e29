//! Lost connections through SeaORM, on the servers (SQLite has no server connection to
//! kill): a pooled connection that died between operations is replaced by the pool
//! (sqlx tests it before handing it out), and the operation succeeds; a connection
//! killed while the caller's `DatabaseTransaction` is open is `ConnectionLost`
//! (retryable, nothing applied).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::time::Duration;

use crate::common::*;
use ordered_seaorm::{Error, OrderedTable, Placement, RebalancePolicy};
use sea_orm::{ConnectionTrait, Database, DatabaseConnection, Statement, TransactionTrait};

async fn own_id(db: &impl ConnectionTrait, engine: &str) -> i64 {
    let sql = if engine == "postgres" {
        "SELECT CAST(pg_backend_pid() AS BIGINT) AS id"
    } else {
        "SELECT CAST(CONNECTION_ID() AS SIGNED) AS id"
    };
    db.query_one_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
        .unwrap()
        .unwrap()
        .try_get("", "id")
        .unwrap()
}

/// Ends the server connection `id`, and only that one.
async fn kill(db: &DatabaseConnection, engine: &str, id: i64) {
    if engine == "postgres" {
        exec(db, &format!("SELECT pg_terminate_backend({id})")).await;
    } else {
        exec(db, &format!("KILL {id}")).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
}

async fn single_connection(url: &str) -> DatabaseConnection {
    let mut opts = sea_orm::ConnectOptions::new(url.to_owned());
    opts.max_connections(1).min_connections(1);
    Database::connect(opts).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_connections_are_replaced_or_reported() {
    for (engine, url) in engines() {
        if engine == "sqlite" {
            continue;
        }
        let db = connect(engine, &url, "faults").await;
        let spec = spec_for("faults", &GAPPED, RebalancePolicy::Window);
        reset(&db, &spec, &[ordered_seaorm::Id::Int(1)]).await;
        let a = add(&db, spec, ordered_seaorm::Id::Int(1), Placement::Last, "a").await;
        let b = add(&db, spec, ordered_seaorm::Id::Int(1), Placement::Last, "b").await;

        // 1. between operations: the pool's only connection dies; the next operation
        // gets a new one
        let pool = single_connection(&url).await;
        let id = own_id(&pool, engine).await;
        kill(&db, engine, id).await;
        OrderedTable::new(spec)
            .move_to_start(&pool, b)
            .await
            .unwrap_or_else(|e| panic!("{engine}: {e:?}"));
        assert_ne!(
            own_id(&pool, engine).await,
            id,
            "{engine}: the dead connection was kept"
        );
        assert_eq!(ids(&db, spec, ordered_seaorm::Id::Int(1)).await, [b, a]);

        // 2. inside the caller's transaction: ConnectionLost, and nothing applied
        let txn = pool.begin().await.unwrap();
        let id = own_id(&txn, engine).await;
        kill(&db, engine, id).await;
        let err = OrderedTable::new(spec)
            .move_to_start(&txn, a)
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::ConnectionLost(_)) && err.is_retryable(),
            "{engine}: {err:?}"
        );
        assert!(err.to_string().contains("reconnect"), "{engine}: {err}");
        let _ = txn.rollback().await;
        assert_eq!(
            ids(&db, spec, ordered_seaorm::Id::Int(1)).await,
            [b, a],
            "{engine}: something was applied"
        );
        // and the pool serves the retry on a new connection
        OrderedTable::new(spec)
            .move_to_start(&pool, a)
            .await
            .unwrap();
        assert_eq!(ids(&db, spec, ordered_seaorm::Id::Int(1)).await, [a, b]);
    }
}
