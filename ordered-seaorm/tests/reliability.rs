//! The reliability scenarios that depend on the adapter (docs/CONCURRENCY.md), through
//! SeaORM: async tasks sharing a connection pool smaller than the number of writers,
//! the caller's own transactions, and a connection killed in the middle of a relabel,
//! on every engine. Writes `target/ordered-reliability-seaorm.md`.
//!
//! The oracle: every write bumps its parent's version under the parent's lock, so the
//! version an operation returns is its place in that parent's serial order; replaying
//! the committed operations in version order gives the order the database must show.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use ordered_seaorm::__private::Controls;
use ordered_seaorm::{
    Error, Gapped, Id, OrderedTable, OrderingError, Placement, RebalancePolicy, RetryPolicy, Spec,
};
use sea_orm::{
    AccessMode, ConnectionTrait, DatabaseConnection, IsolationLevel, Statement, TransactionTrait,
};

static GAP16: Gapped = Gapped::new(1 << 16);
static TIGHT_WHOLE: Gapped = Gapped::new(4);

#[derive(Default)]
struct Tally {
    commits: u64,
    /// Successes that changed nothing (a move to where the item already was).
    unchanged: u64,
    errors: BTreeMap<String, u64>,
    retries: u64,
    relabels: u64,
    lat: Vec<Duration>,
}

impl Tally {
    fn merge(&mut self, o: Tally) {
        self.commits += o.commits;
        self.unchanged += o.unchanged;
        self.retries += o.retries;
        self.relabels += o.relabels;
        self.lat.extend(o.lat);
        for (k, v) in o.errors {
            *self.errors.entry(k).or_default() += v;
        }
    }
    fn outcome(&mut self, o: &ordered_seaorm::Outcome) {
        // a move to where the item already was: nothing committed
        if o.unchanged {
            self.unchanged += 1;
            return;
        }
        self.commits += 1;
        self.retries += u64::from(o.attempts.saturating_sub(1));
        self.relabels += u64::from(o.relabelled > 0);
    }
    fn error(&mut self, e: &Error) {
        let k = match e {
            Error::Ordering(o) => format!("{o:?}")
                .split([' ', '{', '('])
                .next()
                .unwrap_or("ordering")
                .to_owned(),
            Error::ConnectionLost(_) => "ConnectionLost".into(),
            Error::CommitUnknown(_) => "CommitUnknown".into(),
            Error::RetriesExhausted { .. } => "RetriesExhausted".into(),
            other => format!("{other}"),
        };
        *self.errors.entry(k).or_default() += 1;
    }
    fn row(&self, scenario: &str, engine: &str, level: &str) -> String {
        let pct = |p: f64| {
            let mut v = self.lat.clone();
            v.sort();
            v.get(((v.len().max(1) - 1) as f64 * p).round() as usize)
                .map_or("-".into(), |d| format!("{:.1}", d.as_secs_f64() * 1000.0))
        };
        let errors = if self.errors.is_empty() {
            "-".to_owned()
        } else {
            self.errors
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "| {scenario} | {engine} | {level} | pass | {} | {errors} | {} | {} | {} | {} |",
            self.commits,
            self.retries,
            self.relabels,
            pct(0.5),
            pct(0.99)
        )
    }
}

/// The library's own transactions: READ COMMITTED on the servers, `BEGIN IMMEDIATE`
/// in WAL mode on SQLite.
fn own_level(engine: &str) -> &'static str {
    if engine == "sqlite" {
        "WAL, BEGIN IMMEDIATE"
    } else {
        "READ COMMITTED (own)"
    }
}

fn policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 100,
        base: Duration::from_millis(2),
        cap: Duration::from_millis(50),
        deadline: Duration::from_secs(30),
    }
}

fn sizes(engine: &str) -> (usize, usize) {
    if engine == "sqlite" {
        (8, 100)
    } else {
        (16, 200)
    }
}

/// Replays `(version, item, after)` moves or `(version, new item)` inserts in version
/// order and compares with the database (I1-I3).
async fn check_versions(
    db: &DatabaseConnection,
    spec: Spec,
    mut start: Vec<Id>,
    mut ops: Vec<(i64, Id, Placement)>,
    label: &str,
) {
    ops.sort_unstable_by_key(|o| o.0);
    assert!(
        ops.windows(2).all(|w| w[0].0 < w[1].0),
        "{label}: two writes share a version"
    );
    for (_, item, at) in ops {
        if let Some(i) = start.iter().position(|&x| x == item) {
            start.remove(i);
        }
        let i = match at {
            Placement::After(a) => start.iter().position(|&x| x == a).unwrap() + 1,
            Placement::Before(b) => start.iter().position(|&x| x == b).unwrap(),
            other => panic!("{other:?}"),
        };
        start.insert(i, item);
    }
    assert_eq!(
        ids(db, spec, ordered_seaorm::Id::Int(1)).await,
        start,
        "{label}: differs from the replay"
    );
    sound(db, spec, ordered_seaorm::Id::Int(1)).await;
}

