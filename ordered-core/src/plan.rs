//! The planner: a pure function from what was read under the parent lock and a request
//! to a plan (write one row, or relabel these rows and then write).
//!
//! The planner is written as straight-line code over a cache of reads. When it needs a
//! read it has not got, it stops with [`Step::Read`]; the caller (the
//! [`Operation`](crate::adapter::Operation) state machine, or the in-memory
//! [`Store`](crate::model::Store)) performs it, stores the rows and runs the
//! planner again. Re-running is cheap and keeps the planner free of I/O, so the same code
//! serves the synchronous Diesel adapter, the asynchronous SeaORM adapter and the
//! in-memory model used by tests and benchmarks.

use std::collections::HashMap;

use crate::Id;
use crate::error::Error;
use crate::linked::Link;
use crate::position::{MAX_POSITION, MIN_POSITION, PARK_POSITION, Position};
use crate::spec::{Removal, Spec};
use crate::strategy::{PositionStrategy, RebalancePolicy, Spread, SpreadMode};

/// Where to put an item.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Placement {
    /// At the start of the list.
    First,
    /// At the end of the list.
    Last,
    /// Directly before this item.
    Before(Id),
    /// Directly after this item.
    After(Id),
    /// Between these two neighbours, which must still be adjacent (`None`: the list's
    /// start or end). Anything else is [`Error::StaleNeighbours`].
    Between {
        /// The predecessor, or `None` for the start.
        prev: Option<Id>,
        /// The successor, or `None` for the end.
        next: Option<Id>,
    },
    /// At this zero-based index of the list without the moved item.
    Index(u64),
}

impl Placement {
    /// The items this placement names.
    pub fn anchors(&self) -> impl Iterator<Item = Id> {
        let (a, b) = match self {
            Placement::Before(x) | Placement::After(x) => (Some(*x), None),
            Placement::Between { prev, next } => (*prev, *next),
            Placement::First | Placement::Last | Placement::Index(_) => (None, None),
        };
        a.into_iter().chain(b)
    }
}

/// An ordering request.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum Request {
    /// Insert a new item into `parent`.
    Insert {
        /// The collection.
        parent: Id,
        /// Where.
        at: Placement,
    },
    /// Move an item inside its collection.
    Move {
        /// The item.
        item: Id,
        /// Where.
        at: Placement,
    },
    /// Move an item to another collection (or inside its own when `parent` is its own).
    MoveToParent {
        /// The item.
        item: Id,
        /// The destination collection.
        parent: Id,
        /// Where in it.
        at: Placement,
    },
    /// Move an item one place towards the start (no change when it is first).
    MoveUp {
        /// The item.
        item: Id,
    },
    /// Move an item one place towards the end (no change when it is last).
    MoveDown {
        /// The item.
        item: Id,
    },
    /// Exchange the places of two items of one collection.
    Swap {
        /// One item.
        a: Id,
        /// The other.
        b: Id,
    },
    /// Delete an item.
    Remove {
        /// The item.
        item: Id,
    },
    /// Set the whole order of a collection; only rows that must move are written.
    Reorder {
        /// The collection.
        parent: Id,
        /// Every item of the collection, in the wanted order.
        ids: Vec<Id>,
    },
    /// Spread the collection evenly (also repairs duplicates and out-of-domain values).
    Rebalance {
        /// The collection.
        parent: Id,
    },
    /// Give the rows of a collection kept as a linked list positions in chain order:
    /// reads every row's `column` (the id of the row before it, [`Link::Prev`], or
    /// after it, [`Link::Next`]) under the collection's lock, walks the chain from its
    /// head ([`crate::linked::chain`]) and assigns every row a position; a list that
    /// is not one chain is refused with [`Error::BrokenList`], writing nothing. The
    /// link column is left as it was.
    ConvertLinked {
        /// The collection.
        parent: Id,
        /// The column holding the neighbour's id.
        column: String,
        /// Which neighbour it names.
        link: Link,
    },
}

impl Request {
    /// The operation's name, as logs and metrics report it: `insert`, `move`,
    /// `move_to_parent`, `move_up`, `move_down`, `swap`, `remove`, `reorder`,
    /// `rebalance`.
    pub fn name(&self) -> &'static str {
        match self {
            Request::Insert { .. } => "insert",
            Request::Move { .. } => "move",
            Request::MoveToParent { .. } => "move_to_parent",
            Request::MoveUp { .. } => "move_up",
            Request::MoveDown { .. } => "move_down",
            Request::Swap { .. } => "swap",
            Request::Remove { .. } => "remove",
            Request::Reorder { .. } => "reorder",
            Request::Rebalance { .. } => "rebalance",
            Request::ConvertLinked { .. } => "convert_linked",
        }
    }

    /// Refuses an insert where the caller has no row to insert (the adapters' `apply`,
    /// whose inserts go through `insert_with`): [`Error::InvalidRequest`].
    pub fn without_insert(self) -> Result<Request, Error> {
        match self {
            Request::Insert { .. } => Err(Error::InvalidRequest(
                "an insert needs the row to insert: call insert_with",
            )),
            other => Ok(other),
        }
    }

    /// The refusal of the first key of the request that does not fit `spec`'s key
    /// types: [`Error::WrongKeyType`] for an item key that is not of [`Spec::id_type`]
    /// or a collection key that is not of [`Spec::parent_type`], [`Error::WrongScope`]
    /// for a collection that does not name every scope column of a table split by
    /// several ([`Spec::split_by`]).
    pub fn misfit(&self, spec: &Spec) -> Option<Error> {
        let (items, scope): (Vec<Id>, Option<Id>) = match self {
            Request::Insert { parent, at } => (at.anchors().collect(), Some(*parent)),
            Request::Move { item, at } => {
                (std::iter::once(*item).chain(at.anchors()).collect(), None)
            }
            Request::MoveToParent { item, parent, at } => (
                std::iter::once(*item).chain(at.anchors()).collect(),
                Some(*parent),
            ),
            Request::MoveUp { item } | Request::MoveDown { item } | Request::Remove { item } => {
                (vec![*item], None)
            }
            Request::Swap { a, b } => (vec![*a, *b], None),
            Request::Reorder { parent, ids } => (ids.clone(), Some(*parent)),
            Request::Rebalance { parent } => (Vec::new(), Some(*parent)),
            Request::ConvertLinked { parent, .. } => (Vec::new(), Some(*parent)),
        };
        if matches!(self, Request::ConvertLinked { .. }) && spec.is_link() {
            return Some(Error::InvalidRequest(
                "an association table's rows are named by their list and another key: convert_linked needs a table with an id column of its own",
            ));
        }
        if let Request::MoveToParent { item, parent, .. } = self
            && spec.is_link()
            && spec.check_item(*item).is_ok()
            && spec.link_scope(*item) != *parent
        {
            return Some(Error::InvalidRequest(
                "a link of an association table is named by its list: it cannot move to another list; remove it and insert a new link there",
            ));
        }
        scope
            .and_then(|p| spec.check_scope(p).err())
            .or_else(|| items.into_iter().find_map(|i| spec.check_item(i).err()))
    }

    /// The collection the request names, if it names one (inserts, cross-collection
    /// moves, reorders, rebalances); moves name their item instead.
    pub fn scope(&self) -> Option<Id> {
        match self {
            Request::Insert { parent, .. }
            | Request::MoveToParent { parent, .. }
            | Request::Reorder { parent, .. }
            | Request::Rebalance { parent }
            | Request::ConvertLinked { parent, .. } => Some(*parent),
            _ => None,
        }
    }
}

