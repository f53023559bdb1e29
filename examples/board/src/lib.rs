//! The web demo: a kanban board that several people drag at once.
//!
//! An axum server with one page. Cards have UUID ids and are ordered per `(board,
//! column)`: the composite scope, locked on the board's row, so a drag within a column
//! or across columns takes one lock and bumps the board's version once. The page sends
//! each drag with the neighbours it showed and the version it holds; the server answers
//! with the changes and sends them to every open page over server-sent events. A drag
//! from a stale page is refused (the version moved on): that page re-reads the board and
//! says so.
//!
//! Every write carries a request key (the `Idempotency-Key` header, a new one per
//! gesture): a page that got no answer in time sends the same write again with the same
//! key, and the server answers with the outcome the library recorded for it (marked
//! `replayed`, sent to no page a second time), or applies it if the first one never
//! committed. Either way the drag is applied once.
//!
//! Why SeaORM: its one `DatabaseConnection` type serves SQLite, PostgreSQL and MySQL
//! chosen at run time from `DATABASE_URL`, and it is async, so handlers await the library
//! directly (with Diesel the same server needs a connection type per backend, or
//! diesel-async).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use ordered_seaorm::migration::{create_ordered_table, create_parent_table, create_requests_table};
use ordered_seaorm::{
    Changes, Concurrency, Id, KeyType, OrderedEntity, Placement, ScopeColumn, Spec,
};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder,
    Set, Statement,
};
use sea_orm_migration::SchemaManager;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_stream::StreamExt as _;
use tokio_stream::wrappers::BroadcastStream;
use uuid::Uuid;

/// The board's columns, in order.
pub const COLUMNS: [&str; 3] = ["todo", "doing", "done"];

// SeaORM's entity macros generate `pub` items
#[allow(unreachable_pub, missing_docs)]
pub mod card {
    //! A card, ordered within its board's column.
    use ordered_seaorm::DeriveOrdered;
    use sea_orm::entity::prelude::*;

    /// A card of a board.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
    #[sea_orm(table_name = "board_cards")]
    #[ordered(parent_table = "board_boards", version = "version")]
    pub struct Model {
        /// Chosen by the server (a UUID v4).
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: Uuid,
        /// The board: the row every write of its cards locks.
        #[ordered(scope)]
        pub board_id: Uuid,
        /// The column: with the board, the list the card is ordered in.
        #[ordered(scope)]
        pub status: String,
        /// What the card says.
        pub title: String,
        /// Its place in the column (gapped integers).
        #[ordered(position)]
        pub position: i64,
    }

    /// No relations in the demo.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// What the migration writes, without the entity: cards per `(board_id, status)`,
/// locked on `board_boards`.
pub const CARDS: Spec = Spec::new("board_cards", "board_id", "board_boards")
    .with_version("version")
    .with_id_type(KeyType::Uuid)
    .with_parent_type(KeyType::Uuid)
    .with_split_by(&[ScopeColumn::text("status")]);

/// How a write is checked against what the page showed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Check {
    /// The board's version the page holds; when the board moved on, the neighbours the
    /// page showed at the drop (so drags into gaps nobody touched both succeed). What
    /// the board does.
    #[default]
    VersionOrNeighbours,
    /// The board's version only: any write to the board since the page read it refuses
    /// the drag, related or not. What the board did before; kept so that
    /// `examples/figures.rs` can measure what the neighbour check saves.
    Version,
}

impl Check {
    fn concurrency(self, version: i64) -> Concurrency {
        match self {
            Check::VersionOrNeighbours => Concurrency::VersionOrNeighbours(version),
            Check::Version => Concurrency::Version(version),
        }
    }
}

/// The server's state: the database, the board shown, and the channel every write's
/// changes go out on.
#[derive(Clone, Debug)]
pub struct AppState {
    db: DatabaseConnection,
    board: Uuid,
    check: Check,
    events: broadcast::Sender<String>,
    /// The board's version as of the last write this server published (what the
    /// heartbeat tells the pages, and what a reconnecting page is compared with).
    latest: Arc<AtomicI64>,
}

/// How often an open event stream carries the board's version, so that a page that
/// lost an event (a proxy dropped it) finds out within this long.
pub const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(2);

