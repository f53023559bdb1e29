//! The protocol state machine, driven statement by statement with scripted replies:
//! what it does when the item moved while the operation waited for a lock, and the
//! Galera flavour's refusal and replication checks.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use ordered_core::Id;
use ordered_core::adapter::{Action, Arg, Operation, Reply, Returns, Statement, sql};
use ordered_core::{Dialect, Error, Placement, Position, Request, Row, Spec};

const SPEC: Spec = Spec::new("items", "parent_id", "parents").with_version("version");

fn row(id: i64, parent: i64, pos: i64) -> Row {
    Row {
        id: Id::Int(id),
        parent: Id::Int(parent),
        position: Position::Int(pos),
    }
}

fn execute(a: Result<Action, Error>) -> Statement {
    match a {
        Ok(Action::Execute(s)) => s,
        other => panic!("expected a statement, got {other:?}"),
    }
}

/// The race of a cross-parent move that waited for its locks: parent 1 = [1, 2], parent
/// 2 = [3]. A holder locks parent 1; A moves item 2 to parent 2 and waits; B asks the
/// same and waits, having read item 2 in parent 1. When B gets its locks, item 2 is in
/// parent 2: B must not bump parent 1, check its expected version against parent 1, or
/// move the item within parent 2 under those locks.
#[test]
fn a_move_whose_item_changed_collection_while_it_waited_is_retried() {
    let req = Request::MoveToParent {
        item: Id::Int(2),
        parent: Id::Int(2),
        at: Placement::First,
    };
    let mut op = Operation::new(SPEC, Dialect::Postgres, req.clone());
    // the unlocked read: item 2 in parent 1
    let read = execute(op.next(Reply::None));
    assert_eq!(read.returns, Returns::Rows);
    // locks in increasing id order: 1, then 2
    let lock1 = execute(op.next(Reply::Rows(vec![row(2, 1, 2048)])));
    assert!(lock1.sql.starts_with("UPDATE \"parents\""), "{}", lock1.sql);
    let lock2 = execute(op.next(Reply::Parents(vec![(Id::Int(1), 3)])));
    assert_eq!(lock2.returns, Returns::Parent);
    // under the locks, the item is read again (with the head of parent 2, in one
    // statement) before anything is checked
    let again = execute(op.next(Reply::Parents(vec![(Id::Int(2), 1)])));
    assert_eq!(again.returns, Returns::Tagged);
    assert!(again.sql.contains("WHERE \"id\" = $1"), "{}", again.sql);
    assert_eq!(again.args[0], Arg::I64(2));
    // it is now in parent 2: not the version conflict of parent 1, and not a plan
    let err = op
        .next(Reply::Tagged(vec![(0, row(2, 2, 1024))]))
        .unwrap_err();
    assert_eq!(err, Error::ParentChanged { id: Id::Int(2) });
    assert!(err.is_retryable());

    // a client that expected parent 1 at version 2 read a list that has changed since
    // (parent 1 is at 3 now): refused, not retried against parent 2's version
    let mut op = Operation::new(SPEC, Dialect::Postgres, req).expect_version(Some(2));
    execute(op.next(Reply::None));
    execute(op.next(Reply::Rows(vec![row(2, 1, 2048)])));
    execute(op.next(Reply::Parents(vec![(Id::Int(1), 3)])));
    execute(op.next(Reply::Parents(vec![(Id::Int(2), 2)])));
    let err = op
        .next(Reply::Tagged(vec![(0, row(2, 2, 1024))]))
        .unwrap_err();
    assert_eq!(
        err,
        Error::VersionConflict {
            parent: Id::Int(1),
            expected: 2,
            actual: 3
        }
    );
}

