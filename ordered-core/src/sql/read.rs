//! The reads: under the lock (the fused read, neighbours, ranges) and outside it
//! (lists, versioned lists, counts, the key-order probe).

use super::*;

/// One part of a [`fused`] read: a read the planner will ask for, written so that it
/// needs nothing read before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// One item by id: the rows of [`Read::Item`].
    Item(Id),
    /// The first (`last`: the last) item of `parent`, leaving out `exclude`: a
    /// [`Read::Range`] with no bounds and a limit of one.
    Edge {
        /// The collection.
        parent: Id,
        /// The last item instead of the first.
        last: bool,
        /// An item to leave out (the one being moved).
        exclude: Option<Id>,
    },
    /// The nearest item of `parent` before (`up`) or after the position of the item
    /// `of`, leaving out `exclude`: a [`Read::Range`] bounded by that position with a
    /// limit of one. The position comes from a subquery in the same statement, so the
    /// fused read must also hold [`Probe::Item`] of `of` to tell which range it was.
    Near {
        /// The collection.
        parent: Id,
        /// The item whose neighbour this is.
        of: Id,
        /// Before it, instead of after.
        up: bool,
        /// An item to leave out (the one being moved).
        exclude: Option<Id>,
    },
    /// A range of `parent` ([`Read::Range`]): a placement at an index reads the rows at
    /// the index and before it ([`RangeRead::at_index`]).
    Range(RangeRead),
    /// The version of the parent row `parent` as it was before this operation's bump,
    /// when the bump was the lock ([`lock_by_bump`], MySQL): one row with the parent's
    /// key as `o_id` and `o_parent` and the version minus one as `o_pos`, read back by
    /// [`fused_versions`]. No planner read.
    Version {
        /// The parent row's key.
        parent: Id,
    },
}

impl Probe {
    /// The planner read this part answers on its own, when it needs no other part
    /// (every probe but [`Probe::Near`]).
    pub fn read(&self) -> Option<Read> {
        match self {
            Probe::Item(id) => Some(Read::Item { id: *id }),
            Probe::Edge {
                parent,
                last,
                exclude,
            } => Some(Read::Range(RangeRead::edge(*parent, *last, *exclude))),
            Probe::Range(r) => Some(Read::Range(r.clone())),
            Probe::Near { .. } | Probe::Version { .. } => None,
        }
    }
}

/// Several planner reads in one statement (a `UNION ALL`), each row tagged `o_q` with
/// the index of its [`Probe`] ([`Returns::Tagged`]): a move reads its item, its anchor
/// and the anchor's neighbour in one round trip under the lock. Every part is the same
/// query as its own [`read`], locking on MySQL when `locking` (the anchor's position
/// too), so every part sees the rows as they are under the lock.
pub fn fused(d: Dialect, spec: &Spec, probes: &[Probe], locking: bool) -> Statement {
    let mut b = B::new(d);
    let lock = locking && d == Dialect::Mysql;
    for (i, p) in probes.iter().enumerate() {
        if i > 0 {
            b.s(" UNION ALL ");
        }
        // SQLite takes no parenthesised members; a derived table keeps each part's
        // ORDER BY and LIMIT on every engine
        b.s(if d == Dialect::Sqlite {
            "SELECT * FROM ("
        } else {
            "("
        });
        b.s("SELECT ")
            .cast_int(|b| {
                let _ = write!(b.sql, "{i}");
            })
            .s(" AS o_q, ");
        if let Probe::Version { parent } = p {
            version_columns(&mut b, spec);
            b.s(" FROM ")
                .id(spec.parent_table)
                .s(" WHERE ")
                .id(spec.parent_id)
                .s(" = ")
                .scope(spec, *parent);
        } else {
            item_columns(&mut b, spec);
            b.s(" FROM ").id(spec.table).s(" WHERE ");
        }
        match p {
            Probe::Version { .. } => {}
            Probe::Item(id) => {
                b.item_is(spec, None, *id);
            }
            Probe::Edge {
                parent,
                last,
                exclude,
            } => range(&mut b, spec, &RangeRead::edge(*parent, *last, *exclude)),
            Probe::Range(r) => range(&mut b, spec, r),
            Probe::Near {
                parent,
                of,
                up,
                exclude,
            } => {
                b.scope_is(spec, None, *parent)
                    .s(" AND ")
                    .id(spec.position)
                    .s(if *up { " < " } else { " > " })
                    .s("(SELECT ")
                    .id(spec.position)
                    .s(" FROM ")
                    .id(spec.table)
                    .s(" WHERE ")
                    .item_is(spec, None, *of);
                if lock {
                    b.s(" FOR UPDATE");
                }
                b.s(")");
                if let Some(x) = exclude {
                    b.s(" AND ").id(spec.id).s(" <> ").item(spec, *x);
                }
                b.s(" ORDER BY ")
                    .id(spec.position)
                    .s(if *up { " DESC" } else { "" })
                    .s(" LIMIT 1");
            }
        }
        if lock {
            b.s(" FOR UPDATE");
        }
        b.s(if d == Dialect::Sqlite { ") o_f" } else { ")" });
        if d == Dialect::Sqlite {
            let _ = write!(b.sql, "{i}");
        }
    }
    b.done(Returns::Tagged)
}

