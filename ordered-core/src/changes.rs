//! Which rows an operation wrote, so that an application can push them to every open
//! client (server-sent events, a WebSocket, an outbox) without re-reading the list.
//!
//! Every [`crate::Outcome`] carries a [`Changes`]: the item itself and every relabelled
//! neighbour with its new collection and position, the removed items, and the new
//! version of each collection the operation locked. A relabel of more rows than the
//! operation's changes limit ([`DEFAULT_LIMIT`] unless the caller sets another) is
//! summarised as a [`Relabelled`] range instead of listed row by row, so memory stays
//! bounded even for a whole-collection rebalance: a client re-reads that range (or the
//! collection).
//!
//! ```
//! use ordered_core::changes::{Change, Changes};
//! use ordered_core::Position;
//!
//! let mut changes = Changes::default();
//! changes.record(Change { id: 7.into(), parent: 1.into(), position: Position::Int(2048) });
//! // a later write of the same row replaces the earlier one
//! changes.record(Change { id: 7.into(), parent: 1.into(), position: Position::Int(1536) });
//! assert_eq!(changes.rows, [Change { id: 7.into(), parent: 1.into(), position: Position::Int(1536) }]);
//! assert!(!changes.is_summarised());
//! ```

use crate::Id;
use crate::error::Error;
use crate::id::AppKey;
use crate::position::Position;

/// Relabels of up to this many rows are listed row by row in [`Changes::rows`]; larger
/// ones are summarised in [`Changes::relabelled`].
pub const DEFAULT_LIMIT: u64 = 1000;

/// One row an operation wrote: its id, its collection and its new position, with the
/// keys in the model's own types (`K` the item's, `P` the list's; [`Id`] for generic
/// code).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Change<K = Id, P = Id> {
    /// The item.
    pub id: K,
    /// Its collection after the operation.
    pub parent: P,
    /// Its position after the operation.
    pub position: Position,
}

/// A relabelled range too large to list (more rows than the changes limit): every row
/// of `parent` whose position now lies in `first..=last` may have moved.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Relabelled<P = Id> {
    /// The collection.
    pub parent: P,
    /// The lowest new position in the range.
    pub first: Position,
    /// The highest new position in the range.
    pub last: Position,
    /// How many rows were relabelled.
    pub rows: u64,
}

/// A version after the operation: the version of the parent row (or lock row) that
/// orders a list's writers. For a table ordered per several columns (cards per
/// `(board, status)`), one parent row, the board, versions all its lists, so `parent`
/// is the parent row's key, not a list's; for any other table it is the list's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ScopeVersion {
    /// The parent row (or the list, where each list has its own lock row).
    pub parent: Id,
    /// Its new version: what a client sends back as the expected version.
    pub version: i64,
}

/// What an operation wrote. See the module docs. The keys are in the model's own types
/// (`K` the item's, `P` the list's), or [`Id`] for generic code.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Changes<K = Id, P = Id> {
    /// The rows written, each once with its final collection and position, ordered by
    /// collection, then position.
    pub rows: Vec<Change<K, P>>,
    /// The items deleted (with a cascade, every row the database deleted with them).
    pub removed: Vec<K>,
    /// Relabels too large to list (see [`Relabelled`]); empty unless the operation
    /// relabelled more rows than its limit.
    pub relabelled: Vec<Relabelled<P>>,
    /// The new version of each parent row the operation locked, in lock order (empty
    /// without a version column; see [`ScopeVersion`] for what it names).
    pub versions: Vec<ScopeVersion>,
}

impl<K, P> Default for Changes<K, P> {
    fn default() -> Self {
        Changes {
            rows: Vec::new(),
            removed: Vec::new(),
            relabelled: Vec::new(),
            versions: Vec::new(),
        }
    }
}

/// `id` as the application's key type `K`; a key of another shape is
/// [`Error::Inconsistent`] (the model's key type does not match its table).
pub fn typed_key<K: AppKey>(id: Id) -> Result<K, Error> {
    K::from_key(id).ok_or_else(|| {
        Error::Inconsistent(format!(
            "the key {id} read back does not fit the model's key type {}",
            std::any::type_name::<K>()
        ))
    })
}

impl<K, P> Changes<K, P> {
    /// Whether some relabel was too large to list ([`Changes::relabelled`] is not
    /// empty): the client must re-read those ranges.
    pub fn is_summarised(&self) -> bool {
        !self.relabelled.is_empty()
    }

    /// The new version of `parent` (a list, or the parent row of a table ordered per
    /// several columns), if the operation locked it and the table has a version column.
    pub fn version_of(&self, parent: &impl AppKey) -> Option<i64> {
        let parent = parent.to_key()?;
        self.versions
            .iter()
            .find(|v| v.parent == parent)
            .map(|v| v.version)
    }

