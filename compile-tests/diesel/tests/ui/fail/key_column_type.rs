use ordered_diesel::Ordered;

diesel::table! { playlists (id) { id -> BigInt, } }
diesel::table! { tracks (id) { id -> Double, playlist_id -> BigInt, position -> BigInt, } }

// a floating-point key column
#[derive(Ordered)]
#[diesel(table_name = tracks)]
#[ordered(scope = playlist_id, parent = playlists)]
struct Track { playlist_id: i64, position: i64 }

fn main() {}
