use ordered_seaorm::{DeriveOrdered, KeyType, OrderedEntity};

mod card {
    use super::DeriveOrdered;
    use sea_orm::entity::prelude::*;

    // UUID cards on string boards
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
    #[sea_orm(table_name = "cards")]
    #[ordered(parent_table = "boards")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: Uuid,
        #[ordered(scope)]
        pub board_id: String,
        #[ordered(position)]
        pub position: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

mod step {
    use super::DeriveOrdered;
    use sea_orm::entity::prelude::*;

    // 32-bit keys
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
    #[sea_orm(table_name = "steps")]
    #[ordered(parent_table = "lists", filter = "deleted = FALSE")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i32,
        #[ordered(scope)]
        pub list_id: i32,
        #[ordered(position)]
        pub position: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

fn main() {
    let c = card::Entity::spec();
    assert_eq!((c.id_type, c.parent_type), (KeyType::Uuid, KeyType::Text));
    let s = step::Entity::spec();
    assert_eq!((s.id_type, s.parent_type), (KeyType::Int, KeyType::Int));
    assert_eq!((s.filter, c.filter), (Some("deleted = FALSE"), None));
}
