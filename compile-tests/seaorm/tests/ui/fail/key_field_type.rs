use ordered_seaorm::DeriveOrdered;
use sea_orm::entity::prelude::*;

// a floating-point primary key cannot be an ordered table's key
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, DeriveOrdered)]
#[sea_orm(table_name = "tracks")]
#[ordered(parent_table = "playlists")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: f64,
    #[ordered(scope)]
    pub playlist_id: i64,
    #[ordered(position)]
    pub position: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

fn main() {}
