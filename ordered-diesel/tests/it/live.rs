//! What a live, multi-user app needs from every write, on the real engines: the changes
//! each operation reports, the before-commit hook (committed, rolled back and retried with
//! the operation), the versioned read, error codes and statuses (the span and the
//! metrics: `observe.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use ordered_diesel::{Error, OrderingError, Placement, Position, RebalancePolicy, Request, Status};

fn outbox<C: TestConn>(c: &mut C, t: &Tables) -> String {
    let name = format!("{}_outbox", t.items);
    let q = |x: &str| ordered_core::adapter::sql::quote(C::DIALECT, x);
    c.exec(&format!("DROP TABLE IF EXISTS {}", q(&name)));
    c.exec(&format!("CREATE TABLE {} (item BIGINT NOT NULL)", q(&name)));
    name
}

fn note<C: TestConn>(c: &mut C, table: &str, item: Id) -> diesel::QueryResult<()> {
    let q = ordered_core::adapter::sql::quote(C::DIALECT, table);
    c.batch_execute(&format!("INSERT INTO {q} (item) VALUES ({item})"))
}

fn hook_commits_rolls_back_and_retries_with_the_operation<C: TestConn>(_: ()) {
    let (mut c, t) = setup::<C>(
        "live_hook",
        &TIGHT,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1)],
    );
    let table = outbox(&mut c, &t);
    let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "a");
    let b = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "b");
    let rows = |c: &mut C| {
        let int = if C::DIALECT == ordered_diesel::Dialect::Mysql {
            "SIGNED"
        } else {
            "BIGINT"
        };
        let q = ordered_core::adapter::sql::quote(C::DIALECT, &table);
        count(
            c,
            &format!("SELECT CAST(COUNT(*) AS {int}) AS o_count FROM {q}"),
        )
    };

    // committed with the move: one outbox row per changed row
    let moved = ord(&t)
        .apply(
            &mut c,
            Request::Move {
                item: b,
                at: Placement::Before(a),
            },
            |c, changes| {
                for ch in &changes.rows {
                    note(c, &table, ch.id)?;
                }
                Ok(())
            },
        )
        .unwrap();
    assert_eq!(moved.changes.rows.len(), 1, "{}", C::name());
    assert_eq!(moved.changes.rows[0].id, b);
    assert_eq!(
        rows(&mut c),
        1,
        "{}: the hook's row is committed",
        C::name()
    );

    // a failing hook rolls the whole operation back: the order, the version, the outbox
    let v = version(&mut c, &t, ordered_diesel::Id::Int(1));
    let failed = ord(&t).apply(
        &mut c,
        Request::Move {
            item: b,
            at: Placement::Last,
        },
        |c, _| {
            note(c, &table, Id::Int(-1))?;
            Err(DieselError::RollbackTransaction)
        },
    );
    assert!(
        matches!(
            failed,
            Err(Error::Database(DieselError::RollbackTransaction))
        ),
        "{failed:?}"
    );
    assert_eq!(
        ids(&mut c, &t, ordered_diesel::Id::Int(1)),
        [b, a],
        "{}: nothing moved",
        C::name()
    );
    assert_eq!(version(&mut c, &t, ordered_diesel::Id::Int(1)), v);
    assert_eq!(
        rows(&mut c),
        1,
        "{}: the hook's row is rolled back",
        C::name()
    );

    // a retryable failure in the hook retries the whole operation, hook included
    let mut calls = 0;
    let retried = ord(&t)
        .apply(
            &mut c,
            Request::Move {
                item: b,
                at: Placement::Last,
            },
            |c, changes| {
                calls += 1;
                note(c, &table, changes.rows[0].id)?;
                if calls == 1 {
                    return Err(DieselError::DatabaseError(
                        DatabaseErrorKind::SerializationFailure,
                        Box::new("could not serialize access (injected by the test)".to_owned()),
                    ));
                }
                Ok(())
            },
        )
        .unwrap();
    assert_eq!((calls, retried.attempts), (2, 2), "{}", C::name());
    assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(1)), [a, b]);
    assert_eq!(
        rows(&mut c),
        2,
        "{}: only the committed attempt's row is left",
        C::name()
    );

    // inserts: the hook sees the new row's id
    let mut seen = Vec::new();
    let inserted = ord(&t)
        .insert_with(
            &mut c,
            1,
            Placement::First,
            |c, slot| c.insert_item(&t, "c", &slot),
            |_, changes| {
                seen = changes.rows.iter().map(|r| r.id).collect();
                Ok(())
            },
        )
        .unwrap();
    assert_eq!(seen, [inserted.value], "{}", C::name());
    assert_eq!(inserted.outcome.changes.rows[0].id, inserted.value);
    // an insert has no row to insert through apply
    let refused = ord(&t).apply(
        &mut c,
        Request::Insert {
            parent: ordered_diesel::Id::Int(1),
            at: Placement::Last,
        },
        |_, _| Ok(()),
    );
    assert_eq!(refused.unwrap_err().code(), "invalid_request");
    drop_tables(&mut c, &t);
}