/// How soon a page whose event stream was cut reconnects (each stream starts by
/// telling `EventSource` so; browsers wait 3 to 5 seconds otherwise).
pub const RECONNECT: std::time::Duration = std::time::Duration::from_secs(1);

impl AppState {
    /// The board the page shows.
    pub fn board(&self) -> Uuid {
        self.board
    }

    /// The database.
    pub fn db(&self) -> &DatabaseConnection {
        &self.db
    }
}

/// The list of a column of `board`.
fn list(board: Uuid, column: &str) -> Result<(Uuid, String), ApiError> {
    if !COLUMNS.contains(&column) {
        return Err(ApiError::bad(format!("no column {column:?}")));
    }
    Ok((board, column.to_owned()))
}

/// Creates the tables with the generated migration if they are missing, and a board
/// with a few cards if there is none; returns the state for [`app`].
pub async fn setup(db: DatabaseConnection) -> Result<Arc<AppState>, DbErr> {
    setup_with(db, Check::default()).await
}

/// [`setup`], with the writes checked as `check` says.
pub async fn setup_with(db: DatabaseConnection, check: Check) -> Result<Arc<AppState>, DbErr> {
    let manager = SchemaManager::new(&db);
    if !manager.has_table(CARDS.table).await? {
        create_parent_table(&manager, &CARDS, &[]).await?;
        create_ordered_table(&manager, &CARDS, &[("title", "VARCHAR(200) NOT NULL")]).await?;
    }
    // the writes' request records (if missing)
    create_requests_table(&manager).await?;
    let backend = db.get_database_backend();
    let found = db
        .query_one_raw(Statement::from_string(
            backend,
            "SELECT id FROM board_boards ORDER BY id LIMIT 1",
        ))
        .await?;
    let board = match found {
        Some(row) => row.try_get_by_index::<Uuid>(0)?,
        None => {
            let board = Uuid::new_v4();
            add_board(&db, board).await?;
            let cards = card::Entity::ordered();
            for (column, titles) in [
                (
                    "todo",
                    &[
                        "Write the release notes",
                        "Update the changelog",
                        "Tag the release",
                    ][..],
                ),
                ("doing", &["Review the docs"]),
                ("done", &["Fix the flaky test", "Bump dependencies"]),
            ] {
                for title in titles {
                    let at = list(board, column).map_err(|e| DbErr::Custom(e.message))?;
                    cards
                        .insert_model(&db, at, Placement::Last, new_card(title))
                        .await
                        .map_err(DbErr::from)?;
                }
            }
            board
        }
    };
    let (events, _) = broadcast::channel(256);
    let mut state = AppState {
        db,
        board,
        check,
        events,
        latest: Arc::new(AtomicI64::new(0)),
    };
    let version = board_json(&state)
        .await
        .map_err(|e| DbErr::Custom(e.message))?["version"]
        .as_i64()
        .unwrap_or(0);
    state.latest = Arc::new(AtomicI64::new(version));
    Ok(Arc::new(state))
}

/// A board's row (the row every write of its cards locks), with no cards.
pub async fn add_board(db: &DatabaseConnection, board: Uuid) -> Result<(), DbErr> {
    let backend = db.get_database_backend();
    let ph = if backend == sea_orm::DbBackend::Postgres {
        "$1"
    } else {
        "?"
    };
    db.execute_raw(Statement::from_sql_and_values(
        backend,
        format!("INSERT INTO board_boards (id) VALUES ({ph})"),
        [board.into()],
    ))
    .await?;
    Ok(())
}

/// A new card's row: a fresh UUID v4 and its title.
pub fn new_card(title: &str) -> card::ActiveModel {
    card::ActiveModel {
        id: Set(Uuid::new_v4()),
        title: Set(title.to_owned()),
        ..Default::default()
    }
}

/// The message that ends every event stream ([`shutdown`]): never a JSON event.
const SHUTDOWN: &str = "shutdown";

/// Ends every open event stream, so that a graceful shutdown (which waits for open
/// responses) completes: call it when the shutdown signal arrives.
pub fn shutdown(state: &AppState) {
    let _ = state.events.send(SHUTDOWN.to_owned());
}

