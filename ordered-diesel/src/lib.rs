//! User-defined order in SQL tables for Diesel 2.3: playlist tracks, checklist steps,
//! board cards. Every move writes one row when a gap exists, concurrent moves are
//! serialised on the parent row, and a stale request gets a typed error instead of a
//! silent wrong move. PostgreSQL, MySQL/MariaDB and SQLite.
//!
//! ```
//! # include!("../doctest_setup.rs");
//! // (the setup above imports `ordered_diesel::{Ordered, OrderedDsl}`)
//!
//! // #[derive(Queryable, Selectable, Ordered)]
//! // #[diesel(table_name = tracks)]
//! // #[ordered(scope = playlist_id, parent = playlists, version = version)]
//! // struct Track { id: i64, playlist_id: i64, title: String, position: i64 }
//! # fn main() -> Result<(), ordered_diesel::Error> {
//! # let conn = &mut setup();
//! let intro = Track::insert_last(conn, 1, |c, slot| new_track(c, slot, "Intro"))?.value;
//! let demo = Track::insert_last(conn, 1, |c, slot| new_track(c, slot, "Demo"))?.value;
//! let credits = Track::insert_last(conn, 1, |c, slot| new_track(c, slot, "Credits"))?.value;
//! Track::move_before(conn, credits, demo)?;            // writes one row
//! let setup = Track::insert_between(conn, 1, Some(credits), Some(demo), |c, slot| {
//!     new_track(c, slot, "Setup")
//! })?;
//! // the model's own keys in, the model's own keys out
//! let ids: Vec<i64> = Track::list(conn, 1)?.iter().map(|r| r.id).collect();
//! assert_eq!(ids, [intro, credits, setup.value, demo]);
//!
//! // a client that read the list before Setup arrived is refused, and nothing changes
//! let stale = Track::move_between(conn, intro, Some(credits), Some(demo));
//! assert!(matches!(
//!     stale.unwrap_err().refusal(),
//!     Some(ordered_diesel::OrderingError::StaleNeighbours { .. })
//! ));
//! # Ok(()) }
//! ```
//!
//! # The derive
//! `#[derive(Ordered)]` reads the model's `#[diesel(table_name = ...)]` and an
//! `#[ordered(...)]` attribute in Diesel's value style:
//!
//! | key | required | value |
//! |---|---|---|
//! | `scope` | yes | the column holding the parent key |
//! | `parent` | yes | the parent table (its row is locked before every write) |
//! | `parent_key` | no (`id`) | the parent table's key column |
//! | `position` | no (`position`) | the position column |
//! | `id` | no (`id`) | the items' key column |
//! | `version` | no | a `BIGINT` version column on the parent table, bumped by every write |
//! | `strategy` | no (`gapped`) | `gapped`, `dense`, `fractional`, or a path to a const implementing `PositionStrategy` |
//! | `spacing` | no (1024) | gapped spacing |
//! | `max_len` | no (64) | fractional key cap |
//! | `policy` | no (`window`) | `window`, `whole` or `never` |
//! | `unique` | no | the name of the `UNIQUE (scope, position)` constraint, as a string |
//! | `filter` | no | the rows the lists show, an SQL predicate as a string (`"archived_at IS NULL"`); see [`Spec::filter`] |
//! | `table` | no | the SQL table name, if it differs from the `table!` name |
//!
//! The key types come from the `table!` schema: `BigInt`, `Integer` or `SmallInt`
//! columns hold integer keys, `Uuid` (PostgreSQL, feature `uuid`) and `Binary` UUIDs,
//! `Text` strings ([`keys`]); the id and scope fields must read them (`i64`, `i32`,
//! `i16`, `uuid::Uuid`, `Vec<u8>`, `String`), and the scope column must have the parent
//! key's type. The operations take the keys as `impl Into<Id>`.
//!
//! Every column is checked against the `table!` schema at compile time, and every
//! mistake in the attribute is a compile error on the offending key:
//!
//! ```compile_fail
//! # include!("../doctest_setup.rs");
//! #[derive(Ordered)]
//! #[diesel(table_name = tracks)]
//! #[ordered(scope = playlist_id, parent = playlists, postion = position)]
//! struct Misspelled { id: i64 }
//! # fn main() {}
//! ```
//!
//! # Transactions and retries
//! Each operation is one transaction: `BEGIN` (`BEGIN IMMEDIATE` on SQLite), lock the
//! parent row(s) in increasing key order, read under the lock, plan, write, commit. A
//! deadlock, serialization failure, lock timeout or `SQLITE_BUSY` re-runs the whole
//! operation (5 attempts, jittered backoff, 2 s deadline; see [`RetryPolicy`]).
//! Called inside your own transaction, an operation runs in a savepoint and is not
//! retried: [`Error::is_retryable`] tells you to retry your transaction. On SQLite, open
//! your own transactions with `immediate_transaction`, and set a `busy_timeout`.
//!
//! The sync operations block their thread, and a retry pauses it with
//! `std::thread::sleep` (bounded by the policy's deadline, 2 s by default). From async
//! code, call them through `tokio::task::spawn_blocking` (or deadpool-diesel's
//! `interact`), or use [`async_diesel`] over diesel-async (features `async-*`), whose
//! retries sleep on tokio's timer.
//!
//! # Prepared statements
//! The library's statements of a fixed shape stay in the connection's prepared
//! statement cache (Diesel's, keyed by their text), so a move prepares nothing after
//! the first one of its kind. On MySQL/MariaDB, when one of them fails (a deadlock, a
//! lock wait timeout, a Galera abort), the library empties that cache and sets it back
//! to `CacheSize::Unbounded`, Diesel's default: MariaDB Connector/C cannot run a
//! statement again whose rows ended in an error (its next execute waits for good), and
//! closing every statement is the one way Diesel offers to drop it. A connection you set
//! to `CacheSize::Disabled` is caching again after such a failure; your own statements
//! are prepared once more on their next run.
//!
//! PostgreSQL note: the generated unique constraint is `DEFERRABLE INITIALLY IMMEDIATE`
//! (relabels are single statements), and PostgreSQL refuses such a constraint as an
//! `ON CONFLICT` arbiter: upserts on the items table must name another target, e.g.
//! `ON CONFLICT (id)`.
//!
//! # Crate feature flags
//! - `postgres`: `PgConnection`.
//! - `mysql`: `MysqlConnection` (MySQL 8, MariaDB 10.6+).
//! - `sqlite`: `SqliteConnection` (SQLite 3.35+).
//! - `async-postgres`, `async-mysql`, `async-sqlite`: the same operations over
//!   diesel-async's `AsyncPgConnection`, `AsyncMysqlConnection` and
//!   `SyncConnectionWrapper<SqliteConnection>` ([`async_diesel`]).
//! - `serde`: `Serialize`/`Deserialize` for positions, outcomes and errors.
//! - `uuid`: `uuid::Uuid` key fields on PostgreSQL ([`keys`]).
//! - `cli`: the `ordered-diesel-migration` command.
//!
//! No backend is enabled by default.

