use ordered_seaorm::DeriveOrdered;
use sea_orm::entity::prelude::*;

// NULL names the root list, which has no row of another parent table to lock
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
#[sea_orm(table_name = "folders")]
#[ordered(parent_table = "projects")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[ordered(scope)]
    pub parent_id: Option<i64>,
    #[ordered(position)]
    pub position: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

fn main() {}