#[test]
fn the_item_still_in_place_is_planned_with_its_own_collection_version() {
    let req = Request::MoveToParent {
        item: Id::Int(2),
        parent: Id::Int(2),
        at: Placement::First,
    };
    let mut op = Operation::new(SPEC, Dialect::Postgres, req.clone()).expect_version(Some(7));
    execute(op.next(Reply::None));
    execute(op.next(Reply::Rows(vec![row(2, 1, 2048)])));
    execute(op.next(Reply::Parents(vec![(Id::Int(1), 3)])));
    execute(op.next(Reply::Parents(vec![(Id::Int(2), 1)])));
    // item 2 is still in parent 1, whose version is 3: the expected version is checked
    // against parent 1
    let err = op
        .next(Reply::Tagged(vec![
            (0, row(2, 1, 2048)),
            (1, row(3, 2, 1024)),
        ]))
        .unwrap_err();
    assert_eq!(
        err,
        Error::VersionConflict {
            parent: Id::Int(1),
            expected: 7,
            actual: 3
        }
    );

    // at the right version it plans from the one read of the item and parent 2's
    // head, then writes
    let mut op = Operation::new(SPEC, Dialect::Postgres, req).expect_version(Some(3));
    execute(op.next(Reply::None));
    execute(op.next(Reply::Rows(vec![row(2, 1, 2048)])));
    execute(op.next(Reply::Parents(vec![(Id::Int(1), 3)])));
    let fused = execute(op.next(Reply::Parents(vec![(Id::Int(2), 1)])));
    assert!(
        fused.sql.contains("UNION ALL") && fused.sql.contains("ORDER BY \"position\" LIMIT"),
        "{}",
        fused.sql
    );
    let write = execute(op.next(Reply::Tagged(vec![
        (0, row(2, 1, 2048)),
        (1, row(3, 2, 1024)),
    ])));
    assert!(write.sql.starts_with("UPDATE \"items\""), "{}", write.sql);
    match op.next(Reply::Affected(1)) {
        Ok(Action::Done(o)) => {
            assert_eq!(o.position, Some(Position::Int(1024 - 32)));
            // the version of the collection the item came from, after its bump
            assert_eq!(o.version, Some(4));
        }
        other => panic!("expected done, got {other:?}"),
    }
}

#[test]
fn a_single_collection_move_whose_item_left_is_retried_or_refused() {
    let req = Request::Move {
        item: Id::Int(2),
        at: Placement::Last,
    };
    let run = |expected: Option<i64>| {
        let mut op = Operation::new(SPEC, Dialect::Postgres, req.clone()).expect_version(expected);
        // one statement locks the collection the item is in
        let lock = execute(op.next(Reply::None));
        assert!(
            lock.sql.starts_with("UPDATE \"parents\"")
                && lock
                    .sql
                    .contains("= (SELECT \"parent_id\" FROM \"items\" WHERE \"id\" = $1)"),
            "{}",
            lock.sql
        );
        // then one reads the item and the tail of that collection, under the lock
        let fused = execute(op.next(Reply::Parents(vec![(Id::Int(1), 9)])));
        assert_eq!(fused.returns, Returns::Tagged);
        op.next(Reply::Tagged(vec![(0, row(2, 4, 1024))]))
            .unwrap_err()
    };
    // no expected version, or the one parent 1 is at: retried from the start
    assert_eq!(run(None), Error::ParentChanged { id: Id::Int(2) });
    assert_eq!(run(Some(9)), Error::ParentChanged { id: Id::Int(2) });
    // an older one: the client's list is stale
    assert_eq!(
        run(Some(5)),
        Error::VersionConflict {
            parent: Id::Int(1),
            expected: 5,
            actual: 9
        }
    );
}

