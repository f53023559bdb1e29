//! What a model declares about its ordering.

use crate::id::KeyType;
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
///     id_type: ordered_core::KeyType::Int,
///     parent_type: ordered_core::KeyType::Int,
///     filter: None,
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
    /// Its primary key column.
    pub id: &'static str,
    /// The scope column: the parent's key.
    pub parent: &'static str,
    /// How the key column stores keys (integers by default).
    pub id_type: KeyType,
    /// How the scope column (and the parent table's key) stores keys.
    pub parent_type: KeyType,
    /// Which rows the lists show: an SQL predicate on the items table naming only its
    /// columns (e.g. `archived_at IS NULL`), or `None` for every row. Rows outside it
    /// (archived, soft-deleted) keep their positions, stay unique and are relabelled
    /// with the rest, but `list`, `index_of`, index placement, `move_up`/`move_down` and
    /// the adjacency check of `Between` ignore them.
    pub filter: Option<&'static str>,
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
    /// A table `table` ordered per `parent` (the scope column), locked on the row of
    /// `parent_table` with that key, with the defaults the derives use: key columns
    /// `id`, position column `position`, no version column, the default unique
    /// constraint name, [`Gapped`](crate::Gapped) positions and the window policy. The
    /// `with_*` methods change one choice each; everything is `const`, so a migration
    /// crate that cannot see the entity writes the same description in one expression.
    ///
    /// ```
    /// use ordered_core::{Fractional, Spec};
    ///
    /// const CARDS: Spec = Spec::new("cards", "column_id", "columns")
    ///     .with_version("version")
    ///     .with_strategy(&Fractional::DEFAULT);
    /// assert_eq!((CARDS.position, CARDS.version), ("position", Some("version")));
    /// ```
    pub const fn new(
        table: &'static str,
        parent: &'static str,
        parent_table: &'static str,
    ) -> Spec {
        Spec {
            table,
            id: "id",
            parent,
            id_type: KeyType::Int,
            parent_type: KeyType::Int,
            filter: None,
            position: "position",
            parent_table,
            parent_id: "id",
            version: None,
            unique: None,
            strategy: &crate::Gapped::DEFAULT,
            policy: RebalancePolicy::Window,
        }
    }

    /// The items' key column.
    pub const fn with_id(mut self, column: &'static str) -> Spec {
        self.id = column;
        self
    }

    /// How the items' key column stores keys.
    pub const fn with_id_type(mut self, ty: KeyType) -> Spec {
        self.id_type = ty;
        self
    }

    /// How the scope column and the parent table's key store keys.
    pub const fn with_parent_type(mut self, ty: KeyType) -> Spec {
        self.parent_type = ty;
        self
    }

    /// The rows the lists show ([`Spec::filter`]).
    pub const fn with_filter(mut self, predicate: &'static str) -> Spec {
        self.filter = Some(predicate);
        self
    }

    /// Whether the statements hand keys back as text (either key is not an integer):
    /// then every item column of a read, the position included, is text.
    pub fn text_wire(&self) -> bool {
        self.id_type.is_text() || self.parent_type.is_text()
    }

    /// The position column.
    pub const fn with_position(mut self, column: &'static str) -> Spec {
        self.position = column;
        self
    }

    /// The parent table's key column.
    pub const fn with_parent_id(mut self, column: &'static str) -> Spec {
        self.parent_id = column;
        self
    }

    /// The parent table's `BIGINT` version column.
    pub const fn with_version(mut self, column: &'static str) -> Spec {
        self.version = Some(column);
        self
    }

    /// The name of the `UNIQUE (parent, position)` constraint.
    pub const fn with_unique(mut self, name: &'static str) -> Spec {
        self.unique = Some(name);
        self
    }

    /// The position strategy.
    pub const fn with_strategy(mut self, strategy: &'static dyn PositionStrategy) -> Spec {
        self.strategy = strategy;
        self
    }

    /// The rebalance policy.
    pub const fn with_policy(mut self, policy: RebalancePolicy) -> Spec {
        self.policy = policy;
        self
    }

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
