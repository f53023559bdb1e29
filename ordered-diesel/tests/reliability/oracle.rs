//! The linearization oracle of docs/CONCURRENCY.md: every library write appends its
//! request to `o_ops_log` as the last statement of its transaction, while the parent
//! locks are held. Writers of one parent are serialised by its lock, so the log's ids
//! follow their commit order; replaying the log against an in-memory list per parent
//! gives the order the database must show.

use std::collections::BTreeMap;

use ordered_core::adapter::sql::{Returns, quote};
use ordered_diesel::__private::{Reply, Request, Statement};
use ordered_diesel::{Dialect, Id, OrderedTable, Placement, Spec};

use crate::common::*;

pub const LOG: &str = "o_ops_log";

/// Drops and recreates the log table.
pub fn reset_log<C: TestConn>(c: &mut C) {
    c.exec(&format!("DROP TABLE IF EXISTS {LOG}"));
    c.exec(&format!(
        "CREATE TABLE {LOG} (op_id {}, entry VARCHAR(200) NOT NULL)",
        ordered_diesel::migrations::serial_primary_key(C::DIALECT)
    ));
}

fn at(p: &Placement) -> String {
    match p {
        Placement::First => "first 0 0".into(),
        Placement::Last => "last 0 0".into(),
        Placement::Before(a) => format!("before {a} 0"),
        Placement::After(a) => format!("after {a} 0"),
        Placement::Between { prev, next } => {
            format!(
                "between {} {}",
                prev.unwrap_or(ordered_diesel::Id::Int(0)),
                next.unwrap_or(ordered_diesel::Id::Int(0))
            )
        }
        Placement::Index(i) => format!("index {i} 0"),
    }
}

/// `INSERT INTO o_ops_log`: the request, with the id of a new item read from the
/// session's last generated id (the caller's insert ran just before).
pub fn log_stmt(d: Dialect, spec: &Spec, req: &Request) -> Statement {
    let new_id = match d {
        Dialect::Postgres => format!(
            "currval(pg_get_serial_sequence('{}', '{}'))",
            quote(d, spec.table),
            spec.id
        ),
        Dialect::Mysql => "LAST_INSERT_ID()".into(),
        Dialect::Sqlite => "last_insert_rowid()".into(),
    };
    entry_stmt(d, req, &new_id)
}

/// The same, for inserts whose id the client chose: the new item is the largest id.
pub fn log_stmt_max_id(d: Dialect, spec: &Spec, req: &Request) -> Statement {
    let new_id = format!(
        "(SELECT MAX({}) FROM {})",
        quote(d, spec.id),
        quote(d, spec.table)
    );
    entry_stmt(d, req, &new_id)
}

fn entry_stmt(d: Dialect, req: &Request, new_id: &str) -> Statement {
    let (head, tail) = match req {
        Request::Insert { parent, at: p } => ("insert ", format!(" {parent} {}", at(p))),
        Request::Move { item, at: p } => ("", format!("move {item} 0 {}", at(p))),
        Request::MoveToParent {
            item,
            parent,
            at: p,
        } => ("", format!("movep {item} {parent} {}", at(p))),
        Request::Remove { item } => ("", format!("remove {item} 0 none 0 0")),
        other => (
            "",
            format!(
                "other 0 0 {} 0 0",
                format!("{other:?}")
                    .split([' ', '{'])
                    .next()
                    .unwrap_or("op")
            ),
        ),
    };
    let value = if head.is_empty() {
        format!("'{tail}'")
    } else if d == Dialect::Mysql {
        format!("CONCAT('{head}', {new_id}, '{tail}')")
    } else {
        format!("'{head}' || {new_id} || '{tail}'")
    };
    Statement {
        sql: format!("INSERT INTO {LOG} (entry) VALUES ({value})"),
        args: vec![],
        returns: Returns::Nothing,
    }
}

/// The library with the ops log on.
pub fn olog(t: &Tables) -> OrderedTable {
    ord(t).with_final_statement(log_stmt)
}

