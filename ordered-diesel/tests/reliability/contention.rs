//! C1-C6 and S5: many writers on one gap, relabels raced and killed, opposite
//! cross-parent moves, deletes racing moves, two clients with one expected version.

use std::io::{BufRead, BufReader};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering as AtomicOrdering};
use std::time::{Duration, Instant};

use ordered_diesel::__private::Controls;
use ordered_diesel::{
    Dialect, Error, Gapped, Id, OrderingError, Placement, PositionStrategy, RebalancePolicy,
    RetryPolicy,
};

use crate::common::*;
use crate::each_engine;
use crate::oracle::{Model, check_replay, olog, reset_log};
use crate::{
    Tally, in_callers_txn, isolation_levels, kind, lock_is_free, set_isolation, sizes, slug,
};

static GAP16: Gapped = Gapped::new(1 << 16);

pub fn run() {
    if crate::selected("c1") {
        each_engine!(c1, false);
    }
    if crate::selected("c1") {
        each_engine!(c1, true);
    }
    if crate::selected("c2") {
        each_engine!(c2);
    }
    if crate::selected("c3") {
        each_engine!(c3, false);
    }
    if crate::selected("c3") {
        each_engine!(c3, true);
    }
    if crate::selected("c4") {
        each_engine!(c4, false);
    }
    if crate::selected("c4") {
        each_engine!(c4, true);
    }
    if crate::selected("c5") {
        each_engine!(c5);
    }
    if crate::selected("c6") {
        each_engine!(c6);
    }
    if crate::selected("s5") {
        each_engine!(s5);
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

/// A small deterministic generator (the runs are reproducible).
pub struct Rng(u64);
impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Runs `workers` threads, each with its own connection at `level`, and merges their
/// tallies; I5: all done within 60 s.
fn workers<C: TestConn>(
    t: &Tables,
    level: &str,
    n: usize,
    work: impl Fn(usize, &mut C, &mut Tally) + Sync,
) -> Tally {
    let started = Instant::now();
    let mut all = crate::threads(n, |w, tally| {
        let mut conn = C::open(&t.db);
        set_isolation(&mut conn, level);
        work(w, &mut conn, tally);
    });
    all.wall = Some(started.elapsed());
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{} {level}: workers took {:?} (I5)",
        C::name(),
        started.elapsed()
    );
    all
}

/// One library call, in the caller's transaction (after a plain read that fixes its
/// snapshot) when `level` says so, else in the library's own with retries.
///
/// The caller's read is the parent's version, one row, as a handler that loads the board
/// before it moves a card. (It read the whole list once, which costs the caller, not the
/// library, more with every insert: 3,200 rows by the end, on every retry.)
fn call<C: TestConn, T>(
    conn: &mut C,
    t: &Tables,
    level: &str,
    tally: &mut Tally,
    f: impl Fn(&mut C, RetryPolicy) -> Result<T, Error>,
) -> Result<T, Error> {
    let t0 = Instant::now();
    let r = if level.contains("caller") {
        let (r, retries) = in_callers_txn(conn, |c| {
            let _ = version(c, t, ordered_diesel::Id::Int(1));
            f(c, RetryPolicy::NONE)
        });
        tally.retries += retries;
        r
    } else {
        f(conn, policy())
    };
    tally.lat.push(t0.elapsed());
    r
}

/// C1: N writers x M inserts "after A" into one parent (gapped, at every isolation
/// level; fractional keys at the default level, for the key-length column).
fn c1<C: TestConn>(keys: bool) {
    let (n, m) = sizes::<C>();
    let levels = if keys {
        vec![isolation_levels::<C>()[0]]
    } else {
        isolation_levels::<C>()
    };
    let strategy: &'static dyn PositionStrategy = if keys { &KEYS } else { &GAP16 };
    for level in levels {
        let test = format!("c1{}_{}", if keys { "k" } else { "" }, slug(level));
        let (mut c, t) = setup::<C>(
            &test,
            strategy,
            RebalancePolicy::Window,
            &[ordered_diesel::Id::Int(1)],
        );
        reset_log(&mut c);
        let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "A");
        let b = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "B");
        let start = Model::read(&mut c, &t, &[ordered_diesel::Id::Int(1)]);
        let committed = std::sync::Mutex::new(Vec::new());
        let all = workers::<C>(&t, level, n, |_, conn, tally| {
            for i in 0..m {
                let r = call(conn, &t, level, tally, |c, p| {
                    olog(&t)
                        .retry(p)
                        .insert_after(c, 1, a, |c, s| c.insert_item(&t, &format!("x{i}"), &s))
                });
                match r {
                    Ok(r) => {
                        tally.outcome(&r.outcome);
                        committed
                            .lock()
                            .unwrap()
                            .push((r.outcome.version.unwrap(), r.value));
                    }
                    Err(e) => tally.error(&e),
                }
            }
        });
        lock_is_free::<C>(&t, ordered_diesel::Id::Int(1));
        let label = format!("C1 {} {level}", C::name());
        // I4: no failure is allowed here
        assert!(all.errors.is_empty(), "{label}: {:?}", all.errors);
        assert_eq!(all.commits as usize, n * m, "{label}");
        // I1-I3 by the ops log
        let log = check_replay(&mut c, &t, &start, &label);
        assert_eq!(log.len(), n * m, "{label}: a failed op left a log entry");
        // and by the versions: each write's version is its place in the serial order
        let mut committed = committed.into_inner().unwrap();
        committed.sort_unstable();
        assert!(
            committed.windows(2).all(|w| w[0].0 < w[1].0),
            "{label}: two writes share a version"
        );
        let mut replay = vec![a, b];
        for (_, id) in &committed {
            replay.insert(1, *id);
        }
        assert_eq!(
            ids(&mut c, &t, ordered_diesel::Id::Int(1)),
            replay,
            "{label}: versions disagree"
        );
        assert!(all.relabels > 0, "{label}: the hot gap never relabelled");
        if keys {
            assert!(all.longest_key <= 64, "{label}: key over the cap");
        }
        if C::DIALECT == Dialect::Postgres && level != "READ COMMITTED" {
            assert!(all.retries > 0, "{label}: expected serialization retries");
        }
        if level.contains("snapshot") {
            assert!(all.retries > 0, "{label}: expected 1020 retries");
        }
        let name = if keys {
            "C1 hot-gap inserts, fractional keys"
        } else {
            "C1 hot-gap inserts"
        };
        all.report(name, C::name(), level);
        drop_tables(&mut c, &t);
    }
}

