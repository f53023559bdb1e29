//! The adapter's error type.

use std::sync::Arc;

use sea_orm::DbErr;

use ordered_core::adapter::retry::classify_message;
use ordered_core::adapter::{Class, Failure, Kind};
pub use ordered_core::error::Status;

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why an ordered operation failed. The collection is as it was before the call (the
/// library's transaction or savepoint was rolled back), except for
/// [`Error::CommitUnknown`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The request was refused: stale neighbours, a version conflict, a missing item...
    #[error(transparent)]
    Ordering(#[from] ordered_core::Error),
    /// The database failed. [`Error::is_retryable`] tells whether a new attempt may
    /// succeed.
    #[error("database error: {0}")]
    Database(#[from] DbErr),
    /// Every attempt failed with a retryable error; the last one is kept.
    #[error("gave up after {attempts} attempts: {last}")]
    RetriesExhausted {
        /// Attempts made.
        attempts: u32,
        /// The last error.
        last: DbErr,
    },
    /// The connection failed while committing: the operation may or may not have been
    /// applied. Re-read the collection before repeating it.
    #[error("the commit outcome is unknown ({0}); re-read the collection before retrying")]
    CommitUnknown(DbErr),
    /// The connection failed before the commit (killed, network cut, server restart):
    /// the server rolled the transaction back, so nothing was applied. Retry on a new
    /// connection ([`Error::is_retryable`] is true).
    #[error(
        "the connection was lost before the commit ({0}); nothing was applied: reconnect and retry"
    )]
    ConnectionLost(DbErr),
    /// SQLite answered `database is locked` inside your own transaction: a DEFERRED
    /// transaction (what `db.begin()` opens) that has read cannot take the write lock
    /// while another connection writes, however long it waits. Nothing of the operation
    /// was applied. Open your transactions with [`crate::begin`] (`BEGIN IMMEDIATE`)
    /// and retry yours ([`Error::is_retryable`] is true).
    #[error(
        "SQLite refused the write inside your transaction (database is locked): open the transaction with ordered_seaorm::begin (BEGIN IMMEDIATE) and retry it ({0})"
    )]
    SqliteDeferred(DbErr),
}

impl Error {
    fn kind(&self) -> Kind<'_> {
        match self {
            Error::Ordering(e) => Kind::Refused(e),
            Error::Database(e) => Kind::Database {
                retryable: classify_message(&e.to_string()) == Class::Retry,
            },
            Error::RetriesExhausted { .. } => Kind::RetriesExhausted,
            Error::CommitUnknown(_) => Kind::CommitUnknown,
            Error::ConnectionLost(_) => Kind::ConnectionLost,
            Error::SqliteDeferred(_) => Kind::SqliteDeferred,
        }
    }

    /// Whether running the whole operation again may succeed. Inside your own
    /// transaction the library does not retry: roll back and retry yours when this is
    /// true.
    pub fn is_retryable(&self) -> bool {
        self.kind().is_retryable()
    }

    /// A stable machine-readable code: the refusal's
    /// [`code`](ordered_core::Error::code) (`stale_neighbours`, `version_conflict`,
    /// `not_found`, ...), or for a database failure `database_busy` (retryable),
    /// `database_error`, `retries_exhausted`, `commit_unknown`, `connection_lost`,
    /// `sqlite_deferred`. The same codes as `ordered-diesel`.
    pub fn code(&self) -> &'static str {
        self.kind().code()
    }

    /// What the failure means for the client ([`Status::http`] maps it to HTTP): a
    /// refusal's own status; `RetryLater` for a busy database, exhausted retries, a
    /// lost connection and a busy deferred SQLite transaction; `Conflict` for an
    /// unknown commit outcome (re-read the list first); `Internal` otherwise.
    ///
    /// ```
    /// use ordered_seaorm::{Error, OrderingError, Status};
    ///
    /// let e = Error::from(OrderingError::StaleNeighbours { prev: Some(4.into()), next: Some(6.into()) });
    /// assert_eq!((e.code(), e.status()), ("stale_neighbours", Status::Conflict));
    /// assert_eq!(e.to_string(), "item 4 and item 6 are no longer next to each other: the list changed, re-read it");
    /// ```
    pub fn status(&self) -> Status {
        self.kind().status()
    }

    /// The ordering refusal, if that is what this is.
    pub fn ordering(&self) -> Option<&ordered_core::Error> {
        match self {
            Error::Ordering(e) => Some(e),
            _ => None,
        }
    }
}

/// So that `?` works on this crate's calls inside SeaORM transaction closures whose
/// error type is `DbErr`. Database failures give back their `DbErr`; a refusal keeps
/// its typed [`ordered_core::Error`] inside the `DbErr` (as the shared source of
/// `DbErr::TryIntoErr`), where [`refusal`] finds it again, so a handler can still map it
/// to its status. Simpler still: give `db.transaction` this crate's [`Error`] as its
/// error type (`From<DbErr>` is implemented), and nothing is wrapped.
impl From<Error> for DbErr {
    fn from(e: Error) -> Self {
        match e {
            Error::Database(e)
            | Error::CommitUnknown(e)
            | Error::ConnectionLost(e)
            | Error::SqliteDeferred(e) => e,
            Error::RetriesExhausted { last, .. } => last,
            Error::Ordering(refused) => DbErr::TryIntoErr {
                from: "ordered request",
                into: "write",
                source: Arc::new(refused),
            },
        }
    }
}

/// The ordering refusal inside a `DbErr` that came from this crate's [`Error`] through
/// `?` (see `From<Error> for DbErr`), if that is what it is.
///
/// ```
/// use ordered_seaorm::{Error, OrderingError, refusal};
///
/// let db_err: sea_orm::DbErr = Error::from(OrderingError::NotFound { id: 7.into() }).into();
/// let e = refusal(&db_err).expect("an ordering refusal");
/// assert_eq!((e.code(), e.status().http()), ("not_found", 404));
/// ```
pub fn refusal(e: &DbErr) -> Option<&ordered_core::Error> {
    match e {
        DbErr::TryIntoErr { source, .. } => source.downcast_ref::<ordered_core::Error>(),
        _ => None,
    }
}

/// A SeaORM error as the core's protocol sees it.
#[derive(Debug)]
pub(crate) struct Db(pub(crate) DbErr);

impl std::fmt::Display for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl ordered_core::adapter::DbFailure for Db {
    fn message(&self) -> String {
        self.0.to_string()
    }
}

impl From<Failure<Db>> for Error {
    fn from(f: Failure<Db>) -> Self {
        match f {
            Failure::Refused(e) => Error::Ordering(e),
            Failure::Database(Db(e)) => Error::Database(e),
            Failure::RetriesExhausted { attempts, last } => Error::RetriesExhausted {
                attempts,
                last: last.0,
            },
            Failure::CommitUnknown(Db(e)) => Error::CommitUnknown(e),
            Failure::ConnectionLost(Db(e)) => Error::ConnectionLost(e),
            Failure::SqliteDeferred(Db(e)) => Error::SqliteDeferred(e),
        }
    }
}
