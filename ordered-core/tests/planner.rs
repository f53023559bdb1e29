//! Planner scenarios on the in-memory model: the seeds' playlist, stale and bad
//! requests, and what each plan writes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use ordered_core::Id;
use ordered_core::model::Store;
use ordered_core::{
    Dense, Error, Fractional, Gapped, Placement, Position, PositionStrategy, RebalancePolicy,
    Request, Spec, Write,
};

fn spec(strategy: &'static dyn PositionStrategy, policy: RebalancePolicy) -> Spec {
    Spec::new("tracks", "playlist_id", "playlists")
        .with_strategy(strategy)
        .with_policy(policy)
}

fn positions(s: &Store, parent: i64) -> Vec<Position> {
    s.list(parent).into_iter().map(|r| r.position).collect()
}

#[test]
fn seeds_playlist_scenario() {
    let mut s = Store::new(spec(&Gapped::DEFAULT, RebalancePolicy::Window));
    let intro = s.insert(1, Placement::Last).unwrap();
    let demo = s.insert(1, Placement::Last).unwrap();
    let credits = s.insert(1, Placement::Last).unwrap();
    assert_eq!(positions(&s, 1), [1024, 2048, 3072].map(Position::Int));
    let plan = s
        .apply(&Request::Move {
            item: credits,
            at: Placement::Before(demo),
        })
        .unwrap();
    // one row written: the move into a free gap
    assert_eq!(plan.rows_written(), 1);
    let setup = s
        .insert(
            1,
            Placement::Between {
                prev: Some(credits),
                next: Some(demo),
            },
        )
        .unwrap();
    assert_eq!(s.ids(1), [intro, credits, setup, demo]);
    s.apply(&Request::Rebalance { parent: Id::Int(1) }).unwrap();
    assert_eq!(s.ids(1), [intro, credits, setup, demo]);
    assert_eq!(
        positions(&s, 1),
        [1024, 2048, 3072, 4096].map(Position::Int)
    );
}

#[test]
fn stale_and_bad_requests_are_typed_and_change_nothing() {
    let mut s = Store::new(spec(&Gapped::DEFAULT, RebalancePolicy::Window));
    let a = s.insert(1, Placement::Last).unwrap();
    let b = s.insert(1, Placement::Last).unwrap();
    let c = s
        .insert(
            1,
            Placement::Between {
                prev: Some(a),
                next: Some(b),
            },
        )
        .unwrap();
    let other = s.insert(2, Placement::Last).unwrap();
    let before = (s.list(1), s.list(2));
    let cases: Vec<(Request, Error)> = vec![
        (
            Request::Insert {
                parent: Id::Int(1),
                at: Placement::Between {
                    prev: Some(a),
                    next: Some(b),
                },
            },
            Error::StaleNeighbours {
                prev: Some(a),
                next: Some(b),
            },
        ),
        (
            Request::Insert {
                parent: Id::Int(1),
                at: Placement::Between {
                    prev: None,
                    next: None,
                },
            },
            Error::StaleNeighbours {
                prev: None,
                next: None,
            },
        ),
        (
            Request::Insert {
                parent: Id::Int(1),
                at: Placement::After(other),
            },
            Error::NotInCollection {
                id: other,
                parent: Id::Int(1),
            },
        ),
        (
            Request::Insert {
                parent: Id::Int(1),
                at: Placement::After(Id::Int(999)),
            },
            Error::NotFound { id: Id::Int(999) },
        ),
        (
            Request::Move {
                item: Id::Int(999),
                at: Placement::First,
            },
            Error::NotFound { id: Id::Int(999) },
        ),
        (
            Request::Move {
                item: c,
                at: Placement::After(c),
            },
            Error::SelfReference { id: c },
        ),
        (Request::Swap { a, b: a }, Error::SelfReference { id: a }),
        (
            Request::Swap { a, b: other },
            Error::NotInCollection {
                id: other,
                parent: Id::Int(1),
            },
        ),
        (
            Request::Insert {
                parent: Id::Int(1),
                at: Placement::Index(5),
            },
            Error::IndexOutOfRange { index: 5 },
        ),
        (
            Request::Reorder {
                parent: Id::Int(1),
                ids: vec![a, b],
            },
            Error::ReorderMismatch {
                parent: Id::Int(1),
                reason: "2 ids given for 3 items".into(),
            },
        ),
        (
            Request::Reorder {
                parent: Id::Int(1),
                ids: vec![a, b, b],
            },
            Error::ReorderMismatch {
                parent: Id::Int(1),
                reason: format!("item {b} is listed twice"),
            },
        ),
    ];
    for (req, want) in cases {
        assert_eq!(s.apply(&req).unwrap_err(), want, "{req:?}");
        assert_eq!((s.list(1), s.list(2)), before, "{req:?} changed the store");
    }
    // an index equal to the length appends
    let d = s.insert(1, Placement::Index(3)).unwrap();
    assert_eq!(s.ids(1), [a, c, b, d]);
}

