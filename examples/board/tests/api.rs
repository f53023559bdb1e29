//! The board's HTTP API without a browser, on SQLite (and PostgreSQL when
//! `ORDERED_PG_URL` is set): the page is served; a drag with the page's version is
//! answered with its changes, which every open event stream receives; the same drag
//! again is `unchanged` (nothing written, nothing sent); a stale page's drop into a gap
//! that changed is refused with 409 `stale_neighbours` and changes nothing; an unknown
//! column is 422; adding below a card and removing one. A write sent again with its
//! request key (`Idempotency-Key`) gets the first one's answer, marked replayed, writes
//! nothing and is sent to no page; the same key with another write is refused.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod support;
use support::{call, call_keyed};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use board::card;
use http_body_util::BodyExt;
use sea_orm::EntityTrait;
use serde_json::{Value, json};
use tower::ServiceExt;

/// Runs `$f(engine, url)` on SQLite (a fresh file `$file` in the temp dir), PostgreSQL
/// (required with `ORDERED_REQUIRE_DBS=1`) and MySQL/MariaDB when its URL is set.
macro_rules! on_every_engine {
    ($f:ident, $file:expr) => {{
        let file = std::env::temp_dir().join($file);
        let _ = std::fs::remove_file(&file);
        $f("sqlite", &format!("sqlite://{}?mode=rwc", file.display())).await;
        match std::env::var("ORDERED_PG_URL") {
            Ok(url) if !url.is_empty() => $f("postgres", &url).await,
            _ if std::env::var("ORDERED_REQUIRE_DBS").is_ok_and(|v| v == "1") => {
                panic!("ORDERED_REQUIRE_DBS=1 but ORDERED_PG_URL is not set")
            }
            _ => eprintln!("skipped PostgreSQL: ORDERED_PG_URL is not set"),
        }
        if let Ok(url) = std::env::var("ORDERED_MYSQL_URL")
            && !url.is_empty()
        {
            $f("mysql", &url).await;
        }
    }};
}

