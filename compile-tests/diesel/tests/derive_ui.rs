//! Compile-fail tests of `#[derive(Ordered)]`: one mistake per file, each reported on
//! the offending key with the correct form. The `.stderr` files pin rustc 1.95's wording
//! (the toolchain of this project's machines); regenerate with `TRYBUILD=overwrite`.
//!
//! Only failures here: with no pass case, trybuild checks every file in one
//! `cargo check --keep-going` instead of one cargo run per file. The accepted forms are
//! compiled and run as ordinary tests (`tests/accepted.rs`).
#![allow(missing_docs)]

#[test]
fn derive_errors() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
}
