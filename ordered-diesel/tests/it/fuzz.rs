//! The public API fuzzed against the in-memory model (`ordered_core::model::Store`, the
//! same planner with no database): random sequences of every write, with valid and
//! invalid input (unknown ids, ids of another type, a key with control characters,
//! anchors in the other list, huge indexes, a missing parent, reorders that are empty,
//! short, doubled or oversized), through the Diesel adapter, per engine and strategy.
//! After every step the adapter and the model agree on the answer (the same success, or
//! the same refusal code), a refusal left the table as it was, and every list holds the
//! same items at the same positions in both. No input makes the library panic.
//!
//! `ORDERED_FUZZ_CASES` sets the sequences per strategy (25 by default, 200 operations
//! each: 10,000 operations per engine); the failing sequence is shrunk and printed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::BTreeMap;

use crate::common::*;
use ordered_core::model::Store;
use ordered_diesel::{OrderingError, Placement, PositionStrategy, RebalancePolicy, Request};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// An item as a step names it: the `n`th one created (modulo how many there are), one
/// that does not exist, a string key (of the wrong type for these integer keys), or a
/// string with control characters.
#[derive(Debug, Clone, Copy)]
enum Sel {
    Nth(usize),
    Unknown,
    WrongType,
    Control,
}

#[derive(Debug, Clone, Copy)]
enum At {
    First,
    Last,
    Before(Sel),
    After(Sel),
    Between(Option<Sel>, Option<Sel>),
    Index(u64),
}

/// How a reorder names the list: exactly its items (shuffled by the seed), one short, one
/// twice, none, or far too many.
#[derive(Debug, Clone, Copy)]
enum Order {
    Exact(u64),
    Short,
    Doubled,
    Empty,
    Oversized,
}

#[derive(Debug, Clone)]
enum Op {
    /// Into list 1 or 2, or 3: a parent that does not exist.
    Insert(u8, At),
    Move(Sel, At),
    MoveToParent(Sel, u8, At),
    MoveUp(Sel),
    MoveDown(Sel),
    Swap(Sel, Sel),
    Remove(Sel),
    Reorder(u8, Order),
    Rebalance(u8),
}

fn sel() -> impl Strategy<Value = Sel> {
    prop_oneof![
        40 => (0..64_usize).prop_map(Sel::Nth),
        1 => Just(Sel::Unknown),
        1 => Just(Sel::WrongType),
        1 => Just(Sel::Control),
    ]
}

fn at() -> impl Strategy<Value = At> {
    prop_oneof![
        2 => Just(At::First),
        3 => Just(At::Last),
        3 => sel().prop_map(At::Before),
        3 => sel().prop_map(At::After),
        4 => (proptest::option::of(sel()), proptest::option::of(sel()))
            .prop_map(|(p, n)| At::Between(p, n)),
        2 => prop_oneof![8 => 0..20_u64, 1 => Just(u64::MAX), 1 => Just(1 << 62)].prop_map(At::Index),
    ]
}

fn list() -> impl Strategy<Value = u8> {
    prop_oneof![20 => 1..=2_u8, 1 => Just(3_u8)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (list(), at()).prop_map(|(l, a)| Op::Insert(l, a)),
        8 => (sel(), at()).prop_map(|(s, a)| Op::Move(s, a)),
        3 => (sel(), list(), at()).prop_map(|(s, l, a)| Op::MoveToParent(s, l, a)),
        2 => sel().prop_map(Op::MoveUp),
        2 => sel().prop_map(Op::MoveDown),
        2 => (sel(), sel()).prop_map(|(a, b)| Op::Swap(a, b)),
        2 => sel().prop_map(Op::Remove),
        2 => (list(), prop_oneof![
            4 => any::<u64>().prop_map(Order::Exact),
            1 => Just(Order::Short),
            1 => Just(Order::Doubled),
            1 => Just(Order::Empty),
            1 => Just(Order::Oversized),
        ])
            .prop_map(|(l, o)| Op::Reorder(l, o)),
        1 => list().prop_map(Op::Rebalance),
    ]
}

/// The parent key of list `l` (3: none has it).
fn parent(l: u8) -> Id {
    Id::Int(if l == 3 { 77 } else { i64::from(l) })
}

/// One run: the database and the model, and the items created so far as (database id,
/// model id), in creation order.
struct Run<'a, C: TestConn> {
    conn: &'a mut C,
    t: &'a Tables,
    model: Store,
    items: Vec<(Id, Id)>,
}

/// Lists 1 and 2, each as (database id, position) in order.
type Lists = Vec<Vec<(Id, String)>>;

/// An answer as both sides give it: success, or the refusal's code.
fn code<T>(r: &Result<T, OrderingError>) -> &'static str {
    match r {
        Ok(_) => "ok",
        Err(e) => e.code(),
    }
}

