//! The writes of a plan: one row, a shift, a relabel in one or two passes, chunked
//! key assignments.

use super::*;

/// The statements of one planned write.
pub fn write(d: Dialect, spec: &Spec, w: &Write) -> Vec<Statement> {
    match w {
        Write::Set {
            id,
            parent,
            position,
        } => {
            let mut b = B::new(d);
            b.s("UPDATE ")
                .id(spec.table)
                .s(" SET ")
                .scope_set(spec, *parent)
                .id(spec.position)
                .s(" = ")
                .pos(spec, position)
                .s(" WHERE ")
                .item_is(spec, None, *id);
            vec![b.done(Returns::Nothing)]
        }
        Write::Delete { id } => {
            let mut b = B::new(d);
            b.s("DELETE FROM ")
                .id(spec.table)
                .s(" WHERE ")
                .item_is(spec, None, *id);
            vec![b.done(Returns::Nothing)]
        }
        // the database deletes the rows; their lists' lock rows are the library's
        Write::Cascade { item, ids } => std::iter::once(item)
            .chain(ids)
            .map(|list| {
                let mut b = B::new(d);
                b.s("DELETE FROM ")
                    .id(crate::spec::LOCK_TABLE)
                    .s(" WHERE ")
                    .lock_row_is(spec, *list);
                b.done(Returns::Nothing)
            })
            .collect(),
        Write::Renumber {
            parent,
            above,
            below,
            first,
            step,
            hole_after,
            passes,
            ..
        } => renumber(
            d,
            spec,
            *parent,
            (*above, *below),
            (*first, *step, *hole_after),
            passes,
        ),
        Write::Assign { parent, rows } => assign(d, spec, *parent, rows),
        Write::Shift {
            parent,
            from,
            to,
            delta,
            ..
        } => shift(d, spec, *parent, *from, *to, *delta),
    }
}

/// The statements of [`Write::Renumber`]: the rows of `parent` strictly between `above`
/// and `below`, ranked, get `first + (rank - 1 + [rank > hole_after]) * step`.
pub(super) fn renumber(
    d: Dialect,
    spec: &Spec,
    parent: Id,
    (above, below): (i64, i64),
    (first, step, hole_after): (i64, i64, u64),
    passes: &Passes,
) -> Vec<Statement> {
    let hole = i64::try_from(hole_after).unwrap_or(i64::MAX);
    // rows moved out of the way sit at their negations: they rank where they were
    let parked = matches!(passes, Passes::One { parks } if !parks.is_empty());
    let ranked = |b: &mut B| {
        b.s("(SELECT ")
            .id(spec.id)
            .s(" AS o_rid, ROW_NUMBER() OVER (ORDER BY ");
        if parked {
            // a parked row's rank is its old place; the key breaks a tie with a row
            // at the negation (rebalance's PARK_POSITION)
            b.s("CASE WHEN ")
                .id(spec.position)
                .s(" < 0 THEN -")
                .id(spec.position)
                .s(" ELSE ")
                .id(spec.position)
                .s(" END, ")
                .id(spec.id);
        } else {
            // positions are unique in a list (the spec's constraint): the scope and
            // position index gives the order (with the key as a tie-break SQLite 3.40
            // sorted the rows, 233 ms against 168 for 100k; 3.51 is the same either way)
            b.id(spec.position);
        }
        b.s(") AS o_rn FROM ")
            .id(spec.table)
            .s(" WHERE ")
            .scope_is(spec, None, parent)
            .s(" AND ")
            .id(spec.position)
            .s(" > ")
            .i(above)
            .s(" AND ")
            .id(spec.position)
            .s(" < ")
            .i(below)
            .s(") AS o_r");
    };
    let value = |b: &mut B| {
        b.i(first)
            .s(" + (o_r.o_rn - 1 + CASE WHEN o_r.o_rn > ")
            .i(hole)
            .s(" THEN 1 ELSE 0 END) * ")
            .i(step);
    };
    match d {
        Dialect::Postgres => {
            // one statement: the DEFERRABLE INITIALLY IMMEDIATE constraint is checked at
            // its end, so transient duplicates inside it are allowed
            let mut b = B::new(d);
            b.s("UPDATE ")
                .id(spec.table)
                .s(" AS o_t SET ")
                .id(spec.position)
                .s(" = ");
            value(&mut b);
            b.s(" FROM ");
            ranked(&mut b);
            b.s(" WHERE o_t.").id(spec.id).s(" = o_r.o_rid");
            b.same_list(spec, "o_t", parent);
            vec![b.done(Returns::Nothing)]
        }
        Dialect::Mysql => {
            let mut b = B::new(d);
            b.s("UPDATE ").id(spec.table).s(" AS o_t JOIN ");
            ranked(&mut b);
            b.s(" ON o_t.").id(spec.id).s(" = o_r.o_rid");
            b.same_list(spec, "o_t", parent)
                .s(" SET o_t.")
                .id(spec.position);
            match passes {
                // one pass: nothing is in the way any more
                Passes::One { parks } => {
                    b.s(" = ");
                    value(&mut b);
                    let mut out = move_out_of_the_way(d, spec, parent, parks);
                    out.push(b.done(Returns::Nothing));
                    out
                }
                Passes::Two { temp_offset } => {
                    b.s(" = -(");
                    value(&mut b);
                    b.s(" + ").i(*temp_offset).s(")");
                    vec![
                        b.done(Returns::Nothing),
                        unpark_negated(d, spec, parent, *temp_offset),
                    ]
                }
            }
        }
        Dialect::Sqlite => {
            let mut b = B::new(d);
            b.s("UPDATE ").id(spec.table).s(" SET ").id(spec.position);
            match passes {
                // one pass: nothing is in the way any more
                Passes::One { .. } => {
                    b.s(" = ");
                    value(&mut b);
                    b.s(" FROM ");
                }
                Passes::Two { temp_offset } => {
                    b.s(" = -(");
                    value(&mut b);
                    b.s(" + ").i(*temp_offset).s(") FROM ");
                }
            }
            ranked(&mut b);
            b.s(" WHERE ")
                .id(spec.table)
                .s(".")
                .id(spec.id)
                .s(" = o_r.o_rid");
            let table = quote(d, spec.table);
            b.same_list(spec, &table, parent);
            match passes {
                Passes::One { parks } => {
                    let mut out = move_out_of_the_way(d, spec, parent, parks);
                    out.push(b.done(Returns::Nothing));
                    out
                }
                Passes::Two { temp_offset } => vec![
                    b.done(Returns::Nothing),
                    unpark_negated(d, spec, parent, *temp_offset),
                ],
            }
        }
    }
}

