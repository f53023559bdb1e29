//! R1-R2: retries with injected failures, and an ambiguous commit through a loopback
//! proxy, with idempotent inserts.

use std::sync::atomic::Ordering as AtomicOrdering;
use std::time::{Duration, Instant};

use ordered_diesel::{Dialect, Error, Id, OrderingError, Placement, RebalancePolicy, RetryPolicy};

use crate::common::proxy::{CUT_AFTER_COMMIT, CUT_BEFORE_COMMIT, PASS, Proxy};
use crate::common::*;
use crate::each_engine;
use crate::engine::spy;
use crate::oracle::{Model, check_replay, log_stmt_max_id, olog, reset_log};
use crate::{Tally, lock_is_free};

pub fn run() {
    if crate::selected("r1") {
        each_engine!(r1);
    }
    if crate::selected("r2") {
        each_engine!(r2);
    }
}

/// Installs a trigger that fails the first `k` item writes with `code` (a
/// non-transactional counter: a PostgreSQL sequence, a MyISAM table on MariaDB).
fn inject<C: TestConn>(c: &mut C, t: &Tables, code: &str, msg: &str, k: i64) {
    let msg = msg.replace('\'', "''");
    match C::DIALECT {
        Dialect::Postgres => {
            c.exec("DROP SEQUENCE IF EXISTS o_r1_seq");
            c.exec("CREATE SEQUENCE o_r1_seq");
            c.exec(&format!(
                "CREATE OR REPLACE FUNCTION o_r1_fail() RETURNS trigger AS $$ BEGIN
                   IF nextval('o_r1_seq') <= {k} THEN
                     RAISE EXCEPTION USING ERRCODE = '{code}', MESSAGE = '{msg}';
                   END IF;
                   RETURN NULL;
                 END $$ LANGUAGE plpgsql"
            ));
            c.exec(&format!("DROP TRIGGER IF EXISTS o_r1 ON \"{}\"", t.items));
            c.exec(&format!(
                "CREATE TRIGGER o_r1 BEFORE INSERT OR UPDATE ON \"{}\" FOR EACH STATEMENT EXECUTE FUNCTION o_r1_fail()",
                t.items
            ));
        }
        Dialect::Mysql => {
            c.exec("DROP TABLE IF EXISTS o_r1_ctr");
            c.exec("CREATE TABLE o_r1_ctr (n BIGINT NOT NULL) ENGINE=MyISAM");
            c.exec("INSERT INTO o_r1_ctr VALUES (0)");
            c.exec(&format!("DROP TRIGGER IF EXISTS o_r1_{}", t.items));
            c.exec(&format!(
                "CREATE TRIGGER o_r1_{items} BEFORE INSERT ON `{items}` FOR EACH ROW BEGIN
                   UPDATE o_r1_ctr SET n = n + 1;
                   IF (SELECT n FROM o_r1_ctr) <= {k} THEN
                     SIGNAL SQLSTATE '{state}' SET MYSQL_ERRNO = {code}, MESSAGE_TEXT = '{msg}';
                   END IF;
                 END",
                items = t.items,
                state = if code == "1062" { "23000" } else { "40001" }
            ));
        }
        Dialect::Sqlite => unreachable!(),
    }
}

fn uninject<C: TestConn>(c: &mut C, t: &Tables) {
    match C::DIALECT {
        Dialect::Postgres => {
            c.exec(&format!("DROP TRIGGER IF EXISTS o_r1 ON \"{}\"", t.items));
            c.exec("DROP FUNCTION IF EXISTS o_r1_fail()");
            c.exec("DROP SEQUENCE IF EXISTS o_r1_seq");
        }
        Dialect::Mysql => {
            c.exec(&format!("DROP TRIGGER IF EXISTS o_r1_{}", t.items));
            c.exec("DROP TABLE IF EXISTS o_r1_ctr");
        }
        Dialect::Sqlite => {}
    }
}

