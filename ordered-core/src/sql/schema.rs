//! The catalog probe behind `check_schema`.

use super::*;

/// The schema probe of [`crate::verify::check_schema`]: one row `o_count`, the sum of
/// - 0 when no unique constraint or index covers exactly `(parent, position)` (a partial
///   index does not count), 1 when one of them is not deferrable (PostgreSQL, where the
///   one-statement relabel needs `DEFERRABLE`), 2 when the table is as the protocol needs
///   it. MySQL/MariaDB and SQLite relabel through the temporary range and need no
///   deferrable constraint: 2 for any such unique index;
/// - [`SCHEMA_HAS_CHECK`] when a CHECK constraint on the table names the position column
///   (SQLite: a CHECK in the table's definition that mentions it, read from its text).
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
            b.s(" ELSE 0 END AS BIGINT) AS o_count");
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
            b.s(" ELSE 0 END AS SIGNED) AS o_count");
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
            b.s(" ELSE 0 END AS o_count");
        }
    }
    b.done(Returns::Count)
}

/// The part of [`schema_probe`]'s answer that says a CHECK constraint covers the
/// position column.
pub const SCHEMA_HAS_CHECK: i64 = 4;
