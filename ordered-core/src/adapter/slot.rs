//! The slot the caller's insert fills, one type for every adapter.

use std::marker::PhantomData;

use crate::engine::{InsertedId, Reply};
use crate::id::{Id, ScopeKey};
use crate::position::Position;

/// How an adapter's [`Slot`] reports a value asked for in the wrong type: as the
/// client's own error, so that `?` works in the caller's insert closure.
pub trait SlotError {
    /// The client's error type (Diesel's `Error`, SeaORM's `DbErr`).
    type Error;
    /// The error saying `message`.
    fn error(message: String) -> Self::Error;
}

/// Where the caller's insert must put the new row: the collection and the position,
/// read in the model's own types.
pub struct Slot<M> {
    /// The collection (parent key).
    pub parent: Id,
    /// The position.
    pub position: Position,
    id: InsertedId,
    client: PhantomData<fn() -> M>,
}

impl<M: SlotError> Slot<M> {
    /// The slot the protocol asked an insert for ([`super::Io::Insert`]).
    pub fn new(parent: Id, position: Position) -> Self {
        Slot {
            parent,
            position,
            id: InsertedId::default(),
            client: PhantomData,
        }
    }

    /// Tells the library the id of the row your insert created (from `RETURNING id` on
    /// PostgreSQL and SQLite), which saves the statement that reads it back by its slot
    /// for the outcome's changes. It must be the new row's id: the changes and the hook
    /// report it as given (for an association table, [`crate::Spec::link`], the pair of
    /// its list and its own key: `Id::from((playlist, track))`).
    pub fn inserted_id(&self, id: impl Into<Id>) {
        self.id.set(id.into());
    }

    /// The reply to the insert: with the id when the insert reported it.
    pub fn reply(&self) -> Reply {
        self.id.reply()
    }

    /// The collection key as the model's scope type (`i64`, `i32`, `i16`, `Uuid` or
    /// `String`), for the insert's scope column; an error, usable with `?` in the insert
    /// closure, if the key is of another type.
    pub fn scope<K: ScopeKey>(&self) -> Result<K, M::Error> {
        K::from_scope(self.parent).ok_or_else(|| {
            M::error(format!(
                "the collection key {} is not of the type asked for",
                self.parent
            ))
        })
    }

    /// The position as an integer (gapped and dense strategies); an error, usable with
    /// `?` in the insert closure, if the table stores keys.
    pub fn int(&self) -> Result<i64, M::Error> {
        self.position
            .as_int()
            .ok_or_else(|| M::error("the position is a key, not an integer".into()))
    }

    /// The position as a fractional key; an error, usable with `?` in the insert
    /// closure, if the table stores integers.
    pub fn key(&self) -> Result<String, M::Error> {
        self.position
            .as_key()
            .map(str::to_owned)
            .ok_or_else(|| M::error("the position is an integer, not a key".into()))
    }
}

impl<M> Clone for Slot<M> {
    fn clone(&self) -> Self {
        Slot {
            parent: self.parent,
            position: self.position.clone(),
            id: self.id.clone(),
            client: PhantomData,
        }
    }
}

impl<M> std::fmt::Debug for Slot<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("parent", &self.parent)
            .field("position", &self.position)
            .finish_non_exhaustive()
    }
}

impl<M> PartialEq for Slot<M> {
    fn eq(&self, other: &Self) -> bool {
        (self.parent, &self.position, &self.id) == (other.parent, &other.position, &other.id)
    }
}

impl<M> Eq for Slot<M> {}
