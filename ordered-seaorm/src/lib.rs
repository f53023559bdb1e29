//! User-defined order in SQL tables for SeaORM 2.0, async: playlist tracks, checklist
//! steps, board cards. Every move writes one row when a gap exists, concurrent moves are
//! serialised on the parent row, and a stale request gets a typed error instead of a
//! silent wrong move. PostgreSQL, MySQL/MariaDB and SQLite.
//!
//! ```
//! # include!("../doctest_setup.rs");
//! // mod track {
//! //     #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, DeriveOrdered)]
//! //     #[sea_orm(table_name = "tracks")]
//! //     #[ordered(parent_table = "playlists", version = "version")]
//! //     pub struct Model {
//! //         #[sea_orm(primary_key)] pub id: i64,
//! //         #[ordered(scope)] pub playlist_id: i64,
//! //         pub title: String,
//! //         #[ordered(position)] pub position: i64,
//! //     }
//! // }
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let db = setup().await?;
//! let tracks = track::Entity::ordered();
//! let intro = tracks.insert_last(&db, 1, new_track("Intro")).await?.value;
//! let demo = tracks.insert_last(&db, 1, new_track("Demo")).await?.value;
//! let credits = tracks.insert_last(&db, 1, new_track("Credits")).await?.value;
//! // a drag: locks the playlist row, checks under the lock, writes one row
//! let moved = tracks.move_before(&db, credits.id, demo.id).await?;
//! assert_eq!(moved.rows_written, 1);
//! // the model's own keys in, the model's own keys out
//! let ids: Vec<i64> = tracks.list(&db, 1).await?.iter().map(|r| r.id).collect();
//! assert_eq!(ids, [intro.id, credits.id, demo.id]);
//! // already there: Intro and Demo are adjacent once Credits is left out, nothing to write
//! let same = tracks.move_between(&db, credits.id, Some(intro.id), Some(demo.id)).await?;
//! assert!(same.unchanged && same.changes.is_empty());
//! // a client whose view is stale (Demo no longer precedes Credits) is refused
//! let stale = tracks.move_between(&db, intro.id, Some(demo.id), Some(credits.id)).await;
//! assert!(matches!(
//!     stale.unwrap_err().refusal(),
//!     Some(ordered_seaorm::OrderingError::StaleNeighbours { .. })
//! ));
//! # Ok(()) }
//! ```
//!
//!
//! # The derive
//! `#[derive(DeriveOrdered)]` goes on the `Model`, beside `DeriveEntityModel` (classic
//! format) or inside `#[sea_orm::model]` (2.0 format; the copy on `ModelEx` is skipped).
//! Field markers: `#[ordered(scope)]` (required) and `#[ordered(position)]` (required).
//! The primary key and the scope field may be `i64`, `i32`, `i16`, `String` or, with the
//! `uuid` feature, `uuid::Uuid` ([`KeyField`]); the operations take keys as
//! `impl Into<Id>`, and `Slot::scope` gives the insert closure the scope in the field's
//! type.
//! Container options, as string literals: `parent_table` (required), `parent_key`
//! (`"id"`), `version`, `strategy` (`"gapped"`, `"dense"`, `"fractional"`),
//! `spacing`, `max_len`, `policy` (`"window"`, `"whole"`, `"never"`), `unique`,
//! `filter` (the rows the lists show, an SQL predicate: [`Spec::filter`]).
//! It implements [`OrderedEntity`] for `Entity` from the `Column` variants SeaORM
//! generates; it does not touch your `ActiveModelBehavior`.
//!
//! # Transactions and retries
//! Pass `&DatabaseConnection` and the library owns the transaction: `BEGIN` (`BEGIN
//! IMMEDIATE` on SQLite), lock the parent row(s) in increasing key order, read under the
//! lock, plan, write, commit, with bounded retries on deadlocks, serialization failures,
//! lock timeouts and `SQLITE_BUSY` (sleeping with `tokio::time`). Pass
//! `&DatabaseTransaction` and it runs in a savepoint of yours, without retries. SeaORM
//! gives SQLite pools one connection by default: inside your own transaction, pass the
//! transaction, not the pool.
//!
//! # Crate feature flags
//! - `serde`: `Serialize`/`Deserialize` for positions, outcomes and errors.
//! - `uuid`: `uuid::Uuid` keys (SeaORM's `with-uuid`).
//! - `migration`: [`migration`], building blocks for `sea-orm-migration`. An
//!   entity-first app, whose schema SeaORM syncs from its entities, needs none of it:
//!   `OrderedTable::ensure_ordering` takes a connection.
//!
//! The library enables no SeaORM driver, runtime or TLS feature: the application does.

