//! Property tests: random inserts and moves keep every collection strictly ordered,
//! unique and inside its domain, under every strategy and rebalance policy; arbitrary
//! strings never make the key functions panic.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::HashMap;

use ordered_core::model::Store;
use ordered_core::{
    Dense, Error, Fractional, Gapped, Id, Numeric, Placement, PositionStrategy, RebalancePolicy,
    Request, Spec, key,
};
use proptest::prelude::*;

fn spec(strategy: &'static dyn PositionStrategy, policy: RebalancePolicy) -> Spec {
    Spec::new("items", "parent_id", "parents")
        .with_strategy(strategy)
        .with_policy(policy)
}

static SMALL_GAP: Gapped = Gapped::new(8);
/// Floats whose gaps fill after a few halvings (spacing 8, full under 1/16).
static SMALL_FLOATS: Numeric = Numeric::float(8.0).with_min_gap(1.0 / 16.0);
/// `NUMERIC(9, 2)`: a gap of 100 units halves six times.
static DECIMALS: Numeric = Numeric::decimal(9, 2);
static SHORT_KEYS: Fractional = Fractional::new(ordered_core::key::Alphabet::BASE62, 12);

/// A tiny deterministic generator (xorshift), so that failures replay.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Applies one random operation to the store and to a plain `Vec` model, and checks
/// that both agree. Returns whether the operation was refused with `Exhausted`.
fn random_op(store: &mut Store, model: &mut HashMap<Id, Vec<Id>>, rng: &mut Rng) -> bool {
    let parent = Id::Int(1 + rng.below(2) as i64);
    let list = model.entry(parent).or_default().clone();
    let placement = |rng: &mut Rng, list: &[Id]| -> (Placement, usize) {
        let i = rng.below(list.len() + 1);
        let pl = match rng.below(6) {
            0 => return (Placement::First, 0),
            1 => return (Placement::Last, list.len()),
            2 if i > 0 => Placement::After(list[i - 1]),
            3 if i < list.len() => Placement::Before(list[i]),
            4 => Placement::Between {
                prev: i.checked_sub(1).map(|j| list[j]),
                next: list.get(i).copied(),
            },
            _ => Placement::Index(i as u64),
        };
        (pl, i)
    };
    let kind = rng.below(20);
    let result: Result<(), Error> = if kind < 8 || list.len() < 3 {
        let (at, i) = placement(rng, &list);
        store.insert(parent, at).map(|id| {
            model.get_mut(&parent).unwrap().insert(i, id);
        })
    } else if kind < 14 {
        let item = list[rng.below(list.len())];
        let rest: Vec<Id> = list.iter().copied().filter(|x| *x != item).collect();
        let (at, i) = placement(rng, &rest);
        store.apply(&Request::Move { item, at }).map(|_| {
            let v = model.get_mut(&parent).unwrap();
            v.retain(|x| *x != item);
            v.insert(i, item);
        })
    } else if kind < 16 {
        let item = list[rng.below(list.len())];
        let other = Id::Int(3 - parent.as_int().unwrap_or(1));
        let dest = model.entry(other).or_default().clone();
        let (at, i) = placement(rng, &dest);
        store
            .apply(&Request::MoveToParent {
                item,
                parent: other,
                at,
            })
            .map(|_| {
                model.get_mut(&parent).unwrap().retain(|x| *x != item);
                model.get_mut(&other).unwrap().insert(i, item);
            })
    } else if kind < 17 {
        let (a, b) = (list[rng.below(list.len())], list[rng.below(list.len())]);
        if a == b {
            assert!(matches!(
                store.apply(&Request::Swap { a, b }),
                Err(Error::SelfReference { .. })
            ));
            Ok(())
        } else {
            store.apply(&Request::Swap { a, b }).map(|_| {
                let v = model.get_mut(&parent).unwrap();
                let (ia, ib) = (
                    v.iter().position(|x| *x == a).unwrap(),
                    v.iter().position(|x| *x == b).unwrap(),
                );
                v.swap(ia, ib);
            })
        }
    } else if kind < 18 {
        let item = list[rng.below(list.len())];
        store.apply(&Request::Remove { item }).map(|_| {
            model.get_mut(&parent).unwrap().retain(|x| *x != item);
        })
    } else if kind < 19 {
        let item = list[rng.below(list.len())];
        let up = rng.below(2) == 0;
        let req = if up {
            Request::MoveUp { item }
        } else {
            Request::MoveDown { item }
        };
        store.apply(&req).map(|_| {
            let v = model.get_mut(&parent).unwrap();
            let i = v.iter().position(|x| *x == item).unwrap();
            if up && i > 0 {
                v.swap(i, i - 1);
            } else if !up && i + 1 < v.len() {
                v.swap(i, i + 1);
            }
        })
    } else {
        // reorder: rotate a random slice
        let mut ids = list.clone();
        let (a, b) = (rng.below(ids.len()), rng.below(ids.len()));
        let (a, b) = (a.min(b), a.max(b));
        ids[a..=b].rotate_left(1);
        store
            .apply(&Request::Reorder {
                parent,
                ids: ids.clone(),
            })
            .map(|_| {
                model.insert(parent, ids);
            })
    };
    match result {
        Ok(()) => false,
        Err(Error::Exhausted) => true,
        Err(e) => panic!("unexpected error {e:?}"),
    }
}