#[test]
fn moving_onto_its_own_place_writes_nothing() {
    let mut s = Store::new(spec(&Gapped::DEFAULT, RebalancePolicy::Window));
    let a = s.insert(1, Placement::Last).unwrap();
    let b = s.insert(1, Placement::Last).unwrap();
    let plan = s
        .apply(&Request::Move {
            item: b,
            at: Placement::After(a),
        })
        .unwrap();
    assert!(plan.writes.is_empty());
    let plan = s.apply(&Request::MoveUp { item: a }).unwrap();
    assert!(plan.writes.is_empty());
}

#[test]
fn never_policy_reports_exhausted() {
    static TIGHT: Gapped = Gapped::new(2);
    let mut s = Store::new(spec(&TIGHT, RebalancePolicy::Never));
    let a = s.insert(1, Placement::Last).unwrap(); // 2
    s.insert(1, Placement::Last).unwrap(); // 4
    s.insert(1, Placement::After(a)).unwrap(); // 3: the last free integer
    let before = s.list(1);
    assert_eq!(
        s.insert(1, Placement::After(a)).unwrap_err(),
        Error::Exhausted
    );
    assert_eq!(s.list(1), before);
    // an explicit rebalance makes room again
    s.apply(&Request::Rebalance { parent: Id::Int(1) }).unwrap();
    assert_eq!(positions(&s, 1), [2, 4, 6].map(Position::Int));
    s.insert(1, Placement::After(a)).unwrap();
}

#[test]
fn hot_gap_relabels_a_window_not_the_list() {
    let mut s = Store::new(spec(&Gapped::DEFAULT, RebalancePolicy::Window));
    let mut ids = Vec::new();
    for _ in 0..1000 {
        ids.push(s.insert(1, Placement::Last).unwrap());
    }
    let anchor = ids[500];
    let mut biggest = 0;
    for _ in 0..100 {
        let before = s.stats();
        s.insert(1, Placement::After(anchor)).unwrap();
        let after = s.stats();
        biggest = biggest.max(after.relabelled - before.relabelled);
    }
    assert!(
        s.stats().relabels > 0,
        "a hot gap of 1024 must relabel within 100 inserts"
    );
    assert!(
        biggest < 100,
        "relabelled {biggest} rows at once in a list of 1,100"
    );
    // Whole policy rewrites everything
    let mut w = Store::new(spec(&Gapped::DEFAULT, RebalancePolicy::Whole));
    let mut ids = Vec::new();
    for _ in 0..1000 {
        ids.push(w.insert(1, Placement::Last).unwrap());
    }
    for _ in 0..100 {
        w.insert(1, Placement::After(ids[500])).unwrap();
    }
    assert!(w.stats().relabelled >= 1000);
}

#[test]
fn reorder_writes_only_rows_off_the_longest_increasing_run() {
    for strategy in [
        &Gapped::DEFAULT as &'static dyn PositionStrategy,
        &Fractional::DEFAULT,
    ] {
        let mut s = Store::new(spec(strategy, RebalancePolicy::Window));
        let ids: Vec<Id> = (0..10)
            .map(|_| s.insert(1, Placement::Last).unwrap())
            .collect();
        let mut wanted = ids.clone();
        wanted.swap(2, 7); // two items out of place
        let plan = s
            .apply(&Request::Reorder {
                parent: Id::Int(1),
                ids: wanted.clone(),
            })
            .unwrap();
        assert_eq!(s.ids(1), wanted);
        assert_eq!(plan.rows_written(), 2, "{strategy:?}");
    }
}