#[test]
fn hook() {
    each_engine!(hook_commits_rolls_back_and_retries_with_the_operation);
}

fn changes_list_relabels_and_summarise_above_the_limit<C: TestConn>(_: ()) {
    let (mut c, t) = setup::<C>(
        "live_changes",
        &TIGHT,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1), ordered_diesel::Id::Int(2)],
    );
    let first = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "0");
    let mut all = vec![first];
    // fill the gap after `first` until a relabel
    let relabel = loop {
        let r = ord(&t)
            .insert(&mut c, 1, Placement::After(first), |c, slot| {
                c.insert_item(&t, "x", &slot)
            })
            .unwrap();
        all.push(r.value);
        if r.outcome.relabelled > 0 {
            break r.outcome;
        }
    };
    let now = sound(&mut c, &t, ordered_diesel::Id::Int(1));
    for ch in &relabel.changes.rows {
        let row = now.iter().find(|r| r.id == ch.id).unwrap();
        assert_eq!(
            (row.parent, &row.position),
            (ch.parent, &ch.position),
            "{}",
            C::name()
        );
    }
    assert!(relabel.changes.rows.len() as u64 > relabel.relabelled);
    assert_eq!(relabel.changes.versions.len(), 1);
    assert_eq!(
        relabel.version,
        relabel.changes.version_of(&ordered_diesel::Id::Int(1))
    );

    // a cross-collection move reports the item in its new collection and both versions
    let moved = ord(&t)
        .move_to_parent(&mut c, first, 2, Placement::Last)
        .unwrap();
    assert_eq!(moved.changes.rows.len(), 1);
    assert_eq!(moved.changes.rows[0].parent, 2);
    let parents: Vec<Id> = moved.changes.versions.iter().map(|v| v.parent).collect();
    assert_eq!(
        parents,
        [1, 2],
        "{}: both collections, in lock order",
        C::name()
    );

    // a remove reports the removed id
    let gone = ord(&t).remove(&mut c, first).unwrap();
    assert_eq!(gone.changes.removed, [first]);

    // above the limit, a rebalance is a summary covering every row
    let n = ids(&mut c, &t, ordered_diesel::Id::Int(1)).len() as u64;
    let summary = ord(&t).changes_limit(2).rebalance(&mut c, 1).unwrap();
    assert!(summary.changes.rows.is_empty(), "{:?}", summary.changes);
    let [range] = &summary.changes.relabelled[..] else {
        panic!("one summarised range: {:?}", summary.changes)
    };
    assert_eq!(range.rows, n);
    for r in sound(&mut c, &t, ordered_diesel::Id::Int(1)) {
        assert!(
            range.first <= r.position && r.position <= range.last,
            "{}: {r:?} outside {range:?}",
            C::name()
        );
    }
    assert_eq!(
        (range.first.clone(), range.last.clone()),
        (Position::Int(4), Position::Int(4 * n as i64))
    );
    drop_tables(&mut c, &t);
}

