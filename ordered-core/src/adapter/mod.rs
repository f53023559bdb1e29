//! The contract between the core and an adapter (`ordered-diesel`, `ordered-seaorm`, or
//! one of your own for another client): everything here is plumbing an application
//! does not use.
//!
//! An adapter writes four things, and decides nothing:
//! 1. executing a [`Statement`] and decoding its rows into a [`Reply`] (seven row shapes,
//!    [`Returns`], as [`Wire`] says);
//! 2. opening, committing and rolling back a transaction or savepoint when asked;
//! 3. running the caller's insert and hook;
//! 4. one loop that feeds a [`Protocol`] and sleeps when it says so, on its own clock.
//!
//! [`Protocol`] decides everything else: the Galera probe, the transaction or the
//! savepoint, the operation's statements ([`Operation`], the protocol of one attempt),
//! the Galera checks, `COMMIT` and `ROLLBACK`, the classification of failures, the
//! pauses and the retries, and the statement sequences of the reads.

mod catalogue;
mod error;
#[path = "../observe.rs"]
pub mod observe;
mod protocol;
#[path = "../retry.rs"]
pub mod retry;
mod slot;
#[path = "../sql/mod.rs"]
pub mod sql;

/// What a key that cannot be an [`Id`](crate::Id) is refused with.
pub(crate) fn key_refused() -> crate::Error {
    crate::Error::InvalidRequest(
        "a key that no row can have: a string longer than 255 bytes, or bytes that are not a UUID",
    )
}

/// A key of the application's type as an [`Id`](crate::Id) (the typed operations'
/// arguments).
pub fn key<K: crate::AppKey>(k: &K) -> Result<crate::Id, crate::Error> {
    k.to_key().ok_or_else(key_refused)
}

/// [`key`] of an optional neighbour (`None`: the end of the list).
pub fn opt_key<K: crate::AppKey>(k: &Option<K>) -> Result<Option<crate::Id>, crate::Error> {
    k.as_ref().map(key).transpose()
}

/// A page cursor with its row's id as an [`Id`](crate::Id) (what [`Job::Page`] takes).
pub fn cursor<K: crate::AppKey>(c: &crate::Cursor<K>) -> Result<crate::Cursor, crate::Error> {
    Ok(c.clone_with(key(&c.id)?))
}

/// [`key`] of each key, in order.
pub fn keys<K: crate::AppKey>(ks: &[K]) -> Result<Vec<crate::Id>, crate::Error> {
    ks.iter().map(key).collect()
}

pub use catalogue::Reborrow;
pub use protocol::{DbFailure, Failure, Feed, Finished, Io, Job, Kind, Protocol};
pub use slot::Slot;

pub use crate::engine::{Action, Controls, FinalStatement, InsertedId, Operation, Reply, Settings};
pub use crate::retry::Class;
pub use crate::sql::{Arg, DecodeError, Dialect, Returns, Statement, Wire};
