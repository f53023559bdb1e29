//! Keys against the reference, in one run: ns per key for three patterns of 10,000 keys
//! (append to the end; between random neighbours of a 1,000-key list; a hot gap, each key
//! between `a0` and the previous one), median of 21 runs, beside Rocicorp's
//! `fractional-indexing` running the same patterns under node, with the ratio. Ours is
//! timed twice: `key_between` (a new `String` per key) and `key_between_into` (one reused
//! buffer). Both sides must end with the same keys. The two sides run in five alternating
//! rounds (`--quick`: one), and the ratios are the medians of each round's. When node or
//! the npm package is missing the reference side is skipped, and the benchmark says so.
//!
//! ```sh
//! (cd tools && npm install --no-save fractional-indexing@4.0.0)
//! cargo bench -p ordered-core --bench reference
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::hint::black_box;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use ordered_core::key::{Alphabet, key_between};

const N: usize = 10_000;
const RUNS: usize = 21;
/// Rounds of ours then the reference (`--quick`: one).
const ROUNDS: usize = 5;

/// The LCG the node side uses.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

fn k(a: Option<&str>, b: Option<&str>) -> String {
    key_between(a, b).expect("a valid pair")
}

/// `key_between_into`, writing into `out`.
fn k_into(a: Option<&str>, b: Option<&str>, out: &mut String) {
    Alphabet::BASE62
        .key_between_into(a, b, out)
        .expect("a valid pair");
}

fn append() -> String {
    let mut last: Option<String> = None;
    for _ in 0..N {
        last = Some(k(black_box(last.as_deref()), None));
    }
    last.unwrap_or_default()
}

fn append_into() -> String {
    let (mut last, mut next) = (String::new(), String::new());
    k_into(None, None, &mut last);
    for _ in 1..N {
        k_into(black_box(Some(&last)), None, &mut next);
        std::mem::swap(&mut last, &mut next);
    }
    last
}

fn random(list: &[String], gaps: &[usize]) -> String {
    let mut out = String::new();
    for &g in gaps {
        out = k(black_box(Some(&list[g])), black_box(Some(&list[g + 1])));
    }
    out
}

fn random_into(list: &[String], gaps: &[usize]) -> String {
    let mut out = String::new();
    for &g in gaps {
        k_into(
            black_box(Some(&list[g])),
            black_box(Some(&list[g + 1])),
            &mut out,
        );
    }
    out
}

fn hot() -> String {
    let mut hi = "a1".to_owned();
    for _ in 0..N {
        hi = k(black_box(Some("a0")), black_box(Some(&hi)));
    }
    hi
}

fn hot_into() -> String {
    let (mut hi, mut next) = ("a1".to_owned(), String::new());
    for _ in 0..N {
        k_into(black_box(Some("a0")), black_box(Some(&hi)), &mut next);
        std::mem::swap(&mut hi, &mut next);
    }
    hi
}

/// Median ns per key over `RUNS` timed runs (after one warm-up), and the last key.
fn time(f: &dyn Fn() -> String) -> (f64, String) {
    let mut last = f();
    let mut ns: Vec<f64> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            last = f();
            t.elapsed().as_nanos() as f64 / N as f64
        })
        .collect();
    ns.sort_by(f64::total_cmp);
    (ns[RUNS / 2], last)
}

/// The node side's JSON line, parsed: pattern -> (ns, last key).
fn reference() -> Result<Vec<(String, f64, String)>, String> {
    let tools = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tools");
    if !tools.join("node_modules/fractional-indexing").exists() {
        return Err(format!(
            "the npm package is not installed (cd {} && npm install --no-save fractional-indexing@4.0.0)",
            tools.display()
        ));
    }
    let out = Command::new("node")
        .arg(tools.join("bench-reference.mjs"))
        .output()
        .map_err(|e| format!("node is not available ({e})"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("node's output: {e}"))?;
    Ok(["append", "random", "hot"]
        .iter()
        .map(|p| {
            (
                (*p).to_owned(),
                v[p]["ns"].as_f64().unwrap_or(f64::NAN),
                v[p]["last"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect())
}

fn main() {
    let mut list = vec![k(None, None)];
    for i in 1..1000 {
        let next = k(Some(&list[i - 1]), None);
        list.push(next);
    }
    let mut lcg = Lcg(12345);
    let gaps: Vec<usize> = (0..N)
        .map(|_| (lcg.next() % (list.len() as u64 - 1)) as usize)
        .collect();
    // in alternating rounds, ours then node's, so that both sides see the machine at the
    // same moment (node's own time moves by 2x between runs minutes apart); each round's
    // ratio, and the medians over the rounds
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 1 } else { ROUNDS };
    let mut per_round = Vec::new();
    let mut skipped = None;
    for _ in 0..rounds {
        let ours = [
            ("append", time(&append), time(&append_into)),
            (
                "random",
                time(&|| random(&list, &gaps)),
                time(&|| random_into(&list, &gaps)),
            ),
            ("hot", time(&hot), time(&hot_into)),
        ];
        for (p, (_, a), (_, b)) in &ours {
            assert_eq!(a, b, "{p}: key_between and key_between_into differ");
        }
        let theirs = match reference() {
            Ok(t) => t,
            Err(why) => {
                skipped = Some((why, ours));
                break;
            }
        };
        for ((p, (_, last), _), (_, _, rlast)) in ours.iter().zip(&theirs) {
            assert_eq!(last, rlast, "{p}: the two sides produced different keys");
        }
        per_round.push(
            ours.iter()
                .zip(&theirs)
                .map(|((_, (ns, _), (ns_into, _)), (_, rns, _))| [*ns, *ns_into, *rns])
                .collect::<Vec<_>>(),
        );
    }
    println!(
        "ns per key ({N} keys per pattern, median of {RUNS} runs; {rounds} rounds of ours then the reference)"
    );
    if let Some((why, ours)) = skipped {
        println!("fractional-indexing: skipped: {why}");
        println!("  pattern  key_between  key_between_into");
        for (p, (ns, _), (ns_into, _)) in &ours {
            println!("  {p:<7} {ns:>12.1}  {ns_into:>16.1}");
        }
        return;
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "  pattern  key_between  key_between_into  fractional-indexing 4.0.0 (node)  ratio  ratio (into)  ratios per round (into)"
    );
    for (i, p) in ["append", "random", "hot"].iter().enumerate() {
        let col = |j: usize| median(per_round.iter().map(|r| r[i][j]).collect());
        let ratio = |j: usize| median(per_round.iter().map(|r| r[i][2] / r[i][j]).collect());
        let each: Vec<String> = per_round
            .iter()
            .map(|r| format!("{:.1}x", r[i][2] / r[i][1]))
            .collect();
        println!(
            "  {p:<7} {:>12.1}  {:>16.1}  {:>32.1}  {:>5.1}x  {:>11.1}x  {}",
            col(0),
            col(1),
            col(2),
            ratio(0),
            ratio(1),
            each.join(", ")
        );
    }
    println!("  both sides ended with the same keys");
}
