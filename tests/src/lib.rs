//! The scripted scenarios both adapters run (see `tests/conformance.rs`), each on a
//! table [`Schema`]: the key types of its items and collections, and its positions.

use ordered_core::{Id, KeyType, Placement};

/// The shape of a script's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schema {
    /// Positions are fractional keys (else gapped integers with a tight spacing).
    pub keys: bool,
    /// The items' key type.
    pub id: KeyType,
    /// The collections' key type (the scope column and the parent table's key).
    pub parent: KeyType,
    /// Integer keys are 32-bit columns (`INTEGER`, `SERIAL`) instead of `BIGINT`.
    pub int32: bool,
    /// The items have an `archived` column and the lists show the rows where it is 0
    /// (the row filter `archived = 0`).
    pub hidden: bool,
    /// The items are ordered per `(parent_id, status)`: a list per parent and status
    /// (the composite scope), locked on the parent row. Collection 1 is `(1, "todo")`,
    /// 2 is `(1, "done")`, 3 is `(2, "todo")`, any other `n` is `(n, "todo")`.
    pub split: bool,
    /// No parent table: the collections are locked and versioned in the lock table,
    /// and any scope value names one (collection 3 is never written before the script
    /// moves into it).
    pub no_parent: bool,
    /// One global list: no scope column, no parent table; every collection number
    /// names [`Id::GLOBAL`].
    pub global: bool,
    /// The table starts as an app's own: a plain nullable integer `position` column the
    /// app ordered by itself (duplicates, gaps, a NULL) and four rows in collection 1,
    /// one in 2, which the library's adoption migration (`adopt_ordering`) takes over.
    /// The seeded rows are items 0 to 4, in the order they were inserted.
    pub adopt: bool,
    /// A tree ([`ordered_core::Spec::tree`]): the scope column holds the key of another
    /// row of the same table, NULL for the root list. Collection 0 is the root list;
    /// collection `n > 0` the children of the item created `n - 1`th.
    pub tree: bool,
    /// An association table ([`ordered_core::Spec::link`]): rows keyed by
    /// `(parent_id, id)`, so item `n`'s own key is `n / 2 + 1` (the scripts insert
    /// even items into collection 1 and odd ones into 2: the same key in both lists),
    /// and an item is named by its collection and that key.
    pub link: bool,
    /// The items' `title` column has a unique index of the application's (every insert
    /// of the scripts has the same title, so a second one breaks it).
    pub unique_title: bool,
    /// As [`Schema::adopt`], but not adopted yet: the script adopts the table itself
    /// ([`Step::Adopt`]). Items 0 to 4 are the seeded rows.
    pub own: bool,
    /// The app's parent table already has the version column (each parent row at
    /// version 41), which the adoption keeps.
    pub parent_version: bool,
    /// The position column is a 32-bit `INTEGER` (PostgreSQL, MySQL/MariaDB; SQLite's
    /// `INTEGER` is 64-bit).
    pub int32_position: bool,
    /// A tree whose parent foreign key is `ON DELETE SET NULL` instead of `CASCADE`.
    pub set_null: bool,
    /// Positions are numbers: `DOUBLE PRECISION` with a tight spacing ([`Numbers::Float`]),
    /// `NUMERIC(9, 2)` ([`Numbers::Decimal`]), or the app's own Trello-style float
    /// column before adoption ([`Numbers::Trello`], with [`Schema::own`]).
    pub numbers: Numbers,
    /// The app's own table kept as a linked list (`prev_id` or `next_id`, by the
    /// [`Link`](ordered_core::linked::Link)), before the expand step added a nullable
    /// position column: three lists of rows with explicit ids 101 and up (items 0 and
    /// up), seeded as [`Linked`] says.
    pub linked: Option<(ordered_core::linked::Link, Linked)>,
}

/// The seeds of a linked-list table ([`Schema::linked`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Linked {
    /// Three chains: list 1 `103 101 105 102 104`, list 2 `107 106`, list 3 `108`.
    Chains,
    /// List 1: head 101, then 102; a cycle 103 <-> 104; 105 names a row that does not
    /// exist (998); 106 after 105 (unreachable). List 2: two heads 107 and 108, 109
    /// after 108. List 3: a chain `110 111`.
    Broken,
}

impl Linked {
    /// The seeded rows: `(id, list, the row before it in chain order)`.
    pub fn rows(self) -> Vec<(i64, i64, Option<i64>)> {
        match self {
            Linked::Chains => vec![
                (101, 1, Some(103)),
                (102, 1, Some(105)),
                (103, 1, None),
                (104, 1, Some(102)),
                (105, 1, Some(101)),
                (106, 2, Some(107)),
                (107, 2, None),
                (108, 3, None),
            ],
            Linked::Broken => vec![
                (101, 1, None),
                (102, 1, Some(101)),
                (103, 1, Some(104)),
                (104, 1, Some(103)),
                (105, 1, Some(998)),
                (106, 1, Some(105)),
                (107, 2, None),
                (108, 2, None),
                (109, 2, Some(108)),
                (110, 3, None),
                (111, 3, Some(110)),
            ],
        }
    }
}

/// What a numeric script's positions are ([`Schema::numbers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numbers {
    /// Not numbers.
    No,
    /// Floats 8 apart, a gap full under 1/16.
    Float,
    /// `NUMERIC(9, 2)` 1.00 apart, a gap full under 0.01.
    Decimal,
    /// Floats 65,535 apart (the default), adopted from the app's own column: list 1
    /// holds `65535, 131070, 98302.5, 114686.25, 196605` (kept), list 2 `65535, 65535,
    /// -1, NULL` (a shared value, a negative one and a missing one: renumbered in the
    /// order -1, the two 65535 by id, NULL). Items 0 to 8 are the seeded rows.
    Trello,
}

impl Schema {
    /// `BIGINT` keys, integer positions.
    pub const INTS: Schema = Schema {
        keys: false,
        id: KeyType::Int,
        parent: KeyType::Int,
        int32: false,
        hidden: false,
        split: false,
        no_parent: false,
        global: false,
        adopt: false,
        tree: false,
        link: false,
        unique_title: false,
        own: false,
        parent_version: false,
        int32_position: false,
        set_null: false,
        numbers: Numbers::No,
        linked: None,
    };
    /// `BIGINT` keys, fractional-key positions.
    pub const KEYS: Schema = Schema {
        keys: true,
        ..Schema::INTS
    };

    /// The key of collection number `p` (1, 2, or a missing one; 3 too when split).
    pub fn parent(&self, p: i64) -> Id {
        if self.global {
            return Id::GLOBAL;
        }
        if self.tree {
            return match p {
                0 => Id::ROOT,
                n => key(self.id, n.unsigned_abs(), "card"),
            };
        }
        if !self.split {
            return key(self.parent, p.unsigned_abs(), "list");
        }
        let (board, status) = match p {
            1 => (1, "todo"),
            2 => (1, "done"),
            3 => (2, "todo"),
            n => (n.unsigned_abs(), "todo"),
        };
        let status = Id::text(status).unwrap_or(Id::Int(0));
        Id::from((key(self.parent, board, "list"), status))
    }

