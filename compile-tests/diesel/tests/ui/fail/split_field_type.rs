use ordered_diesel::Ordered;

diesel::table! { boards (id) { id -> BigInt, version -> BigInt, } }
diesel::table! { cards (id) { id -> BigInt, board_id -> BigInt, status -> Text, position -> BigInt, } }

// a list per (board, status): the status column is text, the field an integer
#[derive(Ordered)]
#[diesel(table_name = cards)]
#[ordered(scope = (board_id, status), parent = boards)]
struct Card { id: i64, board_id: i64, status: i64, position: i64 }

fn main() {}
