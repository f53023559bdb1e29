//! Test harness: one connection per engine that is reachable, tables named per test.
//!
//! SQLite always runs (a file in the temp dir, WAL, busy_timeout 5000). PostgreSQL and
//! MariaDB/MySQL run when `ORDERED_PG_URL` / `ORDERED_MYSQL_URL` are set; with
//! `ORDERED_REQUIRE_DBS=1` a missing URL or server fails the test instead of skipping.
#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use ordered_diesel::__private::Reply as ordered_core_reply;
pub use ordered_diesel::Id;
use ordered_diesel::migrations::{create_parent_table, create_table};
use ordered_diesel::{
    Dialect, Fractional, Gapped, OrderedConnection, OrderedTable, PositionStrategy,
    RebalancePolicy, Slot, Spec,
};

/// What each test engine must offer besides the library's trait.
pub trait TestConn: OrderedConnection + SimpleConnection + Send + 'static {
    fn name() -> &'static str;
    /// A fresh database for `db` (SQLite: a new file).
    fn connect(db: &str) -> Self;
    /// Another connection to the same database.
    fn open(db: &str) -> Self;
    /// A connection to a server at `url` (PostgreSQL and MySQL only).
    fn open_url(url: &str) -> Self;
    /// Inserts an item row with its title and slot; returns its id.
    fn insert_item(&mut self, t: &Tables, title: &str, slot: &Slot) -> QueryResult<Id>;
    fn exec(&mut self, sql: &str) {
        self.batch_execute(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

#[derive(QueryableByName)]
struct IdRow {
    #[diesel(sql_type = BigInt)]
    id: i64,
}

fn bind_slot<DB, Q>(
    q: diesel::query_builder::BoxedSqlQuery<'static, DB, Q>,
    slot: &Slot,
) -> diesel::query_builder::BoxedSqlQuery<'static, DB, Q>
where
    DB: diesel::backend::Backend
        + diesel::sql_types::HasSqlType<BigInt>
        + diesel::sql_types::HasSqlType<Text>
        + diesel::sql_types::HasSqlType<diesel::sql_types::Double>,
    i64: diesel::serialize::ToSql<BigInt, DB>,
    String: diesel::serialize::ToSql<Text, DB>,
    f64: diesel::serialize::ToSql<diesel::sql_types::Double, DB>,
    Q: diesel::query_builder::QueryFragment<DB>,
{
    match &slot.position {
        ordered_diesel::Position::Int(v) => q.bind::<BigInt, _>(*v),
        ordered_diesel::Position::Key(k) => q.bind::<Text, _>(k.clone()),
        ordered_diesel::Position::Num(n) => q.bind::<diesel::sql_types::Double, _>(n.get()),
    }
}

impl TestConn for diesel::SqliteConnection {
    fn name() -> &'static str {
        "sqlite"
    }
    fn connect(db: &str) -> Self {
        let path = std::env::temp_dir().join(format!("ordered-test-{db}.db"));
        for ext in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
        }
        Self::open(db)
    }
    fn open(db: &str) -> Self {
        let path = std::env::temp_dir().join(format!("ordered-test-{db}.db"));
        let mut c = SqliteConnection::establish(path.to_str().unwrap()).unwrap();
        c.batch_execute(
            "PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;",
        )
        .unwrap();
        c
    }
    fn open_url(_: &str) -> Self {
        unreachable!("SQLite has no server")
    }
    fn insert_item(&mut self, t: &Tables, title: &str, slot: &Slot) -> QueryResult<Id> {
        let q = diesel::sql_query(format!(
            "INSERT INTO \"{}\" (\"parent_id\", \"title\", \"position\") VALUES (?, ?, ?) RETURNING \"id\" AS id",
            t.items
        ))
        .into_boxed::<diesel::sqlite::Sqlite>()
        .bind::<BigInt, _>(slot.scope::<i64>()?)
        .bind::<Text, _>(title.to_owned());
        Ok(Id::Int(bind_slot(q, slot).get_result::<IdRow>(self)?.id))
    }
}

