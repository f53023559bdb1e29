//! A tree through the derive, on every engine: nodes ordered per a nullable
//! `parent_id` that names another node (`#[ordered(scope = parent_id, parent = <its own
//! table>)]`, NULL: the root list). Inserts into the root list and below a node, a
//! move to the root and back, and the refusals: a move under the node itself or one of
//! its descendants (`would_cycle`), under a node that does not exist. Then two writers
//! at once move X under Y and Y under X, over and over: each round exactly one wins,
//! the other is refused with `WouldCycle`, and the tree never holds a cycle. Then a
//! removal under `Removal::Refuse` racing a child's insert (PostgreSQL, MySQL/MariaDB).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

use crate::common::*;

use std::sync::Barrier;

use diesel::prelude::*;
use ordered_diesel::migrations::{create_lock_table, create_table};
use ordered_diesel::{Id, NullScope, Ordered, OrderingError, Placement, Slot, Status};

diesel::table! { d_tree_nodes (id) { id -> BigInt, parent_id -> Nullable<BigInt>, title -> Text, position -> BigInt, } }

#[derive(Debug, Queryable, Selectable, Ordered)]
#[diesel(table_name = d_tree_nodes)]
#[ordered(scope = parent_id, parent = d_tree_nodes, spacing = 64)]
#[allow(dead_code)]
pub struct Node {
    pub id: i64,
    pub parent_id: Option<i64>,
    pub title: String,
    pub position: i64,
}

/// Each engine's Diesel insert of a node with the app's id, its parent read from the
/// slot as the field's own type.
macro_rules! insert_fn {
    ($name:ident, $conn:ty) => {
        fn $name(c: &mut $conn, id: i64, title: &str, slot: &Slot) -> QueryResult<i64> {
            let parent: Option<i64> = slot.scope()?;
            diesel::insert_into(d_tree_nodes::table)
                .values((
                    d_tree_nodes::id.eq(id),
                    d_tree_nodes::parent_id.eq(parent),
                    d_tree_nodes::title.eq(title),
                    d_tree_nodes::position.eq(slot.int()?),
                ))
                .execute(c)?;
            Ok(id)
        }
    };
}
insert_fn!(insert_sqlite, diesel::SqliteConnection);
insert_fn!(insert_pg, diesel::PgConnection);
#[cfg(feature = "mysql")]
insert_fn!(insert_mysql, diesel::MysqlConnection);

type Insert<C> = fn(&mut C, i64, &str, &Slot) -> QueryResult<i64>;

fn migrate<C: TestConn>(c: &mut C) {
    let d = C::DIALECT;
    let q = |s: &str| ordered_core::adapter::sql::quote(d, s);
    c.exec(&format!("DROP TABLE IF EXISTS {}", q("d_tree_nodes")));
    for stmt in create_lock_table(d)
        .up
        .iter()
        .chain(&create_table(d, &Node::SPEC, &[("title", "VARCHAR(40) NOT NULL")]).up)
    {
        c.exec(stmt);
    }
    c.exec(&format!(
        "DELETE FROM {} WHERE {} = 'd_tree_nodes'",
        q(ordered_diesel::__private::LOCK_TABLE),
        q("table_name")
    ));
}

/// The ids of a list, in order.
fn ids<C: TestConn>(c: &mut C, parent: impl Into<Id>) -> Vec<Id> {
    untyped::<Node>()
        .list(c, parent)
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect()
}

