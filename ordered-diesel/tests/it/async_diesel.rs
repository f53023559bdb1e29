//! The adapter over diesel-async under contention, with the reliability suite's oracle
//! (the ops log written as the last statement of every write, replayed against
//! in-memory lists, and the parent versions):
//!
//! - C1 and C2 through diesel-async: 16 tasks x 200 hot-gap inserts, then as many moves
//!   into the same gap, on the servers; 8 x 100 on SQLite. Every operation commits, the
//!   database equals the replay, versions are the serial order, no lock is left;
//! - C5: the connection of a writer paused in the middle of a relabel is killed (by its
//!   id): `ConnectionLost`, and the relabel is rolled back whole;
//! - the futures are `Send` (an axum handler needs that), and a deadpool / bb8 pooled
//!   connection works as `&mut *pooled`.
#![cfg(all(feature = "async-postgres", feature = "async-sqlite"))]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

#[allow(dead_code)]
#[path = "../reliability/oracle.rs"]
mod oracle;

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering as AtomicOrdering};
use std::time::{Duration, Instant};

use crate::common::*;
use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
use diesel_async::{AsyncConnection, SimpleAsyncConnection};
use oracle::{Model, check_replay, log_stmt, reset_log};
use ordered_core::adapter::sql::{Arg, Returns};
use ordered_diesel::__private::{Controls, Reply, Statement};
use ordered_diesel::async_diesel::{AsyncOrderedConnection, InsertFuture, OrderedTable};
use ordered_diesel::{Dialect, Error, Gapped, Id, Placement, RebalancePolicy, RetryPolicy, Slot};

static GAP16: Gapped = Gapped::new(1 << 16);

/// An async connection type and how to open one for a test's database.
trait AsyncTestConn:
    AsyncOrderedConnection + diesel_async::SimpleAsyncConnection + Sized + 'static
{
    /// The sync connection of the same engine (setup and checks).
    type Sync: TestConn;
    fn open(db: &str) -> impl std::future::Future<Output = Self> + Send;
}

impl AsyncTestConn for SyncConnectionWrapper<diesel::SqliteConnection> {
    type Sync = diesel::SqliteConnection;
    async fn open(db: &str) -> Self {
        let path = std::env::temp_dir().join(format!("ordered-test-{db}.db"));
        let mut c = Self::establish(path.to_str().unwrap()).await.unwrap();
        c.batch_execute("PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;")
            .await
            .unwrap();
        c
    }
}

impl AsyncTestConn for diesel_async::AsyncPgConnection {
    type Sync = diesel::PgConnection;
    async fn open(_: &str) -> Self {
        Self::establish(&std::env::var("ORDERED_PG_URL").unwrap())
            .await
            .unwrap()
    }
}

#[cfg(all(feature = "async-mysql", feature = "mysql"))]
impl AsyncTestConn for diesel_async::AsyncMysqlConnection {
    type Sync = diesel::MysqlConnection;
    async fn open(_: &str) -> Self {
        Self::establish(&std::env::var("ORDERED_MYSQL_URL").unwrap())
            .await
            .unwrap()
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Runs `f::<A>()` for every engine that is enabled.
macro_rules! each_async_engine {
    ($f:ident) => {{
        let rt = runtime();
        if enabled("sqlite") {
            rt.block_on($f::<SyncConnectionWrapper<diesel::SqliteConnection>>());
        }
        if enabled("postgres") {
            rt.block_on($f::<diesel_async::AsyncPgConnection>());
        }
        #[cfg(all(feature = "async-mysql", feature = "mysql"))]
        if enabled("mysql") {
            rt.block_on($f::<diesel_async::AsyncMysqlConnection>());
        }
    }};
}

/// The caller's insert through diesel-async: the item row, with its title.
fn inserter<A: AsyncTestConn>(
    t: &Tables,
    title: String,
) -> impl for<'a> FnMut(&'a mut A, Slot) -> InsertFuture<'a, Id> + Send {
    let d = A::DIALECT;
    let table = t.items;
    move |c, slot| {
        let title = title.clone();
        Box::pin(async move {
            let q = |s: &str| ordered_core::adapter::sql::quote(d, s);
            let ph = if d == Dialect::Postgres {
                ["$1", "$2", "$3"]
            } else {
                ["?", "?", "?"]
            };
            let cols = format!(
                "INSERT INTO {} ({}, {}, {}) VALUES ({}, {}, {})",
                q(table),
                q("parent_id"),
                q("title"),
                q("position"),
                ph[0],
                ph[1],
                ph[2]
            );
            let args = vec![
                Arg::I64(slot.scope::<i64>()?),
                Arg::Text(title),
                (&slot.position).into(),
            ];
            let stmts = match d {
                Dialect::Mysql => vec![
                    Statement {
                        sql: cols,
                        args,
                        returns: Returns::Nothing,
                    },
                    Statement {
                        sql: "SELECT CAST(LAST_INSERT_ID() AS SIGNED) AS o_count".into(),
                        args: vec![],
                        returns: Returns::Count,
                    },
                ],
                _ => vec![Statement {
                    sql: format!("{cols} RETURNING CAST({} AS BIGINT) AS o_count", q("id")),
                    args,
                    returns: Returns::Count,
                }],
            };
            let mut last = Reply::None;
            for s in &stmts {
                last = c.run(s, ordered_core::adapter::Wire::PLAIN).await?;
            }
            match last {
                Reply::Count(id) => Ok(Id::Int(id)),
                other => panic!("{other:?}"),
            }
        })
    }
}