/// A move whose lock through the item finds nothing reads the item to say why: the item
/// is gone (`NotFound`), or its parent is (`ParentNotFound`).
#[test]
fn a_move_that_locks_nothing_says_whether_the_item_or_its_parent_is_missing() {
    let req = Request::Move {
        item: Id::Int(2),
        at: Placement::First,
    };
    for d in [Dialect::Postgres, Dialect::Mysql, Dialect::Sqlite] {
        let mut op = Operation::new(SPEC, d, req.clone());
        let lock = execute(op.next(Reply::None));
        assert_eq!(lock.returns, Returns::Parent);
        let read = execute(op.next(Reply::Parents(vec![])));
        assert_eq!(read.returns, Returns::Rows);
        assert_eq!(
            op.next(Reply::Rows(vec![])).unwrap_err(),
            Error::NotFound { id: Id::Int(2) }
        );

        let mut op = Operation::new(SPEC, d, req.clone());
        execute(op.next(Reply::None));
        execute(op.next(Reply::Parents(vec![])));
        // the item is in parent 5, which the plain lock does not find either (on
        // MySQL that lock is the bump, which updates no row)
        let lock = execute(op.next(Reply::Rows(vec![row(2, 5, 1024)])));
        let missing = if d == Dialect::Mysql {
            assert_eq!(lock.returns, Returns::Nothing);
            Reply::Affected(0)
        } else {
            assert_eq!(lock.returns, Returns::Parent);
            Reply::Parents(vec![])
        };
        assert_eq!(
            op.next(missing).unwrap_err(),
            Error::ParentNotFound { parent: Id::Int(5) }
        );
    }
}

/// On MySQL the lock through the item is a locking read; the bump of the parent it found
/// follows, then one fused read under the lock. On SQLite (`BEGIN IMMEDIATE` is the lock)
/// the bump answers the parent itself, a statement fewer.
#[test]
fn the_bump_follows_a_lock_through_the_item_on_mysql_and_answers_it_on_sqlite() {
    let req = Request::Move {
        item: Id::Int(2),
        at: Placement::Before(Id::Int(3)),
    };
    for d in [Dialect::Mysql, Dialect::Sqlite] {
        let mut op = Operation::new(SPEC, d, req.clone());
        let lock = execute(op.next(Reply::None));
        let locked = Reply::Parents(vec![(Id::Int(7), 4)]);
        let fused = if d == Dialect::Mysql {
            assert!(lock.sql.starts_with("SELECT"), "{}", lock.sql);
            let bump = execute(op.next(locked));
            assert!(bump.sql.starts_with("UPDATE"), "{}", bump.sql);
            assert_eq!(bump.args, [Arg::I64(7)]);
            execute(op.next(Reply::Affected(1)))
        } else {
            assert!(
                lock.sql.starts_with("UPDATE") && lock.sql.contains(" RETURNING "),
                "{}",
                lock.sql
            );
            execute(op.next(locked))
        };
        assert_eq!(fused.returns, Returns::Tagged);
        // item 2, anchor 3, and the row before 3 (leaving 2 out): 1
        let write = execute(op.next(Reply::Tagged(vec![
            (0, row(2, 7, 4096)),
            (1, row(3, 7, 2048)),
            (2, row(1, 7, 1024)),
        ])));
        assert!(write.sql.starts_with("UPDATE"), "{}", write.sql);
        match op.next(Reply::Affected(1)) {
            Ok(Action::Done(o)) => {
                assert_eq!(o.position, Some(Position::Int(1536)));
                assert_eq!(o.version, Some(5));
                assert_eq!(o.statements, if d == Dialect::Mysql { 4 } else { 3 });
            }
            other => panic!("expected done, got {other:?}"),
        }
    }
}

#[test]
fn galera_refuses_a_spec_without_a_version_column_before_any_statement() {
    let spec = SPEC.without_version();
    let mut op = Operation::new(
        spec,
        Dialect::Mysql,
        Request::Insert {
            parent: Id::Int(1),
            at: Placement::Last,
        },
    )
    .on_galera();
    assert_eq!(
        op.next(Reply::None).unwrap_err(),
        Error::VersionColumnRequired {
            table: "items".into()
        }
    );
    // on a single server the same spec runs
    let mut plain = Operation::new(
        spec,
        Dialect::Mysql,
        Request::Insert {
            parent: Id::Int(1),
            at: Placement::Last,
        },
    );
    assert!(execute(plain.next(Reply::None)).sql.contains("FOR UPDATE"));
}

