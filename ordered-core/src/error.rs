//! The error type of the ordering logic.

use crate::Id;
use crate::key::KeyError;
use crate::position::Position;

/// Why an ordering request was refused. Every refusal leaves the collection as it was.
///
/// Adapters wrap this in their own error type next to the database error, so callers can
/// match on the ordering reason without parsing messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum Error {
    /// An item (the one being moved, or an anchor) does not exist.
    #[error("item {id} not found; it may have been deleted: re-read the list")]
    NotFound {
        /// The missing item.
        id: Id,
    },
    /// A key of another type than the table's: an integer for a table keyed by UUIDs,
    /// a UUID for a table keyed by strings, a string for integer keys.
    #[error("{key} is not {expected}, the type of this table's keys: pass the row's own key")]
    WrongKeyType {
        /// The key given.
        key: Id,
        /// The type the table's column stores.
        expected: crate::KeyType,
    },
    /// A collection named by values that do not match the table's scope columns (a
    /// table ordered per several columns takes one value per column, in order).
    #[error(
        "{scope} does not name a list of this table: give one value per scope column, in order ({columns})"
    )]
    WrongScope {
        /// The value given.
        scope: Id,
        /// The scope columns and their types.
        columns: String,
    },
    /// An item of an association table ([`Spec::link`](crate::Spec::link)) named by
    /// something other than its scope value(s) and its own key, in order.
    #[error(
        "{key} does not name a row of this association table: give its list and its own key, in order ({columns})"
    )]
    WrongLinkKey {
        /// The key given.
        key: Id,
        /// The key columns and their types.
        columns: String,
    },
    /// The parent (the collection's owner row) does not exist.
    #[error("parent {parent} not found; create the parent row before adding items")]
    ParentNotFound {
        /// The missing parent.
        parent: Id,
    },
    /// A move in a tree ([`Spec::tree`](crate::Spec::tree)) would put the item under
    /// itself or one of its descendants. Checked under the lock, so it also catches a
    /// concurrent move that put the new parent inside the item's subtree.
    #[error(
        "item {id} cannot move under {parent}: {parent} is the item itself or inside its subtree; choose a parent outside it (re-read the tree if it changed)"
    )]
    WouldCycle {
        /// The item being moved.
        id: Id,
        /// The parent asked for.
        parent: Id,
    },
    /// An anchor or item belongs to another collection than the one being edited.
    #[error("item {id} is not in {}; it may have moved: re-read the list", Coll(*parent))]
    NotInCollection {
        /// The item.
        id: Id,
        /// The collection that was expected to hold it.
        parent: Id,
    },
    /// The requested neighbours are no longer adjacent (or no longer at the list's end).
    #[error(
        "{} and {} are no longer next to each other: the list changed, re-read it",
        End(*prev, "the start of the list"),
        End(*next, "the end of the list")
    )]
    StaleNeighbours {
        /// The requested predecessor (`None`: the start of the list).
        prev: Option<Id>,
        /// The requested successor (`None`: the end of the list).
        next: Option<Id>,
    },
    /// The collection changed since the client read it.
    #[error("{} is at version {actual}, not {expected}: re-read the list", Coll(*parent))]
    VersionConflict {
        /// The collection.
        parent: Id,
        /// The version the client expected.
        expected: i64,
        /// The version found.
        actual: i64,
    },
    /// An item was asked to move relative to itself, or to swap with itself.
    #[error("item {id} cannot be placed relative to itself")]
    SelfReference {
        /// The item.
        id: Id,
    },
    /// No position fits and the rebalance policy forbids relabelling (or the whole
    /// domain is full).
    #[error(
        "no position left between the neighbours and the policy does not allow a relabel; rebalance the collection"
    )]
    Exhausted,
    /// An index past the end of the list.
    #[error("index {index} is past the end of the list (the last index is its length)")]
    IndexOutOfRange {
        /// The requested index.
        index: u64,
    },
    /// A requested order is not a permutation of the current items.
    #[error(
        "the requested order is not exactly the current items of {}: {reason}", Coll(*parent)
    )]
    ReorderMismatch {
        /// The collection.
        parent: Id,
        /// What differs.
        reason: String,
    },
    /// A stored or supplied position is outside the strategy's domain or of the wrong kind.
    #[error("position {position} is not valid for this strategy: {reason}")]
    InvalidPosition {
        /// The position.
        position: Position,
        /// Why.
        reason: &'static str,
    },
    /// A fractional key is malformed.
    #[error(transparent)]
    InvalidKey(#[from] KeyError),
    /// The item moved to another collection between the unlocked lookup and the lock;
    /// the operation is retried from the start by the adapters.
    #[error("item {id} moved to another collection while the operation started; retry")]
    ParentChanged {
        /// The item.
        id: Id,
    },
    /// An idempotent insert found its item already there: an earlier attempt committed
    /// (typically one that ended with an unknown commit outcome). Nothing was written.
    #[error(
        "item {id} already exists in {}: an earlier attempt of this insert was committed; nothing was written", Coll(*parent)
    )]
    AlreadyApplied {
        /// The item.
        id: Id,
        /// Its collection.
        parent: Id,
    },
    /// The key column does not compare by raw bytes (a linguistic, case-insensitive or
    /// space-padding collation), so the database would order keys differently from
    /// every client. Found by [`crate::verify::check_key_order`].
    #[error(
        "column {table}.{column} does not sort keys by raw bytes: {detail}; declare it COLLATE \"C\" (PostgreSQL), VARBINARY or a _bin collation (MySQL/MariaDB), or BINARY (SQLite), as the generated migrations do"
    )]
    KeyCollation {
        /// The table.
        table: String,
        /// The key column.
        column: String,
        /// What the probe saw.
        detail: String,
    },
    /// The table has no version column, and the server is a Galera cluster: there the
    /// parent's version bump is the only thing that serialises one parent's writers
    /// across nodes (a `SELECT ... FOR UPDATE` locks on one node only). Nothing was
    /// written.
    #[error(
        "table {table} has no version column, which a Galera cluster needs to serialise writers across nodes; add a version column (BIGINT NOT NULL DEFAULT 0) to the parent table and name it as the spec's version"
    )]
    VersionColumnRequired {
        /// The ordered table.
        table: String,
    },
    /// Galera: the cluster aborted the transaction (another node's write won) and the
    /// server still answered `COMMIT` with success, but it wrote nothing. Nothing was
    /// applied; the adapters retry it like a certification failure.
    #[error(
        "the cluster aborted the transaction and its commit wrote nothing; nothing was applied: retry"
    )]
    CommitDropped,
    /// Galera: the cluster aborted the transaction part-way and the server ran the
    /// operation's later statements outside it, each committed on its own (a MariaDB bug
    /// with prepared statements, met only when several nodes write one collection). The
    /// collection may hold part of the operation. Not retried.
    #[error(
        "the cluster aborted the transaction part-way and part of the operation was committed outside it; run verify and rebalance on {}, and send this table's writes through one node", Coll(*parent)
    )]
    PartiallyApplied {
        /// The collection the operation locked first.
        parent: Id,
    },
    /// The table does not have what the protocol relies on (found by the adapters'
    /// `check_schema`, or by a relabel that a non-deferrable constraint refused). Nothing
    /// was written.
    #[error("table {table}: {problem}; {fix}")]
    SchemaMismatch {
        /// The ordered table.
        table: String,
        /// What is wrong.
        problem: &'static str,
        /// The statement or change that fixes it.
        fix: String,
    },
    /// The database refused the application's own row (the caller's insert, or its
    /// hook) for one of the application's constraints: a duplicate slug, a missing
    /// referenced row. Nothing was written. The message names the constraint, never the
    /// row's values or the database's text.
    #[error("{}", constraint_message(constraint))]
    Constraint {
        /// The constraint, its kind and name.
        constraint: crate::constraint::Constraint,
    },
    /// An association table's link is already in its list (a list holds a link once).
    /// Nothing was written.
    #[error("the item is already in {}: a list holds it once", Coll(*parent))]
    AlreadyInList {
        /// The list.
        parent: Id,
    },
    /// A request key ([`RequestKey`](crate::RequestKey)) already recorded for another
    /// request: the key names one request, and this one differs from it (another
    /// operation, item, place, list or expected version). Send a new key for a new
    /// request.
    #[error(
        "request key {key} was already used for a different request: send a new key for a new request"
    )]
    IdempotencyKeyReused {
        /// The key.
        key: Id,
    },
    /// Another call with the same request key committed while this one ran, inside
    /// the caller's own transaction (the library's own transactions retry this by
    /// themselves, and then return the recorded outcome). Roll back and repeat the
    /// request: it returns that outcome.
    #[error(
        "another call with request key {key} was applied meanwhile: repeat the request to get its outcome"
    )]
    RequestInFlight {
        /// The key.
        key: Id,
    },
    /// A page asked for with the [`Cursor`](crate::Cursor) of an older version of the
    /// list: rows moved since the page before, so the next page could repeat or skip
    /// some. Read the list again from the first page, or go on with
    /// [`Cursor::resume`](crate::Cursor::resume).
    #[error("{} changed since the page before was read: read it again from the first page", Coll(*parent))]
    ListChanged {
        /// The list.
        parent: Id,
    },
    /// `convert_linked`: the list's links do not make one chain (several heads or none,
    /// a cycle, a fork, a link to a row not in the list, rows the head does not
    /// reach). Nothing was written to the list; the report names the rows to repair.
    #[error("{0}: repair those links, then convert the list again; nothing was written to it")]
    BrokenList(Box<crate::linked::Broken>),
    /// A tree's row with rows below it, removed under
    /// [`Removal::Refuse`](crate::spec::Removal::Refuse). Nothing was written.
    #[error("item {id} has items below it: move or remove them first")]
    HasChildren {
        /// The row.
        id: Id,
    },
    /// The request cannot be run this way (an insert passed where no row can be
    /// inserted). Nothing was written.
    #[error("invalid request: {0}")]
    InvalidRequest(&'static str),
    /// The database returned something the protocol rules out (a duplicate position,
    /// a row of the wrong kind). Run `verify` and `rebalance`.
    #[error("inconsistent collection: {0}; run verify and rebalance")]
    Inconsistent(String),
}

