//! What the board's test files share.

use board::card;
use ordered_seaorm::{OrderedEntity, Placement};

/// A second board, `other`, with one card at the end of its To do; returns the card's
/// id (what a hostile client would send to this board's routes).
pub(crate) async fn other_board(db: &sea_orm::DatabaseConnection, other: uuid::Uuid) -> uuid::Uuid {
    board::add_board(db, other).await.unwrap();
    let row = board::new_card("Another board's card");
    let id = *row.id.as_ref();
    card::Entity::ordered()
        .insert_model(db, (other, "todo".to_owned()), Placement::Last, row)
        .await
        .unwrap();
    id
}