/// Drives an insert into an empty parent on a Galera node; `replicated` is the reply to
/// the check before COMMIT.
fn galera_insert(replicated: i64) -> (Vec<Statement>, Result<Action, Error>) {
    let mut op = Operation::new(
        SPEC,
        Dialect::Mysql,
        Request::Insert {
            parent: Id::Int(1),
            at: Placement::Last,
        },
    )
    .on_galera();
    let mut seen = Vec::new();
    let mark = execute(op.next(Reply::None));
    seen.push(mark.clone());
    // on MySQL an insert's lock is the bump; its version comes with the fused read
    let lock = execute(op.next(Reply::Affected(0)));
    assert_eq!(lock.returns, Returns::Nothing);
    seen.push(lock);
    let fused = execute(op.next(Reply::Affected(1)));
    assert_eq!(fused.returns, Returns::Tagged);
    seen.push(fused);
    // the edge (no rows) is part 0, the parent's version before the bump part 1
    match op.next(Reply::Tagged(vec![(1, row(1, 1, 6))])) {
        Ok(Action::Insert { .. }) => {}
        other => panic!("expected the caller's insert, got {other:?}"),
    }
    // the inserted row's id, for the changes
    let found = execute(op.next(Reply::Inserted));
    assert_eq!(
        found,
        sql::at(Dialect::Mysql, &SPEC, Id::Int(1), &Position::Int(1024))
    );
    let row = Row {
        id: Id::Int(42),
        parent: Id::Int(1),
        position: Position::Int(1024),
    };
    let check = execute(op.next(Reply::Rows(vec![row])));
    seen.push(check);
    (seen, op.next(Reply::Count(replicated)))
}

#[test]
fn galera_brackets_the_transaction_with_the_replication_check() {
    let (seen, done) = galera_insert(1);
    assert_eq!(seen[0], sql::galera::mark());
    assert!(seen[1].sql.starts_with("UPDATE"), "{}", seen[1].sql);
    assert!(seen[2].sql.contains("FOR UPDATE"), "{}", seen[2].sql);
    assert_eq!(seen.last(), Some(&sql::galera::intact()));
    let Ok(Action::Done(outcome)) = done else {
        panic!("expected the end, got {done:?}");
    };
    // the version read back under the lock, plus the bump
    assert_eq!(outcome.version, Some(7));
    let ids: Vec<_> = outcome
        .changes
        .rows
        .iter()
        .map(|c| (c.id, c.parent))
        .collect();
    assert_eq!(ids, [(Id::Int(42), Id::Int(1))]);

    // a GTID written since the mark: statements ran outside the transaction
    let (_, partial) = galera_insert(0);
    let err = partial.unwrap_err();
    assert_eq!(err, Error::PartiallyApplied { parent: Id::Int(1) });
    assert!(!err.is_retryable());

    // after COMMIT the same check must see a new GTID
    assert_eq!(sql::galera::check_committed(1), Err(Error::CommitDropped));
    assert!(Error::CommitDropped.is_retryable());
    assert_eq!(sql::galera::check_committed(0), Ok(()));

    // a failed attempt: a new GTID after a lock is a partial operation; before any
    // lock (no mark of this attempt) or with the GTID unchanged it is not
    assert_eq!(
        sql::galera::check_escaped(Some(0), Some(Id::Int(4))),
        Some(Error::PartiallyApplied { parent: Id::Int(4) })
    );
    assert_eq!(sql::galera::check_escaped(Some(0), None), None);
    assert_eq!(sql::galera::check_escaped(Some(1), Some(Id::Int(4))), None);
    assert_eq!(sql::galera::check_escaped(None, Some(Id::Int(4))), None);
}

#[test]
fn the_galera_probe_tells_servers_without_galera_apart() {
    assert!(sql::galera::is_not_galera(
        "Unknown system variable 'wsrep_sync_wait'"
    ));
    assert!(sql::galera::is_not_galera(
        "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near 'STATEMENT wsrep_sync_wait = 1 FOR SELECT"
    ));
    assert!(!sql::galera::is_not_galera(
        "Lock wait timeout exceeded; try restarting transaction"
    ));
}

