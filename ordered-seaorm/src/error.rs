//! The adapter's error type.

use sea_orm::DbErr;

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
}

impl Error {
    /// Whether running the whole operation again may succeed. Inside your own
    /// transaction the library does not retry: roll back and retry yours when this is
    /// true.
    pub fn is_retryable(&self) -> bool {
        match self {
            // a duplicate is not: the library retries one on the position key itself
            // (then reports Inconsistent), and one on another key is the caller's row
            Error::Database(e) => {
                ordered_core::retry::classify_message(&e.to_string())
                    == ordered_core::retry::Class::Retry
            }
            Error::Ordering(e) => e.is_retryable(),
            Error::ConnectionLost(_) => true,
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

/// So that `?` works on this crate's calls inside SeaORM transaction closures.
impl From<Error> for DbErr {
    fn from(e: Error) -> Self {
        match e {
            Error::Database(e) | Error::CommitUnknown(e) | Error::ConnectionLost(e) => e,
            Error::RetriesExhausted { last, .. } => last,
            other => DbErr::Custom(other.to_string()),
        }
    }
}