#[test]
fn changes() {
    each_engine!(changes_list_relabels_and_summarise_above_the_limit);
}

fn versioned_read<C: TestConn>(_: ()) {
    let (mut c, t) = setup::<C>(
        "live_versioned",
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1), ordered_diesel::Id::Int(2)],
    );
    let empty = ord(&t).list_versioned(&mut c, 2).unwrap();
    assert_eq!(
        (empty.rows.len(), empty.version),
        (0, Some(0)),
        "{}",
        C::name()
    );
    let missing = ord(&t).list_versioned(&mut c, 99).unwrap_err();
    assert_eq!(
        missing.refusal(),
        Some(&OrderingError::ParentNotFound {
            parent: ordered_diesel::Id::Int(99)
        })
    );
    let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "a");
    let b = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "b");
    let seen = ord(&t).list_versioned(&mut c, 1).unwrap();
    assert_eq!(seen.rows, ord(&t).list(&mut c, 1).unwrap());
    assert_eq!(
        seen.version,
        Some(version(&mut c, &t, ordered_diesel::Id::Int(1)))
    );
    // a client that sends the version back wins once; a second client with it loses
    ord(&t)
        .expect_version(seen.version.unwrap())
        .move_before(&mut c, b, a)
        .unwrap();
    let late = ord(&t)
        .expect_version(seen.version.unwrap())
        .move_before(&mut c, a, b);
    assert_eq!(late.unwrap_err().code(), "version_conflict");
    drop_tables(&mut c, &t);
}

#[test]
fn versioned() {
    each_engine!(versioned_read);
}

fn error_codes_and_statuses<C: TestConn>(_: ()) {
    let (mut c, t) = setup::<C>(
        "live_errors",
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1)],
    );
    let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "a");
    let b = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "b");
    let x = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "x");
    let cases: Vec<(Error, &str, Status, u16)> = vec![
        (
            ord(&t)
                .move_between(&mut c, x, Some(b), Some(a))
                .unwrap_err(),
            "stale_neighbours",
            Status::Conflict,
            409,
        ),
        (
            ord(&t).move_before(&mut c, 999_999, a).unwrap_err(),
            "not_found",
            Status::NotFound,
            404,
        ),
        (
            ord(&t)
                .insert(&mut c, 42, Placement::Last, |c, s| {
                    c.insert_item(&t, "y", &s)
                })
                .unwrap_err(),
            "parent_not_found",
            Status::NotFound,
            404,
        ),
        (
            ord(&t).move_before(&mut c, a, a).unwrap_err(),
            "self_reference",
            Status::Unprocessable,
            422,
        ),
        (
            ord(&t).move_to_index(&mut c, a, 9).unwrap_err(),
            "index_out_of_range",
            Status::Unprocessable,
            422,
        ),
        (
            ord(&t)
                .expect_version(0)
                .move_to_end(&mut c, a)
                .unwrap_err(),
            "version_conflict",
            Status::Conflict,
            409,
        ),
    ];
    for (e, code, status, http) in cases {
        assert_eq!(
            (e.code(), e.status(), e.status().http()),
            (code, status, http),
            "{}: {e}",
            C::name()
        );
        let message = e.to_string();
        assert!(
            !message.contains("Some(") && !message.contains("None"),
            "{message}"
        );
    }
    drop_tables(&mut c, &t);
}

#[test]
fn errors() {
    each_engine!(error_codes_and_statuses);
}