#[test]
fn keys_of_another_type_and_a_filter_on_dense_positions_are_refused_before_any_statement() {
    let uuid_spec = SPEC
        .with_id_type(ordered_core::KeyType::Uuid)
        .with_parent_type(ordered_core::KeyType::Uuid);
    let card = Id::Uuid(ordered_core::id::Uuid::from_u128(1));
    for (spec, req) in [
        // an integer where the table keys items by UUID
        (
            uuid_spec,
            Request::Move {
                item: card,
                at: Placement::After(Id::Int(7)),
            },
        ),
        // a string collection key for an integer table
        (
            SPEC,
            Request::Insert {
                parent: Id::text("board").unwrap(),
                at: Placement::Last,
            },
        ),
    ] {
        let mut op = Operation::new(spec, Dialect::Postgres, req);
        assert!(
            matches!(op.next(Reply::None), Err(Error::WrongKeyType { .. })),
            "{spec:?}"
        );
    }
    let dense = SPEC
        .with_strategy(&ordered_core::Dense)
        .with_filter("archived = 0");
    let mut op = Operation::new(
        dense,
        Dialect::Sqlite,
        Request::Rebalance { parent: Id::Int(1) },
    );
    assert!(matches!(
        op.next(Reply::None),
        Err(Error::InvalidRequest(_))
    ));
}

#[test]
fn a_list_per_two_columns_locks_its_parent_row_once() {
    use ordered_core::ScopeColumn;
    const CARDS: Spec = Spec::new("cards", "board_id", "boards")
        .with_version("version")
        .with_split_by(&[ScopeColumn::text("status")]);
    let list = |b: i64, s: &str| Id::from((b, Id::text(s).unwrap()));
    // the board alone names no list: refused before any statement
    let mut bare = Operation::new(
        CARDS,
        Dialect::Postgres,
        Request::Insert {
            parent: Id::Int(1),
            at: Placement::Last,
        },
    );
    assert!(matches!(
        bare.next(Reply::None),
        Err(Error::WrongScope { .. })
    ));
    // a move to another list of the same board: one lock, of the board's row
    let mut op = Operation::new(
        CARDS,
        Dialect::Postgres,
        Request::MoveToParent {
            item: Id::Int(5),
            parent: list(1, "done"),
            at: Placement::Last,
        },
    );
    let Ok(Action::Execute(read)) = op.next(Reply::None) else {
        panic!("expected the item's read")
    };
    assert!(read.sql.contains("\"status\""), "{}", read.sql);
    let item = Row {
        id: Id::Int(5),
        parent: list(1, "todo"),
        position: 1024.into(),
    };
    let Ok(Action::Execute(lock)) = op.next(Reply::Rows(vec![item])) else {
        panic!("expected the lock")
    };
    assert!(lock.sql.starts_with("UPDATE \"boards\""), "{}", lock.sql);
    let Ok(Action::Execute(next)) = op.next(Reply::Parents(vec![(Id::Int(1), 3)])) else {
        panic!("expected the reads under the lock")
    };
    assert!(
        !next.sql.contains("\"boards\""),
        "a second lock: {}",
        next.sql
    );
    assert_eq!(op.locked(), [Id::Int(1)]);
}

#[test]
fn a_list_with_no_parent_table_is_locked_by_an_upsert_of_its_lock_row() {
    for d in [Dialect::Postgres, Dialect::Mysql, Dialect::Sqlite] {
        let mut op = Operation::new(
            Spec::without_parent("tasks", "list_id"),
            d,
            Request::Insert {
                parent: Id::Int(7),
                at: Placement::Last,
            },
        );
        let Ok(Action::Execute(lock)) = op.next(Reply::None) else {
            panic!("expected the lock")
        };
        assert!(
            lock.sql.starts_with("INSERT INTO") && lock.sql.contains("ordered_locks"),
            "{d:?}: {}",
            lock.sql
        );
        assert!(
            lock.sql.contains(if d == Dialect::Mysql {
                "ON DUPLICATE KEY UPDATE"
            } else {
                "ON CONFLICT"
            }),
            "{d:?}: {}",
            lock.sql
        );
    }
    // the global list takes Id::GLOBAL only
    let mut op = Operation::new(
        Spec::global("steps"),
        Dialect::Sqlite,
        Request::Rebalance { parent: Id::Int(1) },
    );
    assert!(matches!(
        op.next(Reply::None),
        Err(Error::WrongScope { .. })
    ));
}

