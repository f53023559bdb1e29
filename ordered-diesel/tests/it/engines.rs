//! Every operation against the real engines (SQLite always; PostgreSQL and MariaDB when
//! their URLs are set), with gapped integers and fractional keys.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::*;
use ordered_diesel::{Error, OrderingError, Placement, Position, RebalancePolicy};

fn playlist<C: TestConn>(_: ()) {
    for (sname, strategy) in strategies() {
        let (mut c, t) = setup::<C>(
            &format!("seed_{sname}"),
            strategy,
            RebalancePolicy::Window,
            &[ordered_diesel::Id::Int(1)],
        );
        let intro = add(
            &mut c,
            &t,
            ordered_diesel::Id::Int(1),
            Placement::Last,
            "Intro",
        );
        let demo = add(
            &mut c,
            &t,
            ordered_diesel::Id::Int(1),
            Placement::Last,
            "Demo",
        );
        let credits = add(
            &mut c,
            &t,
            ordered_diesel::Id::Int(1),
            Placement::Last,
            "Credits",
        );
        let moved = ord(&t).move_before(&mut c, credits, demo).unwrap();
        assert_eq!(
            moved.rows_written,
            1,
            "{}: a move into a gap writes one row",
            C::name()
        );
        let setup = add(
            &mut c,
            &t,
            ordered_diesel::Id::Int(1),
            Placement::Between {
                prev: Some(credits),
                next: Some(demo),
            },
            "Setup",
        );
        assert_eq!(
            ids(&mut c, &t, ordered_diesel::Id::Int(1)),
            [intro, credits, setup, demo],
            "{}",
            C::name()
        );
        ord(&t).rebalance(&mut c, 1).unwrap();
        assert_eq!(
            ids(&mut c, &t, ordered_diesel::Id::Int(1)),
            [intro, credits, setup, demo]
        );
        let positions: Vec<Position> = sound(&mut c, &t, ordered_diesel::Id::Int(1))
            .into_iter()
            .map(|r| r.position)
            .collect();
        let even: Vec<Position> = if sname == "gapped" {
            [1024, 2048, 3072, 4096].map(Position::Int).to_vec()
        } else {
            ["a0", "a1", "a2", "a3"].map(Position::from).to_vec()
        };
        assert_eq!(positions, even, "{} {sname}", C::name());
        drop_tables(&mut c, &t);
    }
}

#[test]
fn seeds_playlist_scenario() {
    each_engine!(playlist);
}

