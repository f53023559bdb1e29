//! The adapter's error type.

use diesel::result::{DatabaseErrorKind, Error as DieselError};
use ordered_core::adapter::{Failure, Kind};
pub use ordered_core::error::Status;

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why an ordered operation failed. In every case the collection is as it was before the
/// call (the library's transaction, or savepoint, was rolled back), except
/// [`Error::CommitUnknown`], where the commit itself may or may not have happened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The request was refused: stale neighbours, a version conflict, a missing item...
    /// Match on the [`ordered_core::Error`] to tell the user what to do.
    #[error(transparent)]
    Ordering(#[from] ordered_core::Error),
    /// The database failed. [`Error::is_retryable`] tells whether a new attempt may
    /// succeed (deadlock, serialization failure, lock timeout, `SQLITE_BUSY`).
    #[error("database error: {0}")]
    Database(DieselError),
    /// Every attempt failed with a retryable error; the last one is kept.
    #[error("gave up after {attempts} attempts: {last}")]
    RetriesExhausted {
        /// Attempts made.
        attempts: u32,
        /// The last error.
        last: DieselError,
    },
    /// The connection failed while committing: the operation may or may not have been
    /// applied. Re-read the collection before repeating it (a blind retry could apply a
    /// relative move twice).
    #[error("the commit outcome is unknown ({0}); re-read the collection before retrying")]
    CommitUnknown(DieselError),
    /// The connection failed before the commit (killed, network cut, server restart):
    /// the server rolled the transaction back, so nothing was applied. Retry on a new
    /// connection ([`Error::is_retryable`] is true).
    #[error(
        "the connection was lost before the commit ({0}); nothing was applied: reconnect and retry"
    )]
    ConnectionLost(DieselError),
}

pub(crate) use ordered_core::adapter::retry::Class;

/// Classifies a Diesel error: Diesel's own kinds first, then the
/// engine's message, which is all Diesel exposes for deadlocks and `SQLITE_BUSY`.
pub(crate) fn classify(e: &DieselError) -> Class {
    match e {
        // PostgreSQL 40001; MySQL 1213 (deadlock, already rolled back by InnoDB)
        DieselError::DatabaseError(DatabaseErrorKind::SerializationFailure, _) => Class::Retry,
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _) => Class::RetryOnce,
        DieselError::DatabaseError(_, info) => {
            ordered_core::adapter::retry::classify_message(info.message())
        }
        _ => Class::Fatal,
    }
}

impl Error {
    fn kind(&self) -> Kind<'_> {
        match self {
            Error::Ordering(e) => Kind::Refused(e),
            Error::Database(e) => Kind::Database {
                retryable: classify(e) == Class::Retry,
            },
            Error::RetriesExhausted { .. } => Kind::RetriesExhausted,
            Error::CommitUnknown(_) => Kind::CommitUnknown,
            Error::ConnectionLost(_) => Kind::ConnectionLost,
        }
    }

    /// Whether running the whole operation again may succeed. Inside your own
    /// transaction the library does not retry (it cannot restart a transaction it does
    /// not own): roll back and retry the transaction yourself when this is true.
    pub fn is_retryable(&self) -> bool {
        self.kind().is_retryable()
    }

    /// The ordering refusal, if that is what this is.
    pub fn ordering(&self) -> Option<&ordered_core::Error> {
        match self {
            Error::Ordering(e) => Some(e),
            _ => None,
        }
    }

    /// A stable machine-readable code: the refusal's
    /// [`code`](ordered_core::Error::code) (`stale_neighbours`, `version_conflict`,
    /// `not_found`, ...), or for a database failure `database_busy` (retryable),
    /// `database_error`, `retries_exhausted`, `commit_unknown`, `connection_lost`.
    pub fn code(&self) -> &'static str {
        self.kind().code()
    }

    /// What the failure means for the client ([`Status::http`] maps it to HTTP):
    /// a refusal's own status; `RetryLater` for a busy database, exhausted retries and
    /// a lost connection; `Conflict` for an unknown commit outcome (the client re-reads
    /// the list before repeating the gesture); `Internal` for any other database error.
    ///
    /// ```
    /// use ordered_diesel::{Error, OrderingError, Status};
    ///
    /// let e = Error::from(OrderingError::VersionConflict { parent: 1.into(), expected: 3, actual: 4 });
    /// assert_eq!((e.code(), e.status().http()), ("version_conflict", 409));
    /// ```
    pub fn status(&self) -> Status {
        self.kind().status()
    }
}

/// A Diesel error as this crate reports it: a lost connection, or one Diesel has marked
/// broken, is [`Error::ConnectionLost`] (also when your own `conn.transaction(..)` with
/// this error type fails to roll back on a dead connection), anything else
/// [`Error::Database`].
impl From<DieselError> for Error {
    fn from(e: DieselError) -> Self {
        if crate::ops::connection_lost(&e) {
            Error::ConnectionLost(e)
        } else {
            Error::Database(e)
        }
    }
}

/// So that `?` works on this crate's calls inside a `conn.transaction(|conn| ...)`
/// closure whose error type is Diesel's.
impl From<Error> for DieselError {
    fn from(e: Error) -> Self {
        match e {
            Error::Database(e) | Error::CommitUnknown(e) | Error::ConnectionLost(e) => e,
            Error::RetriesExhausted { last, .. } => last,
            other => DieselError::QueryBuilderError(Box::new(other)),
        }
    }
}

/// A Diesel error as the core's protocol sees it.
#[derive(Debug)]
pub(crate) struct Db(pub(crate) DieselError);

impl std::fmt::Display for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl ordered_core::adapter::DbFailure for Db {
    fn message(&self) -> String {
        match &self.0 {
            DieselError::DatabaseError(_, info) => info.message().to_owned(),
            e => e.to_string(),
        }
    }

    fn class(&self) -> Class {
        classify(&self.0)
    }

    fn is_connection_lost(&self) -> bool {
        crate::ops::connection_lost(&self.0)
    }

    fn is_from_server(&self) -> bool {
        matches!(self.0, DieselError::DatabaseError(..))
    }
}

impl From<Failure<Db>> for Error {
    fn from(f: Failure<Db>) -> Self {
        match f {
            Failure::Refused(e) => Error::Ordering(e),
            // Diesel has no error of its own for it: a busy database, retryable
            Failure::Database(Db(e)) | Failure::SqliteDeferred(Db(e)) => Error::Database(e),
            Failure::RetriesExhausted { attempts, last } => Error::RetriesExhausted {
                attempts,
                last: last.0,
            },
            Failure::CommitUnknown(Db(e)) => Error::CommitUnknown(e),
            Failure::ConnectionLost(Db(e)) => Error::ConnectionLost(e),
        }
    }
}