/// Workers x operations per worker, as the reliability suite's.
fn sizes(d: Dialect) -> (usize, usize) {
    if d == Dialect::Sqlite {
        (8, 100)
    } else {
        (16, 200)
    }
}

/// No lock left behind: a fresh writer takes the parent's lock at once.
fn lock_is_free<S: TestConn>(t: &Tables) {
    let mut c = S::open(&t.db);
    let q = |s: &str| ordered_core::adapter::sql::quote(S::DIALECT, s);
    match S::DIALECT {
        Dialect::Sqlite => {
            c.exec("PRAGMA busy_timeout = 1000");
            c.exec("BEGIN IMMEDIATE");
        }
        _ => {
            c.exec("BEGIN");
            c.exec(&format!(
                "SELECT {} FROM {} WHERE {} = 1 FOR UPDATE NOWAIT",
                q("id"),
                q(t.parents),
                q("id")
            ));
        }
    }
    c.exec("ROLLBACK");
}

/// C1 then C2 through diesel-async: hot-gap inserts, then moves into the same gap.
async fn hot_gap<A: AsyncTestConn>() {
    let d = A::DIALECT;
    let (n, m) = sizes(d);
    let (mut c, t) = setup::<A::Sync>(
        "async_hot",
        &GAP16,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1)],
    );
    let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "A");
    let b = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "B");
    for (phase, label) in [
        ("insert", "C1 hot-gap inserts"),
        ("move", "C2 hot-gap moves"),
    ] {
        // each phase replays its own log over the lists it started from
        reset_log(&mut c);
        let start = Model::read(&mut c, &t, &[ordered_diesel::Id::Int(1)]);
        let pool: Vec<Id> = ids(&mut c, &t, ordered_diesel::Id::Int(1))
            .into_iter()
            .filter(|&x| x != a && x != b)
            .collect();
        let started = Instant::now();
        let mut tasks = Vec::new();
        for w in 0..n {
            let t = t.clone();
            let pool = pool.clone();
            tasks.push(tokio::spawn(async move {
                let mut conn = A::open(&t.db).await;
                let o = OrderedTable::new(t.spec).with_final_statement(log_stmt);
                let mut done = Vec::new();
                let mut errors = Vec::new();
                let mut rng = 0x9E37_79B9_u64 ^ (w as u64 * 7919 + 1);
                for i in 0..m {
                    let r = if phase == "insert" {
                        o.insert_after(&mut conn, 1, a, inserter::<A>(&t, format!("w{w}-{i}")))
                            .await
                            .map(|r| (r.outcome, Some(r.value)))
                    } else {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        let item = pool[(rng % pool.len() as u64) as usize];
                        o.move_after(&mut conn, item, a).await.map(|o| (o, None))
                    };
                    match r {
                        Ok((out, id)) => {
                            done.push((out.version.unwrap(), out.relabelled, id, out.unchanged))
                        }
                        Err(e) => errors.push(format!("{e}")),
                    }
                }
                (done, errors)
            }));
        }
        let mut done = Vec::new();
        let mut errors = Vec::new();
        for task in tasks {
            let (d, e) = task.await.unwrap();
            done.extend(d);
            errors.extend(e);
        }
        let elapsed = started.elapsed();
        let label = format!("diesel-async {label} {}", A::Sync::name());
        lock_is_free::<A::Sync>(&t);
        // I4: every operation commits (retries are allowed)
        assert!(errors.is_empty(), "{label}: {errors:?}");
        assert_eq!(done.len(), n * m, "{label}");
        // a move to where the item already was commits nothing (`unchanged`)
        let changed = done.iter().filter(|x| !x.3).count();
        // I1-I3 by the ops log: the database is the replay of what committed
        let log = check_replay(&mut c, &t, &start, &label);
        assert_eq!(log.len(), changed, "{label}: a log entry per commit");
        // the versions are the serial order: all distinct
        let mut versions: Vec<i64> = done.iter().filter(|x| !x.3).map(|x| x.0).collect();
        versions.sort_unstable();
        versions.dedup();
        assert_eq!(
            versions.len(),
            changed,
            "{label}: two writes share a version"
        );
        let relabels = done.iter().filter(|x| x.1 > 0).count();
        assert!(
            relabels > 0 || phase == "move",
            "{label}: the hot gap never relabelled"
        );
        eprintln!(
            "{label}: {} x {} in {:.1} s, {relabels} relabels",
            n,
            m,
            elapsed.as_secs_f64()
        );
    }
    drop_tables(&mut c, &t);
}

