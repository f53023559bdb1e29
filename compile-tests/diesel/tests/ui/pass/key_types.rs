use ordered_diesel::{KeyType, Ordered};

diesel::table! { boards (id) { id -> Text, } }
diesel::table! { cards (id) { id -> Binary, board_id -> Text, position -> BigInt, } }
diesel::table! { lists (id) { id -> Integer, } }
diesel::table! { steps (id) { id -> SmallInt, list_id -> Integer, position -> BigInt, } }

// string boards, 16-byte UUID cards (MySQL BINARY(16), an SQLite blob)
#[derive(Ordered)]
#[diesel(table_name = cards)]
#[ordered(scope = board_id, parent = boards)]
struct Card {
    id: Vec<u8>,
    board_id: String,
    position: i64,
}

// archived cards stay in place but are not shown
#[derive(Ordered)]
#[diesel(table_name = cards)]
#[ordered(scope = board_id, parent = boards, filter = "archived_at IS NULL")]
struct Shown {
    id: Vec<u8>,
    board_id: String,
}

// 32-bit lists, 16-bit steps
#[derive(Ordered)]
#[diesel(table_name = steps)]
#[ordered(scope = list_id, parent = lists)]
struct Step {
    id: i16,
    list_id: i32,
    position: i64,
}

diesel::table! { column_cards (id) { id -> Binary, board_id -> Text, status -> Text, lane -> Integer, position -> BigInt, } }

// cards per (board, status, lane), locked on the board
#[derive(Ordered)]
#[diesel(table_name = column_cards)]
#[ordered(scope = (board_id, status, lane), parent = boards)]
struct ColumnCard {
    id: Vec<u8>,
    board_id: String,
    status: String,
    lane: i32,
    position: i64,
}

diesel::table! { tasks (id) { id -> BigInt, list_id -> Integer, position -> BigInt, } }
diesel::table! { steps_global (id) { id -> Text, position -> BigInt, } }

// lists with no table of their own: locked and versioned in the lock table
#[derive(Ordered)]
#[diesel(table_name = tasks)]
#[ordered(scope = list_id)]
struct Task {
    id: i64,
    list_id: i32,
    position: i64,
}

// one list of the whole table
#[derive(Ordered)]
#[diesel(table_name = steps_global)]
#[ordered(strategy = gapped)]
struct GlobalStep {
    id: String,
    position: i64,
}

pub fn main() {
    use ordered_diesel::{ScopeColumn, Spec};
    let lone = Spec::without_parent("tasks", "list_id");
    assert!(Task::SPEC.locks_rows() && !Task::SPEC.is_global());
    assert_eq!(
        (
            Task::SPEC.parent_table,
            Task::SPEC.parent_id,
            Task::SPEC.version
        ),
        (lone.parent_table, lone.parent_id, lone.version)
    );
    assert!(GlobalStep::SPEC.locks_rows() && GlobalStep::SPEC.is_global());
    assert_eq!(GlobalStep::SPEC.id_type, KeyType::Text);
    assert_eq!(
        ColumnCard::SPEC.split_by,
        [ScopeColumn::text("status"), ScopeColumn::int("lane")]
    );
    assert_eq!(
        ColumnCard::SPEC.unique_name(),
        "column_cards_board_id_status_lane_position_key"
    );
    assert_eq!(
        (Card::SPEC.id_type, Card::SPEC.parent_type),
        (KeyType::Uuid, KeyType::Text)
    );
    assert_eq!(
        (Step::SPEC.id_type, Step::SPEC.parent_type),
        (KeyType::Int, KeyType::Int)
    );
    assert_eq!(
        (Shown::SPEC.filter, Card::SPEC.filter),
        (Some("archived_at IS NULL"), None)
    );
}