/// A tree's move to another parent: the item is read, then the root list's lock row is
/// upserted first without a bump (`version + 0`), then the two lists' rows, each bumped;
/// under those locks the planner reads the new parent's ancestors (one recursive
/// query) and refuses the move when the item is among them.
#[test]
fn a_tree_move_locks_the_root_first_and_refuses_a_cycle_under_it() {
    use ordered_core::{Position, Row};
    let spec = Spec::tree("folders", "parent_id");
    let row = |id: i64, parent: Id| Row {
        id: Id::Int(id),
        parent,
        position: Position::Int(1024),
    };
    // 1 is below 5; 3 is below 1: moving 1 under 3 makes a cycle
    let mut op = Operation::new(
        spec,
        Dialect::Postgres,
        Request::MoveToParent {
            item: Id::Int(1),
            parent: Id::Int(3),
            at: Placement::Last,
        },
    );
    let Ok(Action::Execute(read)) = op.next(Reply::None) else {
        panic!("expected the unlocked read of the item")
    };
    assert!(read.sql.contains("WHERE \"id\" = "), "{}", read.sql);
    let mut next = op.next(Reply::Rows(vec![row(1, Id::Int(5))]));
    let mut locks = Vec::new();
    while let Ok(Action::Execute(s)) = &next {
        if !s.sql.contains("ordered_locks") {
            break;
        }
        locks.push(s.clone());
        next = op.next(Reply::Count(4));
    }
    assert_eq!(locks.len(), 3, "{locks:?}");
    assert_eq!(op.locked(), [Id::ROOT, Id::Int(3), Id::Int(5)]);
    // the root's lock row: named '' and kept at its version
    assert_eq!(
        locks[0].args[1],
        ordered_core::adapter::Arg::Text(String::new())
    );
    assert!(locks[0].sql.contains("+ 0"), "{}", locks[0].sql);
    assert!(locks[1].sql.contains("+ 1"), "{}", locks[1].sql);
    // the item again, under the locks
    let Ok(Action::Execute(again)) = next else {
        panic!("expected the item read under the locks: {next:?}")
    };
    assert!(!again.sql.contains("RECURSIVE"), "{}", again.sql);
    let reply = match again.returns {
        ordered_core::adapter::Returns::Tagged => Reply::Tagged(vec![(0, row(1, Id::Int(5)))]),
        _ => Reply::Rows(vec![row(1, Id::Int(5))]),
    };
    let next = op.next(reply);
    let Ok(Action::Execute(up)) = next else {
        panic!("expected the ancestors read: {next:?} after {again:?}")
    };
    assert!(up.sql.contains("WITH RECURSIVE"), "{}", up.sql);
    assert!(up.sql.contains("IS NOT NULL"), "{}", up.sql);
    // 3 is below 1, which is below 5, a root
    let chain = vec![row(3, Id::Int(1)), row(1, Id::Int(5)), row(5, Id::ROOT)];
    assert_eq!(
        op.next(Reply::Rows(chain)),
        Err(Error::WouldCycle {
            id: Id::Int(1),
            parent: Id::Int(3)
        })
    );
}

