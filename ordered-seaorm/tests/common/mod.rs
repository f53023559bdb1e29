//! Test harness shared by the SeaORM tests: engines from the environment, tables named
//! per test, raw inserts, reads and soundness checks.
#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use ordered_core::adapter::sql;
use ordered_seaorm::{
    Dialect, Fractional, Gapped, Id, OrderedTable, Placement, Position, PositionStrategy,
    RebalancePolicy, Slot, Spec, dialect,
};
use sea_orm::{ConnectionTrait, Database, DatabaseConnection, DbErr, Statement};

pub static GAPPED: Gapped = Gapped::DEFAULT;
pub static TIGHT: Gapped = Gapped::new(4);
pub static KEYS: Fractional = Fractional::DEFAULT;
pub static SHORT_KEYS: Fractional = Fractional::new(ordered_seaorm::key::Alphabet::BASE62, 10);

pub fn engines() -> Vec<(&'static str, String)> {
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

pub async fn connect(engine: &str, url: &str, db: &str) -> DatabaseConnection {
    connect_with(engine, url, db, 8).await
}

pub async fn connect_with(
    engine: &str,
    url: &str,
    db: &str,
    sqlite_pool: u32,
) -> DatabaseConnection {
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

pub fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

pub fn spec_for(
    test: &str,
    strategy: &'static dyn PositionStrategy,
    policy: RebalancePolicy,
) -> Spec {
    Spec::new(
        leak(format!("s_{test}_i")),
        "parent_id",
        leak(format!("s_{test}_p")),
    )
    .with_version("version")
    .with_strategy(strategy)
    .with_policy(policy)
}

pub async fn exec(db: &impl ConnectionTrait, s: &str) {
    db.execute_unprepared(s)
        .await
        .unwrap_or_else(|e| panic!("{s}: {e}"));
}

pub async fn reset(db: &DatabaseConnection, spec: &Spec, parents: &[Id]) {
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
pub async fn insert_item(
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
        Position::Num(n) => n.get().into(),
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
        [slot.scope::<i64>()?.into(), title.into(), pos],
    );
    if d == Dialect::Mysql {
        return Ok(Id::Int(txn.execute_raw(stmt).await?.last_insert_id() as i64));
    }
    let row = txn
        .query_one_raw(stmt)
        .await?
        .ok_or_else(|| DbErr::RecordNotInserted)?;
    row.try_get::<i64>("", "id").map(Id::Int)
}

pub fn inserter(
    spec: Spec,
    title: String,
) -> impl for<'a> FnMut(&'a sea_orm::DatabaseTransaction, Slot) -> ordered_seaorm::InsertFuture<'a, Id>
+ Send {
    move |txn, slot| {
        let t = title.clone();
        Box::pin(async move { insert_item(txn, spec, t, slot).await })
    }
}

pub async fn add(
    db: &DatabaseConnection,
    spec: Spec,
    parent: Id,
    at: Placement,
    title: &str,
) -> Id {
    let o = OrderedTable::new(spec);
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

pub async fn ids(db: &impl ConnectionTrait, spec: Spec, parent: Id) -> Vec<Id> {
    OrderedTable::new(spec)
        .list(db, parent)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect()
}

pub async fn sound(db: &DatabaseConnection, spec: Spec, parent: Id) -> Vec<ordered_seaorm::Row> {
    let rows = OrderedTable::new(spec).list(db, parent).await.unwrap();
    let report = OrderedTable::new(spec).verify(db, parent).await.unwrap();
    assert!(report.is_ok(), "{report:?}");
    assert!(rows.windows(2).all(|w| w[0].position < w[1].position));
    rows
}

/// The `n`th board of the UUID-keyed tests.
pub fn board(n: u128) -> uuid::Uuid {
    uuid::Uuid::from_u128(0xb0a2_d000_0000_0000_0000_0000_0000_0000 | n)
}

/// The `n`th card of the UUID-keyed tests, scattered so that byte order is not creation
/// order.
pub fn card_id(n: u128) -> uuid::Uuid {
    uuid::Uuid::from_u128(n.wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835))
}

/// `spec`'s tables made afresh through the SeaORM migration building blocks (what an
/// app's migration crate calls): the items table with `columns` of the app's own and
/// its parent table with a row per key of `parents`; for a table with lock rows, only
/// this table's rows of the shared lock table are cleared.
pub async fn migrate(
    db: &DatabaseConnection,
    spec: &Spec,
    columns: &[(&str, &str)],
    parents: &[Id],
) {
    use ordered_seaorm::migration::{create_ordered_table, create_parent_table};
    let d = dialect(db.get_database_backend()).unwrap();
    let q = |s: &str| sql::quote(d, s);
    exec(db, &format!("DROP TABLE IF EXISTS {}", q(spec.table))).await;
    if !spec.locks_rows() {
        exec(
            db,
            &format!("DROP TABLE IF EXISTS {}", q(spec.parent_table)),
        )
        .await;
    }
    let manager = sea_orm_migration::SchemaManager::new(db);
    create_parent_table(&manager, spec, &[]).await.unwrap();
    create_ordered_table(&manager, spec, columns).await.unwrap();
    if spec.locks_rows() {
        exec(
            db,
            &format!(
                "DELETE FROM {} WHERE {} = '{}'",
                q(spec.parent_table),
                q("table_name"),
                spec.table
            ),
        )
        .await;
    }
    let ph = if d == Dialect::Postgres { "$1" } else { "?" };
    for &p in parents {
        db.execute_raw(Statement::from_sql_and_values(
            db.get_database_backend(),
            format!(
                "INSERT INTO {} ({}) VALUES ({ph})",
                q(spec.parent_table),
                q(spec.parent_id)
            ),
            [ordered_seaorm::key_value(p)],
        ))
        .await
        .unwrap();
    }
}