/// The columns of a [`Probe::Version`] part, in the shape of the item parts' (integer
/// keys only, see [`lock_by_bump`]): the parent key twice and the version before the
/// bump where the position goes, as text for a key strategy.
pub(super) fn version_columns(b: &mut B, spec: &Spec) {
    // the version before the bump; `lock_by_bump` asks for this part only with a version
    // column, and without one it is 0, as `lock` reads it
    let version = |b: &mut B| match spec.version {
        Some(v) => {
            b.id(v).s(" - 1");
        }
        None => {
            b.s("0");
        }
    };
    b.cast_int(|b| {
        b.id(spec.parent_id);
    })
    .s(" AS o_id, ")
    .cast_int(|b| {
        b.id(spec.parent_id);
    })
    .s(" AS o_parent, ");
    if is_text_position(spec) {
        b.s("CAST(");
        version(b);
        b.s(" AS CHAR)");
    } else {
        b.cast_int(version);
    }
    b.s(" AS o_pos");
}

/// The versions a [`fused`] read answered for its [`Probe::Version`] parts: `(parent
/// key, version before the bump)` for each such part that found its row.
pub fn fused_versions(probes: &[Probe], rows: &[(i64, Row)]) -> Vec<(Id, i64)> {
    rows.iter()
        .filter_map(|(q, row)| {
            let probe = usize::try_from(*q).ok().and_then(|q| probes.get(q))?;
            let Probe::Version { parent } = probe else {
                return None;
            };
            let v = match &row.position {
                Position::Int(v) => *v,
                Position::Key(k) => k.parse().ok()?,
                // a version is an integer below 2^53: exact
                Position::Num(n) => n.get() as i64,
            };
            Some((*parent, v))
        })
        .collect()
}

/// The planner reads a [`fused`] read answered, from its tagged rows: each probe's
/// read with its rows (a [`Probe::Near`] only when the item it is bound by was found).
pub fn fused_reads(probes: &[Probe], rows: Vec<(i64, Row)>) -> Vec<(Read, Vec<Row>)> {
    let mut parts: Vec<Vec<Row>> = vec![Vec::new(); probes.len()];
    for (q, row) in rows {
        if let Some(part) = usize::try_from(q).ok().and_then(|q| parts.get_mut(q)) {
            part.push(row);
        }
    }
    let item_row = |id: Id| {
        probes
            .iter()
            .zip(&parts)
            .find(|(p, _)| **p == Probe::Item(id))
            .and_then(|(_, rows)| rows.first())
    };
    // the bounds of each neighbour read, from its anchor's row in the same statement
    let bounds: Vec<Option<Position>> = probes
        .iter()
        .map(|p| match p {
            Probe::Near { of, .. } => item_row(*of).map(|r| r.position.clone()),
            _ => None,
        })
        .collect();
    let mut out = Vec::with_capacity(probes.len());
    for ((p, mut rows), bound) in probes.iter().zip(parts).zip(bounds) {
        // a part of several rows: in its own order (a UNION ALL promises none across
        // its parts' rows)
        if let Probe::Range(r) = p {
            rows.sort_by(|a, b| a.position.cmp(&b.position));
            if r.desc {
                rows.reverse();
            }
        }
        let read = match (p, bound) {
            (
                Probe::Near {
                    parent,
                    up,
                    exclude,
                    ..
                },
                Some(pos),
            ) => Read::Range(RangeRead::neighbour(*parent, &pos, *up, *exclude)),
            _ => match p.read() {
                Some(q) => q,
                // a neighbour whose anchor is missing: nothing to cache
                None => continue,
            },
        };
        out.push((read, rows));
    }
    out
}

