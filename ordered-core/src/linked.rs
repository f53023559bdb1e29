//! Converting a linked list (`prev_id` or `next_id` columns) into positions.
//!
//! Apps that keep an order as references between rows meet the pitfalls of that
//! representation: a foreign key checks that a neighbour exists, not that every row is
//! reachable once from a single head, so cycles, forks and orphans go unnoticed. The
//! conversion walks each list's chain from its head and gives the rows positions in
//! chain order, one list per transaction under its lock
//! (`OrderedTable::convert_linked`), and refuses a list that is not one chain with a
//! report ([`Broken`]) that names the rows to fix; it writes nothing to such a list.
//! `OrderedTable::verify_linked` makes the same report without writing. The link column
//! is kept: drop it once every list is converted and the app writes positions.
//!
//! ```
//! use ordered_core::linked::{Link, chain};
//! use ordered_core::Id;
//!
//! // 3 -> 1 -> 2, as `prev_id` references: 3 is the head
//! let rows = [(Id::Int(1), Some(Id::Int(3))), (Id::Int(2), Some(Id::Int(1))), (Id::Int(3), None)];
//! assert_eq!(chain(Id::Int(7), &rows, Link::Prev)?, [Id::Int(3), Id::Int(1), Id::Int(2)]);
//!
//! // two heads and a cycle: refused, with the rows named
//! let rows = [(Id::Int(1), None), (Id::Int(2), None), (Id::Int(3), Some(Id::Int(4))), (Id::Int(4), Some(Id::Int(3)))];
//! let broken = chain(Id::Int(7), &rows, Link::Prev).unwrap_err();
//! assert_eq!(broken.heads, [Id::Int(1), Id::Int(2)]);
//! assert_eq!(broken.cycle, [Id::Int(3), Id::Int(4)]);
//! # Ok::<(), ordered_core::linked::Broken>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::id::Id;

/// Which neighbour the link column names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Link {
    /// The row before (`prev_id`, `after_id`): the head's is NULL.
    Prev,
    /// The row after (`next_id`): the tail's is NULL.
    Next,
}

/// Why a list is not one chain: every row named, so the app can repair the links (or
/// order the list by hand). A list is converted only when all of these are empty and it
/// has exactly one head.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Broken {
    /// The list.
    pub list: Id,
    /// The rows no other row of the list leads to (for [`Link::Prev`], the rows whose
    /// link is NULL): a chain has exactly one. None means every row is on a cycle or
    /// hangs off one.
    pub heads: Vec<Id>,
    /// Rows on a cycle (following the links from any of them comes back to it).
    pub cycle: Vec<Id>,
    /// Rows the walk from the single head does not reach, not on a cycle: behind a
    /// fork, a dangling reference or a cycle.
    pub unreachable: Vec<Id>,
    /// Rows whose link names a row that is not in this list (deleted, or in another
    /// list): `(row, the id it names)`.
    pub dangling: Vec<(Id, Id)>,
    /// Rows that name the same neighbour as another row (a fork: the chain cannot say
    /// which comes first).
    pub shared: Vec<Id>,
}

impl Broken {
    /// Whether the list is one chain.
    pub fn is_chain(&self) -> bool {
        self.heads.len() <= 1
            && self.cycle.is_empty()
            && self.unreachable.is_empty()
            && self.dangling.is_empty()
            && self.shared.is_empty()
    }
}

