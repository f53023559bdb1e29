//! The protocol as a state machine with no I/O: the adapters feed it the results of the
//! statements it asks for, in a loop, inside one transaction.
//!
//! ```
//! use ordered_core::{Dialect, Placement, Request, Row, Spec};
//! use ordered_core::adapter::{Action, Operation, Reply};
//!
//! const TRACKS: Spec = Spec::new("tracks", "playlist_id", "playlists");
//! let mut op = Operation::new(TRACKS, Dialect::Sqlite, Request::Insert { parent: 1.into(), at: Placement::Last });
//! // 1. lock the parent (SQLite: inside BEGIN IMMEDIATE, a read of the parent row; with a
//! // version column, the bump that answers the row, `UPDATE ... RETURNING`)
//! let Action::Execute(lock) = op.next(Reply::None)? else { unreachable!() };
//! assert!(lock.sql.starts_with("SELECT"));
//! // the parent exists, at version 0
//! let Action::Execute(read) = op.next(Reply::Parents(vec![(1.into(), 0)]))? else { unreachable!() };
//! assert!(read.sql.contains("ORDER BY \"position\" DESC"));
//! // the list is empty: the caller inserts its row at the first position
//! let Action::Insert { parent, position } = op.next(Reply::Rows(vec![]))? else { unreachable!() };
//! assert_eq!((parent, position), (1.into(), 1024.into()));
//! // the library reads back the id of the row the caller inserted, for the changes
//! let Action::Execute(found) = op.next(Reply::Inserted)? else { unreachable!() };
//! assert!(found.sql.contains("\"position\" = "));
//! let row = Row { id: 7.into(), parent: 1.into(), position: 1024.into() };
//! let Action::Done(outcome) = op.next(Reply::Rows(vec![row]))? else { unreachable!() };
//! assert_eq!(outcome.rows_written, 1);
//! assert_eq!(outcome.changes.rows[0].id, 7);
//! # Ok::<(), ordered_core::Error>(())
//! ```

use std::collections::VecDeque;

use crate::Id;
use crate::changes::{self, Change, Changes, Relabelled, ScopeVersion};
use crate::error::Error;
use crate::id::AppKey;
use crate::plan::{self, Placement, Plan, RangeRead, Read, Reads, Request, Row, Step, Write};
use crate::position::Position;
use crate::position::PositionKind;
use crate::retry::RetryPolicy;
use crate::spec::Spec;
use crate::sql::{self, Dialect, Returns, Statement};

/// What the adapter must do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Execute this statement and reply with its result
    /// ([`Reply::Rows`], [`Reply::Parents`], [`Reply::Count`] or [`Reply::Affected`],
    /// following [`Statement::returns`]).
    Execute(Statement),
    /// Run the caller's own insert of the new row with this collection and position,
    /// then reply [`Reply::Inserted`] (or [`Reply::InsertedId`] with the new row's id).
    Insert {
        /// The collection.
        parent: Id,
        /// The position.
        position: Position,
    },
    /// Run the caller's hook (its own statements: an outbox row, `updated_at`, an audit
    /// entry) inside the transaction, after every write and before `COMMIT`, with the
    /// changes in hand; then reply [`Reply::None`]. Only for an operation built with
    /// [`Operation::with_hook`].
    BeforeCommit(Changes),
    /// The operation is complete: commit; or, when [`Outcome::unchanged`], roll back
    /// (nothing was written but the lock's version bump).
    Done(Outcome),
}

/// The result of the last action.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Nothing (the first call).
    None,
    /// Item rows.
    Rows(Vec<Row>),
    /// Parent rows `(id, version)`.
    Parents(Vec<(Id, i64)>),
    /// A count.
    Count(i64),
    /// Rows affected by a statement that returns nothing.
    Affected(u64),
    /// The caller's insert ran.
    Inserted,
    /// The caller's insert ran and created the row with this id (from its own
    /// `RETURNING`): the operation need not read the id back for the changes.
    InsertedId(Id),
    /// Tagged item rows ([`sql::Returns::Tagged`]): each row with the `o_q` of the part
    /// of the fused read it answers.
    Tagged(Vec<(i64, Row)>),
    /// A request record ([`sql::Returns::Record`]): its digest and its outcome (JSON),
    /// `None` when there is none.
    Record(Option<(String, String)>),
    /// Rows of a linked list ([`sql::Returns::Links`]): each row's id, its collection
    /// and the id its link column names (`None`: NULL), as the statement handed them
    /// back (text); the core parses them ([`sql::Wire::link_row`]).
    Links(Vec<(String, String, Option<String>)>),
    /// A versioned list ([`sql::Returns::Listed`]): the parent's version (`None` when
    /// the parent row does not exist) and the items, in order.
    Listed {
        /// The parent's version; `None`: no such parent.
        version: Option<i64>,
        /// The items.
        rows: Vec<Row>,
    },
}

/// The id a caller's insert reported for its new row, shared between the slot the
/// caller's insert gets and the adapter that replies to [`Action::Insert`]: set, it
/// makes the reply [`Reply::InsertedId`] (the adapters' `Slot::inserted_id`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InsertedId(std::sync::Arc<std::sync::OnceLock<Id>>);

impl InsertedId {
    /// Records the new row's id (the first one given stays).
    pub fn set(&self, id: Id) {
        let _ = self.0.set(id);
    }

    /// The reply to [`Action::Insert`]: with the id when the insert reported it.
    pub fn reply(&self) -> Reply {
        match self.0.get() {
            Some(&id) => Reply::InsertedId(id),
            None => Reply::Inserted,
        }
    }
}

/// What an insert returns: the caller's own result and the operation's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inserted<T, K = Id, P = Id> {
    /// What the insert closure returned (typically the new row or its id).
    pub value: T,
    /// Position, new version, rows written.
    pub outcome: Outcome<K, P>,
}

impl<T> Inserted<T> {
    /// This insert's outcome with the keys in the model's own types.
    pub fn typed<K: AppKey, P: AppKey>(self) -> Result<Inserted<T, K, P>, Error> {
        Ok(Inserted {
            value: self.value,
            outcome: self.outcome.typed()?,
        })
    }

    /// The insert's outcome with the closure's value (`None`: the insert never ran,
    /// which the protocol rules out).
    #[doc(hidden)]
    pub fn of(outcome: Outcome, value: Option<T>) -> Result<Self, Error> {
        let value = value.ok_or_else(|| Error::Inconsistent("the insert did not run".into()))?;
        Ok(Inserted { value, outcome })
    }
}

/// What an operation did, with the keys in the model's own types (`K` the item's, `P`
/// the list's; [`Id`] for generic code).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Outcome<K = Id, P = Id> {
    /// The item's final position (inserts and moves).
    pub position: Option<Position>,
    /// The collection's version after this operation (with a version column): clients
    /// send it back as the expected version of their next write.
    pub version: Option<i64>,
    /// Rows written, the caller's insert included.
    pub rows_written: u64,
    /// Rows relabelled besides the item itself.
    pub relabelled: u64,
    /// Statements executed.
    pub statements: u32,
    /// Attempts the adapter made (1: no retry); set by the adapters.
    pub attempts: u32,
    /// Exactly which rows the operation wrote, with their new collections and
    /// positions, and the new version of every collection it locked.
    pub changes: Changes<K, P>,
    /// The request asked for what already was (a move to where the item stands, a
    /// reorder into the current order): nothing was written, no version moved, and
    /// there is nothing to broadcast.
    pub unchanged: bool,
    /// The outcome was recorded by an earlier call with the same request key
    /// ([`crate::requests`]) and is returned again: this call wrote nothing, and
    /// `changes` are what the earlier one wrote (they were broadcast then).
    #[serde(default)]
    pub replayed: bool,
}

