//! The derive's accepted forms: each file of `ui/pass` is a module of this test crate,
//! compiled with it, and its `main` (assertions on the spec the derive wrote) runs as a
//! test.
#![allow(missing_docs, dead_code)]

#[path = "ui/pass/association.rs"]
mod association;

#[test]
fn association_is_accepted() {
    association::main();
}

#[path = "ui/pass/both_formats.rs"]
mod both_formats;

#[test]
fn both_formats_is_accepted() {
    both_formats::main();
}

#[path = "ui/pass/key_types.rs"]
mod key_types;

#[test]
fn key_types_is_accepted() {
    key_types::main();
}

#[path = "ui/pass/tree.rs"]
mod tree;

#[test]
fn tree_is_accepted() {
    tree::main();
}

#[path = "ui/pass/numeric.rs"]
mod numeric;

#[test]
fn numeric_is_accepted() {
    numeric::main();
}
