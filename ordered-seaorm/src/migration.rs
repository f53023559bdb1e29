//! `sea-orm-migration` building blocks: call them from your own `MigrationTrait`'s `up`
//! and `down` with the `SchemaManager` you are given.
//!
//! ```
//! # include!("../doctest_setup.rs");
//! use ordered_seaorm::migration::{Backfill, add_ordering, drop_ordering};
//! use sea_orm_migration::SchemaManager;
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), sea_orm::DbErr> {
//! # let db = setup().await?;
//! # db.execute_unprepared("CREATE TABLE steps (id INTEGER PRIMARY KEY, playlist_id INTEGER NOT NULL)").await?;
//! # db.execute_unprepared("INSERT INTO steps (playlist_id) VALUES (1), (1)").await?;
//! let spec = track::Entity::spec().with_table("steps").without_version().with_unique("steps_pos_uq");
//! let manager = SchemaManager::new(&db);
//! // in MigrationTrait::up
//! add_ordering(&manager, &spec, Backfill::By(&["id"])).await?;
//! // in MigrationTrait::down
//! drop_ordering(&manager, &spec).await?;
//! # Ok(()) }
//! ```

use ordered_core::Spec;
pub use ordered_core::migration::{Backfill, Migration};
use sea_orm::{ConnectionTrait, DbErr};
use sea_orm_migration::SchemaManager;

use crate::ops::dialect;
use ordered_core::adapter::{Finished, Job};

/// Runs the statements on one connection: the MySQL steps share session state (a
/// prepared statement), which a pool would spread over several connections.
async fn apply(manager: &SchemaManager<'_>, stmts: &[String]) -> Result<(), DbErr> {
    use sea_orm::{DatabaseExecutor, TransactionTrait};
    let conn = manager.get_connection();
    if let DatabaseExecutor::Connection(pool) = conn {
        let txn = pool.begin().await?;
        for s in stmts {
            txn.execute_unprepared(s).await?;
        }
        return txn.commit().await;
    }
    for s in stmts {
        conn.execute_unprepared(s).await?;
    }
    Ok(())
}

fn engine(manager: &SchemaManager<'_>) -> Result<ordered_core::Dialect, DbErr> {
    dialect(manager.get_database_backend()).map_err(DbErr::from)
}

/// Adds ordering to an existing table: the position column with its domain CHECK, the
/// `UNIQUE (parent, position)` constraint (deferrable on PostgreSQL), the parent's
/// version column, and with [`Backfill::By`] the numbering of existing rows (expand and
/// contract).
pub async fn add_ordering(
    manager: &SchemaManager<'_>,
    spec: &Spec,
    backfill: Backfill<'_>,
) -> Result<(), DbErr> {
    let d = engine(manager)?;
    // refused before any change when the column is there already: on MySQL/MariaDB the
    // statements commit one by one, and a second run would fail halfway
    let found = on_connection(manager, spec, Job::CheckSchema)
        .await
        .and_then(|f| Ok(f.into_checked()?));
    let missing = matches!(
        found.as_ref().map_err(crate::Error::refusal),
        Err(Some(ordered_core::Error::SchemaMismatch { problem, .. }))
            if *problem == ordered_core::verify::NO_POSITION
    );
    if !missing {
        return Err(DbErr::Migration(match found {
            Err(e) if e.refusal().is_none() => e.to_string(),
            _ => format!(
                "{} already has its position column {}: adopt_ordering or ensure_ordering completes it, and add_ordering changed nothing",
                spec.table, spec.position
            ),
        }));
    }
    apply(
        manager,
        &ordered_core::migration::add_ordering(d, spec, backfill).up,
    )
    .await
}

/// Reverts [`add_ordering`].
pub async fn drop_ordering(manager: &SchemaManager<'_>, spec: &Spec) -> Result<(), DbErr> {
    let d = engine(manager)?;
    apply(
        manager,
        &ordered_core::migration::add_ordering(d, spec, Backfill::None).down,
    )
    .await
}

/// The expand step of a table whose rows get their positions from a program, such as
/// a linked list's conversion: the parent's version column and the position column,
/// nullable, with its domain CHECK
/// ([`ordered_core::migration::add_position_column`]). Then [`convert_linked`], then
/// [`ensure_ordering`] (`NOT NULL`, the unique constraint).
pub async fn add_position_column(manager: &SchemaManager<'_>, spec: &Spec) -> Result<(), DbErr> {
    let d = engine(manager)?;
    apply(
        manager,
        &ordered_core::migration::add_position_column(d, spec).up,
    )
    .await
}

/// Reverts [`add_position_column`].
pub async fn drop_position_column(manager: &SchemaManager<'_>, spec: &Spec) -> Result<(), DbErr> {
    let d = engine(manager)?;
    apply(
        manager,
        &ordered_core::migration::add_position_column(d, spec).down,
    )
    .await
}

/// Converts a table kept as a linked list into positions, list by list under each
/// list's lock: [`OrderedTable::convert_linked`](crate::OrderedTable::convert_linked) on
/// the migration's connection (inside the migration's transaction, each list is a
/// savepoint). The lists that are not one chain are left alone and reported in
/// [`Converted::broken`](ordered_core::linked::Converted); fail the migration on them if
/// your deploy needs every list converted.
pub async fn convert_linked(
    manager: &SchemaManager<'_>,
    spec: &Spec,
    column: &str,
    link: ordered_core::linked::Link,
) -> Result<ordered_core::linked::Converted, DbErr> {
    use sea_orm::DatabaseExecutor;
    let table = crate::OrderedTable::<ordered_core::Id, ordered_core::Id>::new(*spec);
    let r = match manager.get_connection() {
        DatabaseExecutor::Connection(db) => table.convert_linked(*db, column, link).await,
        DatabaseExecutor::Transaction(t) => table.convert_linked(*t, column, link).await,
        DatabaseExecutor::OwnedTransaction(t) => table.convert_linked(t, column, link).await,
    };
    r.map_err(|e| DbErr::Migration(e.to_string()))
}

/// A schema job (`check_schema`, `ensure_ordering`, `adopt_ordering`) on the migration's
/// connection: the pool, or the transaction the migration runs in.
async fn on_connection(
    manager: &SchemaManager<'_>,
    spec: &Spec,
    job: Job,
) -> crate::Result<Finished> {
    use sea_orm::DatabaseExecutor;
    let table = crate::OrderedTable::new(*spec);
    match manager.get_connection() {
        DatabaseExecutor::Connection(db) => table.schema_job(*db, job).await,
        DatabaseExecutor::Transaction(t) => table.schema_job(*t, job).await,
        DatabaseExecutor::OwnedTransaction(t) => table.schema_job(t, job).await,
    }
}

/// What `ensure_ordering` or `adopt_ordering` added, or the migration's error.
fn ensured(r: crate::Result<Finished>) -> Result<ordered_core::migration::Ensured, DbErr> {
    r.and_then(|f| Ok(f.into_ensured()?))
        .map_err(|e| DbErr::Migration(e.to_string()))
}

/// Takes over a position column the table already has (an integer order the app kept
/// itself), keeping its order, or the order of `order_by` when given:
/// [`OrderedTable::adopt_ordering`](crate::OrderedTable::adopt_ordering) on the
/// migration's connection. A second run changes nothing; a key strategy is refused.
pub async fn adopt_ordering(
    manager: &SchemaManager<'_>,
    spec: &Spec,
    order_by: &[&str],
) -> Result<ordered_core::migration::Ensured, DbErr> {
    let order = order_by.iter().map(|s| (*s).to_owned()).collect();
    ensured(on_connection(manager, spec, Job::Adopt(order)).await)
}

/// Adds what the table lacks of what the library needs, nothing when all is there:
/// [`OrderedTable::ensure_ordering`](crate::OrderedTable::ensure_ordering) on the
/// migration's connection.
pub async fn ensure_ordering(
    manager: &SchemaManager<'_>,
    spec: &Spec,
) -> Result<ordered_core::migration::Ensured, DbErr> {
    ensured(on_connection(manager, spec, Job::Ensure).await)
}

/// Creates the parent table (`id`, the version column if the spec names one, your
/// `columns`), for a new schema; an existing parent table only needs the version column,
/// which [`add_ordering`] adds.
pub async fn create_parent_table(
    manager: &SchemaManager<'_>,
    spec: &Spec,
    columns: &[(&str, &str)],
) -> Result<(), DbErr> {
    let d = engine(manager)?;
    let m = ordered_core::migration::create_parent_table(d, spec, columns);
    apply(manager, &m.up).await
}

/// Creates a new ordered table (`id`, the parent column, your `columns`, the position
/// column with its constraints). The parent table must exist.
pub async fn create_ordered_table(
    manager: &SchemaManager<'_>,
    spec: &Spec,
    columns: &[(&str, &str)],
) -> Result<(), DbErr> {
    let d = engine(manager)?;
    let m = ordered_core::migration::create_table(d, spec, columns);
    apply(manager, &m.up).await
}

/// Creates the table of request records (`ordered_requests`, if missing), which writes
/// made with a request key (`OrderedTable::request_key`) record their outcome in: one
/// per database, shared by every ordered table
/// ([`ordered_core::requests`]).
pub async fn create_requests_table(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    let d = engine(manager)?;
    apply(
        manager,
        &ordered_core::migration::create_requests_table(d).up,
    )
    .await
}

/// Drops the table of request records (every ordered table's).
pub async fn drop_requests_table(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    let d = engine(manager)?;
    apply(
        manager,
        &ordered_core::migration::create_requests_table(d).down,
    )
    .await
}

/// Drops a table made by [`create_ordered_table`].
pub async fn drop_ordered_table(manager: &SchemaManager<'_>, spec: &Spec) -> Result<(), DbErr> {
    let d = engine(manager)?;
    apply(
        manager,
        &ordered_core::migration::create_table(d, spec, &[]).down,
    )
    .await
}