/// A read the planner needs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Read {
    /// One item by id (zero or one row).
    Item {
        /// The item.
        id: Id,
    },
    /// Items of one collection in position order.
    Range(RangeRead),
    /// The row `of` of a tree ([`Spec::tree`]) and every row above it: its parent,
    /// that row's parent, and so on up to a row of the root list, in no order (a
    /// recursive query). What the cycle check of a move to another parent walks.
    Ancestors {
        /// The row the walk starts from (the new parent).
        of: Id,
    },
    /// Every row below the row `of` of a tree: its children, theirs, and so on, in no
    /// order (a recursive query). What a removal takes with it (`ON DELETE CASCADE`).
    Descendants {
        /// The row whose subtree is read.
        of: Id,
    },
    /// Every row of `parent` with the id its link column `column` names (a linked list
    /// being converted, [`Request::ConvertLinked`]), answered by
    /// [`Reply::Links`](crate::adapter::Reply::Links); positions are not read (they
    /// may be NULL until the conversion).
    Links {
        /// The collection.
        parent: Id,
        /// The link column.
        column: String,
    },
}

/// Items of `parent` with `above < position < below`, in position order (descending if
/// `desc`), skipping `offset`, at most `limit`, without `exclude`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct RangeRead {
    /// The collection.
    pub parent: Id,
    /// Exclusive lower bound.
    pub above: Option<Position>,
    /// Exclusive upper bound.
    pub below: Option<Position>,
    /// Descending order.
    pub desc: bool,
    /// At most this many rows.
    pub limit: Option<u64>,
    /// Rows to skip (only with a limit).
    pub offset: u64,
    /// An item to leave out (the one being moved).
    pub exclude: Option<Id>,
    /// Only the rows the lists show ([`Spec::filter`]); every row when the table has
    /// no filter.
    pub visible: bool,
}

impl RangeRead {
    /// The rows at `index - 1` and `index` of `parent` (only the one at 0 for index 0),
    /// leaving out `exclude`: both neighbours of a placement at an index in one read,
    /// which the fused read under the lock holds (a table without a row filter).
    pub fn at_index(parent: Id, index: u64, exclude: Option<Id>) -> Self {
        RangeRead {
            limit: Some(if index == 0 { 1 } else { 2 }),
            offset: index.saturating_sub(1),
            exclude,
            ..RangeRead::all(parent)
        }
    }

    /// The first (`last`: the last) item of `parent`, leaving out `exclude`.
    pub fn edge(parent: Id, last: bool, exclude: Option<Id>) -> Self {
        RangeRead {
            desc: last,
            limit: Some(1),
            exclude,
            ..RangeRead::all(parent)
        }
    }

    /// The nearest item of `parent` before (`up`) or after `pos`, leaving out `exclude`.
    pub fn neighbour(parent: Id, pos: &Position, up: bool, exclude: Option<Id>) -> Self {
        RangeRead {
            parent,
            above: (!up).then(|| pos.clone()),
            below: up.then(|| pos.clone()),
            desc: up,
            limit: Some(1),
            offset: 0,
            exclude,
            visible: false,
        }
    }

    /// Every item of `parent`, in order (`visible`: only the rows the lists show).
    pub fn all(parent: Id) -> Self {
        RangeRead {
            parent,
            above: None,
            below: None,
            desc: false,
            limit: None,
            offset: 0,
            exclude: None,
            visible: false,
        }
    }
}

/// A row as the planner sees it: its id, its collection and its position; what `list`
/// returns, with the keys in the model's own types (`K` the item's, `P` the list's).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Row<K = Id, P = Id> {
    /// The item.
    pub id: K,
    /// Its collection.
    pub parent: P,
    /// Its position.
    pub position: Position,
}

impl Row {
    /// This row with the keys in the model's own types.
    pub fn typed<K: crate::id::AppKey, P: crate::id::AppKey>(self) -> Result<Row<K, P>, Error> {
        Ok(Row {
            id: crate::changes::typed_key(self.id)?,
            parent: crate::changes::typed_key(self.parent)?,
            position: self.position,
        })
    }
}

/// Why the planner stopped.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// It needs this read; perform it, store the rows and run it again (boxed: a
    /// range read names a collection and an item, each a key held inline).
    Read(Box<Read>),
    /// The request is refused.
    Fail(Error),
}

impl From<Error> for Step {
    fn from(e: Error) -> Self {
        Step::Fail(e)
    }
}

/// The reads performed so far.
#[derive(Debug, Clone, Default)]
pub struct Reads {
    map: HashMap<Read, Vec<Row>>,
    links: HashMap<Read, Vec<(Id, Option<Id>)>>,
}

impl Reads {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }
    /// Stores the rows of a read.
    pub fn insert(&mut self, read: Read, rows: Vec<Row>) {
        self.map.insert(read, rows);
    }
    /// Stores the rows of a [`Read::Links`]: each row's id and the id its link names.
    pub fn insert_links(&mut self, read: Read, rows: Vec<(Id, Option<Id>)>) {
        self.links.insert(read, rows);
    }
    /// Forgets every read (after the parent lock is taken, reads start over).
    pub fn clear(&mut self) {
        self.map.clear();
        self.links.clear();
    }
    fn links(&self, read: Read) -> Result<&[(Id, Option<Id>)], Step> {
        match self.links.get(&read) {
            Some(rows) => Ok(rows),
            None => Err(Step::Read(Box::new(read))),
        }
    }
    fn get(&self, read: Read) -> Result<&[Row], Step> {
        match self.map.get(&read) {
            Some(rows) => Ok(rows),
            None => Err(Step::Read(Box::new(read))),
        }
    }
    pub(crate) fn item(&self, id: Id) -> Result<Option<&Row>, Step> {
        Ok(self.get(Read::Item { id })?.first())
    }
    fn range(&self, r: RangeRead) -> Result<&[Row], Step> {
        self.get(Read::Range(r))
    }
    fn ancestors(&self, of: Id) -> Result<&[Row], Step> {
        self.get(Read::Ancestors { of })
    }
    fn descendants(&self, of: Id) -> Result<&[Row], Step> {
        self.get(Read::Descendants { of })
    }
}

/// How a [`Write::Renumber`] passes through MySQL's and SQLite's row-by-row uniqueness
/// checks (PostgreSQL takes one statement under its deferrable constraint either way).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Passes {
    /// The first pass writes `-(new position + temp_offset)`, the second flips that back.
    /// `temp_offset` is 0, or the depth of the deepest value already in the temporary
    /// range (rows a relabel cut off between its passes left there, which a rebalance
    /// reads), so that the first pass never writes a value such a row holds.
    Two {
        /// How far below the negated new positions the first pass writes.
        temp_offset: i64,
    },
    /// The planner read every row of the range and all are inside the domain (a
    /// rebalance): `parks`, whose positions other rows are about to take, move to their
    /// negations first, then one ranked pass writes every final value (no row can be in
    /// another's way any more).
    One {
        /// The rows in the way.
        parks: Vec<Id>,
    },
}

