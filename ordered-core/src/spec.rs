//! What a model declares about its ordering.

use crate::id::{Id, KeyType};
use crate::strategy::{PositionStrategy, RebalancePolicy};

/// The table that holds a lock row per collection for the tables that have no parent
/// table ([`Spec::without_parent`], [`Spec::global`]): `(table_name, scope_key,
/// version)`, one per database, created by [`crate::migration::create_lock_table`].
pub const LOCK_TABLE: &str = "ordered_locks";

/// A column that splits each parent's items into several lists: the `status` of a
/// board's cards, ordered per `(board_id, status)` ([`Spec::split_by`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScopeColumn {
    /// The column.
    pub name: &'static str,
    /// How it stores its values.
    pub ty: KeyType,
}

impl ScopeColumn {
    /// A scope column of type `ty`.
    pub const fn new(name: &'static str, ty: KeyType) -> ScopeColumn {
        ScopeColumn { name, ty }
    }

    /// A text scope column (a status, a kind).
    pub const fn text(name: &'static str) -> ScopeColumn {
        ScopeColumn::new(name, KeyType::Text)
    }

    /// An integer scope column.
    pub const fn int(name: &'static str) -> ScopeColumn {
        ScopeColumn::new(name, KeyType::Int)
    }
}

/// What a NULL in the scope column means ([`Spec::null_scope`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NullScope {
    /// The scope column is `NOT NULL`.
    #[default]
    Refused,
    /// The rows whose scope is NULL are one more list, the root list ([`Id::ROOT`]):
    /// tasks with no project. Read with `IS NULL`, locked through its lock row like
    /// every other list ([`Spec::with_nullable_scope`]).
    Root,
    /// A tree: NULL is the root list and the scope column holds the key of another row
    /// of the same table (nested checklists, folders). A move to another parent locks
    /// the tree's root list too and is refused with [`Error::WouldCycle`] when the new
    /// parent is the item itself or one of its descendants ([`Spec::tree`]).
    ///
    /// [`Error::WouldCycle`]: crate::Error::WouldCycle
    Tree,
}

/// The names and choices that describe one ordered table. The derives of the adapters
/// build it from the model's attributes; by hand, start from a constructor
/// ([`Spec::new`], [`Spec::link`], [`Spec::tree`], [`Spec::without_parent`],
/// [`Spec::global`]) and change one choice per `with_*` method. Its fields are readable;
/// it is `#[non_exhaustive]`, so a new option is not a breaking change, and
/// [`Spec::checked`] is the one place that refuses an invalid combination.
///
/// ```
/// use ordered_core::{Gapped, RebalancePolicy, Spec};
///
/// const TRACKS: Spec = Spec::new("tracks", "playlist_id", "playlists")
///     .with_version("version")
///     .with_strategy(&Gapped::DEFAULT)
///     .with_policy(RebalancePolicy::Window);
/// assert_eq!(TRACKS.unique_name(), "tracks_playlist_id_position_key");
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
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
    /// More scope columns after `parent`, for a list per several columns: cards per
    /// `(board_id, status)` are `Spec::new("cards", "board_id", "boards")` split by
    /// `status`. A collection is then named by the values of every scope column, in
    /// order (an [`Id::Tuple`], e.g. `(board, "todo")`), and locked on the parent row
    /// its first value names: a move between two lists of one board takes one lock,
    /// between boards both, in key order; the board's version covers all its lists.
    pub split_by: &'static [ScopeColumn],
    /// What a NULL in the scope column means: refused (the default), the root list, or
    /// the root of a tree whose parents are rows of the same table. A nullable scope
    /// needs lock rows ([`Spec::without_parent`], [`Spec::tree`]): the root list has no
    /// parent row to lock.
    pub null_scope: NullScope,
    /// An association table ([`Spec::link`]): the row's key is its scope value and
    /// `id` together (`(playlist_id, track_id)`), so an item is named by both, as an
    /// [`Id::Tuple`] (`Id::from((playlist, track))`), and `id` alone is unique only
    /// within its list.
    pub link: bool,
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
    /// The name of the `UNIQUE (parent, position)` constraint (`UNIQUE (parent,
    /// split_by..., position)` with more scope columns); default
    /// `{table}_{parent}_{position}_key` (every scope column named, in order).
    pub unique: Option<&'static str>,
    /// How positions are chosen.
    pub strategy: &'static dyn PositionStrategy,
    /// What happens when no position fits.
    pub policy: RebalancePolicy,
    /// A tree's removal of a row with rows below it ([`Removal`]).
    pub removal: Removal,
}