/// The committed log entries, in op_id order.
pub fn read_log<C: TestConn>(c: &mut C) -> Vec<String> {
    let int = |e: &str| match C::DIALECT {
        Dialect::Mysql => format!("CAST({e} AS SIGNED)"),
        Dialect::Postgres => format!("CAST({e} AS BIGINT)"),
        Dialect::Sqlite => e.to_owned(),
    };
    let stmt = Statement {
        sql: format!(
            "SELECT {} AS o_id, {} AS o_parent, entry AS o_pos FROM {LOG} ORDER BY op_id",
            int("op_id"),
            int("0")
        ),
        args: vec![],
        returns: Returns::Rows,
    };
    match c
        .run(
            &stmt,
            ordered_core::adapter::Wire {
                key: true,
                ..ordered_core::adapter::Wire::PLAIN
            },
        )
        .unwrap()
    {
        Reply::Rows(rows) => rows
            .into_iter()
            .map(|r| match r.position {
                ordered_diesel::Position::Key(k) => k,
                other => panic!("{other:?}"),
            })
            .collect(),
        other => panic!("{other:?}"),
    }
}

/// Lists per parent, in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Model {
    pub lists: BTreeMap<Id, Vec<Id>>,
}

impl Model {
    /// The database's current state of these parents.
    pub fn read<C: TestConn>(c: &mut C, t: &Tables, parents: &[Id]) -> Model {
        Model {
            lists: parents.iter().map(|&p| (p, ids(c, t, p))).collect(),
        }
    }

    fn take(&mut self, item: Id) -> Option<Id> {
        for (&p, list) in &mut self.lists {
            if let Some(i) = list.iter().position(|&x| x == item) {
                list.remove(i);
                return Some(p);
            }
        }
        None
    }

    fn place(&mut self, parent: Id, item: Id, kind: &str, a: Id, b: Id) {
        let list = self.lists.entry(parent).or_default();
        let idx = |x: Id, list: &Vec<Id>| {
            list.iter()
                .position(|&y| y == x)
                .unwrap_or_else(|| panic!("replay: anchor {x} is not in {parent}: {list:?}"))
        };
        let i = match kind {
            "first" => 0,
            "last" => list.len(),
            "before" => idx(a, list),
            "after" => idx(a, list) + 1,
            "between" if a != 0 => idx(a, list) + 1,
            "between" if b != 0 => idx(b, list),
            "between" => 0,
            "index" => usize::try_from(a.as_int().unwrap())
                .unwrap()
                .min(list.len()),
            other => panic!("replay: placement {other}"),
        };
        list.insert(i, item);
    }

    /// Applies one log entry.
    pub fn apply(&mut self, entry: &str) {
        let f: Vec<&str> = entry.split(' ').collect();
        let n = |i: usize| f[i].parse::<Id>().unwrap();
        match f[0] {
            "insert" => self.place(n(2), n(1), f[3], n(4), n(5)),
            "move" => {
                let p = self.take(n(1)).expect("replay: moved item missing");
                self.place(p, n(1), f[3], n(4), n(5));
            }
            "movep" => {
                self.take(n(1)).expect("replay: moved item missing");
                self.place(n(2), n(1), f[3], n(4), n(5));
            }
            "remove" => {
                self.take(n(1)).expect("replay: removed item missing");
            }
            _ => {}
        }
    }

    /// `self` with every entry of `log` applied.
    pub fn replay(&self, log: &[String]) -> Model {
        let mut m = self.clone();
        for e in log {
            m.apply(e);
        }
        m
    }
}

/// I1-I3 for `parents`: the database equals the replay of the log over `start`, every
/// item once, and each collection sound (unique, ordered, in its domain).
pub fn check_replay<C: TestConn>(c: &mut C, t: &Tables, start: &Model, label: &str) -> Vec<String> {
    let log = read_log(c);
    let want = start.replay(&log);
    let parents: Vec<Id> = want.lists.keys().copied().collect();
    let got = Model::read(c, t, &parents);
    assert_eq!(
        got, want,
        "{label}: the database differs from the replay (I3)"
    );
    let mut all: Vec<Id> = got.lists.values().flatten().copied().collect();
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "{label}: an item is in two places (I1)");
    for &p in &parents {
        sound(c, t, p);
    }
    log
}
