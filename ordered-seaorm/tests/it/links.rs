//! An association table through `DeriveOrdered`, on every engine: a playlist's entries
//! whose primary key is `(playlist_id, track_id)`, the scope field and one more. One
//! track sits in two playlists; `insert_model` names the new link by the pair; a move
//! and the changes name links so; removing a track from one playlist leaves the other;
//! a link cannot move to another playlist.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

use ordered_seaorm::{Id, OrderedEntity, OrderingError, Placement, Spec};
use sea_orm::Set;

mod entry {
    use ordered_seaorm::DeriveOrdered;
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
    #[sea_orm(table_name = "s_link_entries")]
    #[ordered(parent_table = "s_link_playlists", version = "version")]
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
}

use crate::common::*;

/// The migration's description, written without the entity.
const ENTRIES: Spec = Spec::link(
    "s_link_entries",
    "playlist_id",
    "s_link_playlists",
    "track_id",
)
.with_version("version");

async fn migrate(db: &sea_orm::DatabaseConnection) {
    crate::common::migrate(db, &ENTRIES, &[], &[1.into(), 2.into()]).await;
}

fn track(t: i64) -> entry::ActiveModel {
    entry::ActiveModel {
        track_id: Set(t),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_named_by_their_pair_on_every_engine() {
    for (engine, url) in engines() {
        let db = connect(engine, &url, "links").await;
        migrate(&db).await;
        let spec = entry::Entity::spec();
        assert!(spec.is_link(), "{engine}");
        assert_eq!(
            (spec.id, spec.parent),
            ("track_id", "playlist_id"),
            "{engine}"
        );
        let o = entry::Entity::ordered().untyped();
        let link = |p: i64, t: i64| Id::from((p, t));
        for (p, t) in [(1, 10), (1, 20), (2, 10)] {
            let made = o
                .insert_model(&db, p, Placement::Last, track(t))
                .await
                .unwrap();
            assert_eq!(
                (made.value.playlist_id, made.value.track_id),
                (p, t),
                "{engine}"
            );
            assert_eq!(made.outcome.changes.rows[0].id, link(p, t), "{engine}");
        }
        let moved = o.move_before(&db, link(1, 20), link(1, 10)).await.unwrap();
        assert_eq!(moved.changes.rows[0].id, link(1, 20), "{engine}");
        let e = o
            .move_to_parent(&db, link(1, 10), 2, Placement::Last)
            .await
            .unwrap_err();
        assert!(
            matches!(e.refusal(), Some(OrderingError::InvalidRequest(_))),
            "{engine}: {e}"
        );
        o.remove(&db, link(1, 10)).await.unwrap();
        let ids = |rows: Vec<ordered_seaorm::Row>| rows.iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(
            ids(o.list(&db, 1).await.unwrap()),
            [link(1, 20)],
            "{engine}"
        );
        assert_eq!(
            ids(o.list(&db, 2).await.unwrap()),
            [link(2, 10)],
            "{engine}"
        );
        for p in [1, 2] {
            let report = o.verify(&db, p).await.unwrap();
            assert!(report.is_ok(), "{engine}: {report:?}");
        }
    }
}