/// A write the adapter executes, in order. [`crate::sql`] turns each into statements.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Write {
    /// Set one row's collection and position.
    Set {
        /// The item.
        id: Id,
        /// Its collection.
        parent: Id,
        /// Its position.
        position: Position,
    },
    /// Delete one row.
    Delete {
        /// The item.
        id: Id,
    },
    /// The rows the database deletes with a tree's row (its subtree, `ON DELETE
    /// CASCADE`): the lock rows of their lists, and of the deleted row's own list of
    /// children, are deleted, and the rows are reported removed.
    Cascade {
        /// The deleted row.
        item: Id,
        /// The rows below it.
        ids: Vec<Id>,
    },
    /// Relabel the rows of `parent` with `above < position < below` by rank: the row of
    /// rank `r` (from 1) gets `first + (r - 1 + [r > hole_after]) * step`, leaving one slot
    /// free after rank `hole_after`. One set-based statement (PostgreSQL) or two through
    /// the negative temporary range (MySQL, SQLite).
    Renumber {
        /// The collection.
        parent: Id,
        /// Exclusive lower bound of the relabelled range.
        above: i64,
        /// Exclusive upper bound.
        below: i64,
        /// The first new position.
        first: i64,
        /// The step.
        step: i64,
        /// The rank after which one slot is left free (`u64::MAX`: none).
        hole_after: u64,
        /// How many rows the range holds (for accounting).
        rows: u64,
        /// How MySQL and SQLite, which check uniqueness row by row, get there.
        passes: Passes,
    },
    /// Give these rows these positions (chunked `CASE` updates; on MySQL and SQLite the
    /// rows are first parked in the temporary range).
    Assign {
        /// The collection.
        parent: Id,
        /// The rows and their new positions.
        rows: Vec<(Id, Position)>,
    },
    /// Add `delta` to the positions of `parent` in `[from, to]` (dense strategy).
    Shift {
        /// The collection.
        parent: Id,
        /// Inclusive lower bound.
        from: i64,
        /// Inclusive upper bound.
        to: i64,
        /// +1 or -1.
        delta: i64,
        /// How many rows the range holds (for accounting).
        rows: u64,
    },
}

impl Write {
    /// Rows this write changes.
    pub fn rows(&self) -> u64 {
        match self {
            Write::Set { .. } | Write::Delete { .. } => 1,
            Write::Cascade { ids, .. } => ids.len() as u64,
            Write::Renumber { rows, .. } | Write::Shift { rows, .. } => *rows,
            Write::Assign { rows, .. } => rows.len() as u64,
        }
    }
}

/// What the planner decided.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Plan {
    /// The writes, in order.
    pub writes: Vec<Write>,
    /// For an insert: the collection and position of the new row, which the caller's own
    /// insert writes after `writes`.
    pub insert: Option<(Id, Position)>,
    /// The final position of the moved item, if any.
    pub position: Option<Position>,
    /// Rows relabelled besides the item itself (0 when a gap was found).
    pub relabelled: u64,
}

impl Plan {
    /// Rows written, counting the caller's insert.
    pub fn rows_written(&self) -> u64 {
        self.writes.iter().map(Write::rows).sum::<u64>() + u64::from(self.insert.is_some())
    }
}

/// The collections an operation must lock, in increasing id order. Runs before the lock
/// on unlocked reads; the planner re-checks everything under the lock.
pub fn parents_to_lock(spec: &Spec, req: &Request, reads: &Reads) -> Result<Vec<Id>, Step> {
    let parent_of = |id: Id| -> Result<Id, Step> {
        reads
            .item(id)?
            .map(|r| r.parent)
            .ok_or(Step::Fail(Error::NotFound { id }))
    };
    let mut ps = match req {
        Request::Insert { parent, .. }
        | Request::Reorder { parent, .. }
        | Request::Rebalance { parent }
        | Request::ConvertLinked { parent, .. } => vec![*parent],
        Request::Move { item, .. } | Request::MoveUp { item } | Request::MoveDown { item } => {
            vec![parent_of(*item)?]
        }
        // a tree's removal that looks below the row: its list of children too
        Request::Remove { item }
            if spec.is_tree() && spec.removal != crate::spec::Removal::Cascade =>
        {
            vec![parent_of(*item)?, *item]
        }
        Request::Remove { item } => vec![parent_of(*item)?],
        Request::MoveToParent { item, parent, .. } => vec![parent_of(*item)?, *parent],
        Request::Swap { a, .. } => vec![parent_of(*a)?],
    };
    ps.sort_unstable();
    ps.dedup();
    Ok(ps)
}

/// The collection whose expected version a request is checked against: the one the
/// item comes from, or the one it is inserted into.
pub fn primary_parent(req: &Request, locked_order: &[Id], reads: &Reads) -> Option<Id> {
    match req {
        Request::Insert { parent, .. }
        | Request::Reorder { parent, .. }
        | Request::Rebalance { parent }
        | Request::ConvertLinked { parent, .. } => Some(*parent),
        Request::Move { item, .. }
        | Request::MoveUp { item }
        | Request::MoveDown { item }
        | Request::Remove { item }
        | Request::MoveToParent { item, .. }
        | Request::Swap { a: item, .. } => reads
            .item(*item)
            .ok()
            .flatten()
            .map(|r| r.parent)
            .or_else(|| locked_order.first().copied()),
    }
}

/// Plans `req` under the locks on `locked`, from `reads` taken under those locks.
pub fn plan(spec: &Spec, req: &Request, reads: &Reads, locked: &[Id]) -> Result<Plan, Step> {
    let p = Planner {
        s: spec.strategy,
        policy: spec.policy,
        hidden: spec.filter.is_some(),
        reads,
        locked,
        spec,
    };
    match req {
        Request::Insert { parent, at } => {
            // a tree's list below the root belongs to a row that must exist (its lock
            // row would be made for any value)
            if spec.is_tree() && *parent != Id::ROOT && reads.item(*parent)?.is_none() {
                return Err(Step::Fail(Error::ParentNotFound { parent: *parent }));
            }
            p.place(*parent, at, None)
        }
        Request::Move { item, at } => {
            let row = p.locked_item(*item)?;
            p.place(row.parent, at, Some(row))
        }
        Request::MoveToParent { item, parent, at } => {
            let row = p.locked_item(*item)?;
            if spec.is_tree() && row.parent != *parent && *parent != Id::ROOT {
                p.check_no_cycle(row.id, *parent)?;
            }
            p.place(*parent, at, Some(row))
        }
        Request::MoveUp { item } | Request::MoveDown { item } => {
            let row = p.locked_item(*item)?;
            let up = matches!(req, Request::MoveUp { .. });
            // one place among the rows the list shows
            let near = p.shown_neighbour(row.parent, &row.position, up, Some(row.id))?;
            match near {
                None => Ok(Plan {
                    position: Some(row.position.clone()),
                    ..Plan::default()
                }),
                Some(n) => {
                    let at = if up {
                        Placement::Before(n.id)
                    } else {
                        Placement::After(n.id)
                    };
                    p.place(row.parent, &at, Some(row))
                }
            }
        }
        Request::Swap { a, b } => p.swap(*a, *b),
        Request::Remove { item } => p.remove(*item),
        Request::Reorder { parent, ids } => p.reorder(*parent, ids),
        Request::Rebalance { parent } => p.rebalance(*parent),
        Request::ConvertLinked {
            parent,
            column,
            link,
        } => p.convert_linked(*parent, column, *link),
    }
}

