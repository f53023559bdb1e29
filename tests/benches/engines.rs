//! The benchmark against the real engines (a bench binary: counts and latencies in one
//! run, each compared with a baseline measured in the same run).
//!
//! ```sh
//! ORDERED_PG_URL=postgres://... ORDERED_MYSQL_URL=mysql://... \
//!   cargo bench -p ordered-conformance --features mysql --bench engines [-- --quick]
//! ```
//!
//! Per engine x strategy (gapped, fractional, numeric, dense) x workload (append, random
//! position, hot gap, move to front, insert at index, move to index) x size (1k, 10k, 100k; `--quick`: 1k):
//! - ours (Diesel adapter): ops/s, p50/p99 latency, rows written per op, longest key;
//!   and the SeaORM and diesel-async adapters for gapped integers at 1k and 10k;
//! - the floor: a transaction that locks the parent and updates one row by key (for the
//!   SeaORM rows, the same transaction written with SeaORM);
//! - the naive baselines: dense integers shifted one statement per row (acts_as_list)
//!   and gapped integers with a whole-collection rebalance of one statement per row
//!   (ranked-model), at 1k and 10k (at 100k they take minutes per operation);
//! - a relabel of the whole collection against a bare `UPDATE` of the same rows;
//! - 16 writers on 16 parents, and 16 writers on one parent against the floor on one
//!   parent (alternating rounds, the medians compared);
//! - a move under a request key (recorded) and its repeat (replayed) against the same
//!   move without a key (alternating rounds, the medians compared).
//!
//! `ORDERED_BENCH_WORKLOADS="move to index"` only those workloads of the matrix (and
//! none of the sections after it), `ORDERED_ENGINES=mysql` (comma-separated) runs only
//! those engines and
//! `ORDERED_BENCH_SIZES=10000` only those sizes (for the SeaORM and diesel-async rows too,
//! and the largest is the relabel's), to measure one cell again.
//!
//! Writes `target/ordered-bench.md`, `target/ordered-bench-rows.svg` and
//! `target/ordered-bench-latency.svg`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use ordered_conformance::Rng;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::time::{Duration, Instant};

use diesel::Connection;
use diesel::connection::SimpleConnection;
use ordered_core::adapter::{Arg, Returns, Statement, sql};
use ordered_core::{Dense, Dialect, Fractional, Gapped, Id, Position, PositionStrategy, Spec};
use ordered_diesel::{OrderedConnection, OrderedTable, Slot};

static GAPPED: Gapped = Gapped::DEFAULT;

/// Statements the benchmark's Diesel connection has sent (its instrumentation), BEGIN and
/// COMMIT included, so ours and the floor are counted the same way.
static STATEMENTS: AtomicU64 = AtomicU64::new(0);

fn statements() -> u64 {
    STATEMENTS.load(AtomicOrdering::Relaxed)
}

fn count_statements<C: diesel::Connection>(c: &mut C) {
    c.set_instrumentation(|e: diesel::connection::InstrumentationEvent<'_>| {
        if let diesel::connection::InstrumentationEvent::StartQuery { .. } = e {
            STATEMENTS.fetch_add(1, AtomicOrdering::Relaxed);
        }
    });
}
static KEYS: Fractional = Fractional::DEFAULT;
static NUMBERS: ordered_core::Numeric = ordered_core::Numeric::FLOAT;

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn spec(tag: &str, strategy: &'static dyn PositionStrategy) -> Spec {
    Spec::new(
        leak(format!("b_{tag}_i")),
        "parent_id",
        leak(format!("b_{tag}_p")),
    )
    .with_version("version")
    .with_strategy(strategy)
}

trait BenchConn: OrderedConnection + SimpleConnection + Send + 'static {
    fn open(url: &str) -> Self;
}
impl BenchConn for diesel::SqliteConnection {
    fn open(url: &str) -> Self {
        let mut c = Self::establish(url).unwrap();
        c.batch_execute(
            "PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;",
        )
        .unwrap();
        c
    }
}
impl BenchConn for diesel::PgConnection {
    fn open(url: &str) -> Self {
        Self::establish(url).unwrap()
    }
}
#[cfg(feature = "mysql")]
impl BenchConn for diesel::MysqlConnection {
    fn open(url: &str) -> Self {
        Self::establish(url).unwrap()
    }
}

fn exec<C: BenchConn>(c: &mut C, s: &str) {
    c.batch_execute(s).unwrap_or_else(|e| panic!("{s}: {e}"));
}

/// Fresh tables with `parents` parents and `n` items in parent 1, evenly spread.
fn prepare<C: BenchConn>(c: &mut C, s: &Spec, n: usize, parents: i64) -> Vec<Id> {
    let d = C::DIALECT;
    let q = |x: &str| sql::quote(d, x);
    exec(c, &format!("DROP TABLE IF EXISTS {}", q(s.table)));
    exec(c, &format!("DROP TABLE IF EXISTS {}", q(s.parent_table)));
    for m in [
        ordered_core::migration::create_parent_table(d, s, &[]),
        // `touched`: the floor's write (see [`floor`])
        ordered_core::migration::create_table(d, s, &[("touched", "BIGINT NOT NULL DEFAULT 0")]),
    ] {
        for st in &m.up {
            exec(c, st);
        }
    }
    for p in 1..=parents {
        exec(
            c,
            &format!(
                "INSERT INTO {} ({}) VALUES ({p})",
                q(s.parent_table),
                q("id")
            ),
        );
    }
    let positions: Vec<String> = match s.strategy.kind() {
        ordered_core::PositionKind::Key { .. } => ordered_core::key::n_keys_between(None, None, n)
            .unwrap()
            .into_iter()
            .map(|k| format!("'{k}'"))
            .collect(),
        _ if s.strategy.is_dense() => (0..n).map(|i| i.to_string()).collect(),
        ordered_core::PositionKind::Float => {
            (1..=n).map(|i| (i as i64 * 65_535).to_string()).collect()
        }
        _ => (1..=n).map(|i| (i as i64 * 1024).to_string()).collect(),
    };
    for chunk in positions.chunks(1000) {
        let values: Vec<String> = chunk.iter().map(|p| format!("(1, {p})")).collect();
        exec(
            c,
            &format!(
                "INSERT INTO {} ({}, {}) VALUES {}",
                q(s.table),
                q("parent_id"),
                q("position"),
                values.join(", ")
            ),
        );
    }
    OrderedTable::new(*s)
        .list(c, 1)
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect()
}