fn every_operation<C: TestConn>(_: ()) {
    for (sname, strategy) in strategies() {
        let (mut c, t) = setup::<C>(
            &format!("ops_{sname}"),
            strategy,
            RebalancePolicy::Window,
            &[ordered_diesel::Id::Int(1), ordered_diesel::Id::Int(2)],
        );
        let o = ord(&t);
        let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "a");
        let b = add(
            &mut c,
            &t,
            ordered_diesel::Id::Int(1),
            Placement::First,
            "b",
        ); // b a
        let d = add(
            &mut c,
            &t,
            ordered_diesel::Id::Int(1),
            Placement::After(a),
            "d",
        ); // b a d
        let e = add(
            &mut c,
            &t,
            ordered_diesel::Id::Int(1),
            Placement::Before(a),
            "e",
        ); // b e a d
        let f = add(
            &mut c,
            &t,
            ordered_diesel::Id::Int(1),
            Placement::Index(2),
            "f",
        ); // b e f a d
        let g = add(
            &mut c,
            &t,
            ordered_diesel::Id::Int(1),
            Placement::Between {
                prev: Some(f),
                next: Some(a),
            },
            "g",
        ); // b e f g a d
        let mut want = vec![b, e, f, g, a, d];
        assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(1)), want);
        let v0 = version(&mut c, &t, ordered_diesel::Id::Int(1));

        o.move_after(&mut c, b, d).unwrap(); // e f g a d b
        want = vec![e, f, g, a, d, b];
        assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(1)), want);
        o.move_to_start(&mut c, d).unwrap(); // d e f g a b
        o.move_to_end(&mut c, e).unwrap(); // d f g a b e
        o.move_between(&mut c, a, Some(d), Some(f)).unwrap(); // d a f g b e
        o.move_to_index(&mut c, d, 3).unwrap(); // a f g d b e
        o.move_up(&mut c, b).unwrap(); // a f g b d e
        o.move_down(&mut c, a).unwrap(); // f a g b d e
        o.swap(&mut c, f, e).unwrap(); // e a g b d f
        want = vec![e, a, g, b, d, f];
        assert_eq!(
            ids(&mut c, &t, ordered_diesel::Id::Int(1)),
            want,
            "{} {sname}",
            C::name()
        );
        assert_eq!(o.index_of(&mut c, b).unwrap(), 3);
        o.move_to_parent(&mut c, g, 2, Placement::First).unwrap();
        o.remove(&mut c, d).unwrap();
        want = vec![e, a, b, f];
        assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(1)), want);
        assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(2)), [g]);
        let reordered = vec![f, e, a, b];
        let out = o.reorder(&mut c, 1, &reordered).unwrap();
        assert_eq!(out.rows_written, 1, "reorder moves only f");
        assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(1)), reordered);
        // every write bumped the version (13 writes on parent 1 since v0)
        assert_eq!(
            version(&mut c, &t, ordered_diesel::Id::Int(1)),
            v0 + 11,
            "{} {sname}",
            C::name()
        );
        sound(&mut c, &t, ordered_diesel::Id::Int(1));
        sound(&mut c, &t, ordered_diesel::Id::Int(2));
        let report = o.verify(&mut c, 1).unwrap();
        assert_eq!(report.items, 4);
        drop_tables(&mut c, &t);
    }
}

#[test]
fn every_operation_on_every_engine() {
    each_engine!(every_operation);
}