    /// The collections the scripts use (what the final lists and `verify` cover).
    pub fn collections(&self) -> Vec<i64> {
        if self.linked.is_some() {
            vec![1, 2, 3]
        } else if self.global {
            vec![1]
        } else if self.tree {
            (0..=8).collect()
        } else if self.no_parent {
            vec![1, 2, 3, 77]
        } else if self.split {
            vec![1, 2, 3]
        } else {
            vec![1, 2]
        }
    }

    /// The collections whose rows all have positions once the script ran (what the final
    /// lists and `verify` read): all of them, but for a linked list whose broken lists
    /// the conversion left without positions.
    pub fn settled(&self) -> Vec<i64> {
        match self.linked {
            Some((_, Linked::Broken)) => vec![3],
            _ => self.collections(),
        }
    }

    /// The key the application chooses for the `n`th item created, or `None` when the
    /// database chooses it (an auto-increment integer).
    pub fn item(&self, n: usize) -> Option<Id> {
        if self.link {
            return Some(key(self.id, n as u64 / 2 + 1, "track"));
        }
        match self.id {
            KeyType::Int => None,
            ty => Some(key(ty, n as u64 + 1, "card")),
        }
    }

    /// A key of another type than the items' (a string for integer keys, an integer
    /// for the others): refused before anything is read.
    pub fn wrong(&self) -> Id {
        match self.id {
            KeyType::Int => Id::text("not-a-number").unwrap_or(Id::Int(0)),
            _ => Id::Int(5),
        }
    }

    /// A collection value of the wrong shape: a parent key alone for a table split by
    /// more scope columns, a key for a global list.
    pub fn wrong_scope(&self) -> Id {
        if self.global {
            Id::Int(1)
        } else {
            self.parent(1).first()
        }
    }

    /// A key of the items' type that no item has.
    pub fn missing(&self) -> Id {
        let own = key(self.id, 999_999, "card");
        if self.link {
            return Id::tuple([self.parent(1), own]).unwrap_or(own);
        }
        own
    }
}

/// The `n`th key of type `ty`: UUIDs scattered over the whole range (so that their
/// byte order is not their creation order), strings with a prefix.
fn key(ty: KeyType, n: u64, prefix: &str) -> Id {
    match ty {
        KeyType::Int => Id::Int(n as i64),
        KeyType::Uuid | KeyType::UuidText => Id::Uuid(ordered_core::id::Uuid::from_u128(
            u128::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835),
        )),
        KeyType::Text => Id::text(&format!("{prefix}-{n:03}")).unwrap_or(Id::Int(0)),
    }
}

/// One step of a script. Items are named by their creation index, so that both ORMs,
/// starting from fresh tables, refer to the same rows; collections by their number
/// ([`Schema::parent`] gives their key).
#[derive(Debug, Clone)]
pub enum Step {
    /// Insert a new item.
    Insert(i64, At),
    /// Move an item within its collection.
    Move(usize, At),
    /// Move an item to another collection.
    MoveTo(usize, i64, At),
    /// Move with an expected parent version.
    MoveExpecting(usize, At, i64),
    /// Swap two items.
    Swap(usize, usize),
    /// Remove an item.
    Remove(usize),
    /// Reorder a collection (creation indexes in the wanted order).
    Reorder(i64, Vec<usize>),
    /// Rebalance a collection.
    Rebalance(i64),
    /// Move an item after a key of the wrong type ([`Schema::wrong`]).
    MoveAfterWrongKey(usize),
    /// Archive an item outside the library (`archived = 1`): the lists stop showing it.
    Archive(usize),
    /// Move an item one place up, as the list shows it.
    MoveUp(usize),
    /// Move an item to a collection value of the wrong shape ([`Schema::wrong_scope`]):
    /// refused with `WrongScope`.
    MoveToWrongScope(usize),
    /// Move an item within its collection, the request naming the list the client saw
    /// (`within`).
    MoveWithin(usize, At, i64),
    /// Move an item to another collection, the request naming the list the client saw.
    MoveToWithin(usize, i64, At, i64),
    /// Insert with the key the application chose for item `i` (for an association
    /// table, item `i`'s own key: the same link again in the same list).
    InsertAs(i64, At, usize),
    /// Remove an item, the request naming the list the client saw.
    RemoveWithin(usize, i64),
    /// Read a collection as the application's own rows (`list_models`), checked against
    /// the library's versioned read.
    ListModels(i64),
    /// Move with a version that falls back to the neighbour check
    /// (`Concurrency::VersionOrNeighbours`).
    MoveVersionOrNeighbours(usize, At, i64),
    /// `ensure_ordering`: the outcome's position is the mask of what it added
    /// ([`fixes_mask`]).
    Ensure,
    /// `adopt_ordering` in the column's own order: the outcome's position is the mask
    /// of what it added.
    Adopt,
    /// `check_schema`.
    CheckSchema,
    /// The app drops the unique constraint on `(scope, position)`, as SeaORM 2.0's
    /// entity-first schema sync does at every start.
    DropUnique,
    /// The app writes this position (`None`: NULL) into an item's row around the
    /// library: the scripts expect the schema to refuse it.
    WriteAround(usize, Option<i64>),
    /// The app writes this number into an item's position around the library: a value
    /// the database takes (the temporary range below 0 is inside the column's CHECK)
    /// but the numeric strategy refuses when it reads it.
    WriteNumber(usize, i64),
    /// `verify_linked` over the link column: the outcome's position is the survey as
    /// text (`lists`, `rows`, the broken lists).
    VerifyLinked,
    /// `convert_linked`: the outcome's position is what it did as text.
    ConvertLinked,
    /// Remove a tree's row under this removal policy.
    RemoveWith(usize, ordered_core::Removal),
    /// Read a page of at most this many rows of a collection (`page`), from where
    /// [`PageFrom`] says; checked against the whole list read at the same moment.
    Page(i64, u32, PageFrom),
    /// A write under a request key (and a tenant, when given): a step with a key used
    /// before for the same step must return the outcome the first one returned, marked
    /// replayed, and write nothing; for another step, `idempotency_key_reused`.
    Keyed(&'static str, Option<i64>, Box<Step>),
    /// `purge_requests(older_than seconds, batch)`: the outcome's position is how many
    /// records it deleted.
    PurgeRequests(u64, u32),
}

impl Step {
    /// Whether the script writes request records (its tables need the records table).
    pub fn is_keyed(&self) -> bool {
        matches!(self, Step::Keyed(..) | Step::PurgeRequests(..))
    }
}

/// `step` under request key `key`.
fn keyed(key: &'static str, step: Step) -> Step {
    Step::Keyed(key, None, Box::new(step))
}

/// Where a [`Step::Page`] starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageFrom {
    /// The first page.
    Start,
    /// The cursor the last page step returned.
    Next,
    /// That cursor, accepted though the list changed (`Cursor::resume`).
    Resume,
}

