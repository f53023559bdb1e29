//! The slot the caller's insert fills, one type for every adapter.

use crate::engine::{InsertedId, Reply};
use crate::id::{AppKey, Id};
use crate::position::Position;

/// Where the caller's insert must put the new row: the collection and the position,
/// read in the model's own types.
/// `E` is the client's error type (Diesel's `Error`, SeaORM's `DbErr`), in which a
/// value asked for in the wrong type is reported, so that `?` works in the closure.
pub struct Slot<E> {
    /// The collection (parent key).
    pub parent: Id,
    /// The position.
    pub position: Position,
    id: InsertedId,
    error: fn(String) -> E,
}

impl<E> Slot<E> {
    /// The slot the protocol asked an insert for ([`super::Io::Insert`]); `error`
    /// makes the client's error for a value asked for in the wrong type.
    pub fn new(parent: Id, position: Position, error: fn(String) -> E) -> Self {
        Slot {
            parent,
            position,
            id: InsertedId::default(),
            error,
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
    pub fn scope<K: AppKey>(&self) -> Result<K, E> {
        K::from_key(self.parent).ok_or_else(|| {
            (self.error)(format!(
                "the collection key {} is not of the type asked for",
                self.parent
            ))
        })
    }

    /// The position as an integer (gapped and dense strategies); an error, usable with
    /// `?` in the insert closure, if the table stores keys.
    pub fn int(&self) -> Result<i64, E> {
        self.position
            .as_int()
            .ok_or_else(|| (self.error)("the position is not an integer".into()))
    }

    /// The position as a fractional key; an error, usable with `?` in the insert
    /// closure, if the table stores integers.
    pub fn key(&self) -> Result<String, E> {
        self.position
            .as_key()
            .map(str::to_owned)
            .ok_or_else(|| (self.error)("the position is not a key".into()))
    }

    /// The position as a number ([`crate::Numeric`]), for a `DOUBLE PRECISION` column;
    /// an error, usable with `?` in the insert closure, if the table stores integers or
    /// keys. For a `NUMERIC(p, s)` column, [`decimal`](Self::decimal) is the exact
    /// value.
    pub fn float(&self) -> Result<f64, E> {
        self.position
            .as_num()
            .ok_or_else(|| (self.error)("the position is not a number".into()))
    }

    /// The position as the decimal text of a `NUMERIC(p, s)` column
    /// ([`Numeric::decimal`](crate::Numeric::decimal)): parse it into your decimal type
    /// (`BigDecimal::from_str`, `Decimal::from_str`). The strategy keeps every position
    /// on the column's scale with at most 15 digits, so this text is the exact value.
    pub fn decimal(&self) -> Result<String, E> {
        self.position
            .as_num()
            .map(|v| v.to_string())
            .ok_or_else(|| (self.error)("the position is not a number".into()))
    }
}

impl<E> Clone for Slot<E> {
    fn clone(&self) -> Self {
        Slot {
            parent: self.parent,
            position: self.position.clone(),
            id: self.id.clone(),
            error: self.error,
        }
    }
}

impl<E> std::fmt::Debug for Slot<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("parent", &self.parent)
            .field("position", &self.position)
            .finish_non_exhaustive()
    }
}

impl<E> PartialEq for Slot<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.parent, &self.position, &self.id) == (other.parent, &other.position, &other.id)
    }
}

impl<E> Eq for Slot<E> {}
