use ordered_seaorm::DeriveOrdered;
use sea_orm::entity::prelude::*;

// an app's INTEGER sort column: refused, with the fix
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
#[sea_orm(table_name = "tracks")]
#[ordered(parent_table = "playlists")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[ordered(scope)]
    pub playlist_id: i64,
    #[ordered(position)]
    pub position: i32,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

fn main() {}
