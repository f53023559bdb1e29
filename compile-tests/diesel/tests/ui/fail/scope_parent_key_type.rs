use ordered_diesel::Ordered;

diesel::table! { playlists (id) { id -> BigInt, } }
diesel::table! { tracks (id) { id -> BigInt, playlist_id -> Integer, position -> BigInt, } }

// the scope column is INTEGER, the parent's key BIGINT
#[derive(Ordered)]
#[diesel(table_name = tracks)]
#[ordered(scope = playlist_id, parent = playlists)]
struct Track { id: i64, playlist_id: i32, position: i64 }

fn main() {}