fn stale_inputs<C: TestConn>(_: ()) {
    for (sname, strategy) in strategies() {
        let (mut c, t) = setup::<C>(
            &format!("stale_{sname}"),
            strategy,
            RebalancePolicy::Window,
            &[ordered_diesel::Id::Int(1), ordered_diesel::Id::Int(2)],
        );
        let o = ord(&t);
        let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "a");
        let b = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "b");
        let x = add(
            &mut c,
            &t,
            ordered_diesel::Id::Int(1),
            Placement::Between {
                prev: Some(a),
                next: Some(b),
            },
            "x",
        );
        let other = add(
            &mut c,
            &t,
            ordered_diesel::Id::Int(2),
            Placement::Last,
            "other",
        );
        let before = (o.list(&mut c, 1).unwrap(), o.list(&mut c, 2).unwrap());
        let v1 = version(&mut c, &t, ordered_diesel::Id::Int(1));
        let cases: Vec<(Result<ordered_diesel::Outcome, Error>, OrderingError)> = vec![
            (
                o.move_between(&mut c, b, Some(ordered_diesel::Id::Int(999)), None),
                OrderingError::NotFound {
                    id: ordered_diesel::Id::Int(999),
                },
            ),
            (
                o.move_before(&mut c, 999, a),
                OrderingError::NotFound {
                    id: ordered_diesel::Id::Int(999),
                },
            ),
            (
                o.move_after(&mut c, a, other),
                OrderingError::NotInCollection {
                    id: other,
                    parent: ordered_diesel::Id::Int(1),
                },
            ),
            (
                o.move_after(&mut c, a, a),
                OrderingError::SelfReference { id: a },
            ),
            (o.swap(&mut c, a, a), OrderingError::SelfReference { id: a }),
            (
                o.move_between(&mut c, b, None, Some(x)),
                OrderingError::StaleNeighbours {
                    prev: None,
                    next: Some(x),
                },
            ),
            (
                o.move_to_index(&mut c, a, 7),
                OrderingError::IndexOutOfRange { index: 7 },
            ),
            (
                o.reorder(&mut c, 1, &[a, b]),
                OrderingError::ReorderMismatch {
                    parent: ordered_diesel::Id::Int(1),
                    reason: "2 ids given for 3 items".into(),
                },
            ),
            (
                o.clone().expect_version(v1 - 1).move_to_end(&mut c, a),
                OrderingError::VersionConflict {
                    parent: ordered_diesel::Id::Int(1),
                    expected: v1 - 1,
                    actual: v1,
                },
            ),
        ];
        for (i, (got, want)) in cases.into_iter().enumerate() {
            let err = got.expect_err("must fail");
            assert_eq!(
                err.refusal(),
                Some(&want),
                "{} {sname} case {i}: {err}",
                C::name()
            );
            assert!(!err.is_retryable());
        }
        // a stale pair: x now sits between a and b
        let stale = o
            .clone()
            .retry(ordered_diesel::RetryPolicy::NONE)
            .insert_between(&mut c, 1, Some(a), Some(b), |c, s| {
                c.insert_item(&t, "late", &s)
            });
        assert_eq!(
            stale.unwrap_err().refusal(),
            Some(&OrderingError::StaleNeighbours {
                prev: Some(a),
                next: Some(b)
            })
        );
        // a missing parent
        let missing = o.insert_last(&mut c, 77, |c, s| c.insert_item(&t, "orphan", &s));
        assert_eq!(
            missing.unwrap_err().refusal(),
            Some(&OrderingError::ParentNotFound {
                parent: ordered_diesel::Id::Int(77)
            })
        );
        // nothing changed, not even the version
        assert_eq!(
            (o.list(&mut c, 1).unwrap(), o.list(&mut c, 2).unwrap()),
            before
        );
        assert_eq!(
            version(&mut c, &t, ordered_diesel::Id::Int(1)),
            v1,
            "{} {sname}: a refused write bumped the version",
            C::name()
        );
        // the right expected version passes and returns the next one
        let ok = o.clone().expect_version(v1).move_to_end(&mut c, a).unwrap();
        assert_eq!(ok.version, Some(v1 + 1));
        drop_tables(&mut c, &t);
    }
}

#[test]
fn stale_and_bad_requests_are_typed_and_change_nothing() {
    each_engine!(stale_inputs);
}

fn hot_gap<C: TestConn>(policy: RebalancePolicy) {
    for (sname, strategy) in [
        (
            "tight",
            &TIGHT as &'static dyn ordered_diesel::PositionStrategy,
        ),
        ("shortkeys", &SHORT_KEYS),
    ] {
        let test = format!("hot_{sname}_{policy:?}").to_lowercase();
        let (mut c, t) = setup::<C>(&test, strategy, policy, &[ordered_diesel::Id::Int(1)]);
        let mut want = Vec::new();
        for i in 0..20 {
            want.push(add(
                &mut c,
                &t,
                ordered_diesel::Id::Int(1),
                Placement::Last,
                &format!("base{i}"),
            ));
        }
        let anchor = want[10];
        let mut relabels = 0;
        for i in 0..60 {
            let o = ord(&t)
                .insert_after(&mut c, 1, anchor, |c, s| {
                    c.insert_item(&t, &format!("hot{i}"), &s)
                })
                .unwrap();
            relabels += u64::from(o.outcome.relabelled > 0);
            want.insert(11, o.value);
        }
        assert!(relabels > 0, "{} {test}: no relabel was forced", C::name());
        assert_eq!(
            ids(&mut c, &t, ordered_diesel::Id::Int(1)),
            want,
            "{} {test}",
            C::name()
        );
        let rows = sound(&mut c, &t, ordered_diesel::Id::Int(1));
        if let Some(cap) = strategy.kind().key_cap() {
            assert!(
                rows.iter()
                    .all(|r| r.position.as_key().unwrap().len() <= cap)
            );
        }
        // moves into the hot gap relabel too, and keep the order
        for i in 0..20 {
            let item = want[(i * 7) % want.len()];
            if item == anchor {
                continue;
            }
            ord(&t).move_after(&mut c, item, anchor).unwrap();
            want.retain(|x| *x != item);
            let at = want.iter().position(|x| *x == anchor).unwrap() + 1;
            want.insert(at, item);
        }
        assert_eq!(
            ids(&mut c, &t, ordered_diesel::Id::Int(1)),
            want,
            "{} {test} after moves",
            C::name()
        );
        sound(&mut c, &t, ordered_diesel::Id::Int(1));
        drop_tables(&mut c, &t);
    }
}

