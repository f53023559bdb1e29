//! Compile-fail tests of `#[derive(DeriveOrdered)]`: one mistake per file, reported on
//! the key. The `.stderr` files pin rustc 1.95's wording; regenerate with
//! `TRYBUILD=overwrite`.
//!
//! Only failures here: with no pass case, trybuild checks every file in one
//! `cargo check --keep-going` instead of one cargo run per file. The accepted forms (the
//! classic entity format and SeaORM 2.0's `#[sea_orm::model]` format among them) are
//! compiled and run as ordinary tests (`tests/accepted.rs`).
#![allow(missing_docs)]

#[test]
fn derive_errors() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
}