fn shapes<C: TestConn>(c: &mut C, insert: Insert<C>) {
    let engine = C::name();
    assert_eq!(Node::SPEC.null_scope, NullScope::Tree);
    assert!(Node::SPEC.locks_rows());
    migrate(c);
    let root = None::<i64>;
    // a b in the root list; c below a; d below c
    for (id, title, parent) in [
        (1, "a", root),
        (2, "b", root),
        (3, "c", Some(1)),
        (4, "d", Some(3)),
    ] {
        let made = untyped::<Node>()
            .insert_last(c, parent, |c, slot| insert(c, id, title, &slot))
            .unwrap();
        assert_eq!(made.outcome.changes.rows[0].parent, Id::from(parent));
    }
    assert_eq!(ids(c, root), [1, 2], "{engine}");
    assert_eq!(ids(c, 1), [3], "{engine}");
    assert_eq!(ids(c, 3), [4], "{engine}");

    // a under its own grandchild, and under itself: refused, nothing changes
    for target in [4, 1] {
        let e = untyped::<Node>()
            .move_to_parent(c, 1, target, Placement::Last)
            .unwrap_err();
        assert_eq!(
            e.refusal(),
            Some(&OrderingError::WouldCycle {
                id: 1.into(),
                parent: target.into()
            }),
            "{engine}"
        );
        assert_eq!(e.code(), "would_cycle");
        assert_eq!(e.status(), Status::Conflict);
    }
    assert_eq!(ids(c, root), [1, 2], "{engine}");
    assert_eq!(ids(c, 3), [4], "{engine}");
    // under a node that does not exist
    let e = untyped::<Node>()
        .move_to_parent(c, 2, 99, Placement::Last)
        .unwrap_err();
    assert!(
        matches!(e.refusal(), Some(OrderingError::ParentNotFound { .. })),
        "{engine}: {e}"
    );
    let e = untyped::<Node>()
        .insert_last(c, Some(99), |c, slot| insert(c, 9, "x", &slot))
        .unwrap_err();
    assert!(
        matches!(e.refusal(), Some(OrderingError::ParentNotFound { .. })),
        "{engine}: {e}"
    );

    // d to the root, before b; then a below d: no longer a cycle
    untyped::<Node>()
        .move_to_parent(c, 4, root, Placement::Before(2.into()))
        .unwrap();
    assert_eq!(ids(c, root), [1, 4, 2], "{engine}");
    let moved = untyped::<Node>()
        .move_to_parent(c, 1, 4, Placement::First)
        .unwrap();
    assert_eq!(moved.rows_written, 1, "{engine}");
    assert_eq!(ids(c, root), [4, 2], "{engine}");
    assert_eq!(ids(c, 4), [1], "{engine}");
    assert_eq!(ids(c, 1), [3], "{engine}");
    // within a list below the root: one row, one lock (not the root's)
    untyped::<Node>()
        .insert_last(c, Some(1), |c, slot| insert(c, 5, "e", &slot))
        .unwrap();
    let within = untyped::<Node>().move_to_start(c, 5).unwrap();
    assert_eq!(within.rows_written, 1, "{engine}");
    assert_eq!(within.changes.versions.len(), 1, "{engine}");
    assert_eq!(within.changes.versions[0].parent, Id::from(1), "{engine}");
    assert_eq!(ids(c, 1), [5, 3], "{engine}");
    // the root list reads and versions like any other
    let listed = untyped::<Node>().list_versioned(c, root).unwrap();
    assert_eq!(listed.rows.len(), 2, "{engine}");
    assert!(listed.version.is_some_and(|v| v > 0), "{engine}");
    for p in [Id::ROOT, 1.into(), 3.into(), 4.into()] {
        let report = untyped::<Node>().verify(c, p).unwrap();
        assert!(report.is_ok(), "{engine}: {report:?}");
    }

    // d removed with its subtree (a, and e and c below a; ON DELETE CASCADE): every row
    // that went is reported, and the lock rows of their lists go with them
    let q = |s: &str| ordered_core::adapter::sql::quote(C::DIALECT, s);
    let child_locks = |c: &mut C| {
        count(
            c,
            &format!(
                "SELECT COUNT(*) AS o_count FROM {} WHERE {} = 'd_tree_nodes' AND {} <> ''",
                q(ordered_diesel::__private::LOCK_TABLE),
                q("table_name"),
                q("scope_key")
            ),
        )
    };
    assert!(child_locks(c) > 0, "{engine}");
    let removed = untyped::<Node>().remove(c, 4).unwrap();
    let mut gone = removed.changes.removed.clone();
    gone.sort_unstable();
    assert_eq!(gone, [1, 3, 4, 5], "{engine}");
    assert_eq!(ids(c, root), [2], "{engine}");
    assert_eq!(
        child_locks(c),
        0,
        "{engine}: lock rows of removed lists are left"
    );
}