#[test]
fn hot_gap_relabels_under_window() {
    each_engine!(hot_gap, RebalancePolicy::Window);
}

#[test]
fn hot_gap_relabels_under_whole() {
    each_engine!(hot_gap, RebalancePolicy::Whole);
}

fn dense<C: TestConn>(_: ()) {
    let (mut c, t) = setup::<C>(
        "dense",
        &ordered_diesel::Dense,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1), ordered_diesel::Id::Int(2)],
    );
    let o = ord(&t);
    let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "a");
    let b = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "b");
    let d = add(
        &mut c,
        &t,
        ordered_diesel::Id::Int(1),
        Placement::First,
        "d",
    );
    let e = add(
        &mut c,
        &t,
        ordered_diesel::Id::Int(1),
        Placement::Index(1),
        "e",
    ); // d e a b
    o.move_to_end(&mut c, d).unwrap(); // e a b d
    o.move_before(&mut c, b, e).unwrap(); // b e a d
    o.move_to_parent(&mut c, e, 2, Placement::Last).unwrap(); // b a d | e
    o.remove(&mut c, b).unwrap(); // a d
    assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(1)), [a, d]);
    let pos: Vec<Position> = sound(&mut c, &t, ordered_diesel::Id::Int(1))
        .into_iter()
        .map(|r| r.position)
        .collect();
    assert_eq!(pos, [0, 1].map(Position::Int), "{}", C::name());
    assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(2)), [e]);
    drop_tables(&mut c, &t);
}

#[test]
fn dense_integers_stay_zero_to_n() {
    each_engine!(dense);
}

fn nested<C: TestConn>(_: ()) {
    let (mut c, t) = setup::<C>(
        "nested",
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1)],
    );
    let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "a");
    let b = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "b");
    // rolled back with the caller's transaction
    let r: Result<(), diesel::result::Error> = c.transaction(|c| {
        ord(&t).move_to_start(c, b)?;
        assert_eq!(ids(c, &t, ordered_diesel::Id::Int(1)), [b, a]);
        Err(diesel::result::Error::RollbackTransaction)
    });
    assert!(r.is_err());
    assert_eq!(
        ids(&mut c, &t, ordered_diesel::Id::Int(1)),
        [a, b],
        "{}",
        C::name()
    );
    // committed with it
    c.transaction::<_, diesel::result::Error, _>(|c| {
        ord(&t).move_to_start(c, b)?;
        Ok(())
    })
    .unwrap();
    assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(1)), [b, a]);
    // a refusal inside the caller's transaction leaves the caller's transaction usable
    c.transaction::<_, diesel::result::Error, _>(|c| {
        let e = ord(&t).move_after(c, a, a).unwrap_err();
        assert!(matches!(
            e.refusal(),
            Some(OrderingError::SelfReference { .. })
        ));
        ord(&t).move_to_start(c, a)?;
        Ok(())
    })
    .unwrap();
    assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(1)), [a, b]);
    drop_tables(&mut c, &t);
}

#[test]
fn works_inside_the_callers_transaction() {
    each_engine!(nested);
}

