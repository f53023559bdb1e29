//! Faults a concurrent run through the public API found, reproduced on the servers:
//!
//! 1. a cross-parent move that waited for its locks while another writer moved the same
//!    item must bump, check and report only the collections it really writes;
//! 2. a connection that died between operations is `ConnectionLost` (retryable, nothing
//!    applied), not a plain database error;
//! 3. a connection killed inside the caller's transaction, which leaves Diesel's
//!    transaction manager broken, is `ConnectionLost` on that call and on every later
//!    one, and a pool would discard it.
//!
//! SQLite has no concurrent writer to race (`BEGIN IMMEDIATE` serialises whole
//! transactions) and no server connection to kill; it runs the single-writer checks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::time::Duration;

use crate::common::*;
use ordered_diesel::{Dialect, Error, Placement, Position, RebalancePolicy};

/// The server's id of this connection.
fn backend_id<C: TestConn>(conn: &mut C) -> i64 {
    match C::DIALECT {
        Dialect::Postgres => count(conn, "SELECT CAST(pg_backend_pid() AS BIGINT) AS o_count"),
        _ => count(conn, "SELECT CAST(CONNECTION_ID() AS SIGNED) AS o_count"),
    }
}

/// Ends the connection with server id `id`, and only that one.
fn kill<C: TestConn>(killer: &mut C, id: i64) {
    match C::DIALECT {
        Dialect::Postgres => {
            count(
                killer,
                &format!("SELECT CAST(COUNT(pg_terminate_backend({id})) AS BIGINT) AS o_count"),
            );
        }
        _ => killer.exec(&format!("KILL {id}")),
    }
    // the server ends it asynchronously
    std::thread::sleep(Duration::from_millis(200));
}

/// parent 1 = [i1, i2] at version 2, parent 2 = [i3] at version 1.
fn two_parents<C: TestConn>(test: &str) -> (C, Tables, [Id; 3]) {
    let (mut c, t) = setup::<C>(
        test,
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1), ordered_diesel::Id::Int(2)],
    );
    let i1 = add(
        &mut c,
        &t,
        ordered_diesel::Id::Int(1),
        Placement::Last,
        "i1",
    );
    let i2 = add(
        &mut c,
        &t,
        ordered_diesel::Id::Int(1),
        Placement::Last,
        "i2",
    );
    let i3 = add(
        &mut c,
        &t,
        ordered_diesel::Id::Int(2),
        Placement::Last,
        "i3",
    );
    assert_eq!(
        (
            version(&mut c, &t, ordered_diesel::Id::Int(1)),
            version(&mut c, &t, ordered_diesel::Id::Int(2))
        ),
        (2, 1)
    );
    (c, t, [i1, i2, i3])
}

/// Holds parent 1's row lock on its own connection until the returned sender fires.
fn hold_parent_1<C: TestConn>(
    t: &Tables,
) -> (std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>) {
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let (locked, is_locked) = std::sync::mpsc::channel::<()>();
    let t = t.clone();
    let holder = std::thread::spawn(move || {
        let mut h = C::open(&t.db);
        let q = |s: &str| ordered_core::adapter::sql::quote(C::DIALECT, s);
        h.exec("BEGIN");
        count(
            &mut h,
            &format!(
                "SELECT CAST(COUNT(*) AS {}) AS o_count FROM (SELECT {} FROM {} WHERE {} = 1 FOR UPDATE) x",
                if C::DIALECT == Dialect::Mysql {
                    "SIGNED"
                } else {
                    "BIGINT"
                },
                q("id"),
                q(t.parents),
                q("id")
            ),
        );
        locked.send(()).unwrap();
        wait.recv().unwrap();
        h.exec("COMMIT");
    });
    is_locked.recv().unwrap();
    (go, holder)
}

