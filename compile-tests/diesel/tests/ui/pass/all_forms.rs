use ordered_diesel::Ordered;

diesel::table! { playlists (id) { id -> BigInt, version -> BigInt, } }
diesel::table! { tracks (id) { id -> BigInt, playlist_id -> BigInt, title -> Text, position -> BigInt, } }

diesel::table! { cards (id) { id -> BigInt, column_id -> BigInt, rank -> Text, } }
diesel::table! { board_columns (id) { id -> BigInt, } }

#[derive(Ordered)]
#[diesel(table_name = tracks)]
#[ordered(scope = playlist_id, parent = playlists, version = version, spacing = 64, policy = whole, unique = "tracks_pos_uq")]
struct Track {
    id: i64,
    playlist_id: i64,
    position: i64,
}

#[derive(Ordered)]
#[diesel(table_name = cards)]
#[ordered(scope = column_id, parent = board_columns, position = rank, strategy = fractional, max_len = 32)]
struct Card {
    id: i64,
    column_id: i64,
    rank: String,
}

#[derive(Ordered)]
#[diesel(table_name = tracks)]
#[ordered(scope = playlist_id, parent = playlists, strategy = dense, policy = never)]
struct Step {
    id: i64,
}

static MINE: ordered_diesel::Gapped = ordered_diesel::Gapped::new(10);

#[derive(Ordered)]
#[diesel(table_name = tracks)]
#[ordered(scope = playlist_id, parent = playlists, strategy = MINE)]
struct Custom {
    id: i64,
}

pub fn main() {
    assert_eq!(Track::SPEC.table, "tracks");
    assert_eq!(Track::SPEC.version, Some("version"));
    assert_eq!(Track::SPEC.unique_name(), "tracks_pos_uq");
    assert_eq!(Card::SPEC.position, "rank");
    assert_eq!(
        Card::SPEC.strategy.kind(),
        ordered_diesel::PositionKind::Key { max_len: 32 }
    );
    assert!(Step::SPEC.strategy.is_dense());
    assert_eq!(Custom::SPEC.parent_table, "playlists");
}
