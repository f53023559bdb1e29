use ordered_seaorm::DeriveOrdered;
use sea_orm::entity::prelude::*;

// a list per several columns cannot have a NULL part
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
#[sea_orm(table_name = "cards")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[ordered(scope)]
    pub board_id: Option<i64>,
    #[ordered(scope)]
    pub status: String,
    #[ordered(position)]
    pub position: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

fn main() {}