/// C1 and C2 through a shared pool: N tasks x M inserts "after A", then N x M moves of
/// random items to "after A" or "before B".
async fn hot_gap(engine: &str, url: &str, report: &mut Vec<String>) {
    let (n, m) = sizes(engine);
    let db = connect(engine, url, "rel_hot").await;
    let spec = spec_for("rel_hot", &GAP16, RebalancePolicy::Window);
    reset(&db, &spec, &[ordered_seaorm::Id::Int(1)]).await;
    let a = add(&db, spec, ordered_seaorm::Id::Int(1), Placement::Last, "A").await;
    let b = add(&db, spec, ordered_seaorm::Id::Int(1), Placement::Last, "B").await;
    for moves in [false, true] {
        let start = ids(&db, spec, ordered_seaorm::Id::Int(1)).await;
        let items: Vec<Id> = start[1..start.len() - 1].to_vec();
        let ops = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for w in 0..n {
            let (db, ops, items) = (db.clone(), Arc::clone(&ops), items.clone());
            tasks.push(tokio::spawn(async move {
                let mut tally = Tally::default();
                let mut x = 0x9E37_79B9_7F4A_7C15_u64 ^ (w as u64 + 1);
                let o = OrderedTable::new(spec).retry(policy());
                for i in 0..m {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let t0 = Instant::now();
                    let r = if moves {
                        let item = items[(x % items.len() as u64) as usize];
                        let at = if x & 1 == 0 {
                            Placement::After(a)
                        } else {
                            Placement::Before(b)
                        };
                        o.move_to(&db, item, at.clone())
                            .await
                            .map(|r| (r, item, at))
                    } else {
                        o.insert_after(
                            &db,
                            ordered_seaorm::Id::Int(1),
                            a,
                            inserter(spec, format!("x{w}-{i}")),
                        )
                        .await
                        .map(|r| (r.outcome, r.value, Placement::After(a)))
                    };
                    tally.lat.push(t0.elapsed());
                    match r {
                        // a move to where the item already was commits nothing
                        Ok((outcome, _, _)) if outcome.unchanged => tally.outcome(&outcome),
                        Ok((outcome, item, at)) => {
                            tally.outcome(&outcome);
                            ops.lock()
                                .unwrap()
                                .push((outcome.version.unwrap(), item, at));
                        }
                        Err(e) => tally.error(&e),
                    }
                }
                tally
            }));
        }
        let started = Instant::now();
        let mut all = Tally::default();
        for t in tasks {
            all.merge(t.await.unwrap());
        }
        let label = format!("seaorm {engine} moves={moves}");
        assert!(started.elapsed() < Duration::from_secs(60), "{label}: I5");
        assert!(all.errors.is_empty(), "{label}: {:?}", all.errors);
        assert_eq!((all.commits + all.unchanged) as usize, n * m, "{label}");
        assert!(all.relabels > 0, "{label}: no relabel");
        let ops = ops.lock().unwrap().clone();
        check_versions(&db, spec, start, ops, &label).await;
        let name = if moves {
            "C2 hot-gap moves, pool of 10 (SQLite 8)"
        } else {
            "C1 hot-gap inserts, pool of 10 (SQLite 8)"
        };
        report.push(all.row(name, engine, own_level(engine)));
    }
}