/// The root list of a nullable scope reads with `IS NULL` (never `= NULL`), and an
/// association row is addressed by its list and its own key.
#[test]
fn root_lists_read_is_null_and_links_name_both_key_columns() {
    use ordered_core::adapter::sql;
    let tasks = Spec::without_parent("tasks", "project_id").with_nullable_scope();
    for d in [Dialect::Postgres, Dialect::Mysql, Dialect::Sqlite] {
        let list = sql::list(d, &tasks, Id::ROOT);
        assert!(
            list.sql.contains("project_id") && list.sql.contains(" IS NULL"),
            "{}",
            list.sql
        );
        assert!(!list.sql.contains("= NULL"), "{}", list.sql);
        let some = sql::list(d, &tasks, Id::Int(4));
        assert!(!some.sql.contains("IS NULL"), "{}", some.sql);
    }
    // a nullable scope with a parent table is refused before any statement
    let mut op = Operation::new(
        Spec::new("tasks", "project_id", "projects").with_nullable_scope(),
        Dialect::Sqlite,
        Request::Rebalance { parent: Id::ROOT },
    );
    assert!(matches!(
        op.next(Reply::None),
        Err(Error::InvalidRequest(_))
    ));

    let entries = Spec::link("playlist_tracks", "playlist_id", "playlists", "track_id");
    let mut op = Operation::new(
        entries,
        Dialect::Postgres,
        Request::Remove {
            item: Id::from((7, 42)),
        },
    );
    let Ok(Action::Execute(lock)) = op.next(Reply::None) else {
        panic!("expected the lock")
    };
    // the lock through the item's row names both columns
    assert!(
        lock.sql
            .contains("\"track_id\" = $1 AND \"playlist_id\" = $2"),
        "{}",
        lock.sql
    );
    assert_eq!(
        lock.args,
        [
            ordered_core::adapter::Arg::I64(42),
            ordered_core::adapter::Arg::I64(7)
        ]
    );
    // a track alone names no link
    let mut op = Operation::new(
        entries,
        Dialect::Postgres,
        Request::Remove { item: Id::Int(42) },
    );
    assert!(matches!(
        op.next(Reply::None),
        Err(Error::WrongLinkKey { .. })
    ));
}

/// On MySQL a lock by the parent's key is the bump itself, and the version the parent
/// had comes back as one more part of the first read under the lock: a statement
/// fewer than the locking read and the bump. For a key strategy the part hands the
/// version back as text, where the position goes. A table on the text wire (UUID keys)
/// keeps the locking read and the bump.
#[test]
fn a_mysql_lock_by_key_is_the_bump_and_the_fused_read_returns_the_version() {
    static KEYS: ordered_core::Fractional = ordered_core::Fractional::DEFAULT;
    let insert = Request::Insert {
        parent: Id::Int(1),
        at: Placement::Last,
    };
    for (spec, version) in [
        (SPEC, Position::Int(6)),
        (SPEC.with_strategy(&KEYS), Position::Key("6".into())),
    ] {
        let mut op = Operation::new(spec, Dialect::Mysql, insert.clone());
        let lock = execute(op.next(Reply::None));
        assert_eq!(
            lock,
            sql::lock_by_bump(Dialect::Mysql, &spec, Id::Int(1), true).unwrap()
        );
        assert!(
            lock.sql
                .starts_with("UPDATE `parents` SET `version` = `version` + 1")
        );
        let fused = execute(op.next(Reply::Affected(1)));
        assert_eq!(fused.returns, Returns::Tagged);
        assert!(
            fused
                .sql
                .contains("FROM `parents` WHERE `id` = ? FOR UPDATE"),
            "{}",
            fused.sql
        );
        let version_row = Row {
            id: Id::Int(1),
            parent: Id::Int(1),
            position: version,
        };
        match op.next(Reply::Tagged(vec![(1, version_row)])) {
            Ok(Action::Insert { .. }) => {}
            other => panic!("expected the caller's insert, got {other:?}"),
        }
        let done = op.next(Reply::InsertedId(Id::Int(42)));
        let Ok(Action::Done(outcome)) = done else {
            panic!("expected the end, got {done:?}");
        };
        assert_eq!(outcome.version, Some(7));
        assert_eq!(outcome.changes.versions[0].version, 7);
    }
    // a parent row the bump did not find: ParentNotFound, before any read
    let mut op = Operation::new(SPEC, Dialect::Mysql, insert.clone());
    execute(op.next(Reply::None));
    assert_eq!(
        op.next(Reply::Affected(0)).unwrap_err(),
        Error::ParentNotFound { parent: Id::Int(1) }
    );
    // UUID keys: the locking read and the bump, as before
    let uuid = SPEC
        .with_id_type(ordered_core::KeyType::Uuid)
        .with_parent_type(ordered_core::KeyType::Uuid);
    let board = Id::Uuid(ordered_core::id::Uuid::from_u128(1));
    assert!(sql::lock_by_bump(Dialect::Mysql, &uuid, board, true).is_none());
    let mut op = Operation::new(
        uuid,
        Dialect::Mysql,
        Request::Insert {
            parent: board,
            at: Placement::Last,
        },
    );
    assert_eq!(execute(op.next(Reply::None)).returns, Returns::Parent);
    // and neither PostgreSQL nor SQLite, whose lock is one statement already
    for d in [Dialect::Postgres, Dialect::Sqlite] {
        assert!(sql::lock_by_bump(d, &SPEC, Id::Int(1), true).is_none());
    }
}

