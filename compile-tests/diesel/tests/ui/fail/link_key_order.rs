use ordered_diesel::Ordered;

diesel::table! { playlists (id) { id -> BigInt, } }
diesel::table! { playlist_tracks (playlist_id, track_id) { playlist_id -> BigInt, track_id -> BigInt, position -> BigInt, } }

// an association table's key starts with its scope column
#[derive(Ordered)]
#[diesel(table_name = playlist_tracks)]
#[ordered(scope = playlist_id, id = (track_id, playlist_id), parent = playlists)]
struct Entry { playlist_id: i64, track_id: i64, position: i64 }

fn main() {}
