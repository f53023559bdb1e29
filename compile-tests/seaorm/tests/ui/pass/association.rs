use ordered_seaorm::{DeriveOrdered, OrderedEntity};
use sea_orm::entity::prelude::*;

// an association table: its primary key is its scope field and its own key
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
#[sea_orm(table_name = "playlist_tracks")]
#[ordered(parent_table = "playlists")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    #[ordered(scope)]
    pub playlist_id: i64,
    #[sea_orm(primary_key, auto_increment = false)]
    pub track_id: i64,
    #[ordered(position)]
    pub position: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

pub fn main() {
    assert!(Entity::spec().is_link());
    assert_eq!(Entity::spec().id, "track_id");
}
