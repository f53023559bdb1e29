use ordered_diesel::Ordered;

diesel::table! { boards (id) { id -> BigInt, } }
diesel::table! { cards (id) { id -> BigInt, board_id -> BigInt, status -> Text, position -> BigInt, } }

#[derive(Ordered)]
#[diesel(table_name = cards)]
#[ordered(scope = (board_id, status, board_id), parent = boards)]
struct Card { id: i64, board_id: i64, status: String, position: i64 }

fn main() {}