fn insert_row<C: BenchConn>(c: &mut C, s: &Spec, slot: &Slot) -> diesel::QueryResult<()> {
    let d = C::DIALECT;
    let q = |x: &str| sql::quote(d, x);
    let ph = if d == Dialect::Postgres {
        "$1, $2"
    } else {
        "?, ?"
    };
    let insert = format!(
        "INSERT INTO {} ({}, {}) VALUES ({ph})",
        q(s.table),
        q("parent_id"),
        q("position")
    );
    let args = vec![Arg::I64(slot.scope::<i64>()?), (&slot.position).into()];
    if d == Dialect::Mysql {
        // Diesel's MySQL connection reads no rows from `INSERT ... RETURNING` (a prepared
        // statement without result metadata), and LAST_INSERT_ID() would be a statement
        // of its own: the library reads the id back
        c.run(
            &Statement {
                sql: insert,
                args,
                returns: Returns::Nothing,
            },
            ordered_core::adapter::Wire::PLAIN,
        )?;
        return Ok(());
    }
    // the new id from the insert itself, told to the library so it does not read it back
    let reply = c.run(
        &Statement {
            sql: format!("{insert} RETURNING CAST({} AS BIGINT) AS o_count", q("id")),
            args,
            returns: Returns::Count,
        },
        ordered_core::adapter::Wire::PLAIN,
    )?;
    if let ordered_core::adapter::Reply::Count(id) = reply {
        slot.inserted_id(id);
    }
    Ok(())
}

#[derive(Default, Clone)]
struct Stats {
    lat: Vec<Duration>,
    rows: u64,
    longest: usize,
    /// Statements sent, when counted.
    statements: u64,
}