/// The mask of what `ensure_ordering` or `adopt_ordering` added: bit `n` for the `n`th
/// of `LockTable, VersionColumn, Widened, Renumbered, NotNull, Check, DomainTriggers,
/// ParentIndex, Unique, RootUnique`.
pub fn fixes_mask(e: &ordered_core::migration::Ensured) -> i64 {
    use ordered_core::migration::Fix;
    e.added
        .iter()
        .map(|f| match f {
            Fix::LockTable => 1,
            Fix::VersionColumn => 2,
            Fix::Widened => 4,
            Fix::Renumbered => 8,
            Fix::NotNull => 16,
            Fix::Check => 32,
            Fix::DomainTriggers => 64,
            Fix::ParentIndex => 128,
            Fix::Unique => 256,
            Fix::RootUnique => 512,
            _ => 1 << 20,
        })
        .sum()
}

/// A placement whose anchors are creation indexes (`999` names an item that does not
/// exist).
#[derive(Debug, Clone, Copy)]
pub enum At {
    /// Start.
    First,
    /// End.
    Last,
    /// Before item.
    Before(usize),
    /// After item.
    After(usize),
    /// Between two items.
    Between(Option<usize>, Option<usize>),
    /// At this index of the list as shown (without the moved item).
    Index(u64),
}

impl At {
    /// The placement with real ids (`missing` for an index that names no item).
    pub fn resolve(self, ids: &[Id], missing: Id) -> Placement {
        let id = |i: usize| ids.get(i).copied().unwrap_or(missing);
        match self {
            At::First => Placement::First,
            At::Last => Placement::Last,
            At::Before(i) => Placement::Before(id(i)),
            At::After(i) => Placement::After(id(i)),
            At::Between(p, n) => Placement::Between {
                prev: p.map(id),
                next: n.map(id),
            },
            At::Index(i) => Placement::Index(i),
        }
    }
}

