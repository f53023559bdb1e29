//! The board's figures, each check against the other in the same run: how many drags
//! are refused when many people drag at once, and how long a drag in one page takes to
//! show in another.
//!
//! ```text
//! cargo run -p board --release --example figures -- --db sqlite --rounds 5
//! cargo run -p board --release --example figures -- --db "$ORDERED_PG_URL" --rounds 5 --pages
//! ```
//!
//! Every round serves a fresh board twice, once with [`Check::Version`] (a drag carries
//! the board's version only: what the board did before) and once with
//! [`Check::VersionOrNeighbours`] (what it does), in alternating order, and runs:
//!
//! - **API clients**: `--clients` people (200) read the board, wait for each other and
//!   drop a card at once, each into a place of its own choosing; a refused one re-reads
//!   and tries the same move again, up to `--retries` (30) times, then gives up.
//! - **Busy pages** (`--pages`): four Chromium pages drag as fast as their pages settle,
//!   25 drags each (`tests/browser/busy.mjs`; needs `npm ci` there and Debian's
//!   `chromium`); then one page drags 20 times while another shows it: the delay from
//!   the drag's request leaving page A to page B showing its version.
//!
//! It prints each round, then the median of the rounds with their range.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use axum::body::Bytes;
use board::Check;
use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use sea_orm::ConnectionTrait;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

#[derive(Parser, Debug)]
struct Args {
    /// `sqlite` (a file in the temporary directory) or a database URL.
    #[arg(long, default_value = "sqlite")]
    db: String,
    /// Rounds, each running both checks.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// API clients dropping at once.
    #[arg(long, default_value_t = 200)]
    clients: usize,
    /// How many refusals an API client takes before it gives up.
    #[arg(long, default_value_t = 30)]
    retries: usize,
    /// Also drive four busy Chromium pages, and measure page-to-page delays.
    #[arg(long)]
    pages: bool,
}

type Http = Client<HttpConnector, Full<Bytes>>;

async fn call(http: &Http, method: &str, url: &str, body: Option<&Value>) -> (u16, Value) {
    let req = axum::http::Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(
            body.map(Value::to_string).unwrap_or_default(),
        )))
        .unwrap();
    let res = http.request(req).await.unwrap();
    let status = res.status().as_u16();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// What one round of API clients did.
#[derive(Debug, Default, Clone, Copy)]
struct Clients {
    refusals: usize,
    gave_up: usize,
    moved: usize,
    ms: u128,
}

/// One person's drag: `card` to place `index` of `column`, tried until it is not
/// refused or `retries` refusals were taken.
async fn person(
    http: Http,
    base: String,
    pick: u128,
    retries: usize,
    start: Arc<tokio::sync::Barrier>,
) -> (usize, bool) {
    let mut refused = 0;
    let mut first = true;
    loop {
        let (_, b) = call(&http, "GET", &format!("{base}api/board"), None).await;
        let cols: Vec<(String, Vec<String>)> = board::COLUMNS
            .iter()
            .map(|c| {
                let ids = b["columns"][c].as_array().unwrap();
                (
                    (*c).to_owned(),
                    ids.iter()
                        .map(|x| x["id"].as_str().unwrap().to_owned())
                        .collect(),
                )
            })
            .collect();
        let all: Vec<&String> = cols.iter().flat_map(|(_, ids)| ids).collect();
        let card = all[(pick % all.len() as u128) as usize].clone();
        let (column, ids) = &cols[((pick >> 16) % 3) as usize];
        let others: Vec<&String> = ids.iter().filter(|x| **x != card).collect();
        let index = ((pick >> 32) % (others.len() as u128 + 1)) as usize;
        let drag = json!({
            "card": card,
            "column": column,
            "prev": index.checked_sub(1).map(|i| others[i]),
            "next": others.get(index),
            "version": b["version"],
        });
        if first {
            // everyone holds the board as it was, then drops at once
            start.wait().await;
            first = false;
        }
        let (status, answer) = call(&http, "POST", &format!("{base}api/move"), Some(&drag)).await;
        match status {
            200 => return (refused, true),
            409 | 404 => {
                refused += 1;
                if refused > retries {
                    return (refused, false);
                }
            }
            other => panic!("a drag answered {other}: {answer}"),
        }
    }
}

