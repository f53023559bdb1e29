use ordered_diesel::Ordered;

diesel::table! { playlists (id) { id -> BigInt, version -> BigInt, } }
diesel::table! { tracks (id) { id -> BigInt, playlist_id -> BigInt, position -> Integer, } }

// an app's INTEGER sort column: refused, with the fix
#[derive(Ordered)]
#[diesel(table_name = tracks)]
#[ordered(scope = playlist_id, parent = playlists)]
struct Track { id: i64, playlist_id: i64, position: i32 }

fn main() {}
