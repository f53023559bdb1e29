//! The SeaORM demo: `cargo run -p checklist`.
//!
//! A release checklist whose steps two clients reorder at once, as a web app's handlers
//! would: each client reads the list with its version, drags with that version, and
//! gets back exactly which rows moved (what a server broadcasts to every open client).
//! The loser of a race is refused with a typed error, mapped here to the HTTP status a
//! handler would answer with; every move also writes an outbox row inside the
//! library's own transaction.
//!
//! Embedded SQLite by default; `DATABASE_URL=postgres://...` or `mysql://...` runs the
//! same steps on a server (the tables are prefixed `demo_checklist_` and dropped first).

use ordered_seaorm::migration::{create_ordered_table, create_parent_table};
use ordered_seaorm::{Changes, OrderedEntity, Placement, Request, Spec, Status, refusal};
use sea_orm::{ConnectionTrait, Database, DatabaseConnection, DbErr, Statement};
use sea_orm_migration::SchemaManager;

// SeaORM's entity macros generate `pub` items
#[allow(unreachable_pub)]
mod step {
    //! The entity: a checklist step, ordered within its checklist.
    use ordered_seaorm::DeriveOrdered;
    use sea_orm::entity::prelude::*;

    /// A checklist step.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
    #[sea_orm(table_name = "demo_checklist_steps")]
    #[ordered(parent_table = "demo_checklists", version = "version")]
    pub struct Model {
        /// The step's id.
        #[sea_orm(primary_key)]
        pub id: i64,
        /// The checklist it belongs to.
        #[ordered(scope)]
        pub checklist_id: i64,
        /// What to do.
        pub title: String,
        /// Its place (gapped integers).
        #[ordered(position)]
        pub position: i64,
    }