#[cfg(feature = "async")]
pub mod async_diesel;
mod conn;
mod error;
pub mod keys;
pub mod migrations;
mod ops;

pub use conn::OrderedConnection;
pub use error::{Error, Result, Status};
pub use keys::{KeyColumn, KeyField};
pub use ops::{OrderedDsl, OrderedTable, Slot};
/// Derives [`Ordered`] for a Diesel model; see the crate docs for its attributes.
pub use ordered_diesel_derive::Ordered;

/// The ordering refusals ([`Error::Ordering`]).
pub use ordered_core::Error as OrderingError;
pub use ordered_core::changes::{Change, Changes, Relabelled, ScopeVersion};
pub use ordered_core::constraint::{Constraint, ConstraintKind};
pub use ordered_core::key;
pub use ordered_core::linked;
pub use ordered_core::migration::{Ensured, Fix};
pub use ordered_core::requests::{self, RequestKey};
pub use ordered_core::spec::Removal;
pub use ordered_core::{
    AppKey, BadCursor, Concurrency, Cursor, Dense, Dialect, Fractional, Gapped, Id, Inserted, Key,
    KeyType, Listing, MAX_POSITION, MIN_POSITION, NullScope, Numeric, Ordered, Outcome, Page,
    Placement, Position, PositionKind, PositionStrategy, RebalancePolicy, Report, Request,
    RetryPolicy, Row, RowPage, ScopeColumn, Spec,
};

#[doc(hidden)]
pub mod __private {
    pub use diesel;
    pub use ordered_core::Request;
    pub use ordered_core::adapter::{Controls, FinalStatement, Reply, Statement};
    pub use ordered_core::key::Alphabet;
    pub use ordered_core::position::PARK_POSITION;
    pub use ordered_core::spec::LOCK_TABLE;

    /// What a derive with errors expands to, so that only the real error is reported.
    pub const FALLBACK_SPEC: ordered_core::Spec =
        ordered_core::Spec::new("", "", "").with_policy(ordered_core::RebalancePolicy::Never);
}
