//! The adapter's integration tests against the real engines, one module per subject, in
//! one test binary: the modules share one build of the harness (`../common`) and one
//! link, where a binary per file built and linked each on its own. Every test names its
//! own tables, so they run in parallel here as they did in separate binaries.
//!
//! `tests/observe.rs` (a process-wide tracing subscriber), `tests/cli.rs` (the migration
//! command) and `tests/reliability` (a suite with its own report) stay binaries of their
//! own.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod async_diesel;
mod composite;
mod concurrency;
mod engines;
mod faults;
mod fuzz;
mod galera;
mod keys;
mod links;
mod live;
mod lock_rows;
mod migrations;
mod numeric;
mod retries;
mod tree;