impl Stats {
    fn pct(&self, p: f64) -> Duration {
        let mut v = self.lat.clone();
        v.sort();
        v.get(((v.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or_default()
    }
    fn ops_per_s(&self) -> f64 {
        let total: Duration = self.lat.iter().sum();
        self.lat.len() as f64 / total.as_secs_f64().max(1e-9)
    }
    fn rows_per_op(&self) -> f64 {
        self.rows as f64 / self.lat.len().max(1) as f64
    }
    fn statements_per_op(&self) -> f64 {
        self.statements as f64 / self.lat.len().max(1) as f64
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

/// Ours: `ops` operations of `workload` through the Diesel adapter.
fn ours<C: BenchConn>(c: &mut C, s: &Spec, ids: &[Id], workload: &str, ops: usize) -> Stats {
    let o = OrderedTable::new(*s);
    let mut st = Stats::default();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let hot = ids[ids.len() / 2];
    let sent = statements();
    for _ in 0..ops {
        let t = Instant::now();
        let out = match workload {
            "append" => {
                o.insert_last(c, 1, |c, slot| insert_row(c, s, &slot))
                    .unwrap()
                    .outcome
            }
            "random" => {
                let a = ids[rng.below(ids.len())];
                o.insert_after(c, 1, a, |c, slot| insert_row(c, s, &slot))
                    .unwrap()
                    .outcome
            }
            "hot gap" => {
                o.insert_after(c, 1, hot, |c, slot| insert_row(c, s, &slot))
                    .unwrap()
                    .outcome
            }
            // an index the list shows (a numbered view), as acts_as_list's
            // `insert_at` and django-ordered-model's `to(n)` take
            "insert at index" => {
                let at = rng.below(ids.len()) as u64;
                o.insert_at_index(c, 1, at, |c, slot| insert_row(c, s, &slot))
                    .unwrap()
                    .outcome
            }
            "move to index" => {
                let item = ids[rng.below(ids.len())];
                let at = rng.below(ids.len() - 1) as u64;
                o.move_to_index(c, item, at).unwrap()
            }
            _ => {
                let item = ids[rng.below(ids.len())];
                o.move_to_start(c, item).unwrap()
            }
        };
        st.lat.push(t.elapsed());
        st.rows += out.rows_written;
        if let Some(Position::Key(k)) = &out.position {
            st.longest = st.longest.max(k.len());
        }
    }
    st.statements = statements() - sent;
    if matches!(s.strategy.kind(), ordered_core::PositionKind::Key { .. }) {
        let rows = o.list(c, 1).unwrap();
        st.longest = rows
            .iter()
            .filter_map(|r| r.position.as_key().map(str::len))
            .max()
            .unwrap_or(0);
    }
    st
}

/// The floor's lock of the parent `key` (a literal or a placeholder): a locking read
/// (SQLite: `BEGIN IMMEDIATE` is the lock, and the read is what an app would do).
fn floor_lock(d: Dialect, s: &Spec, key: &str) -> String {
    let q = |x: &str| sql::quote(d, x);
    let read = format!(
        "SELECT 1 FROM {} WHERE {} = {key}",
        q(s.parent_table),
        q("id")
    );
    match d {
        Dialect::Sqlite => read,
        _ => format!("{read} FOR UPDATE"),
    }
}

/// The floor's write of one row, by key (a literal appended, or a placeholder): the
/// position written with its own value (any other could collide after a hot-gap
/// workload) and a column of its own counted up. The count makes it a real write on
/// every engine: InnoDB skips a row whose values do not change, so `SET position =
/// position` alone, the floor before, committed nothing on MariaDB (no redo log to flush)
/// while every operation of ours does. The position keeps SQLite's index write in it.
fn floor_write(d: Dialect, s: &Spec, key: &str) -> String {
    let q = |x: &str| sql::quote(d, x);
    format!(
        "UPDATE {} SET {} = {}, {} = {} + 1 WHERE {} = {key}",
        q(s.table),
        q("position"),
        q("position"),
        q("touched"),
        q("touched"),
        q("id")
    )
}

/// The floor: lock the parent and update one row by key, in one transaction.
fn floor<C: BenchConn>(c: &mut C, s: &Spec, ids: &[Id], ops: usize) -> Stats {
    let d = C::DIALECT;
    let lock = floor_lock(d, s, "1");
    let touch = floor_write(d, s, "");
    // the library's own transactions: READ COMMITTED on the servers
    let begin = match d {
        Dialect::Sqlite => "BEGIN IMMEDIATE",
        Dialect::Mysql => "SET TRANSACTION ISOLATION LEVEL READ COMMITTED; BEGIN",
        Dialect::Postgres => "BEGIN ISOLATION LEVEL READ COMMITTED",
    };
    let mut st = Stats::default();
    let mut rng = Rng(7);
    let sent = statements();
    for _ in 0..ops {
        let id = ids[rng.below(ids.len())];
        let t = Instant::now();
        exec(c, begin);
        exec(c, &lock);
        exec(c, &format!("{touch}{id}"));
        exec(c, "COMMIT");
        st.lat.push(t.elapsed());
        st.rows += 1;
    }
    st.statements = statements() - sent;
    st
}

/// acts_as_list: dense integers, inserting at a position shifts every later row with
/// one statement per row.
fn naive_dense<C: BenchConn>(c: &mut C, s: &Spec, n: usize, workload: &str, ops: usize) -> Stats {
    let d = C::DIALECT;
    let q = |x: &str| sql::quote(d, x);
    let mut st = Stats::default();
    let mut rng = Rng(11);
    for len in n..n + ops {
        let at = match workload {
            "append" => len,
            "hot gap" => n / 2 + 1,
            _ => rng.below(len + 1),
        };
        let t = Instant::now();
        exec(
            c,
            if d == Dialect::Sqlite {
                "BEGIN IMMEDIATE"
            } else {
                "BEGIN"
            },
        );
        let later = OrderedTable::new(*s).list(c, 1).unwrap();
        // shift from the end so that no two rows collide on the unique index
        for r in later
            .iter()
            .rev()
            .filter(|r| r.position.as_int().unwrap_or(0) >= at as i64)
        {
            let p = r.position.as_int().unwrap_or(0);
            exec(
                c,
                &format!(
                    "UPDATE {} SET {} = {} WHERE {} = {}",
                    q(s.table),
                    q("position"),
                    p + 1,
                    q("id"),
                    r.id
                ),
            );
            st.rows += 1;
        }
        exec(
            c,
            &format!(
                "INSERT INTO {} ({}, {}) VALUES (1, {at})",
                q(s.table),
                q("parent_id"),
                q("position")
            ),
        );
        exec(c, "COMMIT");
        st.rows += 1;
        st.lat.push(t.elapsed());
    }
    st
}

/// ranked-model: gapped integers; with no gap, rebalance the whole collection one
/// statement per row.
fn naive_gapped<C: BenchConn>(
    c: &mut C,
    s: &Spec,
    ids: &[Id],
    workload: &str,
    ops: usize,
) -> Stats {
    let d = C::DIALECT;
    let q = |x: &str| sql::quote(d, x);
    let mut st = Stats::default();
    let mut rng = Rng(13);
    let hot = ids[ids.len() / 2];
    for _ in 0..ops {
        let t = Instant::now();
        exec(
            c,
            if d == Dialect::Sqlite {
                "BEGIN IMMEDIATE"
            } else {
                "BEGIN"
            },
        );
        let rows = OrderedTable::new(*s).list(c, 1).unwrap();
        let anchor = match workload {
            "append" => rows.len() - 1,
            "hot gap" => rows.iter().position(|r| r.id == hot).unwrap_or(0),
            _ => rng.below(rows.len()),
        };
        let lo = rows[anchor].position.as_int().unwrap_or(0);
        let hi = rows
            .get(anchor + 1)
            .and_then(|r| r.position.as_int())
            .unwrap_or(lo + 2048);
        let pos = if hi - lo >= 2 {
            lo + (hi - lo) / 2
        } else {
            // rebalance every row, one statement each, through a disjoint range
            for (i, r) in rows.iter().enumerate() {
                exec(
                    c,
                    &format!(
                        "UPDATE {} SET {} = {} WHERE {} = {}",
                        q(s.table),
                        q("position"),
                        -(i as i64) - 1,
                        q("id"),
                        r.id
                    ),
                );
            }
            for (i, r) in rows.iter().enumerate() {
                let slot = if i > anchor { i + 2 } else { i + 1 };
                exec(
                    c,
                    &format!(
                        "UPDATE {} SET {} = {} WHERE {} = {}",
                        q(s.table),
                        q("position"),
                        slot as i64 * 1024,
                        q("id"),
                        r.id
                    ),
                );
            }
            st.rows += 2 * rows.len() as u64;
            (anchor as i64 + 2) * 1024
        };
        exec(
            c,
            &format!(
                "INSERT INTO {} ({}, {}) VALUES (1, {pos})",
                q(s.table),
                q("parent_id"),
                q("position")
            ),
        );
        exec(c, "COMMIT");
        st.rows += 1;
        st.lat.push(t.elapsed());
    }
    st
}

struct Row {
    engine: &'static str,
    strategy: &'static str,
    workload: &'static str,
    size: usize,
    ours: Stats,
    floor_p50: Duration,
    /// The floor's statements per operation (0: not counted).
    floor_statements: f64,
    acts_as_list: Option<Stats>,
    ranked_model: Option<Stats>,
}

fn seaorm_insert(
    s: Spec,
) -> impl for<'a> FnMut(
    &'a sea_orm::DatabaseTransaction,
    ordered_seaorm::Slot,
) -> ordered_seaorm::InsertFuture<'a, ()>
+ Send {
    move |txn, slot| {
        Box::pin(async move {
            let d = ordered_seaorm::dialect(sea_orm::ConnectionTrait::get_database_backend(txn))
                .map_err(sea_orm::DbErr::from)?;
            let q = |x: &str| sql::quote(d, x);
            let ph = if d == Dialect::Postgres {
                "$1, $2"
            } else {
                "?, ?"
            };
            let st = Statement {
                sql: format!(
                    "INSERT INTO {} ({}, {}) VALUES ({ph})",
                    q(s.table),
                    q("parent_id"),
                    q("position")
                ),
                args: vec![Arg::I64(slot.scope::<i64>()?), (&slot.position).into()],
                returns: Returns::Nothing,
            };
            ordered_seaorm::__private::run(txn, &st, ordered_core::adapter::Wire::PLAIN).await?;
            Ok(())
        })
    }
}

/// The floor written with SeaORM, as an application would: `ordered_seaorm::begin` (READ
/// COMMITTED on the servers, `BEGIN IMMEDIATE` on SQLite), the parent's locking read and
/// the one-row `UPDATE` as parameterized statements (sqlx keeps them prepared), `COMMIT`.
async fn seaorm_floor(
    db: &sea_orm::DatabaseConnection,
    d: Dialect,
    s: &Spec,
    ids: &[Id],
    ops: usize,
) -> Stats {
    use sea_orm::{ConnectionTrait, Statement as SeaStatement};
    let ph = if d == Dialect::Postgres { "$1" } else { "?" };
    let backend = db.get_database_backend();
    let lock = floor_lock(d, s, ph);
    let update = floor_write(d, s, ph);
    let mut st = Stats::default();
    let mut rng = Rng(7);
    for _ in 0..ops {
        let Id::Int(id) = ids[rng.below(ids.len())] else {
            panic!("integer ids")
        };
        let t = Instant::now();
        let txn = ordered_seaorm::begin(db).await.unwrap();
        txn.query_all_raw(SeaStatement::from_sql_and_values(
            backend,
            &lock,
            [1i64.into()],
        ))
        .await
        .unwrap();
        txn.execute_raw(SeaStatement::from_sql_and_values(
            backend,
            &update,
            [id.into()],
        ))
        .await
        .unwrap();
        txn.commit().await.unwrap();
        st.lat.push(t.elapsed());
        st.rows += 1;
    }
    st
}

/// The SeaORM adapter on the same engine: gapped integers, against a floor written with
/// SeaORM ([`seaorm_floor`]).
fn seaorm_rows<C: BenchConn>(
    engine: &'static str,
    c: &mut C,
    sea_url: &str,
    quick: bool,
    out: &mut Vec<Row>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("tokio: {e}"),
    };
    let db = rt.block_on(sea_orm::Database::connect(sea_url)).unwrap();
    let sizes = bench_sizes(if quick { &[1_000] } else { &[1_000, 10_000] });
    let sizes: Vec<usize> = sizes.into_iter().filter(|&n| n <= 10_000).collect();
    let ops = if quick { 20 } else { 200 };
    for &size in &sizes {
        for workload in ["random", "hot gap", "move to front"] {
            let s = spec("m", &GAPPED);
            let ids = prepare(c, &s, size, 1);
            let floor_st = rt.block_on(seaorm_floor(&db, C::DIALECT, &s, &ids, ops));
            let o = ordered_seaorm::OrderedTable::new(s);
            let mut st = Stats::default();
            let mut rng = Rng(0x2545_F491_4F6C_DD1D);
            let hot = ids[ids.len() / 2];
            rt.block_on(async {
                for _ in 0..ops {
                    let t = Instant::now();
                    let out = match workload {
                        "random" => {
                            o.insert_after(
                                &db,
                                ordered_core::Id::Int(1),
                                ids[rng.below(ids.len())],
                                seaorm_insert(s),
                            )
                            .await
                            .unwrap()
                            .outcome
                        }
                        "hot gap" => {
                            o.insert_after(&db, ordered_core::Id::Int(1), hot, seaorm_insert(s))
                                .await
                                .unwrap()
                                .outcome
                        }
                        _ => o
                            .move_to_start(&db, ids[rng.below(ids.len())])
                            .await
                            .unwrap(),
                    };
                    st.lat.push(t.elapsed());
                    st.rows += out.rows_written;
                }
            });
            eprintln!(
                "  {engine:<8} SeaORM     {workload:<13} {size:>6}: p50 {} ms, SeaORM floor {} ms",
                ms(st.pct(0.5)),
                ms(floor_st.pct(0.5))
            );
            out.push(Row {
                engine,
                strategy: "gapped, SeaORM",
                workload,
                size,
                ours: st,
                floor_p50: floor_st.pct(0.5),
                floor_statements: 0.0, // SeaORM's statements are not counted
                acts_as_list: None,
                ranked_model: None,
            });
        }
    }
}

/// The caller's insert through diesel-async (the same statement as [`insert_row`]).
fn async_insert<A: ordered_diesel::async_diesel::AsyncOrderedConnection>(
    s: Spec,
) -> impl for<'a> FnMut(&'a mut A, Slot) -> ordered_diesel::async_diesel::InsertFuture<'a, ()> + Send
{
    move |c, slot| {
        Box::pin(async move {
            let d = A::DIALECT;
            let q = |x: &str| sql::quote(d, x);
            let ph = if d == Dialect::Postgres {
                "$1, $2"
            } else {
                "?, ?"
            };
            let st = Statement {
                sql: format!(
                    "INSERT INTO {} ({}, {}) VALUES ({ph})",
                    q(s.table),
                    q("parent_id"),
                    q("position")
                ),
                args: vec![Arg::I64(slot.scope::<i64>()?), (&slot.position).into()],
                returns: Returns::Nothing,
            };
            c.run(&st, ordered_core::adapter::Wire::PLAIN).await?;
            Ok(())
        })
    }
}

/// The diesel-async adapter on the same engine: gapped integers, against the same floor
/// (the sync floor: one transaction that locks the parent and updates one row).
fn async_rows<C, A>(engine: &'static str, c: &mut C, url: &str, quick: bool, out: &mut Vec<Row>)
where
    C: BenchConn,
    A: ordered_diesel::async_diesel::AsyncOrderedConnection
        + diesel_async::AsyncConnection
        + diesel_async::SimpleAsyncConnection
        + 'static,
{
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("tokio: {e}"),
    };
    let mut conn = rt.block_on(A::establish(url)).unwrap();
    if A::DIALECT == Dialect::Sqlite {
        rt.block_on(conn.batch_execute("PRAGMA busy_timeout = 5000"))
            .unwrap();
    }
    let sizes = bench_sizes(if quick { &[1_000] } else { &[1_000, 10_000] });
    let sizes: Vec<usize> = sizes.into_iter().filter(|&n| n <= 10_000).collect();
    let ops = if quick { 20 } else { 200 };
    for &size in &sizes {
        for workload in ["random", "hot gap", "move to front"] {
            let s = spec("m", &GAPPED);
            let ids = prepare(c, &s, size, 1);
            let floor_st = floor(c, &s, &ids, ops);
            let o = ordered_diesel::async_diesel::OrderedTable::new(s);
            let mut st = Stats::default();
            let mut rng = Rng(0x2545_F491_4F6C_DD1D);
            let hot = ids[ids.len() / 2];
            rt.block_on(async {
                for _ in 0..ops {
                    let t = Instant::now();
                    let out = match workload {
                        "random" => {
                            let a = ids[rng.below(ids.len())];
                            o.insert_after(&mut conn, 1, a, async_insert::<A>(s))
                                .await
                                .unwrap()
                                .outcome
                        }
                        "hot gap" => {
                            o.insert_after(&mut conn, 1, hot, async_insert::<A>(s))
                                .await
                                .unwrap()
                                .outcome
                        }
                        _ => o
                            .move_to_start(&mut conn, ids[rng.below(ids.len())])
                            .await
                            .unwrap(),
                    };
                    st.lat.push(t.elapsed());
                    st.rows += out.rows_written;
                }
            });
            eprintln!(
                "  {engine:<8} diesel-async {workload:<13} {size:>6}: p50 {} ms, floor {} ms",
                ms(st.pct(0.5)),
                ms(floor_st.pct(0.5))
            );
            out.push(Row {
                engine,
                strategy: "gapped, diesel-async",
                workload,
                size,
                ours: st,
                floor_p50: floor_st.pct(0.5),
                floor_statements: 0.0,
                acts_as_list: None,
                ranked_model: None,
            });
        }
    }
}

/// A move to the front under a request key (its record written in its transaction)
/// against the same move without one, and the repeat of a recorded move (its replay),
/// on a list of 1,000: alternating rounds, the medians of the rounds' p50s compared,
/// with the spread of the per-round ratios, and the statements each sends.
/// `ORDERED_BENCH_WORKLOADS=recorded` runs only this section.
fn recorded_rows<C: BenchConn>(engine: &str, c: &mut C, quick: bool, extra: &mut String) {
    let s = spec("m", &GAPPED);
    let ids = prepare(c, &s, 1_000, 1);
    let d = C::DIALECT;
    for st in ordered_core::migration::create_requests_table(d).up {
        exec(c, &st);
    }
    exec(
        c,
        &format!(
            "DELETE FROM {} WHERE {} = '{}'",
            sql::quote(d, ordered_core::requests::TABLE),
            sql::quote(d, "table_name"),
            s.table
        ),
    );
    let (rounds, ops) = if quick { (3, 20) } else { (7, 100) };
    let o = OrderedTable::new(s);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut n = 0u64;
    // per kind: each round's p50, and statements sent in all
    let mut p50s: [Vec<Duration>; 3] = Default::default();
    let mut sent = [0u64; 3];
    let mut total = [0u64; 3];
    for _ in 0..rounds {
        // this round's recorded moves: (key, item), repeated as they were
        let mut recorded: Vec<(String, Id)> = Vec::new();
        for kind in 0..3 {
            let mut st = Stats::default();
            let before = statements();
            for i in 0..ops {
                let (h, item) = match kind {
                    0 => (o.clone(), ids[rng.below(ids.len())]),
                    // a new key per move
                    1 => {
                        n += 1;
                        let key = format!("bench-{n}");
                        let item = ids[rng.below(ids.len())];
                        recorded.push((key.clone(), item));
                        (o.clone().request_key(key), item)
                    }
                    _ => {
                        let (key, item) = recorded[i].clone();
                        (o.clone().request_key(key), item)
                    }
                };
                let t = Instant::now();
                let out = h.move_to_start(c, item).unwrap();
                st.lat.push(t.elapsed());
                assert_eq!(out.replayed, kind == 2);
            }
            sent[kind] += statements() - before;
            total[kind] += ops as u64;
            p50s[kind].push(st.pct(0.5));
        }
    }
    let median = |v: &[Duration]| {
        let mut v = v.to_vec();
        v.sort();
        v[v.len() / 2]
    };
    let ratios = |k: usize| -> Vec<f64> {
        p50s[k]
            .iter()
            .zip(&p50s[0])
            .map(|(a, b)| a.as_secs_f64() / b.as_secs_f64().max(1e-9))
            .collect()
    };
    let spread = |v: Vec<f64>| {
        let lo = v.iter().copied().fold(f64::MAX, f64::min);
        let hi = v.iter().copied().fold(0.0, f64::max);
        format!("{lo:.2}-{hi:.2}")
    };
    let per = |k: usize| sent[k] as f64 / total[k].max(1) as f64;
    for (k, what) in [
        (1, "recorded move to front"),
        (2, "repeat of a recorded move"),
    ] {
        let mut r = ratios(k);
        r.sort_by(f64::total_cmp);
        let mid = r[r.len() / 2];
        eprintln!(
            "  {engine:<8} {what}: p50 {} ms ({:.1} statements) against unrecorded {} ms ({:.1}): ratio {mid:.2} (spread {})",
            ms(median(&p50s[k])),
            per(k),
            ms(median(&p50s[0])),
            per(0),
            spread(r.clone())
        );
        let _ = writeln!(
            extra,
            "| {engine} | {what}, 1k gapped, median of {rounds} alternating rounds of {ops} | {} ms, {:.1} statements | the same move without a key: {} ms, {:.1} statements | ratio {mid:.2} (rounds {}) |",
            ms(median(&p50s[k])),
            per(k),
            ms(median(&p50s[0])),
            per(0),
            spread(r)
        );
    }
}

/// The workloads of the matrix: each runs ours against the floor (and the naive
/// baselines for the first three).
const WORKLOADS: [&str; 6] = [
    "append",
    "random",
    "hot gap",
    "move to front",
    "insert at index",
    "move to index",
];

/// The workloads to run: `ORDERED_BENCH_WORKLOADS="move to index,insert at index"`
/// (comma-separated) runs only those rows of the matrix, and none of the sections after
/// it (the other adapters, the relabel, the concurrent writers).
fn bench_workloads() -> Option<Vec<String>> {
    std::env::var("ORDERED_BENCH_WORKLOADS")
        .ok()
        .map(|v| v.split(',').map(|w| w.trim().to_owned()).collect())
}

/// The list sizes to run: `ORDERED_BENCH_SIZES=10000,100000` (comma-separated) instead
/// of `default`, to measure one size again without the whole run.
fn bench_sizes(default: &[usize]) -> Vec<usize> {
    match std::env::var("ORDERED_BENCH_SIZES") {
        Ok(v) => v
            .split(',')
            .map(|x| {
                x.trim()
                    .parse()
                    .unwrap_or_else(|e| panic!("ORDERED_BENCH_SIZES={v}: {e}"))
            })
            .collect(),
        Err(_) => default.to_vec(),
    }
}

fn matrix<C: BenchConn>(
    engine: &'static str,
    url: &str,
    sea_url: &str,
    quick: bool,
    out: &mut Vec<Row>,
    extra: &mut String,
) {
    let sizes = bench_sizes(if quick {
        &[1_000]
    } else {
        &[1_000, 10_000, 100_000]
    });
    let sizes = sizes.as_slice();
    let ops = if quick { 20 } else { 200 };
    let mut c = C::open(url);
    count_statements(&mut c);
    let chosen = bench_workloads();
    let strategies: [(&'static str, &'static dyn PositionStrategy); 4] = [
        ("gapped", &GAPPED),
        ("fractional", &KEYS),
        ("numeric", &NUMBERS),
        ("dense", &Dense),
    ];
    for &size in sizes {
        for (sname, strategy) in strategies {
            for workload in WORKLOADS {
                if chosen
                    .as_ref()
                    .is_some_and(|c| !c.iter().any(|w| w == workload))
                {
                    continue;
                }
                let s = spec("m", strategy);
                let dense_ops = if strategy.is_dense() && size >= 10_000 {
                    ops / 10
                } else {
                    ops
                };
                let ids = prepare(&mut c, &s, size, 1);
                let floor_st = floor(&mut c, &s, &ids, ops);
                let ours_st = ours(&mut c, &s, &ids, workload, dense_ops.max(5));
                let (mut aal, mut rm) = (None, None);
                if sname == "gapped"
                    && size <= 10_000
                    && matches!(workload, "append" | "random" | "hot gap")
                {
                    let naive_ops = if size <= 1_000 { ops / 4 } else { 3 };
                    let sd = spec("m", &Dense);
                    prepare(&mut c, &sd, size, 1);
                    aal = Some(naive_dense(&mut c, &sd, size, workload, naive_ops.max(3)));
                    let sg = spec("m", &GAPPED);
                    let gids = prepare(&mut c, &sg, size, 1);
                    rm = Some(naive_gapped(&mut c, &sg, &gids, workload, naive_ops.max(3)));
                }
                eprintln!(
                    "  {engine:<8} {sname:<10} {workload:<13} {size:>6}: p50 {} ms, {:.1} rows/op, floor {} ms",
                    ms(ours_st.pct(0.5)),
                    ours_st.rows_per_op(),
                    ms(floor_st.pct(0.5))
                );
                out.push(Row {
                    engine,
                    strategy: sname,
                    workload,
                    size,
                    ours: ours_st,
                    floor_p50: floor_st.pct(0.5),
                    floor_statements: floor_st.statements_per_op(),
                    acts_as_list: aal,
                    ranked_model: rm,
                });
            }
        }
    }
    if chosen
        .as_ref()
        .is_none_or(|c| c.iter().any(|w| w == "recorded"))
    {
        recorded_rows(engine, &mut c, quick, extra);
    }
    if chosen.is_some() {
        return;
    }
    seaorm_rows(engine, &mut c, sea_url, quick, out);
    match C::DIALECT {
        Dialect::Sqlite => async_rows::<
            C,
            diesel_async::sync_connection_wrapper::SyncConnectionWrapper<diesel::SqliteConnection>,
        >(engine, &mut c, url, quick, out),
        Dialect::Postgres => {
            async_rows::<C, diesel_async::AsyncPgConnection>(engine, &mut c, url, quick, out)
        }
        #[cfg(feature = "mysql")]
        Dialect::Mysql => {
            async_rows::<C, diesel_async::AsyncMysqlConnection>(engine, &mut c, url, quick, out)
        }
        #[cfg(not(feature = "mysql"))]
        Dialect::Mysql => {}
    }
    // a relabel of the whole collection against a bare UPDATE of the same rows, in
    // alternating rounds: each bare UPDATE moves every row up by one, so the next
    // rebalance moves every row back (a real change to every row each time), and both
    // see the same cache; the medians are compared, a single relabel moves by a third
    let n = *sizes.last().unwrap_or(&1000);
    let s = spec("m", &GAPPED);
    prepare(&mut c, &s, n, 1);
    let d = C::DIALECT;
    let q = |x: &str| sql::quote(d, x);
    let rounds = if quick { 1 } else { 5 };
    let (mut relabels, mut bares) = (Stats::default(), Stats::default());
    for _ in 0..rounds {
        let t = Instant::now();
        OrderedTable::new(s).rebalance(&mut c, 1).unwrap();
        relabels.lat.push(t.elapsed());
        let t = Instant::now();
        exec(
            &mut c,
            &format!(
                // + 1, a real change to every row (positions are far apart, so no two
                // collide even when checked row by row)
                "UPDATE {} SET {} = {} + 1 WHERE {} = 1",
                q(s.table),
                q("position"),
                q("position"),
                q("parent_id")
            ),
        );
        bares.lat.push(t.elapsed());
    }
    let (relabel, bare) = (relabels.pct(0.5), bares.pct(0.5));
    let each: Vec<String> = relabels
        .lat
        .iter()
        .zip(&bares.lat)
        .map(|(r, b)| format!("{:.2}", r.as_secs_f64() / b.as_secs_f64().max(1e-9)))
        .collect();
    let _ = writeln!(
        extra,
        "| {engine} | relabel of {n} rows (rebalance), median of {rounds} | {} ms | bare `UPDATE` of the same rows: {} ms | ratio {:.2} (each round: {}) |",
        ms(relabel),
        ms(bare),
        relabel.as_secs_f64() / bare.as_secs_f64().max(1e-9),
        each.join(", ")
    );
    // 16 writers on 16 parents, and 16 writers on one parent against the floor
    let writers = if quick { 4 } else { 16 };
    let per = if quick { 10 } else { 50 };
    let ops = (writers * per) as f64;
    // how long `writers` threads take to append `per` items each, writer w to parent
    // 1 + w % parents, through the library
    let ours_run = |c: &mut C, parents: i64| {
        let s = spec("w", &GAPPED);
        prepare(c, &s, 10, parents);
        let t = Instant::now();
        std::thread::scope(|sc| {
            for w in 0..writers {
                let url = url.to_owned();
                sc.spawn(move || {
                    let mut c = C::open(&url);
                    let parent = 1 + (w as i64 % parents);
                    for _ in 0..per {
                        OrderedTable::new(s)
                            .insert_last(&mut c, parent, |c, slot| insert_row(c, &s, &slot))
                            .unwrap();
                    }
                });
            }
        });
        t.elapsed()
    };
    // the floor on the same hot parent: each writer locks it and inserts one row at a
    // position of its own (no read, no check), in one transaction
    let floor_run = |c: &mut C| {
        let s = spec("w", &GAPPED);
        prepare(c, &s, 10, 1);
        let d = C::DIALECT;
        let begin = sql::begin(d);
        let lock = floor_lock(d, &s, "1");
        let t = Instant::now();
        std::thread::scope(|sc| {
            for w in 0..writers {
                let (url, lock) = (url.to_owned(), lock.clone());
                sc.spawn(move || {
                    let mut c = C::open(&url);
                    for i in 0..per {
                        let position = 1_000_000_000 + (w * per + i) as i64 * 1024;
                        loop {
                            exec(&mut c, begin);
                            exec(&mut c, &lock);
                            let insert = format!(
                                "INSERT INTO {} ({}, {}) VALUES (1, {position})",
                                sql::quote(d, s.table),
                                sql::quote(d, "parent_id"),
                                sql::quote(d, "position")
                            );
                            if c.batch_execute(&insert).is_ok() && c.batch_execute("COMMIT").is_ok()
                            {
                                break;
                            }
                            let _ = c.batch_execute("ROLLBACK");
                        }
                    }
                });
            }
        });
        t.elapsed()
    };
    let spread = ops / ours_run(&mut c, writers as i64).as_secs_f64();
    let _ = writeln!(
        extra,
        "| {engine} | {writers} writers x {per} inserts, {writers} parents | {spread:.0} ops/s | | |"
    );
    // one parent: alternating rounds of ours and the floor, the medians compared (16
    // threads on 2 cores swing a single round by 2x either way), as for the relabel
    let (mut ours, mut floors) = (Stats::default(), Stats::default());
    for _ in 0..rounds {
        ours.lat.push(ours_run(&mut c, 1));
        floors.lat.push(floor_run(&mut c));
    }
    let per_round: Vec<String> = ours
        .lat
        .iter()
        .zip(&floors.lat)
        .map(|(o, f)| format!("{:.2}", f.as_secs_f64() / o.as_secs_f64().max(1e-9)))
        .collect();
    let ours_hot = ops / ours.pct(0.5).as_secs_f64().max(1e-9);
    let floor_hot = ops / floors.pct(0.5).as_secs_f64().max(1e-9);
    let _ = writeln!(
        extra,
        "| {engine} | {writers} writers x {per} inserts, one parent, median of {rounds} | {ours_hot:.0} ops/s | the floor (lock, insert): {floor_hot:.0} ops/s | ours / floor {:.2} (rounds {}) |",
        ours_hot / floor_hot,
        per_round.join(", ")
    );
}

fn svg_rows(rows: &[Row], path: &std::path::Path) {
    use plotters::prelude::*;
    let root = SVGBackend::new(path, (900, 500)).into_drawing_area();
    let _ = root.fill(&WHITE);
    let sizes: Vec<usize> = {
        let mut v: Vec<usize> = rows.iter().map(|r| r.size).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let max = rows
        .iter()
        .filter(|r| matches!(r.workload, "append" | "random" | "hot gap"))
        .flat_map(|r| {
            [
                Some(r.ours.rows_per_op()),
                r.acts_as_list.as_ref().map(Stats::rows_per_op),
            ]
        })
        .flatten()
        .fold(1.0f64, f64::max);
    let mut chart = match ChartBuilder::on(&root)
        .caption(
            "rows written per insert (hot gap) as the collection grows",
            ("sans-serif", 18),
        )
        .margin(20)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(
            (sizes.first().copied().unwrap_or(1) as f64).log10()
                ..(sizes.last().copied().unwrap_or(10) as f64).log10() + 0.1,
            (0.5f64..max * 2.0).log_scale(),
        ) {
        Ok(c) => c,
        Err(_) => return,
    };
    let _ = chart
        .configure_mesh()
        .x_desc("log10(items)")
        .y_desc("rows per insert")
        .draw();
    let engines: Vec<&str> = {
        let mut v: Vec<&str> = rows.iter().map(|r| r.engine).collect();
        v.dedup();
        v
    };
    let palette = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK];
    let mut k = 0;
    for e in &engines {
        for (label, pick) in [
            ("ours, gapped", 0),
            ("ours, fractional", 1),
            ("acts_as_list", 2),
        ] {
            let pts: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| r.engine == *e && r.workload == "hot gap")
                .filter_map(|r| {
                    match pick {
                        0 if r.strategy == "gapped" => Some(r.ours.rows_per_op()),
                        1 if r.strategy == "fractional" => Some(r.ours.rows_per_op()),
                        2 if r.strategy == "gapped" => {
                            r.acts_as_list.as_ref().map(Stats::rows_per_op)
                        }
                        _ => None,
                    }
                    .map(|y| ((r.size as f64).log10(), y.max(0.5)))
                })
                .collect();
            let color = palette[k % palette.len()];
            k += 1;
            if let Ok(s) = chart.draw_series(LineSeries::new(pts, color.stroke_width(2))) {
                s.label(format!("{e}: {label}"))
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            }
        }
    }
    let _ = chart.configure_series_labels().border_style(BLACK).draw();
    let _ = root.present();
}

fn svg_latency(rows: &[Row], path: &std::path::Path) {
    use plotters::prelude::*;
    let root = SVGBackend::new(path, (900, 500)).into_drawing_area();
    let _ = root.fill(&WHITE);
    let cells: Vec<&Row> = rows
        .iter()
        .filter(|r| r.strategy == "gapped" && r.size == 1_000)
        .collect();
    let max = cells
        .iter()
        .map(|r| r.ours.pct(0.5).as_secs_f64() / r.floor_p50.as_secs_f64().max(1e-9))
        .fold(1.0f64, f64::max);
    let mut chart = match ChartBuilder::on(&root)
        .caption(
            "p50 latency / floor (gapped, 1k items), per engine and workload",
            ("sans-serif", 18),
        )
        .margin(20)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0f64..cells.len() as f64, 0f64..max * 1.2)
    {
        Ok(c) => c,
        Err(_) => return,
    };
    let _ = chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc("engine / workload (see table)")
        .y_desc("ratio")
        .draw();
    let _ = chart.draw_series(cells.iter().enumerate().map(|(i, r)| {
        let y = r.ours.pct(0.5).as_secs_f64() / r.floor_p50.as_secs_f64().max(1e-9);
        Rectangle::new([(i as f64 + 0.1, 0.0), (i as f64 + 0.9, y)], BLUE.filled())
    }));
    let _ = chart.draw_series(cells.iter().enumerate().map(|(i, r)| {
        Text::new(
            format!("{} {}", r.engine, r.workload),
            (i as f64 + 0.1, max * 1.1),
            ("sans-serif", 10),
        )
    }));
    let _ = root.present();
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let mut rows = Vec::new();
    let mut extra = String::new();
    let sqlite_path = std::env::temp_dir().join("ordered-bench.db");
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", sqlite_path.display()));
    }
    eprintln!(
        "ordered benchmark ({})",
        if quick { "quick" } else { "full" }
    );
    let sqlite = sqlite_path.to_str().unwrap();
    let sqlite_sea = format!("sqlite://{sqlite}?mode=rwc");
    // ORDERED_ENGINES=mysql,postgres (as in the tests): only those engines
    let only = std::env::var("ORDERED_ENGINES").ok();
    let wanted = |e: &str| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|x| x.trim() == e))
    };
    if wanted("sqlite") {
        matrix::<diesel::SqliteConnection>(
            "sqlite",
            sqlite,
            &sqlite_sea,
            quick,
            &mut rows,
            &mut extra,
        );
    } else {
        eprintln!("skipped sqlite: not in ORDERED_ENGINES");
    }
    if !wanted("postgres") {
        eprintln!("skipped postgres: not in ORDERED_ENGINES");
    } else if let Ok(url) = std::env::var("ORDERED_PG_URL") {
        matrix::<diesel::PgConnection>("postgres", &url, &url, quick, &mut rows, &mut extra);
    } else {
        eprintln!("skipped postgres: ORDERED_PG_URL is not set");
    }
    #[cfg(feature = "mysql")]
    if !wanted("mysql") {
        eprintln!("skipped mysql: not in ORDERED_ENGINES");
    } else if let Ok(url) = std::env::var("ORDERED_MYSQL_URL") {
        matrix::<diesel::MysqlConnection>("mysql", &url, &url, quick, &mut rows, &mut extra);
    } else {
        eprintln!("skipped mysql: ORDERED_MYSQL_URL is not set");
    }
    let mut md = String::from(
        "| engine | strategy | workload | items | ops/s | p50 ms | p99 ms | p50 / floor | statements/op (floor) | rows/op | longest key | acts_as_list rows/op, p50 ms | ranked-model rows/op, p50 ms |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in &rows {
        let naive = |s: &Option<Stats>| {
            s.as_ref().map_or("-".to_owned(), |s| {
                format!("{:.1}, {}", s.rows_per_op(), ms(s.pct(0.5)))
            })
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {:.0} | {} | {} | {:.2} | {} | {:.2} | {} | {} | {} |",
            r.engine,
            r.strategy,
            r.workload,
            r.size,
            r.ours.ops_per_s(),
            ms(r.ours.pct(0.5)),
            ms(r.ours.pct(0.99)),
            r.ours.pct(0.5).as_secs_f64() / r.floor_p50.as_secs_f64().max(1e-9),
            if r.floor_statements > 0.0 {
                format!(
                    "{:.1} ({:.1})",
                    r.ours.statements_per_op(),
                    r.floor_statements
                )
            } else {
                "-".into()
            },
            r.ours.rows_per_op(),
            if r.strategy == "fractional" {
                r.ours.longest.to_string()
            } else {
                "-".into()
            },
            naive(&r.acts_as_list),
            naive(&r.ranked_model),
        );
    }
    md.push_str("\n| engine | measurement | ours | baseline | |\n|---|---|---|---|---|\n");
    md.push_str(&extra);
    println!("{md}");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join("ordered-bench.md"), &md);
    svg_rows(&rows, &dir.join("ordered-bench-rows.svg"));
    svg_latency(&rows, &dir.join("ordered-bench-latency.svg"));
    eprintln!("wrote {}", dir.join("ordered-bench.md").display());
}