impl<K, P> Default for Outcome<K, P> {
    fn default() -> Self {
        Outcome {
            position: None,
            version: None,
            rows_written: 0,
            relabelled: 0,
            statements: 0,
            attempts: 0,
            changes: Changes::default(),
            unchanged: false,
            replayed: false,
        }
    }
}

impl Outcome {
    /// This outcome with the keys in the model's own types (what the typed operations
    /// return).
    pub fn typed<K: AppKey, P: AppKey>(self) -> Result<Outcome<K, P>, Error> {
        Ok(Outcome {
            position: self.position,
            version: self.version,
            rows_written: self.rows_written,
            relabelled: self.relabelled,
            statements: self.statements,
            attempts: self.attempts,
            changes: self.changes.typed()?,
            unchanged: self.unchanged,
            replayed: self.replayed,
        })
    }
}

/// A collection's items, in order, with the version of the same snapshot
/// ([`sql::list_versioned`]). A client shows `rows` and sends `version` back as the
/// expected version of its next write: a write by anyone in between refuses it with
/// [`Error::VersionConflict`] instead of applying it to a list the client never saw.
///
/// `R` is the row: the library's [`Row`] (id, list, position) in the model's key types,
/// or the application's own row type (Diesel's `Selectable` models, SeaORM's `Model`)
/// from the adapters' `list_models`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Listing<R = Row> {
    /// The items, `ORDER BY position, id`.
    pub rows: Vec<R>,
    /// The collection's version (`None` without a version column).
    pub version: Option<i64>,
}

impl<R> Default for Listing<R> {
    fn default() -> Self {
        Listing {
            rows: Vec::new(),
            version: None,
        }
    }
}

impl<R> Listing<R> {
    /// The listing of `parent` from the rows of [`sql::list_models`], each the list's
    /// version and the application's row (`None` for the one row of an empty list):
    /// [`Error::ParentNotFound`] when there is no row (the parent row does not exist).
    pub fn of_models(
        spec: &Spec,
        parent: Id,
        rows: impl IntoIterator<Item = (i64, Option<R>)>,
    ) -> Result<Listing<R>, Error> {
        let mut version = None;
        let mut out = Vec::new();
        for (v, row) in rows {
            version = Some(v);
            out.extend(row);
        }
        match version {
            None => Err(Error::ParentNotFound { parent }),
            Some(v) => Ok(Listing {
                rows: out,
                version: spec.version.map(|_| v),
            }),
        }
    }
}

impl Listing {
    /// This listing with the keys in the model's own types.
    pub fn typed<K: AppKey, P: AppKey>(self) -> Result<Listing<Row<K, P>>, Error> {
        Ok(Listing {
            rows: self
                .rows
                .into_iter()
                .map(Row::typed)
                .collect::<Result<_, _>>()?,
            version: self.version,
        })
    }

    /// The listing of `parent` from the reply to [`sql::list_versioned`]:
    /// [`Error::ParentNotFound`] when the parent row does not exist.
    pub fn from_reply(spec: &Spec, parent: Id, reply: Reply) -> Result<Listing, Error> {
        match reply {
            Reply::Listed {
                version: Some(v),
                rows,
            } => Ok(Listing {
                rows,
                version: spec.version.map(|_| v),
            }),
            Reply::Listed { version: None, .. } => Err(Error::ParentNotFound { parent }),
            other => Err(unexpected("a versioned list", &other)),
        }
    }
}

/// Where the next page of a list starts ([`Page::next`]): after the place of the last
/// row of the page before, as long as the list is still at the version that page was
/// read at. A page read with a cursor of another version is refused with
/// [`Error::ListChanged`]; the client then starts again from the first page, or goes on
/// with [`Cursor::resume`].
///
/// It travels to the client and back as a string ([`Display`](std::fmt::Display) and
/// [`FromStr`](std::str::FromStr), for a query parameter) or with serde (the `serde`
/// feature). It holds the list's version and the last row's position and id, nothing
/// of any other list.
///
/// ```
/// use ordered_core::{Cursor, Position};
///
/// let c = Cursor { version: Some(7), position: Position::Int(3072), id: 12_i64, resume: false };
/// let sent = c.to_string();
/// assert_eq!(sent.parse::<Cursor<i64>>().unwrap(), c);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Cursor<K = Id> {
    /// The list's version when the page before was read (`None`: the table has no
    /// version column, and pages cannot tell that the list changed).
    pub version: Option<i64>,
    /// The position of the last row of the page before.
    pub position: Position,
    /// The id of the last row of the page before.
    pub id: K,
    /// Go on though the list changed since ([`Cursor::resume`]); not part of the string.
    #[serde(default)]
    pub resume: bool,
}

impl<K> Cursor<K> {
    /// This cursor, accepted though the list changed since its page was read: the next
    /// page holds the rows after the same place in the list as it is now. A row that
    /// moved from behind the place to after it shows again, and one that moved the
    /// other way is missed; start again from the first page when that matters.
    pub fn resume(mut self) -> Self {
        self.resume = true;
        self
    }

    /// This cursor with `id` for its row's id (another key type).
    #[doc(hidden)]
    pub fn clone_with<J>(&self, id: J) -> Cursor<J> {
        Cursor {
            version: self.version,
            position: self.position.clone(),
            id,
            resume: self.resume,
        }
    }
}

/// `v<version or ->.i<integer>.<id>`, `v<version or ->.k<length>.<key><id>` (the key's
/// length first, so that any key and id need no escaping) or `v<version or
/// ->.n<16 hexadecimal digits>.<id>` (a number's bits: exact).
impl<K: std::fmt::Display> std::fmt::Display for Cursor<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.version {
            Some(v) => write!(f, "v{v}.")?,
            None => f.write_str("v-.")?,
        }
        match &self.position {
            Position::Int(i) => write!(f, "i{i}.{}", self.id),
            Position::Key(k) => write!(f, "k{}.{k}{}", k.len(), self.id),
            Position::Num(n) => write!(f, "n{:016x}.{}", n.get().to_bits(), self.id),
        }
    }
}

/// A cursor string that is not one ([`Cursor`]'s `FromStr`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a page cursor: start from the first page")]
pub struct BadCursor;

impl<K: std::str::FromStr> std::str::FromStr for Cursor<K> {
    type Err = BadCursor;
    fn from_str(s: &str) -> Result<Self, BadCursor> {
        let rest = s.strip_prefix('v').ok_or(BadCursor)?;
        let (version, rest) = rest.split_once('.').ok_or(BadCursor)?;
        let version = match version {
            "-" => None,
            v => Some(v.parse().map_err(|_| BadCursor)?),
        };
        let (position, id) = if let Some(rest) = rest.strip_prefix('i') {
            let (i, id) = rest.split_once('.').ok_or(BadCursor)?;
            (Position::Int(i.parse().map_err(|_| BadCursor)?), id)
        } else if let Some(rest) = rest.strip_prefix('n') {
            let (bits, id) = rest.split_once('.').ok_or(BadCursor)?;
            let bits = u64::from_str_radix(bits, 16).map_err(|_| BadCursor)?;
            let n = crate::position::Num::new(f64::from_bits(bits)).ok_or(BadCursor)?;
            (Position::Num(n), id)
        } else {
            let rest = rest.strip_prefix('k').ok_or(BadCursor)?;
            let (len, rest) = rest.split_once('.').ok_or(BadCursor)?;
            let len: usize = len.parse().map_err(|_| BadCursor)?;
            let key = rest.get(..len).ok_or(BadCursor)?;
            (Position::Key(key.to_owned()), &rest[len..])
        };
        Ok(Cursor {
            version,
            position,
            id: id.parse().map_err(|_| BadCursor)?,
            resume: false,
        })
    }
}