/// The scripts: name, table schema, the steps.
pub fn scripts() -> Vec<(&'static str, Schema, Vec<Step>)> {
    use At::*;
    use Step::*;
    use ordered_core::Removal;
    // a list of seven read in pages of three while a writer moves a row: the version
    // refuses the next page; resumed, it goes on after the same place
    let pages: Vec<Step> = (0..7)
        .map(|_| Insert(1, Last))
        .chain([
            Page(1, 3, PageFrom::Start),  // 7: 0 1 2
            Page(1, 3, PageFrom::Next),   // 8: 3 4 5
            Page(1, 3, PageFrom::Next),   // 9: 6, the last
            Page(1, 3, PageFrom::Start),  // 10: 0 1 2
            Move(5, First),               // 11: 5 0 1 2 3 4 6
            Page(1, 3, PageFrom::Next),   // 12: refused, list_changed
            Page(1, 3, PageFrom::Resume), // 13: 3 4 6, the last
            Page(1, 0, PageFrom::Start),  // 14: one row at least: 5
            Page(2, 3, PageFrom::Start),  // 15: an empty list
            Page(77, 3, PageFrom::Start), // 16: no such parent
            MoveTo(6, 2, First),          // 17
            Page(2, 3, PageFrom::Start),  // 18: 6
        ])
        .collect();
    // placements at an index, both neighbours read in the fused read under the lock
    let indexes: Vec<Step> = (0..4)
        .map(|_| Insert(1, Last))
        .chain([
            Insert(1, Index(0)),    // 4: 4 0 1 2 3
            Insert(1, Index(2)),    // 5: 4 0 5 1 2 3
            Insert(1, Index(6)),    // 6: the length, the end: 4 0 5 1 2 3 6
            Insert(1, Index(8)),    // 7: past the end
            Move(6, Index(0)),      // 8: 6 4 0 5 1 2 3
            Move(4, Index(6)),      // 9: counted without the item, the end: 6 0 5 1 2 3 4
            Move(1, Index(7)),      // 10: past the end
            MoveTo(0, 2, Index(0)), // 11: into the empty list: 6 5 1 2 3 4 | 0
            MoveTo(2, 2, Index(1)), // 12: its end: 6 5 1 3 4 | 0 2
            MoveTo(3, 2, Index(3)), // 13: past its end
        ])
        .collect();
    // every operation under a request key, each repeated: the repeat returns the
    // recorded outcome and writes nothing
    let every_op: Vec<Step> = vec![
        Insert(1, Last),                                   // 0: 0
        Insert(1, Last),                                   // 1: 0 1
        Insert(1, Last),                                   // 2: 0 1 2
        Insert(2, Last),                                   // 3: | 3
        keyed("ins", Insert(1, Last)),                     // 4: 0 1 2 4
        keyed("ins", Insert(1, Last)),                     // 5: already_applied, item 4
        keyed("mv", Move(0, Last)),                        // 6: 1 2 4 0
        keyed("mv", Move(0, Last)),                        // 7: replayed
        keyed("up", MoveUp(4)),                            // 8: 1 4 2 0
        keyed("up", MoveUp(4)),                            // 9: replayed, not moved twice
        keyed("sw", Swap(1, 0)),                           // 10: 0 4 2 1
        keyed("sw", Swap(1, 0)),                           // 11: replayed, not swapped back
        keyed("to", MoveTo(2, 2, First)),                  // 12: 0 4 1 | 2 3
        keyed("to", MoveTo(2, 2, First)),                  // 13: replayed
        keyed("ro", Reorder(1, vec![1, 4, 0])),            // 14: 1 4 0
        keyed("ro", Reorder(1, vec![1, 4, 0])),            // 15: replayed
        keyed("rb", Rebalance(1)),                         // 16
        keyed("rb", Rebalance(1)),                         // 17: replayed
        keyed("rm", Remove(3)),                            // 18: | 2
        keyed("rm", Remove(3)),                            // 19: replayed, not not_found
        keyed("same", Move(4, Between(Some(1), Some(0)))), // 20: unchanged, recorded
        Move(0, First),                                    // 21: 0 1 4
        keyed("same", Move(4, Between(Some(1), Some(0)))), // 22: replayed unchanged, not stale_neighbours
        keyed("ver", MoveExpecting(4, First, 11)),         // 23: 4 0 1, at the version read
        keyed("ver", MoveExpecting(4, First, 11)),         // 24: replayed, not version_conflict
        keyed("ex", MoveExpecting(1, First, 11)),          // 25: version_conflict: not recorded
        keyed("ex", MoveExpecting(1, First, 12)), // 26: the retry with the right version applies
    ];
    // one key, one request; refusals are not recorded; tenants have their own keys
    let reused: Vec<Step> = vec![
        Insert(1, Last),                               // 0
        Insert(1, Last),                               // 1
        Insert(1, Last),                               // 2: 0 1 2
        keyed("k", Move(0, Last)),                     // 3: 1 2 0
        keyed("k", Move(1, Last)),                     // 4: idempotency_key_reused
        keyed("k", MoveUp(0)),                         // 5: idempotency_key_reused
        keyed("k", Insert(1, Last)),                   // 6: idempotency_key_reused
        keyed("r", Move(0, After(999))),               // 7: not_found, not recorded
        keyed("r", Move(0, First)),                    // 8: 0 1 2, applied
        Keyed("k", Some(2), Box::new(Move(2, First))), // 9: another tenant: 2 0 1
        Keyed("k", Some(2), Box::new(Move(2, First))), // 10: replayed in that tenant
        Keyed("k", Some(3), Box::new(Move(1, First))), // 11: a third tenant: 1 2 0
        keyed("k", Move(0, Last)),                     // 12: replayed (no tenant): nothing moves
    ];
    // records go when purged, in batches, and only once old enough
    let purge: Vec<Step> = vec![
        Insert(1, Last),            // 0
        Insert(1, Last),            // 1: 0 1
        keyed("a", Move(0, Last)),  // 2: 1 0
        keyed("b", Move(0, First)), // 3: 0 1
        keyed("c", MoveUp(1)),      // 4: 1 0
        keyed("d", MoveUp(1)),      // 5: unchanged, recorded
        PurgeRequests(3600, 2),     // 6: none is an hour old
        keyed("a", Move(0, Last)),  // 7: replayed: 1 0 stays
        PurgeRequests(0, 2),        // 8: all four, two per statement
        PurgeRequests(0, 2),        // 9: none left
        keyed("a", Move(1, Last)),  // 10: the key is free again: 0 1
    ];
    let hot: Vec<Step> = (0..3)
        .map(|_| Insert(1, Last))
        .chain((0..30).map(|_| Insert(1, After(0))))
        .chain((3..13).map(|i| Move(i, After(1))))
        .collect();
    // every operation, a relabel, and each refusal, for the key-type scripts
    let keyed: Vec<Step> = vec![
        Insert(1, Last),
        Insert(1, Last),
        Insert(1, Last),
        Insert(2, Last),
        Move(2, Before(0)),
        Insert(1, Between(Some(2), Some(0))),
        Insert(1, After(4)),
        Insert(1, After(4)),
        Insert(1, After(4)), // the tight gap is full: a relabel
        MoveTo(0, 2, First),
        MoveTo(3, 1, Between(Some(2), Some(4))),
        Swap(1, 2),
        Reorder(2, vec![0]),
        Remove(5),
        Move(1, Between(Some(2), Some(4))), // stale: not adjacent
        Move(1, After(999)),                // missing anchor
        Move(1, After(1)),                  // self reference
        Move(1, After(0)),                  // anchor in another collection
        MoveExpecting(1, Last, 1),          // stale version
        Insert(77, Last),                   // missing parent
        MoveAfterWrongKey(1),               // a key of the wrong type
        Rebalance(1),
    ];
    let ints = Schema::INTS;
    // a tree keyed by UUIDs
    let uuid_tree = Schema {
        id: KeyType::Uuid,
        parent: KeyType::Uuid,
        tree: true,
        ..ints
    };
    let board = vec![
        Insert(1, Last),
        Insert(1, Last),
        Insert(1, Last),    // (b1, todo): 0 1 2
        Insert(2, Last),    // (b1, done): 3
        Insert(3, Last),    // (b2, todo): 4
        Move(2, Before(0)), // 2 0 1
        Insert(1, After(2)),
        Insert(1, After(2)),
        Insert(1, After(2)), // the tight gap is full: a relabel of (b1, todo) only
        MoveTo(0, 2, Before(3)), // 9: to the other list of its board, one lock
        MoveTo(3, 3, After(4)), // 10: to the other board, both locked
        MoveTo(4, 1, First), // 11: back from the other board
        Move(1, After(0)),   // 12: the anchor is in another list of the board
        Move(1, Between(Some(2), Some(6))), // stale: not adjacent (7 is between)
        MoveExpecting(1, Last, 1), // stale version (the board's)
        Insert(77, Last),    // missing parent
        MoveToWrongScope(1), // the board alone names no list
        Swap(1, 2),
        Reorder(2, vec![0]),
        Remove(5),
        Rebalance(1),
        Insert(2, Between(None, Some(0))),
    ];
    let without_parent = vec![
        Insert(1, Last),
        Insert(1, Last),
        Insert(1, Last),
        Insert(2, Last),
        Move(2, Before(0)),
        Insert(1, After(2)),
        Insert(1, After(2)),
        Insert(1, After(2)),       // the tight gap is full: a relabel
        MoveTo(0, 2, First),       // 8: both lock rows
        Insert(3, Last),           // 9: a collection never written: its lock row is made
        MoveTo(3, 3, First),       // 10
        Move(1, After(0)),         // 11: the anchor is in another collection
        MoveExpecting(1, Last, 1), // 12: stale version
        Swap(1, 2),
        Reorder(2, vec![0]),
        Remove(5),
        Rebalance(1),
        Insert(77, Last), // 17: any value names a collection: nothing is "not found"
    ];
    let global = vec![
        Insert(1, Last),
        Insert(1, Last),
        Insert(1, Last),
        Move(2, Before(0)),
        Insert(1, Between(Some(2), Some(0))),
        Insert(1, After(2)),
        Insert(1, After(2)),
        Insert(1, After(2)),                // a relabel of the whole table's list
        Swap(0, 1),                         // 2 6 5 4 3 1 0
        Move(1, Between(Some(2), Some(5))), // 9: stale (6 is between)
        MoveExpecting(1, Last, 1),          // 10: stale version
        Move(0, After(999)),                // 11: missing anchor
        MoveToWrongScope(0),                // 12: a key names no collection here
        Reorder(1, vec![0, 1, 2, 3, 4, 5, 6]),
        Remove(3),
        MoveUp(5), // 0 1 2 5 4 6
        Rebalance(1),
    ];
    // the seeds: items 0 and 1 at the app's position 5, 2 at NULL, 3 at 0 (collection
    // 1), 4 at 3 (collection 2); adopted as 3 0 1 2 (NULLs last, ties by id)
    let adopt = vec![
        Insert(1, Between(Some(3), Some(0))), // 0: adjacent once adopted: 3 5 0 1 2
        Move(2, First),                       // 2 3 5 0 1
        Insert(1, After(2)),
        Insert(1, After(2)),     // 2 7 6 3 5 0 1: the tight gap relabels
        MoveTo(4, 1, Before(0)), // 2 7 6 3 5 4 0 1
        Move(0, Between(Some(3), Some(1))), // 5: stale
        Rebalance(1),
    ];
    // collection 0 is the root list, n the children of item n - 1
    let tree = vec![
        Insert(0, Last),                      // 0
        Insert(0, Last),                      // 1
        Insert(1, Last),                      // 2: under 0
        Insert(1, Last),                      // 3: under 0
        Insert(3, Last),                      // 4: under 2
        Insert(0, First),                     // 5: root 5 0 1
        MoveTo(1, 1, First),                  // 6: 1 under 0 (from the root list): 1 2 3
        MoveTo(0, 3, Last),                   // 7: 0 under its grandchild 2's list: a cycle
        MoveTo(0, 1, Last),                   // 8: 0 under itself: a cycle
        MoveTo(2, 0, After(5)),               // 9: 2 (and 4 below it) to the root: 5 2 0
        MoveTo(0, 3, Last),                   // 10: now 0 under 2: allowed; 2's children 4 0
        MoveTo(2, 1, Last),                   // 11: 2 under 0, which is under 2: a cycle
        Move(3, First),                       // 12: 0's children 3 1
        MoveTo(4, 79, Last),                  // 13: under an item that does not exist
        Insert(79, Last),                     // 14: likewise
        MoveExpecting(3, Last, 1),            // 15: stale version
        Insert(0, Between(Some(5), Some(2))), // 16 (item 6): root 5 6 2
        MoveTo(3, 7, First),                  // 17: 3 under 6: between two lists below the root
        Remove(5),                            // 18: root 6 2
        Reorder(0, vec![2, 6]),               // 19
        Rebalance(1),                         // 20
    ];
    // playlist 1 gets the even items, 2 the odd ones: item n is track n / 2 + 1
    let links = vec![
        Insert(1, Last),                    // item 0: (1, t1)
        Insert(2, Last),                    // 1: (2, t1), the same track in another list
        Insert(1, Last),                    // 2: (1, t2)
        Insert(2, Last),                    // 3: (2, t2)
        Insert(1, Last),                    // 4: (1, t3)
        Insert(2, First),                   // 5: (2, t3); p2 t3 t1 t2
        Move(4, First),                     // step 6: p1 t3 t1 t2
        Move(1, After(3)),                  // 7: p2 t3 t2 t1
        Insert(1, After(0)),                // 8, item 6: (1, t4); p1 t3 t1 t4 t2
        Insert(2, Last),                    // 9, item 7: (2, t4)
        Insert(1, After(0)),                // 10, item 8: (1, t5); p1 t3 t1 t5 t4 t2
        Insert(2, Last),                    // 11, item 9: (2, t5)
        Insert(1, After(0)),                // 12, item 10: (1, t6): the gap is full
        MoveTo(0, 2, Last),                 // 13: a link cannot change lists
        Move(0, After(1)),                  // 14: the anchor is t1 in the other list
        Move(0, Between(Some(4), Some(2))), // 15: stale
        MoveExpecting(0, Last, 1),          // 16: stale version
        MoveAfterWrongKey(0),               // 17: a track alone names no link
        Swap(0, 2),                         // 18: p1 t3 t2 t6 t5 t4 t1
        Remove(8),                          // 19: (1, t5) only: p1 t3 t2 t6 t4 t1
        Reorder(2, vec![1, 3, 5, 7, 9]),    // 20: p2 t1 t2 t3 t4 t5
        Rebalance(1),                       // 21
    ];
    // floats 8 apart, a gap full under 1/16: 12, 10, 9, 8.5, 8.25, 8.125, 8.0625 after
    // item 0, then the midpoint would be 1/32 from it: a relabel
    let numeric: Vec<Step> = [
        Insert(1, Last),
        Insert(1, Last),
        Insert(1, Last),
        Insert(2, Last),
    ]
    .into_iter()
    .chain((0..8).map(|_| Insert(1, After(0)))) // 4..=11: the 8th relabels
    .chain([
        Move(2, Before(0)),                 // 12: 4, below the first (8) by halving
        Move(1, First),                     // 13: 2
        MoveTo(0, 2, First),                // 14: into list 2, before its 8: 4
        Swap(1, 2),                         // 15
        Remove(5),                          // 16: 2 1 11 10 9 8 7 6 4
        Move(1, Between(Some(6), Some(7))), // 17: stale (7 comes before 6)
        Move(1, After(999)),                // 18: missing anchor
        Move(1, After(1)),                  // 19: self reference
        Move(1, After(0)),                  // 20: anchor in another list
        MoveExpecting(1, Last, 1),          // 21: stale version
        Insert(77, Last),                   // 22: missing parent
        MoveAfterWrongKey(1),               // 23: a key of the wrong type
        WriteNumber(6, -1),                 // 24: the app writes -1 around the library
        Move(1, After(6)),                  // 25: refused on read: invalid_position
        Rebalance(1),                       // 26: heals: 8 16 24 ...
        Move(4, First),                     // 27
    ])
    .collect();
    // NUMERIC(9, 2) one unit apart: midpoints on the grid of hundredths until a gap is
    // full, then a relabel; every value reads back as the decimal it is
    let decimal: Vec<Step> = [Insert(1, Last), Insert(1, Last), Insert(2, Last)]
        .into_iter()
        .chain((0..10).map(|_| Insert(1, After(0)))) // 3..=12: 1.5 1.25 1.13 ...
        .chain([
            Move(1, First),                       // 13
            MoveTo(0, 2, Last),                   // 14
            Swap(1, 3),                           // 15
            Remove(4),                            // 16
            Move(5, After(999)),                  // 17: missing anchor
            Rebalance(1),                         // 18
            Insert(1, Between(Some(1), Some(5))), // 19
        ])
        .collect();
    use ordered_core::linked::Link;
    let linked = |link: Link, seeds: Linked| Schema {
        linked: Some((link, seeds)),
        ..ints
    };
    let converted = vec![
        VerifyLinked,                         // 0: every list a chain
        ConvertLinked,                        // 1: three lists, eight rows
        Ensure,                               // 2: NOT NULL and the unique constraint
        CheckSchema,                          // 3
        Move(2, Last),                        // 4: 0 4 1 3 2
        Insert(1, Between(Some(0), Some(4))), // 5 (item 8)
        MoveTo(6, 1, First),                  // 6: 6 0 8 4 1 3 2 | 5
        Insert(3, First),                     // 7 (item 9)
    ];
    vec![
        (
            "linked_list_converted",
            linked(Link::Prev, Linked::Chains),
            converted.clone(),
        ),
        (
            "linked_list_next",
            linked(Link::Next, Linked::Chains),
            converted,
        ),
        (
            // a cycle, a dangling link and the row behind it, two heads: those lists are
            // reported and left alone, the chain beside them converted
            "linked_list_refused",
            linked(Link::Prev, Linked::Broken),
            vec![
                VerifyLinked,  // 0
                ConvertLinked, // 1: list 3 only
                Ensure,        // 2: refused: rows without a position
                ConvertLinked, // 3: the same again: lists 1 and 2 still refused
                VerifyLinked,  // 4
            ],
        ),
        (
            "numeric_positions",
            Schema {
                numbers: Numbers::Float,
                ..ints
            },
            numeric,
        ),
        (
            "numeric_decimal",
            Schema {
                numbers: Numbers::Decimal,
                ..ints
            },
            decimal,
        ),
        (
            // a Trello-style float column adopted: list 1 keeps its values, list 2 (a
            // shared value, a negative one, a NULL) is renumbered in its order
            "float_column_adopted",
            Schema {
                own: true,
                numbers: Numbers::Trello,
                ..ints
            },
            vec![
                CheckSchema,                          // 0: refused
                Adopt,                                // 1
                Adopt,                                // 2: nothing
                CheckSchema,                          // 3
                Insert(1, Between(Some(2), Some(3))), // 4 (item 9): 106494.375
                Move(4, First),                       // 5: 32767.5
                Insert(2, Last),                      // 6 (item 10): 327675
                Move(8, Between(Some(7), Some(5))),   // 7
                Rebalance(2),                         // 8
            ],
        ),
        ("association_table", Schema { link: true, ..ints }, links),
        (
            "composite_no_parent",
            Schema {
                id: KeyType::Uuid,
                parent: KeyType::Uuid,
                split: true,
                no_parent: true,
                ..ints
            },
            board.clone(),
        ),
        ("tree_cycle", uuid_tree, tree),
        (
            // SeaORM 2.0's entity-first sync drops the unique constraint at every start;
            // ensure_ordering puts it back, and a second call changes nothing
            "entity_first_sync",
            ints,
            vec![
                Insert(1, Last),
                Insert(1, Last),
                Insert(2, Last),
                DropUnique,  // 3
                CheckSchema, // 4: refused
                Ensure,      // 5: the unique constraint
                CheckSchema, // 6
                Ensure,      // 7: nothing
                Move(0, After(1)),
                Insert(1, Between(Some(1), Some(0))),
            ],
        ),
        (
            // the app's own column adopted at run time, twice: the second run is a
            // no-op that leaves every position as it was
            "adopt_twice",
            Schema { own: true, ..ints },
            vec![
                CheckSchema, // 0: refused
                Ensure,      // 1: refused (duplicates, a NULL), before any change
                Adopt,       // 2
                Adopt,       // 3: nothing, no row changed
                CheckSchema, // 4
                Ensure,      // 5: nothing
                Move(2, First),
                Insert(1, Between(Some(3), Some(0))),
            ],
        ),
        (
            // the parent already has its version column: kept, with its values
            "adopt_existing_version",
            Schema {
                own: true,
                parent_version: true,
                ..ints
            },
            vec![
                Adopt,          // 0: no version column added
                CheckSchema,    // 1
                Move(0, First), // 2: the list's version goes from 41 to 42
            ],
        ),
        (
            // an INTEGER position column: check_schema says so, ensure_ordering widens it
            // (SQLite's INTEGER is 64-bit already)
            "int32_positions",
            Schema {
                int32_position: true,
                ..ints
            },
            vec![
                Insert(1, Last),
                Insert(1, Last),
                CheckSchema, // 2: refused but on SQLite
                Ensure,      // 3: widened but on SQLite
                CheckSchema, // 4
                Insert(1, First),
                Move(2, Last),
            ],
        ),
        (
            // an adopted column keeps the library's domain: on SQLite, which cannot add
            // a CHECK to an existing column, through the adoption's triggers
            "sqlite_check_rebuild",
            Schema { own: true, ..ints },
            vec![
                Adopt,                                    // 0
                CheckSchema,                              // 1
                WriteAround(0, None),                     // 2: refused
                WriteAround(0, Some(-(1_i64 << 62) - 1)), // 3: refused
                WriteAround(1, Some(1_i64 << 62)),        // 4: refused
                Insert(1, First),
                Rebalance(1),
            ],
        ),
        (
            // a tree's removal policies: refused while it has children, its children
            // lifted into its place (the whole list relabelled when the gap is too
            // small, one row each when it is not), the database's cascade
            "tree_remove_policies",
            uuid_tree,
            vec![
                Insert(0, Last),                 // 0: A (root)
                Insert(0, Last),                 // 1: B (root)
                Insert(1, Last),                 // 2: c1, a child of A
                Insert(1, Last),                 // 3: c2
                Insert(1, Last),                 // 4: c3
                Insert(1, Last),                 // 5: c4
                Insert(3, Last),                 // 6: g1, a child of c1
                RemoveWith(0, Removal::Refuse),  // 7: refused
                RemoveWith(0, Removal::Lift),    // 8: c1 c2 c3 c4 B
                RemoveWith(2, Removal::Refuse),  // 9: refused (g1)
                RemoveWith(6, Removal::Refuse),  // 10: a leaf
                Insert(3, Last),                 // 11: g2, a child of c1
                RemoveWith(2, Removal::Lift),    // 12: g2 c2 c3 c4 B
                Insert(4, Last),                 // 13: h1, a child of c2
                RemoveWith(3, Removal::Cascade), // 14: c2 and h1
            ],
        ),
        (
            // a tree whose parent foreign key is ON DELETE SET NULL: check_schema and
            // ensure_ordering say so, and deleting a node with children is that
            // schema_mismatch, never "inconsistent"
            "tree_set_null",
            Schema {
                set_null: true,
                ..uuid_tree
            },
            vec![
                Insert(0, Last), // 0: root
                Insert(0, Last), // 1: root
                Insert(1, Last), // 2: a child of 0, at the position 0 has
                Insert(1, Last), // 3: a child of 0, at the position 1 has
                CheckSchema,     // 4: refused
                Ensure,          // 5: refused
                Remove(0),       // 6: refused
                Remove(2),       // 7: a leaf
            ],
        ),
        (
            "adopt_existing_column",
            Schema {
                adopt: true,
                ..ints
            },
            adopt,
        ),
        (
            "scope_without_parent",
            Schema {
                no_parent: true,
                ..ints
            },
            without_parent,
        ),
        (
            "global_list",
            Schema {
                global: true,
                ..ints
            },
            global,
        ),
        (
            "playlist",
            ints,
            vec![
                Insert(1, Last),
                Insert(1, Last),
                Insert(1, Last),
                Move(2, Before(1)),
                Insert(1, Between(Some(2), Some(1))),
                Rebalance(1),
            ],
        ),
        ("hot_gap_ints", ints, hot.clone()),
        ("hot_gap_keys", Schema::KEYS, hot),
        ("idempotent_every_operation", ints, every_op.clone()),
        ("idempotent_every_operation_keys", Schema::KEYS, every_op),
        ("idempotency_key_reused", ints, reused),
        ("idempotency_purge", ints, purge),
        ("keyset_pages", ints, pages.clone()),
        ("index_placements", ints, indexes.clone()),
        ("index_placements_keys", Schema::KEYS, indexes),
        ("keyset_pages_keys", Schema::KEYS, pages),
        (
            // pages of the rows the list shows (an archived row is left out) of a
            // table ordered per (board, column)
            "keyset_pages_shown",
            Schema {
                id: KeyType::Uuid,
                parent: KeyType::Uuid,
                hidden: true,
                split: true,
                ..ints
            },
            (0..4)
                .map(|_| Insert(1, Last))
                .chain([
                    Insert(2, Last),             // 4: the board's other column
                    Archive(1),                  // 5
                    Page(1, 2, PageFrom::Start), // 6: 0 2
                    Page(1, 2, PageFrom::Next),  // 7: 3, the last
                    Page(2, 2, PageFrom::Start), // 8: 4
                ])
                .collect(),
        ),
        (
            "across_parents_and_reorder",
            Schema::KEYS,
            vec![
                Insert(1, Last),
                Insert(1, Last),
                Insert(1, Last),
                Insert(2, Last),
                MoveTo(0, 2, First),
                MoveTo(3, 1, Between(Some(1), Some(2))),
                Swap(1, 2),
                Reorder(1, vec![3, 2, 1]),
                Remove(2),
                Insert(2, Before(0)),
            ],
        ),
        (
            "stale_requests",
            ints,
            vec![
                Insert(1, Last),
                Insert(1, Last),
                Insert(1, Between(Some(0), Some(1))),
                Insert(2, Last),
                Move(1, Between(Some(0), Some(2))), // valid: without 1, 0 and 2 are adjacent
                Move(0, Between(Some(2), Some(1))), // stale: 2 and 1 are not adjacent now
                Move(0, After(999)),                // missing anchor
                Move(0, After(0)),                  // self reference
                Move(0, After(3)),                  // anchor in another collection
                MoveExpecting(0, Last, 1),          // stale version
                Insert(77, Last),                   // missing parent
                Reorder(1, vec![0, 1]),             // not the current set
                Swap(0, 0),
            ],
        ),
        (
            "uuid_keys",
            Schema {
                id: KeyType::Uuid,
                parent: KeyType::Uuid,
                ..ints
            },
            keyed.clone(),
        ),
        (
            "int32_keys",
            Schema {
                int32: true,
                ..Schema::KEYS
            },
            keyed.clone(),
        ),
        (
            "string_keys",
            Schema {
                id: KeyType::Text,
                ..ints
            },
            keyed,
        ),
        (
            "composite_scope",
            Schema {
                id: KeyType::Uuid,
                parent: KeyType::Uuid,
                split: true,
                ..ints
            },
            board,
        ),
        (
            // the list the client saw: whatever it names outside it is refused, naming
            // only that list, and nothing changes
            "within_list",
            Schema {
                hidden: false,
                ..ints
            },
            vec![
                Insert(1, Last),
                Insert(1, Last),
                Insert(2, Last),
                Insert(2, Last),
                MoveWithin(2, First, 1),      // 4: an item of list 2
                MoveWithin(0, After(2), 1),   // 5: a neighbour of list 2
                RemoveWithin(3, 1),           // 6: a removal of list 2's item
                MoveToWithin(0, 2, First, 1), // 7: a move out to list 2
                MoveWithin(1, Between(None, Some(0)), 1), // 8: within it: applies
                RemoveWithin(1, 1),           // 9: applies
                MoveWithin(3, First, 2),      // 10: list 2's own: applies
            ],
        ),
        (
            // the app's own constraint broken inside the insert closure: typed, 409,
            // nothing written
            "app_constraint",
            Schema {
                unique_title: true,
                ..ints
            },
            vec![
                Insert(1, Last),
                Insert(1, Last), // 1: the same title again
                Move(0, First),  // 2: the list is sound and writable
            ],
        ),
        (
            // the versioned read in the application's own row type: the same rows, order
            // and version as the library's, an empty list with its version, a missing
            // parent refused
            "typed_rows",
            ints,
            vec![
                Insert(1, Last),
                Insert(1, Last),
                Insert(1, First),
                Insert(2, Last),
                ListModels(1), // 4
                Remove(3),
                ListModels(2),  // 6: empty, with its version
                ListModels(77), // 7: no such parent
            ],
        ),
        (
            // an association table's link filed twice in one list
            "link_twice",
            Schema { link: true, ..ints },
            vec![
                Insert(1, Last),       // track 1 in playlist 1
                Insert(2, Last),       // track 1 in playlist 2
                Insert(1, Last),       // track 2 in playlist 1
                InsertAs(1, First, 0), // 3: track 1 in playlist 1 again
                InsertAs(2, First, 2), // 4: track 2 in playlist 2: a new link
            ],
        ),
        (
            // a tree's row removed with its subtree (ON DELETE CASCADE): every row that
            // went is reported
            "cascade_remove",
            uuid_tree,
            vec![
                Insert(0, Last), // 0: a root
                Insert(1, Last), // 1: below 0
                Insert(2, Last), // 2: below 1
                Insert(1, Last), // 3: below 0
                Insert(0, Last), // 4: a root
                Remove(0),       // 5: 0, 1, 2 and 3 go
            ],
        ),
        (
            // a move to where the item already is: nothing written, no version taken,
            // no hook run, nothing to broadcast
            "unchanged_move",
            ints,
            vec![
                Insert(1, Last),
                Insert(1, Last),
                Insert(1, Last),
                Move(1, Between(Some(0), Some(2))), // 3
                Move(2, Last),                      // 4
                Move(0, First),                     // 5
                MoveUp(0),                          // 6
                Reorder(1, vec![0, 1, 2]),          // 7
                MoveWithin(1, After(0), 1),         // 8
                Move(0, After(1)),                  // 9: a real move: the next version
            ],
        ),
        (
            // the version with a fallback to the neighbours: a page that missed other
            // writes still drops into a gap nobody touched
            "version_or_neighbours",
            ints,
            vec![
                Insert(1, Last),
                Insert(1, Last),
                Insert(1, Last),
                MoveVersionOrNeighbours(2, Between(Some(0), Some(1)), 1), // 3: stale version, gap intact
                MoveVersionOrNeighbours(0, Last, 1), // 4: stale version, no neighbours
                MoveVersionOrNeighbours(0, Between(Some(1), Some(2)), 1), // 5: not adjacent now
                MoveVersionOrNeighbours(1, First, 4), // 6: the current version
                MoveExpecting(0, Between(Some(2), None), 1), // 7: strict: refused
            ],
        ),
        (
            // a neighbour the list no longer shows is stale, prev as well as next
            "hidden_prev",
            Schema {
                hidden: true,
                ..ints
            },
            vec![
                Insert(1, Last),
                Insert(1, Last),
                Insert(1, Last),
                Insert(1, Last),
                Archive(2),                         // 4: shown 0 1 (2) 3
                Move(0, Between(Some(2), Some(3))), // 5: prev archived: stale
                Archive(3),                         // 6: shown 0 1 (2) (3)
                Insert(1, Between(Some(3), None)),  // 7: prev archived, at the end: stale
                Move(0, Between(Some(2), None)),    // 8: stale
                Move(0, Between(Some(1), None)),    // 9: as shown: applies
                Insert(1, Between(Some(0), None)),  // 10: applies
            ],
        ),
        (
            "hidden_rows",
            Schema {
                hidden: true,
                ..ints
            },
            vec![
                Insert(1, Last),
                Insert(1, Last),
                Insert(1, Last),
                Insert(1, Last),
                Archive(1),                           // shown: 0 2 3
                Move(3, Between(Some(0), Some(2))),   // adjacent as shown: 0 3 (1) 2
                Insert(1, Between(Some(3), Some(2))), // 0 3 4 (1) 2
                Insert(1, Index(4)),                  // the shown length: 0 3 4 (1) 2 5
                Move(0, Index(2)),                    // 3 4 (1) 0 2 5
                Insert(1, After(4)),
                Insert(1, After(4)),
                Insert(1, After(4)), // a relabel across the archived row
                Move(2, Between(Some(3), Some(0))), // stale: not adjacent as shown
                Insert(1, Index(99)), // past the shown length
                MoveTo(5, 2, Index(0)),
                MoveUp(0), // above the shown row before it, past the archived one
                Rebalance(1),
            ],
        ),
    ]
}

