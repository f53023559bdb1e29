//! An association table through the derive, on every engine: a playlist's entries
//! keyed by `(playlist_id, track_id)` with no id column of their own
//! (`#[ordered(id = (playlist_id, track_id), ...)]`). One track sits in two playlists;
//! each link is named by the pair, in requests and in the changes; removing it from
//! one playlist leaves the other; a link cannot move to another playlist, and a track
//! alone names no link.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

use crate::common::*;

use diesel::prelude::*;
use ordered_diesel::migrations::{create_parent_table, create_table};
use ordered_diesel::{Id, Ordered, OrderedDsl, OrderingError, Placement, Slot};

diesel::table! { d_link_playlists (id) { id -> BigInt, version -> BigInt, } }
diesel::table! { d_link_entries (playlist_id, track_id) { playlist_id -> BigInt, track_id -> BigInt, position -> BigInt, } }

#[derive(Debug, Queryable, Selectable, Ordered)]
#[diesel(table_name = d_link_entries)]
#[ordered(scope = playlist_id, id = (playlist_id, track_id), parent = d_link_playlists, version = version, spacing = 64)]
#[allow(dead_code)] // the derives' row type: its fields are what the schema says, not read here
pub struct Entry {
    pub playlist_id: i64,
    pub track_id: i64,
    pub position: i64,
}

macro_rules! insert_fn {
    ($name:ident, $conn:ty) => {
        fn $name(c: &mut $conn, track: i64, slot: &Slot) -> QueryResult<(i64, i64)> {
            let playlist: i64 = slot.scope()?;
            diesel::insert_into(d_link_entries::table)
                .values((
                    d_link_entries::playlist_id.eq(playlist),
                    d_link_entries::track_id.eq(track),
                    d_link_entries::position.eq(slot.int()?),
                ))
                .execute(c)?;
            // the link's id: its playlist and its track
            slot.inserted_id((playlist, track));
            Ok((playlist, track))
        }
    };
}
insert_fn!(insert_sqlite, diesel::SqliteConnection);
insert_fn!(insert_pg, diesel::PgConnection);
#[cfg(feature = "mysql")]
insert_fn!(insert_mysql, diesel::MysqlConnection);

type Insert<C> = fn(&mut C, i64, &Slot) -> QueryResult<(i64, i64)>;

fn entries<C: TestConn>(c: &mut C, insert: Insert<C>) {
    let engine = C::name();
    assert!(Entry::SPEC.is_link());
    let d = C::DIALECT;
    let q = |s: &str| ordered_core::adapter::sql::quote(d, s);
    for t in ["d_link_entries", "d_link_playlists"] {
        c.exec(&format!("DROP TABLE IF EXISTS {}", q(t)));
    }
    for stmt in create_parent_table(d, &Entry::SPEC, &[])
        .up
        .iter()
        .chain(&create_table(d, &Entry::SPEC, &[]).up)
    {
        c.exec(stmt);
    }
    for p in [1, 2] {
        c.exec(&format!(
            "INSERT INTO {} ({}) VALUES ({p})",
            q("d_link_playlists"),
            q("id")
        ));
    }
    // a link's key in the model's own type: its playlist and its track
    let link = |p: i64, t: i64| (p, t);
    let ids = |c: &mut C, p: i64| -> Vec<(i64, i64)> {
        Entry::list(c, p).unwrap().iter().map(|r| r.id).collect()
    };
    // tracks 10 20 30 in playlist 1; 30 and 10 in playlist 2
    for (p, t) in [(1, 10), (1, 20), (1, 30), (2, 30), (2, 10)] {
        let made = Entry::insert_last(c, p, |c, slot| insert(c, t, &slot)).unwrap();
        assert_eq!(made.value, link(p, t), "{engine}");
        assert_eq!(made.outcome.changes.rows[0].id, link(p, t), "{engine}");
    }
    assert_eq!(
        ids(c, 1),
        [link(1, 10), link(1, 20), link(1, 30)],
        "{engine}"
    );

    // a move names the links by their pairs; one row written
    let moved = Entry::move_before(c, link(1, 30), link(1, 10)).unwrap();
    assert_eq!(moved.rows_written, 1, "{engine}");
    assert_eq!(moved.changes.rows[0].id, link(1, 30), "{engine}");
    assert_eq!(
        ids(c, 1),
        [link(1, 30), link(1, 10), link(1, 20)],
        "{engine}"
    );
    // the same track in playlist 2 did not move
    assert_eq!(ids(c, 2), [link(2, 30), link(2, 10)], "{engine}");

    // refusals: the anchor is the same track in the other playlist; a track alone;
    // a link to another playlist
    let e = Entry::move_after(c, link(1, 20), link(2, 30)).unwrap_err();
    assert!(
        matches!(e.refusal(), Some(OrderingError::NotInCollection { .. })),
        "{engine}: {e}"
    );
    let e = untyped::<Entry>().move_to_end(c, Id::from(20)).unwrap_err();
    assert!(
        matches!(e.refusal(), Some(OrderingError::WrongLinkKey { .. })),
        "{engine}: {e}"
    );
    assert_eq!(e.code(), "wrong_link_key");
    let e = Entry::move_to_parent(c, link(1, 20), 2, Placement::Last).unwrap_err();
    assert!(
        matches!(e.refusal(), Some(OrderingError::InvalidRequest(_))),
        "{engine}: {e}"
    );

    // removing track 10 from playlist 1 leaves it in playlist 2
    Entry::remove(c, link(1, 10)).unwrap();
    assert_eq!(ids(c, 1), [link(1, 30), link(1, 20)], "{engine}");
    assert_eq!(ids(c, 2), [link(2, 30), link(2, 10)], "{engine}");
    // a reorder and a rebalance of playlist 2 touch only its links
    Entry::reorder(c, 2, &[link(2, 10), link(2, 30)]).unwrap();
    let r = Entry::rebalance(c, 2).unwrap();
    assert!(
        r.changes.rows.iter().all(|ch| ch.parent == Id::from(2)),
        "{engine}: {r:?}"
    );
    assert_eq!(ids(c, 2), [link(2, 10), link(2, 30)], "{engine}");
    assert_eq!(ids(c, 1), [link(1, 30), link(1, 20)], "{engine}");
    for p in [1, 2] {
        let report = Entry::verify(c, p).unwrap();
        assert!(report.is_ok(), "{engine}: {report:?}");
    }
}

#[test]
fn an_association_table_names_links_by_their_pair_on_every_engine() {
    if enabled("sqlite") {
        entries(
            &mut diesel::SqliteConnection::connect("links"),
            insert_sqlite,
        );
    }
    if enabled("postgres") {
        entries(&mut diesel::PgConnection::connect("links"), insert_pg);
    }
    #[cfg(feature = "mysql")]
    if enabled("mysql") {
        entries(&mut diesel::MysqlConnection::connect("links"), insert_mysql);
    }
    #[cfg(not(feature = "mysql"))]
    if std::env::var("ORDERED_REQUIRE_DBS").is_ok_and(|v| v == "1") {
        panic!("ORDERED_REQUIRE_DBS=1 needs the `mysql` feature");
    }
}
