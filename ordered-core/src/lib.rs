//! The database-free core of `ordered`: keep a user-defined order (playlist tracks,
//! checklist steps, board cards) in a SQL table, moving one row per drag.
//!
//! This crate holds every algorithm and every SQL statement; `ordered-diesel` and
//! `ordered-seaorm` only execute them. It has no database dependency.
//!
//! ```
//! use ordered_core::model::Store;
//! use ordered_core::{Placement, Request, Spec};
//!
//! const TRACKS: Spec = Spec::new("tracks", "playlist_id", "playlists");
//! let mut playlist = Store::new(TRACKS);
//! let intro = playlist.insert(1, Placement::Last)?;
//! let demo = playlist.insert(1, Placement::Last)?;
//! let credits = playlist.insert(1, Placement::Last)?;
//! playlist.apply(&Request::Move { item: credits, at: Placement::Before(demo) })?;
//! assert_eq!(playlist.ids(1), [intro, credits, demo]);
//! # Ok::<(), ordered_core::Error>(())
//! ```
//!
//! # Scope
//! - [`key`]: fractional keys compatible with Rocicorp's `fractional-indexing`.
//! - [`PositionStrategy`]: [`Gapped`] integers, [`Dense`] integers, [`Fractional`] keys,
//!   or your own; [`RebalancePolicy`] decides what happens when no position fits.
//! - [`plan`]: the planner, a pure function from what was read under the parent lock and
//!   a [`Request`] to a [`Plan`].
//! - [`adapter`]: the contract between the core and an adapter (`ordered-diesel`,
//!   `ordered-seaorm`, or one of your own): the protocol as two state machines with no
//!   I/O ([`adapter::Operation`], one attempt; [`adapter::Protocol`], the attempts, the
//!   transaction and the reads) and the statements per [`Dialect`] ([`adapter::sql`]).
//!   An application does not use it.
//! - [`migration`]: DDL for the position column and its constraints, per engine.
//! - [`model::Store`]: the same planner over in-memory collections.
//! - [`requests`]: request records, which make every write repeatable under a
//!   client's request key.
//!
//! # Crate feature flags
//! - `serde`: no longer needed: `Serialize`/`Deserialize` for positions, keys, outcomes,
//!   plans and error data are always there (the request records store outcomes as JSON).
//! - `metrics`: counters and histograms through the `metrics` facade ([`observe`]).

pub mod adapter;
pub mod changes;
pub mod constraint;
mod engine;
pub mod error;
pub mod id;
pub mod key;
pub mod linked;
pub mod migration;
pub mod model;
pub mod plan;
pub mod position;
pub mod requests;
pub mod spec;
pub mod strategy;
pub mod verify;

// the adapter plumbing lives under `adapter`; the crate's own code names it as before
use adapter::{observe, retry, sql};

pub use id::{AppKey, Id, Key, KeyTooLong, KeyType, MAX_TEXT_KEY, WrongKey};

pub use changes::{Change, Changes};
pub use engine::{BadCursor, Concurrency, Cursor, Inserted, Listing, Outcome, Page, RowPage};
pub use error::Error;
pub use key::KeyError;
pub use plan::{Passes, Placement, Plan, Request, Row, Write};
pub use position::{MAX_POSITION, MIN_POSITION, Position, PositionKind};
pub use requests::RequestKey;
pub use retry::RetryPolicy;
pub use spec::{NullScope, Ordered, Removal, ScopeColumn, Spec};
pub use sql::Dialect;
pub use strategy::{
    Dense, Fractional, Gapped, Numeric, PositionStrategy, RebalancePolicy, Spread, SpreadMode,
};
pub use verify::{Report, check_key_order, check_schema, verify};
