use ordered_diesel::Ordered;

diesel::table! { boards (id) { id -> BigInt, version -> BigInt, } }
diesel::table! { cards (id) { id -> BigInt, board_id -> BigInt, pos -> Double, } }
diesel::table! { steps (id) { id -> BigInt, board_id -> BigInt, rank -> Numeric, } }

// a Trello-style float column
#[derive(Ordered)]
#[diesel(table_name = cards)]
#[ordered(scope = board_id, parent = boards, position = pos, strategy = numeric, spacing = 65535)]
struct Card {
    id: i64,
    board_id: i64,
    pos: f64,
}

// an exact NUMERIC(12, 4) column (Diesel's `numeric` feature)
#[derive(Ordered)]
#[diesel(table_name = steps)]
#[ordered(scope = board_id, parent = boards, position = rank, strategy = decimal, precision = 12, scale = 4)]
struct Step {
    id: i64,
    board_id: i64,
    rank: bigdecimal::BigDecimal,
}

pub fn main() {
    use ordered_diesel::{Ordered, PositionKind};
    assert_eq!(<Card as Ordered>::SPEC.strategy.kind(), PositionKind::Float);
    assert_eq!(
        <Step as Ordered>::SPEC.strategy.kind(),
        PositionKind::Decimal { precision: 12, scale: 4 }
    );
}