/// C2: N x M moves of random items to "after A" or "before B".
fn c2<C: TestConn>(_: ()) {
    let (n, m) = sizes::<C>();
    for level in isolation_levels::<C>() {
        let test = format!("c2_{}", slug(level));
        let (mut c, t) = setup::<C>(
            &test,
            &GAP16,
            RebalancePolicy::Window,
            &[ordered_diesel::Id::Int(1)],
        );
        reset_log(&mut c);
        let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "A");
        let items: Vec<Id> = (0..40)
            .map(|i| {
                add(
                    &mut c,
                    &t,
                    ordered_diesel::Id::Int(1),
                    Placement::Last,
                    &format!("i{i}"),
                )
            })
            .collect();
        let b = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "B");
        let start = Model::read(&mut c, &t, &[ordered_diesel::Id::Int(1)]);
        let all = workers::<C>(&t, level, n, |w, conn, tally| {
            let mut rng = crate::contention::Rng::new(w as u64 + 1);
            for _ in 0..m {
                let item = items[rng.below(items.len())];
                let after = rng.below(2) == 0;
                let r = call(conn, &t, level, tally, |c, p| {
                    let o = olog(&t).retry(p);
                    if after {
                        o.move_after(c, item, a)
                    } else {
                        o.move_before(c, item, b)
                    }
                });
                match r {
                    Ok(o) => tally.outcome(&o),
                    Err(e) => tally.error(&e),
                }
            }
        });
        lock_is_free::<C>(&t, ordered_diesel::Id::Int(1));
        let label = format!("C2 {} {level}", C::name());
        assert!(
            all.errors
                .keys()
                .all(|k| k == "StaleNeighbours" || k == "NotFound"),
            "{label}: {:?}",
            all.errors
        );
        let log = check_replay(&mut c, &t, &start, &label);
        assert_eq!(log.len() as u64, all.commits, "{label}");
        assert!(all.relabels > 0, "{label}: the hot gap never relabelled");
        all.report("C2 hot-gap moves", C::name(), level);
        drop_tables(&mut c, &t);
    }
}

