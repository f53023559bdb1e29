use ordered_seaorm::DeriveOrdered;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel, DeriveOrdered)]
#[sea_orm(table_name = "cards")]
#[ordered(parent_table = "boards", strategy = "decimal", precision = 12, scale = 4)]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[ordered(scope)]
    pub board_id: i64,
    #[ordered(position)]
    pub position: f64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

fn main() {}