/// A page of a list ([`sql::page`]): at most the asked number of rows after a
/// [`Cursor`] (or from the start), `ORDER BY position, id`, with the list's version read
/// in the same statement and the cursor of the next page (`None`: this is the last).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Page<R = Row, K = Id> {
    /// The rows, in order.
    pub rows: Vec<R>,
    /// The list's version (`None` without a version column).
    pub version: Option<i64>,
    /// Where the next page starts; `None` after the last row.
    pub next: Option<Cursor<K>>,
}

/// A page of the library's rows ([`Row`]: id, list, position) in the model's key types:
/// what the adapters' `page` returns.
pub type RowPage<K = Id, P = Id> = Page<Row<K, P>, K>;

impl Page {
    /// The page of `parent` from the reply to [`sql::page`] run with `after` and
    /// `limit`: [`Error::ParentNotFound`] when the parent row does not exist,
    /// [`Error::ListChanged`] when the list is no longer at `after`'s version (unless
    /// it [resumes](Cursor::resume)).
    pub fn from_reply(
        spec: &Spec,
        parent: Id,
        after: Option<&Cursor>,
        limit: u32,
        reply: Reply,
    ) -> Result<Page, Error> {
        let Listing { mut rows, version } = Listing::from_reply(spec, parent, reply)?;
        if let Some(c) = after
            && !c.resume
            && c.version != version
        {
            return Err(Error::ListChanged { parent });
        }
        let limit = page_limit(limit);
        let next = if rows.len() > limit {
            rows.truncate(limit);
            rows.last().map(|r| Cursor {
                version,
                position: r.position.clone(),
                id: r.id,
                resume: false,
            })
        } else {
            None
        };
        Ok(Page {
            rows,
            version,
            next,
        })
    }

    /// This page with the keys in the model's own types.
    pub fn typed<K: AppKey, P: AppKey>(self) -> Result<Page<Row<K, P>, K>, Error> {
        let Listing { rows, version } = Listing {
            rows: self.rows,
            version: self.version,
        }
        .typed()?;
        Ok(Page {
            rows,
            version,
            next: match self.next {
                Some(c) => Some(c.clone_with(changes::typed_key(c.id)?)),
                None => None,
            },
        })
    }
}

/// The rows a page holds: `limit`, at least one.
pub(crate) fn page_limit(limit: u32) -> usize {
    usize::try_from(limit.max(1)).unwrap_or(usize::MAX)
}

/// What a write checks of the client's view before it applies (the adapters'
/// `concurrency` option). Every mode locks the list and reads under the lock; they
/// differ in what refuses a client whose page is older than the list.
///
/// | mode | refuses | suits |
/// |---|---|---|
/// | [`Neighbours`](Concurrency::Neighbours) (default) | a drop whose gap changed (`stale_neighbours`), an item or anchor gone (`not_found`) or moved to another list (`not_in_collection`) | drags: two people dragging in different parts of one list never refuse each other |
/// | [`Version`](Concurrency::Version) | any write after the version the client read (`version_conflict`) | a whole-list edit (a reorder, an index from a numbered view) that must not apply to a list the client never saw |
/// | [`VersionOrNeighbours`](Concurrency::VersionOrNeighbours) | a stale version, unless the request names its neighbours (a drop between two items, before or after one) and they still hold | a board that sends its version with every gesture: stale drops into an untouched gap still apply |
///
/// Four pages dragging at once in a list of 40 items, each re-reading after a refusal
/// and after every third drag of its own (`cargo bench -p ordered-conformance --bench
/// drags`, median of 5 alternating rounds): with `Version` 49 % (SQLite) and 76 %
/// (PostgreSQL) of the drags were refused, with `Neighbours` 8 % and 26 %, with
/// `VersionOrNeighbours` 8 % and 26 %: the neighbour check refuses only drops into a
/// gap that changed.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Concurrency {
    /// The neighbours and anchors the request names are checked under the lock; no
    /// version is needed.
    #[default]
    Neighbours,
    /// The list must be at this version (the one the client read; needs a version
    /// column): [`Error::VersionConflict`] otherwise.
    Version(i64),
    /// The list at this version applies as [`Concurrency::Version`]; at another, a
    /// request that names its neighbours ([`Placement::Between`], `Before`, `After`) is
    /// checked as [`Concurrency::Neighbours`], and any other is refused with
    /// [`Error::VersionConflict`].
    VersionOrNeighbours(i64),
}

impl Concurrency {
    /// The version the client read, if the mode checks one.
    pub fn version(self) -> Option<i64> {
        match self {
            Concurrency::Neighbours => None,
            Concurrency::Version(v) | Concurrency::VersionOrNeighbours(v) => Some(v),
        }
    }
}

/// Test-only switches that turn off parts of the protocol, so that the reliability
/// suite can show that its checks catch the failures they guard against.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Controls {
    /// Lock parents in request order instead of increasing id order.
    pub lock_in_request_order: bool,
    /// Lock with a plain `SELECT ... FOR UPDATE` and do not bump the version.
    pub skip_version_bump: bool,
    /// Called after the first statement of a relabel has run, while every lock is
    /// held and nothing is committed (the suite's barrier: a racing writer, a killed
    /// connection).
    pub pause_in_relabel: Option<fn()>,
}

/// Builds the test-only last statement of an operation (the reliability suite's
/// operations log) from the engine, the table and the request.
#[doc(hidden)]
pub type FinalStatement = fn(Dialect, &Spec, &Request) -> Statement;

/// What an adapter's operations are configured with: the table, an expected version,
/// the retry policy, and the test-only switches. Both adapters hold one and build every
/// [`Operation`] from it, so they configure operations identically.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// The table.
    pub spec: Spec,
    /// What a write checks of the client's view ([`Concurrency`]).
    pub concurrency: Concurrency,
    /// The list the client saw (or the parent row of its lists): an item, anchor or
    /// destination outside it is refused with [`Error::NotInCollection`].
    pub within: Option<Id>,
    /// A key given to an option could not be an [`Id`] (a string longer than
    /// [`crate::MAX_TEXT_KEY`] bytes): every operation is refused.
    #[doc(hidden)]
    pub key_error: bool,
    /// Retries around a whole operation (when the adapter owns the transaction).
    pub retry: RetryPolicy,
    /// Inserts only: the id the caller's new row will have. If a row already has it
    /// (an earlier attempt committed), the insert is refused with
    /// [`Error::AlreadyApplied`] and writes nothing.
    pub idempotency: Option<Id>,
    /// The client's request key ([`crate::requests`]): the write records its outcome,
    /// and a repeat returns it.
    pub request: Option<Id>,
    /// The tenant the request key belongs to (keys are per table and tenant).
    pub tenant: Option<Id>,
    /// Relabels of more rows than this are summarised in [`Changes::relabelled`]
    /// instead of listed ([`changes::DEFAULT_LIMIT`] by default).
    pub changes_limit: u64,
    #[doc(hidden)]
    pub controls: Controls,
    #[doc(hidden)]
    pub log: Option<FinalStatement>,
}

impl Settings {
    /// Defaults for `spec`: no expected version, the default retry policy.
    pub fn new(spec: Spec) -> Self {
        Settings {
            spec,
            concurrency: Concurrency::Neighbours,
            within: None,
            key_error: false,
            retry: RetryPolicy::default(),
            idempotency: None,
            request: None,
            tenant: None,
            changes_limit: changes::DEFAULT_LIMIT,
            controls: Controls::default(),
            log: None,
        }
    }

    /// The retry policy on this server: [`RetryPolicy::GALERA`] on a Galera node when
    /// no other than the default was set, else the one set.
    pub fn retry_on(&self, galera: bool) -> RetryPolicy {
        if galera && self.retry == RetryPolicy::default() {
            RetryPolicy::GALERA
        } else {
            self.retry
        }
    }

    /// Whether positions are text keys (how the adapters decode rows).
    pub fn is_key(&self) -> bool {
        matches!(self.spec.strategy.kind(), PositionKind::Key { .. })
    }