/// S5 through the pool: two tasks, one expected version, exactly one wins.
async fn same_version(engine: &str, url: &str, report: &mut Vec<String>) {
    let db = connect(engine, url, "rel_s5").await;
    let spec = spec_for("rel_s5", &GAP16, RebalancePolicy::Window);
    reset(&db, &spec, &[ordered_seaorm::Id::Int(1)]).await;
    let x = add(&db, spec, ordered_seaorm::Id::Int(1), Placement::Last, "x").await;
    let a = add(&db, spec, ordered_seaorm::Id::Int(1), Placement::Last, "a").await;
    let b = add(&db, spec, ordered_seaorm::Id::Int(1), Placement::Last, "b").await;
    let mut tally = Tally::default();
    for round in 0..30 {
        // neither racer is first, so both moves write (a move to where the item
        // already is writes nothing and refuses nobody)
        OrderedTable::new(spec).move_to_start(&db, x).await.unwrap();
        let v = ids_version(&db, spec).await;
        let ts: Vec<_> = [a, b]
            .into_iter()
            .map(|item| {
                let db = db.clone();
                tokio::spawn(async move {
                    OrderedTable::new(spec)
                        .expect_version(v)
                        .move_to_start(&db, item)
                        .await
                })
            })
            .collect();
        let mut results = Vec::new();
        for t in ts {
            results.push(t.await.unwrap());
        }
        let ok = results.iter().filter(|r| r.is_ok()).count();
        let conflicts = results
            .iter()
            .filter(|r| {
                matches!(
                    r.as_ref().err().and_then(Error::refusal),
                    Some(OrderingError::VersionConflict { .. })
                )
            })
            .count();
        assert_eq!(
            (ok, conflicts),
            (1, 1),
            "{engine} round {round}: {results:?}"
        );
        assert_eq!(ids_version(&db, spec).await, v + 1);
        for r in &results {
            match r {
                Ok(o) => tally.outcome(o),
                Err(e) => tally.error(e),
            }
        }
    }
    report.push(tally.row("S5 same expected version", engine, own_level(engine)));
}

async fn ids_version(db: &DatabaseConnection, spec: Spec) -> i64 {
    let d = ordered_seaorm::dialect(db.get_database_backend()).unwrap();
    let q = |s: &str| ordered_core::adapter::sql::quote(d, s);
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            format!(
                "SELECT {} AS v FROM {} WHERE {} = 1",
                q("version"),
                q(spec.parent_table),
                q("id")
            ),
        ))
        .await
        .unwrap()
        .unwrap();
    row.try_get::<i64>("", "v")
        .or_else(|_| row.try_get::<i32>("", "v").map(i64::from))
        .unwrap()
}

/// E3 through SeaORM: the library inside the caller's `DatabaseTransaction` at
/// REPEATABLE READ after the caller's own read (a savepoint; no library retries). On
/// PostgreSQL the `40001` reaches the caller as retryable and the caller retries; every
/// insert lands directly after A.
async fn callers_txn(engine: &str, url: &str, report: &mut Vec<String>) {
    if engine == "sqlite" {
        return;
    }
    let db = connect(engine, url, "rel_e3").await;
    let spec = spec_for("rel_e3", &GAP16, RebalancePolicy::Window);
    reset(&db, &spec, &[ordered_seaorm::Id::Int(1)]).await;
    let a = add(&db, spec, ordered_seaorm::Id::Int(1), Placement::Last, "A").await;
    add(&db, spec, ordered_seaorm::Id::Int(1), Placement::Last, "B").await;
    let start = ids(&db, spec, ordered_seaorm::Id::Int(1)).await;
    let ops = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for w in 0..2 {
        let (db, ops) = (db.clone(), Arc::clone(&ops));
        tasks.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            for i in 0..100 {
                let t0 = Instant::now();
                loop {
                    let txn = db
                        .begin_with_config(
                            Some(IsolationLevel::RepeatableRead),
                            Some(AccessMode::ReadWrite),
                        )
                        .await
                        .unwrap();
                    let _ = ids(&txn, spec, ordered_seaorm::Id::Int(1)).await;
                    let r = OrderedTable::new(spec)
                        .insert_after(
                            &txn,
                            ordered_seaorm::Id::Int(1),
                            a,
                            inserter(spec, format!("w{w}-{i}")),
                        )
                        .await;
                    match r {
                        Ok(r) => {
                            txn.commit().await.unwrap();
                            tally.outcome(&r.outcome);
                            ops.lock().unwrap().push((
                                r.outcome.version.unwrap(),
                                r.value,
                                Placement::After(a),
                            ));
                            break;
                        }
                        Err(e) if e.is_retryable() => {
                            txn.rollback().await.unwrap();
                            tally.retries += 1;
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
                tally.lat.push(t0.elapsed());
            }
            tally
        }));
    }
    let mut all = Tally::default();
    for t in tasks {
        all.merge(t.await.unwrap());
    }
    let label = format!("seaorm {engine} caller's RR");
    assert_eq!(all.commits, 200, "{label}");
    if engine == "postgres" {
        assert!(all.retries > 0, "{label}: no 40001 reached the caller");
    }
    let ops = ops.lock().unwrap().clone();
    check_versions(&db, spec, start, ops, &label).await;
    report.push(all.row(
        "E3 caller's DatabaseTransaction after a plain read",
        engine,
        "REPEATABLE READ",
    ));
}