impl<C: TestConn> Run<'_, C> {
    /// Item `s` for (the database, the model); `None` for the model when only the
    /// database can be asked (a key of another type).
    fn item(&self, s: Sel) -> (Id, Option<Id>) {
        match s {
            Sel::Nth(n) if !self.items.is_empty() => {
                let (d, m) = self.items[n % self.items.len()];
                (d, Some(m))
            }
            Sel::Nth(_) | Sel::Unknown => (Id::Int(999_999), Some(Id::Int(999_999))),
            Sel::WrongType => (Id::text("card-7").unwrap(), None),
            Sel::Control => (Id::text("a\u{0}b\u{7}\n").unwrap(), None),
        }
    }

    fn at(&self, a: At) -> (Placement, Option<Placement>) {
        let one = |s: Sel| self.item(s);
        match a {
            At::First => (Placement::First, Some(Placement::First)),
            At::Last => (Placement::Last, Some(Placement::Last)),
            At::Before(s) => {
                let (d, m) = one(s);
                (Placement::Before(d), m.map(Placement::Before))
            }
            At::After(s) => {
                let (d, m) = one(s);
                (Placement::After(d), m.map(Placement::After))
            }
            At::Between(p, n) => {
                let (dp, mp) = p
                    .map(one)
                    .map_or((None, Some(None)), |(d, m)| (Some(d), m.map(Some)));
                let (dn, mn) = n
                    .map(one)
                    .map_or((None, Some(None)), |(d, m)| (Some(d), m.map(Some)));
                (
                    Placement::Between { prev: dp, next: dn },
                    mp.zip(mn)
                        .map(|(prev, next)| Placement::Between { prev, next }),
                )
            }
            At::Index(i) => (Placement::Index(i), Some(Placement::Index(i))),
        }
    }

    /// Lists 1 and 2 on the database side and the model's.
    fn lists(&mut self) -> (Lists, Lists) {
        let back: BTreeMap<Id, Id> = self.items.iter().map(|&(d, m)| (m, d)).collect();
        let mut db = Vec::new();
        let mut model = Vec::new();
        for l in 1..=2 {
            db.push(
                ord(self.t)
                    .list(self.conn, parent(l))
                    .unwrap()
                    .into_iter()
                    .map(|r| (r.id, r.position.to_string()))
                    .collect(),
            );
            model.push(
                self.model
                    .list(parent(l))
                    .into_iter()
                    .map(|r| (back[&r.id], r.position.to_string()))
                    .collect(),
            );
        }
        (db, model)
    }

    /// One step: the same request on both sides, then the answers and the lists
    /// compared.
    fn step(&mut self, i: usize, op: &Op) -> Result<&'static str, TestCaseError> {
        let (before, _) = self.lists();
        let (db, model): (Result<(), OrderingError>, Option<Result<(), OrderingError>>) = match op {
            Op::Insert(l, a) => {
                let (d, m) = self.at(*a);
                let t = self.t;
                let r = ord(t)
                    .insert(self.conn, parent(*l), d, |c: &mut C, slot| {
                        c.insert_item(t, &format!("f{i}"), &slot)
                    })
                    .map_err(refusal);
                let made = r.as_ref().ok().map(|x| x.value);
                // the model has no parent table: a missing parent is the database's
                let m = m
                    .filter(|_| *l != 3)
                    .map(|m| self.model.insert(parent(*l), m));
                if let (Some(d), Some(Ok(m))) = (made, &m) {
                    self.items.push((d, *m));
                }
                (r.map(|_| ()), m.map(|m| m.map(|_| ())))
            }
            other => {
                let Some((d, m)) = self.request(other) else {
                    return Ok("skipped");
                };
                let r = ord(self.t)
                    .apply(self.conn, d, |_, _| Ok(()))
                    .map(|_| ())
                    .map_err(refusal);
                let m = m.map(|m| self.model.apply(&m).map(|_| ()));
                (r, m)
            }
        };
        let (after, modelled) = self.lists();
        if db.is_err() {
            prop_assert_eq!(
                &before,
                &after,
                "step {} {:?}: a refusal wrote: {:?}",
                i,
                op,
                db
            );
        }
        match &model {
            Some(m) => {
                prop_assert_eq!(
                    code(&db),
                    code(m),
                    "step {} {:?}: the adapter said {:?}, the model {:?}",
                    i,
                    op,
                    db,
                    m
                );
            }
            // what only the database sees: a key of another type, a missing parent
            None => prop_assert!(
                matches!(
                    code(&db),
                    "wrong_key_type" | "parent_not_found" | "not_found" | "not_in_collection"
                ),
                "step {} {:?}: {:?}",
                i,
                op,
                db
            ),
        }
        prop_assert_eq!(&after, &modelled, "step {} {:?}: the lists differ", i, op);
        Ok(code(&db))
    }

    /// A request other than an insert, for (the database, the model); `None` for the
    /// model when it is the database's alone.
    fn request(&self, op: &Op) -> Option<(Request, Option<Request>)> {
        let both = |d: Request, m: Option<Request>| Some((d, m));
        match *op {
            Op::Move(s, a) => {
                let ((di, mi), (da, ma)) = (self.item(s), self.at(a));
                both(
                    Request::Move { item: di, at: da },
                    mi.zip(ma).map(|(item, at)| Request::Move { item, at }),
                )
            }
            Op::MoveToParent(s, l, a) => {
                let ((di, mi), (da, ma)) = (self.item(s), self.at(a));
                let p = parent(l);
                both(
                    Request::MoveToParent {
                        item: di,
                        parent: p,
                        at: da,
                    },
                    mi.zip(ma)
                        .filter(|_| l != 3)
                        .map(|(item, at)| Request::MoveToParent {
                            item,
                            parent: p,
                            at,
                        }),
                )
            }
            Op::MoveUp(s) => {
                let (d, m) = self.item(s);
                both(
                    Request::MoveUp { item: d },
                    m.map(|item| Request::MoveUp { item }),
                )
            }
            Op::MoveDown(s) => {
                let (d, m) = self.item(s);
                both(
                    Request::MoveDown { item: d },
                    m.map(|item| Request::MoveDown { item }),
                )
            }
            Op::Swap(a, b) => {
                let ((da, ma), (db, mb)) = (self.item(a), self.item(b));
                both(
                    Request::Swap { a: da, b: db },
                    ma.zip(mb).map(|(a, b)| Request::Swap { a, b }),
                )
            }
            Op::Remove(s) => {
                let (d, m) = self.item(s);
                both(
                    Request::Remove { item: d },
                    m.map(|item| Request::Remove { item }),
                )
            }
            Op::Rebalance(l) => both(
                Request::Rebalance { parent: parent(l) },
                (l != 3).then(|| Request::Rebalance { parent: parent(l) }),
            ),
            Op::Reorder(l, order) => {
                let shown = self.model.ids(parent(l));
                let fwd: BTreeMap<Id, Id> = self.items.iter().map(|&(d, m)| (m, d)).collect();
                let mut ids: Vec<Id> = shown.clone();
                match order {
                    Order::Exact(seed) => {
                        let mut x = seed | 1;
                        for k in (1..ids.len()).rev() {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            ids.swap(k, (x % (k as u64 + 1)) as usize);
                        }
                    }
                    Order::Short => {
                        ids.pop();
                    }
                    Order::Doubled => {
                        if let Some(&f) = ids.first() {
                            ids.push(f);
                        }
                    }
                    Order::Empty => ids.clear(),
                    Order::Oversized => {
                        ids.extend((0..5_000).map(|k| Id::Int(1_000_000 + k)));
                    }
                }
                let db_ids = ids
                    .iter()
                    .map(|m| fwd.get(m).copied().unwrap_or(*m))
                    .collect();
                both(
                    Request::Reorder {
                        parent: parent(l),
                        ids: db_ids,
                    },
                    (l != 3).then_some(Request::Reorder {
                        parent: parent(l),
                        ids,
                    }),
                )
            }
            Op::Insert(..) => None,
        }
    }
}