/// Set-up for the examples of `README.md` and `docs/`, which this crate compiles and runs
/// as doctests: in-memory SQLite databases with the tables a [`ordered_core::Spec`]
/// describes (made by the library's own migrations) and their parent rows.
/// A small deterministic generator (xorshift) for the benches: the same sequence for the
/// same seed, so that rounds and modes compared in one run make the same choices.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

#[doc(hidden)]
pub mod doc {
    use diesel::{Connection, RunQueryDsl, SqliteConnection};
    use ordered_core::migration::{create_parent_table, create_table};
    use ordered_core::{Dialect, Spec};
    use sea_orm::ConnectionTrait;

    /// The statements that make `spec`'s tables with these extra item columns, and one
    /// parent row per key in `parents` (integer keys, or text keys as SQL literals).
    fn schema(spec: &Spec, columns: &[(&str, &str)], parents: &[&str]) -> Vec<String> {
        let d = Dialect::Sqlite;
        let mut out = create_parent_table(d, spec, &[]).up;
        out.extend(create_table(d, spec, columns).up);
        if !spec.locks_rows() {
            for p in parents {
                out.push(format!(
                    "INSERT INTO \"{}\" (\"{}\") VALUES ({p})",
                    spec.parent_table, spec.parent_id
                ));
            }
        }
        out
    }

