use ordered_diesel::Ordered;

diesel::table! { boards (id) { id -> BigInt, } }
diesel::table! { cards (id) { id -> BigInt, board_id -> BigInt, position -> BigInt, } }

// `status` is not a column of `cards`
#[derive(Ordered)]
#[diesel(table_name = cards)]
#[ordered(scope = (board_id, status), parent = boards)]
struct Card { id: i64, board_id: i64, position: i64 }

fn main() {}
