//! The adapter's integration tests against the real engines, one module per subject, in
//! one test binary: the modules share one build of the harness (`../common`) and one
//! link, where a binary per file built and linked each on its own. Every test names its
//! own tables, so they run in parallel here as they did in separate binaries.
//!
//! `tests/reliability.rs` (a suite with its own report) stays a binary of its own.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod composite;
mod engines;
mod faults;
mod galera;
mod keys;
mod links;
mod live;
mod tree;
