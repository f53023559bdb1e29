//! The statements of request records ([`crate::requests`]): find one, record one,
//! purge old ones, and the table's DDL.

use super::*;
use crate::requests::{Record, TABLE};

/// The record of `rec`'s key, one row `(o_digest, o_outcome)` or none
/// ([`Returns::Record`]). A plain read: under READ COMMITTED it sees every record
/// committed before it; one committed after it makes this operation's own record a
/// duplicate, and the operation starts again and finds it.
pub fn find_record(d: Dialect, rec: &Record) -> Statement {
    let mut b = B::new(d);
    b.s("SELECT ")
        .id("digest")
        .s(" AS o_digest, ")
        .id("outcome")
        .s(" AS o_outcome FROM ")
        .id(TABLE)
        .s(" WHERE ");
    key_is(&mut b, rec);
    b.done(Returns::Record)
}

fn key_is(b: &mut B, rec: &Record) {
    b.id("table_name")
        .s(" = ")
        .bind(Arg::Text(rec.table.to_owned()))
        .s(" AND ")
        .id("tenant")
        .s(" = ")
        .bind(Arg::Text(rec.tenant.clone()))
        .s(" AND ")
        .id("request_key")
        .s(" = ")
        .bind(Arg::Text(rec.key_text.clone()));
}

/// Records `rec` with its outcome (JSON): a duplicate of its key means another call
/// with the same key committed first.
pub fn insert_record(d: Dialect, rec: &Record, outcome: &str) -> Statement {
    let mut b = B::new(d);
    b.s("INSERT INTO ").id(TABLE).s(" (");
    for (i, c) in [
        "table_name",
        "tenant",
        "request_key",
        "digest",
        "outcome",
        "created_at",
    ]
    .into_iter()
    .enumerate()
    {
        if i > 0 {
            b.s(", ");
        }
        b.id(c);
    }
    b.s(") VALUES (")
        .bind(Arg::Text(rec.table.to_owned()))
        .s(", ")
        .bind(Arg::Text(rec.tenant.clone()))
        .s(", ")
        .bind(Arg::Text(rec.key_text.clone()))
        .s(", ")
        .bind(Arg::Text(rec.digest.clone()))
        .s(", ")
        .bind(Arg::Text(outcome.to_owned()))
        .s(", ")
        .i(rec.at_ms)
        .s(")");
    b.done(Returns::Nothing)
}

/// Deletes at most `batch` records of `table` made before `before_ms`, oldest first:
/// one short statement (its own transaction when run outside one), so a purge never
/// holds locks for long. The adapters' `purge_requests` repeats it until a batch comes
/// back short.
pub fn purge_records(d: Dialect, table: &str, before_ms: i64, batch: u32) -> Statement {
    let mut b = B::new(d);
    let old = |b: &mut B| {
        b.id("table_name")
            .s(" = ")
            .bind(Arg::Text(table.to_owned()))
            .s(" AND ")
            .id("created_at")
            .s(" < ")
            .i(before_ms);
    };
    b.s("DELETE FROM ").id(TABLE).s(" WHERE ");
    match d {
        // MySQL/MariaDB take no LIMIT in an IN subquery, and a DELETE's own LIMIT
        Dialect::Mysql => {
            old(&mut b);
            b.s(" ORDER BY ").id("created_at");
            let _ = write!(b.sql, " LIMIT {batch}");
        }
        _ => {
            b.s("(")
                .id("table_name")
                .s(", ")
                .id("tenant")
                .s(", ")
                .id("request_key")
                .s(") IN (SELECT ")
                .id("table_name")
                .s(", ")
                .id("tenant")
                .s(", ")
                .id("request_key")
                .s(" FROM ")
                .id(TABLE)
                .s(" WHERE ");
            old(&mut b);
            b.s(" ORDER BY ").id("created_at");
            let _ = write!(b.sql, " LIMIT {batch})");
        }
    }
    b.done(Returns::Nothing)
}

/// The DDL of the records table and its index on `(table_name, created_at)` (what a
/// purge walks), each created if missing.
pub fn requests_table(d: Dialect) -> Vec<String> {
    let q = |s: &str| quote(d, s);
    let (name, key, digest, outcome, engine) = match d {
        Dialect::Mysql => (
            "VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
            "VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
            "CHAR(64) CHARACTER SET ascii",
            "MEDIUMTEXT CHARACTER SET utf8mb4",
            " ENGINE=InnoDB",
        ),
        Dialect::Postgres => (
            "VARCHAR(255) COLLATE \"C\"",
            "VARCHAR(200) COLLATE \"C\"",
            "CHAR(64)",
            "TEXT",
            "",
        ),
        Dialect::Sqlite => ("TEXT", "TEXT", "TEXT", "TEXT", ""),
    };
    let index = format!("{TABLE}_created_at");
    let inline_index = if d == Dialect::Mysql {
        // MySQL 8 has no CREATE INDEX IF NOT EXISTS
        format!(
            ",\n  KEY {} ({}, {})",
            q(&index),
            q("table_name"),
            q("created_at")
        )
    } else {
        String::new()
    };
    let mut out = vec![format!(
        "CREATE TABLE IF NOT EXISTS {} (\n  {} {name} NOT NULL,\n  {} {key} NOT NULL,\n  {} {key} NOT NULL,\n  {} {digest} NOT NULL,\n  {} {outcome} NOT NULL,\n  {} BIGINT NOT NULL,\n  PRIMARY KEY ({}, {}, {}){inline_index}\n){engine}",
        q(TABLE),
        q("table_name"),
        q("tenant"),
        q("request_key"),
        q("digest"),
        q("outcome"),
        q("created_at"),
        q("table_name"),
        q("tenant"),
        q("request_key"),
    )];
    if d != Dialect::Mysql {
        out.push(format!(
            "CREATE INDEX IF NOT EXISTS {} ON {} ({}, {})",
            q(&index),
            q(TABLE),
            q("table_name"),
            q("created_at")
        ));
    }
    out
}
