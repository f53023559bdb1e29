use ordered_seaorm::{DeriveOrdered, OrderedEntity, PositionKind};

mod cards {
    use super::DeriveOrdered;
    use sea_orm::entity::prelude::*;

    // a Trello-style float column
    #[derive(Clone, Debug, PartialEq, DeriveEntityModel, DeriveOrdered)]
    #[sea_orm(table_name = "cards")]
    #[ordered(parent_table = "boards", strategy = "numeric", spacing = 65535)]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        #[ordered(scope)]
        pub board_id: i64,
        #[ordered(position)]
        pub position: f64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

mod steps {
    use super::DeriveOrdered;
    use sea_orm::entity::prelude::*;

    // an exact NUMERIC(12, 4) column (`ordered-seaorm`'s `decimal` feature)
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
    #[sea_orm(table_name = "steps")]
    #[ordered(parent_table = "boards", strategy = "decimal", precision = 12, scale = 4)]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        #[ordered(scope)]
        pub board_id: i64,
        #[ordered(position)]
        #[sea_orm(column_type = "Decimal(Some((12, 4)))")]
        pub position: Decimal,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub fn main() {
    assert_eq!(cards::Entity::spec().strategy.kind(), PositionKind::Float);
    assert_eq!(
        steps::Entity::spec().strategy.kind(),
        PositionKind::Decimal { precision: 12, scale: 4 }
    );
}