/// The library's own transaction, which it opens and commits with kept statements on
/// MySQL/MariaDB and SQLite instead of Diesel's text `BEGIN`: Diesel's transaction
/// manager sees it (the caller's insert runs at depth 1 and nests a savepoint), the
/// engine is really inside a transaction, at READ COMMITTED on the servers, and after a
/// commit, a refusal and a failed insert the connection is back at depth 0 and usable
/// with Diesel's own `transaction`.
fn own_transaction<C: TestConn>(_: ()) {
    use diesel::connection::{AnsiTransactionManager, TransactionManager};
    fn depth<C: TestConn>(c: &mut C) -> Option<u32> {
        AnsiTransactionManager::transaction_manager_status_mut(c)
            .transaction_depth()
            .unwrap()
            .map(std::num::NonZeroU32::get)
    }
    let (mut c, t) = setup::<C>(
        "own_tx",
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1)],
    );
    let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "a");
    let inserted = ord(&t)
        .insert_last(&mut c, 1, |c: &mut C, slot| {
            assert_eq!(depth(c), Some(1), "{}", C::name());
            match C::DIALECT {
                ordered_diesel::Dialect::Mysql => {
                    assert_eq!(count(c, "SELECT @@in_transaction AS o_count"), 1);
                    // the lock statement has started InnoDB's transaction by now
                    assert_eq!(
                        count(
                            c,
                            "SELECT COUNT(*) AS o_count FROM information_schema.innodb_trx \
                             WHERE trx_mysql_thread_id = CONNECTION_ID() \
                             AND trx_isolation_level = 'READ COMMITTED'"
                        ),
                        1
                    );
                }
                ordered_diesel::Dialect::Postgres => assert_eq!(
                    count(
                        c,
                        "SELECT CAST(CASE WHEN current_setting('transaction_isolation') = 'read committed' THEN 1 ELSE 0 END AS BIGINT) AS o_count"
                    ),
                    1
                ),
                ordered_diesel::Dialect::Sqlite => {}
            }
            // the caller's own nested transaction is a savepoint of the library's
            let nested: Result<(), diesel::result::Error> = c.transaction(|c| {
                assert_eq!(depth(c), Some(2));
                Err(diesel::result::Error::RollbackTransaction)
            });
            assert!(nested.is_err());
            assert_eq!(depth(c), Some(1));
            c.insert_item(&t, "b", &slot)
        })
        .unwrap()
        .value;
    assert_eq!(depth(&mut c), None, "{}", C::name());
    // a second connection sees the commit: it is not left open on this one
    let mut other = C::open(&t.db);
    assert_eq!(
        ids(&mut other, &t, ordered_diesel::Id::Int(1)),
        [a, inserted]
    );
    // a refusal and a failed insert end the transaction too, with nothing kept
    assert!(ord(&t).move_after(&mut c, a, a).is_err());
    assert_eq!(depth(&mut c), None);
    let failed = ord(&t).insert_first(&mut c, 1, |c: &mut C, slot| {
        c.insert_item(&t, "c", &slot)?;
        Err::<ordered_diesel::Id, _>(diesel::result::Error::RollbackTransaction)
    });
    assert!(failed.is_err());
    assert_eq!(depth(&mut c), None);
    assert_eq!(
        ids(&mut other, &t, ordered_diesel::Id::Int(1)),
        [a, inserted]
    );
    // and Diesel's own transactions run as before
    c.transaction::<_, diesel::result::Error, _>(|c| {
        assert_eq!(depth(c), Some(1));
        ord(&t).move_to_start(c, inserted)?;
        Ok(())
    })
    .unwrap();
    assert_eq!(
        ids(&mut other, &t, ordered_diesel::Id::Int(1)),
        [inserted, a]
    );
    drop(other);
    drop_tables(&mut c, &t);
}

#[test]
fn the_librarys_own_transaction_is_one_diesel_knows() {
    each_engine!(own_transaction);
}
