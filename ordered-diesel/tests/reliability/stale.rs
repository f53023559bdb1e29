//! S1-S4 and B5: requests made from a stale read (or against the item itself) are
//! refused with a typed error, write nothing and leave the parent's version alone.
//! (S5, two clients at once, is in `contention.rs`.)

use std::time::Instant;

use ordered_diesel::{Error, Id, OrderingError, Placement, RebalancePolicy};

use crate::common::*;
use crate::each_engine;
use crate::oracle::{Model, olog, read_log, reset_log};
use crate::{Tally, lock_is_free};

pub fn run() {
    if crate::selected("s1") {
        each_engine!(stale);
    }
}

/// Asserts `r` is refused with `want`, and that nothing changed: the lists of both
/// parents, both versions, and no ops-log entry.
fn refused<C: TestConn>(
    c: &mut C,
    t: &Tables,
    r: Result<ordered_diesel::Outcome, Error>,
    want: &OrderingError,
    label: &str,
    tally: &mut Tally,
) {
    let before = Model::read(
        c,
        t,
        &[ordered_diesel::Id::Int(1), ordered_diesel::Id::Int(2)],
    );
    let err = r.expect_err(label);
    assert_eq!(err.refusal(), Some(want), "{label}: {err}");
    assert!(!err.is_retryable(), "{label}");
    assert!(
        read_log(c).is_empty(),
        "{label}: a refused request was logged"
    );
    assert_eq!(
        Model::read(
            c,
            t,
            &[ordered_diesel::Id::Int(1), ordered_diesel::Id::Int(2)]
        ),
        before,
        "{label}"
    );
    tally.error(&err);
}

fn stale<C: TestConn>(_: ()) {
    let (mut c, t) = setup::<C>(
        "stale",
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1), ordered_diesel::Id::Int(2)],
    );
    reset_log(&mut c);
    let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "A");
    let b = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "B");
    let x = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "X");
    let mut tally = Tally::default();
    let t0 = Instant::now();
    let v = |c: &mut C| {
        (
            version(c, &t, ordered_diesel::Id::Int(1)),
            version(c, &t, ordered_diesel::Id::Int(2)),
        )
    };
    let name = C::name();

    // S1: the client read [A, B, X] and asks for X between A and B, but C came in
    let c_id: Id = add(
        &mut c,
        &t,
        ordered_diesel::Id::Int(1),
        Placement::Between {
            prev: Some(a),
            next: Some(b),
        },
        "C",
    );
    let before = v(&mut c);
    let r = olog(&t).move_between(&mut c, x, Some(a), Some(b));
    let want = OrderingError::StaleNeighbours {
        prev: Some(a),
        next: Some(b),
    };
    refused(&mut c, &t, r, &want, &format!("S1 {name}"), &mut tally);
    assert_eq!(v(&mut c), before, "S1 {name}: the version moved");

    // S2: the anchor moved to parent 2 after the client's read
    ord(&t)
        .move_to_parent(&mut c, c_id, 2, Placement::Last)
        .unwrap();
    let before = v(&mut c);
    let r = olog(&t).move_after(&mut c, x, c_id);
    let want = OrderingError::NotInCollection {
        id: c_id,
        parent: ordered_diesel::Id::Int(1),
    };
    refused(&mut c, &t, r, &want, &format!("S2 {name}"), &mut tally);
    assert_eq!(v(&mut c), before, "S2 {name}: a version moved");

    // S3: the anchor, then the item, deleted
    ord(&t).remove(&mut c, c_id).unwrap();
    let before = v(&mut c);
    let r = olog(&t).move_before(&mut c, x, c_id);
    let want = OrderingError::NotFound { id: c_id };
    refused(
        &mut c,
        &t,
        r,
        &want,
        &format!("S3 anchor {name}"),
        &mut tally,
    );
    let r = olog(&t).move_to_start(&mut c, c_id);
    refused(&mut c, &t, r, &want, &format!("S3 item {name}"), &mut tally);
    assert_eq!(v(&mut c), before, "S3 {name}: a version moved");

    // S4: expected v while the parent is at v + 1; a re-read tells the missing parent
    // apart from the mismatch
    let (v1, _) = v(&mut c);
    ord(&t).move_to_end(&mut c, a).unwrap();
    let r = olog(&t).expect_version(v1).move_to_start(&mut c, x);
    let want = OrderingError::VersionConflict {
        parent: ordered_diesel::Id::Int(1),
        expected: v1,
        actual: v1 + 1,
    };
    refused(&mut c, &t, r, &want, &format!("S4 {name}"), &mut tally);
    assert_eq!(v(&mut c).0, v1 + 1, "S4 {name}: the version moved");
    let r = olog(&t)
        .expect_version(v1)
        .insert_last(&mut c, 77, |c, s| c.insert_item(&t, "orphan", &s))
        .map(|r| r.outcome);
    let want = OrderingError::ParentNotFound {
        parent: ordered_diesel::Id::Int(77),
    };
    refused(
        &mut c,
        &t,
        r,
        &want,
        &format!("S4 missing parent {name}"),
        &mut tally,
    );

    // B5: relative to itself
    let before = v(&mut c);
    let r = olog(&t).move_after(&mut c, x, x);
    let want = OrderingError::SelfReference { id: x };
    refused(&mut c, &t, r, &want, &format!("B5 {name}"), &mut tally);
    let r = olog(&t).swap(&mut c, x, x);
    refused(&mut c, &t, r, &want, &format!("B5 swap {name}"), &mut tally);
    assert_eq!(v(&mut c), before, "B5 {name}: a version moved");

    sound(&mut c, &t, ordered_diesel::Id::Int(1));
    lock_is_free::<C>(&t, ordered_diesel::Id::Int(1));
    lock_is_free::<C>(&t, ordered_diesel::Id::Int(2));
    tally.lat.push(t0.elapsed());
    tally.report(
        "S1-S4 stale requests, B5 self reference (strict mode)",
        name,
        "default",
    );
    drop_tables(&mut c, &t);
}