/// R1: the first k attempts fail with an injected retryable error. k < max_attempts:
/// success after exactly k retries, the whole operation (lock, neighbour reads, the
/// caller's insert) re-run each time. k >= max_attempts: `RetriesExhausted`.
/// Non-retryable errors run once; a duplicate on the position key is retried once
/// and then `Inconsistent`; a duplicate on another key is never retried.
fn r1<C: TestConn>(_: ()) {
    if C::DIALECT == Dialect::Sqlite {
        return; // SQLITE_BUSY retries: E1 (a)
    }
    let (mut c, t) = setup::<C>(
        "r1",
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1)],
    );
    let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "a");
    add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "b");
    let max = RetryPolicy::default().max_attempts;
    let uq = t.spec.unique_name();
    let retryable: Vec<(&str, String)> = match C::DIALECT {
        Dialect::Postgres => vec![
            (
                "40001",
                "could not serialize access due to concurrent update (injected)".into(),
            ),
            ("40P01", "deadlock detected (injected)".into()),
        ],
        _ => vec![
            (
                "1213",
                "Deadlock found when trying to get lock; try restarting transaction (injected)"
                    .into(),
            ),
            (
                "1205",
                "Lock wait timeout exceeded; try restarting transaction (injected)".into(),
            ),
            (
                "1020",
                "Record has changed since last read in table (injected)".into(),
            ),
        ],
    };
    let log = spy(&mut c);
    let reads = |log: &std::sync::Mutex<Vec<String>>| {
        log.lock()
            .unwrap()
            .iter()
            .filter(|s| s.contains("ORDER BY") && s.contains(t.items))
            .count()
    };
    let mut tally = Tally::default();
    for (code, msg) in &retryable {
        for k in [2, i64::from(max)] {
            inject(&mut c, &t, code, msg, k);
            let before = Model::read(&mut c, &t, &[ordered_diesel::Id::Int(1)]);
            log.lock().unwrap().clear();
            let mut calls = 0;
            let t0 = Instant::now();
            let r = ord(&t).insert_after(&mut c, 1, a, |c, s| {
                calls += 1;
                c.insert_item(&t, "r1", &s)
            });
            tally.lat.push(t0.elapsed());
            let label = format!("R1 {} {code} k={k}", C::name());
            assert!(
                t0.elapsed() <= RetryPolicy::default().deadline + Duration::from_secs(1),
                "{label}: past the deadline"
            );
            if k < i64::from(max) {
                let r = r.unwrap_or_else(|e| panic!("{label}: {e}"));
                assert_eq!(r.outcome.attempts, 3, "{label}");
                assert_eq!(calls, 3, "{label}: the caller's insert did not re-run");
                assert!(
                    reads(&log) >= 3,
                    "{label}: the neighbour reads did not re-run"
                );
                tally.outcome(&r.outcome);
            } else {
                let e = r.expect_err("exhausted retries succeeded");
                assert!(
                    matches!(e, Error::RetriesExhausted { attempts, .. } if attempts == max),
                    "{label}: {e:?}"
                );
                assert_eq!(calls, max, "{label}");
                assert_eq!(
                    Model::read(&mut c, &t, &[ordered_diesel::Id::Int(1)]),
                    before,
                    "{label}: a write survived"
                );
                tally.error(&e);
                tally.retries += u64::from(max - 1);
            }
        }
    }
    // never retried: a foreign-key or range error, a duplicate on another key
    let fatal: Vec<(&str, &str)> = match C::DIALECT {
        Dialect::Postgres => vec![
            ("23503", "insert violates foreign key constraint (injected)"),
            ("22003", "integer out of range (injected)"),
        ],
        _ => vec![("1062", "Duplicate entry 'x' for key 'other_key' (injected)")],
    };
    for (code, msg) in fatal {
        inject(&mut c, &t, code, msg, 100);
        let mut calls = 0;
        let e = ord(&t)
            .insert_after(&mut c, 1, a, |c, s| {
                calls += 1;
                c.insert_item(&t, "r1", &s)
            })
            .expect_err("an injected fatal error passed");
        // a constraint the message names is the application's: the typed refusal
        if code == "22003" {
            assert!(matches!(e, Error::Database(_)), "R1 {code}: {e:?}");
        } else {
            assert_eq!(e.code(), "constraint_violation", "R1 {code}: {e:?}");
        }
        assert_eq!(calls, 1, "R1 {code}: a non-retryable error was retried");
        tally.error(&e);
    }
    // a duplicate on the position key: retried once, then Inconsistent
    if C::DIALECT == Dialect::Postgres {
        let msg = format!("duplicate key value violates unique constraint \"{uq}\" (injected)");
        inject(&mut c, &t, "23505", &msg, 100);
        let mut calls = 0;
        let e = ord(&t)
            .insert_after(&mut c, 1, a, |c, s| {
                calls += 1;
                c.insert_item(&t, "r1", &s)
            })
            .expect_err("an injected duplicate passed");
        assert!(
            matches!(e.refusal(), Some(OrderingError::Inconsistent(_))),
            "R1 23505: {e:?}"
        );
        assert_eq!(calls, 2, "R1 23505: retried other than once");
        tally.error(&e);
    }
    uninject(&mut c, &t);
    // domain refusals run once
    log.lock().unwrap().clear();
    let v = version(&mut c, &t, ordered_diesel::Id::Int(1));
    let e = ord(&t)
        .expect_version(v + 5)
        .move_to_start(&mut c, a)
        .expect_err("a wrong version passed");
    assert!(matches!(
        e.refusal(),
        Some(OrderingError::VersionConflict { .. })
    ));
    let begins = log
        .lock()
        .unwrap()
        .iter()
        .filter(|s| {
            // MySQL's own transaction starts with `START TRANSACTION`
            let u = s.to_uppercase();
            u.contains("BEGIN") || u.contains("START TRANSACTION")
        })
        .count();
    assert_eq!(begins, 1, "R1: VersionConflict was retried");
    tally.error(&e);
    sound(&mut c, &t, ordered_diesel::Id::Int(1));
    tally.report("R1 injected failures", C::name(), "READ COMMITTED");
    drop_tables(&mut c, &t);
}

