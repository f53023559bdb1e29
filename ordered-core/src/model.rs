//! An in-memory collection store that runs the same planner as the adapters, so tests
//! and benchmarks can drive millions of operations and count what a database would
//! write.
//!
//! ```
//! use ordered_core::model::Store;
//! use ordered_core::{Fractional, Placement, Request, Spec};
//!
//! const SPEC: Spec = Spec::new("t", "p", "ps")
//!     .with_position("k")
//!     .with_strategy(&Fractional::DEFAULT);
//! let mut store = Store::new(SPEC);
//! let a = store.insert(1, Placement::Last)?;
//! let b = store.insert(1, Placement::Last)?;
//! let c = store.insert(1, Placement::Between { prev: Some(a), next: Some(b) })?;
//! assert_eq!(store.ids(1), [a, c, b]);
//! assert_eq!(store.list(1)[1].position, "a0V".into());
//! # Ok::<(), ordered_core::Error>(())
//! ```

use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;

use crate::Id;
use crate::error::Error;
use crate::plan::{self, Plan, Read, Reads, Request, Row, Step, Write};
use crate::position::Position;
use crate::spec::Spec;

/// Totals across every operation applied to a [`Store`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Operations that succeeded.
    pub ops: u64,
    /// Rows written (the item itself included).
    pub rows_written: u64,
    /// Operations that relabelled other rows.
    pub relabels: u64,
    /// Rows relabelled besides the items themselves.
    pub relabelled: u64,
    /// Reads the planner asked for.
    pub reads: u64,
}

/// In-memory collections keyed by parent.
#[derive(Debug, Clone)]
pub struct Store {
    spec: Spec,
    rows: HashMap<Id, (Id, Position)>,
    order: HashMap<Id, BTreeSet<(Position, Id)>>,
    next_id: i64,
    stats: Stats,
    /// Previous states of the rows changed by the operation in progress.
    undo: Vec<(Id, Option<(Id, Position)>)>,
}

impl Store {
    /// An empty store for a table described by `spec`.
    pub fn new(spec: Spec) -> Self {
        Store {
            spec,
            rows: HashMap::new(),
            order: HashMap::new(),
            next_id: 1,
            stats: Stats::default(),
            undo: Vec::new(),
        }
    }

    /// Totals so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Inserts a new item and returns its id.
    pub fn insert(&mut self, parent: impl Into<Id>, at: plan::Placement) -> Result<Id, Error> {
        let parent = parent.into();
        let p = self.apply(&Request::Insert { parent, at })?;
        let (parent, pos) = p.insert.ok_or(Error::Exhausted)?;
        let id = Id::Int(self.next_id);
        self.next_id += 1;
        self.put(id, parent, pos)?;
        Ok(id)
    }

    /// Plans `req` against the current state and applies the writes (not the insert of
    /// a new row, which [`Store::insert`] does). Returns the plan.
    pub fn apply(&mut self, req: &Request) -> Result<Plan, Error> {
        let mut reads = Reads::new();
        let locked = loop {
            match plan::parents_to_lock(&self.spec, req, &reads) {
                Ok(ps) => {
                    let mut keys: Vec<_> = ps.into_iter().map(|p| self.spec.lock_key(p)).collect();
                    keys.sort_unstable();
                    keys.dedup();
                    break keys;
                }
                Err(Step::Read(q)) => {
                    let rows = self.answer(&q);
                    reads.insert(*q, rows);
                }
                Err(Step::Fail(e)) => return Err(e),
            }
        };
        reads.clear();
        let plan = loop {
            match plan::plan(&self.spec, req, &reads, &locked) {
                Ok(p) => break p,
                Err(Step::Read(q)) if matches!(*q, Read::Links { .. }) => {
                    self.stats.reads += 1;
                    let rows = self.answer_links(&q);
                    reads.insert_links(*q, rows);
                }
                Err(Step::Read(q)) => {
                    self.stats.reads += 1;
                    let rows = self.answer(&q);
                    reads.insert(*q, rows);
                }
                Err(Step::Fail(e)) => return Err(e),
            }
        };
        self.undo.clear();
        for w in &plan.writes {
            if let Err(e) = self.execute(w) {
                // like a rolled-back transaction: nothing changes
                self.rollback();
                return Err(e);
            }
        }
        self.stats.ops += 1;
        self.stats.rows_written += plan.rows_written();
        if plan.relabelled > 0 {
            self.stats.relabels += 1;
            self.stats.relabelled += plan.relabelled;
        }
        Ok(plan)
    }

