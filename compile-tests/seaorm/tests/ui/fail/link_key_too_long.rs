use ordered_seaorm::DeriveOrdered;
use sea_orm::entity::prelude::*;

// an association table's key is its scope field and exactly one more
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
#[sea_orm(table_name = "playlist_tracks")]
#[ordered(parent_table = "playlists")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    #[ordered(scope)]
    pub playlist_id: i64,
    #[sea_orm(primary_key, auto_increment = false)]
    pub track_id: i64,
    #[sea_orm(primary_key, auto_increment = false)]
    pub take: i64,
    #[ordered(position)]
    pub position: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

fn main() {}