static PAUSED: AtomicBool = AtomicBool::new(false);
static BACKEND: AtomicI64 = AtomicI64::new(0);
const BARRIER: Duration = Duration::from_millis(600);

fn pause_at_barrier() {
    PAUSED.store(true, AtomicOrdering::SeqCst);
    std::thread::sleep(BARRIER);
}

fn pause_until_killed() {
    PAUSED.store(true, AtomicOrdering::SeqCst);
    std::thread::sleep(Duration::from_millis(2500));
}

fn wait_paused() {
    let started = Instant::now();
    while !PAUSED.load(AtomicOrdering::SeqCst) {
        assert!(started.elapsed() < Duration::from_secs(30), "never paused");
        std::thread::sleep(Duration::from_millis(2));
    }
}

static TIGHT_WHOLE: Gapped = Gapped::new(4);

/// Inserts after `a` until an insert relabels (and so runs the pause control); returns
/// the result of that insert.
fn insert_until_relabel<C: TestConn>(
    conn: &mut C,
    t: &Tables,
    a: Id,
    controls: Controls,
) -> Result<ordered_diesel::Outcome, Error> {
    for i in 0..64 {
        let r = olog(t)
            .with_controls(controls)
            .retry(RetryPolicy::NONE)
            .insert_after(conn, 1, a, |c, s| c.insert_item(t, &format!("r{i}"), &s))?;
        if r.outcome.relabelled > 0 {
            return Ok(r.outcome);
        }
    }
    panic!("{}: no relabel in 64 inserts", C::name());
}

/// C3: a relabel paused at a barrier while a second writer inserts between X and Y.
/// The second writer waits for the first to commit, then places its item between X
/// and Y. The negative control (PostgreSQL REPEATABLE READ, no version bump) lets the
/// second writer plan from its stale snapshot, and the oracle must catch it.
fn c3<C: TestConn>(control: bool) {
    let levels = if control {
        if C::DIALECT != Dialect::Postgres {
            return;
        }
        vec!["REPEATABLE READ, caller's transaction"]
    } else {
        isolation_levels::<C>()
            .into_iter()
            .filter(|l| !l.contains("snapshot"))
            .collect()
    };
    for level in levels {
        let test = format!("c3{}_{}", if control { "n" } else { "" }, slug(level));
        let (mut c, t) = setup::<C>(
            &test,
            &TIGHT_WHOLE,
            RebalancePolicy::Whole,
            &[ordered_diesel::Id::Int(1)],
        );
        reset_log(&mut c);
        let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "A");
        let x = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "X");
        let y = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "Y");
        add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "Z");
        let start = Model::read(&mut c, &t, &[ordered_diesel::Id::Int(1)]);
        let controls = Controls {
            skip_version_bump: control,
            pause_in_relabel: Some(pause_at_barrier),
            ..Controls::default()
        };
        PAUSED.store(false, AtomicOrdering::SeqCst);
        let (r1, (r2, waited)) = std::thread::scope(|s| {
            let t1 = s.spawn(|| {
                let mut conn = C::open(&t.db);
                set_isolation(&mut conn, level);
                insert_until_relabel(&mut conn, &t, a, controls)
            });
            let t2 = s.spawn(|| {
                let mut conn = C::open(&t.db);
                set_isolation(&mut conn, level);
                wait_paused();
                let t0 = Instant::now();
                let o = olog(&t).with_controls(Controls {
                    skip_version_bump: control,
                    ..Controls::default()
                });
                let f = |c: &mut C| {
                    o.insert_between(c, 1, Some(x), Some(y), |c, s| c.insert_item(&t, "T2", &s))
                };
                // in the caller's transaction (REPEATABLE READ, SERIALIZABLE), the
                // caller retries; the library's own retries otherwise
                let (r, retries) = if level.contains("caller") {
                    in_callers_txn(&mut conn, f)
                } else {
                    let r = f(&mut conn);
                    let retries = r.as_ref().map_or(0, |r| r.outcome.attempts - 1);
                    (r, u64::from(retries))
                };
                (r.map(|r| (r, retries)), t0.elapsed())
            });
            (t1.join().unwrap(), t2.join().unwrap())
        });
        let label = format!("C3 {} {level}", C::name());
        let o1 = r1.unwrap_or_else(|e| panic!("{label}: T1 {e}"));
        assert!(o1.relabelled > 0, "{label}");
        if control {
            // the stale snapshot must show: a misorder the oracle sees, or a refusal
            let log = crate::oracle::read_log(&mut c);
            let want = start.replay(&log);
            let got = Model::read(&mut c, &t, &[ordered_diesel::Id::Int(1)]);
            assert!(
                r2.is_err() || got != want,
                "{label}: the negative control placed T2 correctly, so the oracle has no power"
            );
            let mut tally = Tally {
                commits: 1 + u64::from(r2.is_ok()),
                relabels: 1,
                ..Tally::default()
            };
            if let Err(e) = &r2 {
                tally.error(e);
            } else {
                tally
                    .errors
                    .insert("misorder detected by the oracle".into(), 1);
            }
            tally.lat.push(waited);
            tally.report("C3 negative control (no version bump)", C::name(), level);
        } else {
            let (r2, retries) = r2.unwrap_or_else(|e| panic!("{label}: T2 {e}"));
            assert!(
                waited >= BARRIER * 2 / 3,
                "{label}: T2 did not wait for T1 ({waited:?})"
            );
            let order = ids(&mut c, &t, ordered_diesel::Id::Int(1));
            let px = order.iter().position(|&i| i == x).unwrap();
            assert_eq!(
                &order[px..px + 3],
                &[x, r2.value, y],
                "{label}: T2 is not between X and Y"
            );
            check_replay(&mut c, &t, &start, &label);
            if C::DIALECT == Dialect::Postgres && level != "READ COMMITTED" {
                assert!(retries > 0, "{label}: expected a 40001 retry");
            }
            let mut tally = Tally::default();
            tally.outcome(&o1);
            tally.outcome(&r2.outcome);
            tally.retries += retries;
            tally.lat.push(waited);
            tally.report("C3 relabel racing an insert", C::name(), level);
        }
        lock_is_free::<C>(&t, ordered_diesel::Id::Int(1));
        drop_tables(&mut c, &t);
    }
}

