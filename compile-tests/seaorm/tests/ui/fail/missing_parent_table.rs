use ordered_seaorm::DeriveOrdered;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
#[sea_orm(table_name = "tracks")]
#[ordered(version = "version")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[ordered(scope)]
    pub playlist_id: i64,
    #[ordered(position)]
    pub position: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

fn main() {}