    diesel::table! { playlists (id) { id -> BigInt, version -> BigInt, } }
    diesel::table! { tracks (id) { id -> BigInt, playlist_id -> BigInt, title -> Text, position -> BigInt, } }

    /// The examples' model: tracks ordered per playlist, the playlist's version bumped by
    /// every write.
    #[derive(Debug, diesel::Queryable, diesel::Selectable, ordered_diesel::Ordered)]
    #[diesel(table_name = tracks)]
    #[ordered(scope = playlist_id, parent = playlists, version = version)]
    pub struct Track {
        /// The key.
        pub id: i64,
        /// The playlist.
        pub playlist_id: i64,
        /// The title.
        pub title: String,
        /// The position.
        pub position: i64,
    }

    /// Playlists 1 and 2, with no tracks.
    pub fn playlists() -> Result<SqliteConnection, Box<dyn std::error::Error>> {
        use ordered_core::Ordered;
        sqlite(&Track::SPEC, &[("title", "TEXT NOT NULL")], &["1", "2"])
    }

    /// An insert closure's body: a track titled `title` where the slot says, with the id
    /// `id` when given; returns its id.
    pub fn new_track(
        conn: &mut SqliteConnection,
        slot: &ordered_diesel::Slot,
        id: Option<i64>,
        title: &str,
    ) -> diesel::QueryResult<i64> {
        use diesel::ExpressionMethods;
        diesel::insert_into(tracks::table)
            .values((
                id.map(|id| tracks::id.eq(id)),
                tracks::playlist_id.eq(slot.scope::<i64>()?),
                tracks::title.eq(title),
                tracks::position.eq(slot.int()?),
            ))
            .returning(tracks::id)
            .get_result(conn)
    }