#[test]
fn hot_gap_inserts_and_moves_through_diesel_async() {
    each_async_engine!(hot_gap);
}

static PAUSED: AtomicBool = AtomicBool::new(false);
static WRITER: AtomicI64 = AtomicI64::new(0);

fn pause_until_killed() {
    PAUSED.store(true, AtomicOrdering::SeqCst);
    std::thread::sleep(Duration::from_millis(2500));
}

fn own_id_stmt(d: Dialect) -> Statement {
    Statement {
        sql: match d {
            Dialect::Postgres => "SELECT CAST(pg_backend_pid() AS BIGINT) AS o_count".into(),
            _ => "SELECT CAST(CONNECTION_ID() AS SIGNED) AS o_count".into(),
        },
        args: vec![],
        returns: Returns::Count,
    }
}

/// C5 through diesel-async: the writer's own connection is killed while it is paused
/// inside a relabel.
async fn killed<A: AsyncTestConn>() {
    let d = A::DIALECT;
    if d == Dialect::Sqlite {
        return; // no server connection to kill: the sync suite SIGKILLs a process
    }
    let (mut c, t) = setup::<A::Sync>(
        "async_c5",
        &TIGHT,
        RebalancePolicy::Whole,
        &[ordered_diesel::Id::Int(1)],
    );
    let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "A");
    for i in 0..30 {
        add(
            &mut c,
            &t,
            ordered_diesel::Id::Int(1),
            Placement::Last,
            &format!("i{i}"),
        );
    }
    PAUSED.store(false, AtomicOrdering::SeqCst);
    WRITER.store(0, AtomicOrdering::SeqCst);
    // the writer on a thread and runtime of its own: the pause blocks its thread
    let tw = t.clone();
    let writer = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let mut conn = A::open(&tw.db).await;
            match conn
                .run(&own_id_stmt(A::DIALECT), ordered_core::adapter::Wire::PLAIN)
                .await
                .unwrap()
            {
                Reply::Count(id) => WRITER.store(id, AtomicOrdering::SeqCst),
                other => panic!("{other:?}"),
            }
            let o = OrderedTable::new(tw.spec)
                .retry(RetryPolicy::NONE)
                .with_controls(Controls {
                    pause_in_relabel: Some(pause_until_killed),
                    ..Controls::default()
                });
            for i in 0..64 {
                let r = o
                    .insert_after(&mut conn, 1, a, inserter::<A>(&tw, format!("r{i}")))
                    .await?;
                if r.outcome.relabelled > 0 {
                    return Ok(r.outcome);
                }
            }
            panic!("no relabel");
        })
    });
    let started = Instant::now();
    while !PAUSED.load(AtomicOrdering::SeqCst) {
        assert!(started.elapsed() < Duration::from_secs(30), "never paused");
        std::thread::sleep(Duration::from_millis(2));
    }
    let snapshot = ord(&t).list(&mut c, 1).unwrap();
    let id = WRITER.load(AtomicOrdering::SeqCst);
    assert!(id > 0);
    match d {
        Dialect::Postgres => c.exec(&format!("SELECT pg_terminate_backend({id})")),
        _ => c.exec(&format!("KILL {id}")),
    }
    let r: Result<ordered_diesel::Outcome, Error> = writer.join().unwrap();
    let e = r.expect_err("the killed writer succeeded");
    assert!(
        matches!(e, Error::ConnectionLost(_)) && e.is_retryable(),
        "diesel-async {}: the killed caller got {e:?}",
        A::Sync::name()
    );
    assert_eq!(
        ord(&t).list(&mut c, 1).unwrap(),
        snapshot,
        "diesel-async: the relabel was not rolled back whole"
    );
    sound(&mut c, &t, ordered_diesel::Id::Int(1));
    eprintln!(
        "diesel-async C5 {}: ConnectionLost, rolled back whole",
        A::Sync::name()
    );
    drop_tables(&mut c, &t);
}

#[test]
fn a_connection_killed_mid_relabel_through_diesel_async() {
    each_async_engine!(killed);
}

