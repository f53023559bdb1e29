//! Compile-fail tests of `#[derive(Ordered)]`: one mistake per file, each reported on
//! the offending key with the correct form. The `.stderr` files pin rustc 1.95's wording
//! (the toolchain of this project's machines); regenerate with `TRYBUILD=overwrite`.
#![allow(missing_docs)]

#[test]
fn derive_errors_and_accepted_forms() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
