//! The reliability suite (docs/CONCURRENCY.md) on the real engines, at the listed
//! isolation levels: contention (C1-C6), stale requests (S1-S5), bad input against the
//! engines (B4-B7; the key functions' B1-B3 are ordered-core's fixture and property tests
//! and the fuzz target), engine behaviour (E1-E5) and retries (R1-R2).
//! Prints a report table and writes `target/ordered-reliability.md`.
//!
//! Two oracles: the ops log ([`oracle`]), replayed against an in-memory list, and the
//! parent version every write bumps under the parent's lock (C1 checks both agree).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

mod bad;
#[path = "../common/mod.rs"]
mod common;
mod contention;
mod engine;
mod oracle;
mod retries;
mod stale;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::*;
use ordered_diesel::{Dialect, Error, Id};

static REPORT: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Whether scenario `id` runs: all of them, or those named in `ORDERED_SCENARIOS`
/// (comma-separated, e.g. `c3,e4`), for working on one.
pub fn selected(id: &str) -> bool {
    std::env::var("ORDERED_SCENARIOS").map_or(true, |v| {
        v.split(',').any(|s| s.trim().eq_ignore_ascii_case(id))
    })
}

/// Workers x operations per worker.
pub fn sizes<C: TestConn>() -> (usize, usize) {
    if C::DIALECT == Dialect::Sqlite {
        (8, 100)
    } else {
        (16, 200)
    }
}

/// The isolation levels a scenario runs at. The library's own transactions run READ
/// COMMITTED on PostgreSQL and MariaDB; the stronger levels (and MariaDB's
/// `innodb_snapshot_isolation`) are exercised through the caller's transactions, which
/// the library joins with a savepoint and which retry themselves.
pub fn isolation_levels<C: TestConn>() -> Vec<&'static str> {
    match C::DIALECT {
        Dialect::Postgres => vec![
            "READ COMMITTED",
            "REPEATABLE READ, caller's transaction",
            "SERIALIZABLE, caller's transaction",
        ],
        Dialect::Mysql => vec![
            "READ COMMITTED",
            "REPEATABLE READ, caller's transaction",
            "REPEATABLE READ, caller's transaction, snapshot isolation",
        ],
        Dialect::Sqlite => vec!["WAL"],
    }
}

pub fn set_isolation<C: TestConn>(c: &mut C, level: &str) {
    if level == "default" {
        return;
    }
    match C::DIALECT {
        Dialect::Postgres => c.exec(&format!(
            "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL {}",
            level.split(',').next().unwrap_or(level)
        )),
        Dialect::Mysql => {
            c.exec(&format!(
                "SET SESSION TRANSACTION ISOLATION LEVEL {}",
                level.split(',').next().unwrap_or(level)
            ));
            if level.contains("snapshot") {
                c.exec("SET SESSION innodb_snapshot_isolation = ON");
            }
        }
        Dialect::Sqlite => {}
    }
}

pub fn slug(level: &str) -> String {
    level
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect::<String>()
        .to_lowercase()
        .chars()
        .take(24)
        .collect()
}

/// I5: no lock left behind: a fresh writer gets the parent's lock at once.
pub fn lock_is_free<C: TestConn>(t: &Tables, parent: Id) {
    let mut c = C::open(&t.db);
    let q = |s: &str| ordered_core::adapter::sql::quote(C::DIALECT, s);
    let started = Instant::now();
    match C::DIALECT {
        Dialect::Sqlite => {
            c.exec("PRAGMA busy_timeout = 1000");
            c.exec("BEGIN IMMEDIATE");
        }
        _ => {
            c.exec("BEGIN");
            c.exec(&format!(
                "SELECT {} FROM {} WHERE {} = {parent} FOR UPDATE NOWAIT",
                q("id"),
                q(t.parents),
                q("id")
            ));
        }
    }
    c.exec("ROLLBACK");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{}: the parent lock was still held",
        C::name()
    );
}

/// What one scenario run counted.
#[derive(Default, Debug)]
pub struct Tally {
    pub commits: u64,
    pub errors: BTreeMap<String, u64>,
    pub retries: u64,
    pub relabels: u64,
    pub longest_key: usize,
    pub lat: Vec<Duration>,
    /// How long the scenario's workers ran, wall clock (the I5 figure).
    pub wall: Option<Duration>,
}