static PAUSED: AtomicBool = AtomicBool::new(false);
/// The server's id of the paused writer's connection.
static WRITER: AtomicI64 = AtomicI64::new(0);

fn pause_until_killed() {
    PAUSED.store(true, AtomicOrdering::SeqCst);
    std::thread::sleep(Duration::from_millis(2500));
}

/// C5 through SeaORM: the pooled connection of a writer paused in the middle of a
/// relabel is killed; the relabel is rolled back whole and the caller gets
/// `ConnectionLost` (retryable).
async fn killed(engine: &str, url: &str, report: &mut Vec<String>) {
    if engine == "sqlite" {
        return; // no server to kill a connection of: the Diesel suite SIGKILLs a process
    }
    let db = connect(engine, url, "rel_c5").await;
    let spec = spec_for("rel_c5", &TIGHT_WHOLE, RebalancePolicy::Whole);
    reset(&db, &spec, &[ordered_seaorm::Id::Int(1)]).await;
    let a = add(&db, spec, ordered_seaorm::Id::Int(1), Placement::Last, "A").await;
    for i in 0..30 {
        add(
            &db,
            spec,
            ordered_seaorm::Id::Int(1),
            Placement::Last,
            &format!("i{i}"),
        )
        .await;
    }
    PAUSED.store(false, AtomicOrdering::SeqCst);
    WRITER.store(0, AtomicOrdering::SeqCst);
    // the writer on a thread and runtime of its own: the pause blocks its thread
    let (engine_w, url_w) = (engine.to_owned(), url.to_owned());
    let writer = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            // one connection, so the transaction runs on the one whose id is sent
            let mut opts = sea_orm::ConnectOptions::new(url_w.clone());
            opts.max_connections(1).min_connections(1);
            let db = sea_orm::Database::connect(opts).await.unwrap();
            let own_id = if engine_w == "postgres" {
                "SELECT CAST(pg_backend_pid() AS BIGINT) AS id"
            } else {
                "SELECT CAST(CONNECTION_ID() AS SIGNED) AS id"
            };
            let row = db
                .query_one_raw(Statement::from_string(db.get_database_backend(), own_id))
                .await
                .unwrap()
                .unwrap();
            WRITER.store(
                row.try_get::<i64>("", "id").unwrap(),
                AtomicOrdering::SeqCst,
            );
            let o = OrderedTable::new(spec)
                .retry(RetryPolicy::NONE)
                .with_controls(Controls {
                    pause_in_relabel: Some(pause_until_killed),
                    ..Controls::default()
                });
            for i in 0..64 {
                let r = o
                    .insert_after(
                        &db,
                        ordered_seaorm::Id::Int(1),
                        a,
                        inserter(spec, format!("r{i}")),
                    )
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
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let snapshot = OrderedTable::new(spec).list(&db, 1).await.unwrap();
    // the paused writer's own connection, by its id: nothing else using the server
    // loses its connection
    let id = WRITER.load(AtomicOrdering::SeqCst);
    assert!(id > 0, "the writer did not send its connection id");
    if engine == "postgres" {
        exec(&db, &format!("SELECT pg_terminate_backend({id})")).await;
    } else {
        exec(&db, &format!("KILL {id}")).await;
    }
    let r: Result<ordered_seaorm::Outcome, Error> = writer.join().unwrap();
    let e = r.expect_err("the killed writer succeeded");
    assert!(
        matches!(e, Error::ConnectionLost(_)) && e.is_retryable(),
        "seaorm {engine}: the killed caller got {e:?}"
    );
    assert_eq!(
        OrderedTable::new(spec).list(&db, 1).await.unwrap(),
        snapshot,
        "seaorm {engine}: the relabel was not rolled back whole"
    );
    sound(&db, spec, ordered_seaorm::Id::Int(1)).await;
    let mut tally = Tally::default();
    tally.error(&e);
    tally.lat.push(started.elapsed());
    report.push(tally.row(
        "C5 pooled connection killed mid-relabel",
        engine,
        "READ COMMITTED (own)",
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn seaorm_reliability() {
    let mut report = Vec::new();
    for (engine, url) in engines() {
        hot_gap(engine, &url, &mut report).await;
        same_version(engine, &url, &mut report).await;
        callers_txn(engine, &url, &mut report).await;
        killed(engine, &url, &mut report).await;
    }
    let mut md = String::from(
        "| scenario (SeaORM) | engine | isolation | result | commits | typed errors | retries | relabels | p50 ms | p99 ms |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in report {
        let _ = writeln!(md, "{r}");
    }
    eprintln!("{md}");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join("ordered-reliability-seaorm.md"), md);
}