    /// `parent` if it fits the table's scope type, else [`Error::WrongKeyType`]: the
    /// check the reads outside an operation (`list`, `index_of`) make before binding it.
    pub fn scope_key(&self, parent: Id) -> Result<Id, Error> {
        self.spec.check_scope(parent)
    }

    /// `item` if it fits the table's key type, else [`Error::WrongKeyType`].
    pub fn item_key(&self, item: Id) -> Result<Id, Error> {
        item.checked(self.spec.id_type)
    }

    /// How the adapters decode the table's rows ([`sql::Wire::of`]).
    pub fn wire(&self) -> sql::Wire {
        sql::Wire::of(&self.spec)
    }

    /// The operation for `req` on `dialect`, configured with these settings.
    pub fn operation(&self, dialect: Dialect, req: &Request) -> Operation {
        let mut op = Operation::new(self.spec, dialect, req.clone())
            .concurrency(self.concurrency)
            .within(self.within)
            .idempotent(self.idempotency)
            .changes_limit(self.changes_limit)
            .with_controls(self.controls);
        if let Some(log) = self.log {
            op = op.with_final_statement(log(dialect, &self.spec, req));
        }
        op
    }
}

/// What every front's `OrderedTable<K = Id, P = Id>` (a struct with an `s: Settings`
/// field and a `keys: PhantomData<fn() -> (K, P)>` marker) has besides its operations:
/// `new` from a [`Spec`] (keys as [`Id`]s), `Clone` and `Debug` without bounds on the
/// key types, the options ([`settings_options!`](crate::settings_options)) and
/// `untyped`. One definition for Diesel sync, diesel-async and SeaORM; each front adds
/// its own `of` (from its model trait).
#[doc(hidden)]
#[macro_export]
macro_rules! handle {
    ($name:ident) => {
        impl $name {
            /// Operations on the table `spec` describes, with keys as [`Id`]s.
            pub fn new(spec: $crate::Spec) -> Self {
                $name {
                    s: $crate::adapter::Settings::new(spec),
                    keys: ::std::marker::PhantomData,
                }
            }
        }

        impl<K, P> ::std::clone::Clone for $name<K, P> {
            fn clone(&self) -> Self {
                $name {
                    s: self.s,
                    keys: ::std::marker::PhantomData,
                }
            }
        }

        impl<K, P> ::std::fmt::Debug for $name<K, P> {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("settings", &self.s)
                    .finish()
            }
        }

        impl<K: $crate::AppKey, P: $crate::AppKey> $name<K, P> {
            $crate::settings_options!();

            /// The same table and options with keys as [`Id`]s (generic code).
            pub fn untyped(self) -> $name {
                $name {
                    s: self.s,
                    keys: ::std::marker::PhantomData,
                }
            }
        }
    };
}

/// The options of an adapter's `OrderedTable` (a struct with an `s: Settings` field), one
/// definition for every front (Diesel sync, diesel-async, SeaORM), through
/// [`handle!`](crate::handle).
#[doc(hidden)]
#[macro_export]
macro_rules! settings_options {
    () => {
        /// Refuse the next writes with [`ordered_core::Error::VersionConflict`] unless
        /// the collection is at `version` (the one a client read; needs a version
        /// column): [`Concurrency::Version`](ordered_core::Concurrency::Version).
        pub fn expect_version(mut self, version: i64) -> Self {
            self.s.concurrency = $crate::Concurrency::Version(version);
            self
        }

        /// What the next writes check of the client's view
        /// ([`Concurrency`](ordered_core::Concurrency): the neighbours only, the
        /// default; the list's version; or the version with a fallback to the
        /// neighbours).
        pub fn concurrency(mut self, mode: $crate::Concurrency) -> Self {
            self.s.concurrency = mode;
            self
        }

        /// The list the client was looking at (a list's key; for a table ordered per
        /// several columns, a list or the key of the parent row of its lists, such as
        /// a board whose columns are lists): the next writes refuse an
        /// item, anchor or neighbour outside it, and a move to a list outside it, with
        /// [`NotInCollection`](ordered_core::Error::NotInCollection) (a 404 for the
        /// client, naming only `list`), checked under the lock. A route like
        /// `/lists/{list}/items/{item}/move` passes its `list` here.
        pub fn within(mut self, list: impl $crate::AppKey) -> Self {
            match $crate::AppKey::to_key(&list) {
                Some(id) => self.s.within = Some(id),
                None => self.s.key_error = true,
            }
            self
        }

        /// What the next removals of a tree's row do to the rows below it
        /// ([`Removal`](ordered_core::Removal): the database's cascade, the default;
        /// refused while it has children; or its children lifted into its place).
        pub fn removal(mut self, removal: $crate::Removal) -> Self {
            self.s.spec = self.s.spec.with_removal(removal);
            self
        }

        /// Sets the retry policy.
        pub fn retry(mut self, policy: $crate::RetryPolicy) -> Self {
            self.s.retry = policy;
            self
        }

        /// Relabels of more than `rows` rows are summarised in the outcome's
        /// [`Changes::relabelled`](ordered_core::Changes::relabelled) instead of listed
        /// row by row (1000 by default), which bounds the memory a whole-collection
        /// relabel takes.
        pub fn changes_limit(mut self, rows: u64) -> Self {
            self.s.changes_limit = rows;
            self
        }

        /// The table description.
        pub fn spec(&self) -> &$crate::Spec {
            &self.s.spec
        }

        /// Makes inserts idempotent: `id` is the id the caller's new row will have (a
        /// client-generated id). Under the parent lock the library looks it up first; if
        /// the row exists, an earlier attempt committed (one that ended with
        /// `CommitUnknown`, say) and the insert returns
        /// [`ordered_core::Error::AlreadyApplied`] without writing. Moves and deletes
        /// ignore it.
        pub fn idempotent(mut self, id: impl Into<K>) -> Self {
            match $crate::AppKey::to_key(&id.into()) {
                Some(id) => self.s.idempotency = Some(id),
                None => self.s.key_error = true,
            }
            self
        }

        /// Makes the next writes repeatable under the client's request key (a UUID,
        /// or a string such as an `Idempotency-Key` header of at most 64 bytes): each
        /// records its outcome with the key in its own transaction, and a repeat with
        /// the key returns that outcome marked
        /// [`replayed`](ordered_core::Outcome::replayed) and writes nothing (an insert
        /// returns [`AlreadyApplied`](ordered_core::Error::AlreadyApplied) with the
        /// row's id). The same key with another request is refused with
        /// [`IdempotencyKeyReused`](ordered_core::Error::IdempotencyKeyReused). After
        /// a `CommitUnknown`, repeating the request with its key is how to learn
        /// whether it was applied. Needs the records table
        /// ([`create_requests_table`](ordered_core::migration::create_requests_table));
        /// see [`requests`](ordered_core::requests).
        pub fn request_key(mut self, key: impl $crate::AppKey) -> Self {
            match $crate::AppKey::to_key(&key) {
                Some(key) if !key.to_string().is_empty() => self.s.request = Some(key),
                _ => self.s.key_error = true,
            }
            self
        }

        /// The tenant whose request keys the next writes use: keys are scoped per
        /// table and per tenant, so two tenants may choose the same key. Give it with
        /// [`request_key`](Self::request_key), in either order.
        pub fn tenant(mut self, tenant: impl $crate::AppKey) -> Self {
            match $crate::AppKey::to_key(&tenant) {
                Some(t) => self.s.tenant = Some(t),
                None => self.s.key_error = true,
            }
            self
        }

        #[doc(hidden)]
        pub fn with_controls(mut self, controls: $crate::adapter::Controls) -> Self {
            self.s.controls = controls;
            self
        }

        /// A statement run last inside every write, while the locks are held (the
        /// reliability suite's operations log).
        #[doc(hidden)]
        pub fn with_final_statement(mut self, log: $crate::adapter::FinalStatement) -> Self {
            self.s.log = Some(log);
            self
        }
    };
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Start,
    Discover,
    Locked,
    CheckApplied,
    Planning,
    Writing,
    /// Reads back what the writes left (relabelled ranges, the inserted row's id).
    Collect,
    Hook,
    Finish,
}

