use ordered_seaorm::DeriveOrdered;
use sea_orm::entity::prelude::*;

// a tree: the parent is a row of the same table, NULL the root list; removing a folder
// is refused while it has children
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
#[sea_orm(table_name = "folders")]
#[ordered(parent_table = "folders", removal = "refuse")]
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

pub fn main() {
    use ordered_seaorm::OrderedEntity;
    assert_eq!(Entity::spec().removal, ordered_seaorm::Removal::Refuse);
}