/// `UPDATE items SET position = -position`: how both statements that cross the temporary
/// range on MySQL and SQLite begin.
pub(super) fn negating(d: Dialect, spec: &Spec) -> B {
    let mut b = B::new(d);
    b.s("UPDATE ")
        .id(spec.table)
        .s(" SET ")
        .id(spec.position)
        .s(" = -")
        .id(spec.position);
    b
}

/// Before a one-pass relabel on MySQL and SQLite: the rows whose positions others are
/// about to take move to their negations (none: no statement).
pub(super) fn move_out_of_the_way(
    d: Dialect,
    spec: &Spec,
    parent: Id,
    parks: &[Id],
) -> Vec<Statement> {
    if parks.is_empty() {
        return Vec::new();
    }
    let mut b = negating(d, spec);
    b.s(" WHERE ").scope_is(spec, None, parent).s(" AND (");
    for (i, id) in parks.iter().enumerate() {
        if i > 0 {
            b.s(" OR ");
        }
        b.item_is(spec, None, *id);
    }
    b.s(")");
    vec![b.done(Returns::Nothing)]
}

/// Phase two on MySQL and SQLite: the temporary range `[-(2^62 - 1), -1]` holds final
/// values negated, `offset` further down; flip them back (the parking slot is below that
/// range).
pub(super) fn unpark_negated(d: Dialect, spec: &Spec, parent: Id, offset: i64) -> Statement {
    let mut b = negating(d, spec);
    b.s(" - ")
        .i(offset)
        .s(" WHERE ")
        .scope_is(spec, None, parent)
        .s(" AND ")
        .id(spec.position)
        .s(" < 0 AND ")
        .id(spec.position)
        .s(" > ")
        .i(PARK_POSITION);
    b.done(Returns::Nothing)
}

