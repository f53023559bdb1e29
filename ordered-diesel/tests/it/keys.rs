//! Tables keyed by UUIDs, through the derive, on every engine: `uuid::Uuid` fields on
//! PostgreSQL's `uuid`; `Vec<u8>` fields on `BINARY(16)` (MySQL/MariaDB) and 16-byte
//! blobs (SQLite), which is how Diesel maps a UUID column there. The key types come
//! from the `table!` schema; the typed calls take the app's keys; what the library
//! writes reads back through the app's own Diesel queries; results and errors carry
//! the UUIDs; a key of another type is refused before anything runs; writers racing
//! across two UUID boards lose nothing.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

use crate::common::*;

use diesel::prelude::*;
use ordered_diesel::{Error, KeyType, Ordered, OrderedDsl, OrderingError, Placement, Slot};
use uuid::Uuid;

/// The same steps on every engine: `M` is the engine's model, `insert` its Diesel
/// insert of a card (the new card's UUID, its title, the slot), `titles` the app's own
/// query of a board's titles in order.
fn uuid_cards<C, M>(
    c: &mut C,
    insert: impl Fn(&mut C, Uuid, &str, &Slot) -> QueryResult<Uuid>,
    titles: impl Fn(&mut C, Uuid) -> Vec<String>,
) where
    C: TestConn,
    M: Ordered + OrderedDsl,
{
    let engine = C::name();
    assert_eq!(
        (M::SPEC.id_type, M::SPEC.parent_type),
        (KeyType::Uuid, KeyType::Uuid),
        "{engine}"
    );
    migrate_boards(c, &M::SPEC);
    let (b1, b2) = (board(1), board(2));
    let mut ids = Vec::new();
    for (n, title) in ["a", "b", "c"].iter().enumerate() {
        let id = card_id(n as u128 + 1);
        let made = untyped::<M>()
            .insert_last(c, b1, |c, slot| insert(c, id, title, &slot))
            .unwrap();
        assert_eq!(made.value, id, "{engine}");
        assert_eq!(made.outcome.changes.rows[0].id, id, "{engine}");
        assert_eq!(made.outcome.changes.rows[0].parent, b1, "{engine}");
        ids.push(id);
    }
    let (a, b, cc) = (ids[0], ids[1], ids[2]);

    // one row per move; the app's own query sees the order
    assert_eq!(
        untyped::<M>().move_before(c, cc, a).unwrap().rows_written,
        1,
        "{engine}"
    );
    assert_eq!(titles(c, b1), ["c", "a", "b"], "{engine}");
    let listed: Vec<ordered_diesel::Id> = untyped::<M>()
        .list(c, b1)
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(listed, [cc, a, b], "{engine}");
    assert_eq!(untyped::<M>().index_of(c, b).unwrap(), 2, "{engine}");
    let between = untyped::<M>()
        .insert_between(c, b1, Some(a.into()), Some(b.into()), |c, slot| {
            insert(c, card_id(4), "d", &slot)
        })
        .unwrap();
    assert_eq!(between.value, card_id(4));
    assert_eq!(titles(c, b1), ["c", "a", "d", "b"], "{engine}");

    // between boards: both locked, the changes name the new board
    let across = untyped::<M>()
        .move_to_parent(c, a, b2, Placement::First)
        .unwrap();
    assert_eq!(across.changes.rows[0].parent, b2, "{engine}");
    assert_eq!(titles(c, b2), ["a"], "{engine}");

    // a stale drag is refused with the client's UUIDs
    let stale = untyped::<M>()
        .move_between(c, b, None, Some(a.into()))
        .unwrap_err();
    assert_eq!(
        stale.refusal(),
        Some(&OrderingError::NotInCollection {
            id: a.into(),
            parent: b1.into()
        }),
        "{engine}"
    );
    // a key of another type: refused before any statement, nothing changes
    let wrong = untyped::<M>().move_to_start(c, 5).unwrap_err();
    assert!(
        matches!(
            wrong,
            Error::Ordering(OrderingError::WrongKeyType {
                expected: KeyType::Uuid,
                ..
            })
        ),
        "{engine}: {wrong}"
    );
    assert!(matches!(
        untyped::<M>().list(c, 1),
        Err(Error::Ordering(OrderingError::WrongKeyType { .. }))
    ));
    assert_eq!(titles(c, b1), ["c", "d", "b"], "{engine}");

    // an empty board still has its version; a missing one is named
    let empty = untyped::<M>().list_versioned(c, board(3)).unwrap();
    assert_eq!((empty.rows.len(), empty.version), (0, Some(0)), "{engine}");
    let missing = untyped::<M>().list_versioned(c, board(9)).unwrap_err();
    assert_eq!(
        missing.refusal(),
        Some(&OrderingError::ParentNotFound {
            parent: board(9).into()
        }),
        "{engine}"
    );
    for bd in [b1, b2] {
        let report = untyped::<M>().verify(c, bd).unwrap();
        assert!(report.is_ok(), "{engine}: {report:?}");
    }
}

