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

/// Eight copies of one request under one key at once (a client that retried while its
/// first attempt was still running): exactly one applies, the seven others return its
/// recorded outcome, and the item moves up exactly one place per round. The control
/// sends the same eight moves without a key: the item moves up more than once.
static RETRIED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn keyed_duplicates<C: TestConn>(_: ()) {
    let one = ordered_diesel::Id::Int(1);
    let (mut c, t) = setup::<C>("conc_keyed", &GAPPED, RebalancePolicy::Window, &[one]);
    fresh_records(&mut c, &t);
    let items: Vec<Id> = (0..20)
        .map(|i| add(&mut c, &t, one, Placement::Last, &format!("i{i}")))
        .collect();
    let item = items[19];
    let at = |c: &mut C| ids(c, &t, one).iter().position(|&x| x == item).unwrap();
    let round = |key: Option<String>| -> (usize, usize) {
        let barrier = std::sync::Barrier::new(THREADS);
        let results = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    let mut conn = C::open(&t.db);
                    let mut h = ord(&t);
                    if let Some(k) = &key {
                        h = h.request_key(k.clone());
                    }
                    barrier.wait();
                    let r = h.move_up(&mut conn, item);
                    results
                        .lock()
                        .unwrap()
                        .push(r.map(|o| (o.replayed, o.attempts)));
                });
            }
        });
        let results = results.into_inner().unwrap();
        let applied = results
            .iter()
            .filter(|r| matches!(r, Ok((false, _))))
            .count();
        let replayed = results
            .iter()
            .filter(|r| matches!(r, Ok((true, _))))
            .count();
        // attempts after the first: a copy that found no record, waited for the lock,
        // and met the first one's record as a duplicate
        let again: u32 = results.iter().flatten().map(|(_, a)| a - 1).sum();
        RETRIED.fetch_add(again as usize, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            applied + replayed,
            THREADS,
            "{}: {:?}",
            C::name(),
            results.iter().filter(|r| r.is_err()).collect::<Vec<_>>()
        );
        (applied, replayed)
    };
    for r in 0..5 {
        let before = at(&mut c);
        let (applied, replayed) = round(Some(format!("dup-{r}")));
        assert_eq!(
            (applied, replayed),
            (1, THREADS - 1),
            "{} round {r}",
            C::name()
        );
        assert_eq!(at(&mut c), before - 1, "{} round {r}", C::name());
    }
    eprintln!(
        "{}: 5 rounds of {THREADS} copies under one key: each applied once, {} attempts retried after meeting the first copy's record",
        C::name(),
        RETRIED.swap(0, std::sync::atomic::Ordering::SeqCst)
    );
    // the control: the same eight moves without a key
    let before = at(&mut c);
    let (applied, _) = round(None);
    assert_eq!(applied, THREADS, "{}", C::name());
    assert_eq!(at(&mut c), before - THREADS, "{}: the control", C::name());
    sound(&mut c, &t, one);
    drop_tables(&mut c, &t);
}

#[test]
fn eight_copies_of_one_keyed_request_apply_it_once() {
    each_engine!(keyed_duplicates);
}