impl Planner<'_> {
    /// Refuses to put `item` under `parent` when `parent` is `item` or below it: walks
    /// up from `parent` through the rows read under the tree's lock (a row missing from
    /// the walk means a concurrent change the read did not see: retried).
    fn check_no_cycle(&self, item: Id, parent: Id) -> Result<(), Step> {
        let rows = self.reads.ancestors(parent)?;
        let mut cur = parent;
        for _ in 0..=rows.len() {
            if cur == item {
                return Err(Step::Fail(Error::WouldCycle { id: item, parent }));
            }
            let Some(row) = rows.iter().find(|r| r.id == cur) else {
                return Err(Step::Fail(if cur == parent {
                    Error::ParentNotFound { parent }
                } else {
                    Error::ParentChanged { id: item }
                }));
            };
            if row.parent == Id::ROOT {
                return Ok(());
            }
            cur = row.parent;
        }
        Err(Step::Fail(Error::Inconsistent(format!(
            "the parents above {parent} form a cycle: fix the tree's parent column (a write around the library made it)"
        ))))
    }
}

struct Planner<'a> {
    s: &'a dyn PositionStrategy,
    policy: RebalancePolicy,
    /// The table has a row filter: some rows are not shown.
    hidden: bool,
    reads: &'a Reads,
    /// The keys of the parent rows locked ([`Spec::lock_key`]).
    locked: &'a [Id],
    /// The table: which lock covers a collection ([`Spec::lock_key`]).
    spec: &'a Spec,
}

/// The resolved gap: the rows that will surround the item.
struct Gap {
    prev: Option<Row>,
    next: Option<Row>,
}