#[derive(Debug, Clone)]
enum Awaiting {
    Nothing,
    Read(Box<Read>),
    Lock(Id),
    /// The lock row of a collection of a table with no parent table
    /// ([`sql::lock_parent`] on [`Spec::locks_rows`]): its version before the bump.
    LockRow(Id),
    /// The lock of the parent of the request's item ([`sql::lock_parent_of`]).
    LockOf,
    /// A lock that was the bump ([`sql::lock_by_bump`]): the count of rows updated;
    /// the version comes with the fused read.
    Bumped(Id),
    /// A fused read of these parts ([`sql::fused`]).
    Fused(Vec<sql::Probe>),
    Write,
    /// The first statement of a relabel: the test-only pause follows it.
    RelabelStarted,
    Insert,
    /// Galera: the GTID check before `COMMIT`.
    Replicated,
    /// Rows a relabel left, for the changes.
    Changed,
    /// The caller's hook ran.
    Hooked,
    /// The request's record ([`sql::insert_record`]).
    Recorded,
}

/// One ordering operation in flight. See the module docs.
#[derive(Debug, Clone)]
pub struct Operation {
    spec: Spec,
    dialect: Dialect,
    req: Request,
    concurrency: Concurrency,
    within: Option<Id>,
    idempotency: Option<Id>,
    controls: Controls,
    phase: Phase,
    awaiting: Awaiting,
    queue: VecDeque<(Statement, Awaiting)>,
    reads: Reads,
    /// The keys of the parent rows locked ([`Spec::lock_key`]), in lock order.
    locked: Vec<Id>,
    /// The collection whose version an expected version is checked against (the
    /// item's, or the one inserted into); `None` until known.
    primary: Option<Id>,
    /// The key of the parent row that locks `primary` (known before `primary` when a
    /// move in a table split by more scope columns locks the item's parent).
    primary_key: Option<Id>,
    /// `(parent key, version)` of every parent row locked.
    versions: Vec<(Id, i64)>,
    /// Parent rows locked by their bump ([`sql::lock_by_bump`]) whose version the first
    /// read under the lock returns ([`sql::Probe::Version`]).
    unread_versions: Vec<Id>,
    plan: Option<Plan>,
    statements: u32,
    log: Option<Statement>,
    galera: bool,
    item_checked: bool,
    via_item: bool,
    /// A tree's move to another parent took the root list's lock only to serialize
    /// parent changes ([`Spec::tree`]): not bumped, not reported.
    tree_lock: bool,
    replication_checked: bool,
    changes_limit: u64,
    hook: bool,
    changes: Changes,
    inserted: Option<Id>,
    /// The request's record, written last before the Galera check and `COMMIT`.
    record: Option<crate::requests::Record>,
    recorded: bool,
}

impl Operation {
    /// An operation for `req` on the table described by `spec`.
    pub fn new(spec: Spec, dialect: Dialect, req: Request) -> Self {
        Operation {
            spec,
            dialect,
            req,
            concurrency: Concurrency::Neighbours,
            within: None,
            idempotency: None,
            controls: Controls::default(),
            phase: Phase::Start,
            awaiting: Awaiting::Nothing,
            queue: VecDeque::new(),
            reads: Reads::new(),
            locked: Vec::new(),
            primary: None,
            primary_key: None,
            versions: Vec::new(),
            unread_versions: Vec::new(),
            plan: None,
            statements: 0,
            log: None,
            galera: false,
            item_checked: false,
            via_item: false,
            tree_lock: false,
            replication_checked: false,
            changes_limit: changes::DEFAULT_LIMIT,
            hook: false,
            changes: Changes::default(),
            inserted: None,
            record: None,
            recorded: false,
        }
    }

    /// Relabels of more rows than `limit` are summarised in [`Changes::relabelled`]
    /// instead of read back and listed.
    pub fn changes_limit(mut self, limit: u64) -> Self {
        self.changes_limit = limit;
        self
    }

    /// The caller has a hook to run before `COMMIT`: the operation stops at
    /// [`Action::BeforeCommit`] once everything is written.
    pub fn with_hook(mut self) -> Self {
        self.hook = true;
        self
    }

    /// The server is a node of a MariaDB Galera Cluster (the adapters learn it from
    /// [`sql::galera::probe`]): the operation refuses a spec without a version column
    /// ([`Error::VersionColumnRequired`]), and brackets its statements with a check that
    /// none of them ran outside the transaction ([`Error::PartiallyApplied`]).
    pub fn on_galera(mut self) -> Self {
        self.galera = true;
        self
    }

    /// Refuses the operation with [`Error::VersionConflict`] unless the collection is at
    /// this version (needs a version column).
    pub fn expect_version(mut self, version: Option<i64>) -> Self {
        self.concurrency = version.map_or(Concurrency::Neighbours, Concurrency::Version);
        self
    }

    /// What the operation checks of the client's view ([`Concurrency`]).
    pub fn concurrency(mut self, mode: Concurrency) -> Self {
        self.concurrency = mode;
        self
    }

    /// The list the client saw (or the parent row of its lists, for a table ordered
    /// per several columns): under the lock, an item, anchor or destination outside it
    /// is refused with [`Error::NotInCollection`] naming `list`, before any version
    /// is checked, so a refusal never names another list.
    pub fn within(mut self, list: Option<Id>) -> Self {
        self.within = list;
        self
    }

    /// Inserts only: the id the caller's new row will have. Under the lock the item is
    /// looked up first; if it exists, an earlier attempt committed and the operation
    /// fails with [`Error::AlreadyApplied`] before writing anything.
    pub fn idempotent(mut self, id: Option<Id>) -> Self {
        self.idempotency = id;
        self
    }

    #[doc(hidden)]
    pub fn with_controls(mut self, controls: Controls) -> Self {
        self.controls = controls;
        self
    }

    /// Records the outcome under a request key ([`crate::requests`]): once everything
    /// is written (and the caller's hook ran), the operation inserts the record in
    /// its own transaction, before the Galera check, so the record commits exactly
    /// when the writes do. An operation that changed nothing records nothing here (its
    /// transaction is rolled back; [`Protocol`](crate::adapter::Protocol) records it
    /// in one of its own).
    pub fn with_record(mut self, record: Option<crate::requests::Record>) -> Self {
        self.record = record;
        self
    }

    /// Whether the statement in flight is the request's record (a duplicate of it is
    /// another call with the same key, committed first).
    pub fn recording(&self) -> bool {
        matches!(self.awaiting, Awaiting::Recorded)
    }

    /// A statement to run as the last one of the operation, while the locks are held
    /// (the reliability suite's operations log).
    #[doc(hidden)]
    pub fn with_final_statement(mut self, stmt: Statement) -> Self {
        self.log = Some(stmt);
        self
    }

    /// The request.
    pub fn request(&self) -> &Request {
        &self.req
    }

    /// The parents locked so far, in lock order.
    pub fn locked(&self) -> &[Id] {
        &self.locked
    }

    /// The plan, once made.
    pub fn plan(&self) -> Option<&Plan> {
        self.plan.as_ref()
    }