/// A constraint violation in words a client can show.
fn constraint_message(c: &crate::constraint::Constraint) -> String {
    use crate::constraint::ConstraintKind::*;
    match c.kind {
        Unique => format!(
            "the row conflicts with an existing one ({c}): change the value that must be unique"
        ),
        ForeignKey => {
            format!("the row refers to a row that does not exist, or is still referred to ({c})")
        }
        Check => format!("the row breaks a rule of the table ({c})"),
        NotNull => format!("a required value is missing ({c})"),
    }
}

/// A collection in a message: `collection 4`, or `the root list`.
struct Coll(Id);

impl std::fmt::Display for Coll {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0 == Id::ROOT {
            f.write_str("the root list")
        } else {
            write!(f, "collection {}", self.0)
        }
    }
}

/// A neighbour in a message: `item 4`, or the end of the list it stands for.
struct End(Option<Id>, &'static str);

impl std::fmt::Display for End {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(id) => write!(f, "item {id}"),
            None => f.write_str(self.1),
        }
    }
}

/// What a refusal means for the client that sent the request, as a web handler maps it
/// to a response ([`Status::http`] gives the usual HTTP status code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum Status {
    /// The client's view is stale (the list changed since it read it): re-read the list,
    /// then retry the gesture. HTTP 409.
    Conflict,
    /// The item or collection does not exist (any more). HTTP 404.
    NotFound,
    /// The request cannot be carried out as sent (an index past the end, an item placed
    /// relative to itself, a malformed key). HTTP 422.
    Unprocessable,
    /// A transient failure: the same request may succeed later. HTTP 503.
    RetryLater,
    /// A fault of the server or its schema, not of the request. HTTP 500.
    Internal,
}

