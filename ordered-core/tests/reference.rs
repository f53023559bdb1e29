//! Compatibility with Rocicorp's `fractional-indexing` 4.0.0: every case in
//! `fixtures/reference-keys.json` was produced by the reference package itself
//! (`tools/gen-key-fixtures.mjs`): random, append, prepend and hot-gap sequences in base
//! 62, 95 and 10, `generateNKeysBetween` on their neighbours, and inputs it rejects.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use ordered_core::key::{self, Alphabet};
use serde_json::Value;

fn fixtures() -> Value {
    let text = include_str!("fixtures/reference-keys.json");
    serde_json::from_str(text).expect("fixture parses")
}

fn alphabet(name: &str) -> Alphabet {
    match name {
        "base62" => Alphabet::BASE62,
        "base95" => Alphabet::BASE95,
        "base10" => Alphabet::custom("0123456789").unwrap(),
        other => panic!("unknown alphabet {other}"),
    }
}

fn opt(v: &Value) -> Option<&str> {
    v.as_str()
}

#[test]
fn key_between_matches_the_reference() {
    let f = fixtures();
    let cases = f["between"].as_array().unwrap();
    assert!(cases.len() > 9000);
    for c in cases {
        let a = alphabet(c[0].as_str().unwrap());
        let got = a.key_between(opt(&c[1]), opt(&c[2])).unwrap();
        assert_eq!(got, c[3].as_str().unwrap(), "case {c}");
    }
}

#[test]
fn n_keys_between_matches_the_reference() {
    let f = fixtures();
    for c in f["n_between"].as_array().unwrap() {
        let a = alphabet(c[0].as_str().unwrap());
        let n = c[3].as_u64().unwrap() as usize;
        let got = a.n_keys_between(opt(&c[1]), opt(&c[2]), n).unwrap();
        let want: Vec<&str> = c[4]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(got, want, "case {c}");
    }
}

#[test]
fn inputs_the_reference_rejects_are_rejected() {
    let f = fixtures();
    let cases = f["rejected"].as_array().unwrap();
    assert!(!cases.is_empty());
    for c in cases {
        assert!(
            key::key_between(opt(&c[0]), opt(&c[1])).is_err(),
            "accepted {c}"
        );
    }
}
