//! The adapter's error type.

use diesel::result::{DatabaseErrorKind, Error as DieselError};
pub use ordered_core::error::Status;

ordered_core::adapter_error! {
    client: DieselError, db: Db;
    retryable: |e| classify(e) == Class::Retry;
    lost: crate::ops::connection_lost;
    // Diesel has no error of its own for it: a busy database, retryable
    deferred: Database;
    extra: {}
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