fn check(store: &Store, spec: &Spec, model: &HashMap<Id, Vec<Id>>) {
    for (parent, ids) in model {
        let rows = store.list(*parent);
        assert_eq!(&rows.iter().map(|r| r.id).collect::<Vec<_>>(), ids);
        let report = ordered_core::verify(spec, &rows);
        assert!(report.is_ok(), "{report:?}");
        assert!(rows.windows(2).all(|w| w[0].position < w[1].position));
    }
}

fn run(
    strategy: &'static dyn PositionStrategy,
    policy: RebalancePolicy,
    ops: usize,
    seed: u64,
) -> u64 {
    let spec = spec(strategy, policy);
    let mut store = Store::new(spec);
    let mut model = HashMap::new();
    let mut rng = Rng(seed);
    let mut exhausted = 0;
    for i in 0..ops {
        exhausted += u64::from(random_op(&mut store, &mut model, &mut rng));
        // keep lists at a few hundred items so that moves stay interesting
        for parent in [Id::Int(1), Id::Int(2)] {
            while model.get(&parent).map_or(0, Vec::len) > 400 {
                let id = model.get_mut(&parent).unwrap().remove(0);
                store.apply(&Request::Remove { item: id }).unwrap();
            }
        }
        if i % 997 == 0 {
            check(&store, &spec, &model);
        }
    }
    check(&store, &spec, &model);
    exhausted
}

#[test]
fn hundred_thousand_random_ops_gapped_window() {
    assert_eq!(run(&SMALL_GAP, RebalancePolicy::Window, 100_000, 7), 0);
}

#[test]
fn hundred_thousand_random_ops_gapped_whole() {
    assert_eq!(run(&SMALL_GAP, RebalancePolicy::Whole, 100_000, 11), 0);
}

#[test]
fn hundred_thousand_random_ops_fractional_window() {
    assert_eq!(run(&SHORT_KEYS, RebalancePolicy::Window, 100_000, 13), 0);
}

#[test]
fn hundred_thousand_random_ops_fractional_whole() {
    assert_eq!(run(&SHORT_KEYS, RebalancePolicy::Whole, 100_000, 17), 0);
}

#[test]
fn hundred_thousand_random_ops_dense() {
    assert_eq!(run(&Dense, RebalancePolicy::Window, 100_000, 19), 0);
}

#[test]
fn hundred_thousand_random_ops_numeric_window() {
    assert_eq!(run(&SMALL_FLOATS, RebalancePolicy::Window, 100_000, 29), 0);
}

#[test]
fn hundred_thousand_random_ops_numeric_whole() {
    assert_eq!(run(&SMALL_FLOATS, RebalancePolicy::Whole, 100_000, 31), 0);
}

#[test]
fn hundred_thousand_random_ops_decimal_window() {
    assert_eq!(run(&DECIMALS, RebalancePolicy::Window, 100_000, 37), 0);
}

#[test]
fn hundred_thousand_random_ops_float_default_window() {
    assert_eq!(
        run(&Numeric::FLOAT, RebalancePolicy::Window, 100_000, 41),
        0
    );
}

#[test]
fn never_policy_refuses_cleanly() {
    // small gaps exhaust quickly; refusals must leave the model and store equal
    let n = run(&SMALL_GAP, RebalancePolicy::Never, 20_000, 23);
    assert!(n > 0, "the Never policy should have refused at least once");
}

