// Shared by the doctests: an in-memory SQLite database with a playlist and its tracks.
#[allow(unused_imports)]
use ordered_seaorm::{DeriveOrdered, OrderedEntity};
#[allow(unused_imports)]
use sea_orm::{ActiveModelTrait, ConnectionTrait, Database, DatabaseConnection, Set};

#[allow(dead_code)]
mod track {
    use ordered_seaorm::DeriveOrdered;
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
    #[sea_orm(table_name = "tracks")]
    #[ordered(parent_table = "playlists", version = "version")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        #[ordered(scope)]
        pub playlist_id: i64,
        pub title: String,
        #[ordered(position)]
        pub position: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

#[allow(dead_code)]
async fn setup() -> Result<DatabaseConnection, sea_orm::DbErr> {
    let db = Database::connect("sqlite::memory:").await?;
    let spec = track::Entity::spec();
    let d = ordered_seaorm::Dialect::Sqlite;
    for m in [
        ordered_seaorm::__private::core_migration::create_parent_table(d, &spec, &[]),
        ordered_seaorm::__private::core_migration::create_table(d, &spec, &[("title", "TEXT NOT NULL")]),
    ] {
        for s in &m.up {
            db.execute_unprepared(s).await?;
        }
    }
    db.execute_unprepared("INSERT INTO playlists (id) VALUES (1)").await?;
    Ok(db)
}

#[allow(dead_code)]
fn new_track(
    title: &'static str,
) -> impl for<'a> FnMut(&'a sea_orm::DatabaseTransaction, ordered_seaorm::Slot) -> ordered_seaorm::InsertFuture<'a, track::Model> + Send {
    move |txn, slot| {
        Box::pin(async move {
            track::ActiveModel {
                playlist_id: Set(slot.scope()?),
                title: Set(title.to_owned()),
                position: Set(slot.int()?),
                ..Default::default()
            }
            .insert(txn)
            .await
        })
    }
}