fn adopting_an_existing_table<C: TestConn>(_: ()) {
    let (mut c, t) = setup::<C>(
        "live_adopt",
        &TIGHT,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1)],
    );
    // the generated migration: as the protocol needs it
    ord(&t).check_schema(&mut c).unwrap();

    // an app's own table, without a unique constraint on (scope, position)
    let q = |s: &str| ordered_core::adapter::sql::quote(C::DIALECT, s);
    let id = match C::DIALECT {
        ordered_diesel::Dialect::Postgres => "BIGSERIAL PRIMARY KEY",
        ordered_diesel::Dialect::Mysql => "BIGINT AUTO_INCREMENT PRIMARY KEY",
        ordered_diesel::Dialect::Sqlite => "INTEGER PRIMARY KEY",
    };
    c.exec(&format!("DROP TABLE {}", q(t.items)));
    c.exec(&format!(
        "CREATE TABLE {} (id {id}, parent_id BIGINT NOT NULL, title VARCHAR(100) NOT NULL, position BIGINT NOT NULL)",
        q(t.items)
    ));
    let e = ord(&t).check_schema(&mut c).unwrap_err();
    assert_eq!(e.code(), "schema_mismatch", "{}", C::name());
    assert!(e.to_string().contains("no unique constraint"), "{e}");

    // a plain unique index: enough where the library relabels through the temporary
    // range; on PostgreSQL the one-statement relabel needs it deferrable
    c.exec(&format!(
        "CREATE UNIQUE INDEX o_live_adopt_u ON {} (parent_id, position)",
        q(t.items)
    ));
    let checked = ord(&t).check_schema(&mut c);
    let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "a");
    let b = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "b");
    // a swap rewrites both rows in one statement on PostgreSQL, through a transient
    // duplicate that only a deferrable constraint lets pass (the other engines park the
    // rows in the temporary range first)
    let before = sound(&mut c, &t, ordered_diesel::Id::Int(1));
    let swapped = ord(&t).swap(&mut c, a, b);
    if C::DIALECT == ordered_diesel::Dialect::Postgres {
        let e = checked.unwrap_err();
        assert!(
            e.to_string().contains("DEFERRABLE INITIALLY IMMEDIATE"),
            "{e}"
        );
        // the write says the same, instead of pointing at verify and heal
        let at_write = swapped.unwrap_err();
        assert_eq!(at_write.code(), "schema_mismatch", "{at_write}");
        assert!(
            at_write.to_string().contains("not deferrable"),
            "{at_write}"
        );
        assert_eq!(
            sound(&mut c, &t, ordered_diesel::Id::Int(1)),
            before,
            "the refused swap wrote nothing"
        );
    } else {
        // the unique index is enough here; what is missing is the CHECK on the domain
        let e = checked.unwrap_err();
        assert!(e.to_string().contains("no CHECK constraint"), "{e}");
        swapped.unwrap();
        assert_eq!(
            ids(&mut c, &t, ordered_diesel::Id::Int(1)),
            [b, a],
            "{}",
            C::name()
        );
    }

    // the CHECK the refusal names: then only PostgreSQL's deferrable constraint is left
    let domain = ordered_diesel::migrations::check_constraint(C::DIALECT, &t.spec);
    if C::DIALECT == ordered_diesel::Dialect::Sqlite {
        // SQLite cannot add one: the table is rebuilt with it
        c.exec(&format!("DROP TABLE {}", q(t.items)));
        c.exec(&format!(
            "CREATE TABLE {} (id {id}, parent_id BIGINT NOT NULL, title VARCHAR(100) NOT NULL, position BIGINT NOT NULL CHECK ({domain}))",
            q(t.items)
        ));
        c.exec(&format!(
            "CREATE UNIQUE INDEX o_live_adopt_u ON {} (parent_id, position)",
            q(t.items)
        ));
    } else {
        c.exec(&format!(
            "ALTER TABLE {} ADD CONSTRAINT o_live_adopt_domain CHECK ({domain})",
            q(t.items)
        ));
    }
    let checked = ord(&t).check_schema(&mut c);
    if C::DIALECT == ordered_diesel::Dialect::Postgres {
        let e = checked.unwrap_err();
        assert!(e.to_string().contains("not deferrable"), "{e}");
    } else {
        checked.unwrap();
    }
    drop_tables(&mut c, &t);
}

#[test]
fn adopt() {
    each_engine!(adopting_an_existing_table);
}