#[test]
fn dense_keeps_zero_to_n() {
    let mut s = Store::new(spec(&Dense, RebalancePolicy::Window));
    let a = s.insert(1, Placement::Last).unwrap();
    let b = s.insert(1, Placement::Last).unwrap();
    let c = s.insert(1, Placement::First).unwrap();
    assert_eq!(s.ids(1), [c, a, b]);
    assert_eq!(positions(&s, 1), [0, 1, 2].map(Position::Int));
    s.apply(&Request::Move {
        item: c,
        at: Placement::Last,
    })
    .unwrap();
    assert_eq!(s.ids(1), [a, b, c]);
    s.apply(&Request::MoveToParent {
        item: a,
        parent: Id::Int(2),
        at: Placement::First,
    })
    .unwrap();
    assert_eq!(positions(&s, 1), [0, 1].map(Position::Int));
    s.apply(&Request::Remove { item: b }).unwrap();
    assert_eq!(positions(&s, 1), [0].map(Position::Int));
}

#[test]
fn cross_parent_moves_lock_both_in_increasing_order() {
    let mut s = Store::new(spec(&Fractional::DEFAULT, RebalancePolicy::Window));
    let a = s.insert(9, Placement::Last).unwrap();
    let req = Request::MoveToParent {
        item: a,
        parent: Id::Int(3),
        at: Placement::Last,
    };
    let mut reads = ordered_core::plan::Reads::new();
    reads.insert(
        ordered_core::plan::Read::Item { id: a },
        s.answer(&ordered_core::plan::Read::Item { id: a }),
    );
    assert_eq!(
        ordered_core::plan::parents_to_lock(
            &spec(&Fractional::DEFAULT, RebalancePolicy::Window),
            &req,
            &reads
        )
        .unwrap(),
        [3, 9]
    );
    let plan = s.apply(&req).unwrap();
    assert_eq!(
        plan.writes,
        vec![Write::Set {
            id: a,
            parent: Id::Int(3),
            position: Position::Key("a0".into())
        }]
    );
}

#[test]
fn moves_to_the_front_write_under_two_rows_each_and_keep_the_order() {
    // "bump to top": a random item to the front, again and again, on a list laid out as a
    // rebalance leaves it (1024 apart from 1024)
    let mut s = Store::new(spec(&Gapped::DEFAULT, RebalancePolicy::Window));
    let n = 5_000;
    let mut order: Vec<Id> = (0..n)
        .map(|_| s.insert(1, Placement::Last).unwrap())
        .collect();
    assert_eq!(positions(&s, 1)[0], Position::Int(1024));
    let before = s.stats();
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let moves = 3_000;
    for _ in 0..moves {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let item = order[1 + (x % (n as u64 - 1)) as usize];
        s.apply(&Request::Move {
            item,
            at: Placement::First,
        })
        .unwrap();
        order.retain(|&i| i != item);
        order.insert(0, item);
    }
    assert_eq!(s.ids(1), order, "the list is the replay of the moves");
    let st = s.stats();
    let per_move = (st.rows_written - before.rows_written) as f64 / moves as f64;
    // halving the first gap and spreading the window evenly wrote 4.5 rows per move here
    assert!(per_move < 2.0, "{per_move:.2} rows per move");
    assert!(
        st.relabels - before.relabels < 10,
        "{} relabels",
        st.relabels - before.relabels
    );
    // the first items are a front step apart, not crowded at 1, 2, 3
    let p: Vec<i64> = positions(&s, 1)
        .iter()
        .take(10)
        .map(|p| p.as_int().unwrap())
        .collect();
    assert!(p.windows(2).all(|w| w[1] - w[0] >= 2), "{p:?}");
}
