use ordered_diesel::Ordered;

diesel::table! { boards (id) { id -> Text, } }
diesel::table! { cards (id) { id -> Text, board_id -> Text, position -> BigInt, } }

// the scope column holds text keys, the field is an integer
#[derive(Ordered)]
#[diesel(table_name = cards)]
#[ordered(scope = board_id, parent = boards)]
struct Card { id: String, board_id: i64, position: i64 }

fn main() {}