    /// Whether the operation wrote nothing and removed nothing.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty() && self.removed.is_empty() && self.relabelled.is_empty()
    }
}

impl Changes {
    /// These changes with the keys in the model's own types (what the typed
    /// operations return).
    pub fn typed<K: AppKey, P: AppKey>(self) -> Result<Changes<K, P>, Error> {
        Ok(Changes {
            rows: self
                .rows
                .into_iter()
                .map(|c| {
                    Ok(Change {
                        id: typed_key(c.id)?,
                        parent: typed_key(c.parent)?,
                        position: c.position,
                    })
                })
                .collect::<Result<_, Error>>()?,
            removed: self
                .removed
                .into_iter()
                .map(typed_key)
                .collect::<Result<_, _>>()?,
            relabelled: self
                .relabelled
                .into_iter()
                .map(|r| {
                    Ok(Relabelled {
                        parent: typed_key(r.parent)?,
                        first: r.first,
                        last: r.last,
                        rows: r.rows,
                    })
                })
                .collect::<Result<_, Error>>()?,
            versions: self.versions,
        })
    }

    /// Records a row's new place; a later record of the same id replaces it.
    pub fn record(&mut self, change: Change) {
        self.removed.retain(|id| *id != change.id);
        match self.rows.iter_mut().find(|c| c.id == change.id) {
            Some(c) => *c = change,
            None => self.rows.push(change),
        }
    }

    /// [`Changes::record`] for many rows at once, in time linear in the rows (a relabel
    /// read back can list up to the changes limit).
    pub(crate) fn record_all(&mut self, changes: impl IntoIterator<Item = Change>) {
        let mut at: std::collections::HashMap<Id, usize> = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, c)| (c.id, i))
            .collect();
        let mut written = std::collections::HashSet::new();
        for change in changes {
            written.insert(change.id);
            match at.get(&change.id) {
                Some(&i) => self.rows[i] = change,
                None => {
                    at.insert(change.id, self.rows.len());
                    self.rows.push(change);
                }
            }
        }
        if !self.removed.is_empty() {
            self.removed.retain(|id| !written.contains(id));
        }
    }

    /// Records a deleted row.
    pub fn remove(&mut self, id: Id) {
        self.rows.retain(|c| c.id != id);
        if !self.removed.contains(&id) {
            self.removed.push(id);
        }
    }

    /// Sorts the rows by collection, then position (the order the engine reports).
    pub(crate) fn sort(&mut self) {
        self.rows
            .sort_by(|a, b| (a.parent, &a.position, a.id).cmp(&(b.parent, &b.position, b.id)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_removed_row_leaves_the_rows_and_a_rewritten_one_leaves_the_removed() {
        let mut c = Changes::default();
        c.record(Change {
            id: Id::Int(1),
            parent: Id::Int(9),
            position: Position::Int(5),
        });
        c.remove(Id::Int(1));
        assert!(c.rows.is_empty());
        assert_eq!(c.removed, [1]);
        c.record(Change {
            id: Id::Int(1),
            parent: Id::Int(8),
            position: Position::Int(3),
        });
        assert!(c.removed.is_empty());
        assert_eq!(c.rows.len(), 1);
    }

    #[test]
    fn recording_many_rows_at_once_is_recording_them_one_by_one() {
        let change = |id: Id, pos: i64| Change {
            id,
            parent: Id::Int(1),
            position: Position::Int(pos),
        };
        let batch = [
            change(Id::Int(3), 10),
            change(Id::Int(1), 20),
            change(Id::Int(3), 30),
            change(Id::Int(4), 40),
        ];
        let mut one = Changes::default();
        let mut all = Changes::default();
        for c in [&mut one, &mut all] {
            c.record(change(Id::Int(1), 5));
            c.remove(Id::Int(4));
            c.remove(Id::Int(7));
        }
        for ch in batch.clone() {
            one.record(ch);
        }
        all.record_all(batch);
        assert_eq!(one, all);
        assert_eq!(all.removed, [7]);
        assert_eq!(all.rows.iter().map(|c| c.id).collect::<Vec<_>>(), [1, 3, 4]);
    }

    #[test]
    fn rows_sort_by_collection_then_position() {
        let mut c = Changes::default();
        for (id, parent, p) in [(1, 2, 10), (2, 1, 30), (3, 1, 20)] {
            c.record(Change {
                id: Id::Int(id),
                parent: Id::Int(parent),
                position: Position::Int(p),
            });
        }
        c.sort();
        let ids: Vec<Id> = c.rows.iter().map(|r| r.id).collect();
        assert_eq!(ids, [3, 2, 1]);
        assert_eq!(c.version_of(&Id::Int(1)), None);
    }
}