/// A move finds its collection and locks it in one statement; when it had to wait for
/// that lock while a racing writer moved the item to another collection, the read under
/// the lock sees where the item is now, and the move is retried there: never planned
/// with the old collection's rows, never written there.
fn a_move_that_waited_for_its_lock_follows_the_item<C: TestConn>(_: ()) {
    let (mut c, t) = setup::<C>(
        "live_wait",
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1), ordered_diesel::Id::Int(2)],
    );
    let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "a");
    let x = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "x");
    let b = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "b");
    let d = add(&mut c, &t, ordered_diesel::Id::Int(2), Placement::Last, "d");
    let q = |s: &str| ordered_core::adapter::sql::quote(C::DIALECT, s);
    // the racing writer: holds both collections and moves x to the end of 2
    let mut holder = C::open(&t.db);
    holder.exec(ordered_core::adapter::sql::begin(C::DIALECT));
    for p in [1, 2] {
        holder.exec(&format!(
            "UPDATE {} SET {v} = {v} + 1 WHERE {} = {p}",
            q(t.parents),
            q("id"),
            v = q("version")
        ));
    }
    holder.exec(&format!(
        "UPDATE {} SET {} = 2, {} = 1000000 WHERE {} = {x}",
        q(t.items),
        q("parent_id"),
        q("position"),
        q("id")
    ));
    let spec = t.spec;
    let db = t.db.clone();
    let mover = std::thread::spawn(move || {
        let mut m = C::open(&db);
        ordered_diesel::OrderedTable::new(spec).apply(
            &mut m,
            Request::Move {
                item: x,
                at: Placement::First,
            },
            |_, _| Ok(()),
        )
    });
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert!(
        !mover.is_finished(),
        "{}: the move waits for the lock",
        C::name()
    );
    holder.exec("COMMIT");
    let moved = mover.join().unwrap().unwrap();
    assert_eq!(
        moved
            .changes
            .rows
            .iter()
            .map(|r| (r.id, r.parent))
            .collect::<Vec<_>>(),
        [(x, Id::Int(2))],
        "{}",
        C::name()
    );
    assert_eq!(
        ids(&mut c, &t, ordered_diesel::Id::Int(2)),
        [x, d],
        "{}",
        C::name()
    );
    assert_eq!(
        ids(&mut c, &t, ordered_diesel::Id::Int(1)),
        [a, b],
        "{}",
        C::name()
    );
    // the racing writer's bump and the move's: collection 2 only
    assert_eq!(
        version(&mut c, &t, ordered_diesel::Id::Int(1)),
        4,
        "{}",
        C::name()
    );
    assert_eq!(
        version(&mut c, &t, ordered_diesel::Id::Int(2)),
        3,
        "{}",
        C::name()
    );
    if C::DIALECT != ordered_diesel::Dialect::Sqlite {
        // it locked collection 1 first, saw x gone, and retried
        assert_eq!(moved.attempts, 2, "{}", C::name());
    }
    drop_tables(&mut c, &t);
}

#[test]
fn waited() {
    each_engine!(a_move_that_waited_for_its_lock_follows_the_item);
}

/// An insert that tells the library its new row's id (`Slot::inserted_id`, from its own
/// `RETURNING`) saves the statement that reads the id back; the changes carry that id.
fn an_insert_that_reports_its_id_is_not_read_back<C: TestConn>(_: ()) {
    let (mut c, t) = setup::<C>(
        "live_newid",
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1)],
    );
    let plain = ord(&t)
        .insert_last(&mut c, 1, |c, slot| c.insert_item(&t, "a", &slot))
        .unwrap();
    let told = ord(&t)
        .insert_last(&mut c, 1, |c, slot| {
            let id = c.insert_item(&t, "b", &slot)?;
            slot.inserted_id(id);
            Ok(id)
        })
        .unwrap();
    assert_eq!(
        told.outcome.statements + 1,
        plain.outcome.statements,
        "{}",
        C::name()
    );
    assert_eq!(
        plain.outcome.changes.rows[0].id,
        plain.value,
        "{}",
        C::name()
    );
    assert_eq!(told.outcome.changes.rows[0].id, told.value, "{}", C::name());
    assert_eq!(
        ids(&mut c, &t, ordered_diesel::Id::Int(1)),
        [plain.value, told.value]
    );
    drop_tables(&mut c, &t);
}

