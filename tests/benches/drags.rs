//! How often a page's drag is refused, per concurrency mode, when several pages drag in
//! one list at once (a bench binary: the three modes in alternating rounds of the same
//! run, the median of the rounds and their spread).
//!
//! ```sh
//! ORDERED_PG_URL=postgres://... cargo bench -p ordered-conformance --bench drags [-- --quick]
//! ```
//!
//! Four pages (a thread and a connection each) show a list of 40 items. Each drags a
//! random item of what it shows into a random gap of what it shows, sending the
//! neighbours and the version it read; it learns of the others' drags only when it
//! re-reads, which it does after each of its own writes that was refused and after
//! every third drag of its own that went through (a page whose live updates lag). A
//! refusal is counted; the page re-reads. `Neighbours` refuses a drop whose gap
//! changed, `Version` any drop after another page's write, `VersionOrNeighbours` a
//! stale version only when the neighbours no longer hold either.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use diesel::Connection;
use diesel::connection::SimpleConnection;
use ordered_conformance::Rng;
use ordered_core::migration::{create_parent_table, create_table};
use ordered_core::{Concurrency, Id, Spec};
use ordered_diesel::{OrderedConnection, OrderedTable};

/// A concurrency mode built from the version a page read.
type Mode = fn(i64) -> Concurrency;

const PAGES: usize = 4;
const ITEMS: i64 = 40;

fn spec(engine: &str) -> Spec {
    let table: &'static str = Box::leak(format!("b_drag_{engine}_i").into_boxed_str());
    let parent: &'static str = Box::leak(format!("b_drag_{engine}_p").into_boxed_str());
    Spec::new(table, "parent_id", parent).with_version("version")
}

fn setup<C: OrderedConnection + SimpleConnection>(c: &mut C, s: &Spec) {
    let d = C::DIALECT;
    let q = |x: &str| ordered_core::adapter::sql::quote(d, x);
    c.batch_execute(&format!("DROP TABLE IF EXISTS {}", q(s.table)))
        .unwrap();
    c.batch_execute(&format!("DROP TABLE IF EXISTS {}", q(s.parent_table)))
        .unwrap();
    for stmt in create_parent_table(d, s, &[])
        .up
        .iter()
        .chain(&create_table(d, s, &[]).up)
    {
        c.batch_execute(stmt).unwrap();
    }
    c.batch_execute(&format!(
        "INSERT INTO {} ({}) VALUES (1)",
        q(s.parent_table),
        q("id")
    ))
    .unwrap();
    let positions: Vec<String> = (1..=ITEMS).map(|i| format!("(1, {})", i * 1024)).collect();
    c.batch_execute(&format!(
        "INSERT INTO {} ({}, {}) VALUES {}",
        q(s.table),
        q("parent_id"),
        q("position"),
        positions.join(", ")
    ))
    .unwrap();
}

/// One round: every page makes `drags` drags in `mode`; the share refused.
fn round<C: OrderedConnection>(
    open: &(dyn Fn() -> C + Sync),
    s: Spec,
    mode: Mode,
    drags: usize,
    seed: u64,
) -> f64 {
    let refused: usize = std::thread::scope(|scope| {
        let pages: Vec<_> = (0..PAGES)
            .map(|page| {
                scope.spawn(move || {
                    let mut c = open();
                    let o = OrderedTable::new(s).retry(ordered_core::RetryPolicy {
                        max_attempts: 50,
                        ..ordered_core::RetryPolicy::default()
                    });
                    let mut rng = Rng(seed ^ (page as u64 + 1).wrapping_mul(0x9E37_79B9));
                    let mut view = o.list_versioned(&mut c, 1).unwrap();
                    let (mut refused, mut since_read) = (0, 0);
                    for _ in 0..drags {
                        let ids: Vec<Id> = view.rows.iter().map(|r| r.id).collect();
                        let item = ids[rng.below(ids.len())];
                        let rest: Vec<Id> = ids.into_iter().filter(|&i| i != item).collect();
                        // a gap of what the page shows: before rest[g], or at the end
                        let g = rng.below(rest.len() + 1);
                        let prev = g.checked_sub(1).map(|p| rest[p]);
                        let next = rest.get(g).copied();
                        let version = view.version.unwrap_or(0);
                        let r = o
                            .clone()
                            .concurrency(mode(version))
                            .move_between(&mut c, item, prev, next);
                        since_read += 1;
                        match r {
                            Ok(_) if since_read < 3 => {}
                            Ok(_) => {
                                view = o.list_versioned(&mut c, 1).unwrap();
                                since_read = 0;
                            }
                            Err(e) => {
                                assert!(
                                    matches!(e.code(), "stale_neighbours" | "version_conflict"),
                                    "{e}"
                                );
                                refused += 1;
                                view = o.list_versioned(&mut c, 1).unwrap();
                                since_read = 0;
                            }
                        }
                    }
                    refused
                })
            })
            .collect();
        pages.into_iter().map(|p| p.join().unwrap()).sum()
    });
    refused as f64 * 100.0 / (PAGES * drags) as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn engine<C: OrderedConnection + SimpleConnection>(
    name: &str,
    open: &(dyn Fn() -> C + Sync),
    rounds: usize,
    drags: usize,
) {
    let s = spec(name);
    let modes: [(&str, Mode); 3] = [
        ("Neighbours", |_| Concurrency::Neighbours),
        ("Version", Concurrency::Version),
        ("VersionOrNeighbours", Concurrency::VersionOrNeighbours),
    ];
    let mut shares = vec![Vec::new(); modes.len()];
    for r in 0..rounds {
        // the modes alternate, each from the same list and the same drags
        for (m, (_, mode)) in modes.iter().enumerate() {
            setup(&mut open(), &s);
            shares[m].push(round(open, s, *mode, drags, 0x5EED + r as u64));
        }
    }
    for ((label, _), v) in modes.iter().zip(shares) {
        let (lo, hi) = (
            v.iter().copied().fold(f64::MAX, f64::min),
            v.iter().copied().fold(f64::MIN, f64::max),
        );
        println!(
            "| {name} | {label} | {:.1} % | {lo:.1} to {hi:.1} % |",
            median(v.clone())
        );
    }
    let mut c = open();
    let q = |x: &str| ordered_core::adapter::sql::quote(C::DIALECT, x);
    c.batch_execute(&format!("DROP TABLE {}", q(s.table)))
        .unwrap();
    c.batch_execute(&format!("DROP TABLE {}", q(s.parent_table)))
        .unwrap();
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (rounds, drags) = if quick { (1, 10) } else { (5, 60) };
    println!("{PAGES} pages, {ITEMS} items, {drags} drags per page, {rounds} rounds\n");
    println!("| engine | mode | drags refused (median) | spread |");
    println!("|---|---|---|---|");
    let path = std::env::temp_dir().join("ordered-bench-drags.db");
    let _ = std::fs::remove_file(&path);
    let url = path.to_str().unwrap().to_owned();
    // WAL is kept in the file: set once, before the pages connect
    diesel::SqliteConnection::establish(&url)
        .unwrap()
        .batch_execute("PRAGMA journal_mode = WAL")
        .unwrap();
    let sqlite = move || {
        let mut c = diesel::SqliteConnection::establish(&url).unwrap();
        c.batch_execute("PRAGMA busy_timeout = 5000").unwrap();
        c
    };
    engine("sqlite", &sqlite, rounds, drags);
    if let Ok(u) = std::env::var("ORDERED_PG_URL")
        && !u.is_empty()
    {
        let pg = move || diesel::PgConnection::establish(&u).unwrap();
        engine("postgres", &pg, rounds, drags);
    }
}
