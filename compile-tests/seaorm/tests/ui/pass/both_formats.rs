use ordered_seaorm::{DeriveOrdered, OrderedEntity, PositionKind};

mod classic {
    use super::DeriveOrdered;
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
    #[sea_orm(table_name = "cards")]
    #[ordered(
        parent_table = "columns",
        strategy = "fractional",
        max_len = 32,
        policy = "whole",
        version = "version"
    )]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        #[ordered(scope)]
        pub column_id: i64,
        #[ordered(position)]
        #[sea_orm(column_name = "rank")]
        pub sort_key: String,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

mod dense_format {
    use super::DeriveOrdered;
    use sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
    #[sea_orm(table_name = "steps")]
    #[ordered(parent_table = "checklists", strategy = "dense")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        #[ordered(scope)]
        pub checklist_id: i64,
        #[ordered(position)]
        pub position: i64,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

pub fn main() {
    let c = classic::Entity::spec();
    assert_eq!(
        (c.table, c.parent, c.position, c.parent_table),
        ("cards", "column_id", "rank", "columns")
    );
    assert_eq!(c.strategy.kind(), PositionKind::Key { max_len: 32 });
    assert_eq!(c.version, Some("version"));
    let d = dense_format::Entity::spec();
    assert_eq!(
        (d.table, d.parent, d.position),
        ("steps", "checklist_id", "position")
    );
    assert!(d.strategy.is_dense());
}