pub(super) fn shift(
    d: Dialect,
    spec: &Spec,
    parent: Id,
    from: i64,
    to: i64,
    delta: i64,
) -> Vec<Statement> {
    let range = |b: &mut B| {
        b.s(" WHERE ")
            .scope_is(spec, None, parent)
            .s(" AND ")
            .id(spec.position)
            .s(" >= ")
            .i(from)
            .s(" AND ")
            .id(spec.position)
            .s(" <= ")
            .i(to);
    };
    let mut b = B::new(d);
    b.s("UPDATE ")
        .id(spec.table)
        .s(" SET ")
        .id(spec.position)
        .s(" = ");
    match d {
        Dialect::Postgres => {
            b.id(spec.position).s(" + ").i(delta);
            range(&mut b);
            vec![b.done(Returns::Nothing)]
        }
        _ => {
            // v -> -(v + delta) - 1 in [-(n + 1), -1], then back with -v - 1
            b.s("-(").id(spec.position).s(" + ").i(delta).s(") - 1");
            range(&mut b);
            let mut u = B::new(d);
            u.s("UPDATE ")
                .id(spec.table)
                .s(" SET ")
                .id(spec.position)
                .s(" = -")
                .id(spec.position)
                .s(" - 1 WHERE ")
                .scope_is(spec, None, parent)
                .s(" AND ")
                .id(spec.position)
                .s(" < 0 AND ")
                .id(spec.position)
                .s(" > ")
                .i(PARK_POSITION);
            vec![b.done(Returns::Nothing), u.done(Returns::Nothing)]
        }
    }
}

pub(super) fn id_list(b: &mut B, spec: &Spec, ids: impl Iterator<Item = Id>) {
    b.s("(");
    for (i, id) in ids.enumerate() {
        if i > 0 {
            b.s(", ");
        }
        b.item(spec, id);
    }
    b.s(")");
}

pub(super) fn assign(
    d: Dialect,
    spec: &Spec,
    parent: Id,
    rows: &[(Id, Position)],
) -> Vec<Statement> {
    let key = is_key(spec);
    let chunks: Vec<&[(Id, Position)]> = rows.chunks(CHUNK).collect();
    let mut out = Vec::new();
    let constraint = quote(d, &spec.unique_name());
    if d == Dialect::Postgres && chunks.len() > 1 {
        out.push(B::new(d).s_owned(format!("SET CONSTRAINTS {constraint} DEFERRED")));
    }
    if d != Dialect::Postgres {
        // park every assigned row in the temporary range first: these engines check
        // uniqueness row by row, so a final value may still be held by another row
        for chunk in &chunks {
            let mut b = B::new(d);
            b.s("UPDATE ")
                .id(spec.table)
                .s(" SET ")
                .id(spec.position)
                .s(" = ");
            if key {
                match d {
                    Dialect::Mysql => {
                        b.s("CONCAT(")
                            .bind(Arg::Text(TEMP_KEY_PREFIX.into()))
                            .s(", ")
                            .id(spec.position)
                            .s(")");
                    }
                    _ => {
                        b.bind(Arg::Text(TEMP_KEY_PREFIX.into()))
                            .s(" || ")
                            .id(spec.position);
                    }
                }
            } else {
                b.s("-").id(spec.position).s(" - 1");
            }
            b.s(" WHERE ")
                .scope_is(spec, None, parent)
                .s(" AND ")
                .id(spec.id)
                .s(" IN ");
            id_list(&mut b, spec, chunk.iter().map(|r| r.0));
            out.push(b.done(Returns::Nothing));
        }
    }
    for chunk in &chunks {
        let mut b = B::new(d);
        b.s("UPDATE ")
            .id(spec.table)
            .s(" SET ")
            .id(spec.position)
            .s(" = CASE ")
            .id(spec.id);
        for (id, p) in chunk.iter() {
            b.s(" WHEN ").item(spec, *id).s(" THEN ");
            match (d, p) {
                (Dialect::Postgres, Position::Int(_)) => {
                    b.s("CAST(").bind(p.into()).s(" AS BIGINT)");
                }
                (Dialect::Postgres, Position::Key(_)) => {
                    b.s("CAST(").bind(p.into()).s(" AS TEXT)");
                }
                _ => {
                    b.pos(spec, p);
                }
            }
        }
        b.s(" END WHERE ")
            .scope_is(spec, None, parent)
            .s(" AND ")
            .id(spec.id)
            .s(" IN ");
        id_list(&mut b, spec, chunk.iter().map(|r| r.0));
        out.push(b.done(Returns::Nothing));
    }
    if d == Dialect::Postgres && chunks.len() > 1 {
        // surface a leftover duplicate here rather than at COMMIT
        out.push(B::new(d).s_owned(format!("SET CONSTRAINTS {constraint} IMMEDIATE")));
    }
    out
}

impl B {
    pub(super) fn s_owned(mut self, sql: String) -> Statement {
        self.sql = sql;
        self.done(Returns::Nothing)
    }
}