/// Writers racing on two UUID-keyed boards: moves into one hot gap and moves across the
/// boards, which lock both boards in the order of their UUIDs. Every card stays present
/// exactly once, every board sound, and the only refusal besides success is an
/// exhausted retry (rare).
fn uuid_race<C, M>(c: &mut C, insert: fn(&mut C, Uuid, &str, &Slot) -> QueryResult<Uuid>)
where
    C: TestConn,
    M: Ordered + OrderedDsl,
{
    const THREADS: u64 = 6;
    const MOVES: u64 = 40;
    let engine = C::name();
    migrate_boards(c, &M::SPEC);
    let (b1, b2) = (board(1), board(2));
    let mut cards = Vec::new();
    for n in 0..24u128 {
        let b = if n % 2 == 0 { b1 } else { b2 };
        let id = card_id(n + 1);
        untyped::<M>()
            .insert_last(c, b, |c, slot| insert(c, id, "x", &slot))
            .unwrap();
        cards.push(id);
    }
    let anchor = cards[0];
    let exhausted = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for w in 0..THREADS {
            let (cards, exhausted) = (&cards, &exhausted);
            s.spawn(move || {
                let mut conn = C::open("keys");
                let mut x = 0x9E37_79B9_7F4A_7C15_u64 ^ (w + 1);
                for _ in 0..MOVES {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let card = cards[1 + (x % (cards.len() as u64 - 1)) as usize];
                    let r = match x % 3 {
                        // into the hot gap after the anchor, wherever the card is
                        0 => untyped::<M>().move_to_parent(
                            &mut conn,
                            card,
                            b1,
                            Placement::After(anchor.into()),
                        ),
                        1 => untyped::<M>().move_to_parent(&mut conn, card, b2, Placement::First),
                        _ => untyped::<M>().move_to_end(&mut conn, card),
                    };
                    match r {
                        Ok(_) => {}
                        Err(Error::RetriesExhausted { .. }) => {
                            exhausted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        Err(e) => panic!("{}: unexpected error {e}", C::name()),
                    }
                }
            });
        }
    });
    let exhausted = exhausted.into_inner();
    assert!(
        exhausted * 10 <= THREADS * MOVES,
        "{engine}: {exhausted} exhausted"
    );
    let mut seen: Vec<ordered_diesel::Id> = Vec::new();
    for b in [b1, b2] {
        let report = untyped::<M>().verify(c, b).unwrap();
        assert!(report.is_ok(), "{engine}: {report:?}");
        seen.extend(untyped::<M>().list(c, b).unwrap().iter().map(|r| r.id));
    }
    assert_eq!(
        untyped::<M>().list(c, b1).unwrap()[0].id,
        anchor,
        "{engine}: the anchor stays first"
    );
    seen.sort_unstable();
    let mut want: Vec<ordered_diesel::Id> = cards.iter().map(|&u| u.into()).collect();
    want.sort_unstable();
    assert_eq!(seen, want, "{engine}: a card was lost or duplicated");
}