    /// A Diesel connection to a fresh in-memory database with `spec`'s tables.
    pub fn sqlite(
        spec: &Spec,
        columns: &[(&str, &str)],
        parents: &[&str],
    ) -> Result<SqliteConnection, Box<dyn std::error::Error>> {
        let mut conn = SqliteConnection::establish(":memory:")?;
        for s in schema(spec, columns, parents) {
            diesel::sql_query(s).execute(&mut conn)?;
        }
        Ok(conn)
    }

    /// A diesel-async connection to a fresh in-memory database with `spec`'s tables.
    pub async fn sqlite_async(
        spec: &Spec,
        columns: &[(&str, &str)],
        parents: &[&str],
    ) -> Result<
        diesel_async::sync_connection_wrapper::SyncConnectionWrapper<SqliteConnection>,
        Box<dyn std::error::Error>,
    > {
        Ok(
            diesel_async::sync_connection_wrapper::SyncConnectionWrapper::new(sqlite(
                spec, columns, parents,
            )?),
        )
    }

    /// A SeaORM connection to a fresh in-memory database with `spec`'s tables.
    pub async fn seaorm(
        spec: &Spec,
        columns: &[(&str, &str)],
        parents: &[&str],
    ) -> Result<sea_orm::DatabaseConnection, Box<dyn std::error::Error>> {
        let db = sea_orm::Database::connect("sqlite::memory:").await?;
        for s in schema(spec, columns, parents) {
            db.execute_unprepared(&s).await?;
        }
        Ok(db)
    }
}

/// The examples of `README.md`, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeExamples;

/// The examples of `docs/GUIDE.md`, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/GUIDE.md")]
pub struct GuideExamples;

/// The Rust blocks of the other pages of `docs/` (none yet; a new one is compiled).
#[cfg(doctest)]
#[doc = include_str!("../../docs/ARCHITECTURE.md")]
#[doc = include_str!("../../docs/CONCURRENCY.md")]
#[doc = include_str!("../../docs/ORMS.md")]
#[doc = include_str!("../../docs/REPORTS.md")]
pub struct DocsExamples;
