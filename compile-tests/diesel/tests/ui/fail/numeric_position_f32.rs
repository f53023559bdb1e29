use ordered_diesel::Ordered;

diesel::table! { boards (id) { id -> BigInt, version -> BigInt, } }
diesel::table! { cards (id) { id -> BigInt, board_id -> BigInt, position -> Float, } }

#[derive(Ordered)]
#[diesel(table_name = cards)]
#[ordered(scope = board_id, parent = boards, strategy = numeric)]
struct Card { id: i64, board_id: i64, position: f32 }

fn main() {}
