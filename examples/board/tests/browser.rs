//! The board in real browsers, on SQLite and on PostgreSQL: Debian's `chromium` driven
//! by `playwright-core` (`tests/browser/drag.mjs`) and Debian's `firefox-esr` driven by
//! `puppeteer-core` over WebDriver BiDi (`tests/browser/firefox.mjs`) run the same
//! scenario (`tests/browser/common.mjs`), with the mouse, the keyboard and the page's
//! own requests. After every step this test reads the database itself and requires
//! every page to show exactly its order:
//!
//! - a drag in one page appears in the other within a second; a drag across columns;
//! - two pages dropping into one gap at the same moment (this test holds each write
//!   until both arrived): exactly one wins, the other is told; into two different gaps:
//!   both win; no card lost or doubled; a press held while another page's change
//!   arrives still drags;
//! - a stale page's drag is refused and that page repairs itself; a removed card dragged
//!   from a stale page is a 404 said in words;
//! - adding at the end and below a card (what another page is typing survives), removing;
//! - a keyboard move; another board's card refused with 404 and no page changed;
//! - the event streams cut with a change made meanwhile: the pages resume within 5 s;
//! - a reload; then, on the real server (`board`'s binary), Ctrl-C with two pages open
//!   exits within a second.
//!
//! Chromium adds a phone profile (375 px, touch) and a finger's drag. Screenshots go to
//! `target/board-screenshots/`.
//!
//! Needs `ORDERED_BROWSER=1`, node, `npm ci` in `tests/browser`, `/usr/bin/chromium`
//! (or `CHROMIUM`) and `/usr/bin/firefox-esr`; `.ci/run` installs them. Without
//! `ORDERED_BROWSER=1` it says it skipped.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::{Value, json};

use board::{COLUMNS, card};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder};

type Columns = BTreeMap<String, Vec<String>>;

/// Debian's Firefox ESR.
const FIREFOX_BIN: &str = "/usr/bin/firefox-esr";

/// Every column's card ids in position order, read from the database.
async fn database(db: &sea_orm::DatabaseConnection, board: uuid::Uuid) -> Columns {
    let mut out = Columns::new();
    for column in COLUMNS {
        let cards = card::Entity::find()
            .filter(card::Column::BoardId.eq(board))
            .filter(card::Column::Status.eq(column))
            .order_by_asc(card::Column::Position)
            .all(db)
            .await
            .unwrap();
        out.insert(
            column.to_owned(),
            cards.iter().map(|c| c.id.to_string()).collect(),
        );
    }
    out
}

fn ready() -> Result<(PathBuf, PathBuf), String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    if std::env::var("ORDERED_BROWSER").as_deref() != Ok("1") {
        return Err("set ORDERED_BROWSER=1 (after npm ci in examples/board/tests/browser)".into());
    }
    if !dir.join("node_modules/playwright-core").exists()
        || !dir.join("node_modules/puppeteer-core").exists()
    {
        return Err(format!(
            "no playwright-core or puppeteer-core: run npm ci in {}",
            dir.display()
        ));
    }
    let chromium =
        PathBuf::from(std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into()));
    if !chromium.exists() {
        return Err(format!(
            "no browser at {} (apt-get install chromium)",
            chromium.display()
        ));
    }
    if !Path::new(FIREFOX_BIN).exists() {
        return Err(format!(
            "no browser at {FIREFOX_BIN} (apt-get install firefox-esr)"
        ));
    }
    Ok((dir, chromium))
}

/// A browser script: its file, how many steps it reports, the screenshots it takes.
struct Script {
    file: &'static str,
    steps: usize,
    shots: &'static [&'static str],
}

/// The steps of the scenario both browsers run (`scenario` and `interrupt` in
/// common.mjs).
const SHARED_STEPS: usize = 16;

/// Chromium through playwright-core: the scenario, a phone profile, a touch drag.
const CHROMIUM: Script = Script {
    file: "drag.mjs",
    steps: SHARED_STEPS + 2,
    shots: &["a", "b", "phone"],
};