#[test]
fn reported_id() {
    each_engine!(an_insert_that_reports_its_id_is_not_read_back);
}

/// On every engine an operation's statements stay prepared on the connection: once each
/// shape has been seen, further moves prepare nothing new (Diesel's statement cache;
/// SQLite's own recompiles are avoided by the literal LIMITs `sql_text.rs` checks), and
/// a table recreated by another connection is planned again by the engine.
fn statements_kept_prepared<C: TestConn>(_: ()) {
    use std::sync::atomic::{AtomicUsize, Ordering as Atomic};
    use std::sync::{Arc, Mutex};

    let (mut c, t) = setup::<C>(
        "live_prepared",
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1)],
    );
    let mut items = Vec::new();
    for name in ["a", "b", "c", "d", "e", "f"] {
        items.push(add(
            &mut c,
            &t,
            1.into(),
            ordered_diesel::Placement::Last,
            name,
        ));
    }
    let cached = Arc::new(AtomicUsize::new(0));
    let cached_sql = Arc::new(Mutex::new(Vec::<String>::new()));
    let (n, sqls) = (Arc::clone(&cached), Arc::clone(&cached_sql));
    // the texts kept so far, for the failure messages
    let kept = || cached_sql.lock().map(|v| v.clone()).unwrap_or_default();
    c.set_instrumentation(move |ev: diesel::connection::InstrumentationEvent<'_>| {
        if let diesel::connection::InstrumentationEvent::CacheQuery { sql, .. } = ev {
            n.fetch_add(1, Atomic::SeqCst);
            if let Ok(mut v) = sqls.lock() {
                v.push(sql.to_owned());
            }
        }
    });
    let moves = |c: &mut C| {
        for (item, anchor) in [(0, 3), (1, 4), (2, 5), (3, 0)] {
            ord(&t).move_after(c, items[item], items[anchor]).unwrap();
        }
    };
    moves(&mut c);
    let after_first = cached.load(Atomic::SeqCst);
    moves(&mut c);
    let after_second = cached.load(Atomic::SeqCst);
    assert!(after_first > 0, "{}: nothing was kept prepared", C::name());
    assert_eq!(
        after_second,
        after_first,
        "{}: moves of the same shapes prepared again: {:?}",
        C::name(),
        kept()
    );
    // another connection drops and creates the tables again (new relation ids on
    // PostgreSQL): the statements this connection keeps are planned again by the
    // engine against the new tables (MariaDB prepares them again itself), on
    // PostgreSQL inside a caller's REPEATABLE READ transaction
    let mut other = C::open(&t.db);
    reset(&mut other, &t, &[ordered_diesel::Id::Int(1)]);
    let fresh: Vec<_> = ["x", "y", "z"]
        .into_iter()
        .map(|name| add(&mut other, &t, 1.into(), Placement::Last, name))
        .collect();
    if C::DIALECT == ordered_diesel::Dialect::Postgres {
        c.transaction::<_, Error, _>(|c| {
            c.batch_execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")?;
            ord(&t).move_after(c, fresh[0], fresh[2])?;
            ord(&t).move_after(c, fresh[1], fresh[0])
        })
    } else {
        ord(&t)
            .move_after(&mut c, fresh[0], fresh[2])
            .and_then(|_| ord(&t).move_after(&mut c, fresh[1], fresh[0]))
    }
    .unwrap_or_else(|e| panic!("{}: moves on recreated tables: {e}", C::name()));
    // the same texts: the statements kept from before ran on the new tables
    assert_eq!(
        cached.load(Atomic::SeqCst),
        after_second,
        "{}: {:?}",
        C::name(),
        kept()
    );
    assert_eq!(
        ids(&mut c, &t, 1.into()),
        vec![fresh[2], fresh[0], fresh[1]],
        "{}",
        C::name()
    );
    drop_tables(&mut c, &t);
}