    /// Advances the operation with the result of the previous action.
    pub fn next(&mut self, reply: Reply) -> Result<Action, Error> {
        match std::mem::replace(&mut self.awaiting, Awaiting::Nothing) {
            Awaiting::Read(q) => match reply {
                Reply::Rows(rows) => self.reads.insert(*q, rows),
                Reply::Links(rows) => {
                    let rows = sql::Wire::of(&self.spec)
                        .links(rows)
                        .map_err(|e| Error::Inconsistent(e.to_string()))?
                        .into_iter()
                        .map(|(id, _, link)| (id, link))
                        .collect();
                    self.reads.insert_links(*q, rows);
                }
                other => return Err(unexpected("rows", &other)),
            },
            Awaiting::Lock(p) => match reply {
                Reply::Parents(rows) => match rows.first() {
                    Some(&(_, v)) => self.versions.push((p, v)),
                    None => return Err(Error::ParentNotFound { parent: p }),
                },
                other => return Err(unexpected("parent rows", &other)),
            },
            Awaiting::Bumped(p) => match reply {
                Reply::Affected(0) => return Err(Error::ParentNotFound { parent: p }),
                Reply::Affected(_) => {}
                other => return Err(unexpected("a count of rows", &other)),
            },
            Awaiting::LockRow(p) => match reply {
                Reply::Count(v) => self.versions.push((p, v)),
                other => return Err(unexpected("a count", &other)),
            },
            Awaiting::LockOf => match reply {
                Reply::Parents(rows) => {
                    // none: the item (or its parent) is missing; Discover reads the
                    // item and tells which
                    if let Some(&(p, v)) = rows.first() {
                        self.versions.push((p, v));
                        self.locked = vec![p];
                        // a split table's lock names the parent row, not the list
                        if self.spec.split_by.is_empty() {
                            self.primary = Some(p);
                        }
                        self.primary_key = Some(p);
                        let bump = !self.controls.skip_version_bump;
                        if let Some(s) = sql::bump_after_lock(self.dialect, &self.spec, p, bump) {
                            self.queue.push_back((s, Awaiting::Write));
                        }
                        self.phase = Phase::Locked;
                    }
                }
                other => return Err(unexpected("parent rows", &other)),
            },
            Awaiting::Fused(probes) => match reply {
                Reply::Tagged(rows) => {
                    let versions = sql::fused_versions(&probes, &rows);
                    for p in std::mem::take(&mut self.unread_versions) {
                        match versions.iter().find(|(q, _)| *q == p) {
                            Some(&v) => self.versions.push(v),
                            // the row this transaction has locked and updated
                            None => {
                                return Err(Error::Inconsistent(format!(
                                    "the parent row {p} this operation locked was not read back"
                                )));
                            }
                        }
                    }
                    for (read, rows) in sql::fused_reads(&probes, rows) {
                        self.reads.insert(read, rows);
                    }
                }
                other => return Err(unexpected("tagged rows", &other)),
            },
            Awaiting::RelabelStarted => {
                if let Some(pause) = self.controls.pause_in_relabel {
                    pause();
                }
            }
            Awaiting::Replicated => match reply {
                Reply::Count(1) => {}
                Reply::Count(_) => {
                    return Err(Error::PartiallyApplied {
                        parent: self.locked.first().copied().unwrap_or(Id::Int(0)),
                    });
                }
                other => return Err(unexpected("a count", &other)),
            },
            Awaiting::Changed => match reply {
                Reply::Rows(rows) => self.changes.record_all(rows.into_iter().map(|r| Change {
                    id: r.id,
                    parent: r.parent,
                    position: r.position,
                })),
                other => return Err(unexpected("rows", &other)),
            },
            Awaiting::Insert => {
                if let Reply::InsertedId(id) = reply {
                    self.inserted = Some(id);
                }
            }
            Awaiting::Write | Awaiting::Hooked | Awaiting::Recorded | Awaiting::Nothing => {}
        }
        loop {
            if let Some((stmt, aw)) = self.queue.pop_front() {
                self.awaiting = aw;
                self.statements += 1;
                return Ok(Action::Execute(stmt));
            }
            match self.phase {
                Phase::Start => {
                    self.phase = Phase::Discover;
                    if self.spec.filter.is_some() && self.spec.strategy.is_dense() {
                        return Err(Error::InvalidRequest(
                            "a row filter needs gapped or fractional positions: dense positions are indexes of every row",
                        ));
                    }
                    if let Some(e) = self.spec.misfit() {
                        return Err(e);
                    }
                    let idem = self.idempotency.and_then(|i| self.spec.check_item(i).err());
                    if let Some(e) = self.req.misfit(&self.spec).or(idem) {
                        return Err(e);
                    }
                    if self.galera {
                        if self.spec.version.is_none() {
                            return Err(Error::VersionColumnRequired {
                                table: self.spec.table.to_owned(),
                            });
                        }
                        self.queue.push_back((sql::galera::mark(), Awaiting::Write));
                    }
                }
                Phase::Discover
                    if !self.via_item
                        && !self.controls.lock_in_request_order
                        && !self.spec.locks_rows() =>
                {
                    // a move or removal within its collection: lock the item's parent
                    // in the same statement that finds it
                    self.via_item = true;
                    if let Some(item) = in_own_collection(&self.req) {
                        let bump = !self.controls.skip_version_bump;
                        let s = sql::lock_parent_of(self.dialect, &self.spec, item, bump);
                        self.queue.push_back((s, Awaiting::LockOf));
                    }
                }
                Phase::Discover => {
                    match plan::parents_to_lock(&self.spec, &self.req, &self.reads) {
                        Err(Step::Read(q)) => return Ok(self.emit_read(*q, false)),
                        Err(Step::Fail(e)) => return Err(e),
                        Ok(mut ps) => {
                            if self.controls.lock_in_request_order {
                                ps = self.request_order(ps);
                            }
                            self.primary = plan::primary_parent(&self.req, &ps, &self.reads);
                            self.primary_key = self.primary.map(|p| self.spec.lock_key(p));
                            // the parent rows: one lock per row, however many of its lists
                            // (a table split by more scope columns) the request names
                            let mut keys: Vec<Id> = Vec::with_capacity(ps.len());
                            for p in ps {
                                let k = self.spec.lock_key(p);
                                if !keys.contains(&k) {
                                    keys.push(k);
                                }
                            }
                            // in the order of the parent rows' keys, not of the collections
                            // (`(board, status)` tuples order by their encoding's length
                            // first): every writer of the table locks in one order
                            if !self.controls.lock_in_request_order {
                                keys.sort_unstable();
                            }
                            let mut ps = keys;
                            // a tree's move to another parent, or any removal: the root
                            // list's lock first (every such write takes it first, so none
                            // waits for it while holding another list), so parent changes
                            // are serialized, the cycle check under it sees all of them,
                            // and a removal's read of the subtree (which it deletes, with
                            // its lists' lock rows) cannot miss a row moved in or out of
                            // it meanwhile
                            if self.spec.is_tree()
                                && (ps.len() > 1 || matches!(self.req, Request::Remove { .. }))
                                && matches!(
                                    self.req,
                                    Request::MoveToParent { .. } | Request::Remove { .. }
                                )
                            {
                                self.tree_lock = !ps.contains(&Id::ROOT);
                                ps.retain(|p| *p != Id::ROOT);
                                ps.insert(0, Id::ROOT);
                            }
                            let bump = !self.controls.skip_version_bump;
                            for &p in &ps {
                                let bump = bump && !(self.tree_lock && p == Id::ROOT);
                                if let Some(s) =
                                    sql::lock_by_bump(self.dialect, &self.spec, p, bump)
                                {
                                    self.queue.push_back((s, Awaiting::Bumped(p)));
                                    self.unread_versions.push(p);
                                    continue;
                                }
                                let stmts = sql::lock_parent(self.dialect, &self.spec, p, bump);
                                for s in stmts {
                                    let aw = match s.returns {
                                        Returns::Parent => Awaiting::Lock(p),
                                        Returns::Count => Awaiting::LockRow(p),
                                        _ => Awaiting::Write,
                                    };
                                    self.queue.push_back((s, aw));
                                }
                            }
                            self.locked = ps;
                            self.phase = Phase::Locked;
                        }
                    }
                }
                Phase::Locked => {
                    // reads taken before the lock may be stale: start over, with the
                    // reads the planner will need first in one statement
                    if !self.item_checked {
                        self.item_checked = true;
                        self.reads.clear();
                        let mut probes = self.probes();
                        probes.extend(
                            self.unread_versions
                                .iter()
                                .map(|&parent| sql::Probe::Version { parent }),
                        );
                        match probes.as_slice() {
                            [] => {}
                            [one] if one.read().is_some() => {
                                if let Some(q) = one.read() {
                                    return Ok(self.emit_read(q, true));
                                }
                            }
                            _ => {
                                let stmt = sql::fused(self.dialect, &self.spec, &probes, true);
                                self.queue.push_back((stmt, Awaiting::Fused(probes)));
                                continue;
                            }
                        }
                    }
                    // the item must still be in the collection it was in when the
                    // locks were chosen: otherwise they, the version to check and
                    // the versions bumped are another collection's (a racing writer
                    // moved it while this one waited for a lock). With an expected
                    // version the client's list is stale: refused below; without,
                    // the adapters retry and lock the right collections
                    self.check_within()?;
                    if let Some(item) = moved_item(&self.req)
                        && let Ok(Some(row)) = self.reads.item(item)
                    {
                        if Some(self.spec.lock_key(row.parent)) != self.primary_key {
                            self.check_version()?;
                            return Err(Error::ParentChanged { id: item });
                        }
                        // under the same parent lock, the list it is in now (another
                        // list of the same board, in a split table)
                        self.primary = Some(row.parent);
                    }
                    self.check_version()?;
                    self.phase = Phase::Planning;
                    if let (Some(id), Request::Insert { .. }) = (self.idempotency, &self.req) {
                        self.phase = Phase::CheckApplied;
                        if self.reads.item(id).is_err() {
                            return Ok(self.emit_read(Read::Item { id }, true));
                        }
                    }
                }
                Phase::CheckApplied => {
                    if let Some(id) = self.idempotency
                        && let Ok(Some(row)) = self.reads.item(id)
                    {
                        return Err(Error::AlreadyApplied {
                            id,
                            parent: row.parent,
                        });
                    }
                    self.phase = Phase::Planning;
                }
                Phase::Planning => {
                    match plan::plan(&self.spec, &self.req, &self.reads, &self.locked) {
                        Err(Step::Read(q)) => return Ok(self.emit_read(*q, true)),
                        Err(Step::Fail(e)) => return Err(e),
                        Ok(p) => {
                            let mut relabel_started = false;
                            for w in &p.writes {
                                let relabel = !matches!(
                                    w,
                                    Write::Set { .. }
                                        | Write::Delete { .. }
                                        | Write::Cascade { .. }
                                );
                                for s in sql::write(self.dialect, &self.spec, w) {
                                    let aw = if relabel && !relabel_started {
                                        relabel_started = true;
                                        Awaiting::RelabelStarted
                                    } else {
                                        Awaiting::Write
                                    };
                                    self.queue.push_back((s, aw));
                                }
                            }
                            self.plan = Some(p);
                            self.phase = Phase::Writing;
                        }
                    }
                }
                Phase::Writing => {
                    self.phase = Phase::Collect;
                    if let Some(log) = self.log.take() {
                        self.queue.push_back((log, Awaiting::Write));
                    }
                    if let Some((parent, position)) =
                        self.plan.as_ref().and_then(|p| p.insert.clone())
                    {
                        self.awaiting = Awaiting::Insert;
                        return Ok(Action::Insert { parent, position });
                    }
                }
                Phase::Collect => {
                    self.phase = Phase::Hook;
                    self.collect();
                }
                Phase::Hook => {
                    self.phase = Phase::Finish;
                    self.changes.sort();
                    // nothing written: no hook, and the transaction is rolled back
                    if self.hook && !self.unchanged() {
                        self.awaiting = Awaiting::Hooked;
                        return Ok(Action::BeforeCommit(self.changes.clone()));
                    }
                }
                Phase::Finish if self.record.is_some() && !self.recorded && !self.unchanged() => {
                    self.recorded = true;
                    let mut o = self.outcome();
                    // the record's own insert counts
                    o.statements += 1;
                    let text = crate::requests::encode(&o)?;
                    if let Some(rec) = &self.record {
                        self.queue.push_back((
                            sql::insert_record(self.dialect, rec, &text),
                            Awaiting::Recorded,
                        ));
                    }
                }
                Phase::Finish if self.galera && !self.replication_checked && !self.unchanged() => {
                    self.replication_checked = true;
                    self.queue
                        .push_back((sql::galera::intact(), Awaiting::Replicated));
                }
                Phase::Finish => return Ok(Action::Done(self.outcome())),
            }
        }
    }