mod pg {
    use super::*;

    diesel::table! { d_key_boards (id) { id -> Uuid, version -> BigInt, } }
    diesel::table! { d_key_cards (id) { id -> Uuid, board_id -> Uuid, title -> Text, position -> BigInt, } }

    #[derive(Queryable, Selectable, Ordered)]
    #[diesel(table_name = d_key_cards)]
    #[ordered(scope = board_id, parent = d_key_boards, version = version)]
    #[allow(dead_code)]
    pub struct Card {
        pub id: Uuid,
        pub board_id: Uuid,
        pub title: String,
        pub position: i64,
    }

    pub fn insert(c: &mut PgConnection, id: Uuid, title: &str, slot: &Slot) -> QueryResult<Uuid> {
        diesel::insert_into(d_key_cards::table)
            .values((
                d_key_cards::id.eq(id),
                d_key_cards::board_id.eq(slot.scope::<Uuid>()?),
                d_key_cards::title.eq(title),
                d_key_cards::position.eq(slot.int()?),
            ))
            .returning(d_key_cards::id)
            .get_result(c)
    }

    pub fn titles(c: &mut PgConnection, b: Uuid) -> Vec<String> {
        d_key_cards::table
            .filter(d_key_cards::board_id.eq(b))
            .order(d_key_cards::position)
            .select(d_key_cards::title)
            .load(c)
            .unwrap()
    }
}

/// MySQL/MariaDB and SQLite: the UUID as its 16 bytes.
macro_rules! binary_model {
    ($module:ident, $conn:ty) => {
        mod $module {
            use super::*;

            diesel::table! { d_key_boards (id) { id -> Binary, version -> BigInt, } }
            diesel::table! { d_key_cards (id) { id -> Binary, board_id -> Binary, title -> Text, position -> BigInt, } }

            #[derive(Queryable, Selectable, Ordered)]
            #[diesel(table_name = d_key_cards)]
            #[ordered(scope = board_id, parent = d_key_boards, version = version)]
            #[allow(dead_code)]
            pub struct Card {
                pub id: Vec<u8>,
                pub board_id: Vec<u8>,
                pub title: String,
                pub position: i64,
            }

            pub fn insert(c: &mut $conn, id: Uuid, title: &str, slot: &Slot) -> QueryResult<Uuid> {
                diesel::insert_into(d_key_cards::table)
                    .values((
                        d_key_cards::id.eq(id.as_bytes().to_vec()),
                        d_key_cards::board_id.eq(slot.scope::<Vec<u8>>()?),
                        d_key_cards::title.eq(title),
                        d_key_cards::position.eq(slot.int()?),
                    ))
                    .execute(c)?;
                Ok(id)
            }

            pub fn titles(c: &mut $conn, b: Uuid) -> Vec<String> {
                d_key_cards::table
                    .filter(d_key_cards::board_id.eq(b.as_bytes().to_vec()))
                    .order(d_key_cards::position)
                    .select(d_key_cards::title)
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
fn uuid_keyed_cards_on_every_engine() {
    if enabled("sqlite") {
        let mut c = SqliteConnection::connect("keys");
        uuid_cards::<_, sqlite::Card>(&mut c, sqlite::insert, sqlite::titles);
        uuid_race::<_, sqlite::Card>(&mut c, sqlite::insert);
    }
    if enabled("postgres") {
        let mut c = PgConnection::connect("keys");
        uuid_cards::<_, pg::Card>(&mut c, pg::insert, pg::titles);
        uuid_race::<_, pg::Card>(&mut c, pg::insert);
    }
    #[cfg(feature = "mysql")]
    if enabled("mysql") {
        let mut c = MysqlConnection::connect("keys");
        uuid_cards::<_, mysql::Card>(&mut c, mysql::insert, mysql::titles);
        uuid_race::<_, mysql::Card>(&mut c, mysql::insert);
    }
}