#[test]
fn prepared() {
    each_engine!(statements_kept_prepared);
}

/// A rebalance on MySQL/SQLite relabels in one ranked pass when the planner sees few rows
/// in the way of the new positions (none, or up to 16 moved to their negations first), and
/// in two passes through the temporary range otherwise; every case keeps the order and
/// ends 1024 apart. PostgreSQL always takes one statement (its deferrable constraint).
fn rebalance_passes<C: TestConn>(_: ()) {
    let one = ordered_diesel::Id::Int(1);
    let (mut c, t) = setup::<C>("live_rebalance", &GAPPED, RebalancePolicy::Window, &[one]);
    let q = |s: &str| ordered_core::adapter::sql::quote(C::DIALECT, s);
    let mut statements = Vec::new();
    // none in the way (1000, 3000, ...), a few (2048, 3072, ...: each takes the place of
    // the one before), and more than 16 (the same shift over 20 rows)
    for (n, first) in [(3, 1000), (3, 2048), (20, 2048)] {
        c.exec(&format!("DELETE FROM {}", q(t.items)));
        let ids: Vec<Id> = (0..n)
            .map(|i| add(&mut c, &t, one, Placement::Last, &format!("r{i}")))
            .collect();
        // from the last row down, so that no row meets another at its new place
        for (i, id) in ids.iter().enumerate().rev() {
            let pos = first
                + 2000 * i as i64 * i64::from(first == 1000)
                + 1024 * i as i64 * i64::from(first != 1000);
            c.exec(&format!(
                "UPDATE {} SET {} = {pos} WHERE {} = {id}",
                q(t.items),
                q("position"),
                q("id")
            ));
        }
        let out = ord(&t).rebalance(&mut c, one).unwrap();
        statements.push(out.statements);
        let rows = sound(&mut c, &t, one);
        assert_eq!(
            rows.iter().map(|r| r.id).collect::<Vec<_>>(),
            ids,
            "{}",
            C::name()
        );
        let want: Vec<Position> = (1..=n as i64).map(|i| Position::Int(1024 * i)).collect();
        assert_eq!(
            rows.iter().map(|r| r.position.clone()).collect::<Vec<_>>(),
            want,
            "{}",
            C::name()
        );
    }
    let [none, few, many] = [statements[0], statements[1], statements[2]];
    if C::name() == "postgres" {
        assert_eq!((none, few, many), (none, none, none), "{}", C::name());
    } else {
        // one ranked pass; the few in the way add one statement; many take the two passes
        assert_eq!((few, many), (none + 1, none + 1), "{}", C::name());
    }
    drop_tables(&mut c, &t);
}

#[test]
fn rebalance() {
    each_engine!(rebalance_passes);
}

