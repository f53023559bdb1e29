//! The parent locks and version bumps, per engine.

use super::*;

/// The statements that lock a parent row and bump its version, returning
/// `(o_id, o_version)` as the version was *before* this operation. Zero rows mean the
/// parent does not exist.
///
/// - PostgreSQL: one `UPDATE ... RETURNING`: the update takes the row lock and creates a
///   new row version, so a REPEATABLE READ or SERIALIZABLE transaction that waited gets
///   `40001` instead of reading a stale snapshot. Without a
///   version column the key is set to itself, which has the same effect.
/// - MySQL: a locking read (`FOR UPDATE` reads the latest committed row), then the bump
///   (MariaDB has no `UPDATE ... RETURNING`). Where the bump alone can be the lock, the
///   engine uses [`lock_by_bump`] instead.
/// - SQLite: the transaction is `BEGIN IMMEDIATE`, which is the lock; the bump is one
///   `UPDATE ... RETURNING` as on PostgreSQL (SQLite 3.35+), a plain read of the row
///   without a version column.
pub fn lock_parent(d: Dialect, spec: &Spec, parent: Id, bump: bool) -> Vec<Statement> {
    if spec.locks_rows() {
        return lock_row(d, spec, parent, bump);
    }
    let mut out = vec![lock(d, spec, LockTarget::Parent(parent), bump)];
    out.extend(bump_after_lock(d, spec, parent, bump));
    out
}

/// The lock of a collection of a table with no parent table ([`Spec::locks_rows`]): an
/// upsert of its row in the lock table that takes the row lock and bumps the version
/// (creating the row, at version 1, on the collection's first write), then the version
/// as it was before, one row `o_count` ([`Returns::Count`]): from the upsert itself on
/// PostgreSQL and SQLite (`RETURNING`), from a read of the locked row on MySQL. Without
/// `bump` the upsert sets the version to itself: the same row lock, the version kept
/// (a tree's root list locked only to serialize moves between parents).
pub(super) fn lock_row(d: Dialect, spec: &Spec, scope: Id, bump: bool) -> Vec<Statement> {
    let inc = i64::from(bump);
    let key = |b: &mut B| {
        b.bind(Arg::Text(spec.table.to_owned()))
            .s(", ")
            .bind(Arg::Text(spec.lock_name(scope)));
    };
    let t = crate::spec::LOCK_TABLE;
    let mut b = B::new(d);
    b.s("INSERT INTO ")
        .id(t)
        .s(" (")
        .id("table_name")
        .s(", ")
        .id("scope_key")
        .s(", ")
        .id("version")
        .s(") VALUES (");
    key(&mut b);
    let _ = write!(b.sql, ", {inc})");
    match d {
        Dialect::Mysql => {
            b.s(" ON DUPLICATE KEY UPDATE ")
                .id("version")
                .s(" = ")
                .id("version");
            let _ = write!(b.sql, " + {inc}");
            let mut r = B::new(d);
            r.s("SELECT CAST(").id("version");
            let _ = write!(r.sql, " - {inc} AS SIGNED) AS o_count FROM ");
            r.id(t).s(" WHERE ").lock_row_is(spec, scope);
            vec![b.done(Returns::Nothing), r.done(Returns::Count)]
        }
        _ => {
            b.s(" ON CONFLICT (")
                .id("table_name")
                .s(", ")
                .id("scope_key")
                .s(") DO UPDATE SET ")
                .id("version")
                .s(" = ")
                .id(t)
                .s(".")
                .id("version");
            let _ = write!(b.sql, " + {inc} RETURNING ");
            b.cast_int(|b| {
                b.id("version");
                let _ = write!(b.sql, " - {inc}");
            })
            .s(" AS o_count");
            vec![b.done(Returns::Count)]
        }
    }
}

/// The first statement of [`lock_parent`] for the parent of the item `item`, found by
/// a subquery in the same statement, so a move or a removal locks its collection in
/// one round trip instead of reading the item first. Zero rows: the item or its parent
/// does not exist (the engine then reads the item to tell which). The subquery reads
/// the item before the lock is granted, so the item may have moved by then: the first
/// read under the lock checks that it is still there
/// ([`Error::ParentChanged`](crate::Error::ParentChanged) otherwise). It never locks
/// the item's row, which would take the item before the parent, against every other
/// writer's order. On MySQL the bump follows ([`bump_after_lock`]).
pub fn lock_parent_of(d: Dialect, spec: &Spec, item: Id, bump: bool) -> Statement {
    lock(d, spec, LockTarget::ParentOf(item), bump)
}