async fn serve(url: &str, check: Check) -> (String, Arc<board::AppState>) {
    let db = sea_orm::Database::connect(url).await.unwrap();
    for t in ["board_cards", "board_boards"] {
        db.execute_unprepared(&format!("DROP TABLE IF EXISTS {t}"))
            .await
            .unwrap();
    }
    let state = board::setup_with(db, check).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = board::app(state.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/"), state)
}

async fn clients(base: &str, args: &Args) -> Clients {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let http: Http = Client::builder(TokioExecutor::new()).build(connector);
    let start = Arc::new(tokio::sync::Barrier::new(args.clients));
    let t0 = std::time::Instant::now();
    let tasks: Vec<_> = (0..args.clients)
        .map(|_| {
            tokio::spawn(person(
                http.clone(),
                base.to_owned(),
                uuid::Uuid::new_v4().as_u128(),
                args.retries,
                Arc::clone(&start),
            ))
        })
        .collect();
    let mut out = Clients::default();
    for t in tasks {
        let (refused, moved) = t.await.unwrap();
        out.refusals += refused;
        if moved {
            out.moved += 1;
        } else {
            out.gave_up += 1;
        }
    }
    out.ms = t0.elapsed().as_millis();
    out
}

/// What the busy pages saw: drags sent, drags refused, page-to-page delays (ms).
#[derive(Debug, Default, Clone)]
struct Pages {
    drags: f64,
    refused: f64,
    codes: String,
    delays: Vec<f64>,
}

async fn pages(base: &str) -> Pages {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    let mut node = tokio::process::Command::new("node")
        .arg(dir.join("busy.mjs"))
        .arg(base)
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .spawn()
        .expect("node (and npm ci in examples/board/tests/browser)");
    let mut lines = BufReader::new(node.stdout.take().unwrap()).lines();
    let mut out = None;
    while let Some(line) = lines.next_line().await.unwrap() {
        if let Some(json) = line.strip_prefix("RESULT ") {
            let v: Value = serde_json::from_str(json).unwrap();
            out = Some(Pages {
                drags: v["drags"].as_f64().unwrap(),
                refused: v["refused"].as_f64().unwrap(),
                codes: v["codes"].to_string(),
                delays: v["delays"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d.as_f64().unwrap())
                    .collect(),
            });
        } else {
            eprintln!("node: {line}");
        }
    }
    assert!(node.wait().await.unwrap().success(), "busy.mjs failed");
    out.expect("busy.mjs printed no RESULT")
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    if xs.is_empty() {
        return f64::NAN;
    }
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

fn spread(xs: &[f64]) -> String {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{:.1} ({lo:.1}-{hi:.1})", median(xs.to_vec()))
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let url = if args.db == "sqlite" {
        let file = std::env::temp_dir().join("ordered-board-figures.db");
        let _ = std::fs::remove_file(&file);
        format!("sqlite://{}?mode=rwc", file.display())
    } else {
        args.db.clone()
    };
    let checks = [Check::Version, Check::VersionOrNeighbours];
    // per check: gave up, refusals per drag, seconds, page refusal %, delay medians
    let mut seen: Vec<[Vec<f64>; 5]> = vec![Default::default(), Default::default()];
    for round in 0..args.rounds {
        for k in 0..2 {
            // alternate which check runs first
            let which = if round % 2 == 0 { k } else { 1 - k };
            let check = checks[which];
            let (base, state) = serve(&url, check).await;
            let c = clients(&base, &args).await;
            println!(
                "round {round} {check:?}: {} clients, {} moved, {} gave up, {} refusals, {} ms",
                args.clients, c.moved, c.gave_up, c.refusals, c.ms
            );
            let s = &mut seen[which];
            s[0].push(c.gave_up as f64);
            s[1].push(c.refusals as f64 / args.clients as f64);
            s[2].push(c.ms as f64);
            if args.pages {
                let p = pages(&base).await;
                let pct = 100.0 * p.refused / p.drags;
                let delay = median(p.delays.clone());
                println!(
                    "round {round} {check:?}: 4 busy pages, {} drags, {} refused ({pct:.1} %: {}); A to B median {delay:.0} ms",
                    p.drags, p.refused, p.codes
                );
                s[3].push(pct);
                s[4].push(delay);
            }
            board::shutdown(&state);
        }
    }
    println!("\nmedian (range) over {} rounds:", args.rounds);
    for (i, check) in checks.iter().enumerate() {
        let s = &seen[i];
        println!(
            "{check:?}: API clients gave up {}, refusals per client {}, burst {} ms",
            spread(&s[0]),
            spread(&s[1]),
            spread(&s[2])
        );
        if args.pages {
            println!(
                "{check:?}: busy pages refused {} %, A to B {} ms",
                spread(&s[3]),
                spread(&s[4])
            );
        }
    }
}