/// MySQL/MariaDB: the library's statements stay prepared, and one that an error ended
/// after its rows' metadata (here a deadlock; a lock wait timeout or a Galera abort ends
/// it the same way) runs again: the operation's retry, on the same connection, succeeds.
/// With MariaDB Connector/C's statement left in its "fetching" state by that error
/// (`conn::forget_after_failure`), the retry's first run of it waited for good; a
/// watchdog kills this test's own connection by its id after a minute, so that the test
/// fails instead.
#[cfg(feature = "mysql")]
#[test]
fn a_kept_statement_that_failed_runs_again() {
    use diesel::connection::{Connection, SimpleConnection};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering as Atomic};
    use std::sync::{Arc, mpsc};
    use std::time::{Duration, Instant};
    type C = diesel::MysqlConnection;
    if !enabled("mysql") {
        return;
    }
    let one = Id::Int(1);
    let (mut c, t) = setup::<C>("live_kept_failed", &GAPPED, RebalancePolicy::Window, &[one]);
    let items: Vec<Id> = ["a", "b", "c", "d"]
        .into_iter()
        .map(|n| add(&mut c, &t, one, Placement::Last, n))
        .collect();
    // a table of this test's own, that the other writer fills its transaction with: the
    // heavier transaction, so that InnoDB picks this connection's as the victim
    let side = format!("{}_side", t.items);
    c.exec(&format!("DROP TABLE IF EXISTS `{side}`"));
    c.exec(&format!(
        "CREATE TABLE `{side}` (id INT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB"
    ));
    c.exec(&format!(
        "INSERT INTO `{side}` SELECT seq, 0 FROM seq_1_to_500"
    ));
    let prepared = Arc::new(AtomicUsize::new(0));
    let n = Arc::clone(&prepared);
    c.set_instrumentation(move |ev: diesel::connection::InstrumentationEvent<'_>| {
        if let diesel::connection::InstrumentationEvent::CacheQuery { .. } = ev {
            n.fetch_add(1, Atomic::SeqCst);
        }
    });
    // the statements of a move to the end are kept
    ord(&t).move_to_end(&mut c, items[0]).unwrap();
    assert!(
        prepared.load(Atomic::SeqCst) > 0,
        "nothing was kept prepared"
    );
    let me = count(&mut c, "SELECT CAST(CONNECTION_ID() AS SIGNED) AS o_count");

    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (done, db) = (Arc::clone(&done), t.db.clone());
        std::thread::spawn(move || {
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(60) {
                if done.load(Atomic::SeqCst) {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let mut w = C::open(&db);
            let _ = w.batch_execute(&format!("KILL {me}"));
            true
        })
    };
    let (held, wait_held) = mpsc::channel();
    let other = {
        let (db, t, side) = (t.db.clone(), t.clone(), side.clone());
        // the warm-up moved the first item to the end
        let last = items[0];
        std::thread::spawn(move || {
            let mut b = C::open(&db);
            b.exec("BEGIN");
            b.exec(&format!("UPDATE `{side}` SET v = v + 1"));
            // the last row: the library's read of the moved item's new neighbour waits
            // here, after the read has sent the moved item's row
            b.exec(&format!(
                "UPDATE `{}` SET title = CONCAT(title, '') WHERE id = {last}",
                t.items
            ));
            held.send(()).unwrap();
            // once that read waits, ask for the parent row it holds: a deadlock
            let start = Instant::now();
            loop {
                // (MariaDB 10.11's innodb_trx does not list a transaction waiting in a
                // UNION: the processlist shows the read)
                let waiting = count(
                    &mut b,
                    &format!(
                        "SELECT COUNT(*) AS o_count FROM information_schema.processlist \
                         WHERE id = {me} AND command = 'Execute' AND info LIKE '%UNION ALL%'"
                    ),
                );
                if waiting > 0 || start.elapsed() > Duration::from_secs(20) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let won = b
                .batch_execute(&format!(
                    "UPDATE `{}` SET name = name WHERE id = 1",
                    t.parents
                ))
                .is_ok();
            b.exec("ROLLBACK");
            won
        })
    };
    wait_held.recv().unwrap();
    let before = prepared.load(Atomic::SeqCst);
    let moved = ord(&t).move_to_end(&mut c, items[1]);
    done.store(true, Atomic::SeqCst);
    let killed = watchdog.join().unwrap();
    let other_won = other.join().unwrap();
    assert!(
        !killed,
        "the retry hung on a kept statement: its connection was killed"
    );
    let moved = moved.unwrap_or_else(|e| panic!("move after the deadlock: {e}"));
    // the deadlock happened, and this connection was its victim
    assert!(other_won, "the other writer was the deadlock's victim");
    assert!(moved.attempts >= 2, "no retry, so no deadlock: {moved:?}");
    // the failure closed the kept statements: the retry prepared them again
    assert!(prepared.load(Atomic::SeqCst) > before);
    let want = [items[0], items[1]];
    let listed = ids(&mut c, &t, one);
    assert_eq!(&listed[2..], &want[..], "{listed:?}");
    sound(&mut c, &t, one);
    c.exec(&format!("DROP TABLE IF EXISTS `{side}`"));
    drop_tables(&mut c, &t);
}
