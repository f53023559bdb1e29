//! Numeric positions against the engines: the migration's CHECK keeps NaN and the
//! infinities out, and a value the strategy cannot keep that the app wrote around the
//! library (`-0`, a negative number) is refused where it is read, reported by `verify`,
//! and renumbered by `rebalance`. The scripted scenarios of every adapter are the
//! conformance scripts `numeric_positions`, `numeric_decimal` and `float_column_adopted`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

use crate::common::*;

use ordered_diesel::{Id, Numeric, OrderingError, Placement, RebalancePolicy};

static FLOATS: Numeric = Numeric::FLOAT;

fn non_finite<C: TestConn>(_: ()) {
    let engine = C::name();
    let (mut c, t) = setup::<C>(
        "num_nonfinite",
        &FLOATS,
        RebalancePolicy::Window,
        &[Id::Int(1)],
    );
    let o = ord(&t);
    let a = add(&mut c, &t, Id::Int(1), Placement::Last, "a");
    let b = add(&mut c, &t, Id::Int(1), Placement::Last, "b");
    let cc = add(&mut c, &t, Id::Int(1), Placement::Last, "c");
    let set = |v: &str, id: Id| format!("UPDATE {} SET position = {v} WHERE id = {id}", t.items);
    // the CHECK keeps the column finite (MySQL/MariaDB cannot store NaN or an infinity)
    let refused: &[&str] = match engine {
        "postgres" => &["'NaN'::float8", "'Infinity'::float8", "'-Infinity'::float8"],
        "sqlite" => &["1e999", "-1e999", "NULL"],
        _ => &["1e308 * 10", "NULL"],
    };
    for v in refused {
        assert!(
            c.batch_execute(&set(v, b)).is_err(),
            "{engine}: {v} was stored"
        );
    }
    // a value inside the CHECK but outside the strategy's domain, written around the
    // library: -1 everywhere, and -0 on PostgreSQL, which keeps its sign (SQLite
    // stores it as 0)
    let written: &[&str] = match engine {
        "postgres" => &["-1", "'-0'::float8"],
        _ => &["-1"],
    };
    for v in written {
        c.batch_execute(&set(v, b)).unwrap();
        // c is not next to b in either order: the move reads b's position
        o.move_to(&mut c, cc, Placement::Last).unwrap();
        let e = o.move_after(&mut c, cc, b).unwrap_err();
        assert!(
            matches!(e.refusal(), Some(OrderingError::InvalidPosition { .. })),
            "{engine} {v}: {e:?}"
        );
        let report = o.verify(&mut c, 1).unwrap();
        assert_eq!(report.invalid, [b], "{engine} {v}: {report:?}");
        // the rebalance renumbers the list; then the move goes through
        o.rebalance(&mut c, 1).unwrap();
        let report = o.verify(&mut c, 1).unwrap();
        assert!(report.is_ok(), "{engine} {v}: {report:?}");
        o.move_after(&mut c, cc, a).unwrap();
        o.move_after(&mut c, cc, b).unwrap();
    }
    let ids: Vec<Id> = o.list(&mut c, 1).unwrap().iter().map(|r| r.id).collect();
    assert_eq!(ids.len(), 3, "{engine}");
}

#[test]
fn a_number_the_strategy_cannot_keep_is_refused_reported_and_renumbered() {
    each_engine!(non_finite);
}
