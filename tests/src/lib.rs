//! The scripted scenarios both adapters run (see `tests/conformance.rs`).

use ordered_core::{Id, Placement};

/// One step of a script. Items are named by their creation index, so that both ORMs,
/// starting from fresh tables, refer to the same rows.
#[derive(Debug, Clone)]
pub enum Step {
    /// Insert a new item.
    Insert(Id, At),
    /// Move an item within its collection.
    Move(usize, At),
    /// Move an item to another collection.
    MoveTo(usize, Id, At),
    /// Move with an expected parent version.
    MoveExpecting(usize, At, i64),
    /// Swap two items.
    Swap(usize, usize),
    /// Remove an item.
    Remove(usize),
    /// Reorder a collection (creation indexes in the wanted order).
    Reorder(Id, Vec<usize>),
    /// Rebalance a collection.
    Rebalance(Id),
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
}

impl At {
    /// The placement with real ids.
    pub fn resolve(self, ids: &[Id]) -> Placement {
        let id = |i: usize| ids.get(i).copied().unwrap_or(999_999);
        match self {
            At::First => Placement::First,
            At::Last => Placement::Last,
            At::Before(i) => Placement::Before(id(i)),
            At::After(i) => Placement::After(id(i)),
            At::Between(p, n) => Placement::Between {
                prev: p.map(id),
                next: n.map(id),
            },
        }
    }
}

/// The scripts: name, whether positions are keys, the steps.
pub fn scripts() -> Vec<(&'static str, bool, Vec<Step>)> {
    use At::*;
    use Step::*;
    let hot: Vec<Step> = (0..3)
        .map(|_| Insert(1, Last))
        .chain((0..30).map(|_| Insert(1, After(0))))
        .chain((3..13).map(|i| Move(i, After(1))))
        .collect();
    vec![
        (
            "playlist",
            false,
            vec![
                Insert(1, Last),
                Insert(1, Last),
                Insert(1, Last),
                Move(2, Before(1)),
                Insert(1, Between(Some(2), Some(1))),
                Rebalance(1),
            ],
        ),
        ("hot_gap_ints", false, hot.clone()),
        ("hot_gap_keys", true, hot),
        (
            "across_parents_and_reorder",
            true,
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
            false,
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
    ]
}
