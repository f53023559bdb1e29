use ordered_seaorm::DeriveOrdered;
use sea_orm::entity::prelude::*;

// cards per (board, status): a floating-point status cannot be a scope value
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, DeriveOrdered)]
#[sea_orm(table_name = "cards")]
#[ordered(parent_table = "boards")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[ordered(scope)]
    pub board_id: i64,
    #[ordered(scope)]
    pub status: f64,
    #[ordered(position)]
    pub position: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

fn main() {}
