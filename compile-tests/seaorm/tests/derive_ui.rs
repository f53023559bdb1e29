//! Compile-fail tests of `#[derive(DeriveOrdered)]` (one mistake per file, reported on
//! the key) and a pass test covering both the classic entity format and SeaORM 2.0's
//! `#[sea_orm::model]` format. The `.stderr` files pin rustc 1.95's wording; regenerate
//! with `TRYBUILD=overwrite`.
#![allow(missing_docs)]

#[test]
fn derive_errors_and_both_entity_formats() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