impl Status {
    /// The usual HTTP status code.
    pub const fn http(self) -> u16 {
        match self {
            Status::Conflict => 409,
            Status::NotFound => 404,
            Status::Unprocessable => 422,
            Status::RetryLater => 503,
            Status::Internal => 500,
        }
    }
}

impl Error {
    /// The application's constraint the database refused its row for
    /// ([`Error::Constraint`]): a handler maps a duplicate slug to 409.
    pub fn constraint(&self) -> Option<&crate::constraint::Constraint> {
        match self {
            Error::Constraint { constraint } => Some(constraint),
            _ => None,
        }
    }

    /// Whether retrying the whole operation from the start may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::ParentChanged { .. } | Error::CommitDropped | Error::RequestInFlight { .. }
        )
    }

    /// A stable machine-readable code for the refusal, the same on every adapter and
    /// engine: `not_found`, `parent_not_found`, `not_in_collection`, `would_cycle`,
    /// `stale_neighbours`, `version_conflict`, `self_reference`, `exhausted`,
    /// `index_out_of_range`, `reorder_mismatch`, `invalid_position`, `invalid_key`,
    /// `wrong_key_type`, `wrong_scope`, `wrong_link_key`, `parent_changed`, `already_applied`, `key_collation`,
    /// `version_column_required`, `commit_dropped`, `partially_applied`,
    /// `invalid_request`, `schema_mismatch`, `inconsistent`, `constraint_violation`,
    /// `already_in_list`, `has_children`, `list_changed`, `idempotency_key_reused`,
    /// `request_in_flight`, `broken_list`.
    ///
    /// ```
    /// use ordered_core::{Error, error::Status};
    ///
    /// let e = Error::StaleNeighbours { prev: Some(4.into()), next: None };
    /// assert_eq!(e.code(), "stale_neighbours");
    /// assert_eq!(e.status(), Status::Conflict);
    /// assert_eq!(e.status().http(), 409);
    /// assert_eq!(
    ///     e.to_string(),
    ///     "item 4 and the end of the list are no longer next to each other: the list changed, re-read it"
    /// );
    /// ```
    pub fn code(&self) -> &'static str {
        match self {
            Error::NotFound { .. } => "not_found",
            Error::ParentNotFound { .. } => "parent_not_found",
            Error::WrongKeyType { .. } => "wrong_key_type",
            Error::WrongScope { .. } => "wrong_scope",
            Error::WrongLinkKey { .. } => "wrong_link_key",
            Error::NotInCollection { .. } => "not_in_collection",
            Error::WouldCycle { .. } => "would_cycle",
            Error::StaleNeighbours { .. } => "stale_neighbours",
            Error::VersionConflict { .. } => "version_conflict",
            Error::SelfReference { .. } => "self_reference",
            Error::Exhausted => "exhausted",
            Error::IndexOutOfRange { .. } => "index_out_of_range",
            Error::ReorderMismatch { .. } => "reorder_mismatch",
            Error::InvalidPosition { .. } => "invalid_position",
            Error::InvalidKey(_) => "invalid_key",
            Error::ParentChanged { .. } => "parent_changed",
            Error::AlreadyApplied { .. } => "already_applied",
            Error::KeyCollation { .. } => "key_collation",
            Error::VersionColumnRequired { .. } => "version_column_required",
            Error::CommitDropped => "commit_dropped",
            Error::PartiallyApplied { .. } => "partially_applied",
            Error::InvalidRequest(_) => "invalid_request",
            Error::Constraint { .. } => "constraint_violation",
            Error::AlreadyInList { .. } => "already_in_list",
            Error::HasChildren { .. } => "has_children",
            Error::ListChanged { .. } => "list_changed",
            Error::BrokenList(_) => "broken_list",
            Error::IdempotencyKeyReused { .. } => "idempotency_key_reused",
            Error::RequestInFlight { .. } => "request_in_flight",
            Error::SchemaMismatch { .. } => "schema_mismatch",
            Error::Inconsistent(_) => "inconsistent",
        }
    }

    /// What the refusal means for the client ([`Status`]).
    pub fn status(&self) -> Status {
        match self {
            // an item or anchor outside the list the request names is, for that list,
            // not there (and the answer names nothing of the list it is in)
            Error::NotFound { .. }
            | Error::ParentNotFound { .. }
            | Error::NotInCollection { .. } => Status::NotFound,
            // the client's list is stale; an idempotent insert that already happened is
            // a conflict with the client's own earlier attempt
            Error::StaleNeighbours { .. }
            | Error::VersionConflict { .. }
            | Error::ReorderMismatch { .. }
            | Error::WouldCycle { .. }
            | Error::AlreadyInList { .. }
            | Error::HasChildren { .. }
            | Error::ListChanged { .. }
            | Error::AlreadyApplied { .. } => Status::Conflict,
            // the rows say how the list is broken; the app repairs them
            Error::BrokenList(_) => Status::Unprocessable,
            // a duplicate conflicts with an existing row; any other constraint says the
            // row cannot be stored as sent
            Error::Constraint { constraint } => match constraint.kind {
                crate::constraint::ConstraintKind::Unique => Status::Conflict,
                _ => Status::Unprocessable,
            },
            Error::SelfReference { .. }
            | Error::IndexOutOfRange { .. }
            | Error::InvalidPosition { .. }
            | Error::InvalidKey(_)
            | Error::WrongKeyType { .. }
            | Error::WrongScope { .. }
            | Error::WrongLinkKey { .. }
            | Error::InvalidRequest(_)
            | Error::IdempotencyKeyReused { .. } => Status::Unprocessable,
            Error::ParentChanged { .. } | Error::CommitDropped | Error::RequestInFlight { .. } => {
                Status::RetryLater
            }
            Error::Exhausted
            | Error::KeyCollation { .. }
            | Error::VersionColumnRequired { .. }
            | Error::PartiallyApplied { .. }
            | Error::SchemaMismatch { .. }
            | Error::Inconsistent(_) => Status::Internal,
        }
    }
}
