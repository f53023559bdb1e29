//! Bad inputs against the real engines (B4, B6, B7; the key functions' B1-B3 are in
//! ordered-core's fixture and property tests and the fuzz target; S1-S4, B4 and B5
//! one call at a time in `engines.rs`).

use std::time::Instant;

use ordered_diesel::{
    Dialect, Id, MAX_POSITION, MIN_POSITION, OrderingError, Position, RebalancePolicy,
};

use crate::common::*;
use crate::each_engine;
use crate::{Tally, lock_is_free};

pub fn run() {
    if crate::selected("b4") {
        each_engine!(b4);
    }
    if crate::selected("b6") {
        each_engine!(b6);
    }
    if crate::selected("b7") {
        each_engine!(b7);
    }
}

/// B4: two workers insert into the same missing parent at once: every call is
/// `ParentNotFound`, none a deadlock (MariaDB 1213), and no parent row appears.
fn b4<C: TestConn>(_: ()) {
    let (mut c, t) = setup::<C>(
        "b4",
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1)],
    );
    let all = crate::threads(2, |w, tally| {
        let mut conn = C::open(&t.db);
        for i in 0..50 {
            let t0 = Instant::now();
            let r = ord(&t).insert_last(&mut conn, 999, |c, s| {
                c.insert_item(&t, &format!("o{w}-{i}"), &s)
            });
            tally.lat.push(t0.elapsed());
            match r {
                Ok(r) => tally.outcome(&r.outcome),
                Err(e) => tally.error(&e),
            }
        }
    });
    let label = format!("B4 {}", C::name());
    assert_eq!(
        all.errors.get("ParentNotFound").copied(),
        Some(100),
        "{label}: {:?}",
        all.errors
    );
    assert_eq!(all.errors.len(), 1, "{label}: {:?}", all.errors);
    let q = |s: &str| ordered_core::adapter::sql::quote(C::DIALECT, s);
    let rows = count(
        &mut c,
        &format!(
            "SELECT COUNT(*) AS o_count FROM {} WHERE {} = 999",
            q(t.parents),
            q("id")
        ),
    );
    assert_eq!(rows, 0, "{label}: a parent row was created");
    assert!(
        ids(&mut c, &t, ordered_diesel::Id::Int(999)).is_empty(),
        "{label}: an orphan was inserted"
    );
    all.report("B4 two workers, one missing parent", C::name(), "default");
    drop_tables(&mut c, &t);
}

/// B6: an empty collection: an insert with no anchor takes the first position, an
/// anchored one is `NotFound`, a rebalance writes nothing.
fn b6<C: TestConn>(_: ()) {
    let mut tally = Tally::default();
    for (sname, strategy) in strategies() {
        let (mut c, t) = setup::<C>(
            &format!("b6_{sname}"),
            strategy,
            RebalancePolicy::Window,
            &[ordered_diesel::Id::Int(1)],
        );
        let o = ord(&t);
        let r = o.rebalance(&mut c, 1).unwrap();
        assert_eq!(
            r.rows_written,
            0,
            "B6 {}: rebalance of nothing wrote",
            C::name()
        );
        let e = o
            .insert_after(&mut c, 1, 999, |c, s| c.insert_item(&t, "x", &s))
            .unwrap_err();
        assert_eq!(
            e.refusal(),
            Some(&OrderingError::NotFound {
                id: ordered_diesel::Id::Int(999)
            })
        );
        tally.error(&e);
        let r = o
            .insert_last(&mut c, 1, |c, s| c.insert_item(&t, "first", &s))
            .unwrap();
        let want = match sname {
            "keys" => Position::Key("a0".into()),
            _ => r.outcome.position.clone().unwrap(),
        };
        assert_eq!(r.outcome.position, Some(want), "B6 {}", C::name());
        assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(1)), vec![r.value]);
        tally.outcome(&r.outcome);
        sound(&mut c, &t, ordered_diesel::Id::Int(1));
        drop_tables(&mut c, &t);
    }
    tally.report("B6 empty collection", C::name(), "default");
}

/// B7: the ends of the integer domain. Items seeded at `MAX_POSITION - 1` and
/// `MIN_POSITION + 1`, then 20 appends and 20 prepends: no overflow (PostgreSQL
/// 22003, MySQL 1690, an SQLite REAL), every position an integer inside the domain,
/// and the table's CHECK refuses a value past either end of the stored range (the live
/// domain plus the parking range below it).
fn b7<C: TestConn>(_: ()) {
    let (mut c, t) = setup::<C>(
        "b7",
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1)],
    );
    let q = |s: &str| ordered_core::adapter::sql::quote(C::DIALECT, s);
    let raw = |c: &mut C, title: &str, pos: i64| {
        c.batch_execute(&format!(
            "INSERT INTO {} ({}, {}, {}) VALUES (1, '{title}', {pos})",
            q(t.items),
            q("parent_id"),
            q("title"),
            q("position")
        ))
    };
    raw(&mut c, "low", MIN_POSITION + 1).unwrap();
    raw(&mut c, "high", MAX_POSITION - 1).unwrap();
    let mut tally = Tally::default();
    for i in 0..20 {
        for first in [false, true] {
            let f = |c: &mut C, s| c.insert_item(&t, &format!("e{i}"), &s);
            let r = if first {
                ord(&t).insert_first(&mut c, 1, f)
            } else {
                ord(&t).insert_last(&mut c, 1, f)
            };
            match r {
                Ok(r) => tally.outcome(&r.outcome),
                Err(e) => panic!("B7 {}: {e}", C::name()),
            }
        }
    }
    // and the middle of the whole domain
    let all: Vec<Id> = ids(&mut c, &t, ordered_diesel::Id::Int(1));
    let r = ord(&t)
        .move_to_index(&mut c, all[0], 20)
        .unwrap_or_else(|e| panic!("B7 {}: {e}", C::name()));
    tally.outcome(&r);
    let rows = sound(&mut c, &t, ordered_diesel::Id::Int(1));
    assert_eq!(rows.len(), 42);
    assert!(rows.iter().all(|r| matches!(
        r.position,
        Position::Int(p) if (MIN_POSITION..=MAX_POSITION).contains(&p)
    )));
    if C::DIALECT == Dialect::Sqlite {
        let reals = count(
            &mut c,
            &format!(
                "SELECT COUNT(*) AS o_count FROM {} WHERE typeof({}) <> 'integer'",
                q(t.items),
                q("position")
            ),
        );
        assert_eq!(reals, 0, "B7 sqlite: a position is not an integer");
    }
    for bad in [
        MAX_POSITION + 1,
        ordered_diesel::__private::PARK_POSITION - 1,
    ] {
        let refused = raw(&mut c, "out", bad);
        assert!(
            refused.is_err(),
            "B7 {}: the CHECK accepted position {bad}",
            C::name()
        );
    }
    lock_is_free::<C>(&t, ordered_diesel::Id::Int(1));
    tally.report("B7 integer domain ends", C::name(), "default");
    drop_tables(&mut c, &t);
}