/// C4: opposite cross-collection moves and a 3-cycle; sorted locks give no deadlock,
/// request-order locks (the negative control) do.
fn c4<C: TestConn>(control: bool) {
    if C::DIALECT == Dialect::Sqlite {
        return; // one writer at a time: no lock order to get wrong
    }
    let test = if control { "c4_control" } else { "c4" };
    let (mut c, t) = setup::<C>(
        test,
        &GAPPED,
        RebalancePolicy::Window,
        &[
            ordered_diesel::Id::Int(1),
            ordered_diesel::Id::Int(2),
            ordered_diesel::Id::Int(3),
        ],
    );
    reset_log(&mut c);
    let pairs = 8;
    let moves = if control { 20 } else { 200 };
    let mut items = Vec::new();
    for w in 0..pairs * 2 + 1 {
        let parent = if w % 2 == 0 { 1 } else { 2 };
        items.push((
            add(
                &mut c,
                &t,
                ordered_diesel::Id::Int(parent),
                Placement::Last,
                &format!("w{w}"),
            ),
            parent,
        ));
    }
    let start = Model::read(
        &mut c,
        &t,
        &[
            ordered_diesel::Id::Int(1),
            ordered_diesel::Id::Int(2),
            ordered_diesel::Id::Int(3),
        ],
    );
    let controls = Controls {
        lock_in_request_order: control,
        ..Default::default()
    };
    let all = workers::<C>(&t, "READ COMMITTED", items.len(), |w, conn, tally| {
        match C::DIALECT {
            Dialect::Mysql => conn.exec("SET SESSION innodb_lock_wait_timeout = 5"),
            // detect the control's deadlocks quickly (the default waits 1 s)
            Dialect::Postgres => conn.exec("SET deadlock_timeout = '50ms'"),
            Dialect::Sqlite => {}
        }
        let (item, first) = items[w];
        let o = olog(&t).retry(RetryPolicy::NONE).with_controls(controls);
        let cycle: Vec<Id> = if w == pairs * 2 {
            vec![
                ordered_diesel::Id::Int(2),
                ordered_diesel::Id::Int(3),
                ordered_diesel::Id::Int(1),
            ]
        } else if first == 1 {
            vec![ordered_diesel::Id::Int(2), ordered_diesel::Id::Int(1)]
        } else {
            vec![ordered_diesel::Id::Int(1), ordered_diesel::Id::Int(2)]
        };
        for i in 0..moves {
            let dest = cycle[i % cycle.len()];
            let t0 = Instant::now();
            match o.move_to_parent(conn, item, dest, Placement::First) {
                Ok(o) => tally.outcome(&o),
                Err(e) => tally.error(&e),
            }
            tally.lat.push(t0.elapsed());
        }
    });
    let deadlocks = all.errors.get("deadlock").copied().unwrap_or(0);
    let label = format!("C4 {} control={control}", C::name());
    check_replay(&mut c, &t, &start, &label);
    for p in 1..=3 {
        lock_is_free::<C>(&t, ordered_diesel::Id::Int(p));
    }
    if control {
        assert!(
            deadlocks > 0,
            "{label}: the negative control produced no deadlock, so the test has no power"
        );
        all.report(
            "C4 negative control (request-order locks)",
            C::name(),
            "READ COMMITTED",
        );
    } else {
        assert_eq!(
            deadlocks, 0,
            "{label}: sorted locks deadlocked: {:?}",
            all.errors
        );
        // without retries, the only allowed refusal is an item that moved between the
        // unlocked lookup and the lock
        assert!(
            all.errors.keys().all(|k| k == "ParentChanged"),
            "{label}: {:?}",
            all.errors
        );
        all.report(
            "C4 opposite cross-parent moves",
            C::name(),
            "READ COMMITTED",
        );
    }
    drop_tables(&mut c, &t);
}

