//! The adapter's error type.

use diesel::result::{DatabaseErrorKind, Error as DieselError};

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
    Database(#[from] DieselError),
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
}

/// How a database error should be handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// Retry the whole transaction (RELIABILITY.md 3.3).
    Retry,
    /// Retry once: a duplicate on the position key should be impossible under the
    /// protocol, but can be a serialization failure in disguise.
    RetryOnce,
    /// Return it.
    Fatal,
}

pub(crate) fn classify(e: &DieselError) -> Class {
    let DieselError::DatabaseError(kind, info) = e else {
        return Class::Fatal;
    };
    let msg = info.message();
    match kind {
        // PostgreSQL 40001; MySQL 1213 (deadlock, already rolled back by InnoDB)
        DatabaseErrorKind::SerializationFailure => Class::Retry,
        DatabaseErrorKind::UniqueViolation => Class::RetryOnce,
        _ if [
            "deadlock detected",                       // PostgreSQL 40P01
            "could not serialize access",              // PostgreSQL 40001 (unmapped paths)
            "could not obtain lock",                   // PostgreSQL 55P03 (NOWAIT)
            "canceling statement due to lock timeout", // PostgreSQL 55P03
            "Deadlock found",                          // MySQL 1213
            "Lock wait timeout exceeded",              // MySQL 1205: roll back, then retry
            "Record has changed since last read",      // MariaDB 1020 (snapshot isolation)
            "database is locked",                      // SQLITE_BUSY / SQLITE_LOCKED
            "database table is locked",
            "database is busy",
        ]
        .iter()
        .any(|m| msg.contains(m)) =>
        {
            Class::Retry
        }
        _ => Class::Fatal,
    }
}

impl Error {
    /// Whether running the whole operation again may succeed. Inside your own
    /// transaction the library does not retry (it cannot restart a transaction it does
    /// not own): roll back and retry the transaction yourself when this is true.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Database(e) => classify(e) != Class::Fatal,
            Error::Ordering(e) => e.is_retryable(),
            _ => false,
        }
    }

    /// The ordering refusal, if that is what this is.
    pub fn ordering(&self) -> Option<&ordered_core::Error> {
        match self {
            Error::Ordering(e) => Some(e),
            _ => None,
        }
    }
}

/// So that `?` works on this crate's calls inside a `conn.transaction(|conn| ...)`
/// closure whose error type is Diesel's.
impl From<Error> for DieselError {
    fn from(e: Error) -> Self {
        match e {
            Error::Database(e) | Error::CommitUnknown(e) => e,
            Error::RetriesExhausted { last, .. } => last,
            other => DieselError::QueryBuilderError(Box::new(other)),
        }
    }
}