    /// Whether `parent` is the list named by `within`, or one of the lists of the
    /// parent row it names.
    fn is_within(&self, parent: Id) -> bool {
        match self.within {
            None => true,
            Some(w) => parent == w || self.spec.lock_key(parent) == w,
        }
    }

    /// The list the request names (`within`) against where its item is and where it
    /// goes, under the lock: [`Error::NotInCollection`] naming only that list.
    fn check_within(&self) -> Result<(), Error> {
        let Some(within) = self.within else {
            return Ok(());
        };
        if let Some(item) = moved_item(&self.req)
            && let Ok(Some(row)) = self.reads.item(item)
            && !self.is_within(row.parent)
        {
            return Err(Error::NotInCollection {
                id: item,
                parent: within,
            });
        }
        let target = match &self.req {
            Request::Insert { parent, .. }
            | Request::Reorder { parent, .. }
            | Request::Rebalance { parent } => Some(*parent),
            // a tree's lists are its rows: a move under another row leaves any list
            Request::MoveToParent { parent, .. } if !self.spec.is_tree() => Some(*parent),
            _ => None,
        };
        if let Some(t) = target
            && !self.is_within(t)
        {
            return Err(Error::NotInCollection {
                id: t,
                parent: within,
            });
        }
        Ok(())
    }

    /// The expected version against the primary collection's, as locked.
    fn check_version(&self) -> Result<(), Error> {
        let Some(expected) = self.concurrency.version() else {
            return Ok(());
        };
        if let Some(p) = self.primary_key {
            let actual = self
                .versions
                .iter()
                .find(|(q, _)| *q == p)
                .map_or(0, |(_, v)| *v);
            let neighbours = match &self.req {
                Request::Insert { at, .. }
                | Request::Move { at, .. }
                | Request::MoveToParent { at, .. } => matches!(
                    at,
                    Placement::Before(_)
                        | Placement::After(_)
                        | Placement::Between { prev: Some(_), .. }
                        | Placement::Between { next: Some(_), .. }
                ),
                _ => false,
            };
            let fallback = matches!(self.concurrency, Concurrency::VersionOrNeighbours(_));
            if actual != expected && !(fallback && neighbours) {
                return Err(Error::VersionConflict {
                    parent: p,
                    expected,
                    actual,
                });
            }
        }
        Ok(())
    }

    fn request_order(&self, mut ps: Vec<Id>) -> Vec<Id> {
        if let Request::MoveToParent { parent, .. } = &self.req
            && ps.len() == 2
            && ps[0] == *parent
        {
            ps.swap(0, 1);
        }
        ps
    }