/// The lock of `parent` on MySQL/MariaDB when the bump can be the lock: the `UPDATE`
/// that bumps the version takes the row's exclusive lock as the locking read would, so
/// the read and the bump of [`lock_parent`] become one statement, and the version as it
/// was comes back with the first read under the lock ([`Probe::Version`] in [`fused`]).
/// `None` elsewhere, and where [`lock_parent`] is needed: on PostgreSQL and SQLite (one
/// statement already), without a version column or a bump, for a table with no parent
/// table, and on a text wire ([`Spec::text_wire`]; the version part has the item
/// parts' integer shape). The reply is the count of rows updated: zero means the parent
/// does not exist.
pub fn lock_by_bump(d: Dialect, spec: &Spec, parent: Id, bump: bool) -> Option<Statement> {
    if spec.text_wire() {
        return None;
    }
    bump_after_lock(d, spec, parent, bump)
}

/// The statement that bumps `parent`'s version after the locking read of
/// [`lock_parent`] or [`lock_parent_of`] on MySQL (on PostgreSQL and SQLite the lock is
/// the bump, `UPDATE ... RETURNING`, and without a version column there is nothing to
/// bump).
pub fn bump_after_lock(d: Dialect, spec: &Spec, parent: Id, bump: bool) -> Option<Statement> {
    let v = spec.version?;
    if !bump || d != Dialect::Mysql || spec.locks_rows() {
        return None;
    }
    let mut u = B::new(d);
    u.s("UPDATE ")
        .id(spec.parent_table)
        .s(" SET ")
        .id(v)
        .s(" = ")
        .id(v)
        .s(" + 1 WHERE ")
        .id(spec.parent_id)
        .s(" = ")
        .scope(spec, parent);
    Some(u.done(Returns::Nothing))
}

#[derive(Clone, Copy)]
pub(super) enum LockTarget {
    Parent(Id),
    ParentOf(Id),
}

pub(super) fn lock(d: Dialect, spec: &Spec, target: LockTarget, bump: bool) -> Statement {
    let version_col = |b: &mut B| match spec.version {
        Some(v) => {
            b.cast_int(|b| {
                b.id(v);
            });
        }
        None => {
            b.cast_int(|b| {
                b.s("0");
            });
        }
    };
    let key = |b: &mut B| {
        b.id(spec.parent_id).s(" = ");
        match target {
            LockTarget::Parent(p) => {
                b.scope(spec, p);
            }
            LockTarget::ParentOf(item) => {
                b.s("(SELECT ")
                    .id(spec.parent)
                    .s(" FROM ")
                    .id(spec.table)
                    .s(" WHERE ")
                    .item_is(spec, None, item)
                    .s(")");
            }
        }
    };
    let by_update = match d {
        // without the bump (the reliability suite's negative control) PostgreSQL takes
        // the plain row lock below, which under REPEATABLE READ lets a writer plan from
        // a snapshot older than the lock
        Dialect::Postgres => bump,
        // the lock is `BEGIN IMMEDIATE`: the update is only the bump, in the statement
        // that reads the row (a statement fewer); without a version column there is
        // nothing to write
        Dialect::Sqlite => bump && spec.version.is_some(),
        // MariaDB has no `UPDATE ... RETURNING`: the bump follows ([`bump_after_lock`])
        Dialect::Mysql => false,
    };
    if by_update {
        return lock_by_update(d, spec, key, version_col);
    }
    let mut b = B::new(d);
    b.s("SELECT ")
        .out_key(spec.text_wire(), spec.parent_type, |b| {
            b.id(spec.parent_id);
        })
        .s(" AS o_id, ");
    version_col(&mut b);
    b.s(" AS o_version FROM ")
        .id(spec.parent_table)
        .s(" WHERE ");
    key(&mut b);
    if d != Dialect::Sqlite {
        b.s(" FOR UPDATE");
    }
    b.done(Returns::Parent)
}

/// The lock that is an update of the parent row (the version bumped, or without a
/// version column the key set to itself) answering the row as it was before, with
/// `RETURNING`: PostgreSQL and SQLite.
pub(super) fn lock_by_update(
    d: Dialect,
    spec: &Spec,
    key: impl Fn(&mut B),
    version_col: impl Fn(&mut B),
) -> Statement {
    let mut b = B::new(d);
    b.s("UPDATE ").id(spec.parent_table).s(" SET ");
    match spec.version {
        Some(v) => {
            b.id(v).s(" = ").id(v).s(" + 1");
        }
        _ => {
            b.id(spec.parent_id).s(" = ").id(spec.parent_id);
        }
    }
    b.s(" WHERE ");
    key(&mut b);
    b.s(" RETURNING ")
        .out_key(spec.text_wire(), spec.parent_type, |b| {
            b.id(spec.parent_id);
        })
        .s(" AS o_id, ");
    match spec.version {
        Some(v) => {
            b.cast_int(|b| {
                b.id(v).s(" - 1");
            });
        }
        _ => version_col(&mut b),
    }
    b.s(" AS o_version");
    b.done(Returns::Parent)
}