impl Planner<'_> {
    /// The key of the parent row that locks `scope` ([`Spec::lock_key`]).
    fn lock_key(&self, scope: Id) -> Id {
        self.spec.lock_key(scope)
    }

    /// An item read under the lock; it must still be in a locked collection.
    fn locked_item(&self, id: Id) -> Result<Row, Step> {
        let row = self
            .reads
            .item(id)?
            .cloned()
            .ok_or(Step::Fail(Error::NotFound { id }))?;
        if !self.locked.contains(&self.lock_key(row.parent)) {
            return Err(Error::ParentChanged { id }.into());
        }
        Ok(row)
    }

    /// An anchor read under the lock; it must be in `parent` and not be the mover.
    fn anchor(&self, id: Id, parent: Id, mover: Option<&Row>) -> Result<Row, Step> {
        if mover.is_some_and(|m| m.id == id) {
            return Err(Error::SelfReference { id }.into());
        }
        let row = self
            .reads
            .item(id)?
            .cloned()
            .ok_or(Step::Fail(Error::NotFound { id }))?;
        if row.parent != parent {
            return Err(Error::NotInCollection { id, parent }.into());
        }
        Ok(row)
    }

    /// The nearest row before (`up`) or after a position.
    fn neighbour(
        &self,
        parent: Id,
        pos: &Position,
        up: bool,
        exclude: Option<Id>,
    ) -> Result<Option<Row>, Step> {
        let r = RangeRead::neighbour(parent, pos, up, exclude);
        Ok(self.reads.range(r)?.first().cloned())
    }

    fn edge(&self, parent: Id, last: bool, exclude: Option<Id>) -> Result<Option<Row>, Step> {
        let r = RangeRead::edge(parent, last, exclude);
        Ok(self.reads.range(r)?.first().cloned())
    }

    /// [`Planner::neighbour`] among the rows the lists show.
    fn shown_neighbour(
        &self,
        parent: Id,
        pos: &Position,
        up: bool,
        exclude: Option<Id>,
    ) -> Result<Option<Row>, Step> {
        let r = RangeRead {
            visible: self.hidden,
            ..RangeRead::neighbour(parent, pos, up, exclude)
        };
        Ok(self.reads.range(r)?.first().cloned())
    }

    /// [`Planner::edge`] among the rows the lists show.
    fn shown_edge(&self, parent: Id, last: bool, exclude: Option<Id>) -> Result<Option<Row>, Step> {
        let r = RangeRead {
            visible: self.hidden,
            ..RangeRead::edge(parent, last, exclude)
        };
        Ok(self.reads.range(r)?.first().cloned())
    }

    fn gap(&self, parent: Id, at: &Placement, mover: Option<&Row>) -> Result<Gap, Step> {
        let ex = mover.map(|m| m.id);
        Ok(match at {
            Placement::First => Gap {
                prev: None,
                next: self.edge(parent, false, ex)?,
            },
            Placement::Last => Gap {
                prev: self.edge(parent, true, ex)?,
                next: None,
            },
            Placement::After(a) => {
                let a = self.anchor(*a, parent, mover)?;
                let next = self.neighbour(parent, &a.position, false, ex)?;
                Gap {
                    prev: Some(a),
                    next,
                }
            }
            Placement::Before(b) => {
                let b = self.anchor(*b, parent, mover)?;
                let prev = self.neighbour(parent, &b.position, true, ex)?;
                Gap {
                    prev,
                    next: Some(b),
                }
            }
            Placement::Between { prev, next } => {
                let stale = || {
                    Step::Fail(Error::StaleNeighbours {
                        prev: *prev,
                        next: *next,
                    })
                };
                if prev.is_some() && prev == next {
                    return Err(stale());
                }
                let p = prev.map(|id| self.anchor(id, parent, mover)).transpose()?;
                let n = next.map(|id| self.anchor(id, parent, mover)).transpose()?;
                // the actual successor of prev (or first item) must be next (or the end),
                // among the rows the list shows
                let succ = match &p {
                    Some(p) => self.shown_neighbour(parent, &p.position, false, ex)?,
                    None => self.shown_edge(parent, false, ex)?,
                };
                if succ.as_ref().map(|r| r.id) != n.as_ref().map(|r| r.id) {
                    return Err(stale());
                }
                if !self.hidden {
                    return Ok(Gap { prev: p, next: n });
                }
                // and the shown predecessor of next (or the last shown row) must be prev:
                // a prev the list no longer shows is stale too (its shown successor can
                // still be next)
                let pred = match &n {
                    Some(n) => self.shown_neighbour(parent, &n.position, true, ex)?,
                    None => self.shown_edge(parent, true, ex)?,
                };
                if pred.as_ref().map(|r| r.id) != p.as_ref().map(|r| r.id) {
                    return Err(stale());
                }
                // rows the list does not show may lie between them: directly after prev
                // (or before next, or at the end)
                match (p, n) {
                    (Some(p), _) => Gap {
                        next: self.neighbour(parent, &p.position, false, ex)?,
                        prev: Some(p),
                    },
                    (None, Some(n)) => Gap {
                        prev: self.neighbour(parent, &n.position, true, ex)?,
                        next: Some(n),
                    },
                    (None, None) => Gap {
                        prev: self.edge(parent, true, ex)?,
                        next: None,
                    },
                }
            }
            // no hidden rows: the rows at i - 1 and i are the neighbours, read together
            // (in the fused read)
            Placement::Index(i) if !self.hidden => {
                let rows = self.reads.range(RangeRead::at_index(parent, *i, ex))?;
                let (prev, next) = if *i == 0 {
                    (None, rows.first())
                } else {
                    (rows.first(), rows.get(1))
                };
                // past the end: not even the row before the index
                if *i > 0 && prev.is_none() {
                    return Err(Error::IndexOutOfRange { index: *i }.into());
                }
                Gap {
                    prev: prev.cloned(),
                    next: next.cloned(),
                }
            }
            Placement::Index(i) => {
                // the index counts the rows the list shows
                let at_i = RangeRead {
                    limit: Some(1),
                    offset: *i,
                    exclude: ex,
                    visible: self.hidden,
                    ..RangeRead::all(parent)
                };
                match self.reads.range(at_i)?.first().cloned() {
                    Some(next) => {
                        let prev = self.neighbour(parent, &next.position, true, ex)?;
                        Gap {
                            prev,
                            next: Some(next),
                        }
                    }
                    None => {
                        // the end: valid when the index is the list's length
                        let fits = *i == 0 || {
                            let before = RangeRead {
                                limit: Some(1),
                                offset: i - 1,
                                exclude: ex,
                                visible: self.hidden,
                                ..RangeRead::all(parent)
                            };
                            !self.reads.range(before)?.is_empty()
                        };
                        if !fits {
                            return Err(Error::IndexOutOfRange { index: *i }.into());
                        }
                        Gap {
                            prev: self.edge(parent, true, ex)?,
                            next: None,
                        }
                    }
                }
            }
        })
    }

    fn place(&self, parent: Id, at: &Placement, mover: Option<Row>) -> Result<Plan, Step> {
        if !self.locked.contains(&self.lock_key(parent)) {
            return Err(Error::ParentChanged {
                id: mover.as_ref().map_or(parent, |m| m.id),
            }
            .into());
        }
        let gap = self.gap(parent, at, mover.as_ref())?;
        if self.s.is_dense() {
            return self.place_dense(parent, gap, mover);
        }
        // already there: nothing to write
        if let Some(m) = &mover
            && m.parent == parent
            && gap.prev.as_ref().is_none_or(|p| p.position < m.position)
            && gap.next.as_ref().is_none_or(|n| m.position < n.position)
        {
            return Ok(Plan {
                position: Some(m.position.clone()),
                ..Plan::default()
            });
        }
        let pp = gap.prev.as_ref().map(|r| &r.position);
        let np = gap.next.as_ref().map(|r| &r.position);
        if let Some(pos) = self.s.between(pp, np)? {
            return Ok(finish(Vec::new(), parent, pos, mover, 0));
        }
        match self.policy {
            RebalancePolicy::Never => Err(Error::Exhausted.into()),
            RebalancePolicy::Whole => self.relabel_whole(parent, &gap, mover),
            RebalancePolicy::Window => self.relabel_window(parent, &gap, mover),
        }
    }

    fn relabel_whole(&self, parent: Id, gap: &Gap, mover: Option<Row>) -> Result<Plan, Step> {
        let ex = mover.as_ref().map(|m| m.id);
        let all = self.reads.range(RangeRead {
            exclude: ex,
            ..RangeRead::all(parent)
        })?;
        // the hole goes after prev: its rank is its index + 1
        let lower = match &gap.prev {
            None => 0,
            Some(p) => all.iter().position(|r| r.id == p.id).map_or(0, |i| i + 1),
        };
        let n = all.len() as u64 + 1;
        let spread = self
            .s
            .spread(None, None, n, SpreadMode::Fit)?
            .ok_or(Step::Fail(Error::Exhausted))?;
        self.apply_spread(parent, spread, None, None, all, lower, mover)
    }

    fn relabel_window(&self, parent: Id, gap: &Gap, mover: Option<Row>) -> Result<Plan, Step> {
        let ex = mover.as_ref().map(|m| m.id);
        let mut k: u64 = 1;
        loop {
            // k items on each side of the gap, plus the outer bound on each side
            let low = self.reads.range(RangeRead {
                parent,
                above: None,
                below: gap.next.as_ref().map(|r| r.position.clone()),
                desc: true,
                limit: Some(k + 1),
                offset: 0,
                exclude: ex,
                visible: false,
            })?;
            let high = self.reads.range(RangeRead {
                parent,
                above: gap.prev.as_ref().map(|r| r.position.clone()),
                below: None,
                desc: false,
                limit: Some(k + 1),
                offset: 0,
                exclude: ex,
                visible: false,
            })?;
            let (low_items, low_bound) = split_bound(low, k);
            let (high_items, high_bound) = split_bound(high, k);
            let whole = low_bound.is_none() && high_bound.is_none();
            let n = (low_items.len() + high_items.len()) as u64 + 1;
            let lb = low_bound.map(|r| &r.position);
            let hb = high_bound.map(|r| &r.position);
            let mode = if whole {
                SpreadMode::Fit
            } else {
                SpreadMode::Window
            };
            if let Some(spread) = self.s.spread(lb, hb, n, mode)? {
                let mut rows: Vec<Row> = low_items.iter().rev().cloned().collect();
                rows.extend(high_items.iter().cloned());
                let lower = low_items.len();
                return self.apply_spread(parent, spread, lb, hb, &rows, lower, mover);
            }
            if whole {
                return Err(Error::Exhausted.into());
            }
            k = k.saturating_mul(2);
        }
    }

    /// Relabels `rows` (in order, all the rows strictly between `lb` and `hb`) with
    /// `spread`, leaving slot `lower` for the item.
    #[allow(clippy::too_many_arguments)]
    fn apply_spread(
        &self,
        parent: Id,
        spread: Spread,
        lb: Option<&Position>,
        hb: Option<&Position>,
        rows: &[Row],
        lower: usize,
        mover: Option<Row>,
    ) -> Result<Plan, Step> {
        let pos = spread
            .nth(lower as u64)
            .ok_or(Step::Fail(Error::Exhausted))?;
        self.s.check(&pos)?;
        let mut writes = Vec::new();
        match &spread {
            Spread::Arithmetic { first, step } => {
                // an open end reaches down to (not including) the parking slot
                let above = match lb {
                    Some(p) => p.as_int().unwrap_or(MIN_POSITION - 1),
                    None => PARK_POSITION,
                };
                let below = match hb {
                    Some(p) => p.as_int().unwrap_or(MAX_POSITION + 1),
                    None => i64::MAX,
                };
                // the mover sits inside the relabelled range: park it first
                if let Some(m) = &mover
                    && m.parent == parent
                    && m.position.as_int().is_some_and(|v| above < v && v < below)
                {
                    writes.push(Write::Set {
                        id: m.id,
                        parent,
                        position: Position::Int(PARK_POSITION),
                    });
                }
                writes.push(Write::Renumber {
                    parent,
                    above,
                    below,
                    first: *first,
                    step: *step,
                    hole_after: lower as u64,
                    rows: rows.len() as u64,
                    // a window reads no row of the temporary range
                    passes: Passes::Two { temp_offset: 0 },
                });
                Ok(finish(writes, parent, pos, mover, rows.len() as u64))
            }
            Spread::Explicit(ps) => {
                let mut assign: Vec<(Id, Position)> = Vec::with_capacity(rows.len() + 1);
                for (i, r) in rows.iter().enumerate() {
                    let slot = if i < lower { i } else { i + 1 };
                    let p = ps.get(slot).cloned().ok_or(Step::Fail(Error::Exhausted))?;
                    if p != r.position {
                        assign.push((r.id, p));
                    }
                }
                let relabelled = assign.len() as u64;
                match mover {
                    // the mover is assigned in the same statement(s)
                    Some(m) if m.parent == parent => {
                        assign.push((m.id, pos.clone()));
                        writes.push(Write::Assign {
                            parent,
                            rows: assign,
                        });
                        Ok(Plan {
                            writes,
                            insert: None,
                            position: Some(pos),
                            relabelled,
                        })
                    }
                    other => {
                        if !assign.is_empty() {
                            writes.push(Write::Assign {
                                parent,
                                rows: assign,
                            });
                        }
                        Ok(finish(writes, parent, pos, other, relabelled))
                    }
                }
            }
        }
    }

    fn place_dense(&self, parent: Id, gap: Gap, mover: Option<Row>) -> Result<Plan, Step> {
        let idx = |r: &Row| r.position.as_int().unwrap_or(0);
        let last = self.edge(parent, true, None)?;
        let len = last.as_ref().map_or(0, |r| idx(r) + 1);
        // target index in the list without the mover
        let same = mover.as_ref().filter(|m| m.parent == parent);
        let adj = |r: &Row| {
            let i = idx(r);
            match same {
                Some(m) if idx(m) < i => i - 1,
                _ => i,
            }
        };
        let target = match (&gap.prev, &gap.next) {
            (Some(p), _) => adj(p) + 1,
            (None, Some(n)) => adj(n),
            (None, None) => 0,
        };
        let mut writes = Vec::new();
        match (&mover, same) {
            (None, _) => {
                if target < len {
                    writes.push(shift(parent, target, len - 1, 1));
                }
                let relabelled = (len - target).max(0) as u64;
                Ok(finish(
                    writes,
                    parent,
                    Position::Int(target),
                    None,
                    relabelled,
                ))
            }
            (Some(m), Some(_)) => {
                let from = idx(m);
                if from == target {
                    return Ok(Plan {
                        position: Some(m.position.clone()),
                        ..Plan::default()
                    });
                }
                writes.push(Write::Set {
                    id: m.id,
                    parent,
                    position: Position::Int(PARK_POSITION),
                });
                if target > from {
                    writes.push(shift(parent, from + 1, target, -1));
                } else {
                    writes.push(shift(parent, target, from - 1, 1));
                }
                let relabelled = (target - from).unsigned_abs();
                Ok(finish(
                    writes,
                    parent,
                    Position::Int(target),
                    mover,
                    relabelled,
                ))
            }
            (Some(m), None) => {
                // leave the old collection, closing the hole, then enter the new one
                let old_last = self.edge(m.parent, true, None)?;
                let old_len = old_last.as_ref().map_or(0, |r| idx(r) + 1);
                let from = idx(m);
                if target < len {
                    writes.push(shift(parent, target, len - 1, 1));
                }
                writes.push(Write::Set {
                    id: m.id,
                    parent,
                    position: Position::Int(target),
                });
                if from + 1 < old_len {
                    writes.push(shift(m.parent, from + 1, old_len - 1, -1));
                }
                let relabelled = ((len - target) + (old_len - from - 1)).max(0) as u64;
                Ok(Plan {
                    writes,
                    insert: None,
                    position: Some(Position::Int(target)),
                    relabelled,
                })
            }
        }
    }

    fn swap(&self, a: Id, b: Id) -> Result<Plan, Step> {
        let ra = self.locked_item(a)?;
        if a == b {
            return Err(Error::SelfReference { id: a }.into());
        }
        let rb = self.anchor(b, ra.parent, None)?;
        Ok(Plan {
            writes: vec![Write::Assign {
                parent: ra.parent,
                rows: vec![(a, rb.position.clone()), (b, ra.position.clone())],
            }],
            insert: None,
            position: Some(rb.position),
            relabelled: 1,
        })
    }

    fn remove(&self, item: Id) -> Result<Plan, Step> {
        let row = self.locked_item(item)?;
        if self.spec.is_tree() && self.spec.removal != Removal::Cascade {
            // its list of children, locked too (parents_to_lock)
            let children = self.reads.range(RangeRead::all(item))?;
            if !children.is_empty() {
                return match self.spec.removal {
                    Removal::Refuse => Err(Error::HasChildren { id: item }.into()),
                    _ => self.lift(row, children),
                };
            }
        }
        let mut writes = vec![Write::Delete { id: item }];
        if self.spec.is_tree() {
            // the subtree goes with it: its rows are reported, its lists' lock rows go
            let ids = self.reads.descendants(item)?.iter().map(|r| r.id).collect();
            writes.push(Write::Cascade { item, ids });
        }
        let mut relabelled = 0;
        if self.s.is_dense() {
            let last = self.edge(row.parent, true, None)?;
            let from = row.position.as_int().unwrap_or(0);
            let end = last.and_then(|r| r.position.as_int()).unwrap_or(from);
            if end > from {
                writes.push(shift(row.parent, from + 1, end, -1));
                relabelled = (end - from) as u64;
            }
        }
        Ok(Plan {
            writes,
            insert: None,
            position: None,
            relabelled,
        })
    }

    /// [`Removal::Lift`]: the children of `row` take its place in its list, in their
    /// order, then it goes. While the gap after it (or before it) has room, one write
    /// per child; else the whole list is relabelled with the children in its place.
    fn lift(&self, row: Row, children: &[Row]) -> Result<Plan, Step> {
        let parent = row.parent;
        let all = self.reads.range(RangeRead::all(parent))?;
        let at = all.iter().position(|r| r.id == row.id).ok_or_else(|| {
            Step::Fail(Error::Inconsistent(
                "the removed row is missing from its own list".into(),
            ))
        })?;
        let prev = at
            .checked_sub(1)
            .and_then(|i| all.get(i))
            .map(|r| &r.position);
        let next = all.get(at + 1).map(|r| &r.position);
        let k = children.len() as u64;
        let exhausted = || Step::Fail(Error::Exhausted);
        let fit = if self.s.is_dense() {
            None
        } else {
            match self
                .s
                .spread(Some(&row.position), next, k, SpreadMode::Fit)?
            {
                Some(sp) => Some(sp),
                None => self
                    .s
                    .spread(prev, Some(&row.position), k, SpreadMode::Fit)?,
            }
        };
        let mut writes = Vec::new();
        let mut relabelled = 0;
        let mut sets = Vec::with_capacity(children.len());
        match fit {
            Some(sp) => {
                for (i, c) in children.iter().enumerate() {
                    let position = sp.nth(i as u64).ok_or_else(exhausted)?;
                    sets.push(Write::Set {
                        id: c.id,
                        parent,
                        position,
                    });
                }
            }
            None => {
                // the row keeps a slot until it is deleted (deleting it first would
                // take the children with it)
                let total = all.len() as u64 + k;
                let sp = self
                    .s
                    .spread(None, None, total, SpreadMode::Fit)?
                    .ok_or_else(exhausted)?;
                let order = all[..=at]
                    .iter()
                    .map(|r| (r, false))
                    .chain(children.iter().map(|c| (c, true)))
                    .chain(all[at + 1..].iter().map(|r| (r, false)));
                let mut rows = Vec::new();
                for (i, (r, child)) in order.enumerate() {
                    let position = sp.nth(i as u64).ok_or_else(exhausted)?;
                    if child {
                        sets.push(Write::Set {
                            id: r.id,
                            parent,
                            position,
                        });
                    } else if r.position != position {
                        rows.push((r.id, position));
                    }
                }
                relabelled = rows.len() as u64;
                if !rows.is_empty() {
                    writes.push(Write::Assign { parent, rows });
                }
            }
        }
        writes.extend(sets);
        writes.push(Write::Delete { id: row.id });
        // its emptied list's lock row goes, as with a cascade
        writes.push(Write::Cascade {
            item: row.id,
            ids: Vec::new(),
        });
        if self.s.is_dense() {
            // the hole the row left
            let from = i64::try_from(at).unwrap_or(i64::MAX) + 1;
            let end = i64::try_from(all.len() as u64 + k).unwrap_or(i64::MAX) - 1;
            if end >= from {
                writes.push(shift(parent, from, end, -1));
                relabelled += (end - from + 1) as u64;
            }
        }
        Ok(Plan {
            writes,
            insert: None,
            position: None,
            relabelled,
        })
    }

    /// [`Request::ConvertLinked`]: every row of the list, in chain order, gets a
    /// position of an even spread, in one assignment; a list that is not one chain is
    /// refused before anything is written.
    fn convert_linked(&self, parent: Id, column: &str, link: Link) -> Result<Plan, Step> {
        if !self.locked.contains(&self.lock_key(parent)) {
            return Err(Error::ParentChanged { id: parent }.into());
        }
        let rows = self.reads.links(Read::Links {
            parent,
            column: column.to_owned(),
        })?;
        let order = crate::linked::chain(parent, rows, link)
            .map_err(|b| Step::Fail(Error::BrokenList(Box::new(b))))?;
        if order.is_empty() {
            return Ok(Plan::default());
        }
        let n = order.len() as u64;
        let spread = self
            .s
            .spread(None, None, n, SpreadMode::Fit)?
            .ok_or(Step::Fail(Error::Exhausted))?;
        let rows = order
            .iter()
            .enumerate()
            .map(|(i, id)| spread.nth(i as u64).map(|p| (*id, p)))
            .collect::<Option<Vec<_>>>()
            .ok_or(Step::Fail(Error::Exhausted))?;
        Ok(Plan {
            writes: vec![Write::Assign { parent, rows }],
            insert: None,
            position: None,
            relabelled: n,
        })
    }

    fn rebalance(&self, parent: Id) -> Result<Plan, Step> {
        let all = self.reads.range(RangeRead::all(parent))?;
        let n = all.len() as u64;
        if n == 0 {
            return Ok(Plan::default());
        }
        let spread = self
            .s
            .spread(None, None, n, SpreadMode::Fit)?
            .ok_or(Step::Fail(Error::Exhausted))?;
        let writes = match spread {
            Spread::Arithmetic { first, step } => vec![Write::Renumber {
                parent,
                // every row, a parked one included: an operation cut off part-way (on a
                // Galera cluster, PartiallyApplied) can leave one, and rebalance must place it
                above: PARK_POSITION - 1,
                below: i64::MAX,
                first,
                step,
                hole_after: u64::MAX,
                rows: n,
                passes: match in_the_way(all, first, step) {
                    Some(parks) => Passes::One { parks },
                    None => Passes::Two {
                        temp_offset: temp_depth(
                            all,
                            first.saturating_add(
                                step.saturating_mul(i64::try_from(n).unwrap_or(i64::MAX) - 1),
                            ),
                        ),
                    },
                },
            }],
            Spread::Explicit(ps) => {
                let rows: Vec<(Id, Position)> = all
                    .iter()
                    .zip(ps)
                    .filter(|(r, p)| r.position != *p)
                    .map(|(r, p)| (r.id, p))
                    .collect();
                if rows.is_empty() {
                    Vec::new()
                } else {
                    vec![Write::Assign { parent, rows }]
                }
            }
        };
        let relabelled = writes.iter().map(Write::rows).sum();
        Ok(Plan {
            writes,
            insert: None,
            position: None,
            relabelled,
        })
    }

    fn reorder(&self, parent: Id, ids: &[Id]) -> Result<Plan, Step> {
        let all = self.reads.range(RangeRead::all(parent))?;
        let mismatch = |reason: String| Step::Fail(Error::ReorderMismatch { parent, reason });
        if all.len() != ids.len() {
            return Err(mismatch(format!(
                "{} ids given for {} items",
                ids.len(),
                all.len()
            )));
        }
        let rank: HashMap<Id, usize> = all.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
        let mut seen = std::collections::HashSet::with_capacity(ids.len());
        let mut order = Vec::with_capacity(ids.len());
        for id in ids {
            let Some(&r) = rank.get(id) else {
                return Err(mismatch(format!("item {id} is not in the collection")));
            };
            if !seen.insert(*id) {
                return Err(mismatch(format!("item {id} is listed twice")));
            }
            order.push(r);
        }
        let n = all.len();
        let mut rows: Vec<(Id, Position)> = Vec::new();
        if self.s.is_dense() {
            for (i, &r) in order.iter().enumerate() {
                if r != i {
                    rows.push((all[r].id, Position::Int(i as i64)));
                }
            }
        } else {
            let keep = lis(&order);
            // runs of moved items between kept neighbours get positions between them
            let mut i = 0;
            let mut fits = true;
            while i < n && fits {
                if keep[i] {
                    i += 1;
                    continue;
                }
                let start = i;
                while i < n && !keep[i] {
                    i += 1;
                }
                let lo = start.checked_sub(1).map(|j| &all[order[j]].position);
                let hi = (i < n).then(|| &all[order[i]].position);
                match self.s.spread(lo, hi, (i - start) as u64, SpreadMode::Fit)? {
                    Some(sp) => {
                        for (j, &o) in order[start..i].iter().enumerate() {
                            let p = sp.nth(j as u64).ok_or(Step::Fail(Error::Exhausted))?;
                            rows.push((all[o].id, p));
                        }
                    }
                    None => fits = false,
                }
            }
            if !fits {
                // no room between the kept items: spread the whole list in the new order
                rows.clear();
                let sp = self
                    .s
                    .spread(None, None, n as u64, SpreadMode::Fit)?
                    .ok_or(Step::Fail(Error::Exhausted))?;
                for (j, &o) in order.iter().enumerate() {
                    let p = sp.nth(j as u64).ok_or(Step::Fail(Error::Exhausted))?;
                    if p != all[o].position {
                        rows.push((all[o].id, p));
                    }
                }
            }
        }
        let relabelled = rows.len() as u64;
        let writes = if rows.is_empty() {
            Vec::new()
        } else {
            vec![Write::Assign { parent, rows }]
        };
        Ok(Plan {
            writes,
            insert: None,
            position: None,
            relabelled,
        })
    }
}