/// The statement for a planner read. `locking` adds `FOR UPDATE` on MySQL, where a
/// plain read inside REPEATABLE READ can see a snapshot older than the parent lock
/// (when the caller's transaction read before calling the library); PostgreSQL and SQLite
/// read fresh rows after the lock.
pub fn read(d: Dialect, spec: &Spec, r: &Read, locking: bool) -> Statement {
    if let Read::Links { parent, column } = r {
        return links(d, spec, Some(*parent), column, locking);
    }
    let mut b = B::new(d);
    b.s("SELECT ");
    item_columns(&mut b, spec);
    b.s(" FROM ").id(spec.table).s(" WHERE ");
    match r {
        Read::Item { id } => {
            b.item_is(spec, None, *id);
        }
        Read::Range(r) => range(&mut b, spec, r),
        Read::Ancestors { of } => {
            // the chain of parents up from `of` (UNION, not UNION ALL: a cycle already
            // in the data ends the walk instead of looping)
            b.id(spec.id).s(" IN (WITH RECURSIVE o_up(o_k) AS (SELECT ");
            b.id(spec.id).s(" FROM ").id(spec.table).s(" WHERE ");
            b.id(spec.id).s(" = ").item(spec, *of);
            b.s(" UNION SELECT o_t.")
                .id(spec.parent)
                .s(" FROM ")
                .id(spec.table);
            b.s(" o_t JOIN o_up ON o_t.")
                .id(spec.id)
                .s(" = o_up.o_k WHERE o_t.");
            b.id(spec.parent).s(" IS NOT NULL) SELECT o_k FROM o_up)");
        }
        Read::Descendants { of } => {
            // the rows below `of`, down the tree (UNION: a cycle ends the walk)
            b.id(spec.id)
                .s(" IN (WITH RECURSIVE o_down(o_k) AS (SELECT ");
            b.id(spec.id).s(" FROM ").id(spec.table).s(" WHERE ");
            b.id(spec.parent).s(" = ").item(spec, *of);
            b.s(" UNION SELECT o_t.")
                .id(spec.id)
                .s(" FROM ")
                .id(spec.table);
            b.s(" o_t JOIN o_down ON o_t.")
                .id(spec.parent)
                .s(" = o_down.o_k) SELECT o_k FROM o_down)");
        }
        // answered above
        Read::Links { .. } => {
            b.s("1 = 0");
        }
    }
    if locking && d == Dialect::Mysql {
        b.s(" FOR UPDATE");
    }
    b.done(Returns::Rows)
}