/// The routes: the page, the board as JSON, the writes, the event stream; every request
/// logged (`tower-http`'s trace layer).
pub fn app(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .route("/api/board", get(read_board))
        .route("/api/events", get(events))
        .route("/api/move", post(move_card))
        .route("/api/cards", post(add_card))
        .route("/api/cards/{id}", delete(remove_card))
        .layer(tower_http::trace::TraceLayer::new_for_http())
        .with_state(state)
}

async fn page() -> Html<&'static str> {
    Html(include_str!("page.html"))
}

/// A refusal or failure as the page gets it: the status the library's error maps to
/// (409 for a stale drag) and `{code, message}`.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    fn bad(message: String) -> ApiError {
        ApiError {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            code: "invalid_request",
            message,
        }
    }
}

impl From<ordered_seaorm::Error> for ApiError {
    fn from(e: ordered_seaorm::Error) -> ApiError {
        ApiError {
            status: StatusCode::from_u16(e.status().http())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            code: e.code(),
            message: e.to_string(),
        }
    }
}

impl From<DbErr> for ApiError {
    fn from(e: DbErr) -> ApiError {
        ApiError::from(ordered_seaorm::Error::from(e))
    }
}

/// A body the handler could not read (not JSON, the wrong fields, too large): the same
/// `{code, message}` as every refusal, with axum's status (400, 413, 415 or 422).
impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> ApiError {
        ApiError {
            status: r.status(),
            code: "invalid_request",
            message: r.body_text(),
        }
    }
}

/// A path that does not name a card (`/api/cards/not-a-uuid`).
impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> ApiError {
        ApiError {
            status: r.status(),
            code: "invalid_request",
            message: r.body_text(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        // refusals are the clients' business; failures are the server's
        if self.status.is_server_error() {
            tracing::error!(
                code = self.code,
                status = self.status.as_u16(),
                "{}",
                self.message
            );
        } else {
            tracing::info!(code = self.code, status = self.status.as_u16(), "refused");
        }
        let body = json!({ "code": self.code, "message": self.message });
        (self.status, Json(body)).into_response()
    }
}

/// The whole board with its version, read so that every column is of one version: a
/// page shows it and sends the version back with its next drag.
async fn read_board(State(s): State<Arc<AppState>>) -> Result<Json<Value>, ApiError> {
    Ok(Json(board_json(&s).await?))
}

/// The board as the page reads it: `{version, columns: {todo: [{id, title, position}],
/// ...}}`, every column from the same version (each column's versioned read returns
/// the board's version; a write between two of them makes the reads start over).
pub async fn board_json(s: &AppState) -> Result<Value, ApiError> {
    let cards = card::Entity::ordered();
    loop {
        let mut version = None;
        let mut columns = serde_json::Map::new();
        let mut same = true;
        for column in COLUMNS {
            let listed = cards.list_versioned(&s.db, list(s.board, column)?).await?;
            same &= version.is_none_or(|v| Some(v) == listed.version);
            version = listed.version;
            let ids: Vec<Uuid> = listed.rows.iter().map(|r| r.id).collect();
            let titles = titles(&s.db, &ids).await?;
            let list: Vec<Value> = listed
                .rows
                .iter()
                .filter_map(|r| {
                    let id = r.id;
                    let title = titles.iter().find(|(i, _)| *i == id)?.1.clone();
                    Some(json!({ "id": id, "title": title, "position": r.position.to_string() }))
                })
                .collect();
            columns.insert(column.to_owned(), Value::Array(list));
        }
        if same {
            return Ok(json!({ "board": s.board, "version": version, "columns": columns }));
        }
    }
}

async fn titles(db: &DatabaseConnection, ids: &[Uuid]) -> Result<Vec<(Uuid, String)>, DbErr> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows = card::Entity::find()
        .filter(card::Column::Id.is_in(ids.iter().copied()))
        .order_by_asc(card::Column::Id)
        .all(db)
        .await?;
    Ok(rows.into_iter().map(|c| (c.id, c.title)).collect())
}

