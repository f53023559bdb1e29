use ordered_diesel::{Id, Ordered};

diesel::table! { playlists (id) { id -> BigInt, } }
diesel::table! { playlist_tracks (playlist_id, track_id) { playlist_id -> BigInt, track_id -> BigInt, position -> BigInt, } }

// an association table: keyed by its playlist and its track, no id of its own
#[derive(Ordered)]
#[diesel(table_name = playlist_tracks)]
#[ordered(scope = playlist_id, id = (playlist_id, track_id), parent = playlists)]
struct Entry {
    playlist_id: i64,
    track_id: i64,
    position: i64,
}

pub fn main() {
    assert!(<Entry as Ordered>::SPEC.is_link());
    assert!(
        <Entry as Ordered>::SPEC
            .check_item(Id::from((1, 2)))
            .is_ok()
    );
}