pub(super) fn range(b: &mut B, spec: &Spec, r: &RangeRead) {
    b.scope_is(spec, None, r.parent);
    if let Some(p) = &r.above {
        b.s(" AND ").id(spec.position).s(" > ").pos(spec, p);
    }
    if let Some(p) = &r.below {
        b.s(" AND ").id(spec.position).s(" < ").pos(spec, p);
    }
    if let Some(x) = r.exclude {
        b.s(" AND ").id(spec.id).s(" <> ").item(spec, x);
    }
    if r.visible {
        shown(b, spec);
    }
    let dir = if r.desc { " DESC" } else { "" };
    b.s(" ORDER BY ").id(spec.position).s(dir);
    // A limited read is a neighbour lookup: `(parent, position)` is unique, so position
    // alone is a total order, and leaving out the id lets the engine walk the unique
    // index and stop (with the id, it sorts the whole collection, and InnoDB locks every
    // row it scans). Full reads keep the id tiebreak, for tables being healed.
    if r.limit.is_none() {
        b.s(", ").id(spec.id).s(dir);
    }
    if let Some(l) = r.limit {
        // a literal, not a bind: SQLite recompiles a statement whenever the value bound
        // to its LIMIT changes, so a bound limit could never be reused prepared (the
        // limits are few: 1, and a relabel window's doubling sizes)
        let _ = write!(b.sql, " LIMIT {}", i64::try_from(l).unwrap_or(i64::MAX));
        if r.offset > 0 {
            b.s(" OFFSET ")
                .i(i64::try_from(r.offset).unwrap_or(i64::MAX));
        }
    }
}

/// ` AND (<filter>)` when the table has a row filter ([`Spec::filter`]).
pub(super) fn shown(b: &mut B, spec: &Spec) {
    if let Some(f) = spec.filter {
        b.s(" AND (").s(f).s(")");
    }
}

/// The items of a collection the lists show ([`Spec::filter`]), `ORDER BY position, id`.
pub fn list(d: Dialect, spec: &Spec, parent: Id) -> Statement {
    let r = RangeRead {
        visible: true,
        ..RangeRead::all(parent)
    };
    read(d, spec, &Read::Range(r), false)
}

/// Every item of a collection, the ones the row filter leaves out included (what
/// `verify` checks), `ORDER BY position, id`.
pub fn list_all(d: Dialect, spec: &Spec, parent: Id) -> Statement {
    read(d, spec, &Read::Range(RangeRead::all(parent)), false)
}

/// The collation probe of [`crate::verify::check_key_order`]: the probe strings, run
/// through `UNION` (which removes what the column's collation calls equal) with a
/// zero-row select of the key column first (so the column's collation applies to the
/// whole union), `ORDER BY` that column. Returns item rows whose positions are the
/// probes as the engine sorted them.
pub fn probe_key_order(d: Dialect, spec: &Spec, probes: &[&str]) -> Statement {
    let mut b = B::new(d);
    // no row of the table: a placeholder key of each column's type
    let zero = |b: &mut B, ty: KeyType| {
        if !spec.text_wire() {
            b.cast_int(|b| {
                b.s("0");
            });
        } else {
            b.cast_text(|b| {
                b.s(match ty {
                    KeyType::Int => "0",
                    KeyType::Uuid | KeyType::UuidText => "'00000000-0000-0000-0000-000000000000'",
                    KeyType::Text => "''",
                });
            });
        }
    };
    b.s("SELECT ");
    zero(&mut b, spec.id_type);
    b.s(" AS o_id, ");
    if spec.is_global() {
        b.cast_text(|b| {
            b.s("''");
        });
    } else if spec.split_by.is_empty() {
        zero(&mut b, spec.parent_type);
    } else {
        // every scope value as Wire::row reads them
        let mut v = String::new();
        for (_, ty) in spec.scope_columns() {
            v.push_str(match ty {
                KeyType::Int => "1:0",
                KeyType::Uuid | KeyType::UuidText => "36:00000000-0000-0000-0000-000000000000",
                KeyType::Text => "0:",
            });
        }
        b.cast_text(|b| {
            b.s("'").s(&v).s("'");
        });
    }
    b.s(" AS o_parent, ");
    if d == Dialect::Mysql {
        b.s("CAST(o_p AS CHAR)");
    } else {
        b.s("o_p");
    }
    b.s(" AS o_pos FROM (SELECT ")
        .id(spec.position)
        .s(" AS o_p FROM ")
        .id(spec.table)
        .s(" WHERE 1 = 0");
    for p in probes {
        b.s(" UNION SELECT ").bind(Arg::Text((*p).to_owned()));
    }
    b.s(") o_probe ORDER BY o_p");
    b.done(Returns::Rows)
}

