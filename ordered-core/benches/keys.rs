//! `key_between` ns/op for append, prepend, random and hot-gap patterns, against the
//! seeds' base-62 midpoint without an integer head (the baseline, run in the same
//! process). Run: `cargo bench -p ordered-core --bench keys`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use criterion::{BenchmarkId, Criterion, black_box, criterion_group, criterion_main};
use ordered_core::key;

/// The seeds' `key_between` (fractional part only, no integer head), as the baseline.
mod seed {
    const D: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    const B: usize = 62;
    fn val(c: u8) -> usize {
        D.iter().position(|&x| x == c).unwrap_or(0)
    }
    fn midpoint(a: &[u8], b: Option<&[u8]>) -> Vec<u8> {
        if let Some(b) = b {
            let n = (0..b.len())
                .take_while(|&i| *a.get(i).unwrap_or(&b'0') == b[i])
                .count();
            if n > 0 {
                let mut k = b[..n].to_vec();
                k.extend(midpoint(a.get(n..).unwrap_or(&[]), Some(&b[n..])));
                return k;
            }
        }
        let da = a.first().map_or(0, |&c| val(c));
        let db = b.map_or(B, |b| val(b[0]));
        if db - da > 1 {
            return vec![D[(da + db).div_ceil(2)]];
        }
        match b {
            Some(b) if b.len() > 1 => b[..1].to_vec(),
            _ => {
                let mut k = vec![D[da]];
                k.extend(midpoint(a.get(1..).unwrap_or(&[]), None));
                k
            }
        }
    }
    pub(crate) fn key_between(a: Option<&str>, b: Option<&str>) -> String {
        let k = match (a, b) {
            (None, None) => vec![D[B / 2]],
            (Some(a), None) => {
                let (last, head) = a.as_bytes().split_last().unwrap_or((&b'0', &[]));
                let mut k = head.to_vec();
                if val(*last) + 1 < B {
                    k.push(D[val(*last) + 1]);
                } else {
                    k.push(*last);
                    k.push(D[B / 2]);
                }
                k
            }
            (None, Some(b)) => {
                let (last, head) = b.as_bytes().split_last().unwrap_or((&b'0', &[]));
                let mut k = head.to_vec();
                if val(*last) > 1 {
                    k.push(D[val(*last) - 1]);
                } else {
                    k.extend([b'0', D[B / 2]]);
                }
                k
            }
            (Some(a), Some(b)) => midpoint(a.as_bytes(), Some(b.as_bytes())),
        };
        String::from_utf8(k).unwrap_or_default()
    }
}

type KeyFn = fn(Option<&str>, Option<&str>) -> String;

fn ours(a: Option<&str>, b: Option<&str>) -> String {
    key::key_between(a, b).unwrap_or_default()
}

/// Builds a 1,000-key list with `f`, then measures one call at the pattern's spot.
fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("key_between");
    for (name, f) in [
        ("ours", ours as KeyFn),
        ("seed baseline", seed::key_between as KeyFn),
    ] {
        let mut keys = vec![f(None, None)];
        for _ in 0..999 {
            let next = f(keys.last().map(String::as_str), None);
            keys.push(next);
        }
        let mid = keys.len() / 2;
        let cases: [(&str, Option<&str>, Option<&str>); 4] = [
            ("append", keys.last().map(String::as_str), None),
            ("prepend", None, keys.first().map(String::as_str)),
            (
                "random",
                Some(keys[mid].as_str()),
                Some(keys[mid + 1].as_str()),
            ),
            ("hot gap", Some(keys[0].as_str()), Some(keys[1].as_str())),
        ];
        for (pattern, a, b) in cases {
            g.bench_with_input(BenchmarkId::new(name, pattern), &(a, b), |bch, (a, b)| {
                bch.iter(|| f(black_box(*a), black_box(*b)))
            });
        }
        // a hot gap after 1,000 inserts into it: long neighbours
        let (mut lo, mut hi) = (f(None, None), f(Some("a0"), None));
        if name == "seed baseline" {
            hi = f(Some(&lo), None);
        }
        for _ in 0..1000 {
            hi = f(Some(&lo), Some(&hi));
        }
        lo = lo.clone();
        g.bench_function(BenchmarkId::new(name, "hot gap, 1k deep"), |bch| {
            bch.iter(|| f(black_box(Some(&lo)), black_box(Some(&hi))))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