/// Firefox ESR through puppeteer-core over WebDriver BiDi: the scenario.
const FIREFOX: Script = Script {
    file: "firefox.mjs",
    steps: SHARED_STEPS,
    shots: &["firefox", "firefox-a", "firefox-b"],
};

/// Holds each `POST /api/move` until `want` of them arrived (or 5 seconds passed), so
/// that two pages' drops reach the server together whatever the browser's timing.
#[derive(Default)]
struct Hold {
    /// How many to wait for (0: none held), how many arrived, whether the last hold
    /// released because they all arrived.
    state: Mutex<(usize, usize, bool)>,
    go: tokio::sync::Notify,
    /// How many of the next `POST /api/move` to answer late ([`LATE`], past the page's
    /// timeout) after the handler ran: their answers are lost to the page.
    lose: Mutex<usize>,
    /// Every `POST /api/move` since the last `lose`: its request key and whether the
    /// answer was a replay.
    sent: Mutex<Vec<(String, bool)>>,
}

/// How late a lost answer comes: well past the page's write timeout in the step.
const LATE: Duration = Duration::from_millis(1500);

async fn hold(State(h): State<Arc<Hold>>, req: Request, next: Next) -> Response {
    if req.uri().path() == "/api/move" {
        let notified = h.go.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let wait = {
            let mut s = h.state.lock().unwrap();
            if s.0 == 0 {
                false
            } else {
                s.1 += 1;
                if s.1 >= s.0 {
                    *s = (0, 0, true);
                    h.go.notify_waiters();
                    false
                } else {
                    true
                }
            }
        };
        if wait
            && tokio::time::timeout(Duration::from_secs(5), notified)
                .await
                .is_err()
        {
            // the others never came: let it through, and the step fails on `held`
            *h.state.lock().unwrap() = (0, 0, false);
            h.go.notify_waiters();
        }
    }
    if req.uri().path() != "/api/move" {
        return next.run(req).await;
    }
    let key = req
        .headers()
        .get("idempotency-key")
        .and_then(|k| k.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let late = {
        let mut lose = h.lose.lock().unwrap();
        let late = *lose > 0;
        *lose = lose.saturating_sub(1);
        late
    };
    let res = next.run(req).await;
    let (parts, body) = res.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let replayed = serde_json::from_slice::<Value>(&bytes)
        .is_ok_and(|v| v["replayed"].as_bool() == Some(true));
    h.sent.lock().unwrap().push((key, replayed));
    if late {
        tokio::time::sleep(LATE).await;
    }
    Response::from_parts(parts, axum::body::Body::from(bytes))
}

/// What the board answers `app`'s request with, which must succeed.
async fn answered(app: &axum::Router, method: &str, uri: &str, body: Option<Value>) -> Value {
    let (status, answer) = support::call(app, method, uri, body).await;
    assert!(status.is_success(), "{method} {uri}: {status} {answer}");
    answer
}

/// The real server, when the script started it: killed if the test fails first.
struct Server(Option<Child>);

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// What the script asked for, done: hold writes, report the hold, cut the event streams
/// (and make a change while they are down), make another board's card, start the real
/// server, interrupt it.
fn answer(
    what: &Value,
    rt: &tokio::runtime::Runtime,
    state: &Arc<board::AppState>,
    app: &axum::Router,
    held: &Hold,
    url: &str,
    server: &mut Server,
) -> Result<Value, String> {
    if let Some(n) = what["hold"].as_u64() {
        *held.state.lock().unwrap() = (n as usize, 0, false);
        return Ok(json!({}));
    }
    if let Some(n) = what["lose"].as_u64() {
        *held.lose.lock().unwrap() = n as usize;
        held.sent.lock().unwrap().clear();
        return Ok(json!({}));
    }
    if what["lost"].as_bool() == Some(true) {
        // the lost answer's drag and the page's repeat of it: wait for both
        let t0 = Instant::now();
        while held.sent.lock().unwrap().len() < 2 && t0.elapsed() < Duration::from_secs(6) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let sent = held.sent.lock().unwrap().clone();
        let keys: std::collections::BTreeSet<&String> = sent.iter().map(|(k, _)| k).collect();
        return Ok(json!({
            "sent": sent.len(),
            "keys": keys.len(),
            "keyed": sent.iter().all(|(k, _)| !k.is_empty()),
            "replayed": sent.iter().filter(|(_, r)| *r).count(),
        }));
    }
    if what["held"].as_bool() == Some(true) {
        // the page's writes were sent (both drags were made); wait for the release
        let t0 = Instant::now();
        loop {
            let s = *held.state.lock().unwrap();
            if s.0 == 0 {
                return Ok(json!({ "together": s.2 }));
            }
            if t0.elapsed() > Duration::from_secs(6) {
                return Ok(json!({ "together": false }));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    if what["cut"].as_bool() == Some(true) {
        // every open stream ends (the pages reconnect after board::RECONNECT), and a
        // drag is made before they are back: the last card of To do goes first
        board::shutdown(state);
        return rt.block_on(async {
            let b = answered(app, "GET", "/api/board", None).await;
            let todo: Vec<&str> = b["columns"]["todo"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["id"].as_str().unwrap())
                .collect();
            if todo.len() < 2 {
                return Err(format!("To do needs two cards: {b}"));
            }
            let drag = json!({ "card": todo[todo.len() - 1], "column": "todo", "prev": null, "next": todo[0], "version": b["version"] });
            let moved = answered(app, "POST", "/api/move", Some(drag)).await;
            Ok(json!({ "version": moved["version"] }))
        });
    }
    if what["foreign"].as_bool() == Some(true) {
        // the largest UUID there is, so that the real server, which shows the first
        // board by id, still shows this test's board
        let id = rt.block_on(support::other_board(state.db(), uuid::Uuid::max()));
        return Ok(json!({ "card": id }));
    }
    if what["serve"].as_bool() == Some(true) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_board"))
            .env("DATABASE_URL", url)
            .env("BOARD_ADDR", "127.0.0.1:0")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .map_err(|e| e.to_string())?;
        server.0 = Some(child);
        let at = first
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .ok_or_else(|| format!("the server said {first:?}"))?;
        return Ok(json!({ "url": at }));
    }
    if what["interrupt"].as_bool() == Some(true) {
        let child = server.0.as_mut().ok_or("no server to interrupt")?;
        let t0 = Instant::now();
        Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .map_err(|e| e.to_string())?;
        loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                let ms = t0.elapsed().as_millis();
                if !status.success() {
                    return Err(format!("the server exited with {status}"));
                }
                if ms > 1000 {
                    return Err(format!("the server took {ms} ms to exit after Ctrl-C"));
                }
                server.0 = None;
                return Ok(json!({ "ms": ms }));
            }
            if t0.elapsed() > Duration::from_secs(5) {
                let _ = child.kill();
                return Err("the server still runs 5 s after Ctrl-C with pages open".into());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    Err(format!("nothing to do for {what}"))
}

fn run(engine: &str, url: &str, dir: &Path, chromium: &Path, script: &Script) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let held = Arc::new(Hold::default());
    let (state, addr) = rt.block_on(async {
        let db = sea_orm::Database::connect(url).await.unwrap();
        // this test's own tables: start from none
        for t in ["board_cards", "board_boards"] {
            db.execute_unprepared(&format!("DROP TABLE IF EXISTS {t}"))
                .await
                .unwrap();
        }
        let state = board::setup(db).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = board::app(state.clone())
            .layer(axum::middleware::from_fn_with_state(held.clone(), hold));
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (state, addr)
    });
    let app = board::app(state.clone());
    let mut server = Server(None);
    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/board-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let shots = shots.join(engine);
    std::fs::create_dir_all(&shots).unwrap();
    let mut node = Command::new("node")
        .arg(dir.join(script.file))
        .arg(format!("http://{addr}/"))
        .arg(&shots)
        .env("CHROMIUM", chromium)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut to_node = node.stdin.take().unwrap();
    let from_node = BufReader::new(node.stdout.take().unwrap());
    let mut steps = 0;
    let mut done = false;
    let mut cards_before: Option<Vec<String>> = None;
    for line in from_node.lines() {
        let line = line.unwrap();
        if line == "DONE" {
            done = true;
            break;
        }
        if let Some(json) = line.strip_prefix("ASK ") {
            let what: Value = serde_json::from_str(json).unwrap();
            let reply = answer(&what, &rt, &state, &app, &held, url, &mut server)
                .unwrap_or_else(|e| json!({ "error": e }));
            eprintln!("{engine}: asked {what}, answered {reply}");
            writeln!(to_node, "{reply}").unwrap();
            if let Some(e) = reply["error"].as_str() {
                let _ = node.kill();
                panic!("{engine} {}: {e}", script.file);
            }
            continue;
        }
        let Some(json) = line.strip_prefix("STEP ") else {
            eprintln!("{engine} node: {line}");
            continue;
        };
        let step: serde_json::Value = serde_json::from_str(json).unwrap();
        let name = step["name"].as_str().unwrap().to_owned();
        let want = rt.block_on(database(state.db(), state.board()));
        let mut all: Vec<String> = want.values().flatten().cloned().collect();
        all.sort();
        let mut failure = None;
        // no card twice in the database
        let mut unique = all.clone();
        unique.dedup();
        if unique.len() != all.len() {
            failure = Some(format!("a card is twice in the database: {want:?}"));
        }
        // the moves keep the same cards: none lost, none doubled
        if let Some(prev) = &cards_before
            && name.starts_with("both drag")
            && *prev != all
        {
            failure = Some(format!("the cards changed: {prev:?} -> {all:?}"));
        }
        for (page, shown) in step["pages"].as_object().unwrap() {
            let shown: Columns = serde_json::from_value(shown.clone()).unwrap();
            if shown != want {
                failure = Some(format!(
                    "page {page} shows {shown:?}, the database holds {want:?}"
                ));
            }
        }
        let extras: Vec<String> = step
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "pages" | "name"))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        eprintln!("{engine}: {name}: {}", extras.join(" "));
        let verdict = match &failure {
            None => "ok".to_owned(),
            Some(f) => format!("fail {f}"),
        };
        writeln!(to_node, "{verdict}").unwrap();
        if let Some(f) = failure {
            let _ = node.kill();
            panic!("{engine} step {name:?}: {f}");
        }
        cards_before = Some(all);
        steps += 1;
    }
    drop(to_node);
    let status = node.wait().unwrap();
    assert!(
        status.success(),
        "{engine}: the browser script failed ({status})"
    );
    assert!(
        done && steps == script.steps,
        "{engine} {}: {steps} steps, done {done}",
        script.file
    );
    for page in script.shots {
        assert!(
            shots.join(format!("board-{page}.png")).exists(),
            "{engine}: screenshot {page}"
        );
    }
}

#[test]
fn two_browsers_drag_one_board() {
    let (dir, chromium) = match ready() {
        Ok(r) => r,
        Err(why) => {
            if std::env::var("ORDERED_REQUIRE_BROWSER").is_ok_and(|v| v == "1") {
                panic!("ORDERED_REQUIRE_BROWSER=1 but {why}");
            }
            eprintln!("skipped the browser tests: {why}");
            return;
        }
    };
    let file = std::env::temp_dir().join("ordered-board-browser.db");
    let _ = std::fs::remove_file(&file);
    let sqlite = format!("sqlite://{}?mode=rwc", file.display());
    run("sqlite", &sqlite, &dir, &chromium, &CHROMIUM);
    run("sqlite", &sqlite, &dir, &chromium, &FIREFOX);
    match std::env::var("ORDERED_PG_URL") {
        Ok(url) if !url.is_empty() => {
            run("postgres", &url, &dir, &chromium, &CHROMIUM);
            run("postgres", &url, &dir, &chromium, &FIREFOX);
        }
        _ if std::env::var("ORDERED_REQUIRE_DBS").is_ok_and(|v| v == "1") => {
            panic!("ORDERED_REQUIRE_DBS=1 but ORDERED_PG_URL is not set")
        }
        _ => eprintln!("skipped the browser tests on PostgreSQL: ORDERED_PG_URL is not set"),
    }
}
