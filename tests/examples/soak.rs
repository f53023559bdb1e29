//! The soak run: minutes of mixed writes by several writers on shared lists while their
//! connections are killed at random (PostgreSQL `pg_terminate_backend`, MariaDB `KILL`,
//! each by its own connection id), then the oracle and a report. Every write carries a
//! request key; a writer whose connection died connects again and repeats the write in
//! flight with its key, which answers with the recorded outcome or applies it. The oracle:
//! no list version claimed twice, each list's version up once per acknowledged write,
//! every acknowledged insert's row there exactly once, every list sound. `--no-keys` is
//! the control: interrupted writes repeated blindly, which the oracle must catch.
//!
//! ```sh
//! cargo run -p ordered-conformance --features mysql --example soak -- \
//!     --db postgres://postgres@127.0.0.1:5432/test --minutes 5
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use diesel::Connection;
use diesel::connection::SimpleConnection;
use ordered_core::adapter::sql;
use ordered_core::migration::{create_parent_table, create_requests_table, create_table};
use ordered_core::{Dialect, Gapped, Id, Placement, Spec};
use ordered_diesel::{OrderedConnection, OrderedTable};

#[derive(Parser)]
#[command(about = "Mixed keyed writes with connection kills, then the oracle and a report")]
struct Args {
    /// The database (postgres://... or mysql://...).
    #[arg(long)]
    db: String,
    /// How long the writers run.
    #[arg(long, default_value_t = 1.0)]
    minutes: f64,
    /// Writer threads.
    #[arg(long, default_value_t = 8)]
    writers: usize,
    /// Lists they share.
    #[arg(long, default_value_t = 6)]
    lists: i64,
    /// The control: the writers repeat an interrupted write without its key (blindly);
    /// the oracle then finds writes applied twice.
    #[arg(long)]
    no_keys: bool,
    /// Milliseconds between two connection kills.
    #[arg(long, default_value_t = 250)]
    kill_every: u64,
}

static TIGHT: Gapped = Gapped::new(64);
const SPEC: Spec = Spec::new("soak_items", "parent_id", "soak_lists")
    .with_version("version")
    .with_strategy(&TIGHT);

/// What one write ended as.
struct Done {
    list: i64,
    key: String,
    insert: bool,
    /// The outcome; `None`: an insert repeated after its first try committed
    /// (`already_applied`).
    outcome: Option<ordered_core::Outcome>,
    /// The row an insert made.
    made: Option<Id>,
    /// The refusal, if the library refused it.
    refused: Option<&'static str>,
    /// The failure of the try a kill interrupted.
    interrupted: Option<&'static str>,
    took: Duration,
}

/// One number a query returns as `o_count`.
fn scalar<C: OrderedConnection>(c: &mut C, q: &str) -> i64 {
    let stmt = ordered_core::adapter::Statement {
        sql: q.to_owned(),
        args: Vec::new(),
        returns: ordered_core::adapter::Returns::Count,
    };
    match c.run(&stmt, ordered_core::adapter::Wire::PLAIN) {
        Ok(ordered_core::adapter::Reply::Count(n)) => n,
        other => panic!("{q}: {other:?}"),
    }
}

