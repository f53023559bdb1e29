//! The catalog probe behind `check_schema`.

use super::*;

/// The schema probe of [`crate::verify::check_schema`] and of `ensure_ordering`: one
/// row `o_count`, the sum of
/// - 0 when no unique constraint or index covers exactly `(parent, position)` (a partial
///   index does not count), 1 when one of them is not deferrable (PostgreSQL, where the
///   one-statement relabel needs `DEFERRABLE`), 2 when the table is as the protocol needs
///   it. MySQL/MariaDB and SQLite relabel through the temporary range and need no
///   deferrable constraint: 2 for any such unique index;
/// - [`SCHEMA_HAS_CHECK`] when a CHECK constraint on the table names the position column
///   (SQLite: a CHECK in the table's definition that mentions it, read from its text);
/// - the further bits of [`Facts`] (`SCHEMA_*`): each one a problem, or on SQLite the
///   adoption's triggers, so that 6 is a table as the protocol needs it.
pub fn schema_probe(d: Dialect, spec: &Spec) -> Statement {
    let mut b = B::new(d);
    // the scope columns and the position: a unique index on exactly these
    let n = spec.scope_columns().count() + 1;
    let cols = |b: &mut B| {
        for (name, _) in spec.scope_columns() {
            b.bind(Arg::Text(name.to_owned())).s(", ");
        }
        b.bind(Arg::Text(spec.position.to_owned()));
    };
    let table = || Arg::Text(spec.table.to_owned());
    let position = || Arg::Text(spec.position.to_owned());
    match d {
        Dialect::Postgres => {
            b.s("SELECT CAST((SELECT COALESCE(MIN(CASE WHEN c.condeferrable THEN 2 ELSE 1 END), 0) \
                 FROM pg_index i LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid AND c.contype = 'u' \
                 WHERE i.indrelid = to_regclass(quote_ident(")
                .bind(table())
                .s(")) AND i.indisunique AND i.indpred IS NULL AND i.indnatts = ");
            let _ = write!(b.sql, "{n}");
            b.s(
                " AND (SELECT COUNT(*) FROM pg_attribute a WHERE a.attrelid = i.indrelid \
                   AND a.attnum = ANY(i.indkey) AND a.attname IN (",
            );
            cols(&mut b);
            let _ = write!(b.sql, ")) = {n}");
            b.s(
                ") + CASE WHEN EXISTS (SELECT 1 FROM pg_constraint k JOIN pg_attribute a \
                 ON a.attrelid = k.conrelid AND a.attnum = ANY(k.conkey) \
                 WHERE k.conrelid = to_regclass(quote_ident(",
            )
            .bind(table())
            .s(")) AND k.contype = 'c' AND a.attname = ")
            .bind(position())
            .s(") THEN ");
            let _ = write!(b.sql, "{SCHEMA_HAS_CHECK}");
            b.s(" ELSE 0 END");
            facts(&mut b, spec);
            b.s(" AS BIGINT) AS o_count");
        }
        Dialect::Mysql => {
            b.s("SELECT CAST((SELECT 2 * COUNT(*) FROM (SELECT INDEX_NAME \
                 FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ")
                .bind(table())
                .s(" AND NON_UNIQUE = 0 GROUP BY INDEX_NAME HAVING COUNT(*) = ");
            let _ = write!(b.sql, "{n}");
            b.s(" AND SUM(COLUMN_NAME IN (");
            cols(&mut b);
            let _ = write!(b.sql, ")) = {n}");
            b.s(" LIMIT 1) o_u) + CASE WHEN EXISTS (SELECT 1 \
                 FROM information_schema.TABLE_CONSTRAINTS tc JOIN information_schema.CHECK_CONSTRAINTS cc \
                 ON cc.CONSTRAINT_SCHEMA = tc.CONSTRAINT_SCHEMA AND cc.CONSTRAINT_NAME = tc.CONSTRAINT_NAME \
                 WHERE tc.TABLE_SCHEMA = DATABASE() AND tc.TABLE_NAME = ")
                .bind(table())
                .s(" AND tc.CONSTRAINT_TYPE = 'CHECK' AND cc.CHECK_CLAUSE LIKE CONCAT('%`', ")
                .bind(position())
                .s(", '`%')) THEN ");
            let _ = write!(b.sql, "{SCHEMA_HAS_CHECK}");
            b.s(" ELSE 0 END");
            facts(&mut b, spec);
            b.s(" AS SIGNED) AS o_count");
        }
        Dialect::Sqlite => {
            b.s("SELECT (SELECT 2 * COUNT(*) FROM (SELECT l.name FROM pragma_index_list(")
                .bind(table())
                .s(") l WHERE l.\"unique\" = 1 AND l.partial = 0 \
                   AND (SELECT COUNT(*) FROM pragma_index_info(l.name)) = ");
            let _ = write!(b.sql, "{n}");
            b.s(" AND (SELECT COUNT(*) FROM pragma_index_info(l.name) WHERE name IN (");
            cols(&mut b);
            let _ = write!(b.sql, ")) = {n}");
            b.s(
                " LIMIT 1)) + CASE WHEN EXISTS (SELECT 1 FROM sqlite_master \
                 WHERE type = 'table' AND name = ",
            )
            .bind(table())
            .s(" AND upper(sql) LIKE '%CHECK%' || upper(")
            .bind(position())
            .s(") || '%') THEN ");
            let _ = write!(b.sql, "{SCHEMA_HAS_CHECK}");
            b.s(" ELSE 0 END");
            facts(&mut b, spec);
            b.s(" AS o_count");
        }
    }
    b.done(Returns::Count)
}