/// The operations' futures are `Send`, so an axum handler can await them; pooled
/// connections (deadpool, bb8) work as `&mut *pooled`; inside the caller's own async
/// transaction the operation is a savepoint.
#[test]
fn pooled_connections_and_the_callers_transaction() {
    fn assert_send<F: std::future::Future + Send>(f: F) -> F {
        f
    }
    if !enabled("postgres") {
        return;
    }
    runtime().block_on(async {
        use diesel_async::pooled_connection::AsyncDieselConnectionManager;
        let (mut c, t) = setup::<diesel::PgConnection>(
            "async_pool",
            &GAPPED,
            RebalancePolicy::Window,
            &[ordered_diesel::Id::Int(1)],
        );
        let x = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "x");
        let y = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "y");
        let url = std::env::var("ORDERED_PG_URL").unwrap();
        let o = OrderedTable::new(t.spec);

        let dp = diesel_async::pooled_connection::deadpool::Pool::builder(
            AsyncDieselConnectionManager::<diesel_async::AsyncPgConnection>::new(url.clone()),
        )
        .build()
        .unwrap();
        let mut pooled = dp.get().await.unwrap();
        assert_send(o.move_to_start(&mut *pooled, y)).await.unwrap();
        assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(1)), [y, x]);

        let bb = diesel_async::pooled_connection::bb8::Pool::builder()
            .build(AsyncDieselConnectionManager::<
                diesel_async::AsyncPgConnection,
            >::new(url))
            .await
            .unwrap();
        let mut pooled = bb.get().await.unwrap();
        assert_send(o.move_to_start(&mut *pooled, x)).await.unwrap();
        assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(1)), [x, y]);

        // the caller's transaction: the move is a savepoint, rolled back with it
        let inner: &mut diesel_async::AsyncPgConnection = &mut pooled;
        let spec = t.spec;
        let r: Result<(), Error> = inner
            .transaction(async move |conn| {
                OrderedTable::new(spec).move_to_start(conn, y).await?;
                Err(Error::Ordering(ordered_diesel::OrderingError::Exhausted))
            })
            .await;
        assert!(r.is_err());
        assert_eq!(
            ids(&mut c, &t, ordered_diesel::Id::Int(1)),
            [x, y],
            "the caller's rollback did not undo the move"
        );
        drop_tables(&mut c, &t);
    });
}

/// Retries wait out a lock holder (PostgreSQL `lock_timeout` 50 ms against a 300 ms
/// holder), and they pause on tokio's timer: on a one-thread runtime a ticker task keeps
/// running while the operation retries.
#[test]
fn retries_sleep_on_the_runtime() {
    if !enabled("postgres") {
        return;
    }
    let (mut c, t) = setup::<diesel::PgConnection>(
        "async_retry",
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1)],
    );
    let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "a");
    let b = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "b");
    let mut holder = <diesel::PgConnection as TestConn>::open(&t.db);
    holder.exec("BEGIN");
    holder.exec(&format!(
        "UPDATE {} SET name = name WHERE id = 1",
        t.parents
    ));
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        holder.exec("COMMIT");
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (outcome, ticks, elapsed) = rt.block_on(async {
        let ticks = std::sync::Arc::new(AtomicI64::new(0));
        let counter = ticks.clone();
        let ticker = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(5)).await;
                counter.fetch_add(1, AtomicOrdering::SeqCst);
            }
        });
        let mut conn = diesel_async::AsyncPgConnection::open(&t.db).await;
        conn.batch_execute("SET lock_timeout = '50ms'")
            .await
            .unwrap();
        let started = Instant::now();
        let r = OrderedTable::new(t.spec)
            .retry(RetryPolicy {
                max_attempts: 50,
                base: Duration::from_millis(20),
                cap: Duration::from_millis(40),
                deadline: Duration::from_secs(5),
            })
            .move_to_start(&mut conn, b)
            .await;
        let elapsed = started.elapsed();
        ticker.abort();
        (r, ticks.load(AtomicOrdering::SeqCst), elapsed)
    });
    release.join().unwrap();
    let outcome = outcome.unwrap();
    assert!(outcome.attempts > 1, "no retry: {outcome:?}");
    assert!(elapsed >= Duration::from_millis(250), "{elapsed:?}");
    // a 5 ms ticker on the same thread: it ran all along (a blocking sleep would stop it)
    let expected = elapsed.as_millis() as i64 / 5;
    assert!(
        ticks * 2 >= expected,
        "the runtime was blocked: {ticks} ticks in {elapsed:?}"
    );
    assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(1)), [b, a]);
    eprintln!(
        "diesel-async retries: {} attempts over {elapsed:?}, {ticks} ticks of the runtime meanwhile",
        outcome.attempts
    );
    drop_tables(&mut c, &t);
}