impl Tally {
    pub fn merge(&mut self, o: Tally) {
        self.commits += o.commits;
        self.retries += o.retries;
        self.relabels += o.relabels;
        self.longest_key = self.longest_key.max(o.longest_key);
        self.lat.extend(o.lat);
        self.wall = self.wall.max(o.wall);
        for (k, v) in o.errors {
            *self.errors.entry(k).or_default() += v;
        }
    }
    pub fn error(&mut self, e: &Error) {
        *self.errors.entry(kind(e)).or_default() += 1;
    }
    pub fn outcome(&mut self, o: &ordered_diesel::Outcome) {
        // a move to where the item already was: nothing committed
        if o.unchanged {
            return;
        }
        self.commits += 1;
        self.retries += u64::from(o.attempts.saturating_sub(1));
        self.relabels += u64::from(o.relabelled > 0);
        if let Some(ordered_diesel::Position::Key(k)) = &o.position {
            self.longest_key = self.longest_key.max(k.len());
        }
    }
    fn pct(&self, p: f64) -> String {
        if self.lat.is_empty() {
            return "-".into();
        }
        let mut v = self.lat.clone();
        v.sort();
        let d = v[((v.len() - 1) as f64 * p).round() as usize];
        format!("{:.1}", d.as_secs_f64() * 1000.0)
    }
    /// Adds the row to the report (called once the scenario's asserts passed).
    pub fn report(&self, scenario: &str, engine: &str, level: &str) {
        let errors = if self.errors.is_empty() {
            "-".to_owned()
        } else {
            self.errors
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let line = format!(
            "| {scenario} | {engine} | {level} | pass | {} | {errors} | {} | {} | {} | {} | {} | {} |",
            self.commits,
            self.retries,
            self.relabels,
            if self.longest_key == 0 {
                "-".to_owned()
            } else {
                self.longest_key.to_string()
            },
            self.pct(0.5),
            self.pct(0.99),
            self.wall
                .map_or_else(|| "-".to_owned(), |w| format!("{:.1}", w.as_secs_f64()))
        );
        REPORT.lock().unwrap().push(line);
    }
}

/// Runs `work(w, tally)` on `n` threads at once and merges their tallies.
pub fn threads(n: usize, work: impl Fn(usize, &mut Tally) + Sync) -> Tally {
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|w| {
                let work = &work;
                s.spawn(move || {
                    let mut tally = Tally::default();
                    work(w, &mut tally);
                    tally
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all = Tally::default();
    for t in tallies {
        all.merge(t);
    }
    all
}

/// A short name for an error kind, for the report.
pub fn kind(e: &Error) -> String {
    match e {
        Error::Ordering(o) => format!("{o:?}")
            .split([' ', '{', '('])
            .next()
            .unwrap_or("ordering")
            .to_owned(),
        Error::RetriesExhausted { last, .. } => {
            if is_deadlock(&last.to_string()) {
                "deadlock".into()
            } else {
                "RetriesExhausted".into()
            }
        }
        Error::Database(d) => {
            let m = d.to_string();
            if is_deadlock(&m) {
                "deadlock".into()
            } else if e.is_retryable() {
                "retryable".into()
            } else {
                format!("database: {m}")
            }
        }
        Error::CommitUnknown(_) => "CommitUnknown".into(),
        Error::ConnectionLost(_) => "ConnectionLost".into(),
        _ => "other".into(),
    }
}

pub fn is_deadlock(m: &str) -> bool {
    m.contains("deadlock") || m.contains("Deadlock")
}

/// Runs `f` in the caller's own transaction, retrying the transaction (as a caller
/// must) while the library reports a retryable error; returns the result and the
/// retries.
pub fn in_callers_txn<C: TestConn, T>(
    conn: &mut C,
    mut f: impl FnMut(&mut C) -> Result<T, Error>,
) -> (Result<T, Error>, u64) {
    let mut retries = 0;
    loop {
        let r = diesel::Connection::transaction(conn, |c| f(c));
        match r {
            Err(e) if e.is_retryable() && retries < 1000 => {
                retries += 1;
                let backoff = ordered_diesel::RetryPolicy {
                    base: Duration::from_millis(1),
                    cap: Duration::from_millis(50),
                    ..Default::default()
                };
                std::thread::sleep(backoff.backoff(u32::try_from(retries).unwrap_or(u32::MAX)));
            }
            other => return (other, retries),
        }
    }
}

/// The whole suite in order, then the report table (stderr and
/// `target/ordered-reliability.md`).
#[test]
fn reliability_suite() {
    let started = Instant::now();
    contention::run();
    stale::run();
    bad::run();
    engine::run();
    retries::run();
    let rows = REPORT.lock().unwrap().clone();
    let mut md = String::from(
        "| scenario | engine | isolation | result | commits | typed errors | retries | relabels | longest key | p50 ms | p99 ms | workers s |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let _ = writeln!(md, "{r}");
    }
    let _ = writeln!(
        md,
        "\nWhole suite: {:.0} s.",
        started.elapsed().as_secs_f64()
    );
    eprintln!("{md}");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    let _ = std::fs::create_dir_all(&dir);
    // `ORDERED_REPORT=ordered-reliability-galera.md`: another run's report beside it
    let name = std::env::var("ORDERED_REPORT").unwrap_or_else(|_| "ordered-reliability.md".into());
    let _ = std::fs::write(dir.join(name), md);
}

/// C5 on SQLite: the child process that the suite SIGKILLs in the middle of a relabel.
/// It does nothing unless the suite started it.
#[test]
#[ignore = "a helper process of reliability_suite (C5 on SQLite)"]
fn c5_sqlite_child() {
    contention::c5_child();
}