/// The library's refusal, or the test fails: a database failure is not an answer here.
fn refusal(e: ordered_diesel::Error) -> OrderingError {
    match e.refusal() {
        Some(r) => r.clone(),
        None => panic!("not a refusal: {e}"),
    }
}

fn fuzz<C: TestConn>(_: ()) {
    let cases: u32 = std::env::var("ORDERED_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(25);
    for (sname, strategy) in [
        ("tight", &TIGHT as &'static dyn PositionStrategy),
        ("shortkeys", &SHORT_KEYS),
    ] {
        let (conn, t) = setup::<C>(
            &format!("fuzz_{sname}"),
            strategy,
            RebalancePolicy::Window,
            &[Id::Int(1), Id::Int(2)],
        );
        let mut runner = TestRunner::new(Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        });
        // the closure proptest runs is `Fn`: the connection and the tally are shared
        let conn = std::cell::RefCell::new(conn);
        let tally: std::cell::RefCell<BTreeMap<&'static str, u64>> = Default::default();
        let result = runner.run(&proptest::collection::vec(op(), 200), |ops| {
            let mut conn = conn.borrow_mut();
            reset(&mut *conn, &t, &[Id::Int(1), Id::Int(2)]);
            let mut run = Run {
                conn: &mut *conn,
                t: &t,
                model: Store::new(t.spec),
                items: Vec::new(),
            };
            for (i, op) in ops.iter().enumerate() {
                let said = run.step(i, op)?;
                *tally.borrow_mut().entry(said).or_default() += 1;
            }
            for l in 1..=2 {
                sound(run.conn, &t, parent(l));
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("{} {sname}: {e}", C::name());
        }
        let tally = tally.into_inner();
        let total: u64 = tally.values().sum();
        eprintln!(
            "fuzz {} {sname}: {total} operations, answers {tally:?}",
            C::name()
        );
        drop_tables(&mut *conn.borrow_mut(), &t);
    }
}

#[test]
fn every_operation_with_any_input_agrees_with_the_model() {
    each_engine!(fuzz);
}
