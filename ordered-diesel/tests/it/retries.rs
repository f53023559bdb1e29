//! Bounded, classified retries against real lock contention: a second connection holds
//! the parent lock while the library's connection times out quickly (SQLite
//! `SQLITE_BUSY`, PostgreSQL 55P03, MariaDB 1205). With retries the operation succeeds
//! once the holder lets go; without, it is `RetriesExhausted`, and nothing was written.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::time::{Duration, Instant};

use crate::common::*;
use ordered_diesel::{Dialect, Error, Placement, RebalancePolicy, RetryPolicy};

fn hold_parent<C: TestConn>(holder: &mut C, t: &Tables) {
    let q = |s: &str| ordered_core::adapter::sql::quote(C::DIALECT, s);
    match C::DIALECT {
        Dialect::Sqlite => holder.exec("BEGIN IMMEDIATE"),
        _ => {
            holder.exec("BEGIN");
            holder.exec(&format!(
                "UPDATE {} SET {} = {} WHERE {} = 1",
                q(t.parents),
                q("name"),
                q("name"),
                q("id")
            ));
        }
    }
}

fn short_timeouts<C: TestConn>(conn: &mut C) {
    match C::DIALECT {
        Dialect::Sqlite => conn.exec("PRAGMA busy_timeout = 0"),
        Dialect::Postgres => conn.exec("SET lock_timeout = '50ms'"),
        Dialect::Mysql => conn.exec("SET SESSION innodb_lock_wait_timeout = 1"),
    }
}

fn contended<C: TestConn>(_: ()) {
    let (mut c, t) = setup::<C>(
        "retry",
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1)],
    );
    let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "a");
    let b = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "b");
    short_timeouts(&mut c);
    let hold = if C::DIALECT == Dialect::Mysql {
        1500
    } else {
        300
    };

    // 1. without retries: exhausted at once, nothing written
    let mut holder = C::open(&t.db);
    hold_parent(&mut holder, &t);
    let err = ord(&t)
        .retry(RetryPolicy::NONE)
        .move_to_start(&mut c, b)
        .unwrap_err();
    assert!(
        matches!(err, Error::RetriesExhausted { attempts: 1, .. }),
        "{}: {err}",
        C::name()
    );
    holder.exec("ROLLBACK");
    assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(1)), [a, b]);

    // 2. with retries: waits out the holder, then succeeds
    let policy = RetryPolicy {
        max_attempts: 50,
        base: Duration::from_millis(20),
        cap: Duration::from_millis(100),
        deadline: Duration::from_secs(10),
    };
    let mut holder = C::open(&t.db);
    hold_parent(&mut holder, &t);
    let started = Instant::now();
    std::thread::scope(|s| {
        s.spawn(move || {
            std::thread::sleep(Duration::from_millis(hold));
            holder.exec("ROLLBACK");
        });
        ord(&t).retry(policy).move_to_start(&mut c, b).unwrap();
    });
    assert!(
        started.elapsed() >= Duration::from_millis(hold),
        "{}: did not wait",
        C::name()
    );
    assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(1)), [b, a]);
    drop_tables(&mut c, &t);
}

#[test]
fn retries_wait_out_a_lock_holder_and_give_up_when_told() {
    each_engine!(contended);
}
