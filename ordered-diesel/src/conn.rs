//! The connections the library runs on.

use diesel::connection::{AnsiTransactionManager, Connection};
use diesel::result::QueryResult;
use ordered_core::{Dialect, Reply, Statement};

mod sealed {
    pub trait Sealed {}
}

/// A Diesel connection the library can drive: `PgConnection`, `MysqlConnection` and
/// `SqliteConnection`, each behind its cargo feature. Pooled connections work through
/// `&mut *pooled`.
///
/// It executes the statements `ordered-core` builds with `sql_query` and typed binds,
/// and decodes their rows; it holds no SQL of its own.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a connection `ordered-diesel` supports",
    note = "use `PgConnection`, `MysqlConnection` or `SqliteConnection` (enable the `postgres`, `mysql` or `sqlite` feature); for a pooled connection pass `&mut *pooled`"
)]
pub trait OrderedConnection:
    Connection<TransactionManager = AnsiTransactionManager> + sealed::Sealed + Sized
{
    /// The engine.
    const DIALECT: Dialect;
    /// How the library opens its own transaction: `BEGIN IMMEDIATE` on SQLite, which
    /// takes the write lock up front instead of failing to upgrade later; READ COMMITTED
    /// on MySQL/MariaDB, where the locking neighbour reads would otherwise take gap locks
    /// that make writers on *adjacent* parents deadlock, and on PostgreSQL, where a
    /// session default of REPEATABLE READ or SERIALIZABLE would make every writer queued
    /// on a busy parent fail with `40001` when the holder commits, and retry, and queue
    /// again (the reliability suite saw a move starve through 100 attempts). The parent
    /// lock serialises one parent's writers, so READ COMMITTED is all the protocol
    /// needs; inside the caller's transaction the caller's level stays.
    const BEGIN: &'static str;
    /// Executes one statement and decodes its result. `key` says that positions are
    /// text.
    #[doc(hidden)]
    fn run(&mut self, stmt: &Statement, key: bool) -> QueryResult<Reply>;
}

#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod rows {
    use diesel::sql_types::{BigInt, Text};

    #[derive(diesel::QueryableByName)]
    pub(super) struct IntRow {
        #[diesel(sql_type = BigInt)]
        pub(super) o_id: i64,
        #[diesel(sql_type = BigInt)]
        pub(super) o_parent: i64,
        #[diesel(sql_type = BigInt)]
        pub(super) o_pos: i64,
    }

    #[derive(diesel::QueryableByName)]
    pub(super) struct KeyRow {
        #[diesel(sql_type = BigInt)]
        pub(super) o_id: i64,
        #[diesel(sql_type = BigInt)]
        pub(super) o_parent: i64,
        #[diesel(sql_type = Text)]
        pub(super) o_pos: String,
    }

    #[derive(diesel::QueryableByName)]
    pub(super) struct ParentRow {
        #[diesel(sql_type = BigInt)]
        pub(super) o_id: i64,
        #[diesel(sql_type = BigInt)]
        pub(super) o_version: i64,
    }

    #[derive(diesel::QueryableByName)]
    pub(super) struct CountRow {
        #[diesel(sql_type = BigInt)]
        pub(super) o_count: i64,
    }
}

#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
macro_rules! ordered_connection {
    ($conn:ty, $backend:ty, $dialect:expr, $begin:expr) => {
        impl sealed::Sealed for $conn {}

        impl OrderedConnection for $conn {
            const DIALECT: Dialect = $dialect;
            const BEGIN: &'static str = $begin;

            fn run(&mut self, stmt: &Statement, key: bool) -> QueryResult<Reply> {
                use diesel::RunQueryDsl;
                use diesel::sql_types::{BigInt, Text};
                use ordered_core::{Arg, Position, Returns, Row};

                let mut q = diesel::sql_query(stmt.sql.clone()).into_boxed::<$backend>();
                for a in &stmt.args {
                    q = match a {
                        Arg::I64(v) => q.bind::<BigInt, _>(*v),
                        Arg::Text(t) => q.bind::<Text, _>(t.clone()),
                    };
                }
                Ok(match stmt.returns {
                    Returns::Nothing => Reply::Affected(q.execute(self)? as u64),
                    Returns::Rows if key => Reply::Rows(
                        q.load::<rows::KeyRow>(self)?
                            .into_iter()
                            .map(|r| Row {
                                id: r.o_id,
                                parent: r.o_parent,
                                position: Position::Key(r.o_pos),
                            })
                            .collect(),
                    ),
                    Returns::Rows => Reply::Rows(
                        q.load::<rows::IntRow>(self)?
                            .into_iter()
                            .map(|r| Row {
                                id: r.o_id,
                                parent: r.o_parent,
                                position: Position::Int(r.o_pos),
                            })
                            .collect(),
                    ),
                    Returns::Parent => Reply::Parents(
                        q.load::<rows::ParentRow>(self)?
                            .into_iter()
                            .map(|r| (r.o_id, r.o_version))
                            .collect(),
                    ),
                    Returns::Count => Reply::Count(
                        q.load::<rows::CountRow>(self)?
                            .first()
                            .map_or(0, |r| r.o_count),
                    ),
                })
            }
        }
    };
}

#[cfg(feature = "postgres")]
ordered_connection!(
    diesel::PgConnection,
    diesel::pg::Pg,
    Dialect::Postgres,
    "BEGIN ISOLATION LEVEL READ COMMITTED"
);
#[cfg(feature = "mysql")]
ordered_connection!(
    diesel::MysqlConnection,
    diesel::mysql::Mysql,
    Dialect::Mysql,
    "SET TRANSACTION ISOLATION LEVEL READ COMMITTED; BEGIN"
);
#[cfg(feature = "sqlite")]
ordered_connection!(
    diesel::SqliteConnection,
    diesel::sqlite::Sqlite,
    Dialect::Sqlite,
    "BEGIN IMMEDIATE"
);
