// Shared by the doctests: an in-memory SQLite database with a playlist and its tracks.
#[allow(unused_imports)]
use diesel::prelude::*;
#[allow(unused_imports)]
use ordered_diesel::{Ordered, OrderedDsl, Slot};

diesel::table! {
    playlists (id) {
        id -> BigInt,
        name -> Text,
        version -> BigInt,
    }
}

diesel::table! {
    tracks (id) {
        id -> BigInt,
        playlist_id -> BigInt,
        title -> Text,
        position -> BigInt,
    }
}

#[derive(Queryable, Selectable, Ordered)]
#[diesel(table_name = tracks)]
#[ordered(scope = playlist_id, parent = playlists, version = version)]
#[allow(dead_code)]
struct Track {
    id: i64,
    playlist_id: i64,
    title: String,
    position: i64,
}

#[allow(dead_code)]
fn setup() -> SqliteConnection {
    use ordered_diesel::migrations::{create_parent_table, create_table};
    let mut conn = SqliteConnection::establish(":memory:").expect("sqlite");
    let spec = <Track as Ordered>::SPEC;
    let d = ordered_diesel::Dialect::Sqlite;
    for m in [
        create_parent_table(d, &spec, &[("name", "TEXT NOT NULL")]),
        create_table(d, &spec, &[("title", "TEXT NOT NULL")]),
    ] {
        for s in &m.up {
            diesel::sql_query(s.as_str()).execute(&mut conn).expect("schema");
        }
    }
    diesel::insert_into(playlists::table)
        .values((playlists::id.eq(1), playlists::name.eq("Launch"), playlists::version.eq(0)))
        .execute(&mut conn)
        .expect("playlist");
    conn
}

#[allow(dead_code)]
fn new_track(conn: &mut SqliteConnection, slot: Slot, title: &str) -> QueryResult<i64> {
    diesel::insert_into(tracks::table)
        .values((
            tracks::playlist_id.eq(slot.scope::<i64>()?),
            tracks::title.eq(title),
            tracks::position.eq(slot.int()?),
        ))
        .returning(tracks::id)
        .get_result(conn)
}