/// How deep into the temporary range `[-(2^62 - 1), -1]` the rows already there reach
/// (0 when none is), so that a relabel's first pass, writing `-(position + depth)` for
/// new positions up to `last`, stays below all of them; 0 when that would leave the range
/// (the values may then collide, as they could before).
fn temp_depth(rows: &[Row], last: i64) -> i64 {
    let deepest = rows
        .iter()
        .filter_map(|r| r.position.as_int())
        .filter(|&v| PARK_POSITION < v && v < 0)
        .min()
        .unwrap_or(0);
    match last.checked_add(-deepest) {
        Some(end) if end <= MAX_POSITION => -deepest,
        _ => 0,
    }
}

/// At most this many rows are moved out of the way for a one-pass relabel; a list with
/// more (a shift by one slot, where every row takes its neighbour's place) takes two.
const MAX_PARKS: usize = 16;

/// The rows of `rows` (every row of a list, in rank order) whose positions other rows take
/// when rank `i` gets `first + i * step`, or `None` when a one-pass relabel is not safe:
/// a row outside the domain (the temporary range, the parking slot), two rows at one
/// position, rows out of position order, a step that is not positive, or more than
/// [`MAX_PARKS`] rows in the way.
///
/// Both the rows' positions and the new ones ascend, so one walk over the two finds
/// every row whose position a new one takes (a 100k-row rebalance spent 10 ms hashing
/// them before).
fn in_the_way(rows: &[Row], first: i64, step: i64) -> Option<Vec<Id>> {
    if step <= 0 {
        return None;
    }
    // (position, id) of every row, in the order read
    let mut held: Vec<(i64, Id)> = Vec::with_capacity(rows.len());
    for r in rows {
        let v = r.position.as_int()?;
        let ascends = held.last().is_none_or(|&(prev, _)| prev < v);
        if !(MIN_POSITION..=MAX_POSITION).contains(&v) || !ascends {
            return None;
        }
        held.push((v, r.id));
    }
    let mut parks = Vec::new();
    let mut at = 0;
    let mut new = first;
    for r in rows {
        while held.get(at).is_some_and(|&(v, _)| v < new) {
            at += 1;
        }
        if let Some(&(v, holder)) = held.get(at)
            && v == new
            && holder != r.id
        {
            if parks.len() == MAX_PARKS {
                return None;
            }
            parks.push(holder);
        }
        new = new.checked_add(step)?;
    }
    Some(parks)
}

