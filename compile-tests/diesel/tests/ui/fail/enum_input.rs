use ordered_diesel::Ordered;

diesel::table! { playlists (id) { id -> BigInt, version -> BigInt, } }
diesel::table! { tracks (id) { id -> BigInt, playlist_id -> BigInt, title -> Text, position -> BigInt, } }

#[derive(Ordered)]
#[diesel(table_name = tracks)]
#[ordered(scope = playlist_id, parent = playlists)]
enum Track { A, B }

fn main() {}