fn run<C>(args: &Args)
where
    C: OrderedConnection + SimpleConnection + Connection + Send,
{
    let d = C::DIALECT;
    let q = |s: &str| sql::quote(d, s);
    let open = || C::establish(&args.db).unwrap();
    let mut admin = open();
    let ddl = [
        format!("DROP TABLE IF EXISTS {}", q(SPEC.table)),
        format!("DROP TABLE IF EXISTS {}", q(SPEC.parent_table)),
    ];
    for s in ddl
        .into_iter()
        .chain(create_parent_table(d, &SPEC, &[]).up)
        .chain(create_table(d, &SPEC, &[("title", "VARCHAR(64) NOT NULL")]).up)
        .chain(create_requests_table(d).up)
    {
        admin.batch_execute(&s).unwrap();
    }
    admin
        .batch_execute(&format!(
            "DELETE FROM {} WHERE {} = '{}'",
            q(ordered_core::requests::TABLE),
            q("table_name"),
            SPEC.table
        ))
        .unwrap();
    for p in 1..=args.lists {
        admin
            .batch_execute(&format!(
                "INSERT INTO {} ({}) VALUES ({p})",
                q(SPEC.parent_table),
                q("id")
            ))
            .unwrap();
    }
    let o = OrderedTable::new(SPEC);
    let insert = |c: &mut C, slot: ordered_diesel::Slot, title: &str| {
        c.batch_execute(&format!(
            "INSERT INTO {} ({}, {}, {}) VALUES ({}, '{title}', {})",
            q(SPEC.table),
            q("parent_id"),
            q("title"),
            q("position"),
            slot.parent,
            slot.position
        ))
    };
    for p in 1..=args.lists {
        for i in 0..10 {
            o.insert_last(&mut admin, p, |c, s| insert(c, s, &format!("seed-{p}-{i}")))
                .unwrap();
        }
    }
    let start: BTreeMap<i64, i64> = (1..=args.lists)
        .map(|p| (p, o.list_versioned(&mut admin, p).unwrap().version.unwrap()))
        .collect();
    let backend = match d {
        Dialect::Postgres => "SELECT CAST(pg_backend_pid() AS BIGINT) AS o_count",
        _ => "SELECT CAST(CONNECTION_ID() AS SIGNED) AS o_count",
    };
    let ids: Vec<AtomicI64> = (0..args.writers).map(|_| AtomicI64::new(0)).collect();
    let stop = AtomicBool::new(false);
    let kills = AtomicU64::new(0);
    let done: Mutex<Vec<Done>> = Mutex::new(Vec::new());
    let until = Instant::now() + Duration::from_secs_f64(args.minutes * 60.0);
    std::thread::scope(|s| {
        for w in 0..args.writers {
            let (ids, stop, done, open, o, insert) = (&ids, &stop, &done, &open, &o, &insert);
            s.spawn(move || {
                let mut conn = open();
                ids[w].store(scalar(&mut conn, backend), Ordering::SeqCst);
                let mut x = 0x9E37_79B9_7F4A_7C15_u64 ^ (w as u64 + 1);
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let list = 1 + (x % args.lists as u64) as i64;
                    let key = format!("soak-{w}-{n}");
                    n += 1;
                    let kind = (x >> 20) % 10;
                    let shown: Vec<Id> = match o.list(&mut conn, list) {
                        Ok(rows) => rows.into_iter().map(|r| r.id).collect(),
                        Err(_) => {
                            conn = open();
                            ids[w].store(scalar(&mut conn, backend), Ordering::SeqCst);
                            continue;
                        }
                    };
                    let pick =
                        |k: u64| shown.get((k % shown.len().max(1) as u64) as usize).copied();
                    let t0 = Instant::now();
                    let mut interrupted = None;
                    let mut made = None;
                    let (insert_op, result) = loop {
                        let h = if args.no_keys {
                            o.clone()
                        } else {
                            o.clone().request_key(key.clone())
                        };
                        let r = match (kind, pick(x >> 33), pick(x >> 41)) {
                            (0..=3, ..) | (_, None, _) => (
                                true,
                                h.insert_last(&mut conn, list, |c, s| insert(c, s, &key))
                                    .map(|i| Some(i.outcome)),
                            ),
                            (4..=5, Some(a), _) => (false, h.move_up(&mut conn, a).map(Some)),
                            (6..=8, Some(a), Some(b)) => (
                                false,
                                h.move_to(&mut conn, a, Placement::After(b)).map(Some),
                            ),
                            (_, Some(a), _) => (false, h.remove(&mut conn, a).map(Some)),
                        };
                        match r {
                            (i, Ok(out)) => break (i, Ok(out)),
                            (i, Err(e)) if e.refusal().is_some() => {
                                let e = e.refusal().unwrap().clone();
                                if let ordered_core::Error::AlreadyApplied { id, .. } = e {
                                    made = Some(id);
                                    break (i, Ok(None));
                                }
                                break (i, Err(e.code()));
                            }
                            (_, Err(e)) => {
                                interrupted.get_or_insert(e.code());
                                std::thread::sleep(Duration::from_millis(20));
                                if let Ok(mut c) = C::establish(&args.db) {
                                    ids[w].store(scalar(&mut c, backend), Ordering::SeqCst);
                                    conn = c;
                                }
                            }
                        }
                    };
                    let (outcome, refused) = match result {
                        Ok(o) => (o, None),
                        Err(code) => (None, Some(code)),
                    };
                    if let (true, Some(o)) = (insert_op, &outcome) {
                        made = o
                            .changes
                            .rows
                            .iter()
                            .find(|c| {
                                Some(&c.position) == o.position.as_ref()
                                    && c.parent == Id::Int(list)
                            })
                            .map(|c| c.id);
                    }
                    done.lock().unwrap().push(Done {
                        list,
                        key,
                        insert: insert_op,
                        made,
                        outcome,
                        refused,
                        interrupted,
                        took: t0.elapsed(),
                    });
                }
            });
        }
        // the killer: a writer's connection, by its id
        let mut killer = open();
        let mut k = 0_usize;
        while Instant::now() < until {
            std::thread::sleep(Duration::from_millis(args.kill_every));
            k += 1;
            let id = ids[k % args.writers].load(Ordering::SeqCst);
            if id == 0 {
                continue;
            }
            let q = match d {
                Dialect::Postgres => format!("SELECT pg_terminate_backend({id})"),
                _ => format!("KILL {id}"),
            };
            if killer.batch_execute(&q).is_ok() {
                kills.fetch_add(1, Ordering::SeqCst);
            }
            let writes = done.lock().unwrap().len();
            eprintln!(
                "{:>5.0} s: {writes} writes, {} kills",
                (Instant::now() + Duration::from_secs_f64(args.minutes * 60.0) - until)
                    .as_secs_f64(),
                kills.load(Ordering::SeqCst)
            );
        }
        stop.store(true, Ordering::SeqCst);
    });
    // the oracle
    let done = done.into_inner().unwrap();
    let mut answers: BTreeMap<&str, u64> = BTreeMap::new();
    let mut interrupted: BTreeMap<&str, u64> = BTreeMap::new();
    let (mut replayed, mut reapplied) = (0, 0);
    let mut violations = Vec::new();
    for p in 1..=args.lists {
        let mut claimed = BTreeSet::new();
        let mut writes = 0;
        for x in done.iter().filter(|x| x.list == p) {
            match &x.outcome {
                Some(o) if o.unchanged => {}
                Some(o) => {
                    writes += 1;
                    if let Some(v) = o.version
                        && !claimed.insert(v)
                    {
                        violations.push(format!("list {p}: version {v} claimed twice"));
                    }
                }
                None if x.refused.is_none() => writes += 1,
                None => {}
            }
        }
        let now = o.list_versioned(&mut admin, p).unwrap().version.unwrap();
        if now - start[&p] != writes {
            violations.push(format!(
                "list {p}: the version went up {} times for {writes} writes",
                now - start[&p]
            ));
        }
        let report = o.verify(&mut admin, p).unwrap();
        if !report.is_ok() {
            violations.push(format!("list {p}: {report:?}"));
        }
    }
    // the rows acknowledged removals deleted
    let removed: BTreeSet<Id> = done
        .iter()
        .filter_map(|x| x.outcome.as_ref())
        .flat_map(|o| o.changes.removed.iter().copied())
        .collect();
    for x in &done {
        *answers
            .entry(x.refused.unwrap_or(
                if x.outcome.as_ref().is_some_and(|o| o.replayed) || x.outcome.is_none() {
                    "ok (replayed)"
                } else {
                    "ok"
                },
            ))
            .or_default() += 1;
        if let Some(i) = x.interrupted {
            *interrupted.entry(i).or_default() += 1;
            match &x.outcome {
                Some(o) if !o.replayed => reapplied += 1,
                _ if x.refused.is_none() => replayed += 1,
                _ => {}
            }
        }
        if x.insert && x.refused.is_none() {
            let n = scalar(
                &mut admin,
                &format!(
                    "SELECT COUNT(*) AS o_count FROM {} WHERE {} = '{}'",
                    q(SPEC.table),
                    q("title"),
                    x.key
                ),
            );
            let gone = x.made.is_some_and(|id| removed.contains(&id));
            if x.made.is_none() || n != i64::from(!gone) {
                violations.push(format!(
                    "insert {} (row {:?}, removed since: {gone}): {n} rows",
                    x.key, x.made
                ));
            }
        }
    }
    let mut took: Vec<Duration> = done.iter().map(|x| x.took).collect();
    took.sort();
    let pct = |p: f64| {
        took.get(((took.len().max(1) - 1) as f64 * p) as usize)
            .copied()
            .unwrap_or_default()
    };
    println!(
        "soak on {:?}: {} minutes, {} writers on {} lists",
        d, args.minutes, args.writers, args.lists
    );
    println!("  writes: {} ({answers:?})", done.len());
    println!("  connection kills: {}", kills.load(Ordering::SeqCst));
    println!(
        "  writes a kill interrupted: {interrupted:?}; repeated with their key: {replayed} answered from the record, {reapplied} applied by the repeat"
    );
    println!(
        "  latency per write, retries included: p50 {:?}, p99 {:?}",
        pct(0.5),
        pct(0.99)
    );
    println!("  violations: {}", violations.len());
    for v in &violations {
        println!("    {v}");
    }
    if !violations.is_empty() {
        std::process::exit(1);
    }
}

fn main() {
    let args = Args::parse();
    if args.db.starts_with("postgres") {
        run::<diesel::PgConnection>(&args);
    } else if args.db.starts_with("mysql") {
        #[cfg(feature = "mysql")]
        run::<diesel::MysqlConnection>(&args);
        #[cfg(not(feature = "mysql"))]
        panic!("MySQL/MariaDB needs --features mysql");
    } else {
        panic!("--db postgres://... or mysql://... (connections are killed on a server)");
    }
}
