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

mod column_card {
    use super::DeriveOrdered;
    use sea_orm::entity::prelude::*;

    // cards per (board, status): both scope fields marked, the board's first
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
    #[sea_orm(table_name = "column_cards")]
    #[ordered(parent_table = "boards")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: Uuid,
        #[ordered(scope)]
        pub board_id: Uuid,
        #[ordered(scope)]
        pub status: String,
        #[ordered(position)]
        pub position: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

mod task {
    use super::DeriveOrdered;
    use sea_orm::entity::prelude::*;

    // lists with no table of their own: locked and versioned in the lock table
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
    #[sea_orm(table_name = "tasks")]
    #[ordered(strategy = "gapped")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        #[ordered(scope)]
        pub list_id: i32,
        #[ordered(position)]
        pub position: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

mod global_step {
    use super::DeriveOrdered;
    use sea_orm::entity::prelude::*;

    // one list of the whole table
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
    #[sea_orm(table_name = "global_steps")]
    #[ordered(strategy = "gapped")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        #[ordered(position)]
        pub position: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub fn main() {
    let t = task::Entity::spec();
    assert!(t.locks_rows() && !t.is_global());
    assert_eq!((t.parent, t.version), ("list_id", Some("version")));
    let g = global_step::Entity::spec();
    assert!(g.locks_rows() && g.is_global());
    let k = column_card::Entity::spec();
    assert_eq!((k.parent, k.parent_type), ("board_id", KeyType::Uuid));
    assert_eq!(k.split_by, [ordered_seaorm::ScopeColumn::text("status")]);
    assert!(matches!(
        <column_card::Entity as OrderedEntity>::split_columns().as_slice(),
        [column_card::Column::Status]
    ));
    let c = card::Entity::spec();
    assert_eq!((c.id_type, c.parent_type), (KeyType::Uuid, KeyType::Text));
    let s = step::Entity::spec();
    assert_eq!((s.id_type, s.parent_type), (KeyType::Int, KeyType::Int));
    assert_eq!((s.filter, c.filter), (Some("deleted = FALSE"), None));
}