    /// The items of a collection in order.
    pub fn list(&self, parent: impl Into<Id>) -> Vec<Row> {
        let parent = parent.into();
        self.order
            .get(&parent)
            .map(|s| {
                s.iter()
                    .map(|(p, id)| Row {
                        id: *id,
                        parent,
                        position: p.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The ids of a collection in order.
    pub fn ids(&self, parent: impl Into<Id>) -> Vec<Id> {
        self.list(parent).into_iter().map(|r| r.id).collect()
    }

    /// Answers a [`Read::Links`]: the store keeps no link column, so each row links to
    /// the row before it in the list's order (converting it keeps the order).
    pub fn answer_links(&self, q: &Read) -> Vec<(Id, Option<Id>)> {
        let Read::Links { parent, .. } = q else {
            return Vec::new();
        };
        let ids = self.ids(*parent);
        ids.iter()
            .enumerate()
            .map(|(i, id)| (*id, i.checked_sub(1).map(|j| ids[j])))
            .collect()
    }

    /// Answers a planner read.
    pub fn answer(&self, q: &Read) -> Vec<Row> {
        match q {
            Read::Links { .. } => Vec::new(),
            Read::Item { id } => self
                .rows
                .get(id)
                .map(|(parent, p)| Row {
                    id: *id,
                    parent: *parent,
                    position: p.clone(),
                })
                .into_iter()
                .collect(),
            Read::Ancestors { of } => {
                // a tree's parents are rows: follow them up to the root
                let mut out: Vec<Row> = Vec::new();
                let mut cur = *of;
                while let Some((parent, p)) = self.rows.get(&cur) {
                    if out.iter().any(|r| r.id == cur) {
                        break;
                    }
                    out.push(Row {
                        id: cur,
                        parent: *parent,
                        position: p.clone(),
                    });
                    cur = *parent;
                }
                out
            }
            Read::Descendants { of } => {
                // a tree's children are the rows whose parent is a row: walk down
                let mut out: Vec<Row> = Vec::new();
                let mut next = vec![*of];
                while let Some(p) = next.pop() {
                    for (id, pos) in self
                        .order
                        .get(&p)
                        .into_iter()
                        .flatten()
                        .map(|(pos, id)| (*id, pos))
                    {
                        if id != *of && !out.iter().any(|r| r.id == id) {
                            out.push(Row {
                                id,
                                parent: p,
                                position: pos.clone(),
                            });
                            next.push(id);
                        }
                    }
                }
                out
            }
            Read::Range(r) => {
                let Some(set) = self.order.get(&r.parent) else {
                    return Vec::new();
                };
                // (pos, id) tuples: bound by position only, so use id extremes
                let lo = match &r.above {
                    Some(p) => Bound::Excluded((p.clone(), Id::max_key())),
                    None => Bound::Unbounded,
                };
                let hi = match &r.below {
                    Some(p) => Bound::Excluded((p.clone(), Id::MIN_KEY)),
                    None => Bound::Unbounded,
                };
                let it = set.range((lo, hi)).filter(|(_, id)| Some(*id) != r.exclude);
                let to_row = |(p, id): &(Position, Id)| Row {
                    id: *id,
                    parent: r.parent,
                    position: p.clone(),
                };
                let take = r.limit.map_or(usize::MAX, |l| l as usize);
                let skip = if r.limit.is_some() {
                    r.offset as usize
                } else {
                    0
                };
                if r.desc {
                    it.rev().skip(skip).take(take).map(to_row).collect()
                } else {
                    it.skip(skip).take(take).map(to_row).collect()
                }
            }
        }
    }

    fn take(&mut self, id: Id) {
        let old = self.rows.remove(&id);
        if let Some((op, opos)) = &old
            && let Some(s) = self.order.get_mut(op)
        {
            s.remove(&(opos.clone(), id));
        }
        self.undo.push((id, old));
    }

    fn rollback(&mut self) {
        while let Some((id, old)) = self.undo.pop() {
            if let Some((p, pos)) = self.rows.remove(&id)
                && let Some(s) = self.order.get_mut(&p)
            {
                s.remove(&(pos, id));
            }
            if let Some((p, pos)) = old {
                self.order.entry(p).or_default().insert((pos.clone(), id));
                self.rows.insert(id, (p, pos));
            }
        }
    }

    fn put(&mut self, id: Id, parent: Id, pos: Position) -> Result<(), Error> {
        self.take(id);
        let set = self.order.entry(parent).or_default();
        if set
            .range((pos.clone(), Id::MIN_KEY)..=(pos.clone(), Id::max_key()))
            .next()
            .is_some()
        {
            return Err(Error::Inconsistent(format!(
                "duplicate position {pos} in collection {parent}"
            )));
        }
        set.insert((pos.clone(), id));
        self.rows.insert(id, (parent, pos));
        Ok(())
    }

    fn execute(&mut self, w: &Write) -> Result<(), Error> {
        match w {
            Write::Set {
                id,
                parent,
                position,
            } => self.put(*id, *parent, position.clone()),
            Write::Delete { id } => {
                self.take(*id);
                Ok(())
            }
            // what ON DELETE CASCADE does in a database
            Write::Cascade { ids, .. } => {
                for id in ids {
                    self.take(*id);
                }
                Ok(())
            }
            Write::Renumber {
                parent,
                above,
                below,
                first,
                step,
                hole_after,
                ..
            } => {
                let ids: Vec<Id> = self
                    .order
                    .get(parent)
                    .map(|s| {
                        let lo = Bound::Excluded((Position::Int(*above), Id::max_key()));
                        let hi = Bound::Excluded((Position::Int(*below), Id::MIN_KEY));
                        s.range((lo, hi)).map(|(_, id)| *id).collect()
                    })
                    .unwrap_or_default();
                self.reassign(
                    *parent,
                    ids.iter().enumerate().map(|(i, id)| {
                        let r = i as u64 + 1;
                        let slot = r - 1 + u64::from(r > *hole_after);
                        (*id, Position::Int(first + slot as i64 * step))
                    }),
                )
            }
            Write::Assign { parent, rows } => self.reassign(*parent, rows.iter().cloned()),
            Write::Shift {
                parent,
                from,
                to,
                delta,
                ..
            } => {
                let moved: Vec<(Id, Position)> = self
                    .list(*parent)
                    .into_iter()
                    .filter_map(|r| {
                        let v = r.position.as_int()?;
                        (*from <= v && v <= *to).then(|| (r.id, Position::Int(v + delta)))
                    })
                    .collect();
                self.reassign(*parent, moved.into_iter())
            }
        }
    }

    /// Sets several rows at once; uniqueness is checked at the end, as PostgreSQL's
    /// deferrable constraint does at the end of a statement.
    fn reassign(
        &mut self,
        parent: Id,
        rows: impl Iterator<Item = (Id, Position)>,
    ) -> Result<(), Error> {
        let rows: Vec<(Id, Position)> = rows.collect();
        for (id, _) in &rows {
            self.take(*id);
        }
        for (id, pos) in rows {
            self.put(id, parent, pos)?;
        }
        Ok(())
    }
}