    /// The reads the planner will ask for first, known before any is answered: the
    /// item, the idempotency id, the anchors and their neighbours (or the edge of the
    /// collection), read under the lock in one fused statement.
    fn probes(&self) -> Vec<sql::Probe> {
        use sql::Probe;
        let mut out = Vec::new();
        let item = moved_item(&self.req);
        if let Some(item) = item {
            out.push(Probe::Item(item));
        }
        let target = match &self.req {
            Request::Insert { parent, at } => Some((*parent, at)),
            Request::Move { at, .. } => self.primary.map(|p| (p, at)),
            Request::MoveToParent { parent, at, .. } => Some((*parent, at)),
            Request::MoveUp { item } | Request::MoveDown { item } => {
                if let Some(p) = self.primary {
                    out.push(Probe::Near {
                        parent: p,
                        of: *item,
                        up: matches!(self.req, Request::MoveUp { .. }),
                        exclude: Some(*item),
                    });
                }
                None
            }
            Request::Swap { b, .. } => {
                out.push(Probe::Item(*b));
                None
            }
            Request::Remove { .. }
            | Request::Reorder { .. }
            | Request::Rebalance { .. }
            | Request::ConvertLinked { .. } => None,
        };
        if let (Some(id), Request::Insert { .. }) = (self.idempotency, &self.req) {
            out.push(Probe::Item(id));
        }
        let Some((parent, at)) = target else {
            return out;
        };
        if self.spec.strategy.is_dense() {
            // dense placement reads by index and shifts: left to the planner
            return out;
        }
        let exclude = item;
        let anchor = |out: &mut Vec<Probe>, id: Id| {
            if !out.contains(&Probe::Item(id)) {
                out.push(Probe::Item(id));
            }
        };
        match at {
            Placement::First | Placement::Last => out.push(Probe::Edge {
                parent,
                last: matches!(at, Placement::Last),
                exclude,
            }),
            Placement::Before(b) | Placement::After(b) => {
                anchor(&mut out, *b);
                out.push(Probe::Near {
                    parent,
                    of: *b,
                    up: matches!(at, Placement::Before(_)),
                    exclude,
                });
            }
            Placement::Between { prev, next } => {
                for id in prev.iter().chain(next) {
                    anchor(&mut out, *id);
                }
                out.push(match prev {
                    Some(p) => Probe::Near {
                        parent,
                        of: *p,
                        up: false,
                        exclude,
                    },
                    None => Probe::Edge {
                        parent,
                        last: false,
                        exclude,
                    },
                });
            }
            // both neighbours in one range read; with a row filter the planner also
            // needs the hidden rows around them, in reads of its own
            Placement::Index(i) if self.spec.filter.is_none() => {
                out.push(Probe::Range(RangeRead::at_index(parent, *i, exclude)));
            }
            Placement::Index(_) => {}
        }
        out
    }

    fn emit_read(&mut self, q: Read, locking: bool) -> Action {
        let stmt = sql::read(self.dialect, &self.spec, &q, locking);
        self.awaiting = Awaiting::Read(Box::new(q));
        self.statements += 1;
        Action::Execute(stmt)
    }

    /// Records what the plan wrote, and queues the reads that tell the rest: the rows
    /// of each relabelled range (or a summary above the limit) and an inserted row's id.
    fn collect(&mut self) {
        let Some(plan) = self.plan.as_ref() else {
            return;
        };
        let bump = i64::from(!self.controls.skip_version_bump && !self.unchanged());
        if self.spec.version.is_some() {
            self.changes.versions = self
                .versions
                .iter()
                .filter(|(parent, _)| !(self.tree_lock && *parent == Id::ROOT))
                .map(|&(parent, v)| ScopeVersion {
                    parent,
                    version: v + bump,
                })
                .collect();
        }
        let mut reads = Vec::new();
        for w in &plan.writes {
            match w {
                Write::Set {
                    id,
                    parent,
                    position,
                } => self.changes.record(Change {
                    id: *id,
                    parent: *parent,
                    position: position.clone(),
                }),
                Write::Delete { id } => self.changes.remove(*id),
                Write::Cascade { ids, .. } => ids.iter().for_each(|id| self.changes.remove(*id)),
                Write::Assign { parent, rows } => {
                    self.changes
                        .record_all(rows.iter().map(|(id, position)| Change {
                            id: *id,
                            parent: *parent,
                            position: position.clone(),
                        }))
                }
                Write::Renumber {
                    parent,
                    first,
                    step,
                    rows,
                    hole_after,
                    ..
                } => {
                    // rank r goes to slot r - 1, one further after the hole
                    let slots = rows.saturating_sub(1) + u64::from(hole_after < rows);
                    let span = i64::try_from(slots).unwrap_or(i64::MAX);
                    let last = first.saturating_add(step.saturating_mul(span));
                    reads.push((*parent, *first, last, *rows));
                }
                Write::Shift {
                    parent,
                    from,
                    to,
                    delta,
                    rows,
                } => reads.push((*parent, from + delta, to + delta, *rows)),
            }
        }
        for (parent, first, last, rows) in reads {
            if rows > self.changes_limit {
                self.changes.relabelled.push(Relabelled {
                    parent,
                    first: Position::Int(first),
                    last: Position::Int(last),
                    rows,
                });
                continue;
            }
            let q = Read::Range(RangeRead {
                parent,
                above: Some(Position::Int(first.saturating_sub(1))),
                below: Some(Position::Int(last.saturating_add(1))),
                desc: false,
                limit: None,
                offset: 0,
                exclude: None,
                visible: false,
            });
            let stmt = sql::read(self.dialect, &self.spec, &q, false);
            self.queue.push_back((stmt, Awaiting::Changed));
        }
        if let Some((parent, position)) = plan.insert.clone() {
            match self.idempotency.or(self.inserted) {
                Some(id) => self.changes.record(Change {
                    id,
                    parent,
                    position,
                }),
                None => {
                    let stmt = sql::at(self.dialect, &self.spec, parent, &position);
                    self.queue.push_back((stmt, Awaiting::Changed));
                }
            }
        }
    }

    /// Whether the plan writes nothing: the request asked for what already is (a move
    /// to where the item stands, a reorder into the current order, a move up of the
    /// first item). The operation then bumps no version (the adapters roll back the
    /// transaction, whose lock may have bumped it), runs no hook and reports
    /// [`Outcome::unchanged`].
    fn unchanged(&self) -> bool {
        self.plan
            .as_ref()
            .is_some_and(|p| p.writes.is_empty() && p.insert.is_none())
    }

    fn outcome(&self) -> Outcome {
        let unchanged = self.unchanged();
        let plan = self.plan.clone().unwrap_or_default();
        let version = match (self.spec.version, self.primary_key) {
            (Some(_), Some(p)) => self
                .versions
                .iter()
                .find(|(q, _)| *q == p)
                .map(|(_, v)| v + i64::from(!self.controls.skip_version_bump && !unchanged)),
            _ => None,
        };
        Outcome {
            position: plan.position.clone(),
            version,
            rows_written: plan.rows_written(),
            relabelled: plan.relabelled,
            statements: self.statements,
            attempts: 1,
            changes: self.changes.clone(),
            unchanged,
            replayed: false,
        }
    }
}

/// The item of a request that locks only the item's own collection.
fn in_own_collection(req: &Request) -> Option<Id> {
    match req {
        Request::Move { item, .. }
        | Request::MoveUp { item }
        | Request::MoveDown { item }
        | Request::Remove { item } => Some(*item),
        _ => None,
    }
}

/// The item a request moves, removes or swaps (it has a collection before the lock).
fn moved_item(req: &Request) -> Option<Id> {
    match req {
        Request::Move { item, .. }
        | Request::MoveUp { item }
        | Request::MoveDown { item }
        | Request::Remove { item }
        | Request::MoveToParent { item, .. }
        | Request::Swap { a: item, .. } => Some(*item),
        Request::Insert { .. }
        | Request::Reorder { .. }
        | Request::Rebalance { .. }
        | Request::ConvertLinked { .. } => None,
    }
}

pub(crate) fn unexpected(what: &str, got: &Reply) -> Error {
    Error::Inconsistent(format!("expected {what} from the adapter, got {got:?}"))
}
