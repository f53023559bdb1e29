//! Counts, not times: key lengths after 10,000 operations of each pattern, with and
//! without the cap, and rows written per insert for 100,000 inserts into one gap under
//! the Whole and Window policies, beside the seeds' figures (the baseline).
//!
//! Run: `cargo bench -p ordered-core --bench planner` (add `-- --quick` for 10x fewer
//! operations). Writes `target/ordered-core-planner.md`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::fmt::Write as _;

use ordered_core::key::{self, Alphabet};
use ordered_core::model::Store;
use ordered_core::{
    Fractional, Gapped, Numeric, Placement, PositionStrategy, RebalancePolicy, Spec,
};

fn spec(strategy: &'static dyn PositionStrategy, policy: RebalancePolicy) -> Spec {
    Spec::new("t", "p", "ps")
        .with_position("pos")
        .with_strategy(strategy)
        .with_policy(policy)
}

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % (n as u64 + 1)) as usize
    }
}

/// The index each pattern inserts at, given the current length.
fn index(pattern: &str, len: usize, rng: &mut Rng) -> usize {
    match pattern {
        "append" => len,
        "prepend" => 0,
        "random" => rng.below(len),
        _ => len.min(1), // hot gap: always right after the first item
    }
}

/// Longest key after `n` uncapped inserts with `key_between` (the reference algorithm).
fn uncapped(pattern: &str, n: usize) -> (usize, f64) {
    let mut keys: Vec<String> = Vec::new();
    let mut rng = Rng(42);
    for _ in 0..n {
        let i = index(pattern, keys.len(), &mut rng);
        let a = i.checked_sub(1).map(|j| keys[j].as_str());
        let b = keys.get(i).map(String::as_str);
        let k = key::key_between(a, b).expect("valid neighbours");
        keys.insert(i, k);
    }
    let max = keys.iter().map(String::len).max().unwrap_or(0);
    let avg = keys.iter().map(String::len).sum::<usize>() as f64 / keys.len().max(1) as f64;
    (max, avg)
}

/// Inserts through the planner (cap 64, Window) and reports the longest key.
fn capped(pattern: &str, n: usize) -> (usize, u64) {
    static F: Fractional = Fractional::new(Alphabet::BASE62, 64);
    let mut store = Store::new(spec(&F, RebalancePolicy::Window));
    let mut rng = Rng(42);
    let mut ids = Vec::new();
    for _ in 0..n {
        let i = index(pattern, ids.len(), &mut rng);
        let at = if i == 0 {
            Placement::First
        } else {
            Placement::After(ids[i - 1])
        };
        let id = store.insert(1, at).expect("insert");
        ids.insert(i, id);
    }
    let max = store
        .list(1)
        .iter()
        .filter_map(|r| r.position.as_key().map(str::len))
        .max()
        .unwrap_or(0);
    (max, store.stats().relabels)
}

fn hot_gap_rows(
    strategy: &'static dyn PositionStrategy,
    policy: RebalancePolicy,
    n: usize,
) -> (f64, u64, u64) {
    let mut store = Store::new(spec(strategy, policy));
    let a = store.insert(1, Placement::Last).expect("insert");
    store.insert(1, Placement::Last).expect("insert");
    for _ in 0..n {
        store.insert(1, Placement::After(a)).expect("insert");
    }
    let s = store.stats();
    (
        s.rows_written as f64 / s.ops as f64,
        s.relabels,
        s.relabelled,
    )
}

/// Rows written per move for `moves` moves of a random item to the front of `n` items
/// spaced 1024 apart (gapped, Window), as the engine benchmark's "move to front"; and the
/// largest relabel.
fn front_rows(n: usize, moves: usize) -> (f64, u64, u64) {
    let mut store = Store::new(spec(&Gapped::DEFAULT, RebalancePolicy::Window));
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        ids.push(store.insert(1, Placement::Last).expect("insert"));
    }
    let before = store.stats();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut largest = 0;
    for _ in 0..moves {
        let item = ids[rng.below(n - 1)];
        let plan = store
            .apply(&ordered_core::Request::Move {
                item,
                at: Placement::First,
            })
            .expect("move");
        largest = largest.max(plan.relabelled);
    }
    let s = store.stats();
    (
        (s.rows_written - before.rows_written) as f64 / moves as f64,
        s.relabels - before.relabels,
        largest,
    )
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (n_keys, n_hot) = if quick {
        (1_000, 10_000)
    } else {
        (10_000, 100_000)
    };
    let mut md = String::new();
    let _ = writeln!(md, "## Key length after {n_keys} inserts (base 62)\n");
    let _ = writeln!(
        md,
        "| pattern | reference algorithm, uncapped: max / avg | seeds' figure (reference 4.0.0) | ours, cap 64, Window: max | re-keys |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|");
    for (pattern, seed) in [
        ("append", "4 (c1aH)"),
        ("prepend", "-"),
        ("random", "-"),
        ("hot", "1,669"),
    ] {
        let (umax, uavg) = uncapped(pattern, n_keys);
        let (cmax, relabels) = capped(pattern, n_keys);
        let _ = writeln!(
            md,
            "| {pattern} | {umax} / {uavg:.1} | {seed} | {cmax} | {relabels} |"
        );
    }
    let _ = writeln!(
        md,
        "\n## Rows written per insert, {n_hot} inserts into one gap\n"
    );
    let _ = writeln!(
        md,
        "| strategy | policy | rows per insert | relabels | rows relabelled |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|");
    static G8: Gapped = Gapped::new(8);
    static F64: Fractional = Fractional::DEFAULT;
    static FLOAT: Numeric = Numeric::FLOAT;
    static DEC: Numeric = Numeric::decimal(15, 4);
    let strategies: [(&str, &'static dyn PositionStrategy); 5] = [
        ("gapped, spacing 1024", &Gapped::DEFAULT),
        ("gapped, spacing 8", &G8),
        ("fractional, cap 64", &F64),
        ("numeric (float), spacing 65535, min gap 2^-20", &FLOAT),
        ("decimal NUMERIC(15, 4), spacing 1000", &DEC),
    ];
    for (name, s) in strategies {
        for (pname, policy) in [
            ("Whole", RebalancePolicy::Whole),
            ("Window", RebalancePolicy::Window),
        ] {
            let (per, relabels, rows) = hot_gap_rows(s, policy, n_hot);
            let _ = writeln!(md, "| {name} | {pname} | {per:.2} | {relabels} | {rows} |");
            eprintln!("  {name} / {pname}: {per:.2} rows per insert");
        }
    }
    let _ = writeln!(
        md,
        "\n## Move to front (\"bump to top\"): a random item to the front, gapped 1024, Window\n"
    );
    let _ = writeln!(
        md,
        "| items | moves | rows per move | relabels | largest relabel (rows) |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|");
    let front: &[(usize, usize)] = if quick {
        &[(10_000, 200), (10_000, 2_000)]
    } else {
        &[
            (10_000, 200),
            (100_000, 200),
            (10_000, 10_000),
            (100_000, 10_000),
        ]
    };
    for &(n, moves) in front {
        let (per, relabels, largest) = front_rows(n, moves);
        let _ = writeln!(md, "| {n} | {moves} | {per:.2} | {relabels} | {largest} |");
        eprintln!("  move to front, {n} items, {moves} moves: {per:.2} rows per move");
    }
    println!("{md}");
    let _ = std::fs::create_dir_all("../target");
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/ordered-core-planner.md");
    if let Err(e) = std::fs::write(&path, &md) {
        eprintln!("could not write {}: {e}", path.display());
    }
}