/// Issue #15, fault 1. A and B both ask to move i2 from parent 1 to parent 2 while a
/// holder has parent 1 locked; A gets the locks first. B read i2 in parent 1, so it
/// waits for 1 and 2; once it has them, i2 is in parent 2. B must start over and lock
/// parent 2 alone: parent 1 ends at the version of the one write that changed it.
fn waiting_cross_parent_move<C: TestConn>(_: ()) {
    if C::DIALECT == Dialect::Sqlite {
        return;
    }
    let (mut c, t, [i1, i2, i3]) = two_parents::<C>("fault_xmove");
    let (go, holder) = hold_parent_1::<C>(&t);
    let spawn = |at: Placement, expect: Option<i64>| {
        let t = t.clone();
        std::thread::spawn(move || {
            let mut conn = C::open(&t.db);
            let mut o = ord(&t);
            if let Some(v) = expect {
                o = o.expect_version(v);
            }
            o.move_to_parent(&mut conn, i2, 2, at)
        })
    };
    let a = spawn(Placement::Last, None);
    std::thread::sleep(Duration::from_millis(400));
    let b = spawn(Placement::First, None);
    std::thread::sleep(Duration::from_millis(400));
    go.send(()).unwrap();
    holder.join().unwrap();
    let a = a.join().unwrap().unwrap();
    let b = b.join().unwrap().unwrap();
    let name = C::name();
    // A: parent 1 (the item's collection) from 2 to 3
    assert_eq!(a.version, Some(3), "{name}: A");
    assert_eq!(a.attempts, 1, "{name}: A");
    // B: retried, then moved i2 within parent 2 (at 2 after A's move) to 3
    assert_eq!(b.attempts, 2, "{name}: B was not retried");
    assert_eq!(
        b.version,
        Some(3),
        "{name}: B reported another parent's version"
    );
    assert_eq!(
        (
            version(&mut c, &t, ordered_diesel::Id::Int(1)),
            version(&mut c, &t, ordered_diesel::Id::Int(2))
        ),
        (3, 3),
        "{name}: a parent was bumped by a write that did not change it"
    );
    assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(1)), [i1]);
    assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(2)), [i2, i3]);
    sound(&mut c, &t, ordered_diesel::Id::Int(1));
    sound(&mut c, &t, ordered_diesel::Id::Int(2));

    // the same race with B expecting parent 1 at version 2, as its client read it: the
    // list has changed since (i2 left it), so B is refused and writes nothing
    let (mut c, t, [_, i2, i3]) = two_parents::<C>("fault_xmove_v");
    let (go, holder) = hold_parent_1::<C>(&t);
    let a = {
        let t = t.clone();
        std::thread::spawn(move || {
            ord(&t).move_to_parent(&mut C::open(&t.db), i2, 2, Placement::Last)
        })
    };
    std::thread::sleep(Duration::from_millis(400));
    let b = {
        let t = t.clone();
        std::thread::spawn(move || {
            ord(&t)
                .expect_version(2)
                .move_to_parent(&mut C::open(&t.db), i2, 2, Placement::First)
        })
    };
    std::thread::sleep(Duration::from_millis(400));
    go.send(()).unwrap();
    holder.join().unwrap();
    a.join().unwrap().unwrap();
    let err = b.join().unwrap().unwrap_err();
    assert_eq!(
        err.refusal(),
        Some(&ordered_diesel::OrderingError::VersionConflict {
            parent: ordered_diesel::Id::Int(1),
            expected: 2,
            actual: 3
        }),
        "{name}: {err}"
    );
    assert_eq!(
        (
            version(&mut c, &t, ordered_diesel::Id::Int(1)),
            version(&mut c, &t, ordered_diesel::Id::Int(2))
        ),
        (3, 2),
        "{name}: the refused move wrote"
    );
    assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(2)), [i3, i2]);
    drop_tables(&mut c, &t);
}

#[test]
fn a_cross_parent_move_that_waited_writes_only_the_parents_it_changes() {
    each_engine!(waiting_cross_parent_move);
}