/// What removing a tree's row does to the rows below it ([`Spec::with_removal`],
/// or per handle with `removal(..)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Removal {
    /// The database takes them (`ON DELETE CASCADE`); the changes list them removed.
    #[default]
    Cascade,
    /// Refused with [`Error::HasChildren`](crate::Error::HasChildren) while it has any.
    Refuse,
    /// Its children take its place in its list, in their order, then it goes: the
    /// changes list them at their new places (one row each while the gap has room,
    /// else the whole list relabelled).
    Lift,
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
            split_by: &[],
            null_scope: NullScope::Refused,
            link: false,
            filter: None,
            position: "position",
            parent_table,
            parent_id: "id",
            version: None,
            unique: None,
            strategy: &crate::Gapped::DEFAULT,
            policy: RebalancePolicy::Window,
            removal: Removal::Cascade,
        }
    }

    /// An association table: rows of `table` keyed by the pair of the scope column
    /// `scope` (the parent's key, e.g. `playlist_id`) and `item` (e.g. `track_id`),
    /// with no id column of their own, ordered per `scope` and locked on the row of
    /// `parent_table`. An item is named by the pair (`Id::from((playlist, track))`),
    /// and the changes name it so. A link cannot move to another list (its key names
    /// the list): remove it and insert a new one. Give links an id of their own
    /// ([`Spec::new`]) when one item may appear twice in a list (the same track twice
    /// in a playlist).
    ///
    /// ```
    /// use ordered_core::{Id, Spec};
    ///
    /// const ENTRIES: Spec = Spec::link("playlist_tracks", "playlist_id", "playlists", "track_id");
    /// assert!(ENTRIES.check_item(Id::from((7, 42))).is_ok());
    /// assert!(ENTRIES.check_item(Id::from(42)).is_err()); // the track alone names no row
    /// assert_eq!(ENTRIES.link_scope(Id::from((7, 42))), 7);
    /// ```
    pub const fn link(
        table: &'static str,
        scope: &'static str,
        parent_table: &'static str,
        item: &'static str,
    ) -> Spec {
        let mut s = Spec::new(table, scope, parent_table);
        s.id = item;
        s.link = true;
        s
    }

    /// Whether the table is an association table ([`Spec::link`]).
    pub fn is_link(&self) -> bool {
        self.link
    }

    /// The item's own key: the last value of an association row's key (its `id`
    /// column), else the whole key.
    pub fn own_key(&self, item: Id) -> Id {
        if !self.link {
            return item;
        }
        item.parts().last().unwrap_or(item)
    }

    /// The collection an association row's key names (every value but the last).
    pub fn link_scope(&self, item: Id) -> Id {
        let n = item.parts().count();
        Id::tuple(item.parts().take(n.saturating_sub(1))).unwrap_or(Id::GLOBAL)
    }

    /// `item` if it is a key of this table's rows: of the key column's type, or for an
    /// association table a value per scope column then the row's own key.
    pub fn check_item(&self, item: Id) -> Result<Id, crate::Error> {
        if !self.link {
            return item.checked(self.id_type);
        }
        let n = item.parts().count();
        let fits = matches!(item, Id::Tuple(_))
            && n >= 2
            && self.fits_scope(self.link_scope(item))
            && self.own_key(item).fits(self.id_type);
        if fits {
            return Ok(item);
        }
        let columns = self
            .scope_columns()
            .chain(std::iter::once((self.id, self.id_type)))
            .map(|(name, ty)| format!("{name}: {ty}"))
            .collect::<Vec<_>>()
            .join(", ");
        Err(crate::Error::WrongLinkKey { key: item, columns })
    }

    /// A tree: `table`'s rows ordered per `parent`, a nullable column holding the key
    /// of another row of `table` (NULL: the root list, [`Id::ROOT`]). Every list, the
    /// root included, is locked and versioned through its row of the lock table
    /// ([`Spec::without_parent`]); a move to another parent also locks the root list's
    /// row (so moves between parents are serialized per table and a cycle check under
    /// that lock sees every parent change) and refuses a move into the item's own
    /// subtree. The parent column has the key column's type.
    ///
    /// ```
    /// use ordered_core::{Id, KeyType, NullScope, Spec};
    ///
    /// const FOLDERS: Spec = Spec::tree("folders", "parent_id").with_id_type(KeyType::Uuid);
    /// assert_eq!(FOLDERS.null_scope, NullScope::Tree);
    /// assert_eq!(FOLDERS.parent_type, KeyType::Uuid);
    /// assert!(FOLDERS.check_scope(Id::ROOT).is_ok());
    /// ```
    pub const fn tree(table: &'static str, parent: &'static str) -> Spec {
        let mut s = Spec::without_parent(table, parent);
        s.null_scope = NullScope::Tree;
        s
    }

    /// NULL in the scope column is the root list ([`NullScope::Root`]); a table
    /// [without a parent table](Spec::without_parent) only.
    ///
    /// ```
    /// use ordered_core::{Id, Spec};
    ///
    /// const TASKS: Spec = Spec::without_parent("tasks", "project_id").with_nullable_scope();
    /// assert!(TASKS.check_scope(Id::from(None::<i64>)).is_ok());
    /// assert!(TASKS.check_scope(Id::from(Some(7))).is_ok());
    /// ```
    pub const fn with_nullable_scope(mut self) -> Spec {
        if matches!(self.null_scope, NullScope::Refused) {
            self.null_scope = NullScope::Root;
        }
        self
    }

    /// What removing a tree's row does to the rows below it (a tree only; the
    /// default, [`Removal::Cascade`], leaves it to the database's `ON DELETE CASCADE`).
    ///
    /// ```
    /// use ordered_core::{Removal, Spec};
    ///
    /// const CATEGORIES: Spec = Spec::tree("categories", "parent_id").with_removal(Removal::Lift);
    /// assert_eq!(CATEGORIES.removal, Removal::Lift);
    /// ```
    pub const fn with_removal(mut self, removal: Removal) -> Spec {
        self.removal = removal;
        self
    }

    /// Whether NULL in the scope column is a list (the root list, [`Id::ROOT`]).
    pub fn nullable(&self) -> bool {
        self.null_scope != NullScope::Refused
    }

    /// Whether the table is a tree ([`Spec::tree`]).
    pub fn is_tree(&self) -> bool {
        self.null_scope == NullScope::Tree
    }

    /// The items' key column.
    pub const fn with_id(mut self, column: &'static str) -> Spec {
        self.id = column;
        self
    }

    /// How the items' key column stores keys.
    pub const fn with_id_type(mut self, ty: KeyType) -> Spec {
        self.id_type = ty;
        // a tree's parent column holds keys of the same table
        if matches!(self.null_scope, NullScope::Tree) {
            self.parent_type = ty;
        }
        self
    }

    /// How the scope column and the parent table's key store keys.
    pub const fn with_parent_type(mut self, ty: KeyType) -> Spec {
        self.parent_type = ty;
        self
    }

    /// A table ordered per `scope` with no parent table: each collection is locked and
    /// versioned through its row of the lock table ([`LOCK_TABLE`]), which the first
    /// write creates (an upsert that locks and bumps), so any scope value names a
    /// collection, empty or not, and none is ever "not found".
    ///
    /// ```
    /// use ordered_core::{Spec, spec::LOCK_TABLE};
    ///
    /// const TASKS: Spec = Spec::without_parent("tasks", "list_id");
    /// assert!(TASKS.locks_rows());
    /// assert_eq!((TASKS.parent_table, TASKS.version), (LOCK_TABLE, Some("version")));
    /// ```
    pub const fn without_parent(table: &'static str, scope: &'static str) -> Spec {
        let mut s = Spec::new(table, scope, LOCK_TABLE);
        s.parent_id = "scope_key";
        s.version = Some("version");
        s
    }

    /// One list of every row of `table`: no scope column, locked and versioned through
    /// one row of the lock table. Its collection is [`Id::GLOBAL`].
    ///
    /// ```
    /// use ordered_core::{Id, Spec};
    ///
    /// const STEPS: Spec = Spec::global("onboarding_steps");
    /// assert!(STEPS.is_global());
    /// assert!(STEPS.check_scope(Id::GLOBAL).is_ok());
    /// assert!(STEPS.check_scope(Id::from(1)).is_err());
    /// ```
    pub const fn global(table: &'static str) -> Spec {
        Spec::without_parent(table, "")
    }

    /// Whether collections are locked through the lock table ([`Spec::without_parent`]).
    pub fn locks_rows(&self) -> bool {
        self.parent_table == LOCK_TABLE
    }

    /// Whether the table is one list with no scope column ([`Spec::global`]).
    pub fn is_global(&self) -> bool {
        self.parent.is_empty()
    }

    /// The text that names the collection `scope` in the lock table: each scope value
    /// as its length in characters, `:` and its text (empty for the global list).
    pub fn lock_name(&self, scope: Id) -> String {
        let mut out = String::new();
        if self.is_global() {
            return out;
        }
        for p in scope.parts() {
            let t = p.to_string();
            out.push_str(&t.chars().count().to_string());
            out.push(':');
            out.push_str(&t);
        }
        out
    }

    /// More scope columns after `parent` ([`Spec::split_by`]).
    ///
    /// ```
    /// use ordered_core::{Id, KeyType, ScopeColumn, Spec};
    /// use uuid::Uuid;
    ///
    /// const CARDS: Spec = Spec::new("cards", "board_id", "boards")
    ///     .with_parent_type(KeyType::Uuid)
    ///     .with_split_by(&[ScopeColumn::text("status")]);
    /// let board = Uuid::from_u128(1);
    /// let todo = Id::from((board, Id::text("todo")?));
    /// assert!(CARDS.check_scope(todo).is_ok());
    /// assert_eq!(CARDS.lock_key(todo), board); // locked on the board's row
    /// assert!(CARDS.check_scope(board.into()).is_err()); // a list needs both values
    /// assert_eq!(CARDS.unique_name(), "cards_board_id_status_position_key");
    /// # Ok::<(), ordered_core::KeyTooLong>(())
    /// ```
    pub const fn with_split_by(mut self, columns: &'static [ScopeColumn]) -> Spec {
        self.split_by = columns;
        self
    }

    /// The scope columns, `parent` first, with their types (none for a global list).
    pub fn scope_columns(&self) -> impl Iterator<Item = (&'static str, KeyType)> + '_ {
        std::iter::once((self.parent, self.parent_type))
            .filter(|(p, _)| !p.is_empty())
            .chain(self.split_by.iter().map(|c| (c.name, c.ty)))
    }

    /// The key of the parent row that locks the collection `scope`: its first value
    /// (the parent key) for a scope of several columns, else `scope` itself.
    pub fn lock_key(&self, scope: Id) -> Id {
        if self.split_by.is_empty() || self.locks_rows() {
            scope
        } else {
            scope.first()
        }
    }

    /// Whether `scope` names a collection of this table: one value per scope column,
    /// each of the column's type.
    pub fn fits_scope(&self, scope: Id) -> bool {
        if self.nullable() && scope == Id::ROOT {
            return true;
        }
        if self.is_global() {
            return scope == Id::GLOBAL;
        }
        if self.split_by.is_empty() {
            return scope.fits(self.parent_type);
        }
        let mut parts = scope.parts();
        matches!(scope, Id::Tuple(_))
            && self
                .scope_columns()
                .all(|(_, ty)| parts.next().is_some_and(|p| p.fits(ty)))
            && parts.next().is_none()
    }

    /// `scope` if it [fits](Spec::fits_scope), else [`Error::WrongKeyType`] (one scope
    /// column) or [`Error::WrongScope`] (several).
    ///
    /// [`Error::WrongKeyType`]: crate::Error::WrongKeyType
    /// [`Error::WrongScope`]: crate::Error::WrongScope
    pub fn check_scope(&self, scope: Id) -> Result<Id, crate::Error> {
        if self.split_by.is_empty() && !self.is_global() {
            if self.nullable() && scope == Id::ROOT {
                return Ok(scope);
            }
            return scope.checked(self.parent_type);
        }
        if self.fits_scope(scope) {
            return Ok(scope);
        }
        let columns = if self.is_global() {
            "none: the table is one list, named by Id::GLOBAL".to_owned()
        } else {
            self.scope_columns()
                .map(|(name, ty)| format!("{name}: {ty}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        Err(crate::Error::WrongScope { scope, columns })
    }

    /// The rows the lists show ([`Spec::filter`]).
    pub const fn with_filter(mut self, predicate: &'static str) -> Spec {
        self.filter = Some(predicate);
        self
    }

    /// Whether the statements hand keys back as text (either key is not an integer, or
    /// positions are numbers, which come back as exact decimal text): then every item
    /// column of a read, the position included, is text.
    pub fn text_wire(&self) -> bool {
        self.strategy.kind().is_numeric()
            || self.id_type.is_text()
            || self.link
            || self.parent_type.is_text()
            || !self.split_by.is_empty()
            || self.is_global()
            || self.nullable()
    }

    /// What this description cannot be used for, before any statement: a nullable
    /// scope with a parent table (its root list has no parent row to lock) or with more
    /// scope columns.
    pub fn misfit(&self) -> Option<crate::Error> {
        self.checked().err().map(crate::Error::InvalidRequest)
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

    /// The items table's name.
    pub const fn with_table(mut self, table: &'static str) -> Spec {
        self.table = table;
        self
    }

    /// The scope column.
    pub const fn with_parent(mut self, column: &'static str) -> Spec {
        self.parent = column;
        self
    }

    /// The parent table, whose row is locked before every write.
    pub const fn with_parent_table(mut self, table: &'static str) -> Spec {
        self.parent_table = table;
        self
    }

    /// What a NULL in the scope column means ([`Spec::null_scope`]).
    pub const fn with_null_scope(mut self, null_scope: NullScope) -> Spec {
        self.null_scope = null_scope;
        self
    }

    /// Whether the table is an association table ([`Spec::link`]).
    pub const fn with_link(mut self, link: bool) -> Spec {
        self.link = link;
        self
    }

    /// No version column on the parent table.
    pub const fn without_version(mut self) -> Spec {
        self.version = None;
        self
    }

    /// The default name of the unique constraint ([`Spec::unique_name`]).
    pub const fn without_unique(mut self) -> Spec {
        self.unique = None;
        self
    }

    /// Every row is shown: no row filter.
    pub const fn without_filter(mut self) -> Spec {
        self.filter = None;
        self
    }

    /// The description if it can be used, or why not: the one place that refuses an
    /// invalid combination (the derives evaluate it at compile time, and operations
    /// refuse such a description before any statement).
    pub const fn checked(self) -> Result<Spec, &'static str> {
        let nullable = !matches!(self.null_scope, NullScope::Refused);
        let locks_rows = same_str(self.parent_table, LOCK_TABLE);
        let global = self.parent.is_empty();
        if nullable && !locks_rows {
            return Err(
                "a nullable scope (NULL: the root list) has no parent row to lock for its root list: leave out the parent table (each list is then locked in the lock table, `ordered_locks`: Spec::without_parent), or make the table its own parent, a tree (Spec::tree)",
            );
        }
        if self.link && (locks_rows || nullable) {
            return Err(
                "an association table is locked on its parent's row and its scope is part of its key: name a parent table other than its own, and a scope that is not nullable",
            );
        }
        if nullable && (!self.split_by.is_empty() || global) {
            return Err(
                "a nullable scope is one column: a list per several columns, or one global list, cannot have a NULL part",
            );
        }
        Ok(self)
    }

    /// [`Spec::checked`] for a constant, which the derives build: an invalid
    /// combination is a compile-time error with its message. Not for descriptions built
    /// at run time, where it would panic: use [`Spec::checked`] there.
    #[doc(hidden)]
    #[allow(clippy::panic)]
    pub const fn valid(self) -> Spec {
        match self.checked() {
            Ok(s) => s,
            Err(why) => panic!("{}", why),
        }
    }

    /// The name of the unique constraint (or index) on `(parent, position)`.
    pub fn unique_name(&self) -> String {
        match self.unique {
            Some(n) => n.to_owned(),
            None => {
                let mut name = self.table.to_owned();
                for (c, _) in self.scope_columns() {
                    name.push('_');
                    name.push_str(c);
                }
                format!("{name}_{}_key", self.position)
            }
        }
    }
}

/// What decides whether a table's choices can go together: the derives check a model's
/// attribute with [`Shape::check`] before they expand it.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// No scope column: one global list.
    pub global: bool,
    /// The scope column is nullable (NULL: the root list).
    pub nullable: bool,
    /// The parent table is the table itself.
    pub tree: bool,
    /// Collections are locked in the lock table (no parent table, or a tree).
    pub locks_rows: bool,
    /// An association table.
    pub link: bool,
    /// More scope columns after the first.
    pub split: bool,
}

impl Shape {
    /// [`Spec::checked`] of a description of this shape.
    pub fn check(self) -> Result<(), &'static str> {
        const SPLIT: &[ScopeColumn] = &[ScopeColumn::int("split")];
        let parent_table = if self.locks_rows {
            LOCK_TABLE
        } else {
            "parent"
        };
        let scope = if self.global { "" } else { "scope" };
        let null_scope = match (self.nullable, self.tree) {
            (false, _) => NullScope::Refused,
            (true, false) => NullScope::Root,
            (true, true) => NullScope::Tree,
        };
        Spec::new("items", scope, parent_table)
            .with_null_scope(null_scope)
            .with_link(self.link)
            .with_split_by(if self.split { SPLIT } else { &[] })
            .checked()
            .map(|_| ())
    }
}

/// `a == b`, in a `const fn`.
const fn same_str(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Implemented by ordered models (through `#[derive(Ordered)]` in `ordered-diesel` or
/// `#[derive(DeriveOrdered)]` in `ordered-seaorm`): everything the library needs to
/// know about the table.
pub trait Ordered {
    /// The items' key in the model's own type (the id field's; an association table's
    /// key is the pair of its list and its own key): what the operations take and
    /// return.
    type Key: crate::AppKey;
    /// The key of a list in the model's own type (the scope field's; `Option<_>` for a
    /// nullable scope, `None` the root list; a pair or triple for a list per several
    /// columns; `()` for a table that is one list).
    type Scope: crate::AppKey;
    /// The table's ordering description.
    const SPEC: Spec;
}