mod error;
pub mod hooks;
#[cfg(feature = "migration")]
pub mod migration;
mod ops;

pub use error::{Error, Result, Status, refusal};
pub use ops::{
    HookFuture, InsertFuture, OrderedConnection, OrderedTable, Slot, begin, dialect, key_value,
};
/// Derives [`OrderedEntity`] for the `Entity` of a SeaORM `Model`.
pub use ordered_seaorm_derive::DeriveOrdered;

pub use ordered_core::Error as OrderingError;
pub use ordered_core::changes::{Change, Changes, Relabelled, ScopeVersion};
pub use ordered_core::constraint::{Constraint, ConstraintKind};
pub use ordered_core::linked;
pub use ordered_core::migration::{Ensured, Fix};
pub use ordered_core::requests::{self, RequestKey};
pub use ordered_core::spec::Removal;
pub use ordered_core::{
    AppKey, BadCursor, Concurrency, Cursor, Dense, Dialect, Fractional, Gapped, Id, Inserted, Key,
    KeyType, Listing, MAX_POSITION, MIN_POSITION, NullScope, Numeric, Outcome, Page, Placement,
    Position, PositionKind, PositionStrategy, RebalancePolicy, Report, Request, RetryPolicy, Row,
    RowPage, ScopeColumn, Spec, key,
};

/// A model field type that can hold an ordered table's keys (the primary key and the
/// `#[ordered(scope)]` field), checked by `#[derive(DeriveOrdered)]` at compile time:
/// `i64`, `i32`, `i16`, `String` and, with the `uuid` feature, `uuid::Uuid` (which
/// SeaORM stores as `uuid` on PostgreSQL, `BINARY(16)` on MySQL/MariaDB and a 16-byte
/// blob on SQLite).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an ordered table's key or scope",
    note = "keys are `i64`, `i32`, `i16`, `String` or `uuid::Uuid` (feature `uuid`); a nullable scope (NULL: the root list) is `Option<_>` of one of them"
)]
pub trait KeyField {
    /// How the column stores the key.
    const TYPE: KeyType;
}

macro_rules! key_fields {
    ($($t:ty),*) => {$(
        #[diagnostic::do_not_recommend]
        impl KeyField for $t {
            const TYPE: KeyType = <$t as ordered_core::Key>::TYPE;
        }
    )*};
}
key_fields!(i64, i32, i16, String);
#[cfg(feature = "uuid")]
key_fields!(uuid::Uuid);

/// A nullable scope field: NULL is the root list ([`Id::ROOT`]).
#[diagnostic::do_not_recommend]
impl<K: KeyField> KeyField for Option<K> {
    const TYPE: KeyType = K::TYPE;
}

/// An entity whose rows are ordered within a parent. Implemented by
/// `#[derive(DeriveOrdered)]`.
pub trait OrderedEntity: sea_orm::EntityTrait {
    /// The items' key in the model's own type (the primary key field's; an association
    /// table's is its list's and its own, a pair or triple).
    type Key: AppKey;
    /// A list's key in the model's own type (the `#[ordered(scope)]` field's;
    /// `Option<_>` for a nullable scope, `None` the root list; a pair or triple for a
    /// list per several columns; `()` for a table that is one list).
    type Scope: AppKey;

    /// The table's ordering description (SQL names from the entity's `Column`s).
    fn spec() -> Spec;

    /// The scope column ([`OrderedTable::insert_model`] sets it). For a list per several
    /// columns, the first: the one that names the parent row.
    fn scope_column() -> Self::Column;

    /// The further scope columns of a list per several columns ([`Spec::split_by`]),
    /// in order; [`OrderedTable::insert_model`] sets them too.
    fn split_columns() -> Vec<Self::Column> {
        Vec::new()
    }

    /// The position column ([`OrderedTable::insert_model`] sets it).
    fn position_column() -> Self::Column;

    /// The operations on this entity's table, in its key types.
    fn ordered() -> OrderedTable<Self::Key, Self::Scope> {
        OrderedTable::of::<Self>()
    }
}

#[doc(hidden)]
pub mod __private {
    pub use crate::ops::run;
    pub use ordered_core::Request;
    pub use ordered_core::adapter::{Controls, FinalStatement, Reply, Statement};
    pub use ordered_core::key::Alphabet;
    pub use ordered_core::migration as core_migration;
    pub use ordered_core::spec::LOCK_TABLE;
    pub use sea_orm;
}
