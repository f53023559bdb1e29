//! A list per several columns through `DeriveOrdered`, on every engine: two
//! `#[ordered(scope)]` fields order cards per `(board_id, status)`, locked on the board.
//! `insert_model` sets both scope fields; a move between two status columns of a board
//! locks one row, between boards both; the app's own query reads each column in order;
//! a board alone names no list.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

use ordered_seaorm::{Id, KeyType, OrderedEntity, OrderingError, Placement, ScopeColumn, Spec};
use sea_orm::{ConnectionTrait, EntityTrait, QueryOrder, Set};
use uuid::Uuid;

mod card {
    use ordered_seaorm::DeriveOrdered;
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
    #[sea_orm(table_name = "cmp_cards")]
    #[ordered(parent_table = "cmp_boards", version = "version")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: Uuid,
        #[ordered(scope)]
        pub board_id: Uuid,
        #[ordered(scope)]
        pub status: String,
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
const CARDS: Spec = Spec::new("cmp_cards", "board_id", "cmp_boards")
    .with_version("version")
    .with_id_type(KeyType::Uuid)
    .with_parent_type(KeyType::Uuid)
    .with_split_by(&[ScopeColumn::text("status")]);

fn list(b: Uuid, status: &str) -> Id {
    Id::from((b, Id::text(status).unwrap()))
}

async fn migrate(db: &sea_orm::DatabaseConnection) {
    let boards = [board(1).into(), board(2).into()];
    crate::common::migrate(db, &CARDS, &[("title", "VARCHAR(100) NOT NULL")], &boards).await;
}

fn new_card(n: u128, title: &str) -> card::ActiveModel {
    card::ActiveModel {
        id: Set(card_id(n)),
        title: Set(title.to_owned()),
        ..Default::default()
    }
}

/// The titles of one column of a board, read by the app's own SeaORM query.
async fn titles(db: &impl ConnectionTrait, b: Uuid, status: &str) -> Vec<String> {
    use sea_orm::{ColumnTrait, QueryFilter};
    card::Entity::find()
        .filter(card::Column::BoardId.eq(b))
        .filter(card::Column::Status.eq(status))
        .order_by_asc(card::Column::Position)
        .all(db)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.title)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cards_per_board_and_status_on_every_engine() {
    for (engine, url) in engines() {
        let db = connect(engine, &url, "composite").await;
        migrate(&db).await;
        let spec = card::Entity::spec();
        assert_eq!(spec.split_by, CARDS.split_by, "{engine}");
        assert_eq!(spec.unique_name(), CARDS.unique_name(), "{engine}");
        let cards = card::Entity::ordered().untyped();
        let (b1, b2) = (board(1), board(2));
        let (todo, done) = (list(b1, "todo"), list(b1, "done"));

        let mut ids = Vec::new();
        for (n, (title, to)) in [("a", todo), ("b", todo), ("c", done)]
            .into_iter()
            .enumerate()
        {
            let made = cards
                .insert_model(&db, to, Placement::Last, new_card(n as u128 + 1, title))
                .await
                .unwrap();
            // insert_model set both scope fields
            assert_eq!(
                (made.value.board_id, made.value.status.as_str()),
                (b1, if to == todo { "todo" } else { "done" }),
                "{engine}"
            );
            assert_eq!(made.outcome.changes.rows[0].parent, to, "{engine}");
            ids.push(made.value.id);
        }
        let (a, b, c) = (ids[0], ids[1], ids[2]);
        assert_eq!(titles(&db, b1, "todo").await, ["a", "b"], "{engine}");

        // to the other column: one row, one lock
        let across = cards
            .move_to_parent(&db, b, done, Placement::Before(c.into()))
            .await
            .unwrap();
        assert_eq!(across.rows_written, 1, "{engine}");
        assert_eq!(across.changes.versions.len(), 1, "{engine}");
        assert_eq!(titles(&db, b1, "done").await, ["b", "c"], "{engine}");

        // to another board: both
        let away = cards
            .move_to_parent(&db, a, list(b2, "doing"), Placement::First)
            .await
            .unwrap();
        assert_eq!(away.changes.versions.len(), 2, "{engine}");
        assert_eq!(titles(&db, b2, "doing").await, ["a"], "{engine}");
        assert!(titles(&db, b1, "todo").await.is_empty(), "{engine}");

        // refusals: the anchor is in another column; a board alone
        let other = cards
            .move_to_parent(&db, c, list(b1, "todo"), Placement::After(a.into()))
            .await
            .unwrap_err();
        assert_eq!(
            other.refusal(),
            Some(&OrderingError::NotInCollection {
                id: a.into(),
                parent: todo
            }),
            "{engine}"
        );
        let bare = cards
            .move_to_parent(&db, c, b1, Placement::Last)
            .await
            .unwrap_err();
        assert!(
            matches!(bare.refusal(), Some(OrderingError::WrongScope { .. })),
            "{engine}: {bare}"
        );
        let listed: Vec<Id> = cards
            .list(&db, done)
            .await
            .unwrap()
            .iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(listed, [Id::from(b), Id::from(c)], "{engine}");
        for l in [todo, done, list(b2, "doing")] {
            let report = cards.verify(&db, l).await.unwrap();
            assert!(report.is_ok(), "{engine}: {report:?}");
        }
    }
}