impl TestConn for diesel::PgConnection {
    fn name() -> &'static str {
        "postgres"
    }
    fn connect(db: &str) -> Self {
        Self::open(db)
    }
    fn open(_db: &str) -> Self {
        let url = std::env::var("ORDERED_PG_URL").expect("ORDERED_PG_URL");
        PgConnection::establish(&url).unwrap_or_else(|e| panic!("PostgreSQL at {url}: {e}"))
    }
    fn open_url(url: &str) -> Self {
        PgConnection::establish(url).unwrap_or_else(|e| panic!("PostgreSQL at {url}: {e}"))
    }
    fn insert_item(&mut self, t: &Tables, title: &str, slot: &Slot) -> QueryResult<Id> {
        let q = diesel::sql_query(format!(
            "INSERT INTO \"{}\" (\"parent_id\", \"title\", \"position\") VALUES ($1, $2, $3) RETURNING \"id\" AS id",
            t.items
        ))
        .into_boxed::<diesel::pg::Pg>()
        .bind::<BigInt, _>(slot.scope::<i64>()?)
        .bind::<Text, _>(title.to_owned());
        Ok(Id::Int(bind_slot(q, slot).get_result::<IdRow>(self)?.id))
    }
}

#[cfg(feature = "mysql")]
impl TestConn for diesel::MysqlConnection {
    fn name() -> &'static str {
        "mysql"
    }
    fn connect(db: &str) -> Self {
        Self::open(db)
    }
    fn open(_db: &str) -> Self {
        let url = std::env::var("ORDERED_MYSQL_URL").expect("ORDERED_MYSQL_URL");
        MysqlConnection::establish(&url).unwrap_or_else(|e| panic!("MySQL at {url}: {e}"))
    }
    fn open_url(url: &str) -> Self {
        MysqlConnection::establish(url).unwrap_or_else(|e| panic!("MySQL at {url}: {e}"))
    }
    fn insert_item(&mut self, t: &Tables, title: &str, slot: &Slot) -> QueryResult<Id> {
        let q = diesel::sql_query(format!(
            "INSERT INTO `{}` (`parent_id`, `title`, `position`) VALUES (?, ?, ?)",
            t.items
        ))
        .into_boxed::<diesel::mysql::Mysql>()
        .bind::<BigInt, _>(slot.scope::<i64>()?)
        .bind::<Text, _>(title.to_owned());
        bind_slot(q, slot).execute(self)?;
        diesel::sql_query("SELECT CAST(LAST_INSERT_ID() AS SIGNED) AS id")
            .get_result::<IdRow>(self)
            .map(|r| Id::Int(r.id))
    }
}

/// Whether an engine should run: its URL is set, or the run requires it.
pub fn enabled(engine: &str) -> bool {
    // `ORDERED_ENGINES=mysql` (comma-separated) runs only those engines: CI runs the
    // reliability suite through a Galera node that way
    if let Ok(only) = std::env::var("ORDERED_ENGINES")
        && !only.split(',').any(|e| e.trim() == engine)
    {
        eprintln!("skipped {engine}: not in ORDERED_ENGINES={only}");
        return false;
    }
    let var = match engine {
        "postgres" => "ORDERED_PG_URL",
        "mysql" => "ORDERED_MYSQL_URL",
        _ => return true,
    };
    let set = std::env::var(var).is_ok_and(|v| !v.is_empty());
    let required = std::env::var("ORDERED_REQUIRE_DBS").is_ok_and(|v| v == "1");
    if !set && required {
        panic!("ORDERED_REQUIRE_DBS=1 but {var} is not set");
    }
    if !set {
        eprintln!("skipped {engine}: {var} is not set");
    }
    set
}

