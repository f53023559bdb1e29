use ordered_diesel::Ordered;

diesel::table! { playlist_tracks (playlist_id, track_id) { playlist_id -> BigInt, track_id -> BigInt, position -> BigInt, } }

// an association table is locked on its parent's row: without `parent` there is none
#[derive(Ordered)]
#[diesel(table_name = playlist_tracks)]
#[ordered(scope = playlist_id, id = (playlist_id, track_id))]
struct Entry { playlist_id: i64, track_id: i64, position: i64 }

fn main() {}