/// Two moves between boards in opposite directions, in a table split by `status`, lock
/// the boards in board key order, whatever the statuses: `(1, "doing")` to `(2, "todo")`
/// and `(2, "doing")` to `(1, "todo")` both lock board 1 first. In collection order
/// (`Id::Tuple`'s, which compares the encoded length first) the second locked board 2
/// first, and the pair deadlocked.
#[test]
fn moves_between_boards_lock_the_boards_in_key_order_whatever_the_statuses() {
    use ordered_core::ScopeColumn;
    const CARDS: Spec = Spec::new("cards", "board_id", "boards")
        .with_version("version")
        .with_split_by(&[ScopeColumn::text("status")]);
    let list = |b: i64, s: &str| Id::from((b, Id::text(s).unwrap()));
    let first_lock = |from: Id, to: Id| {
        let mut op = Operation::new(
            CARDS,
            Dialect::Postgres,
            Request::MoveToParent {
                item: Id::Int(5),
                parent: to,
                at: Placement::Last,
            },
        );
        let _read = execute(op.next(Reply::None));
        let item = Row {
            id: Id::Int(5),
            parent: from,
            position: 1024.into(),
        };
        let lock = execute(op.next(Reply::Rows(vec![item])));
        assert!(lock.sql.starts_with("UPDATE \"boards\""), "{}", lock.sql);
        (lock.args.clone(), op.locked().to_vec())
    };
    for (from, to) in [
        (list(1, "doing"), list(2, "todo")),
        (list(2, "doing"), list(1, "todo")),
        (list(1, "todo"), list(2, "done")),
        (list(2, "todo"), list(1, "done")),
    ] {
        let (args, locked) = first_lock(from, to);
        assert_eq!(args, [Arg::I64(1)], "{from} to {to}");
        assert_eq!(locked, [Id::Int(1), Id::Int(2)], "{from} to {to}");
    }
}

/// A tree's removal that cascades locks the root list first too (not bumped), as a move
/// to another parent does: the subtree it reads under its locks, and deletes with its
/// lists' lock rows, cannot then lose or gain a row that another writer moves in or out
/// meanwhile (the shape suite saw a lock row deleted under a row moved out of the
/// subtree, and its list's versions start again at 1).
#[test]
fn a_tree_removal_locks_the_root_first() {
    use ordered_core::{Position, Row};
    let spec = Spec::tree("folders", "parent_id");
    let mut op = Operation::new(
        spec,
        Dialect::Postgres,
        Request::Remove { item: Id::Int(1) },
    );
    let Ok(Action::Execute(read)) = op.next(Reply::None) else {
        panic!("expected the unlocked read of the item")
    };
    assert!(read.sql.contains("WHERE \"id\" = "), "{}", read.sql);
    let mut next = op.next(Reply::Rows(vec![Row {
        id: Id::Int(1),
        parent: Id::Int(5),
        position: Position::Int(1024),
    }]));
    let mut locks = Vec::new();
    while let Ok(Action::Execute(s)) = &next {
        if !s.sql.contains("ordered_locks") {
            break;
        }
        locks.push(s.clone());
        next = op.next(Reply::Count(4));
    }
    assert_eq!(op.locked(), [Id::ROOT, Id::Int(5)], "{locks:?}");
    assert!(locks[0].sql.contains("+ 0"), "{}", locks[0].sql);
    assert!(locks[1].sql.contains("+ 1"), "{}", locks[1].sql);
}
