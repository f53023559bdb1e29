//! The adapter's error type.

use std::sync::Arc;

use sea_orm::DbErr;

use ordered_core::adapter::Class;
use ordered_core::adapter::retry::classify_message;
pub use ordered_core::error::Status;

ordered_core::adapter_error! {
    client: DbErr, db: Db;
    retryable: |e: &DbErr| classify_message(&e.to_string()) == Class::Retry;
    // as `#[from]` did: a `DbErr` your code converts stays a database error
    lost: |_: &DbErr| false;
    deferred: SqliteDeferred;
    extra: {
        /// SQLite answered `database is locked` inside your own transaction: a DEFERRED
        /// transaction (what `db.begin()` opens) that has read cannot take the write lock
        /// while another connection writes, however long it waits. Nothing of the
        /// operation was applied. Open your transactions with [`crate::begin`] (`BEGIN
        /// IMMEDIATE`) and retry yours ([`Error::is_retryable`] is true).
        #[error(
            "SQLite refused the write inside your transaction (database is locked): open the transaction with ordered_seaorm::begin (BEGIN IMMEDIATE) and retry it ({0})"
        )]
        SqliteDeferred(DbErr) => SqliteDeferred,
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

impl ordered_core::adapter::DbFailure for Db {
    fn message(&self) -> String {
        self.0.to_string()
    }
}
