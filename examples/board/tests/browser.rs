//! The board in real browsers: Debian's `chromium` driven by `playwright-core`
//! (`tests/browser/drag.mjs`), against the server on SQLite and on PostgreSQL. After
//! every step of the script this test reads the database itself and requires every
//! page to show exactly its order: a drag in one page appears in the other within a
//! second; a drag across columns; both pages dropping into one gap at the same moment
//! end identical to the database with no card lost or doubled; a stale page's drag is
//! refused and that page repairs itself; adding at the end and below a card, removing;
//! a reload; a keyboard move; a phone profile (375 px, touch) and a touch drag. Then the
//! same board in Debian's `firefox-esr`, driven by `puppeteer-core` over WebDriver BiDi
//! (`tests/browser/firefox.mjs`): two pages, a keyboard move seen by the other, a card
//! added. Screenshots go to `target/board-screenshots/`.
//!
//! Needs `ORDERED_BROWSER=1`, node, `npm ci` in `tests/browser`, `/usr/bin/chromium`
//! (or `CHROMIUM`) and `/usr/bin/firefox-esr`; `.ci/run` installs them. Without `ORDERED_BROWSER=1` it says it
//! skipped.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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

/// Chromium through playwright-core: two (then three) pages, a phone profile.
const CHROMIUM: Script = Script {
    file: "drag.mjs",
    steps: 11,
    shots: &["a", "b", "phone"],
};

/// Firefox ESR through puppeteer-core over WebDriver BiDi.
const FIREFOX: Script = Script {
    file: "firefox.mjs",
    steps: 4,
    shots: &["firefox"],
};

fn run(engine: &str, url: &str, dir: &Path, chromium: &Path, script: &Script) {
    let rt = tokio::runtime::Runtime::new().unwrap();
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
        let app = board::app(state.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (state, addr)
    });
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