/// The part of [`schema_probe`]'s answer that says a CHECK constraint covers the
/// position column.
pub const SCHEMA_HAS_CHECK: i64 = 4;
/// The table, or its position column, does not exist.
pub const SCHEMA_NO_POSITION: i64 = 8;
/// The position column accepts NULL (SQLite: and no trigger refuses one).
pub const SCHEMA_NULLABLE: i64 = 16;
/// The position column is an integer narrower than 64 bits (PostgreSQL `integer`,
/// `smallint`; MySQL `INT` and smaller).
pub const SCHEMA_NARROW: i64 = 32;
/// The parent table lacks the spec's version column, or the lock table is missing (a
/// spec without a parent table).
pub const SCHEMA_NO_VERSION: i64 = 64;
/// The version column exists but is not an integer.
pub const SCHEMA_VERSION_NOT_INTEGER: i64 = 128;
/// SQLite: the adoption's triggers keep the position in the library's domain (the
/// CHECK an existing SQLite column cannot get).
pub const SCHEMA_DOMAIN_TRIGGERS: i64 = 256;
/// A foreign key on a scope column sets it to NULL (or its default) when the row it
/// references goes: deleting a tree's node would move its children into the root list
/// onto positions taken there.
pub const SCHEMA_SET_NULL: i64 = 512;
/// A nullable scope on MySQL/MariaDB or SQLite: the root list's unique index is
/// missing.
pub const SCHEMA_NO_ROOT_UNIQUE: i64 = 1024;
/// MySQL/MariaDB: no index starts with the parent column other than the unique one
/// (InnoDB would make the unique index back the foreign key).
pub const SCHEMA_NO_PARENT_INDEX: i64 = 2048;
/// An index or constraint already has the unique constraint's name, though it does not
/// cover exactly `(scope, position)`.
pub const SCHEMA_UNIQUE_NAME_TAKEN: i64 = 4096;

/// [`schema_probe`]'s answer, read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts(pub i64);

impl Facts {
    /// Whether `bit` is set.
    pub fn has(self, bit: i64) -> bool {
        self.0 & bit != 0
    }
    /// 0: no unique constraint on exactly `(scope, position)`; 1: one that is not
    /// deferrable (PostgreSQL); 2: as the protocol needs it.
    pub fn unique(self) -> i64 {
        self.0 & 3
    }
}