/// Runs `f` once per reachable engine.
#[macro_export]
macro_rules! each_engine {
    ($f:ident) => {
        each_engine!($f, ());
    };
    ($f:ident, $arg:expr) => {{
        if $crate::common::enabled("sqlite") {
            $f::<diesel::SqliteConnection>($arg);
        }
        if $crate::common::enabled("postgres") {
            $f::<diesel::PgConnection>($arg);
        }
        #[cfg(feature = "mysql")]
        if $crate::common::enabled("mysql") {
            $f::<diesel::MysqlConnection>($arg);
        }
        #[cfg(not(feature = "mysql"))]
        if std::env::var("ORDERED_REQUIRE_DBS").is_ok_and(|v| v == "1") {
            panic!("ORDERED_REQUIRE_DBS=1 needs the `mysql` feature (cargo test --all-features)");
        }
    }};
}

/// The tables of one test: names are unique per test so tests run in parallel.
#[derive(Debug, Clone)]
pub struct Tables {
    pub parents: &'static str,
    pub items: &'static str,
    pub spec: Spec,
    pub db: String,
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

pub static GAPPED: Gapped = Gapped::DEFAULT;
pub static TIGHT: Gapped = Gapped::new(4);
pub static KEYS: Fractional = Fractional::DEFAULT;
pub static SHORT_KEYS: Fractional = Fractional::new(ordered_diesel::key::Alphabet::BASE62, 10);

/// Creates fresh parent and item tables for `test` on `C` and returns a connection.
pub fn setup<C: TestConn>(
    test: &str,
    strategy: &'static dyn PositionStrategy,
    policy: RebalancePolicy,
    parents: &[Id],
) -> (C, Tables) {
    let db = format!("{}_{}", test, C::name());
    let mut conn = C::connect(&db);
    let t = tables(test, strategy, policy, db);
    reset(&mut conn, &t, parents);
    (conn, t)
}

pub fn tables(
    test: &str,
    strategy: &'static dyn PositionStrategy,
    policy: RebalancePolicy,
    db: String,
) -> Tables {
    let parents = leak(format!("o_{test}_p"));
    let items = leak(format!("o_{test}_i"));
    let spec = Spec::new(items, "parent_id", parents)
        .with_version("version")
        .with_strategy(strategy)
        .with_policy(policy);
    Tables {
        parents,
        items,
        spec,
        db,
    }
}

pub fn reset<C: TestConn>(conn: &mut C, t: &Tables, parents: &[Id]) {
    let d = C::DIALECT;
    let q = |s: &str| ordered_core::adapter::sql::quote(d, s);
    conn.exec(&format!("DROP TABLE IF EXISTS {}", q(t.items)));
    conn.exec(&format!("DROP TABLE IF EXISTS {}", q(t.parents)));
    for m in [
        create_parent_table(d, &t.spec, &[("name", "VARCHAR(100)")]),
        create_table(d, &t.spec, &[("title", "VARCHAR(100) NOT NULL")]),
    ] {
        for s in &m.up {
            conn.exec(s);
        }
    }
    for p in parents {
        conn.exec(&format!(
            "INSERT INTO {} ({}, {}) VALUES ({p}, 'p{p}')",
            q(t.parents),
            q("id"),
            q("name")
        ));
    }
}

/// The request records table (made if missing), with no record of `t`'s table left
/// from an earlier run.
pub fn fresh_records<C: TestConn>(conn: &mut C, t: &Tables) {
    let q = |s: &str| ordered_core::adapter::sql::quote(C::DIALECT, s);
    for st in ordered_diesel::migrations::create_requests_table(C::DIALECT).up {
        conn.exec(&st);
    }
    conn.exec(&format!(
        "DELETE FROM {} WHERE {} = '{}'",
        q(ordered_core::requests::TABLE),
        q("table_name"),
        t.items
    ));
}

pub fn drop_tables<C: TestConn>(conn: &mut C, t: &Tables) {
    let q = |s: &str| ordered_core::adapter::sql::quote(C::DIALECT, s);
    conn.exec(&format!("DROP TABLE IF EXISTS {}", q(t.items)));
    conn.exec(&format!("DROP TABLE IF EXISTS {}", q(t.parents)));
}

pub fn ord(t: &Tables) -> OrderedTable {
    OrderedTable::new(t.spec)
}

/// Inserts an item with the library and returns its id.
pub fn add<C: TestConn>(
    conn: &mut C,
    t: &Tables,
    parent: Id,
    at: ordered_diesel::Placement,
    title: &str,
) -> Id {
    let o = ord(t);
    let f = |c: &mut C, slot: Slot| c.insert_item(t, title, &slot);
    let r = match at {
        ordered_diesel::Placement::First => o.insert_first(conn, parent, f),
        ordered_diesel::Placement::Last => o.insert_last(conn, parent, f),
        ordered_diesel::Placement::Before(a) => o.insert_before(conn, parent, a, f),
        ordered_diesel::Placement::After(a) => o.insert_after(conn, parent, a, f),
        ordered_diesel::Placement::Between { prev, next } => {
            o.insert_between(conn, parent, prev, next, f)
        }
        ordered_diesel::Placement::Index(i) => o.insert_at_index(conn, parent, i, f),
    };
    r.unwrap_or_else(|e| panic!("{} insert {title}: {e}", C::name()))
        .value
}

pub fn ids<C: TestConn>(conn: &mut C, t: &Tables, parent: Id) -> Vec<Id> {
    ord(t)
        .list(conn, parent)
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect()
}

/// Asserts the collection is sound (unique, ordered, in its domain) and returns it.
pub fn sound<C: TestConn>(conn: &mut C, t: &Tables, parent: Id) -> Vec<ordered_diesel::Row> {
    let rows = ord(t).list(conn, parent).unwrap();
    let report = ord(t).verify(conn, parent).unwrap();
    assert!(report.is_ok(), "{}: {report:?}", C::name());
    assert!(
        rows.windows(2).all(|w| w[0].position < w[1].position),
        "{}: not strictly increasing: {rows:?}",
        C::name()
    );
    rows
}

/// Runs a query returning one `o_count` BIGINT and returns it.
pub fn count<C: TestConn>(conn: &mut C, sql: &str) -> i64 {
    let stmt = ordered_core::adapter::sql::Statement {
        sql: sql.to_owned(),
        args: vec![],
        returns: ordered_core::adapter::sql::Returns::Count,
    };
    match conn.run(&stmt, ordered_core::adapter::Wire::PLAIN).unwrap() {
        ordered_core_reply::Count(v) => v,
        other => panic!("{other:?}"),
    }
}

pub fn version<C: TestConn>(conn: &mut C, t: &Tables, parent: Id) -> i64 {
    let q = |s: &str| ordered_core::adapter::sql::quote(C::DIALECT, s);
    let cast = if C::DIALECT == Dialect::Mysql {
        "SIGNED"
    } else {
        "BIGINT"
    };
    count(
        conn,
        &format!(
            "SELECT CAST({} AS {cast}) AS o_count FROM {} WHERE {} = {parent}",
            q("version"),
            q(t.parents),
            q("id")
        ),
    )
}

pub fn strategies() -> [(&'static str, &'static dyn PositionStrategy); 2] {
    [("gapped", &GAPPED), ("keys", &KEYS)]
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

/// The tables of a UUID-keyed `spec` (a `title` column besides the library's), with
/// boards 1 to 3.
pub fn migrate_boards<C: TestConn>(c: &mut C, spec: &Spec) {
    let d = C::DIALECT;
    let q = |s: &str| ordered_core::adapter::sql::quote(d, s);
    c.exec(&format!("DROP TABLE IF EXISTS {}", q(spec.table)));
    c.exec(&format!("DROP TABLE IF EXISTS {}", q(spec.parent_table)));
    for stmt in create_parent_table(d, spec, &[])
        .up
        .iter()
        .chain(&create_table(d, spec, &[("title", "VARCHAR(100) NOT NULL")]).up)
    {
        c.exec(stmt);
    }
    for b in [1, 2, 3] {
        let lit = match d {
            ordered_diesel::Dialect::Postgres => format!("'{}'", board(b)),
            _ => format!("X'{}'", board(b).simple()),
        };
        c.exec(&format!(
            "INSERT INTO {} ({}) VALUES ({lit})",
            q(spec.parent_table),
            q("id")
        ));
    }
}

/// The operations on model `M`'s table with keys as [`Id`]s, for tests generic over
/// models of several key types.
pub fn untyped<M: ordered_diesel::Ordered>() -> OrderedTable {
    OrderedTable::new(M::SPEC)
}

/// The loopback proxy that cuts a connection at `COMMIT`.
pub mod proxy {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering as AtomicOrdering};
    use std::time::Duration;

    /// What the proxy does when it sees COMMIT go by.
    pub const PASS: u8 = 0;
    /// Forward COMMIT, let the server apply it, then cut both sides.
    pub const CUT_AFTER_COMMIT: u8 = 1;
    /// Cut both sides instead of forwarding COMMIT.
    pub const CUT_BEFORE_COMMIT: u8 = 2;

    /// A loopback TCP proxy in front of the database server that can cut the connection
    /// at `COMMIT` (the reliability suite's R2, the Galera suite's cut on a node).
    pub struct Proxy {
        pub port: u16,
        pub mode: Arc<AtomicU8>,
        pub cuts: Arc<AtomicUsize>,
    }

    impl Proxy {
        pub fn start(upstream: String) -> Proxy {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            let mode = Arc::new(AtomicU8::new(PASS));
            let cuts = Arc::new(AtomicUsize::new(0));
            let (m, k) = (Arc::clone(&mode), Arc::clone(&cuts));
            std::thread::spawn(move || {
                for client in listener.incoming() {
                    let Ok(client) = client else { return };
                    let Ok(server) = TcpStream::connect(&upstream) else {
                        return;
                    };
                    let (mut c_in, mut s_out) =
                        (client.try_clone().unwrap(), server.try_clone().unwrap());
                    let (mut s_in, mut c_out) = (server, client);
                    // once COMMIT is seen, nothing more reaches the client
                    let cut = Arc::new(std::sync::atomic::AtomicBool::new(false));
                    let cut_reply = Arc::clone(&cut);
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 16384];
                        while let Ok(n) = s_in.read(&mut buf) {
                            if n == 0
                                || cut_reply.load(AtomicOrdering::SeqCst)
                                || c_out.write_all(&buf[..n]).is_err()
                            {
                                break;
                            }
                        }
                        let _ = c_out.shutdown(Shutdown::Both);
                    });
                    let (m, k) = (Arc::clone(&m), Arc::clone(&k));
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 16384];
                        // MySQL: the library's COMMIT is a prepared statement; on a fresh
                        // connection its COM_STMT_PREPARE (0x16) goes by first, and the
                        // client's next packet, a COM_STMT_EXECUTE (0x17), is the COMMIT
                        let mut commit_prepared = false;
                        while let Ok(n) = c_in.read(&mut buf) {
                            if n == 0 {
                                break;
                            }
                            let chunk = &buf[..n];
                            // the COMMIT statement alone: PostgreSQL's simple query
                            // ends it with a NUL, MySQL's COM_QUERY starts it with 0x03
                            // (and "BEGIN ISOLATION LEVEL READ COMMITTED" must not match)
                            let executed = commit_prepared && chunk.get(4) == Some(&0x17);
                            commit_prepared = chunk.ends_with(b"\x16COMMIT");
                            let commit = executed
                                || chunk
                                    .windows(7)
                                    .any(|w| w == b"COMMIT\0" || w == b"\x03COMMIT");
                            let mode = m.load(AtomicOrdering::SeqCst);
                            if commit && mode != PASS {
                                k.fetch_add(1, AtomicOrdering::SeqCst);
                                cut.store(true, AtomicOrdering::SeqCst);
                                if mode == CUT_AFTER_COMMIT {
                                    let _ = s_out.write_all(chunk);
                                    std::thread::sleep(Duration::from_millis(300));
                                }
                                let _ = c_in.shutdown(Shutdown::Both);
                                let _ = s_out.shutdown(Shutdown::Both);
                                return;
                            }
                            if s_out.write_all(chunk).is_err() {
                                break;
                            }
                        }
                        let _ = s_out.shutdown(Shutdown::Both);
                    });
                }
            });
            Proxy { port, mode, cuts }
        }
    }
}