fn ids(board: &Value, column: &str) -> Vec<String> {
    board["columns"][column]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The next frame of an event stream that carries data (the first only sets the
/// reconnection delay), as event name, id and data.
async fn next_event(stream: &mut axum::body::Body) -> (Option<String>, Option<String>, String) {
    loop {
        let frame = stream.frame().await.unwrap().unwrap().into_data().unwrap();
        let text = String::from_utf8_lossy(&frame).into_owned();
        let e = sse(&text);
        if !e.2.is_empty() {
            return e;
        }
        assert!(text.starts_with("retry:"), "a frame without data: {text:?}");
    }
}

/// An SSE frame's event name, id and data.
fn sse(frame: &str) -> (Option<String>, Option<String>, String) {
    let (mut kind, mut id, mut data) = (None, None, String::new());
    for line in frame.lines() {
        if let Some(v) = line.strip_prefix("event:") {
            kind = Some(v.trim().to_owned());
        } else if let Some(v) = line.strip_prefix("id:") {
            id = Some(v.trim().to_owned());
        } else if let Some(v) = line.strip_prefix("data:") {
            data.push_str(v.trim());
        }
    }
    (kind, id, data)
}

async fn scenario(engine: &str, url: &str) {
    let db = sea_orm::Database::connect(url).await.unwrap();
    use sea_orm::ConnectionTrait;
    for t in ["board_cards", "board_boards"] {
        db.execute_unprepared(&format!("DROP TABLE IF EXISTS {t}"))
            .await
            .unwrap();
    }
    let state = board::setup(db.clone()).await.unwrap();
    let app = board::app(state.clone());
    // another board in the same tables, with a card the page must never reach
    let other = uuid::Uuid::new_v4();
    let foreign = support::other_board(&db, other).await;

    // the page, with its code
    let res = app
        .clone()
        .oneshot(Request::get("/").body(Body::empty()).unwrap())
        .await
        .unwrap();
    let page = res.into_body().collect().await.unwrap().to_bytes();
    assert!(String::from_utf8_lossy(&page).contains("new EventSource(\"/api/events\")"));

    let (status, b) = call(&app, "GET", "/api/board", None).await;
    assert_eq!(status, StatusCode::OK, "{engine}");
    let v = b["version"].as_i64().unwrap();
    let todo = ids(&b, "todo");
    assert_eq!(todo.len(), 3, "{engine}: {b}");

    // an open page's event stream
    let events = app
        .clone()
        .oneshot(Request::get("/api/events").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(events.status(), StatusCode::OK);
    let mut stream = events.into_body();

    // the last card of To do dragged to the top: its changes, the next version
    let drag =
        json!({ "card": todo[2], "column": "todo", "prev": null, "next": todo[0], "version": v });
    let (status, moved) = call(&app, "POST", "/api/move", Some(drag.clone())).await;
    assert_eq!(status, StatusCode::OK, "{engine}: {moved}");
    assert_eq!(moved["version"], v + 1, "{engine}");
    assert_eq!(moved["rows"][0]["id"], todo[2].as_str(), "{engine}");
    assert_eq!(moved["rows"][0]["column"], "todo", "{engine}");
    // the stream got the same changes, with the version as the event's id, and this
    // board's id
    let (kind, id, data) = next_event(&mut stream).await;
    assert_eq!((kind, id), (None, Some((v + 1).to_string())), "{engine}");
    let data: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(data, moved, "{engine}");
    assert_eq!(data["board"], b["board"], "{engine}");

    // the other board's card, as a card, a neighbour or a removal: 404 in this board's
    // words (nothing of the other board in them), nothing written, nothing sent
    let f = foreign.to_string();
    let cur = v + 1;
    let (_, now) = call(&app, "GET", "/api/board", None).await;
    let todo_now = ids(&now, "todo");
    for (method, uri, body) in [
        (
            "POST",
            "/api/move",
            Some(
                json!({ "card": f, "column": "todo", "prev": null, "next": todo_now[0], "version": cur }),
            ),
        ),
        (
            "POST",
            "/api/move",
            Some(
                json!({ "card": todo_now[2], "column": "todo", "prev": f, "next": null, "version": cur }),
            ),
        ),
        (
            "POST",
            "/api/move",
            Some(
                json!({ "card": todo_now[2], "column": "todo", "prev": todo_now[0], "next": f, "version": cur - 1 }),
            ),
        ),
        (
            "POST",
            "/api/cards",
            Some(
                json!({ "column": "todo", "title": "x", "prev": f, "next": null, "version": cur }),
            ),
        ),
        ("DELETE", &*format!("/api/cards/{f}"), None),
    ] {
        let (status, e) = call(&app, method, uri, body.clone()).await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "{engine}: {method} {uri} {body:?}: {e}"
        );
        let said = e["message"].as_str().unwrap();
        assert!(
            !said.contains(&other.to_string()) && !said.contains("version"),
            "{engine}: {said}"
        );
    }
    let (_, still) = call(&app, "GET", "/api/board", None).await;
    assert_eq!(still["version"], cur, "{engine}");
    assert_eq!(ids(&still, "todo"), todo_now, "{engine}");
    let theirs = card::Entity::find_by_id(foreign)
        .one(&db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (theirs.board_id, theirs.status.as_str()),
        (other, "todo"),
        "{engine}"
    );

    // the same drag again (a page at the old version): the card is already there, so
    // nothing is written, no version taken, nothing sent to the other pages
    let (status, same) = call(&app, "POST", "/api/move", Some(drag)).await;
    assert_eq!(status, StatusCode::OK, "{engine}: {same}");
    assert_eq!(same["unchanged"], true, "{engine}: {same}");
    assert_eq!(same["version"], v + 1, "{engine}");
    // a drop from a page still at the old version into a gap that changed (the page
    // still shows the first card at the top): refused, nothing changes
    let stale =
        json!({ "card": todo[1], "column": "todo", "prev": null, "next": todo[0], "version": v });
    let (status, refused) = call(&app, "POST", "/api/move", Some(stale)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{engine}");
    assert_eq!(refused["code"], "stale_neighbours", "{engine}");
    let (_, after) = call(&app, "GET", "/api/board", None).await;
    assert_eq!(
        ids(&after, "todo"),
        [todo[2].clone(), todo[0].clone(), todo[1].clone()],
        "{engine}"
    );
    assert_eq!(after["version"], v + 1, "{engine}");

    // across columns, between the page's neighbours
    let done = ids(&after, "done");
    let across = json!({ "card": todo[0], "column": "done", "prev": done[0], "next": done[1], "version": v + 1 });
    let (status, moved) = call(&app, "POST", "/api/move", Some(across)).await;
    assert_eq!(status, StatusCode::OK, "{engine}: {moved}");
    assert_eq!(moved["rows"][0]["column"], "done", "{engine}");
    // the stream's next change is this one: none of the refusals above was sent
    let next = loop {
        let (kind, id, data) = next_event(&mut stream).await;
        if kind.as_deref() != Some("heartbeat") {
            break (id, data);
        }
    };
    assert_eq!(next.0, Some((v + 2).to_string()), "{engine}: {}", next.1);

    // a new card below the first of Doing, with its title in the changes
    let (_, now) = call(&app, "GET", "/api/board", None).await;
    let doing = ids(&now, "doing");
    let add = json!({ "column": "doing", "title": "Write the announcement", "prev": doing[0], "next": null, "version": v + 2 });
    let (status, added) = call(&app, "POST", "/api/cards", Some(add)).await;
    assert_eq!(status, StatusCode::OK, "{engine}: {added}");
    assert_eq!(
        added["rows"][0]["title"], "Write the announcement",
        "{engine}"
    );
    // an unknown column
    let bad =
        json!({ "column": "later", "title": "x", "prev": null, "next": null, "version": v + 3 });
    let (status, _) = call(&app, "POST", "/api/cards", Some(bad)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{engine}");
    // a title with a NUL byte (stored by SQLite, refused by PostgreSQL with its own
    // text) or another control character: 422 with the page's error format everywhere
    for title in ["a\u{0}b", "tab\there"] {
        let bad = json!({ "column": "todo", "title": title, "prev": null, "next": null, "version": v + 3 });
        let (status, e) = call(&app, "POST", "/api/cards", Some(bad)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{engine}: {e}");
        assert_eq!(e["code"], "invalid_request", "{engine}: {e}");
    }
    // bodies and paths the extractors refuse: the same JSON format, axum's status
    let raw = |method: &str, uri: &str, ctype: Option<&str>, body: &str| {
        let mut req = Request::builder().method(method).uri(uri);
        if let Some(c) = ctype {
            req = req.header("content-type", c);
        }
        req.body(Body::from(body.to_owned())).unwrap()
    };
    for (req, want) in [
        (
            raw("POST", "/api/move", Some("application/json"), "{not json"),
            StatusCode::BAD_REQUEST,
        ),
        (
            raw(
                "POST",
                "/api/move",
                Some("application/json"),
                r#"{"card": 7}"#,
            ),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            raw("POST", "/api/cards", None, "{}"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            raw("DELETE", "/api/cards/not-a-card", None, ""),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let what = format!("{} {}", req.method(), req.uri());
        let res = app.clone().oneshot(req).await.unwrap();
        assert_eq!(res.status(), want, "{engine}: {what}");
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        let e: Value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| panic!("{engine}: {what}: not JSON: {bytes:?}"));
        assert_eq!(e["code"], "invalid_request", "{engine}: {what}");
        assert!(
            e["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{engine}: {what}"
        );
    }
    // no 404 in the log at every load
    let (status, _) = call(&app, "GET", "/favicon.ico", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{engine}");
    // removed
    let uri = format!("/api/cards/{}", todo[1]);
    let (status, removed) = call(&app, "DELETE", &uri, None).await;
    assert_eq!(status, StatusCode::OK, "{engine}: {removed}");
    assert_eq!(removed["removed"][0], todo[1].as_str(), "{engine}");
    let (_, last) = call(&app, "GET", "/api/board", None).await;
    assert_eq!(ids(&last, "todo"), [todo[2].clone()], "{engine}");
    assert_eq!(ids(&last, "doing").len(), 2, "{engine}");
    assert_eq!(ids(&last, "done").len(), 3, "{engine}");
    let now = last["version"].as_i64().unwrap();

    // a page that reconnects after missing events (its last id is behind): reload
    // first; one that saw the last write: nothing until the next change
    let open = |last_id: i64| {
        Request::get("/api/events")
            .header("last-event-id", last_id.to_string())
            .body(Body::empty())
            .unwrap()
    };
    let mut behind = app
        .clone()
        .oneshot(open(now - 2))
        .await
        .unwrap()
        .into_body();
    let (_, _, data) = next_event(&mut behind).await;
    assert_eq!(data, r#"{"reload":true}"#, "{engine}");
    // every open stream carries the board's version within a heartbeat, so a page
    // whose event a proxy dropped finds out
    let mut current = app.clone().oneshot(open(now)).await.unwrap().into_body();
    let (kind, _, data) = tokio::time::timeout(
        board::HEARTBEAT + std::time::Duration::from_secs(1),
        next_event(&mut current),
    )
    .await
    .expect("a heartbeat");
    assert_eq!(kind.as_deref(), Some("heartbeat"), "{engine}");
    let beat: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(beat["version"], now, "{engine}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_answers_with_changes_and_refuses_stale_pages() {
    on_every_engine!(scenario, "ordered-board-api.db");
}

/// A page's writes sent twice with their request key, as a page does when the answer of
/// the first one did not come in time: the repeat is the first one's answer, marked
/// replayed; the board moved once and no page was sent the change twice. The control:
/// the same drag sent again without a key is a second write (refused as stale, here).
async fn repeats(engine: &str, url: &str) {
    let db = sea_orm::Database::connect(url).await.unwrap();
    use sea_orm::ConnectionTrait;
    for t in ["board_cards", "board_boards"] {
        db.execute_unprepared(&format!("DROP TABLE IF EXISTS {t}"))
            .await
            .unwrap();
    }
    let state = board::setup_with(db.clone(), board::Check::Version)
        .await
        .unwrap();
    let app = board::app(state.clone());
    let (_, b) = call(&app, "GET", "/api/board", None).await;
    let v = b["version"].as_i64().unwrap();
    let todo = ids(&b, "todo");
    let mut stream = app
        .clone()
        .oneshot(Request::get("/api/events").body(Body::empty()).unwrap())
        .await
        .unwrap()
        .into_body();
    let drag =
        json!({ "card": todo[2], "column": "todo", "prev": null, "next": todo[0], "version": v });
    let key = uuid::Uuid::new_v4().to_string();
    let (status, first) =
        call_keyed(&app, "POST", "/api/move", Some(drag.clone()), Some(&key)).await;
    assert_eq!(status, StatusCode::OK, "{engine}: {first}");
    assert_eq!(first["version"], v + 1, "{engine}");
    let (status, again) =
        call_keyed(&app, "POST", "/api/move", Some(drag.clone()), Some(&key)).await;
    assert_eq!(status, StatusCode::OK, "{engine}: {again}");
    assert_eq!(again["replayed"], true, "{engine}: {again}");
    assert_eq!(again["rows"], first["rows"], "{engine}");
    assert_eq!(again["version"], v + 1, "{engine}: written once");
    // the key with another drag: refused, nothing written
    let other =
        json!({ "card": todo[1], "column": "done", "prev": null, "next": null, "version": v + 1 });
    let (status, reused) = call_keyed(&app, "POST", "/api/move", Some(other), Some(&key)).await;
    assert_eq!(
        status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{engine}: {reused}"
    );
    assert_eq!(reused["code"], "idempotency_key_reused", "{engine}");
    // a key no header can carry
    let (status, bad) = call_keyed(
        &app,
        "POST",
        "/api/move",
        Some(drag.clone()),
        Some(&"k".repeat(65)),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{engine}: {bad}");
    // an add and a removal repeated: the card the first add made; removed once
    let doing = ids(&b, "doing");
    let add = json!({ "column": "doing", "title": "Once", "prev": doing[0], "next": null, "version": v + 1 });
    let add_key = uuid::Uuid::new_v4().to_string();
    let (status, made) = call_keyed(
        &app,
        "POST",
        "/api/cards",
        Some(add.clone()),
        Some(&add_key),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{engine}: {made}");
    let (status, made_again) =
        call_keyed(&app, "POST", "/api/cards", Some(add), Some(&add_key)).await;
    assert_eq!(status, StatusCode::OK, "{engine}: {made_again}");
    assert_eq!(made_again["replayed"], true, "{engine}");
    assert_eq!(made_again["card"], made["rows"][0]["id"], "{engine}");
    let gone = format!("/api/cards/{}", todo[0]);
    let rm_key = uuid::Uuid::new_v4().to_string();
    let (status, removed) = call_keyed(&app, "DELETE", &gone, None, Some(&rm_key)).await;
    assert_eq!(status, StatusCode::OK, "{engine}: {removed}");
    let (status, removed_again) = call_keyed(&app, "DELETE", &gone, None, Some(&rm_key)).await;
    assert_eq!(status, StatusCode::OK, "{engine}: {removed_again}");
    assert_eq!(removed_again["removed"], removed["removed"], "{engine}");
    // the stream carried each write once: the drag, the add, the removal
    for want in [v + 1, v + 2, v + 3] {
        let (_, id, _) = next_event(&mut stream).await;
        assert_eq!(id, Some(want.to_string()), "{engine}");
    }
    let (_, now) = call(&app, "GET", "/api/board", None).await;
    assert_eq!(now["version"], v + 3, "{engine}: a repeat wrote");
    assert_eq!(
        ids(&now, "doing").len(),
        2,
        "{engine}: the add made two cards"
    );
    // the control: the drag again without its key is a write of its own (refused: the
    // page's version is old)
    let (status, blind) = call(&app, "POST", "/api/move", Some(drag)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{engine}: {blind}");
    assert_eq!(blind["code"], "version_conflict", "{engine}");
    // the records the board keeps a day are not purged yet
    assert_eq!(board::purge_records(&state).await.unwrap(), 0, "{engine}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_repeated_with_its_key_is_answered_once() {
    on_every_engine!(repeats, "ordered-board-repeats.db");
}

/// Ctrl-C with a page open: the graceful shutdown waits for every open response, and an
/// event stream never ends by itself. With the signal alone the server is still up
/// (the negative control); `board::shutdown` ends the streams and it exits at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_ends_the_open_event_streams() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::time::{Duration, timeout};
    let file = std::env::temp_dir().join("ordered-board-shutdown.db");
    let _ = std::fs::remove_file(&file);
    let db = sea_orm::Database::connect(format!("sqlite://{}?mode=rwc", file.display()))
        .await
        .unwrap();
    let state = board::setup(db).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (signal, signalled) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(
        axum::serve(listener, board::app(state.clone()))
            .with_graceful_shutdown(async move {
                let _ = signalled.await;
            })
            .into_future(),
    );
    // an open page's event stream
    let mut page = tokio::net::TcpStream::connect(addr).await.unwrap();
    page.write_all(b"GET /api/events HTTP/1.1\r\nHost: board\r\nAccept: text/event-stream\r\n\r\n")
        .await
        .unwrap();
    let mut head = [0u8; 64];
    let n = page.read(&mut head).await.unwrap();
    assert!(String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 200"));
    signal.send(()).unwrap();
    let mut server = server;
    assert!(
        timeout(Duration::from_millis(500), &mut server)
            .await
            .is_err(),
        "the server stopped with a stream open: the control shows nothing"
    );
    board::shutdown(&state);
    timeout(Duration::from_secs(1), server)
        .await
        .expect("the server still runs a second after its streams were ended")
        .unwrap()
        .unwrap();
}