/// `+ CASE WHEN <cond> THEN bit ELSE 0 END`.
fn term(b: &mut B, bit: i64, cond: impl FnOnce(&mut B)) {
    b.s(" + CASE WHEN ");
    cond(b);
    let _ = write!(b.sql, " THEN {bit} ELSE 0 END");
}

/// The further terms of [`schema_probe`] (bits 8 and up).
fn facts(b: &mut B, spec: &Spec) {
    let d = b.d;
    let text = |s: &str| Arg::Text(s.to_owned());
    let integer_kind = matches!(spec.strategy.kind(), crate::position::PositionKind::Integer);
    let domain_triggers = crate::migration::domain_trigger_names(spec);
    let required_triggers = crate::migration::required_trigger_names(spec);
    match d {
        Dialect::Postgres => {
            // the position column's attribute
            let attr = |b: &mut B, extra: &str| {
                b.s("EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = to_regclass(quote_ident(")
                    .bind(text(spec.table))
                    .s(")) AND a.attname = ")
                    .bind(text(spec.position))
                    .s(" AND a.attnum > 0 AND NOT a.attisdropped")
                    .s(extra)
                    .s(")");
            };
            term(b, SCHEMA_NO_POSITION, |b| {
                b.s("NOT ");
                attr(b, "");
            });
            term(b, SCHEMA_NULLABLE, |b| attr(b, " AND NOT a.attnotnull"));
            if integer_kind {
                term(b, SCHEMA_NARROW, |b| {
                    attr(b, " AND a.atttypid IN ('int2'::regtype, 'int4'::regtype)")
                });
            }
            version_terms(
                b,
                spec,
                |b, table, column, extra| {
                    b.s("EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = to_regclass(quote_ident(")
                    .bind(text(table))
                    .s(")) AND a.attname = ")
                    .bind(text(column))
                    .s(" AND a.attnum > 0 AND NOT a.attisdropped");
                    if extra {
                        b.s(" AND a.atttypid NOT IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype)");
                    }
                    b.s(")");
                },
                |b| {
                    b.s("to_regclass(quote_ident(")
                        .bind(text(crate::spec::LOCK_TABLE))
                        .s(")) IS NOT NULL");
                },
            );
            if !spec.parent.is_empty() {
                term(b, SCHEMA_SET_NULL, |b| {
                    b.s("EXISTS (SELECT 1 FROM pg_constraint k JOIN pg_attribute a \
                         ON a.attrelid = k.conrelid AND a.attnum = ANY(k.conkey) \
                         WHERE k.conrelid = to_regclass(quote_ident(")
                        .bind(text(spec.table))
                        .s(")) AND k.contype = 'f' AND k.confdeltype IN ('n', 'd') AND a.attname = ")
                        .bind(text(spec.parent))
                        .s(")");
                });
            }
            term(b, SCHEMA_UNIQUE_NAME_TAKEN, |b| {
                b.s("to_regclass(quote_ident(")
                    .bind(text(&spec.unique_name()))
                    .s(")) IS NOT NULL");
            });
        }
        Dialect::Mysql => {
            let column = |b: &mut B, table: &str, col: &str, extra: &str| {
                b.s("EXISTS (SELECT 1 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ")
                    .bind(text(table))
                    .s(" AND COLUMN_NAME = ")
                    .bind(text(col))
                    .s(extra)
                    .s(")");
            };
            term(b, SCHEMA_NO_POSITION, |b| {
                b.s("NOT ");
                column(b, spec.table, spec.position, "");
            });
            term(b, SCHEMA_NULLABLE, |b| {
                column(b, spec.table, spec.position, " AND IS_NULLABLE = 'YES'")
            });
            if integer_kind {
                term(b, SCHEMA_NARROW, |b| {
                    column(
                        b,
                        spec.table,
                        spec.position,
                        " AND DATA_TYPE IN ('tinyint', 'smallint', 'mediumint', 'int')",
                    )
                });
            }
            version_terms(
                b,
                spec,
                |b, table, col, extra| {
                    column(
                        b,
                        table,
                        col,
                        if extra {
                            " AND DATA_TYPE NOT IN ('tinyint', 'smallint', 'mediumint', 'int', 'bigint')"
                        } else {
                            ""
                        },
                    )
                },
                |b| {
                    b.s("EXISTS (SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ")
                    .bind(text(crate::spec::LOCK_TABLE))
                    .s(")");
                },
            );
            if !spec.parent.is_empty() {
                term(b, SCHEMA_SET_NULL, |b| {
                    b.s("EXISTS (SELECT 1 FROM information_schema.REFERENTIAL_CONSTRAINTS rc \
                         JOIN information_schema.KEY_COLUMN_USAGE k ON k.CONSTRAINT_SCHEMA = rc.CONSTRAINT_SCHEMA \
                         AND k.CONSTRAINT_NAME = rc.CONSTRAINT_NAME AND k.TABLE_NAME = rc.TABLE_NAME \
                         WHERE rc.CONSTRAINT_SCHEMA = DATABASE() AND rc.TABLE_NAME = ")
                        .bind(text(spec.table))
                        .s(" AND rc.DELETE_RULE IN ('SET NULL', 'SET DEFAULT') AND k.COLUMN_NAME = ")
                        .bind(text(spec.parent))
                        .s(")");
                });
            }
            let index = |b: &mut B, name: &str| {
                b.s("EXISTS (SELECT 1 FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ")
                    .bind(text(spec.table))
                    .s(" AND INDEX_NAME = ")
                    .bind(text(name))
                    .s(")");
            };
            if spec.nullable() {
                term(b, SCHEMA_NO_ROOT_UNIQUE, |b| {
                    b.s("NOT ");
                    index(b, &crate::migration::root_unique_name(spec));
                });
            }
            if !spec.locks_rows() {
                term(b, SCHEMA_NO_PARENT_INDEX, |b| {
                    b.s("NOT EXISTS (SELECT 1 FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ")
                        .bind(text(spec.table))
                        .s(" AND SEQ_IN_INDEX = 1 AND COLUMN_NAME = ")
                        .bind(text(spec.parent))
                        .s(" AND INDEX_NAME <> ")
                        .bind(text(&spec.unique_name()))
                        .s(")");
                });
            }
            term(b, SCHEMA_UNIQUE_NAME_TAKEN, |b| {
                index(b, &spec.unique_name())
            });
        }
        Dialect::Sqlite => {
            let column = |b: &mut B, table: &str, col: &str, extra: &str| {
                b.s("EXISTS (SELECT 1 FROM pragma_table_info(")
                    .bind(text(table))
                    .s(") WHERE name = ")
                    .bind(text(col))
                    .s(extra)
                    .s(")");
            };
            let triggers = |b: &mut B, names: &[String]| {
                b.s("(SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ")
                    .bind(text(spec.table))
                    .s(" AND name IN (");
                for (i, n) in names.iter().enumerate() {
                    if i > 0 {
                        b.s(", ");
                    }
                    b.bind(text(n));
                }
                let _ = write!(b.sql, ")) = {}", names.len());
            };
            term(b, SCHEMA_NO_POSITION, |b| {
                b.s("NOT ");
                column(b, spec.table, spec.position, "");
            });
            term(b, SCHEMA_NULLABLE, |b| {
                column(b, spec.table, spec.position, " AND \"notnull\" = 0");
                b.s(" AND NOT ");
                triggers(b, &required_triggers);
                b.s(" AND NOT ");
                triggers(b, &domain_triggers);
            });
            version_terms(
                b,
                spec,
                |b, table, col, extra| {
                    column(
                        b,
                        table,
                        col,
                        if extra {
                            " AND upper(type) NOT LIKE '%INT%'"
                        } else {
                            ""
                        },
                    )
                },
                |b| {
                    b.s("EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ")
                        .bind(text(crate::spec::LOCK_TABLE))
                        .s(")");
                },
            );
            term(b, SCHEMA_DOMAIN_TRIGGERS, |b| triggers(b, &domain_triggers));
            if !spec.parent.is_empty() {
                term(b, SCHEMA_SET_NULL, |b| {
                    b.s("EXISTS (SELECT 1 FROM pragma_foreign_key_list(")
                        .bind(text(spec.table))
                        .s(") WHERE \"from\" = ")
                        .bind(text(spec.parent))
                        .s(" AND upper(on_delete) IN ('SET NULL', 'SET DEFAULT'))");
                });
            }
            let named = |b: &mut B, name: &str| {
                b.s("EXISTS (SELECT 1 FROM sqlite_master WHERE name = ")
                    .bind(text(name))
                    .s(")");
            };
            if spec.nullable() {
                term(b, SCHEMA_NO_ROOT_UNIQUE, |b| {
                    b.s("NOT ");
                    named(b, &crate::migration::root_unique_name(spec));
                });
            }
            term(b, SCHEMA_UNIQUE_NAME_TAKEN, |b| {
                named(b, &spec.unique_name())
            });
        }
    }
}

