//! Tables keyed by UUIDs, through the derive, on every engine: SeaORM stores a `Uuid` as
//! `uuid` (PostgreSQL), `BINARY(16)` (MySQL/MariaDB) and a 16-byte blob (SQLite), which
//! is what the library binds and reads for `KeyType::Uuid`. The app's own ORM reads back
//! what the library wrote; results and errors carry the UUIDs; a key of another type is
//! refused before anything runs.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

use ordered_seaorm::{Error, Id, KeyType, OrderedEntity, OrderingError, Placement, Spec};
use sea_orm::{ConnectionTrait, EntityTrait, QueryOrder, Set};
use uuid::Uuid;

mod card {
    use ordered_seaorm::DeriveOrdered;
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
    #[sea_orm(table_name = "key_cards")]
    #[ordered(parent_table = "key_boards", version = "version")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: Uuid,
        #[ordered(scope)]
        pub board_id: Uuid,
        pub title: String,
        #[ordered(position)]
        pub position: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

use crate::common::*;

/// The migration's description, written without the entity.
const CARDS: Spec = Spec::new("key_cards", "board_id", "key_boards")
    .with_version("version")
    .with_id_type(KeyType::Uuid)
    .with_parent_type(KeyType::Uuid);

async fn migrate(db: &sea_orm::DatabaseConnection) {
    let boards = [board(1).into(), board(2).into(), board(3).into()];
    crate::common::migrate(db, &CARDS, &[("title", "VARCHAR(100) NOT NULL")], &boards).await;
}

fn new_card(n: u128, title: &str) -> card::ActiveModel {
    card::ActiveModel {
        id: Set(card_id(n)),
        title: Set(title.to_owned()),
        ..Default::default()
    }
}

/// The titles of a board, read by the app's own SeaORM query.
async fn titles(db: &impl ConnectionTrait, b: Uuid) -> Vec<String> {
    use sea_orm::{ColumnTrait, QueryFilter};
    card::Entity::find()
        .filter(card::Column::BoardId.eq(b))
        .order_by_asc(card::Column::Position)
        .all(db)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.title)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uuid_keyed_cards_on_every_engine() {
    for (engine, url) in engines() {
        let db = connect(engine, &url, "keys").await;
        migrate(&db).await;
        let spec = card::Entity::spec();
        assert_eq!(
            (spec.id_type, spec.parent_type),
            (KeyType::Uuid, KeyType::Uuid)
        );
        let cards = card::Entity::ordered().untyped();
        let (b1, b2) = (board(1), board(2));

        let mut ids = Vec::new();
        for (n, title) in ["a", "b", "c"].iter().enumerate() {
            let made = cards
                .insert_model(&db, b1, Placement::Last, new_card(n as u128 + 1, title))
                .await
                .unwrap();
            // the model the app gets back, and the changes, carry its UUIDs
            assert_eq!(made.value.board_id, b1, "{engine}");
            assert_eq!(made.outcome.changes.rows[0].id, made.value.id, "{engine}");
            assert_eq!(made.outcome.changes.rows[0].parent, b1, "{engine}");
            ids.push(made.value.id);
        }
        let (a, b, c) = (ids[0], ids[1], ids[2]);

        // a move writes one row, in the app's own query order
        let moved = cards.move_before(&db, c, a).await.unwrap();
        assert_eq!(moved.rows_written, 1, "{engine}");
        assert_eq!(titles(&db, b1).await, ["c", "a", "b"], "{engine}");
        let listed: Vec<Id> = cards
            .list(&db, b1)
            .await
            .unwrap()
            .iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(listed, [c, a, b], "{engine}");
        assert_eq!(cards.index_of(&db, b).await.unwrap(), 2, "{engine}");

        // between boards, both locked; the changes name the new board
        let across = cards
            .move_to_parent(&db, a, b2, Placement::First)
            .await
            .unwrap();
        assert_eq!(across.changes.rows[0].parent, b2, "{engine}");
        assert_eq!(titles(&db, b2).await, ["a"], "{engine}");

        // a stale drag is refused with the UUIDs the client sent
        let stale = cards
            .move_between(&db, b, None, Some(a.into()))
            .await
            .unwrap_err();
        assert_eq!(
            stale.refusal(),
            Some(&OrderingError::NotInCollection {
                id: a.into(),
                parent: b1.into()
            }),
            "{engine}"
        );
        // a key of another type is refused before any statement, and changes nothing
        let wrong = cards.move_to_start(&db, 5).await.unwrap_err();
        assert!(
            matches!(
                wrong,
                Error::Ordering(OrderingError::WrongKeyType {
                    expected: KeyType::Uuid,
                    ..
                })
            ),
            "{engine}: {wrong}"
        );
        assert!(matches!(
            cards.list(&db, 1).await,
            Err(Error::Ordering(OrderingError::WrongKeyType { .. }))
        ));
        assert_eq!(titles(&db, b1).await, ["c", "b"], "{engine}");

        // an empty board still has its version
        let empty = cards.list_versioned(&db, board(3)).await.unwrap();
        assert_eq!((empty.rows.len(), empty.version), (0, Some(0)), "{engine}");
        let missing = cards.list_versioned(&db, board(9)).await.unwrap_err();
        assert_eq!(
            missing.refusal(),
            Some(&OrderingError::ParentNotFound {
                parent: board(9).into()
            }),
            "{engine}"
        );
        // what the library wrote is sound
        for bd in [b1, b2] {
            let report = cards.verify(&db, bd).await.unwrap();
            assert!(report.is_ok(), "{engine}: {report:?}");
        }
    }
}