/// Issue #15, fault 2: the connection died while idle between two operations.
fn died_between_operations<C: TestConn>(_: ()) {
    if C::DIALECT == Dialect::Sqlite {
        return;
    }
    let (mut c, t) = setup::<C>(
        "fault_idle",
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1)],
    );
    add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "a");
    let mut victim = C::open(&t.db);
    let before = ids(&mut victim, &t, ordered_diesel::Id::Int(1));
    let id = backend_id(&mut victim);
    kill(&mut c, id);
    let err = ord(&t)
        .insert_last(&mut victim, 1, |conn: &mut C, slot| {
            conn.insert_item(&t, "b", &slot)
        })
        .unwrap_err();
    assert!(
        matches!(err, Error::ConnectionLost(_)) && err.is_retryable(),
        "{}: {err:?}",
        C::name()
    );
    assert_eq!(
        ids(&mut c, &t, ordered_diesel::Id::Int(1)),
        before,
        "{}: something was applied",
        C::name()
    );
    assert_eq!(version(&mut c, &t, ordered_diesel::Id::Int(1)), 1);
    drop_tables(&mut c, &t);
}

#[test]
fn a_connection_that_died_between_operations_is_connection_lost() {
    each_engine!(died_between_operations);
}

/// Issue #15, fault 3: the connection is killed while the caller's transaction is open.
fn killed_in_callers_transaction<C: TestConn>(_: ()) {
    if C::DIALECT == Dialect::Sqlite {
        return;
    }
    let (mut c, t) = setup::<C>(
        "fault_caller",
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1)],
    );
    let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "a");
    let b = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "b");
    let mut victim = C::open(&t.db);
    let id = backend_id(&mut victim);
    let killer_db = t.db.clone();
    let mut inside = None;
    let r = victim.transaction::<(), Error, _>(|conn| {
        ord(&t).move_to_start(conn, b)?;
        kill(&mut C::open(&killer_db), id);
        let e = ord(&t).move_to_end(conn, b).unwrap_err();
        let lost = matches!(e, Error::ConnectionLost(_)) && e.is_retryable();
        inside = Some(format!("{e:?}"));
        assert!(lost, "{}: inside the transaction: {e:?}", C::name());
        Err(e)
    });
    assert!(r.is_err(), "{}: the transaction did not fail", C::name());
    // Diesel's transaction manager is broken now (its ROLLBACK failed too): every later
    // call says to reconnect, and a pool's is_broken check would drop the connection
    for _ in 0..3 {
        let err = ord(&t).move_to_start(&mut victim, a).unwrap_err();
        assert!(
            matches!(err, Error::ConnectionLost(_)) && err.is_retryable(),
            "{}: after the transaction: {err:?}",
            C::name()
        );
        assert!(
            err.to_string().contains("reconnect"),
            "{}: {err}",
            C::name()
        );
    }
    // the caller's transaction was rolled back whole: b's first move is not there
    assert_eq!(
        ids(&mut c, &t, ordered_diesel::Id::Int(1)),
        [a, b],
        "{}: {inside:?}",
        C::name()
    );
    assert_eq!(version(&mut c, &t, ordered_diesel::Id::Int(1)), 2);
    drop_tables(&mut c, &t);
}

#[test]
fn a_connection_killed_in_the_callers_transaction_is_connection_lost_for_good() {
    each_engine!(killed_in_callers_transaction);
}

/// What a pool does with such a connection: r2d2 asks Diesel's `is_broken` when the
/// connection comes back and drops it, so the next checkout is a fresh connection and the
/// retried operation succeeds.
fn pool_drops_the_broken_connection<C: TestConn + diesel::r2d2::R2D2Connection>(_: ()) {
    if C::DIALECT == Dialect::Sqlite {
        return;
    }
    let (mut c, t) = setup::<C>(
        "fault_pool",
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1)],
    );
    let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "a");
    let b = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "b");
    let url = match C::DIALECT {
        Dialect::Postgres => std::env::var("ORDERED_PG_URL").unwrap(),
        _ => std::env::var("ORDERED_MYSQL_URL").unwrap(),
    };
    let pool = diesel::r2d2::Pool::builder()
        .max_size(1)
        .build(diesel::r2d2::ConnectionManager::<C>::new(url))
        .unwrap();
    let mut pooled = pool.get().unwrap();
    let id = backend_id(&mut *pooled);
    let inner: &mut C = &mut pooled;
    let r = inner.transaction::<(), Error, _>(|conn| {
        kill(&mut C::open(&t.db), id);
        ord(&t).move_to_start(conn, b).map(|_| ())
    });
    let err = r.unwrap_err();
    assert!(
        matches!(err, Error::ConnectionLost(_)),
        "{}: {err:?}",
        C::name()
    );
    drop(pooled);
    // the retry, as the error says: a new connection from the pool
    let mut fresh = pool.get().unwrap();
    assert_ne!(
        backend_id(&mut *fresh),
        id,
        "{}: the pool kept the dead connection",
        C::name()
    );
    ord(&t).move_to_start(&mut *fresh, b).unwrap();
    assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(1)), [b, a]);
    drop_tables(&mut c, &t);
}

