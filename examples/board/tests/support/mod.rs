//! What the board's test files share.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use board::card;
use http_body_util::BodyExt;
use ordered_seaorm::{OrderedEntity, Placement};
use serde_json::Value;
use tower::ServiceExt;

/// The board's answer to a request: its status and its JSON body (`Null` when the body
/// is not JSON).
pub(crate) async fn call(
    app: &axum::Router,
    method: &str,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    call_keyed(app, method, uri, body, None).await
}

/// [`call`] with the page's request key (`Idempotency-Key`), when given.
pub(crate) async fn call_keyed(
    app: &axum::Router,
    method: &str,
    uri: &str,
    body: Option<Value>,
    key: Option<&str>,
) -> (StatusCode, Value) {
    let mut req = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json");
    if let Some(k) = key {
        req = req.header("idempotency-key", k);
    }
    let req = req
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
        .unwrap();
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// A second board, `other`, with one card at the end of its To do; returns the card's
/// id (what a hostile client would send to this board's routes).
pub(crate) async fn other_board(db: &sea_orm::DatabaseConnection, other: uuid::Uuid) -> uuid::Uuid {
    board::add_board(db, other).await.unwrap();
    let row = board::new_card("Another board's card");
    let id = *row.id.as_ref();
    card::Entity::ordered()
        .insert_model(db, (other, "todo".to_owned()), Placement::Last, row)
        .await
        .unwrap();
    id
}