thread_local! {
    /// R2's moves under a request key: (engine, committed before the cut, replayed).
    static KEYED: std::cell::RefCell<Vec<(&'static str, bool, bool)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// R2: the connection drops right after COMMIT was sent, with the commit applied or
/// not. The library returns `CommitUnknown` after one attempt (no blind re-run). With
/// a client-chosen id, the caller's retry of the insert returns `AlreadyApplied` when
/// the first attempt committed, and inserts when it did not: one row per client id.
/// A move's fate is read back from the ops log, and the database equals the replay. A
/// move under a request key is repeated with its key: replayed when the first attempt
/// committed, applied when it did not, so it is applied exactly once either way.
fn r2<C: TestConn>(_: ()) {
    if C::DIALECT == Dialect::Sqlite {
        return;
    }
    let (mut c, t) = setup::<C>(
        "r2",
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1)],
    );
    reset_log(&mut c);
    let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "a");
    let b = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "b");
    let url = std::env::var(match C::DIALECT {
        Dialect::Postgres => "ORDERED_PG_URL",
        _ => "ORDERED_MYSQL_URL",
    })
    .unwrap();
    let host = url
        .split('@')
        .nth(1)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let proxy = Proxy::start(host.clone());
    let proxied = url.replace(&host, &format!("127.0.0.1:{}", proxy.port));
    fresh_records(&mut c, &t);
    let mut tally = Tally::default();
    let q = |s: &str| ordered_core::adapter::sql::quote(C::DIALECT, s);
    for (i, mode) in [CUT_AFTER_COMMIT, CUT_BEFORE_COMMIT]
        .into_iter()
        .enumerate()
    {
        let applied = mode == CUT_AFTER_COMMIT;
        let label = format!("R2 {} applied={applied}", C::name());
        // an idempotent insert with a client-chosen id
        let id = Id::Int(1_000_000 + i as i64);
        let insert = |c: &mut C, s: ordered_diesel::Slot| {
            let pos = match s.position {
                ordered_diesel::Position::Int(p) => p,
                other => panic!("{other:?}"),
            };
            c.batch_execute(&format!(
                "INSERT INTO {} ({}, {}, {}, {}) VALUES ({id}, {}, 'client', {pos})",
                q(t.items),
                q("id"),
                q("parent_id"),
                q("title"),
                q("position"),
                s.parent
            ))
            .map(|()| id)
        };
        let mut via_proxy = C::open_url(&proxied);
        let cuts = proxy.cuts.load(AtomicOrdering::SeqCst);
        proxy.mode.store(mode, AtomicOrdering::SeqCst);
        let t0 = Instant::now();
        let e = ord(&t)
            .with_final_statement(log_stmt_max_id)
            .idempotent(id)
            .insert_after(&mut via_proxy, 1, a, insert)
            .expect_err("the cut commit reported success");
        tally.lat.push(t0.elapsed());
        proxy.mode.store(PASS, AtomicOrdering::SeqCst);
        assert!(matches!(e, Error::CommitUnknown(_)), "{label}: {e:?}");
        assert_eq!(
            proxy.cuts.load(AtomicOrdering::SeqCst),
            cuts + 1,
            "{label}: the library sent COMMIT more than once"
        );
        tally.error(&e);
        drop(via_proxy);
        // the caller retries on a new connection, with the same id
        std::thread::sleep(Duration::from_millis(200));
        let again = ord(&t)
            .with_final_statement(log_stmt_max_id)
            .idempotent(id)
            .insert_after(&mut c, 1, a, insert);
        match (&again, applied) {
            (Err(e), true) => {
                assert!(
                    matches!(e.refusal(), Some(OrderingError::AlreadyApplied { .. })),
                    "{label}: {e:?}"
                );
                tally.error(e);
            }
            (Ok(r), false) => tally.outcome(&r.outcome),
            (other, _) => panic!("{label}: the retry gave {other:?}"),
        }
        let rows = ids(&mut c, &t, ordered_diesel::Id::Int(1))
            .iter()
            .filter(|&&x| x == id)
            .count();
        assert_eq!(rows, 1, "{label}: {rows} rows with the client's id");

        // a move: its fate is in the log
        c.exec(&format!("DELETE FROM {}", crate::oracle::LOG));
        let start = Model::read(&mut c, &t, &[ordered_diesel::Id::Int(1)]);
        let mut via_proxy = C::open_url(&proxied);
        proxy.mode.store(mode, AtomicOrdering::SeqCst);
        let e = olog(&t)
            .move_to_start(&mut via_proxy, b)
            .expect_err("the cut commit reported success");
        proxy.mode.store(PASS, AtomicOrdering::SeqCst);
        assert!(matches!(e, Error::CommitUnknown(_)), "{label}: {e:?}");
        tally.error(&e);
        drop(via_proxy);
        std::thread::sleep(Duration::from_millis(200));
        let log = check_replay(&mut c, &t, &start, &label);
        assert_eq!(
            log.len(),
            usize::from(applied),
            "{label}: the move's fate: {log:?}"
        );
        // a move under a request key: after the cut, its repeat with the key on a new
        // connection learns the outcome (replayed) or applies it; either way it is
        // applied exactly once
        ord(&t).move_to_end(&mut c, b).unwrap();
        let key = format!("r2-{}-{i}", C::name());
        let once = {
            let mut o = ids(&mut c, &t, ordered_diesel::Id::Int(1));
            let at = o.iter().position(|&x| x == b).unwrap();
            o.swap(at - 1, at);
            o
        };
        let mut via_proxy = C::open_url(&proxied);
        proxy.mode.store(mode, AtomicOrdering::SeqCst);
        let t0 = Instant::now();
        let e = ord(&t)
            .request_key(key.clone())
            .move_up(&mut via_proxy, b)
            .expect_err("the cut commit reported success");
        proxy.mode.store(PASS, AtomicOrdering::SeqCst);
        assert!(matches!(e, Error::CommitUnknown(_)), "{label}: {e:?}");
        assert!(e.to_string().contains("request key"), "{label}: {e}");
        tally.error(&e);
        drop(via_proxy);
        std::thread::sleep(Duration::from_millis(200));
        let again = ord(&t)
            .request_key(key)
            .move_up(&mut c, b)
            .unwrap_or_else(|e| panic!("{label}: the repeat with the key: {e}"));
        tally.lat.push(t0.elapsed());
        assert_eq!(again.replayed, applied, "{label}: {again:?}");
        assert_eq!(
            ids(&mut c, &t, ordered_diesel::Id::Int(1)),
            once,
            "{label}: the keyed move was not applied exactly once"
        );
        tally.outcome(&again);
        KEYED.with(|k| k.borrow_mut().push((C::name(), applied, again.replayed)));

        // b back at the end for the next round
        ord(&t).move_to_end(&mut c, b).unwrap();
    }
    lock_is_free::<C>(&t, ordered_diesel::Id::Int(1));
    tally.report("R2 commit cut by a proxy", C::name(), "READ COMMITTED");
    KEYED.with(|k| {
        let k = k.borrow();
        let mine: Vec<_> = k.iter().filter(|(e, ..)| *e == C::name()).collect();
        let replayed = mine.iter().filter(|(_, _, r)| *r).count();
        println!(
            "R2 {}: {} CommitUnknown under a request key, every one resolved by its repeat: {} replayed (committed), {} applied by the repeat (not committed), each move applied once",
            C::name(),
            mine.len(),
            replayed,
            mine.len() - replayed
        );
    });
    drop_tables(&mut c, &t);
}