fn split_bound(rows: &[Row], k: u64) -> (&[Row], Option<&Row>) {
    if rows.len() as u64 > k {
        let (items, rest) = rows.split_at(rows.len() - 1);
        (items, rest.first())
    } else {
        (rows, None)
    }
}

fn shift(parent: Id, from: i64, to: i64, delta: i64) -> Write {
    Write::Shift {
        parent,
        from,
        to,
        delta,
        rows: (to - from + 1).max(0) as u64,
    }
}

/// Completes a plan: the insert, or the mover's final write.
fn finish(
    mut writes: Vec<Write>,
    parent: Id,
    pos: Position,
    mover: Option<Row>,
    relabelled: u64,
) -> Plan {
    match mover {
        None => Plan {
            writes,
            insert: Some((parent, pos.clone())),
            position: Some(pos),
            relabelled,
        },
        Some(m) => {
            writes.push(Write::Set {
                id: m.id,
                parent,
                position: pos.clone(),
            });
            Plan {
                writes,
                insert: None,
                position: Some(pos),
                relabelled,
            }
        }
    }
}

/// Marks the members of one longest strictly increasing subsequence (O(n log n)).
fn lis(seq: &[usize]) -> Vec<bool> {
    let n = seq.len();
    let mut tails: Vec<usize> = Vec::new(); // indices into seq
    let mut prev = vec![usize::MAX; n];
    for i in 0..n {
        let pos = tails.partition_point(|&t| seq[t] < seq[i]);
        if pos > 0 {
            prev[i] = tails[pos - 1];
        }
        if pos == tails.len() {
            tails.push(i);
        } else {
            tails[pos] = i;
        }
    }
    let mut keep = vec![false; n];
    let mut cur = tails.last().copied().unwrap_or(usize::MAX);
    while cur != usize::MAX {
        keep[cur] = true;
        cur = prev[cur];
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::{MAX_PARKS, Row, in_the_way, lis};
    use crate::{Id, Position};
    use proptest::prelude::*;

    /// The definition [`in_the_way`] implements, by brute force: rank `i`'s new position is
    /// `first + i * step`, and the row in the way is the other row that holds it now;
    /// `None` for a row outside the domain or more than [`MAX_PARKS`] in the way.
    fn by_definition(rows: &[Row], first: i64, step: i64) -> Option<Vec<Id>> {
        let domain = crate::position::MIN_POSITION..=crate::position::MAX_POSITION;
        if rows
            .iter()
            .any(|r| r.position.as_int().is_none_or(|v| !domain.contains(&v)))
        {
            return None;
        }
        let parks: Vec<Id> = rows
            .iter()
            .zip(0i64..)
            .filter_map(|(r, i)| {
                let new = Position::Int(first + i * step);
                rows.iter()
                    .find(|h| h.position == new && h.id != r.id)
                    .map(|h| h.id)
            })
            .collect();
        (parks.len() <= MAX_PARKS).then_some(parks)
    }

    proptest! {
        /// On rows in position order (as a rebalance reads them) the walk finds the rows
        /// the definition names, in the same order.
        #[test]
        fn the_walk_finds_the_rows_in_the_way(
            gaps in proptest::collection::vec(1i64..3000, 0..200),
            start in -5i64..3000,
            first in 1i64..3000,
            step in 1i64..3000,
        ) {
            let mut v = start;
            let rows: Vec<Row> = gaps
                .iter()
                .enumerate()
                .map(|(i, g)| {
                    v += g;
                    Row {
                        id: Id::Int(i as i64 + 1),
                        parent: Id::Int(1),
                        position: Position::Int(v),
                    }
                })
                .collect();
            prop_assert_eq!(in_the_way(&rows, first, step), by_definition(&rows, first, step));
        }
    }

    #[test]
    fn rows_out_of_order_or_a_step_that_is_not_positive_take_two_passes() {
        let row = |id, p| Row {
            id: Id::Int(id),
            parent: Id::Int(1),
            position: Position::Int(p),
        };
        assert_eq!(in_the_way(&[row(1, 5), row(2, 3)], 1, 1), None);
        assert_eq!(in_the_way(&[row(1, 3), row(2, 5)], 10, 0), None);
        assert_eq!(
            in_the_way(&[row(1, 1), row(2, 2)], 2, 1),
            Some(vec![Id::Int(2)])
        );
    }

    #[test]
    fn lis_marks_a_longest_run() {
        let keep = lis(&[3, 0, 1, 4, 2]);
        assert_eq!(keep.iter().filter(|k| **k).count(), 3);
        assert_eq!(lis(&[0, 1, 2]), vec![true; 3]);
        assert_eq!(lis(&[]), Vec::<bool>::new());
    }
}
