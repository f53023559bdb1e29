//! A tree through `DeriveOrdered`, on every engine: folders ordered per a nullable
//! `parent_id` naming another folder (`parent_table` is the entity's own table; NULL:
//! the root list). `insert_model` sets the NULL or the parent; a move under the folder
//! itself or one of its descendants is refused with `WouldCycle`; a move to the root
//! and back; the app's own query reads the root list with `IS NULL`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

use ordered_seaorm::{Id, NullScope, OrderedEntity, OrderingError, Placement, Spec};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, Set};

mod folder {
    use ordered_seaorm::DeriveOrdered;
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
    #[sea_orm(table_name = "s_tree_folders")]
    #[ordered(parent_table = "s_tree_folders")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        #[ordered(scope)]
        pub parent_id: Option<i64>,
        pub name: String,
        #[ordered(position)]
        pub position: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

use crate::common::*;

/// The migration's description, written without the entity.
const FOLDERS: Spec = Spec::tree("s_tree_folders", "parent_id");

async fn migrate(db: &sea_orm::DatabaseConnection) {
    crate::common::migrate(db, &FOLDERS, &[("name", "VARCHAR(40) NOT NULL")], &[]).await;
}

fn new_folder(id: i64, name: &str) -> folder::ActiveModel {
    folder::ActiveModel {
        id: Set(id),
        name: Set(name.to_owned()),
        ..Default::default()
    }
}

/// The root list's names, read by the app's own SeaORM query.
async fn root_names(db: &impl ConnectionTrait) -> Vec<String> {
    folder::Entity::find()
        .filter(folder::Column::ParentId.is_null())
        .order_by_asc(folder::Column::Position)
        .all(db)
        .await
        .unwrap()
        .into_iter()
        .map(|f| f.name)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folders_in_a_tree_on_every_engine() {
    for (engine, url) in engines() {
        let db = connect(engine, &url, "tree").await;
        migrate(&db).await;
        let spec = folder::Entity::spec();
        assert_eq!(spec.null_scope, NullScope::Tree, "{engine}");
        assert_eq!(spec.unique_name(), FOLDERS.unique_name(), "{engine}");
        let folders = folder::Entity::ordered().untyped();
        let root = None::<i64>;
        for (id, name, parent) in [
            (1, "docs", root),
            (2, "src", root),
            (3, "api", Some(1)),
            (4, "v1", Some(3)),
        ] {
            let made = folders
                .insert_model(&db, parent, Placement::Last, new_folder(id, name))
                .await
                .unwrap();
            // insert_model set the parent, NULL for the root list
            assert_eq!(made.value.parent_id, parent, "{engine}");
        }
        assert_eq!(root_names(&db).await, ["docs", "src"], "{engine}");

        // docs under its grandchild: refused, nothing changes
        let e = folders
            .move_to_parent(&db, 1, 4, Placement::Last)
            .await
            .unwrap_err();
        assert_eq!(
            e.refusal(),
            Some(&OrderingError::WouldCycle {
                id: 1.into(),
                parent: 4.into()
            }),
            "{engine}"
        );
        assert_eq!(e.code(), "would_cycle", "{engine}");
        assert_eq!(e.status().http(), 409, "{engine}");
        assert_eq!(root_names(&db).await, ["docs", "src"], "{engine}");

        // v1 to the root, first; then docs under v1
        folders
            .move_to_parent(&db, 4, Id::ROOT, Placement::First)
            .await
            .unwrap();
        assert_eq!(root_names(&db).await, ["v1", "docs", "src"], "{engine}");
        let moved = folders
            .move_to_parent(&db, 1, 4, Placement::Last)
            .await
            .unwrap();
        assert_eq!(moved.rows_written, 1, "{engine}");
        assert_eq!(root_names(&db).await, ["v1", "src"], "{engine}");
        let below: Vec<Id> = folders
            .list(&db, 4)
            .await
            .unwrap()
            .iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(below, [Id::from(1)], "{engine}");
        for p in [Id::ROOT, 1.into(), 3.into(), 4.into()] {
            let report = folders.verify(&db, p).await.unwrap();
            assert!(report.is_ok(), "{engine}: {report:?}");
        }
    }
}