/// The version terms: the parent's version column missing or not an integer, or the
/// lock table missing for a spec without a parent table. `column(b, table, column,
/// not_integer)` writes the condition that the column exists (and is not an integer).
fn version_terms(
    b: &mut B,
    spec: &Spec,
    column: impl Fn(&mut B, &str, &str, bool),
    lock_table: impl FnOnce(&mut B),
) {
    if spec.locks_rows() {
        term(b, SCHEMA_NO_VERSION, |b| {
            b.s("NOT ");
            lock_table(b);
        });
    } else if let Some(v) = spec.version {
        term(b, SCHEMA_NO_VERSION, |b| {
            b.s("NOT ");
            column(b, spec.parent_table, v, false);
        });
        term(b, SCHEMA_VERSION_NOT_INTEGER, |b| {
            column(b, spec.parent_table, v, true)
        });
    }
}

/// The adoption of a numeric column ([`crate::migration::SchemaPlan::renumbering`]):
/// counts the rows `o_s` for which `lists` holds (those of the lists it renumbers).
pub fn rows_reset(d: Dialect, spec: &Spec, lists: &str) -> Statement {
    let mut b = B::new(d);
    b.s("SELECT ")
        .cast_int(|b| {
            b.s("COUNT(*)");
        })
        .s(" AS o_count FROM ")
        .id(spec.table)
        .s(" AS o_s WHERE ")
        .s(lists);
    b.done(Returns::Count)
}