/// Every item of `parent`, `ORDER BY position, id`, with the parent's version, in one
/// statement, so one snapshot on every engine (a PostgreSQL statement, an InnoDB read
/// view, an SQLite read): the version is the one the list belongs to, and a client
/// sends it back as the expected version of its next write. The parent's row is
/// `LEFT JOIN`ed to its items, so an empty collection still has its version (one row
/// with null item columns) and a missing parent returns no row.
pub fn list_versioned(d: Dialect, spec: &Spec, parent: Id) -> Statement {
    versioned(d, spec, parent, false, None)
}

/// A page of a collection: [`list_versioned`] limited to the rows after `after`'s place
/// (`(position, id)` past the cursor's), at most `limit + 1` of them (the one more
/// tells that a next page exists), `ORDER BY position, id`. The version comes from the
/// same statement, so [`Page::from_reply`](crate::Page::from_reply) can tell whether
/// the list changed since the cursor's page.
pub fn page(
    d: Dialect,
    spec: &Spec,
    parent: Id,
    after: Option<&crate::Cursor>,
    limit: u32,
) -> Statement {
    let rows = crate::engine::page_limit(limit).saturating_add(1);
    versioned(
        d,
        spec,
        parent,
        false,
        Some((after.map(|c| (&c.position, c.id)), rows)),
    )
}

/// [`list_versioned`] with every column of the items (`o_i.*`, the application's own
/// row) instead of the library's three, and `o_present` (1 for an item, 0 for the row
/// of an empty list): what the adapters' `list_models` load into the application's row
/// type, in one statement. Its [`Returns`] is `Listed`; the adapters decode it with
/// the caller's row type, not as a [`Reply`](crate::adapter::Reply). Not a causal read
/// on a Galera cluster: read through the node that writes.
pub fn list_models(d: Dialect, spec: &Spec, parent: Id) -> Statement {
    versioned(d, spec, parent, true, None)
}

/// A page's bounds: the place after which it starts (none: the start) and how many
/// rows at most.
type PageBounds<'a> = Option<(Option<(&'a Position, Id)>, usize)>;

fn versioned(d: Dialect, spec: &Spec, parent: Id, models: bool, page: PageBounds<'_>) -> Statement {
    let mut b = B::new(d);
    let col = |b: &mut B, alias: &str, ident: &str| {
        b.s(alias).s(".").id(ident);
    };
    b.s("SELECT ");
    if spec.locks_rows() {
        // the lock row, if the collection was ever written; else version 0
        b.cast_int(|b| {
            b.s("COALESCE((SELECT ")
                .id("version")
                .s(" FROM ")
                .id(crate::spec::LOCK_TABLE)
                .s(" WHERE ")
                .lock_row_is(spec, parent)
                .s("), 0)");
        });
    } else {
        b.cast_int(|b| match spec.version {
            Some(v) => col(b, "o_p", v),
            None => {
                b.s("0");
            }
        });
    }
    b.s(" AS o_version, ");
    if models {
        b.s("CASE WHEN ");
        col(&mut b, "o_i", spec.id);
        b.s(" IS NULL THEN ");
        b.cast_int(|b| {
            b.s("0");
        })
        .s(" ELSE ");
        b.cast_int(|b| {
            b.s("1");
        })
        .s(" END AS o_present, o_i.*");
    } else {
        item_columns_of(&mut b, spec, Some("o_i"));
    }
    if spec.locks_rows() {
        b.s(" FROM (SELECT 1 AS o_one) o_p LEFT JOIN ");
    } else {
        b.s(" FROM ").id(spec.parent_table).s(" o_p LEFT JOIN ");
    }
    match spec.filter {
        // the filter names the items' own columns: apply it inside
        Some(f) => {
            b.s("(SELECT * FROM ")
                .id(spec.table)
                .s(" WHERE ")
                .s(f)
                .s(")");
        }
        None => {
            b.id(spec.table);
        }
    }
    b.s(" o_i ON ");
    // a page's rows: after the cursor's (position, id), in the join, so that the
    // parent's row (its version) comes back even when no row is left
    let after = |b: &mut B| {
        if let Some((Some((pos, id)), _)) = page {
            b.s(" AND (");
            col(b, "o_i", spec.position);
            b.s(" > ").pos(spec, pos).s(" OR (");
            col(b, "o_i", spec.position);
            b.s(" = ").pos(spec, pos).s(" AND ");
            col(b, "o_i", spec.id);
            b.s(" > ").item(spec, id).s("))");
        }
    };
    if spec.locks_rows() {
        b.scope_is(spec, Some("o_i"), parent);
        after(&mut b);
        b.s(" ORDER BY ");
    } else {
        col(&mut b, "o_i", spec.parent);
        b.s(" = ");
        col(&mut b, "o_p", spec.parent_id);
        // a table split by more scope columns: the list's own rows of the parent's
        if !spec.split_by.is_empty() {
            b.s(" AND ").scope_is(spec, Some("o_i"), parent);
        }
        after(&mut b);
        b.s(" WHERE ");
        col(&mut b, "o_p", spec.parent_id);
        b.s(" = ")
            .scope(spec, spec.lock_key(parent))
            .s(" ORDER BY ");
    }
    col(&mut b, "o_i", spec.position);
    b.s(", ");
    col(&mut b, "o_i", spec.id);
    if let Some((_, rows)) = page {
        // a literal, as every LIMIT of the library (a bound one defeats SQLite's
        // prepared statement cache)
        let _ = write!(b.sql, " LIMIT {rows}");
    }
    b.done(Returns::Listed)
}