fn ids(v: &[Id]) -> String {
    v.iter().map(Id::to_string).collect::<Vec<_>>().join(", ")
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "list {} is not one chain:", self.list)?;
        match self.heads.len() {
            0 => write!(f, " no head (no row starts it)")?,
            1 => {}
            _ => write!(f, " {} heads ({})", self.heads.len(), ids(&self.heads))?,
        }
        if !self.cycle.is_empty() {
            write!(f, "; a cycle through {}", ids(&self.cycle))?;
        }
        if !self.dangling.is_empty() {
            let d: Vec<String> = self
                .dangling
                .iter()
                .map(|(r, to)| format!("{r} names {to}"))
                .collect();
            write!(f, "; links to rows not in the list ({})", d.join(", "))?;
        }
        if !self.shared.is_empty() {
            write!(
                f,
                "; rows naming the same neighbour ({})",
                ids(&self.shared)
            )?;
        }
        if !self.unreachable.is_empty() {
            write!(
                f,
                "; rows the head does not reach ({})",
                ids(&self.unreachable)
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for Broken {}

/// What `convert_linked` did: the lists converted and their rows, and the lists it
/// refused, each with its report (nothing was written to those).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Converted {
    /// Lists given positions in chain order.
    pub lists: u64,
    /// Rows given positions.
    pub rows: u64,
    /// Lists left as they were, and why.
    pub broken: Vec<Broken>,
}

/// What `verify_linked` found: every list of the table, its rows, and the lists that
/// are not one chain.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Survey {
    /// Every list that has rows, in key order.
    pub lists: Vec<Id>,
    /// Rows in all.
    pub rows: u64,
    /// The lists that are not one chain, with their reports.
    pub broken: Vec<Broken>,
}

/// [`chain`] over every list of a table: `rows` holds each row's id, its list and the
/// id its link names.
pub fn survey(rows: Vec<(Id, Id, Option<Id>)>, link: Link) -> Survey {
    let mut by_list: BTreeMap<Id, Vec<(Id, Option<Id>)>> = BTreeMap::new();
    let total = rows.len() as u64;
    for (id, list, to) in rows {
        by_list.entry(list).or_default().push((id, to));
    }
    let mut out = Survey {
        rows: total,
        ..Survey::default()
    };
    for (list, rows) in by_list {
        out.lists.push(list);
        if let Err(b) = chain(list, &rows, link) {
            out.broken.push(b);
        }
    }
    out
}

