//! A list per several columns, through the derive, on every engine: cards ordered per
//! `(board_id, status)` with UUID keys (`#[ordered(scope = (board_id, status), ...)]`),
//! locked on the board's row. A move between two status columns of a board locks one
//! row, between boards both; the insert closure gets the whole scope in the app's
//! types; a board alone names no list; and writers racing into one hot gap of one
//! column, while others move cards between the columns and boards, lose nothing:
//! every insert commits, each write has its own board version, and the column ends in
//! exactly the order the versions say.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

use crate::common::*;

use std::sync::Mutex;

use diesel::prelude::*;
use ordered_diesel::{
    Error, Id, KeyType, Ordered, OrderedDsl, OrderingError, Placement, RetryPolicy, Slot,
};
use uuid::Uuid;

/// A list: a board and a status column.
fn list(b: Uuid, status: &str) -> Id {
    Id::from((b, Id::text(status).unwrap()))
}

type Insert<C> = fn(&mut C, Uuid, &str, &Slot) -> QueryResult<Uuid>;
type Titles<C> = fn(&mut C, Uuid, &str) -> Vec<String>;

/// The same steps on every engine: `insert` is the engine's Diesel insert of a card,
/// `titles` the app's own query of one column's titles in order.
fn board_columns<C, M>(c: &mut C, insert: Insert<C>, titles: Titles<C>)
where
    C: TestConn,
    M: Ordered + OrderedDsl,
{
    let engine = C::name();
    assert_eq!(M::SPEC.split_by.len(), 1, "{engine}");
    assert_eq!(M::SPEC.split_by[0].ty, KeyType::Text, "{engine}");
    migrate_boards(c, &M::SPEC);
    let (b1, b2) = (board(1), board(2));
    let (todo, done) = (list(b1, "todo"), list(b1, "done"));
    let mut ids = Vec::new();
    for (n, (title, to)) in [("a", todo), ("b", todo), ("c", todo), ("d", done)]
        .into_iter()
        .enumerate()
    {
        let id = card_id(n as u128 + 1);
        let made = untyped::<M>()
            .insert_last(c, to, |c, slot| insert(c, id, title, &slot))
            .unwrap();
        assert_eq!(made.outcome.changes.rows[0].parent, to, "{engine}");
        ids.push(id);
    }
    let (a, b, cc, d) = (ids[0], ids[1], ids[2], ids[3]);
    assert_eq!(titles(c, b1, "todo"), ["a", "b", "c"], "{engine}");
    assert_eq!(titles(c, b1, "done"), ["d"], "{engine}");

    // within a column: one row written
    assert_eq!(
        untyped::<M>().move_before(c, cc, a).unwrap().rows_written,
        1,
        "{engine}"
    );
    assert_eq!(titles(c, b1, "todo"), ["c", "a", "b"], "{engine}");
    assert_eq!(untyped::<M>().index_of(c, b).unwrap(), 2, "{engine}");

    // to another column of the board: one row written, one lock (one version)
    let across = untyped::<M>()
        .move_to_parent(c, a, done, Placement::Before(d.into()))
        .unwrap();
    assert_eq!(across.rows_written, 1, "{engine}");
    assert_eq!(across.changes.rows[0].parent, done, "{engine}");
    assert_eq!(across.changes.versions.len(), 1, "{engine}: {across:?}");
    assert_eq!(across.changes.versions[0].parent, b1, "{engine}");
    assert_eq!(titles(c, b1, "done"), ["a", "d"], "{engine}");
    assert_eq!(titles(c, b1, "todo"), ["c", "b"], "{engine}");

    // to another board: both boards locked and versioned
    let away = untyped::<M>()
        .move_to_parent(c, d, list(b2, "todo"), Placement::First)
        .unwrap();
    let mut boards: Vec<Id> = away.changes.versions.iter().map(|v| v.parent).collect();
    boards.sort_unstable();
    let mut want = vec![Id::from(b1), Id::from(b2)];
    want.sort_unstable();
    assert_eq!(boards, want, "{engine}");
    assert_eq!(titles(c, b2, "todo"), ["d"], "{engine}");

    // the lists, each with the board's version
    let listed: Vec<Id> = untyped::<M>()
        .list(c, todo)
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(listed, [Id::from(cc), Id::from(b)], "{engine}");
    let versioned = untyped::<M>().list_versioned(c, done).unwrap();
    assert_eq!(versioned.rows.len(), 1, "{engine}");
    assert_eq!(versioned.version, Some(away_version(&away, b1)), "{engine}");

    // refusals: an anchor in another column; a board alone; a stale version
    let other = untyped::<M>().move_after(c, b, a).unwrap_err();
    assert_eq!(
        other.refusal(),
        Some(&OrderingError::NotInCollection {
            id: a.into(),
            parent: todo
        }),
        "{engine}"
    );
    let bare = untyped::<M>()
        .move_to_parent(c, b, b1, Placement::Last)
        .unwrap_err();
    assert!(
        matches!(bare.refusal(), Some(OrderingError::WrongScope { .. })),
        "{engine}: {bare}"
    );
    assert_eq!(bare.refusal().map(OrderingError::code), Some("wrong_scope"));
    assert!(matches!(
        untyped::<M>().list(c, b1),
        Err(Error::Ordering(OrderingError::WrongScope { .. }))
    ));
    let stale = untyped::<M>()
        .expect_version(0)
        .move_to_end(c, b)
        .unwrap_err();
    assert!(
        matches!(stale.refusal(), Some(OrderingError::VersionConflict { .. })),
        "{engine}: {stale}"
    );
    assert_eq!(titles(c, b1, "todo"), ["c", "b"], "{engine}");
    for l in [todo, done, list(b2, "todo")] {
        let report = untyped::<M>().verify(c, l).unwrap();
        assert!(report.is_ok(), "{engine}: {report:?}");
    }
}

