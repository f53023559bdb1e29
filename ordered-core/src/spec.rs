//! What a model declares about its ordering.

use crate::strategy::{PositionStrategy, RebalancePolicy};

/// The names and choices that describe one ordered table. The derives of the adapters
/// build it from the model's attributes; it can also be written by hand.
///
/// ```
/// use ordered_core::{Gapped, RebalancePolicy, Spec};
///
/// const TRACKS: Spec = Spec {
///     table: "tracks",
///     id: "id",
///     parent: "playlist_id",
///     position: "position",
///     parent_table: "playlists",
///     parent_id: "id",
///     version: Some("version"),
///     unique: None,
///     strategy: &Gapped::DEFAULT,
///     policy: RebalancePolicy::Window,
/// };
/// assert_eq!(TRACKS.unique_name(), "tracks_playlist_id_position_key");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// The items table.
    pub table: &'static str,
    /// Its primary key column (an integer).
    pub id: &'static str,
    /// The scope column: the parent's key (an integer).
    pub parent: &'static str,
    /// The position column.
    pub position: &'static str,
    /// The parent table, whose row is locked before every write.
    pub parent_table: &'static str,
    /// The parent table's key column.
    pub parent_id: &'static str,
    /// An optional `BIGINT` version column on the parent table, bumped by every write.
    pub version: Option<&'static str>,
    /// The name of the `UNIQUE (parent, position)` constraint; default
    /// `{table}_{parent}_{position}_key`.
    pub unique: Option<&'static str>,
    /// How positions are chosen.
    pub strategy: &'static dyn PositionStrategy,
    /// What happens when no position fits.
    pub policy: RebalancePolicy,
}

impl Spec {
    /// The name of the unique constraint (or index) on `(parent, position)`.
    pub fn unique_name(&self) -> String {
        match self.unique {
            Some(n) => n.to_owned(),
            None => format!("{}_{}_{}_key", self.table, self.parent, self.position),
        }
    }
}

/// Implemented by ordered models (through `#[derive(Ordered)]` in `ordered-diesel` or
/// `#[derive(DeriveOrdered)]` in `ordered-seaorm`): everything the library needs to
/// know about the table.
pub trait Ordered {
    /// The table's ordering description.
    const SPEC: Spec;
}