#[test]
fn hot_gap_stays_bounded_under_window() {
    for strategy in [
        &SMALL_GAP as &'static dyn PositionStrategy,
        &SHORT_KEYS,
        &Gapped::DEFAULT,
        &Fractional::DEFAULT,
        &SMALL_FLOATS,
        &DECIMALS,
        &Numeric::FLOAT,
    ] {
        let spec = spec(strategy, RebalancePolicy::Window);
        let mut store = Store::new(spec);
        let a = store.insert(1, Placement::Last).unwrap();
        store.insert(1, Placement::Last).unwrap();
        for _ in 0..100_000 {
            store.insert(1, Placement::After(a)).unwrap();
        }
        let rows = store.list(1);
        assert_eq!(rows.len(), 100_002);
        assert!(ordered_core::verify(&spec, &rows).is_ok());
        let s = store.stats();
        // amortized rows per insert stays small (the whole-list policy would be ~n/gap)
        let per_insert = s.rows_written as f64 / s.ops as f64;
        assert!(
            per_insert < 64.0,
            "{strategy:?}: {per_insert} rows per insert"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn key_functions_never_panic(a in ".{0,40}", b in ".{0,40}", n in 0usize..50) {
        let a = Some(a.as_str()).filter(|s| !s.is_empty() || a.len() % 2 == 0);
        let b = Some(b.as_str());
        let _ = key::key_between(a, b);
        let _ = key::key_between(a, None);
        let _ = key::key_between(None, b);
        let _ = key::n_keys_between(a, b, n);
        let _ = key::key_between_unique(a, b, "r1");
        let _ = key::validate(a.unwrap_or(""));
    }

    #[test]
    fn generated_keys_are_strictly_between(
        steps in proptest::collection::vec((0usize..1000, 0usize..2), 1..300)
    ) {
        let mut keys: Vec<String> = Vec::new();
        for (r, which) in steps {
            let i = r % (keys.len() + 1);
            let a = i.checked_sub(1).map(|j| keys[j].as_str());
            let b = keys.get(i).map(String::as_str);
            let k = match which {
                0 => key::key_between(a, b).unwrap(),
                _ => key::key_between_unique(a, b, "x7").unwrap(),
            };
            prop_assert!(a.is_none_or(|a| a < k.as_str()));
            prop_assert!(b.is_none_or(|b| k.as_str() < b));
            keys.insert(i, k);
        }
    }

    #[test]
    fn n_keys_are_sorted_and_inside(n in 0usize..200, i in 0usize..5) {
        let bounds = [(None, None), (Some("a0"), None), (None, Some("a0")), (Some("a0"), Some("a1")), (Some("Zz"), Some("a0V"))];
        let (a, b) = bounds[i];
        let ks = key::n_keys_between(a, b, n).unwrap();
        prop_assert_eq!(ks.len(), n);
        prop_assert!(ks.windows(2).all(|w| w[0] < w[1]));
        prop_assert!(ks.iter().all(|k| a.is_none_or(|a| a < k.as_str()) && b.is_none_or(|b| k.as_str() < b)));
    }

    #[test]
    fn gapped_between_is_strictly_inside(a in 1i64..=ordered_core::MAX_POSITION, b in 1i64..=ordered_core::MAX_POSITION) {
        let g = Gapped::DEFAULT;
        let (pa, pb) = (a.into(), b.into());
        match g.between(Some(&pa), Some(&pb)).unwrap() {
            Some(p) => { let p = p.as_int().unwrap(); prop_assert!(a < p && p < b); }
            None => prop_assert!(b - a < 2),
        }
        if let Some(p) = g.between(Some(&pa), None).unwrap() { prop_assert!(p.as_int().unwrap() > a); }
        if let Some(p) = g.between(None, Some(&pb)).unwrap() { prop_assert!(p.as_int().unwrap() < b && p.as_int().unwrap() >= 1); }
    }

    #[test]
    fn numeric_between_is_strictly_inside_and_min_gap_apart(a in 0.0f64..1e9, b in 0.0f64..1e9) {
        for n in [Numeric::FLOAT, SMALL_FLOATS, DECIMALS] {
            let (a, b) = match n.decimal_digits() {
                // on the decimal's grid and inside its domain
                Some(_) => {
                    let grid = |v: f64| ((v * 100.0).round() % (n.max() * 100.0)).round() / 100.0;
                    (grid(a), grid(b))
                }
                None => (a, b),
            };
            let pa = ordered_core::Position::Num(a.try_into().unwrap());
            let pb = ordered_core::Position::Num(b.try_into().unwrap());
            match n.between(Some(&pa), Some(&pb)).unwrap() {
                Some(p) => {
                    let p = p.as_num().unwrap();
                    prop_assert!(a < p && p < b);
                    prop_assert!(p - a >= n.min_gap() && b - p >= n.min_gap());
                    prop_assert!(n.check(&ordered_core::Position::Num(p.try_into().unwrap())).is_ok());
                }
                None => prop_assert!(b - a < 2.0 * n.min_gap() + n.min_gap() || a >= b),
            }
            if let Some(p) = n.between(Some(&pa), None).unwrap() { prop_assert!(p.as_num().unwrap() > a); }
            if let Some(p) = n.between(None, Some(&pb)).unwrap() { let p = p.as_num().unwrap(); prop_assert!(p < b && p > 0.0); }
        }
    }
}