    /// No relations in the demo.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// What the migration crate writes, without seeing the entity (in SeaORM's usual layout
/// it cannot): the same table description, from names.
const MIGRATION_SPEC: Spec =
    Spec::new("demo_checklist_steps", "checklist_id", "demo_checklists").with_version("version");

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The status and body a web handler would answer with: the library's error says both.
fn respond(e: &ordered_seaorm::Error) -> (u16, String) {
    let body = format!(r#"{{"code":"{}","message":"{}"}}"#, e.code(), e);
    (e.status().http(), body)
}

async fn titles(db: &DatabaseConnection) -> Res<Vec<String>> {
    use sea_orm::{EntityTrait, QueryOrder};
    Ok(step::Entity::find()
        .order_by_asc(step::Column::Position)
        .all(db)
        .await?
        .into_iter()
        .map(|s| s.title)
        .collect())
}

fn describe(changes: &Changes<i64, i64>) -> String {
    let mut out: Vec<String> = changes
        .rows
        .iter()
        .map(|c| format!("{}@{}", c.id, c.position))
        .collect();
    out.extend(changes.relabelled.iter().map(|r| {
        format!(
            "{} rows of {} in {}..={}",
            r.rows, r.parent, r.first, r.last
        )
    }));
    out.join(", ")
}

async fn migrate(db: &DatabaseConnection) -> Res<()> {
    for t in [
        "demo_checklist_outbox",
        "demo_checklist_steps",
        "demo_checklists",
    ] {
        db.execute_unprepared(&format!("DROP TABLE IF EXISTS {t}"))
            .await?;
    }
    let manager = SchemaManager::new(db);
    create_parent_table(&manager, &MIGRATION_SPEC, &[]).await?;
    create_ordered_table(
        &manager,
        &MIGRATION_SPEC,
        &[("title", "VARCHAR(100) NOT NULL")],
    )
    .await?;
    db.execute_unprepared(
        "CREATE TABLE demo_checklist_outbox (step_id BIGINT NOT NULL, body VARCHAR(200) NOT NULL)",
    )
    .await?;
    db.execute_unprepared("INSERT INTO demo_checklists (id) VALUES (1)")
        .await?;
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Res<()> {
    let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| "sqlite::memory:".into());
    let db = Database::connect(&url).await?;
    let spec = step::Entity::spec();
    assert_eq!(
        (spec.table, spec.parent, spec.position, spec.version),
        (
            MIGRATION_SPEC.table,
            MIGRATION_SPEC.parent,
            MIGRATION_SPEC.position,
            MIGRATION_SPEC.version
        ),
        "the migration's description matches the entity's"
    );
    migrate(&db).await?;
    println!("checklist demo on {}", url.split(':').next().unwrap_or(""));

    // the app's ActiveModel, inserted where the library says
    let steps = step::Entity::ordered();
    let mut ids = Vec::new();
    for title in ["Tag", "Build", "Test", "Publish"] {
        let model = step::ActiveModel {
            title: sea_orm::Set(title.into()),
            ..Default::default()
        };
        let inserted = steps.insert_model(&db, 1, Placement::Last, model).await?;
        ids.push(inserted.value.id);
    }
    let [tag, build, test, publish] = ids[..] else {
        return Err("four steps".into());
    };
    println!("1. inserted:        {:?}", titles(&db).await?);

    // two clients read the same list, with its version
    let seen = steps.list_versioned(&db, 1).await?;
    let version = seen.version.ok_or("a version column")?;
    println!("2. both clients see version {version}");

    // client A drags Test before Build: one row written, and the outbox row with it
    let moved = steps
        .clone()
        .expect_version(version)
        .apply(
            &db,
            Request::Move {
                item: test.into(),
                at: Placement::Between {
                    prev: Some(tag.into()),
                    next: Some(build.into()),
                },
            },
            |txn, changes| {
                Box::pin(async move {
                    for c in &changes.rows {
                        txn.execute_raw(Statement::from_sql_and_values(
                            txn.get_database_backend(),
                            match txn.get_database_backend() {
                                sea_orm::DbBackend::Postgres => {
                                    "INSERT INTO demo_checklist_outbox (step_id, body) VALUES ($1, $2)"
                                }
                                _ => "INSERT INTO demo_checklist_outbox (step_id, body) VALUES (?, ?)",
                            },
                            [c.id.into(), format!("moved to {}", c.position).into()],
                        ))
                        .await?;
                    }
                    Ok::<(), DbErr>(())
                })
            },
        )
        .await?;
    println!(
        "3. client A moved Test: {:?}; changes [{}], version {:?}",
        titles(&db).await?,
        describe(&moved.changes),
        moved.version
    );

    // client B drags with the version it read before A's move: refused, nothing written
    let stale = steps
        .clone()
        .expect_version(version)
        .move_between(&db, publish, Some(tag), Some(build))
        .await;
    let err = stale.err().ok_or("client B's stale drag must be refused")?;
    let (status, body) = respond(&err);
    println!("4. client B is refused: HTTP {status} {body}");
    assert_eq!(err.status(), Status::Conflict);

    // B re-reads and retries: accepted
    let fresh = steps.list_versioned(&db, 1).await?;
    let retried = steps
        .clone()
        .expect_version(fresh.version.ok_or("a version column")?)
        .move_to_start(&db, publish)
        .await?;
    println!(
        "5. client B re-read and moved Publish first: {:?}; changes [{}]",
        titles(&db).await?,
        describe(&retried.changes)
    );

    // crowd one gap until the library relabels the neighbours: every moved row is listed
    let mut relabel = None;
    for i in 0..12 {
        let model = step::ActiveModel {
            title: sea_orm::Set(format!("Check {i}")),
            ..Default::default()
        };
        let inserted = steps
            .insert_model(&db, 1, Placement::After(publish.into()), model)
            .await?;
        if inserted.outcome.relabelled > 0 {
            relabel = Some(inserted.outcome);
            break;
        }
    }
    let relabel = relabel.ok_or("twelve inserts into one gap relabel")?;
    println!(
        "6. an insert into a full gap relabelled {} rows; changes [{}]",
        relabel.relabelled,
        describe(&relabel.changes)
    );

    // a refusal that went through `?` into a DbErr keeps its type
    let missing: DbErr = match steps.move_to_start(&db, 999_999).await {
        Err(e) => e.into(),
        Ok(_) => return Err("a move of a missing step must be refused".into()),
    };
    let typed = refusal(&missing).ok_or("a refusal inside DbErr")?;
    println!(
        "7. through DbErr: code {}, HTTP {}",
        typed.code(),
        typed.status().http()
    );

    let rows = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT CAST(COUNT(*) AS SIGNED) AS n FROM demo_checklist_outbox".replace(
                "SIGNED",
                if db.get_database_backend() == sea_orm::DbBackend::MySql {
                    "SIGNED"
                } else {
                    "BIGINT"
                },
            ),
        ))
        .await?
        .map(|r| r.try_get::<i64>("", "n"))
        .transpose()?
        .unwrap_or(0);
    println!("8. outbox rows written with the moves: {rows}");
    assert_eq!(rows, moved.changes.rows.len() as i64);
    Ok(())
}