/// The rows of one list in chain order, or why there is no such order. `rows` holds
/// each row's id and the neighbour its link column names (`None`: NULL), in any order;
/// ids are distinct. Never panics; `O(n log n)`.
pub fn chain(list: Id, rows: &[(Id, Option<Id>)], link: Link) -> Result<Vec<Id>, Broken> {
    let present: BTreeSet<Id> = rows.iter().map(|r| r.0).collect();
    let mut report = Broken {
        list,
        heads: Vec::new(),
        cycle: Vec::new(),
        unreachable: Vec::new(),
        dangling: Vec::new(),
        shared: Vec::new(),
    };
    // prev[r]: the row before r, in chain terms, whatever the column names
    let mut prev: BTreeMap<Id, Id> = BTreeMap::new();
    let mut named: BTreeMap<Id, Vec<Id>> = BTreeMap::new();
    for &(id, to) in rows {
        let Some(to) = to else { continue };
        if !present.contains(&to) || to == id {
            if to == id {
                report.cycle.push(id);
            } else {
                report.dangling.push((id, to));
            }
            continue;
        }
        named.entry(to).or_default().push(id);
    }
    let mut shared: BTreeSet<Id> = BTreeSet::new();
    for (to, by) in &named {
        if by.len() > 1 {
            shared.extend(by.iter().copied());
            continue;
        }
        let by = by[0];
        match link {
            Link::Prev => prev.insert(by, *to),
            Link::Next => prev.insert(*to, by),
        };
    }
    report.shared = shared.into_iter().collect();
    // the heads: rows with nothing before them, not themselves broken
    let broken_rows: BTreeSet<Id> = report
        .dangling
        .iter()
        .map(|d| d.0)
        .chain(report.cycle.iter().copied())
        .chain(report.shared.iter().copied())
        .collect();
    let heads: Vec<Id> = match link {
        Link::Prev => rows.iter().filter(|r| r.1.is_none()).map(|r| r.0).collect(),
        // the rows no row names as its next
        Link::Next => rows
            .iter()
            .map(|r| r.0)
            .filter(|id| !named.contains_key(id))
            .filter(|id| !broken_rows.contains(id))
            .collect(),
    };
    report.heads = heads;
    // next[r] from prev: unique by construction (forks were left out)
    let next: BTreeMap<Id, Id> = prev.iter().map(|(r, p)| (*p, *r)).collect();
    // cycles: follow prev from every row; a walk that meets itself found one
    let mut state: BTreeMap<Id, u8> = BTreeMap::new(); // 1: on the current walk, 2: done
    let mut on_cycle: BTreeSet<Id> = report.cycle.iter().copied().collect();
    for &(start, _) in rows {
        let mut walk = Vec::new();
        let mut at = Some(start);
        while let Some(r) = at {
            match state.get(&r) {
                Some(2) => break,
                Some(_) => {
                    // r is on the current walk: the cycle is r and what followed it
                    if let Some(k) = walk.iter().position(|x| *x == r) {
                        on_cycle.extend(walk[k..].iter().copied());
                    }
                    break;
                }
                None => {
                    state.insert(r, 1);
                    walk.push(r);
                    at = prev.get(&r).copied();
                }
            }
        }
        for r in walk {
            state.insert(r, 2);
        }
    }
    report.cycle = on_cycle.into_iter().collect();
    // the walk from the one head
    let mut order = Vec::with_capacity(rows.len());
    if let [head] = report.heads[..] {
        let mut seen = BTreeSet::new();
        let mut at = Some(head);
        while let Some(r) = at {
            if !seen.insert(r) {
                break;
            }
            order.push(r);
            at = next.get(&r).copied();
        }
        let mut left: Vec<Id> = present
            .iter()
            .copied()
            .filter(|id| !seen.contains(id))
            .filter(|id| !report.cycle.contains(id))
            .filter(|id| !report.dangling.iter().any(|d| d.0 == *id))
            .filter(|id| !report.shared.contains(id))
            .collect();
        left.sort_unstable();
        report.unreachable = left;
    }
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    if report.heads.len() == 1 && report.is_chain() && order.len() == rows.len() {
        return Ok(order);
    }
    report.heads.sort_unstable();
    report.dangling.sort_unstable();
    Err(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i(v: i64) -> Id {
        Id::Int(v)
    }

    #[test]
    fn a_next_list_walks_from_the_row_nobody_names() {
        // 2 -> 3 -> 1 as next_id references
        let rows = [(i(1), None), (i(2), Some(i(3))), (i(3), Some(i(1)))];
        assert_eq!(chain(i(9), &rows, Link::Next).unwrap(), [i(2), i(3), i(1)]);
    }

    #[test]
    fn every_kind_of_break_is_named() {
        // a head 1 -> 2, a fork (3 and 4 both after 2), a dangling 5 -> 99, 6 after 5,
        // a cycle 7 <-> 8, a self-reference 10
        let rows = [
            (i(1), None),
            (i(2), Some(i(1))),
            (i(3), Some(i(2))),
            (i(4), Some(i(2))),
            (i(5), Some(i(99))),
            (i(6), Some(i(5))),
            (i(7), Some(i(8))),
            (i(8), Some(i(7))),
            (i(10), Some(i(10))),
        ];
        let b = chain(i(9), &rows, Link::Prev).unwrap_err();
        assert_eq!(b.heads, [i(1)]);
        assert_eq!(b.shared, [i(3), i(4)]);
        assert_eq!(b.dangling, [(i(5), i(99))]);
        assert_eq!(b.cycle, [i(7), i(8), i(10)]);
        assert_eq!(b.unreachable, [i(6)]);
        assert!(b.to_string().contains("a cycle through 7, 8, 10"), "{b}");
    }

    #[test]
    fn no_head_and_two_heads_are_refused() {
        let cycle = [(i(1), Some(i(2))), (i(2), Some(i(1)))];
        let b = chain(i(9), &cycle, Link::Prev).unwrap_err();
        assert!(b.heads.is_empty());
        assert_eq!(b.cycle, [i(1), i(2)]);
        let two = [(i(1), None), (i(2), None)];
        assert_eq!(
            chain(i(9), &two, Link::Prev).unwrap_err().heads,
            [i(1), i(2)]
        );
        assert_eq!(chain(i(9), &[], Link::Prev).unwrap(), Vec::<Id>::new());
    }
}
