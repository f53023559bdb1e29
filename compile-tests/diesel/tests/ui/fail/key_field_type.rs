use ordered_diesel::Ordered;

diesel::table! { playlists (id) { id -> BigInt, version -> BigInt, } }
diesel::table! { tracks (id) { id -> BigInt, playlist_id -> BigInt, title -> Text, position -> BigInt, } }

// the column is BIGINT, the field an i32
#[derive(Ordered)]
#[diesel(table_name = tracks)]
#[ordered(scope = playlist_id, parent = playlists)]
struct Track { id: i32, playlist_id: i64, position: i64 }

fn main() {}