/// Two writers at once: X (below P) under Y and Y (below Q) under X. The two moves
/// share no list, so only the tree's lock keeps them from making a cycle: exactly one
/// wins each round.
fn race<C: TestConn>(c: &mut C, insert: Insert<C>) {
    const ROUNDS: usize = 25;
    let engine = C::name();
    migrate(c);
    let (p, q, x, y) = (1_i64, 2_i64, 10_i64, 20_i64);
    for (id, t, parent) in [
        (p, "p", None),
        (q, "q", None),
        (x, "x", Some(p)),
        (y, "y", Some(q)),
    ] {
        untyped::<Node>()
            .insert_last(c, parent, |c, slot| insert(c, id, t, &slot))
            .unwrap();
    }
    let mut wins = [0usize; 2];
    for round in 0..ROUNDS {
        // X back below P, Y below Q
        for (id, parent) in [(x, p), (y, q)] {
            untyped::<Node>()
                .move_to_parent(c, id, parent, Placement::Last)
                .unwrap();
        }
        let start = Barrier::new(2);
        let results: Vec<Result<(), OrderingError>> = std::thread::scope(|s| {
            let hs: Vec<_> = [(x, y), (y, x)]
                .into_iter()
                .map(|(item, under)| {
                    let start = &start;
                    s.spawn(move || {
                        let mut conn = C::open("tree");
                        start.wait();
                        match untyped::<Node>().move_to_parent(
                            &mut conn,
                            item,
                            under,
                            Placement::Last,
                        ) {
                            Ok(_) => Ok(()),
                            Err(e) => Err(e
                                .refusal()
                                .cloned()
                                .unwrap_or_else(|| panic!("{engine}: {e}"))),
                        }
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let won: Vec<usize> = (0..2).filter(|&i| results[i].is_ok()).collect();
        assert_eq!(won.len(), 1, "{engine} round {round}: {results:?}");
        let lost = &results[1 - won[0]];
        assert!(
            matches!(lost, Err(OrderingError::WouldCycle { .. })),
            "{engine} round {round}: {lost:?}"
        );
        wins[won[0]] += 1;
        // the winner below the other, which stayed where it was
        let (moved, stayed, home) = if won[0] == 0 { (x, y, q) } else { (y, x, p) };
        assert_eq!(ids(c, stayed), [moved], "{engine} round {round}");
        assert_eq!(ids(c, home), [stayed], "{engine} round {round}");
        assert!(ids(c, moved).is_empty(), "{engine} round {round}");
        assert_eq!(ids(c, Id::ROOT), [p, q], "{engine} round {round}");
    }
    eprintln!(
        "{engine}: X under Y won {} rounds, Y under X {}",
        wins[0], wins[1]
    );
}

/// `Removal::Refuse` against a child being added at the same moment: the child's insert
/// is in the app's own transaction, uncommitted, when the removal starts. The removal
/// locks the node's list of children too, so it waits for that insert and then refuses;
/// without that lock it would see no child, and the database's `ON DELETE CASCADE`
/// would take the child it never saw.
fn refuse_race<C: TestConn>(c: &mut C, insert: Insert<C>) {
    let engine = C::name();
    migrate(c);
    untyped::<Node>()
        .insert_last(c, None::<i64>, |c, slot| insert(c, 1, "x", &slot))
        .unwrap();
    let mut b = C::open("tree");
    let removed = std::thread::scope(|s| {
        let (started, wait) = std::sync::mpsc::channel::<()>();
        let remover = s.spawn(move || {
            wait.recv().unwrap();
            let mut a = C::open("tree");
            untyped::<Node>()
                .removal(ordered_diesel::Removal::Refuse)
                .remove(&mut a, 1)
        });
        b.transaction::<_, ordered_diesel::Error, _>(|b| {
            untyped::<Node>().insert_last(b, Some(1), |b, slot| insert(b, 2, "child", &slot))?;
            started.send(()).unwrap();
            // the removal runs into the open insert meanwhile
            std::thread::sleep(std::time::Duration::from_millis(500));
            Ok(())
        })
        .unwrap();
        remover.join().unwrap()
    });
    let e = removed.expect_err("the removal must see the child");
    assert_eq!(e.code(), "has_children", "{engine}: {e}");
    assert_eq!(e.status(), Status::Conflict);
    assert_eq!(ids(c, None::<i64>), [1], "{engine}");
    assert_eq!(ids(c, 1), [2], "{engine}: the child stands");
}

#[test]
fn a_tree_refuses_cycles_on_every_engine() {
    if enabled("sqlite") {
        let mut c = diesel::SqliteConnection::connect("tree");
        shapes(&mut c, insert_sqlite);
        race(&mut c, insert_sqlite);
    }
    if enabled("postgres") {
        let mut c = diesel::PgConnection::connect("tree");
        shapes(&mut c, insert_pg);
        race(&mut c, insert_pg);
        refuse_race(&mut c, insert_pg);
    }
    #[cfg(feature = "mysql")]
    if enabled("mysql") {
        let mut c = diesel::MysqlConnection::connect("tree");
        shapes(&mut c, insert_mysql);
        race(&mut c, insert_mysql);
        refuse_race(&mut c, insert_mysql);
    }
    #[cfg(not(feature = "mysql"))]
    if std::env::var("ORDERED_REQUIRE_DBS").is_ok_and(|v| v == "1") {
        panic!("ORDERED_REQUIRE_DBS=1 needs the `mysql` feature");
    }
}