#[test]
fn a_pool_replaces_the_connection_that_was_lost() {
    each_engine!(pool_drops_the_broken_connection);
}

/// What an operation cut off part-way can leave (on Galera, a `PartiallyApplied` one): a
/// row at the parking slot of a relabel and one at a negative temporary value. `verify`
/// reports both, and `heal` places every row back in the domain, keeping them all.
/// (Found by the Galera multi-writer test: heal left the parked row where it was.)
fn heal_places_parked_rows<C: TestConn>(_: ()) {
    let (mut c, t) = setup::<C>(
        "fault_heal",
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1)],
    );
    let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "a");
    let b = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "b");
    let x = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "x");
    let q = |s: &str| ordered_core::adapter::sql::quote(C::DIALECT, s);
    for (id, pos) in [(b, ordered_diesel::__private::PARK_POSITION), (x, -5)] {
        c.exec(&format!(
            "UPDATE {} SET {} = {pos} WHERE {} = {id}",
            q(t.items),
            q("position"),
            q("id")
        ));
    }
    let before = ord(&t).verify(&mut c, 1).unwrap();
    assert!(!before.is_ok(), "{}: {before:?}", C::name());
    ord(&t).rebalance(&mut c, 1).unwrap();
    let rows = sound(&mut c, &t, ordered_diesel::Id::Int(1));
    let mut got: Vec<Id> = rows.iter().map(|r| r.id).collect();
    got.sort_unstable();
    assert_eq!(got, [a, b, x], "{}", C::name());
    drop_tables(&mut c, &t);
}

#[test]
fn heal_places_rows_an_interrupted_operation_parked() {
    each_engine!(heal_places_parked_rows);
}

/// Rows a relabel cut off between its two passes left at the negations of the values the
/// next rebalance gives them, swapped (MySQL and SQLite check uniqueness row by row, so its
/// first pass collided with them in any order: `Duplicate entry '1--1024'`, and heal failed
/// each time it ran). The rebalance writes its first pass below the deepest such row.
fn heal_writes_below_rows_left_in_the_temporary_range<C: TestConn>(_: ()) {
    let (mut c, t) = setup::<C>(
        "fault_heal_temp",
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1)],
    );
    let one = ordered_diesel::Id::Int(1);
    let [x, y, a, b] = ["x", "y", "a", "b"].map(|n| add(&mut c, &t, one, Placement::Last, n));
    let q = |s: &str| ordered_core::adapter::sql::quote(C::DIALECT, s);
    // x ranks first and gets 1024 (first pass: -1024, which y holds), y second and gets
    // 2048 (-2048, which x holds)
    for (id, pos) in [(x, -2048), (y, -1024)] {
        c.exec(&format!(
            "UPDATE {} SET {} = {pos} WHERE {} = {id}",
            q(t.items),
            q("position"),
            q("id")
        ));
    }
    assert!(!ord(&t).verify(&mut c, 1).unwrap().is_ok(), "{}", C::name());
    ord(&t).rebalance(&mut c, 1).unwrap();
    let rows = sound(&mut c, &t, one);
    assert_eq!(
        rows.iter().map(|r| r.id).collect::<Vec<_>>(),
        [x, y, a, b],
        "{}",
        C::name()
    );
    assert_eq!(
        rows.iter().map(|r| r.position.clone()).collect::<Vec<_>>(),
        [1024, 2048, 3072, 4096].map(Position::Int),
        "{}",
        C::name()
    );
    drop_tables(&mut c, &t);
}

#[test]
fn heal_passes_rows_left_in_the_temporary_range() {
    each_engine!(heal_writes_below_rows_left_in_the_temporary_range);
}