/// C5: the connection of a writer paused in the middle of a relabel is killed
/// (PostgreSQL `pg_terminate_backend`, MariaDB `KILL`, SQLite: SIGKILL of a child
/// process). The relabel must be rolled back whole.
fn c5<C: TestConn>(_: ()) {
    let (mut c, t) = setup::<C>(
        "c5",
        &TIGHT_WHOLE,
        RebalancePolicy::Whole,
        &[ordered_diesel::Id::Int(1)],
    );
    reset_log(&mut c);
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
    let label = format!("C5 {}", C::name());
    let mut tally = Tally::default();
    let t0 = Instant::now();
    let snapshot = if C::DIALECT == Dialect::Sqlite {
        let path = std::env::current_exe().unwrap();
        let mut child = std::process::Command::new(path)
            .args([
                "c5_sqlite_child",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("ORDERED_C5_DB", &t.db)
            .env("ORDERED_C5_ANCHOR", a.to_string())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let mut snapshot = None;
        for line in out.lines() {
            let line = line.unwrap();
            if line.trim_end().ends_with("PAUSED") {
                // the committed state, read while the child holds the write lock
                snapshot = Some(ord(&t).list(&mut c, 1).unwrap());
                child.kill().unwrap(); // SIGKILL
                break;
            }
        }
        let status = child.wait().unwrap();
        assert!(!status.success(), "{label}: the child was not killed");
        let integrity = count(
            &mut c,
            "SELECT CASE WHEN (SELECT integrity_check FROM pragma_integrity_check) = 'ok' THEN 1 ELSE 0 END AS o_count",
        );
        assert_eq!(integrity, 1, "{label}: integrity_check");
        tally.errors.insert("killed by SIGKILL".into(), 1);
        snapshot.unwrap_or_else(|| panic!("{label}: the child never paused"))
    } else {
        PAUSED.store(false, AtomicOrdering::SeqCst);
        let controls = Controls {
            pause_in_relabel: Some(pause_until_killed),
            ..Controls::default()
        };
        let (r, snapshot) = std::thread::scope(|s| {
            let h = s.spawn(|| {
                let mut conn = C::open(&t.db);
                let pid = match C::DIALECT {
                    Dialect::Postgres => "SELECT CAST(pg_backend_pid() AS BIGINT) AS o_count",
                    _ => "SELECT CAST(CONNECTION_ID() AS SIGNED) AS o_count",
                };
                BACKEND.store(count(&mut conn, pid), AtomicOrdering::SeqCst);
                insert_until_relabel(&mut conn, &t, a, controls)
            });
            wait_paused();
            let snapshot = ord(&t).list(&mut c, 1).unwrap();
            let pid = BACKEND.load(AtomicOrdering::SeqCst);
            match C::DIALECT {
                Dialect::Postgres => c.exec(&format!("SELECT pg_terminate_backend({pid})")),
                _ => c.exec(&format!("KILL {pid}")),
            }
            (h.join().unwrap(), snapshot)
        });
        let e = r.expect_err("the killed writer succeeded");
        assert!(
            matches!(e, Error::ConnectionLost(_)) && e.is_retryable(),
            "{label}: the killed caller got {e:?}"
        );
        tally.error(&e);
        snapshot
    };
    tally.lat.push(t0.elapsed());
    // the relabel left nothing: positions exactly as before, no parked values
    assert_eq!(
        ord(&t).list(&mut c, 1).unwrap(),
        snapshot,
        "{label}: the relabel was not rolled back whole"
    );
    let q = |s: &str| ordered_core::adapter::sql::quote(C::DIALECT, s);
    let parked = count(
        &mut c,
        &format!(
            "SELECT COUNT(*) AS o_count FROM {} WHERE {} < 1",
            q(t.items),
            q("position")
        ),
    );
    assert_eq!(parked, 0, "{label}: temporary-range values left behind");
    sound(&mut c, &t, ordered_diesel::Id::Int(1));
    lock_is_free::<C>(&t, ordered_diesel::Id::Int(1));
    tally.commits = 0;
    tally.relabels = 0;
    tally.report("C5 connection killed mid-relabel", C::name(), "default");
    drop_tables(&mut c, &t);
}

/// The child process of C5 on SQLite: inserts until a relabel, says PAUSED at the
/// barrier, and sleeps until the suite kills it.
pub fn c5_child() {
    let (Ok(db), Ok(anchor)) = (
        std::env::var("ORDERED_C5_DB"),
        std::env::var("ORDERED_C5_ANCHOR"),
    ) else {
        return;
    };
    fn say_paused_and_hang() {
        use std::io::Write as _;
        println!("PAUSED");
        let _ = std::io::stdout().flush();
        std::thread::sleep(Duration::from_secs(120));
    }
    let t = tables("c5", &TIGHT_WHOLE, RebalancePolicy::Whole, db.clone());
    let mut conn = diesel::SqliteConnection::open(&db);
    let controls = Controls {
        pause_in_relabel: Some(say_paused_and_hang),
        ..Controls::default()
    };
    let r = insert_until_relabel(&mut conn, &t, anchor.parse().unwrap(), controls);
    panic!("the child was not killed: {r:?}");
}

/// C6: deletes racing moves that use the deleted items as subject or anchor.
fn c6<C: TestConn>(_: ()) {
    let (n, m) = sizes::<C>();
    let (mut c, t) = setup::<C>(
        "c6",
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1)],
    );
    reset_log(&mut c);
    let items: Vec<Id> = (0..200)
        .map(|i| {
            add(
                &mut c,
                &t,
                ordered_diesel::Id::Int(1),
                Placement::Last,
                &format!("i{i}"),
            )
        })
        .collect();
    let start = Model::read(&mut c, &t, &[ordered_diesel::Id::Int(1)]);
    let deleters = n / 4;
    let not_found = std::sync::Mutex::new(Vec::new());
    let all = workers::<C>(&t, "default", n, |w, conn, tally| {
        let mut rng = Rng::new(w as u64 + 100);
        let ops = if w < deleters { m / 4 } else { m };
        for _ in 0..ops {
            let item = items[rng.below(items.len())];
            let t0 = Instant::now();
            let r = if w < deleters {
                olog(&t).retry(policy()).remove(conn, item)
            } else {
                let mut anchor = items[rng.below(items.len())];
                while anchor == item {
                    anchor = items[rng.below(items.len())];
                }
                if rng.below(2) == 0 {
                    olog(&t).retry(policy()).move_after(conn, item, anchor)
                } else {
                    olog(&t).retry(policy()).move_before(conn, item, anchor)
                }
            };
            tally.lat.push(t0.elapsed());
            match r {
                Ok(o) => tally.outcome(&o),
                Err(e) => {
                    if let Some(OrderingError::NotFound { id }) = e.refusal() {
                        not_found.lock().unwrap().push(*id);
                    }
                    tally.error(&e);
                }
            }
        }
    });
    lock_is_free::<C>(&t, ordered_diesel::Id::Int(1));
    let label = format!("C6 {}", C::name());
    assert!(
        all.errors.keys().all(|k| k == "NotFound"),
        "{label}: {:?}",
        all.errors
    );
    let log = check_replay(&mut c, &t, &start, &label);
    assert_eq!(
        log.len() as u64,
        all.commits,
        "{label}: a failed op left a log entry"
    );
    // every refusal names an item that a committed delete removed
    let deleted: Vec<Id> = log
        .iter()
        .filter_map(|e| e.strip_prefix("remove "))
        .map(|e| e.split(' ').next().unwrap().parse().unwrap())
        .collect();
    for id in not_found.into_inner().unwrap() {
        assert!(
            deleted.contains(&id),
            "{label}: NotFound({id}) but it was never deleted"
        );
    }
    assert!(
        !deleted.is_empty() && all.errors.contains_key("NotFound"),
        "{label}: no race happened"
    );
    all.report("C6 deletes racing moves", C::name(), "default");
    drop_tables(&mut c, &t);
}