/// What every page applies: the board's new version and each written card's column
/// and position (a new card's title too), or `reload` when the write relabelled more
/// cards than the changes list.
fn event(
    board: Uuid,
    changes: &Changes<Uuid, (Uuid, String)>,
    added: Option<(Uuid, &str)>,
) -> Value {
    // the board's own version (every list of the board is versioned on its row)
    let version = changes
        .versions
        .iter()
        .find(|v| v.parent == Id::from(board))
        .map(|v| v.version);
    if changes.is_summarised() {
        return json!({ "board": board, "version": version, "reload": true });
    }
    let rows: Vec<Value> = changes
        .rows
        .iter()
        .map(|c| {
            let column = &c.parent.1;
            let title = added.filter(|(id, _)| *id == c.id).map(|(_, t)| t);
            json!({ "id": c.id.to_string(), "column": column, "position": c.position.to_string(), "title": title })
        })
        .collect();
    let removed: Vec<String> = changes.removed.iter().map(ToString::to_string).collect();
    json!({ "board": board, "version": version, "rows": rows, "removed": removed })
}

/// Sends `ev` to every open page and returns it as the writer's answer.
fn publish(s: &AppState, ev: Value) -> Json<Value> {
    if let Some(v) = ev["version"].as_i64() {
        s.latest.fetch_max(v, Ordering::SeqCst);
    }
    // no page listening is not an error
    let _ = s.events.send(ev.to_string());
    Json(ev)
}

/// A drag: the card, where it was dropped (the column and the neighbours the page
/// showed there) and the board version the page holds.
#[derive(Debug, Deserialize)]
pub struct Drag {
    card: Uuid,
    column: String,
    prev: Option<Uuid>,
    next: Option<Uuid>,
    version: i64,
}

/// How long the server keeps the writes' request records: a page repeats a write within
/// seconds; a day leaves room for a client that was offline.
pub const RECORDS_KEPT: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Deletes the request records older than [`RECORDS_KEPT`] (a thousand per statement);
/// `main` runs it every hour.
pub async fn purge_records(s: &AppState) -> Result<u64, ApiError> {
    Ok(card::Entity::ordered()
        .purge_requests(&s.db, RECORDS_KEPT, 1000)
        .await?)
}

/// The handle for a write of this board: only its cards (`within`), and the page's
/// request key (the `Idempotency-Key` header, at most 64 visible characters), scoped to
/// the board, so a repeat of the write returns what the first one did.
fn writes(
    s: &AppState,
    headers: &axum::http::HeaderMap,
) -> Result<ordered_seaorm::OrderedTable<Uuid, (Uuid, String)>, ApiError> {
    let h = card::Entity::ordered().within(s.board);
    let Some(key) = headers.get("idempotency-key") else {
        return Ok(h);
    };
    match key.to_str() {
        Ok(k) if (1..=64).contains(&k.len()) && k.bytes().all(|b| b.is_ascii_graphic()) => {
            Ok(h.request_key(k.to_owned()).tenant(s.board))
        }
        _ => Err(ApiError::bad(
            "an Idempotency-Key of 1 to 64 visible characters".to_owned(),
        )),
    }
}

/// The answer to a write the library replayed: what the first one answered (its
/// changes were sent to every page then), marked so.
fn replayed(mut ev: Value) -> Json<Value> {
    ev["replayed"] = Value::Bool(true);
    Json(ev)
}

async fn move_card(
    State(s): State<Arc<AppState>>,
    headers: axum::http::HeaderMap,
    d: Result<Json<Drag>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(d) = d?;
    let at = Placement::Between {
        prev: d.prev.map(Id::from),
        next: d.next.map(Id::from),
    };
    // only this board's cards; a page that missed other drags may still drop into a
    // gap nobody touched
    let moved = writes(&s, &headers)?
        .concurrency(s.check.concurrency(d.version))
        .move_to_parent(&s.db, d.card, list(s.board, &d.column)?, at)
        .await?;
    // dropped where it was: nothing written, nothing to tell the other pages
    if moved.unchanged {
        let ev = json!({ "unchanged": true, "version": moved.version });
        return Ok(if moved.replayed {
            replayed(ev)
        } else {
            Json(ev)
        });
    }
    let ev = event(s.board, &moved.changes, None);
    Ok(if moved.replayed {
        replayed(ev)
    } else {
        publish(&s, ev)
    })
}

/// A new card: its column, title, neighbours and the page's version.
#[derive(Debug, Deserialize)]
pub struct NewCard {
    column: String,
    title: String,
    prev: Option<Uuid>,
    next: Option<Uuid>,
    version: i64,
}