/// Counts the rows of the table that would make a constraint `ensure_ordering` adds
/// fail: with `all`, the positions shared by several rows of one list, the rows without
/// a position, and the positions outside the library's domain; without, only the last
/// (what the domain CHECK an adoption adds before renumbering refuses). One row
/// `o_count`.
pub fn rows_breaking(d: Dialect, spec: &Spec, all: bool) -> Statement {
    let mut b = B::new(d);
    let domain = crate::migration::check_constraint(d, spec);
    b.s("SELECT CAST(");
    if all {
        b.s("(SELECT COUNT(*) FROM (SELECT 1 AS o_x FROM ")
            .id(spec.table)
            .s(" WHERE ")
            .id(spec.position)
            .s(" IS NOT NULL GROUP BY ");
        for (c, _) in spec.scope_columns() {
            b.id(c).s(", ");
        }
        b.id(spec.position)
            .s(" HAVING COUNT(*) > 1) o_d) + (SELECT COUNT(*) FROM ")
            .id(spec.table)
            .s(" WHERE ")
            .id(spec.position)
            .s(" IS NULL) + ");
    }
    b.s("(SELECT COUNT(*) FROM ")
        .id(spec.table)
        .s(" WHERE ")
        .id(spec.position)
        .s(" IS NOT NULL AND NOT (")
        .s(&domain)
        .s("))");
    b.s(match d {
        Dialect::Mysql => " AS SIGNED) AS o_count",
        Dialect::Postgres => " AS BIGINT) AS o_count",
        Dialect::Sqlite => " AS INTEGER) AS o_count",
    });
    b.done(Returns::Count)
}
