use ordered_diesel::Ordered;

diesel::table! { boards (id) { id -> BigInt, version -> BigInt, } }
diesel::table! { cards (id) { id -> BigInt, board_id -> BigInt, position -> Numeric, } }

#[derive(Ordered)]
#[diesel(table_name = cards)]
#[ordered(scope = board_id, parent = boards, strategy = decimal, precision = 12)]
struct Card { id: i64, board_id: i64 }

#[derive(Ordered)]
#[diesel(table_name = cards)]
#[ordered(scope = board_id, parent = boards, strategy = decimal, precision = 20, scale = 4)]
struct Wide { id: i64, board_id: i64 }

#[derive(Ordered)]
#[diesel(table_name = cards)]
#[ordered(scope = board_id, parent = boards, strategy = gapped, scale = 4)]
struct Stray { id: i64, board_id: i64 }

fn main() {}