fn away_version(o: &ordered_diesel::Outcome, b: Uuid) -> i64 {
    o.changes
        .versions
        .iter()
        .find(|v| v.parent == b)
        .map(|v| v.version)
        .unwrap()
}

/// The hot gap on a UUID composite scope: `INSERTERS` writers each insert `INSERTS`
/// cards right after card A of `(b1, todo)` while `MOVERS` move other cards between
/// `(b1, done)`, `(b1, todo)`'s end and `(b2, todo)`. Every insert commits (retries
/// allowed), every write of board 1 has its own version, and `(b1, todo)` ends as A,
/// then the inserts newest first, then B, then what the movers left at its end.
fn hot_gap<C, M>(c: &mut C, insert: Insert<C>)
where
    C: TestConn,
    M: Ordered + OrderedDsl,
{
    const INSERTERS: usize = 6;
    const INSERTS: usize = 25;
    const MOVERS: u64 = 2;
    const MOVES: u64 = 30;
    let engine = C::name();
    migrate_boards(c, &M::SPEC);
    let (b1, b2) = (board(1), board(2));
    let (todo, done, far) = (list(b1, "todo"), list(b1, "done"), list(b2, "todo"));
    let a = card_id(1);
    let b = card_id(2);
    untyped::<M>()
        .insert_last(c, todo, |c, slot| insert(c, a, "A", &slot))
        .unwrap();
    untyped::<M>()
        .insert_last(c, todo, |c, slot| insert(c, b, "B", &slot))
        .unwrap();
    let mut movers_cards = Vec::new();
    for n in 0..8u128 {
        let id = card_id(100 + n);
        let to = if n % 2 == 0 { done } else { far };
        untyped::<M>()
            .insert_last(c, to, |c, slot| insert(c, id, "m", &slot))
            .unwrap();
        movers_cards.push(id);
    }
    let policy = RetryPolicy {
        max_attempts: 200,
        deadline: std::time::Duration::from_secs(40),
        ..RetryPolicy::default()
    };
    // (board 1's version after the write, the inserted card)
    let inserted: Mutex<Vec<(i64, Uuid)>> = Mutex::new(Vec::new());
    let versions: Mutex<Vec<i64>> = Mutex::new(Vec::new());
    let relabels = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for w in 0..INSERTERS {
            let (inserted, versions, relabels) = (&inserted, &versions, &relabels);
            s.spawn(move || {
                let mut conn = C::open("composite");
                let o = untyped::<M>().retry(policy);
                for i in 0..INSERTS {
                    let id = card_id(1000 + (w * INSERTS + i) as u128);
                    let made = o
                        .insert_after(&mut conn, todo, a, |c, slot| insert(c, id, "x", &slot))
                        .unwrap_or_else(|e| panic!("{}: insert failed: {e}", C::name()));
                    let v = away_version(&made.outcome, b1);
                    inserted.lock().unwrap().push((v, id));
                    versions.lock().unwrap().push(v);
                    if made.outcome.relabelled > 0 {
                        relabels.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
        for w in 0..MOVERS {
            let (cards, versions) = (&movers_cards, &versions);
            s.spawn(move || {
                let mut conn = C::open("composite");
                let o = untyped::<M>().retry(policy);
                let mut x = 0x9E37_79B9_7F4A_7C15_u64 ^ (w + 1);
                for _ in 0..MOVES {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let card = cards[(x % cards.len() as u64) as usize];
                    let to = [done, far][(x / 7 % 2) as usize];
                    let moved = o
                        .move_to_parent(&mut conn, card, to, Placement::First)
                        .unwrap_or_else(|e| panic!("{}: move failed: {e}", C::name()));
                    // a card already first there: nothing written, no version taken
                    if let Some(v) = moved.changes.versions.iter().find(|v| v.parent == b1)
                        && !moved.unchanged
                    {
                        versions.lock().unwrap().push(v.version);
                    }
                }
            });
        }
    });
    let mut inserted = inserted.into_inner().unwrap();
    assert_eq!(inserted.len(), INSERTERS * INSERTS, "{engine}");
    let mut versions = versions.into_inner().unwrap();
    let n = versions.len();
    versions.sort_unstable();
    versions.dedup();
    assert_eq!(
        versions.len(),
        n,
        "{engine}: two writes of board 1 share a version"
    );
    assert!(
        relabels.into_inner() > 0,
        "{engine}: the hot gap never relabelled"
    );
    // the inserts land right after A, newest (highest version) first
    inserted.sort_unstable();
    let mut want: Vec<Id> = vec![a.into()];
    want.extend(inserted.iter().rev().map(|(_, id)| Id::from(*id)));
    want.push(b.into());
    let got: Vec<Id> = untyped::<M>()
        .list(c, todo)
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(got, want, "{engine}: the column is not in version order");
    // every mover's card is in exactly one of its two lists
    let mut seen: Vec<Id> = Vec::new();
    for l in [todo, done, far] {
        let report = untyped::<M>().verify(c, l).unwrap();
        assert!(report.is_ok(), "{engine}: {report:?}");
        if l != todo {
            seen.extend(untyped::<M>().list(c, l).unwrap().iter().map(|r| r.id));
        }
    }
    seen.sort_unstable();
    let mut all: Vec<Id> = movers_cards.iter().map(|&u| u.into()).collect();
    all.sort_unstable();
    assert_eq!(seen, all, "{engine}: a moved card was lost or duplicated");
}

/// The deadlock of two moves between boards in opposite directions (the reliability
/// suite's reproduction): card x in `(b1, doing)`, card y in `(b2, doing)`; two other
/// connections hold both boards, so that `x to (b2, todo)` and `y to (b1, todo)` both
/// wait, then race when the boards are released. Both lock board 1 first, so one waits
/// for the other and both succeed at their first attempt; locked in collection order
/// (`(b, "todo")` before `(b, "doing")`), x took board 2 and y board 1, and one of them
/// failed with a deadlock (retries are off here, so that it cannot hide).
fn opposite_moves_between_boards<C: TestConn>(c: &mut C) {
    use ordered_core::ScopeColumn;
    use ordered_diesel::Spec;
    const SPEC: Spec = Spec::new("d_cmplock_cards", "board_id", "d_cmplock_boards")
        .with_version("version")
        .with_id_type(KeyType::Uuid)
        .with_parent_type(KeyType::Uuid)
        .with_split_by(&[ScopeColumn::text("status")]);
    let engine = C::name();
    migrate_boards(c, &SPEC);
    let o = ordered_diesel::OrderedTable::new(SPEC).retry(RetryPolicy {
        max_attempts: 1,
        ..RetryPolicy::default()
    });
    let (b1, b2) = (board(1), board(2));
    let (x, y) = (card_id(1), card_id(2));
    let d = C::DIALECT;
    let q = |s: &str| ordered_core::adapter::sql::quote(d, s);
    let lit = |u: Uuid| match d {
        ordered_diesel::Dialect::Postgres => format!("'{u}'"),
        _ => format!("X'{}'", u.simple()),
    };
    for (id, b) in [(x, b1), (y, b2)] {
        c.exec(&format!(
            "INSERT INTO {} ({}, {}, {}, {}, {}) VALUES ({}, {}, 'doing', 't', 1024)",
            q(SPEC.table),
            q("id"),
            q("board_id"),
            q("status"),
            q("title"),
            q("position"),
            lit(id),
            lit(b)
        ));
    }
    let hold = |b: Uuid| {
        let mut h = C::open("composite_lock");
        h.exec(ordered_core::adapter::sql::begin(d));
        h.exec(&format!(
            "UPDATE {} SET {v} = {v} + 1 WHERE {} = {}",
            q(SPEC.parent_table),
            q("id"),
            lit(b),
            v = q("version")
        ));
        h
    };
    let (mut h1, mut h2) = (hold(b1), hold(b2));
    let mover = |item: Uuid, to: Id| {
        let o = o.clone();
        std::thread::spawn(move || {
            let mut m = C::open("composite_lock");
            o.move_to_parent(&mut m, item, to, Placement::Last)
        })
    };
    let mx = mover(x, list(b2, "todo"));
    let my = mover(y, list(b1, "todo"));
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert!(
        !mx.is_finished() && !my.is_finished(),
        "{engine}: both moves wait for the boards"
    );
    h1.exec("COMMIT");
    h2.exec("COMMIT");
    for (m, what) in [(mx, "x to (b2, todo)"), (my, "y to (b1, todo)")] {
        let moved = m.join().unwrap();
        let moved = moved.unwrap_or_else(|e: Error| panic!("{engine}: {what}: {e}"));
        assert_eq!(moved.attempts, 1, "{engine}: {what}");
    }
    let mut ids = |l: Id| -> Vec<Id> { o.list(c, l).unwrap().iter().map(|r| r.id).collect() };
    assert_eq!(ids(list(b2, "todo")), [Id::from(x)], "{engine}");
    assert_eq!(ids(list(b1, "todo")), [Id::from(y)], "{engine}");
    assert!(ids(list(b1, "doing")).is_empty() && ids(list(b2, "doing")).is_empty());
}

#[test]
fn opposite_moves_between_boards_do_not_deadlock() {
    // SQLite has one writer at a time: two holders of two boards cannot exist there
    if enabled("postgres") {
        opposite_moves_between_boards(&mut PgConnection::connect("composite_lock"));
    }
    #[cfg(feature = "mysql")]
    if enabled("mysql") {
        opposite_moves_between_boards(&mut MysqlConnection::connect("composite_lock"));
    }
}

mod pg {
    use super::*;

    diesel::table! { d_cmp_boards (id) { id -> Uuid, version -> BigInt, } }
    diesel::table! { d_cmp_cards (id) { id -> Uuid, board_id -> Uuid, status -> Text, title -> Text, position -> BigInt, } }

    #[derive(Queryable, Selectable, Ordered)]
    #[diesel(table_name = d_cmp_cards)]
    #[ordered(scope = (board_id, status), parent = d_cmp_boards, version = version, spacing = 64)]
    #[allow(dead_code)]
    pub struct Card {
        pub id: Uuid,
        pub board_id: Uuid,
        pub status: String,
        pub title: String,
        pub position: i64,
    }

    pub fn insert(c: &mut PgConnection, id: Uuid, title: &str, slot: &Slot) -> QueryResult<Uuid> {
        let (board, status) = slot.scope::<(Uuid, String)>()?;
        diesel::insert_into(d_cmp_cards::table)
            .values((
                d_cmp_cards::id.eq(id),
                d_cmp_cards::board_id.eq(board),
                d_cmp_cards::status.eq(status),
                d_cmp_cards::title.eq(title),
                d_cmp_cards::position.eq(slot.int()?),
            ))
            .returning(d_cmp_cards::id)
            .get_result(c)
    }

    pub fn titles(c: &mut PgConnection, b: Uuid, status: &str) -> Vec<String> {
        d_cmp_cards::table
            .filter(d_cmp_cards::board_id.eq(b))
            .filter(d_cmp_cards::status.eq(status))
            .order(d_cmp_cards::position)
            .select(d_cmp_cards::title)
            .load(c)
            .unwrap()
    }
}

/// MySQL/MariaDB and SQLite: the UUID as its 16 bytes.
macro_rules! binary_model {
    ($module:ident, $conn:ty) => {
        mod $module {
            use super::*;

            diesel::table! { d_cmp_boards (id) { id -> Binary, version -> BigInt, } }
            diesel::table! { d_cmp_cards (id) { id -> Binary, board_id -> Binary, status -> Text, title -> Text, position -> BigInt, } }

            #[derive(Queryable, Selectable, Ordered)]
            #[diesel(table_name = d_cmp_cards)]
            #[ordered(scope = (board_id, status), parent = d_cmp_boards, version = version, spacing = 64)]
            #[allow(dead_code)]
            pub struct Card {
                pub id: Vec<u8>,
                pub board_id: Vec<u8>,
                pub status: String,
                pub title: String,
                pub position: i64,
            }

            pub fn insert(c: &mut $conn, id: Uuid, title: &str, slot: &Slot) -> QueryResult<Uuid> {
                let (board, status) = slot.scope::<(Vec<u8>, String)>()?;
                diesel::insert_into(d_cmp_cards::table)
                    .values((
                        d_cmp_cards::id.eq(id.as_bytes().to_vec()),
                        d_cmp_cards::board_id.eq(board),
                        d_cmp_cards::status.eq(status),
                        d_cmp_cards::title.eq(title),
                        d_cmp_cards::position.eq(slot.int()?),
                    ))
                    .execute(c)?;
                Ok(id)
            }

            pub fn titles(c: &mut $conn, b: Uuid, status: &str) -> Vec<String> {
                d_cmp_cards::table
                    .filter(d_cmp_cards::board_id.eq(b.as_bytes().to_vec()))
                    .filter(d_cmp_cards::status.eq(status))
                    .order(d_cmp_cards::position)
                    .select(d_cmp_cards::title)
                    .load(c)
                    .unwrap()
            }
        }
    };
}
binary_model!(sqlite, SqliteConnection);
#[cfg(feature = "mysql")]
binary_model!(mysql, MysqlConnection);

#[test]
fn cards_per_board_and_status_on_every_engine() {
    if enabled("sqlite") {
        let mut c = SqliteConnection::connect("composite");
        board_columns::<_, sqlite::Card>(&mut c, sqlite::insert, sqlite::titles);
        hot_gap::<_, sqlite::Card>(&mut c, sqlite::insert);
    }
    if enabled("postgres") {
        let mut c = PgConnection::connect("composite");
        board_columns::<_, pg::Card>(&mut c, pg::insert, pg::titles);
        hot_gap::<_, pg::Card>(&mut c, pg::insert);
    }
    #[cfg(feature = "mysql")]
    if enabled("mysql") {
        let mut c = MysqlConnection::connect("composite");
        board_columns::<_, mysql::Card>(&mut c, mysql::insert, mysql::titles);
        hot_gap::<_, mysql::Card>(&mut c, mysql::insert);
    }
}
