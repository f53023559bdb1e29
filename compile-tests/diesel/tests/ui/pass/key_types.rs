use ordered_diesel::{KeyType, Ordered};

diesel::table! { boards (id) { id -> Text, } }
diesel::table! { cards (id) { id -> Binary, board_id -> Text, position -> BigInt, } }
diesel::table! { lists (id) { id -> Integer, } }
diesel::table! { steps (id) { id -> SmallInt, list_id -> Integer, position -> Integer, } }

// string boards, 16-byte UUID cards (MySQL BINARY(16), an SQLite blob)
#[derive(Ordered)]
#[diesel(table_name = cards)]
#[ordered(scope = board_id, parent = boards)]
struct Card { id: Vec<u8>, board_id: String, position: i64 }

// archived cards stay in place but are not shown
#[derive(Ordered)]
#[diesel(table_name = cards)]
#[ordered(scope = board_id, parent = boards, filter = "archived_at IS NULL")]
struct Shown { id: Vec<u8>, board_id: String }

// 32-bit lists, 16-bit steps
#[derive(Ordered)]
#[diesel(table_name = steps)]
#[ordered(scope = list_id, parent = lists)]
struct Step { id: i16, list_id: i32, position: i32 }

fn main() {
    assert_eq!((Card::SPEC.id_type, Card::SPEC.parent_type), (KeyType::Uuid, KeyType::Text));
    assert_eq!((Step::SPEC.id_type, Step::SPEC.parent_type), (KeyType::Int, KeyType::Int));
    assert_eq!((Shown::SPEC.filter, Card::SPEC.filter), (Some("archived_at IS NULL"), None));
}