/// S5: two clients with the same expected version at once: exactly one succeeds, the
/// other is told the version moved on (under PostgreSQL REPEATABLE READ after a retry).
fn s5<C: TestConn>(_: ()) {
    let levels: Vec<&str> = match C::DIALECT {
        Dialect::Postgres => vec!["READ COMMITTED", "REPEATABLE READ, caller's transaction"],
        Dialect::Mysql => vec!["READ COMMITTED", "REPEATABLE READ, caller's transaction"],
        Dialect::Sqlite => vec!["WAL"],
    };
    for level in levels {
        let test = format!("s5_{}", slug(level));
        let (mut c, t) = setup::<C>(
            &test,
            &GAPPED,
            RebalancePolicy::Window,
            &[ordered_diesel::Id::Int(1)],
        );
        let x = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "x");
        let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "a");
        let b = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "b");
        let mut tally = Tally::default();
        for round in 0..30 {
            // neither racer is first, so both moves write (a move to where the item
            // already is writes nothing and refuses nobody)
            ord(&t).move_to_start(&mut c, x).unwrap();
            let v = version(&mut c, &t, ordered_diesel::Id::Int(1));
            let results: Vec<(Result<ordered_diesel::Outcome, Error>, u64)> =
                std::thread::scope(|s| {
                    let hs: Vec<_> = [a, b]
                        .into_iter()
                        .map(|item| {
                            let t = t.clone();
                            s.spawn(move || {
                                let mut conn = C::open(&t.db);
                                set_isolation(&mut conn, level);
                                let o = ord(&t).expect_version(v);
                                if level.contains("caller") {
                                    // the loser's 40001 reaches the caller, whose retry must
                                    // read the new version and get VersionConflict
                                    in_callers_txn(&mut conn, |c| o.move_to_start(c, item))
                                } else {
                                    (o.move_to_start(&mut conn, item), 0)
                                }
                            })
                        })
                        .collect();
                    hs.into_iter().map(|h| h.join().unwrap()).collect()
                });
            tally.retries += results.iter().map(|r| r.1).sum::<u64>();
            let results: Vec<Result<ordered_diesel::Outcome, Error>> =
                results.into_iter().map(|r| r.0).collect();
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
                "{} {level} round {round}: {results:?}",
                C::name()
            );
            assert_eq!(version(&mut c, &t, ordered_diesel::Id::Int(1)), v + 1);
            for r in &results {
                match r {
                    Ok(o) => tally.outcome(o),
                    Err(e) => *tally.errors.entry(kind(e)).or_default() += 1,
                }
            }
        }
        tally.report("S5 same expected version", C::name(), level);
        drop_tables(&mut c, &t);
    }
}