/// The item of `parent` at `position` (zero or one row: `(parent, position)` is
/// unique): how an operation learns the id of a row the caller inserted.
pub fn at(d: Dialect, spec: &Spec, parent: Id, position: &Position) -> Statement {
    let mut b = B::new(d);
    b.s("SELECT ");
    item_columns(&mut b, spec);
    slot_filter(&mut b, spec, parent, " = ", position);
    b.done(Returns::Rows)
}

/// How many items of `parent` the lists show sort before `position` (the index of the
/// item there).
pub fn count_before(d: Dialect, spec: &Spec, parent: Id, position: &Position) -> Statement {
    let mut b = B::new(d);
    b.s("SELECT ")
        .cast_int(|b| {
            b.s("COUNT(*)");
        })
        .s(" AS o_count");
    slot_filter(&mut b, spec, parent, " < ", position);
    shown(&mut b, spec);
    b.done(Returns::Count)
}

/// ` FROM items WHERE parent = ? AND position <op> ?`.
pub(super) fn slot_filter(b: &mut B, spec: &Spec, parent: Id, op: &str, position: &Position) {
    b.s(" FROM ")
        .id(spec.table)
        .s(" WHERE ")
        .scope_is(spec, None, parent)
        .s(" AND ")
        .id(spec.position)
        .s(op)
        .pos(spec, position);
}

/// The rows of a linked list ([`Returns::Links`]): every row of `parent` (`None`: of the
/// whole table, by collection) with the id its link column `column` names, all as
/// text, `ORDER BY` the collection and the id; locking on MySQL when `locking`.
/// Positions are not read: they may be NULL until the conversion.
pub fn links(
    d: Dialect,
    spec: &Spec,
    parent: Option<Id>,
    column: &str,
    locking: bool,
) -> Statement {
    let mut b = B::new(d);
    b.s("SELECT ")
        .out_key(true, spec.id_type, |b| {
            b.id(spec.id);
        })
        .s(" AS o_id, ")
        .scope_out(spec, true, None)
        .s(" AS o_parent, ")
        .out_key(true, spec.id_type, |b| {
            b.id(column);
        })
        .s(" AS o_link FROM ")
        .id(spec.table);
    if let Some(p) = parent {
        b.s(" WHERE ").scope_is(spec, None, p);
    }
    b.s(" ORDER BY ");
    if parent.is_none() && !spec.is_global() {
        for (c, _) in spec.scope_columns() {
            b.id(c).s(", ");
        }
    }
    b.id(spec.id);
    if locking && d == Dialect::Mysql {
        b.s(" FOR UPDATE");
    }
    b.done(Returns::Links)
}
