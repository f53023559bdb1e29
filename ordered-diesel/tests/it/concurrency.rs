//! 8 threads x 100 moves into one hot gap, per engine and strategy: every item present
//! once, positions unique and strictly ordered, and only retryable outcomes besides
//! success (counted, never swallowed).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::common::*;
use ordered_diesel::{Error, Placement, RebalancePolicy};

const THREADS: usize = 8;
const MOVES: usize = 100;

fn hot_moves<C: TestConn>(_: ()) {
    for (sname, strategy) in [
        (
            "tight",
            &TIGHT as &'static dyn ordered_diesel::PositionStrategy,
        ),
        ("shortkeys", &SHORT_KEYS),
    ] {
        let (mut c, t) = setup::<C>(
            &format!("conc_{sname}"),
            strategy,
            RebalancePolicy::Window,
            &[ordered_diesel::Id::Int(1)],
        );
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
        let anchor = items[0];
        let outcomes = Arc::new(Mutex::new(BTreeMap::<String, u64>::new()));
        let relabels = Arc::new(Mutex::new(0u64));
        std::thread::scope(|s| {
            for w in 0..THREADS {
                let (t, items, outcomes, relabels) =
                    (t.clone(), items.clone(), outcomes.clone(), relabels.clone());
                s.spawn(move || {
                    let mut conn = C::open(&t.db);
                    let mut x = 0x9E37_79B9_7F4A_7C15_u64 ^ (w as u64 + 1);
                    for _ in 0..MOVES {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let item = items[1 + (x % (items.len() as u64 - 1)) as usize];
                        let kind = match ord(&t).move_after(&mut conn, item, anchor) {
                            Ok(o) => {
                                *relabels.lock().unwrap() += u64::from(o.relabelled > 0);
                                "ok".to_owned()
                            }
                            Err(Error::RetriesExhausted { .. }) => "retries exhausted".to_owned(),
                            Err(e) => panic!("{}: unexpected error {e}", C::name()),
                        };
                        *outcomes.lock().unwrap().entry(kind).or_default() += 1;
                    }
                });
            }
        });
        let outcomes = outcomes.lock().unwrap().clone();
        let total: u64 = outcomes.values().sum();
        assert_eq!(total, (THREADS * MOVES) as u64);
        let ok = outcomes.get("ok").copied().unwrap_or(0);
        // exhausted retries are allowed but must stay rare
        assert!(ok * 10 >= total * 9, "{} {sname}: {outcomes:?}", C::name());
        let rows = sound(&mut c, &t, ordered_diesel::Id::Int(1));
        let mut got: Vec<Id> = rows.iter().map(|r| r.id).collect();
        assert_eq!(
            got[0],
            anchor,
            "{} {sname}: the anchor stays first",
            C::name()
        );
        got.sort_unstable();
        let mut want = items.clone();
        want.sort_unstable();
        assert_eq!(
            got,
            want,
            "{} {sname}: an item was lost or duplicated",
            C::name()
        );
        eprintln!(
            "{} {sname}: {outcomes:?}, relabels {}",
            C::name(),
            relabels.lock().unwrap()
        );
        drop_tables(&mut c, &t);
    }
}

#[test]
fn eight_threads_hundred_moves_into_one_gap() {
    each_engine!(hot_moves);
}