async fn add_card(
    State(s): State<Arc<AppState>>,
    headers: axum::http::HeaderMap,
    n: Result<Json<NewCard>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(n) = n?;
    let title = n.title.trim();
    if title.is_empty() || title.chars().count() > 200 {
        return Err(ApiError::bad("a title of 1 to 200 characters".to_owned()));
    }
    // a NUL byte, which PostgreSQL refuses and SQLite stores, or any other control
    // character: refused alike on every engine
    if title.chars().any(char::is_control) {
        return Err(ApiError::bad(
            "a title without control characters".to_owned(),
        ));
    }
    let at = Placement::Between {
        prev: n.prev.map(Id::from),
        next: n.next.map(Id::from),
    };
    let made = match writes(&s, &headers)?
        .concurrency(s.check.concurrency(n.version))
        .insert_model(&s.db, list(s.board, &n.column)?, at, new_card(title))
        .await
    {
        Ok(made) => made,
        // the same add again: the card the first one made (sent to every page then)
        Err(e) => {
            if let Some(ordered_seaorm::OrderingError::AlreadyApplied { id, .. }) = e.refusal() {
                return Ok(replayed(
                    json!({ "board": s.board, "card": id.to_string() }),
                ));
            }
            return Err(e.into());
        }
    };
    let ev = event(s.board, &made.outcome.changes, Some((made.value.id, title)));
    Ok(publish(&s, ev))
}

async fn remove_card(
    State(s): State<Arc<AppState>>,
    headers: axum::http::HeaderMap,
    id: Result<Path<Uuid>, PathRejection>,
) -> Result<Json<Value>, ApiError> {
    let Path(id) = id?;
    // a card of this board only; removing it needs no view of its neighbours
    let removed = writes(&s, &headers)?.remove(&s.db, id).await?;
    let ev = event(s.board, &removed.changes, None);
    Ok(if removed.replayed {
        replayed(ev)
    } else {
        publish(&s, ev)
    })
}

/// What an event stream carries.
enum Out {
    /// A write's changes (JSON), or the end of the stream.
    Change(Result<String, tokio_stream::wrappers::errors::BroadcastStreamRecvError>),
    /// Time for a heartbeat.
    Beat,
}

/// Every write's changes as they happen, each with its version as the SSE `id`; a page
/// that fell behind gets `reload`. A page that reconnects sends the last id it saw
/// (`Last-Event-ID`, as `EventSource` does): behind the board, it gets `reload` first.
/// Every [`HEARTBEAT`] a `heartbeat` event carries the board's version; the stream
/// starts by setting the page's reconnection delay to [`RECONNECT`].
async fn events(
    State(s): State<Arc<AppState>>,
    headers: axum::http::HeaderMap,
) -> Sse<impl tokio_stream::Stream<Item = Result<Event, std::convert::Infallible>>> {
    let seen = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i64>().ok());
    let behind = seen.is_some_and(|v| v < s.latest.load(Ordering::SeqCst));
    let retry = Event::default().retry(RECONNECT);
    let first = tokio_stream::iter(
        std::iter::once(Ok(retry))
            .chain(behind.then(|| Ok(Event::default().data(r#"{"reload":true}"#)))),
    );
    let changes = BroadcastStream::new(s.events.subscribe()).map(Out::Change);
    let beats = tokio_stream::wrappers::IntervalStream::new(tokio::time::interval_at(
        tokio::time::Instant::now() + HEARTBEAT,
        HEARTBEAT,
    ))
    .map(|_| Out::Beat);
    let latest = Arc::clone(&s.latest);
    let stream = changes
        .merge(beats)
        .take_while(|o| !matches!(o, Out::Change(Ok(text)) if text == SHUTDOWN))
        .map(move |o| {
            Ok(match o {
                Out::Change(Ok(text)) => {
                    let version = serde_json::from_str::<Value>(&text)
                        .ok()
                        .and_then(|v| v["version"].as_i64());
                    let e = Event::default().data(text);
                    match version {
                        Some(v) => e.id(v.to_string()),
                        None => e,
                    }
                }
                Out::Change(Err(_lagged)) => Event::default().data(r#"{"reload":true}"#),
                Out::Beat => Event::default()
                    .event("heartbeat")
                    .data(json!({ "version": latest.load(Ordering::SeqCst) }).to_string()),
            })
        });
    Sse::new(first.chain(stream)).keep_alive(KeepAlive::default())
}
