//! DDL for the position column, its constraints and the parent version column, per
//! engine, with down migrations. The adapters write these into Diesel's migration
//! folders or run them from `sea-orm-migration`.
//!
//! ```
//! use ordered_core::migration::{self, Backfill};
//! use ordered_core::{Dialect, Spec};
//!
//! const TRACKS: Spec = Spec::new("tracks", "playlist_id", "playlists").with_version("version");
//! let m = migration::add_ordering(Dialect::Postgres, &TRACKS, Backfill::By(&["created_at", "id"]));
//! assert!(m.up_sql().contains("DEFERRABLE INITIALLY IMMEDIATE"));
//! assert!(m.down_sql().contains("DROP COLUMN \"position\""));
//! ```

use crate::id::KeyType;
use crate::position::{MAX_POSITION, PARK_POSITION, PositionKind};
use crate::spec::Spec;
use crate::sql::{Dialect, quote};

/// Up and down statements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migration {
    /// Statements that apply the change, in order.
    pub up: Vec<String>,
    /// Statements that revert it, in order.
    pub down: Vec<String>,
}

impl Migration {
    /// The up statements as one script.
    pub fn up_sql(&self) -> String {
        script(&self.up)
    }
    /// The down statements as one script.
    pub fn down_sql(&self) -> String {
        script(&self.down)
    }
}

fn script(stmts: &[String]) -> String {
    let mut s = String::new();
    for st in stmts {
        s.push_str(st);
        s.push_str(";\n");
    }
    s
}

/// How existing rows get their first positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backfill<'a> {
    /// The table is empty (or new): no backfill.
    None,
    /// Number each collection in the order of these columns (e.g. creation time then
    /// id), with a window function, one statement for the whole table. Each entry is a
    /// column name, optionally followed by `ASC` or `DESC` (`"created_at DESC"` keeps a
    /// newest-first order); the names are quoted and qualified with the table, so a
    /// misspelt one is an error on every engine (SQLite would otherwise read an unknown
    /// quoted name as a string constant and order by nothing).
    By(&'a [&'a str]),
}

/// The key width used by the SQL backfill of fractional keys: head `e` and five base-62
/// digits (`e00001`, `e00002`, ...), enough for 916 million items per collection.
const BACKFILL_KEY_DIGITS: u32 = 5;

fn q(d: Dialect, s: &str) -> String {
    quote(d, s)
}

/// The scope columns and the position, quoted and comma-separated: what the unique
/// constraint covers (`parent`, then [`Spec::split_by`]; only the position for a global
/// list).
fn unique_cols(d: Dialect, spec: &Spec) -> String {
    spec.scope_columns()
        .map(|(c, _)| q(d, c))
        .chain(std::iter::once(q(d, spec.position)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The lock table of the tables without a parent table ([`Spec::without_parent`],
/// [`Spec::global`]): a row per collection, `(table_name, scope_key)` and its version,
/// created if missing (one per database, shared by every such table).
fn lock_table_sql(d: Dialect) -> String {
    let text = match d {
        Dialect::Mysql => "VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
        Dialect::Postgres => "VARCHAR(255) COLLATE \"C\"",
        Dialect::Sqlite => "TEXT",
    };
    let engine = if d == Dialect::Mysql {
        " ENGINE=InnoDB"
    } else {
        ""
    };
    format!(
        "CREATE TABLE IF NOT EXISTS {} (\n  {} {text} NOT NULL,\n  {} {text} NOT NULL,\n  {} BIGINT NOT NULL DEFAULT 0,\n  PRIMARY KEY ({}, {})\n){engine}",
        q(d, crate::spec::LOCK_TABLE),
        q(d, "table_name"),
        q(d, "scope_key"),
        q(d, "version"),
        q(d, "table_name"),
        q(d, "scope_key"),
    )
}

/// Creates the lock table the tables without a parent table lock and version their
/// collections through ([`crate::spec::LOCK_TABLE`]), if it does not exist:
/// `(table_name, scope_key)` primary key and a `version`. [`create_parent_table`] and
/// [`add_ordering`] of such a table create it; the down migration keeps it (other
/// tables may use it).
///
/// ```
/// use ordered_core::{Dialect, migration::create_lock_table};
///
/// assert!(create_lock_table(Dialect::Postgres).up_sql().contains("CREATE TABLE IF NOT EXISTS \"ordered_locks\""));
/// ```
pub fn create_lock_table(d: Dialect) -> Migration {
    Migration {
        up: vec![lock_table_sql(d)],
        down: Vec::new(),
    }
}

/// Creates the table of request records ([`crate::requests::TABLE`],
/// `ordered_requests`), if it does not exist: one per database, shared by every ordered
/// table. Writes made with a request key (`OrderedTable::request_key`) record their
/// outcome there; without it they are refused with
/// [`SchemaMismatch`](crate::Error::SchemaMismatch). The down migration drops it.
///
/// ```
/// use ordered_core::{Dialect, migration::create_requests_table};
///
/// let m = create_requests_table(Dialect::Postgres);
/// assert!(m.up_sql().contains("CREATE TABLE IF NOT EXISTS \"ordered_requests\""));
/// assert!(m.down_sql().contains("DROP TABLE IF EXISTS \"ordered_requests\""));
/// ```
pub fn create_requests_table(d: Dialect) -> Migration {
    Migration {
        up: crate::sql::requests_table(d),
        down: vec![format!(
            "DROP TABLE IF EXISTS {}",
            q(d, crate::requests::TABLE)
        )],
    }
}

fn column_type(d: Dialect, spec: &Spec) -> String {
    match (spec.strategy.kind(), d) {
        (PositionKind::Integer, Dialect::Sqlite) => "INTEGER".into(),
        (PositionKind::Integer, _) => "BIGINT".into(),
        // room for the temporary prefix used during relabels
        (PositionKind::Key { max_len }, Dialect::Postgres) => {
            format!("VARCHAR({}) COLLATE \"C\"", max_len + 1)
        }
        (PositionKind::Key { max_len }, Dialect::Mysql) => format!("VARBINARY({})", max_len + 1),
        (PositionKind::Key { .. }, Dialect::Sqlite) => "TEXT COLLATE BINARY".into(),
        (PositionKind::Float, Dialect::Postgres) => "DOUBLE PRECISION".into(),
        (PositionKind::Float, Dialect::Mysql) => "DOUBLE".into(),
        (PositionKind::Float, Dialect::Sqlite) => "REAL".into(),
        (PositionKind::Decimal { precision, scale }, Dialect::Mysql) => {
            format!("DECIMAL({precision}, {scale})")
        }
        (PositionKind::Decimal { precision, scale }, _) => {
            format!("NUMERIC({precision}, {scale})")
        }
    }
}

/// The bound of a numeric column's CHECK: finite floats (which keeps NaN and the
/// infinities out, on PostgreSQL, whose NaN compares above every number, too); a
/// decimal's whole range.
fn numeric_limit(kind: PositionKind) -> String {
    match kind {
        PositionKind::Decimal { precision, scale } => {
            format!("{}", 10_f64.powi(i32::from(precision - scale)) - 1.0)
        }
        _ => "1.7976931348623157e308".into(),
    }
}

/// `<table>_<position>_domain`: the name of the domain CHECK.
pub(crate) fn domain_name(spec: &Spec) -> String {
    format!("{}_{}_domain", spec.table, spec.position)
}

/// The CHECK on the position's domain: integers inside `[PARK, MAX]` (SQLite: and of
/// integer type, since it silently turns an overflow into a REAL); keys of text type.
fn check_expr(d: Dialect, spec: &Spec, nullable: bool) -> String {
    check_expr_on(d, spec, &q(d, spec.position), nullable)
}

/// [`check_expr`] of the column expression `c` (`NEW."position"` in a trigger).
fn check_expr_on(d: Dialect, spec: &Spec, c: &str, nullable: bool) -> String {
    let body = match (spec.strategy.kind(), d) {
        (PositionKind::Integer, Dialect::Sqlite) => {
            format!("typeof({c}) = 'integer' AND {c} BETWEEN {PARK_POSITION} AND {MAX_POSITION}")
        }
        (PositionKind::Integer, _) => format!("{c} BETWEEN {PARK_POSITION} AND {MAX_POSITION}"),
        (PositionKind::Key { .. }, Dialect::Sqlite) => format!("typeof({c}) = 'text'"),
        (PositionKind::Key { .. }, _) => format!("{c} <> ''"),
        (kind, Dialect::Sqlite) => {
            let lim = numeric_limit(kind);
            format!("typeof({c}) IN ('real', 'integer') AND {c} BETWEEN -{lim} AND {lim}")
        }
        (kind, _) => {
            let lim = numeric_limit(kind);
            format!("{c} BETWEEN -{lim} AND {lim}")
        }
    };
    if nullable {
        format!("{c} IS NULL OR ({body})")
    } else {
        body
    }
}

/// The CHECK expression the generated migrations put on the position column (integers
/// inside the library's range, keys of text type), unquoted names included: what
/// [`crate::verify::check_schema`] tells an adopted table to add.
pub fn check_constraint(d: Dialect, spec: &Spec) -> String {
    check_expr(d, spec, false)
}

/// `ALTER TABLE ... ADD CONSTRAINT <table>_<position>_domain CHECK (...)`.
fn check_up(d: Dialect, spec: &Spec) -> String {
    format!(
        "ALTER TABLE {} ADD CONSTRAINT {} CHECK ({})",
        q(d, spec.table),
        q(d, &domain_name(spec)),
        check_expr(d, spec, false)
    )
}

/// The tail every migration that orders an existing table shares: the parent index on
/// MySQL, the unique constraint; and its down: the unique constraint, SQLite's
/// required-position triggers or the CHECK elsewhere.
fn constraints(d: Dialect, spec: &Spec, up: &mut Vec<String>) -> Vec<String> {
    // the parent index backs the foreign key to the parent table (none with lock rows)
    if d == Dialect::Mysql && !spec.locks_rows() {
        up.extend(mysql_parent_index(spec));
    }
    up.push(unique_up(d, spec));
    up.extend(root_unique(d, spec).0);
    constraints_down(d, spec)
}

/// The down of [`constraints`]: the root list's unique index, the unique constraint,
/// SQLite's triggers or the CHECK elsewhere (on MySQL/MariaDB the parent index stays:
/// the foreign key needs an index).
fn constraints_down(d: Dialect, spec: &Spec) -> Vec<String> {
    let mut down = root_unique(d, spec).1;
    down.push(unique_down(d, spec));
    match d {
        Dialect::Sqlite => {
            for name in required_trigger_names(spec)
                .into_iter()
                .chain(domain_trigger_names(spec))
            {
                down.push(format!("DROP TRIGGER IF EXISTS {}", q(d, &name)));
            }
        }
        _ => down.push(format!(
            "ALTER TABLE {} DROP CONSTRAINT {}",
            q(d, spec.table),
            q(d, &domain_name(spec))
        )),
    }
    down
}

fn version_up(d: Dialect, spec: &Spec) -> Option<String> {
    if spec.locks_rows() {
        // the versions live in the lock table, shared by every such table
        return Some(lock_table_sql(d));
    }
    spec.version.map(|v| {
        format!(
            "ALTER TABLE {} ADD COLUMN {} BIGINT NOT NULL DEFAULT 0",
            q(d, spec.parent_table),
            q(d, v)
        )
    })
}

fn version_down(d: Dialect, spec: &Spec) -> Option<String> {
    if spec.locks_rows() {
        // other tables may use the lock table: it stays
        return None;
    }
    spec.version.map(|v| {
        format!(
            "ALTER TABLE {} DROP COLUMN {}",
            q(d, spec.parent_table),
            q(d, v)
        )
    })
}

/// MySQL/MariaDB: the name of the index on the parent column.
fn parent_index_name(spec: &Spec) -> String {
    format!("{}_{}_idx", spec.table, spec.parent)
}

/// MySQL/MariaDB: `CREATE INDEX` of the index on the parent column.
fn parent_index(spec: &Spec) -> String {
    let d = Dialect::Mysql;
    format!(
        "CREATE INDEX {} ON {} ({})",
        q(d, &parent_index_name(spec)),
        q(d, spec.table),
        q(d, spec.parent)
    )
}

/// MySQL/MariaDB: an index on the parent column, created only if missing. InnoDB
/// otherwise lets the `(parent, position)` unique index back the foreign key and drops
/// its own, after which the unique index can no longer be dropped (error 1553). Both
/// engines lack a portable `CREATE INDEX IF NOT EXISTS`, hence the prepared statement.
fn mysql_parent_index(spec: &Spec) -> Vec<String> {
    let name = parent_index_name(spec);
    let create = parent_index(spec);
    vec![
        format!(
            "SET @ordered_ddl = IF((SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = '{}' AND index_name = '{}') = 0, '{}', 'DO 0')",
            spec.table.replace('\'', "''"),
            name.replace('\'', "''"),
            create.replace('\'', "''")
        ),
        "PREPARE ordered_stmt FROM @ordered_ddl".to_owned(),
        "EXECUTE ordered_stmt".to_owned(),
        "DEALLOCATE PREPARE ordered_stmt".to_owned(),
    ]
}

/// `UNIQUE` or, for a nullable scope on PostgreSQL, `UNIQUE NULLS NOT DISTINCT`
/// (PostgreSQL 15), so the root list's positions are unique too.
fn unique_kw(spec: &Spec) -> &'static str {
    if spec.nullable() {
        "UNIQUE NULLS NOT DISTINCT"
    } else {
        "UNIQUE"
    }
}

fn unique_up(d: Dialect, spec: &Spec) -> String {
    let (t, u) = (q(d, spec.table), q(d, &spec.unique_name()));
    let cols = unique_cols(d, spec);
    match d {
        // deferrable, so one statement may pass through transient duplicates; a
        // CREATE UNIQUE INDEX cannot be deferrable
        Dialect::Postgres => format!(
            "ALTER TABLE {t} ADD CONSTRAINT {u} {} ({cols}) DEFERRABLE INITIALLY IMMEDIATE",
            unique_kw(spec)
        ),
        _ => format!("CREATE UNIQUE INDEX {u} ON {t} ({cols})"),
    }
}

fn unique_down(d: Dialect, spec: &Spec) -> String {
    let (t, u) = (q(d, spec.table), q(d, &spec.unique_name()));
    match d {
        Dialect::Postgres => format!("ALTER TABLE {t} DROP CONSTRAINT {u}"),
        Dialect::Mysql => format!("DROP INDEX {u} ON {t}"),
        Dialect::Sqlite => format!("DROP INDEX {u}"),
    }
}

/// The name of the index that keeps the root list's positions unique where a unique
/// index treats NULLs as distinct (MySQL/MariaDB, SQLite).
pub(crate) fn root_unique_name(spec: &Spec) -> String {
    format!("{}_root", spec.unique_name())
}

/// MySQL/MariaDB: the generated column that is 1 for a row of the root list and NULL
/// for any other, so a unique key on it and the position covers the root list alone
/// (neither engine has partial or `NULLS NOT DISTINCT` unique indexes).
fn root_column(spec: &Spec) -> String {
    format!("{}_is_root", spec.parent)
}

fn root_column_def(spec: &Spec) -> String {
    let d = Dialect::Mysql;
    format!(
        "{} TINYINT AS (IF({} IS NULL, 1, NULL)) VIRTUAL",
        q(d, &root_column(spec)),
        q(d, spec.parent)
    )
}

/// The statements that keep the root list's positions unique on MySQL/MariaDB and
/// SQLite, and their down (none on PostgreSQL, where the unique constraint is `NULLS
/// NOT DISTINCT`, or for a scope that is never NULL).
fn root_unique(d: Dialect, spec: &Spec) -> (Vec<String>, Vec<String>) {
    if !spec.nullable() {
        return (Vec::new(), Vec::new());
    }
    let (t, u) = (q(d, spec.table), q(d, &root_unique_name(spec)));
    match d {
        Dialect::Postgres => (Vec::new(), Vec::new()),
        Dialect::Mysql => (
            vec![format!(
                "ALTER TABLE {t} ADD COLUMN {}, ADD UNIQUE KEY {u} ({}, {})",
                root_column_def(spec),
                q(d, &root_column(spec)),
                q(d, spec.position)
            )],
            vec![format!(
                "ALTER TABLE {t} DROP INDEX {u}, DROP COLUMN {}",
                q(d, &root_column(spec))
            )],
        ),
        Dialect::Sqlite => (
            vec![format!(
                "CREATE UNIQUE INDEX {u} ON {t} ({}) WHERE {} IS NULL",
                q(d, spec.position),
                q(d, spec.parent)
            )],
            vec![format!("DROP INDEX {u}")],
        ),
    }
}

/// The value expression for row number `rn` in the backfill.
fn backfill_value(d: Dialect, spec: &Spec, rn: &str) -> String {
    match spec.strategy.kind() {
        PositionKind::Integer if spec.strategy.is_dense() => format!("{rn} - 1"),
        PositionKind::Integer => {
            let spacing = spec
                .strategy
                .between(None, None)
                .ok()
                .flatten()
                .and_then(|p| p.as_int())
                .unwrap_or(1024);
            format!("{rn} * {spacing}")
        }
        PositionKind::Float | PositionKind::Decimal { .. } => {
            let spacing = spec
                .strategy
                .between(None, None)
                .ok()
                .flatten()
                .and_then(|p| p.as_num())
                .unwrap_or(65_535.0);
            format!("{rn} * {spacing}")
        }
        PositionKind::Key { .. } => {
            // 'e' followed by rn in five base-62 digits
            let digits = crate::key::Alphabet::BASE62.digits();
            let mut parts = vec!["'e'".to_owned()];
            for k in (0..BACKFILL_KEY_DIGITS).rev() {
                let p = 62_i64.pow(k);
                let idx = match d {
                    Dialect::Mysql => format!("(FLOOR({rn} / {p}) % 62) + 1"),
                    // PostgreSQL's substr takes an integer, not the bigint row_number
                    Dialect::Postgres => format!("CAST((({rn} / {p}) % 62) + 1 AS INTEGER)"),
                    Dialect::Sqlite => format!("(({rn} / {p}) % 62) + 1"),
                };
                parts.push(format!("SUBSTR('{digits}', {idx}, 1)"));
            }
            match d {
                Dialect::Mysql => format!("CONCAT({})", parts.join(", ")),
                _ => parts.join(" || "),
            }
        }
    }
}

/// One backfill order entry: `column`, `column ASC` or `column DESC` (any case), the
/// column quoted and qualified with the ranked table's alias; anything else is quoted
/// whole, as a column name the engine will refuse.
fn order_item(d: Dialect, item: &str) -> String {
    let trimmed = item.trim();
    let (name, dir) = match trimmed.rsplit_once(char::is_whitespace) {
        Some((name, dir)) if dir.eq_ignore_ascii_case("asc") => (name.trim_end(), " ASC"),
        Some((name, dir)) if dir.eq_ignore_ascii_case("desc") => (name.trim_end(), " DESC"),
        _ => (trimmed, ""),
    };
    format!("o_s.{}{dir}", q(d, name))
}

/// One statement numbering every collection of the table in the given order.
pub fn backfill_sql(d: Dialect, spec: &Spec, order_by: &[&str]) -> String {
    let id = q(d, spec.id);
    let order = if order_by.is_empty() {
        format!("o_s.{id}")
    } else {
        order_by
            .iter()
            .map(|c| order_item(d, c))
            .collect::<Vec<_>>()
            .join(", ")
    };
    ranked_update(d, spec, &order, &backfill_value(d, spec, "o_r.o_rn"))
}

/// `UPDATE` setting the position of every row to `value`, an expression of its row
/// number `o_r.o_rn` within its collection in `order`.
fn ranked_update(d: Dialect, spec: &Spec, order: &str, value: &str) -> String {
    ranked_update_where(d, spec, order, value, "")
}

/// [`ranked_update`] of the rows `o_s` for which `filter` holds (empty: every row).
fn ranked_update_where(d: Dialect, spec: &Spec, order: &str, value: &str, filter: &str) -> String {
    let t = q(d, spec.table);
    let id = q(d, spec.id);
    let pos = q(d, spec.position);
    // an association row's id is unique within its list only: join on the list too
    let link_cols: Vec<String> = if spec.is_link() {
        spec.scope_columns().map(|(c, _)| q(d, c)).collect()
    } else {
        Vec::new()
    };
    let link_out: String = link_cols
        .iter()
        .enumerate()
        .map(|(i, c)| format!(", o_s.{c} AS o_rs{i}"))
        .collect();
    let link_on = |t: &str| -> String {
        link_cols
            .iter()
            .enumerate()
            .map(|(i, c)| format!(" AND {t}.{c} = o_r.o_rs{i}"))
            .collect()
    };
    let ranked = format!(
        "(SELECT o_s.{id} AS o_rid{link_out}, ROW_NUMBER() OVER ({}ORDER BY {order}) AS o_rn FROM {t} AS o_s{}) AS o_r",
        if spec.is_global() {
            String::new()
        } else {
            format!(
                "PARTITION BY {} ",
                spec.scope_columns()
                    .map(|(c, _)| format!("o_s.{}", q(d, c)))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
        if filter.is_empty() {
            String::new()
        } else {
            format!(" WHERE {filter}")
        }
    );
    match d {
        Dialect::Postgres => {
            let on = link_on("o_t");
            format!(
                "UPDATE {t} AS o_t SET {pos} = {value} FROM {ranked} WHERE o_t.{id} = o_r.o_rid{on}"
            )
        }
        Dialect::Mysql => {
            let on = link_on("o_t");
            format!(
                "UPDATE {t} AS o_t JOIN {ranked} ON o_t.{id} = o_r.o_rid{on} SET o_t.{pos} = {value}"
            )
        }
        Dialect::Sqlite => {
            let on = link_on(&t);
            format!("UPDATE {t} SET {pos} = {value} FROM {ranked} WHERE {t}.{id} = o_r.o_rid{on}")
        }
    }
}

/// Takes over a position column the table already has, keeping its order: an integer
/// column the app ordered by itself (0- or 1-based, with gaps, duplicates or NULLs).
/// Each collection is renumbered in the order of `order_by` (each a column, optionally
/// `ASC` or `DESC`, validated like [`Backfill::By`]; empty: the column itself, NULLs
/// last, then the id) through the temporary range, so an existing unique index on
/// `(scope, position)` stays satisfied row by row; then the column becomes `BIGINT NOT
/// NULL` with the domain CHECK, the unique constraint (deferrable on PostgreSQL) and the
/// parent's version column are added. SQLite can change neither the column's type nor
/// its constraints: there the rows are renumbered, triggers refuse a row without a
/// position, and [`crate::verify::check_schema`] still asks for the CHECK (a rebuild of
/// the table). An existing unique constraint or index under another name stays; on
/// PostgreSQL `check_schema` says when it is not deferrable.
///
/// Integer strategies only: a key column holds keys already, and needs the column
/// type, collation and constraints of [`create_table`] rather than a renumbering
/// ([`Error::InvalidRequest`](crate::Error::InvalidRequest) otherwise).
///
/// ```
/// use ordered_core::migration::adopt_ordering;
/// use ordered_core::{Dialect, Spec};
///
/// const STEPS: Spec = Spec::new("steps", "checklist_id", "checklists").with_version("version");
/// let m = adopt_ordering(Dialect::Postgres, &STEPS, &[])?;
/// assert!(m.up_sql().contains("ROW_NUMBER() OVER (PARTITION BY o_s.\"checklist_id\""));
/// assert!(m.up_sql().contains("DEFERRABLE INITIALLY IMMEDIATE"));
/// # Ok::<(), ordered_core::Error>(())
/// ```
pub fn adopt_ordering(
    d: Dialect,
    spec: &Spec,
    order_by: &[&str],
) -> Result<Migration, crate::Error> {
    // the app's own table as the generator assumes it: a nullable column that may be
    // narrow, none of the library's constraints, no version column
    let mut assumed = SCHEMA_NULLABLE | SCHEMA_NARROW | SCHEMA_NO_ROOT_UNIQUE;
    if spec.version.is_some() || spec.locks_rows() {
        assumed |= SCHEMA_NO_VERSION;
    }
    let plan = plan(d, spec, Facts(assumed), Mode::Static(order_by))?;
    let mut up = plan.before;
    up.extend(plan.atomic);
    up.extend(plan.after);
    // the column and its values stay: down removes only what this added
    let mut down = constraints_down(d, spec);
    down.extend(version_down(d, spec));
    Ok(Migration { up, down })
}

/// What [`ensure_plan`] or [`adopt_plan`] adds to a table, as the adapters'
/// `ensure_ordering` and `adopt_ordering` report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Fix {
    /// The lock table of the tables without a parent table.
    LockTable,
    /// The parent table's version column.
    VersionColumn,
    /// The position column widened to 64 bits.
    Widened,
    /// Every list renumbered, keeping its order (adoption).
    Renumbered,
    /// The position column made `NOT NULL`.
    NotNull,
    /// The domain CHECK.
    Check,
    /// SQLite: the triggers that keep the column in the domain (and required).
    DomainTriggers,
    /// MySQL/MariaDB: the index on the parent column the foreign key uses.
    ParentIndex,
    /// The unique constraint on `(scope, position)`.
    Unique,
    /// The root list's unique index (a nullable scope on MySQL/MariaDB or SQLite).
    RootUnique,
}

impl std::fmt::Display for Fix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Fix::LockTable => "the lock table",
            Fix::VersionColumn => "the parent's version column",
            Fix::Widened => "the position column widened to 64 bits",
            Fix::Renumbered => "every list renumbered in its order",
            Fix::NotNull => "NOT NULL on the position column",
            Fix::Check => "the position's domain CHECK",
            Fix::DomainTriggers => "the triggers that keep positions in the domain",
            Fix::ParentIndex => "the parent column's index",
            Fix::Unique => "the unique constraint on (scope, position)",
            Fix::RootUnique => "the root list's unique index",
        })
    }
}

/// What `ensure_ordering` or `adopt_ordering` did to a table: nothing when it already
/// had all the library needs.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Ensured {
    /// What was added, in order.
    pub added: Vec<Fix>,
    /// The adoption of a numeric column: the rows of the lists it renumbered because
    /// they held a value the strategy cannot keep (NULL, NaN, an infinity, `-0`, a
    /// negative number or one shared within the list); every other list keeps its
    /// values. 0 otherwise.
    #[serde(default)]
    pub renumbered: u64,
}

impl Ensured {
    /// Whether the table was left as it was.
    pub fn is_unchanged(&self) -> bool {
        self.added.is_empty()
    }
}

/// The statements that bring a table to what the library needs, from what the schema
/// probe ([`crate::sql::schema_probe`]) found: run by the adapters' `ensure_ordering`
/// and `adopt_ordering`. Every refusal comes before any statement runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchemaPlan {
    /// What the statements add.
    pub added: Vec<Fix>,
    /// Counts the rows that would make a statement fail (positions shared within a
    /// list, missing, or outside the domain); run first, and anything but 0 refuses
    /// the plan before any change.
    pub rows_check: Option<crate::sql::Statement>,
    /// MySQL/MariaDB: the DDL that can fail, each statement committing on its own,
    /// before any row is written.
    pub before: Vec<String>,
    /// One transaction: every statement on PostgreSQL and SQLite (their DDL is
    /// transactional), the renumbering elsewhere.
    pub atomic: Vec<String>,
    /// MySQL/MariaDB: the DDL that follows the renumbering (it cannot fail once the
    /// rows are numbered).
    pub after: Vec<String>,
    /// The adoption of a numeric column: counts the rows of the lists it renumbers
    /// because they hold a value the strategy cannot keep (run first; 0: no
    /// [`Fix::Renumbered`] is reported, the statements change nothing).
    pub renumbering: Option<crate::sql::Statement>,
}

impl SchemaPlan {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
    }
}

use crate::sql::{
    Facts, SCHEMA_DOMAIN_TRIGGERS, SCHEMA_HAS_CHECK, SCHEMA_NARROW, SCHEMA_NO_PARENT_INDEX,
    SCHEMA_NO_POSITION, SCHEMA_NO_ROOT_UNIQUE, SCHEMA_NO_VERSION, SCHEMA_NULLABLE, SCHEMA_SET_NULL,
    SCHEMA_UNIQUE_NAME_TAKEN, SCHEMA_VERSION_NOT_INTEGER,
};

#[derive(Clone, Copy)]
enum Mode<'a> {
    /// Add what is missing.
    Ensure,
    /// Renumber (in this order), then add what is missing.
    Adopt(&'a [&'a str]),
    /// A migration file's adoption: what is missing is assumed, the parent index
    /// created if missing at run time.
    Static(&'a [&'a str]),
}

/// What `ensure_ordering` runs on a table the probe answered `probe` for: exactly what
/// [`crate::verify::check_schema`] reports missing (the lock table or the version
/// column, the position widened to 64 bits, `NOT NULL`, the domain CHECK or on SQLite
/// its triggers, the parent index on MySQL/MariaDB, the unique constraint and the root
/// list's), nothing when all is there. It refuses with
/// [`Error::SchemaMismatch`](crate::Error::SchemaMismatch), before any change, what it
/// cannot add: a missing position column, a unique constraint that is not deferrable
/// (PostgreSQL) or an index of that name over other columns, a version column that is
/// not an integer, a scope foreign key that sets NULL; and, through
/// [`SchemaPlan::rows_check`], rows that would break a constraint it adds.
pub fn ensure_plan(d: Dialect, spec: &Spec, probe: i64) -> Result<SchemaPlan, crate::Error> {
    plan(d, spec, Facts(probe), Mode::Ensure)
}

/// What `adopt_ordering` runs: nothing on a table that has all the library needs (a
/// second run is a no-op); otherwise every list renumbered in the order of `order_by`
/// (empty: the column itself, NULLs last, then the id), keeping the version column
/// the parent already has, and whatever [`ensure_plan`] would add. Its refusals come
/// before any change, and on MySQL/MariaDB, whose DDL commits statement by statement,
/// every statement that can fail runs before the first row is written.
pub fn adopt_plan(
    d: Dialect,
    spec: &Spec,
    probe: i64,
    order_by: &[&str],
) -> Result<SchemaPlan, crate::Error> {
    let ensure = plan(d, spec, Facts(probe), Mode::Ensure);
    match ensure {
        Ok(p) if p.is_empty() => Ok(p),
        _ => plan(d, spec, Facts(probe), Mode::Adopt(order_by)),
    }
}

fn mismatch(spec: &Spec, problem: &'static str, fix: String) -> crate::Error {
    crate::Error::SchemaMismatch {
        table: spec.table.to_owned(),
        problem,
        fix,
    }
}

fn plan(d: Dialect, spec: &Spec, f: Facts, mode: Mode<'_>) -> Result<SchemaPlan, crate::Error> {
    let t = q(d, spec.table);
    let c = q(d, spec.position);
    let integer = matches!(spec.strategy.kind(), PositionKind::Integer);
    let order = match mode {
        Mode::Ensure => None,
        Mode::Adopt(o) | Mode::Static(o) => Some(o),
    };
    let numeric = spec.strategy.kind().is_numeric();
    if order.is_some() && !integer && !numeric {
        return Err(crate::Error::InvalidRequest(
            "adopting a column renumbers integers and keeps numbers; a key column needs the type and constraints of the generated table",
        ));
    }
    // the refusals, before anything
    if f.has(SCHEMA_NO_POSITION) {
        return Err(crate::verify::no_position(spec));
    }
    if f.has(SCHEMA_SET_NULL) {
        return Err(set_null(d, spec));
    }
    if f.has(SCHEMA_VERSION_NOT_INTEGER) {
        return Err(crate::verify::version_not_integer(spec));
    }
    if f.unique() == 1 {
        return Err(crate::verify::check_unique(d, spec, f.0)
            .err()
            .unwrap_or_else(|| {
                mismatch(
                    spec,
                    "its unique constraint is not deferrable",
                    String::new(),
                )
            }));
    }
    if f.unique() == 0 && f.has(SCHEMA_UNIQUE_NAME_TAKEN) {
        return Err(mismatch(
            spec,
            "an index or constraint already has the unique constraint's name but covers other columns",
            format!(
                "drop or rename {}, or name the library's constraint otherwise (with_unique)",
                spec.unique_name()
            ),
        ));
    }
    if f.has(SCHEMA_NULLABLE) && !integer && !numeric && d == Dialect::Mysql {
        return Err(mismatch(
            spec,
            "its key column accepts NULL",
            format!(
                "ALTER TABLE {t} MODIFY {c} with its own type and NOT NULL, after giving every row a key"
            ),
        ));
    }
    let mut p = SchemaPlan::default();
    let split = d == Dialect::Mysql;
    // MySQL: statements that can fail go before the rows; elsewhere one transaction
    let mut before: Vec<String> = Vec::new();
    let mut after: Vec<String> = Vec::new();
    let mut rows: Vec<String> = Vec::new();
    if f.has(SCHEMA_NO_VERSION) {
        if spec.locks_rows() {
            before.push(lock_table_sql(d));
            p.added.push(Fix::LockTable);
        } else if let Some(v) = spec.version {
            before.push(format!(
                "ALTER TABLE {} ADD COLUMN {} BIGINT NOT NULL DEFAULT 0",
                q(d, spec.parent_table),
                q(d, v)
            ));
            p.added.push(Fix::VersionColumn);
        }
    }
    let narrow = integer && f.has(SCHEMA_NARROW) && d != Dialect::Sqlite;
    let nullable = f.has(SCHEMA_NULLABLE);
    if narrow {
        before.push(match d {
            Dialect::Postgres => format!("ALTER TABLE {t} ALTER COLUMN {c} TYPE BIGINT"),
            _ => format!(
                "ALTER TABLE {t} MODIFY {c} BIGINT {}",
                if nullable { "NULL" } else { "NOT NULL" }
            ),
        });
        p.added.push(Fix::Widened);
    }
    let has_check = f.has(SCHEMA_HAS_CHECK) || f.has(SCHEMA_DOMAIN_TRIGGERS);
    // the CHECK admits NULL, so it goes before the renumbering (on MySQL it fails,
    // before any row is written, on a value outside the domain)
    // a numeric adoption keeps the values it can: the CHECK (which NaN and the
    // infinities fail) goes after the lists holding them are renumbered
    let check_after = numeric && order.is_some();
    if !has_check && d != Dialect::Sqlite && !check_after {
        before.push(check_up(d, spec));
        p.added.push(Fix::Check);
    }
    if d == Dialect::Mysql && !spec.locks_rows() {
        if let Mode::Static(_) = mode {
            before.extend(mysql_parent_index(spec));
        } else if f.has(SCHEMA_NO_PARENT_INDEX) && f.unique() == 0 {
            before.push(parent_index(spec));
            p.added.push(Fix::ParentIndex);
        }
    }
    if let (Some(order_by), true) = (order, numeric) {
        // numbers are kept where the strategy can keep them; a list holding one it
        // cannot is renumbered in its order, through the temporary range
        let (park, lists) = numeric_resets(d, spec);
        let order = numeric_order(d, spec, order_by);
        rows.push(ranked_update_where(
            d,
            spec,
            &order,
            &format!("-{park} + o_r.o_rn"),
            &lists,
        ));
        let final_value = backfill_value(d, spec, &format!("({c} + {park})"));
        rows.push(format!("UPDATE {t} SET {c} = {final_value} WHERE {c} < 0"));
        p.added.push(Fix::Renumbered);
        p.renumbering = Some(crate::sql::rows_reset(d, spec, &lists));
    } else if let Some(order_by) = order {
        let id = q(d, spec.id);
        let order = if order_by.is_empty() {
            format!("CASE WHEN o_s.{c} IS NULL THEN 1 ELSE 0 END, o_s.{c}, o_s.{id}")
        } else {
            order_by
                .iter()
                .map(|o| order_item(d, o))
                .collect::<Vec<_>>()
                .join(", ")
        };
        // into the temporary range (no row of the app's is there), then to the final
        // values: an existing unique index stays satisfied row by row
        rows.push(ranked_update(
            d,
            spec,
            &order,
            &format!("{PARK_POSITION} + o_r.o_rn"),
        ));
        let final_value = backfill_value(d, spec, &format!("({c} - ({PARK_POSITION}))"));
        rows.push(format!("UPDATE {t} SET {c} = {final_value}"));
        p.added.push(Fix::Renumbered);
        // what may already be out of the domain fails the CHECK added before
        if !has_check && d == Dialect::Mysql {
            p.rows_check = Some(crate::sql::rows_breaking(d, spec, false));
        }
    } else if nullable || f.unique() == 0 || !has_check || f.has(SCHEMA_NO_ROOT_UNIQUE) {
        p.rows_check = Some(crate::sql::rows_breaking(d, spec, true));
    }
    if nullable {
        match d {
            Dialect::Postgres => {
                after.push(format!("ALTER TABLE {t} ALTER COLUMN {c} SET NOT NULL"))
            }
            Dialect::Mysql => after.push(format!(
                "ALTER TABLE {t} MODIFY {c} {} NOT NULL",
                column_type(d, spec)
            )),
            // the domain triggers refuse NULL too
            Dialect::Sqlite => {}
        }
        if d != Dialect::Sqlite {
            p.added.push(Fix::NotNull);
        }
    }
    if !has_check && d != Dialect::Sqlite && check_after {
        after.push(check_up(d, spec));
        p.added.push(Fix::Check);
    }
    if d == Dialect::Sqlite && !f.has(SCHEMA_DOMAIN_TRIGGERS) && (!has_check || nullable) {
        after.extend(sqlite_domain(spec));
        p.added.push(Fix::DomainTriggers);
    }
    if f.unique() == 0 {
        after.push(unique_up(d, spec));
        p.added.push(Fix::Unique);
    }
    if f.has(SCHEMA_NO_ROOT_UNIQUE) && spec.nullable() && d != Dialect::Postgres {
        after.extend(root_unique(d, spec).0);
        p.added.push(Fix::RootUnique);
    }
    if split {
        p.before = before;
        p.atomic = rows;
        p.after = after;
    } else {
        p.atomic = before;
        p.atomic.extend(rows);
        p.atomic.extend(after);
    }
    if p.added.is_empty() {
        p.rows_check = None;
    }
    Ok(p)
}

/// The adoption of a numeric column: the base of its temporary range (`2^52` for floats,
/// the largest whole number a decimal holds) and the condition on a row `o_s` whose
/// list holds a value the strategy cannot keep: NULL, NaN, an infinity, `-0`, a number
/// below 0 or above the strategy's largest, or one another row of the list shares.
pub(crate) fn numeric_resets(d: Dialect, spec: &Spec) -> (String, String) {
    let park = match spec.strategy.kind() {
        PositionKind::Decimal { .. } => numeric_limit(spec.strategy.kind()),
        _ => "4503599627370496".to_owned(),
    };
    let max = strategy_max(spec);
    let t = q(d, spec.table);
    let c = q(d, spec.position);
    let id = q(d, spec.id);
    let same = |a: &str, b: &str| -> String {
        if spec.is_global() {
            return "1 = 1".into();
        }
        spec.scope_columns()
            .map(|(col, _)| {
                let col = q(d, col);
                if spec.nullable() {
                    format!("({a}.{col} = {b}.{col} OR ({a}.{col} IS NULL AND {b}.{col} IS NULL))")
                } else {
                    format!("{a}.{col} = {b}.{col}")
                }
            })
            .collect::<Vec<_>>()
            .join(" AND ")
    };
    let text = match d {
        Dialect::Postgres => format!("CAST(o_b.{c} AS TEXT)"),
        Dialect::Mysql => format!("CAST(o_b.{c} AS CHAR)"),
        Dialect::Sqlite => format!("printf('%!.17g', o_b.{c})"),
    };
    let lists = format!(
        "EXISTS (SELECT 1 FROM {t} AS o_b WHERE {} AND (o_b.{c} IS NULL OR NOT (o_b.{c} >= 0 AND o_b.{c} <= {max}) OR {text} = '-0' OR EXISTS (SELECT 1 FROM {t} AS o_c WHERE {} AND o_c.{c} = o_b.{c} AND o_c.{id} <> o_b.{id})))",
        same("o_b", "o_s"),
        same("o_c", "o_b"),
    );
    (park, lists)
}

/// The largest position of a numeric strategy.
fn strategy_max(spec: &Spec) -> f64 {
    match spec.strategy.kind() {
        PositionKind::Decimal { precision, scale } => {
            10_f64.powi(i32::from(precision - scale)) - 2.0
        }
        _ => 9_007_199_254_740_992.0,
    }
}

/// The order a numeric adoption renumbers a list in: the column (NULL and, on
/// PostgreSQL, NaN last), then `order_by` (each a column, optionally `ASC` or `DESC`),
/// then the id.
fn numeric_order(d: Dialect, spec: &Spec, order_by: &[&str]) -> String {
    let c = q(d, spec.position);
    let mut parts = vec![
        format!("CASE WHEN o_s.{c} IS NULL THEN 1 ELSE 0 END"),
        format!("o_s.{c}"),
    ];
    parts.extend(order_by.iter().map(|o| order_item(d, o)));
    parts.push(format!("o_s.{}", q(d, spec.id)));
    parts.join(", ")
}

/// The refusal of a scope column whose foreign key sets it to NULL (or its default).
pub(crate) fn set_null(d: Dialect, spec: &Spec) -> crate::Error {
    let (t, col) = (spec.table, spec.parent);
    let target = if spec.is_tree() {
        format!("{t} ({})", spec.id)
    } else {
        format!("{} ({})", spec.parent_table, spec.parent_id)
    };
    mismatch(
        spec,
        "a foreign key sets its scope column to NULL (or its default) when the row it references is deleted, which moves the rows into another list onto positions taken there",
        match d {
            Dialect::Sqlite => format!(
                "rebuild {t} with {col} declared REFERENCES {target} ON DELETE CASCADE (SQLite cannot alter a foreign key)"
            ),
            _ => format!(
                "replace the foreign key on {t}.{col} with FOREIGN KEY ({col}) REFERENCES {target} ON DELETE CASCADE (drop the old one in the same migration)"
            ),
        },
    )
}

/// SQLite: the names of the triggers that refuse a row without a position
/// ([`add_ordering`]).
pub(crate) fn required_trigger_names(spec: &Spec) -> Vec<String> {
    sqlite_trigger_names(spec)
        .into_iter()
        .map(|(n, _)| n)
        .collect()
}

/// SQLite: the names of the triggers that keep an adopted column in the library's
/// domain (the CHECK SQLite cannot add to an existing column).
pub(crate) fn domain_trigger_names(spec: &Spec) -> Vec<String> {
    ["insert", "update"]
        .iter()
        .map(|e| format!("{}_{}_domain_{e}", spec.table, spec.position))
        .collect()
}

/// SQLite: the triggers that refuse a position that is missing or outside the
/// library's domain, on insert and on update of the column: what the domain CHECK and
/// `NOT NULL` do elsewhere, for a column SQLite cannot add them to.
fn sqlite_domain(spec: &Spec) -> Vec<String> {
    let d = Dialect::Sqlite;
    let c = format!("NEW.{}", q(d, spec.position));
    let domain = check_expr_on(d, spec, &c, false);
    let message = format!(
        "{}.{} must hold a position the ordering library gave: insert and move rows through it",
        spec.table, spec.position
    )
    .replace('\'', "''");
    domain_trigger_names(spec)
        .into_iter()
        .zip([
            format!("INSERT ON {}", q(d, spec.table)),
            format!("UPDATE OF {} ON {}", q(d, spec.position), q(d, spec.table)),
        ])
        .map(|(name, on)| {
            format!(
                "CREATE TRIGGER {} BEFORE {on} FOR EACH ROW WHEN {c} IS NULL OR NOT ({domain}) BEGIN SELECT RAISE(ABORT, '{message}'); END",
                q(d, &name)
            )
        })
        .collect()
}

fn sqlite_trigger_names(spec: &Spec) -> [(String, &'static str); 2] {
    [
        (
            format!("{}_{}_required_insert", spec.table, spec.position),
            "INSERT",
        ),
        (
            format!("{}_{}_required_update", spec.table, spec.position),
            "UPDATE OF",
        ),
    ]
}

/// SQLite: the triggers that make a nullable position column required, with a message
/// that says what to do.
fn sqlite_required(spec: &Spec) -> Vec<String> {
    let d = Dialect::Sqlite;
    let message = format!(
        "{}.{} is required: insert rows through the ordering library, or give each existing row a position (a backfill)",
        spec.table, spec.position
    )
    .replace('\'', "''");
    sqlite_trigger_names(spec)
        .into_iter()
        .map(|(name, event)| {
            let on = if event == "INSERT" {
                format!("INSERT ON {}", q(d, spec.table))
            } else {
                format!("UPDATE OF {} ON {}", q(d, spec.position), q(d, spec.table))
            };
            format!(
                "CREATE TRIGGER {} BEFORE {on} FOR EACH ROW WHEN NEW.{} IS NULL BEGIN SELECT RAISE(ABORT, '{message}'); END",
                q(d, &name),
                q(d, spec.position)
            )
        })
        .collect()
}

/// Adds ordering to an existing table: the position column with its domain CHECK, the
/// `UNIQUE (parent, position)` constraint (deferrable on PostgreSQL) and the parent's
/// version column.
///
/// With [`Backfill::By`] it follows expand and contract: add the column nullable,
/// number each collection in the given order, then make it NOT NULL and unique. SQLite
/// adds a NOT NULL column only with a default, which an insert that bypasses the library
/// would silently take: there the column is nullable, and two triggers refuse a row
/// without a position with a message that names the column (as does the migration on a
/// table with rows but no backfill). Deploy the library's writers before
/// running it, so that new rows get positions too.
pub fn add_ordering(d: Dialect, spec: &Spec, backfill: Backfill<'_>) -> Migration {
    let t = q(d, spec.table);
    let c = q(d, spec.position);
    let ty = column_type(d, spec);
    let mut up: Vec<String> = version_up(d, spec).into_iter().collect();
    match (d, backfill) {
        (Dialect::Sqlite, b) => {
            // SQLite adds a NOT NULL column only with a default, which an insert that
            // bypasses the library would silently take; the column is nullable instead,
            // and triggers refuse a row without a position, by name
            up.push(format!(
                "ALTER TABLE {t} ADD COLUMN {c} {ty} CHECK ({})",
                check_expr(d, spec, true)
            ));
            if let Backfill::By(order) = b {
                up.push(backfill_sql(d, spec, order));
            }
            up.extend(sqlite_required(spec));
            // every existing row has a position now, or this fails with the triggers'
            // message (rows but no backfill)
            up.push(format!("UPDATE {t} SET {c} = {c} WHERE {c} IS NULL"));
        }
        (_, Backfill::None) => {
            up.push(format!("ALTER TABLE {t} ADD COLUMN {c} {ty} NOT NULL"));
            up.push(check_up(d, spec));
        }
        (_, Backfill::By(order)) => {
            up.push(format!("ALTER TABLE {t} ADD COLUMN {c} {ty} NULL"));
            up.push(backfill_sql(d, spec, order));
            up.push(match d {
                Dialect::Mysql => format!("ALTER TABLE {t} MODIFY {c} {ty} NOT NULL"),
                _ => format!("ALTER TABLE {t} ALTER COLUMN {c} SET NOT NULL"),
            });
            up.push(check_up(d, spec));
        }
    }
    let mut down = constraints(d, spec, &mut up);
    down.push(format!("ALTER TABLE {t} DROP COLUMN {c}"));
    down.extend(version_down(d, spec));
    Migration { up, down }
}

/// The first step of ordering a table whose rows get their positions from a program
/// rather than from one statement (a linked list's conversion, `convert_linked`): the
/// parent's version column (or the lock table) and the position column, nullable, with
/// the domain CHECK (which admits NULL); no table rewrite where the engine allows it.
/// Then every row gets a position, and `ensure_ordering` adds `NOT NULL` and the unique
/// constraint (it refuses, changing nothing, while a row has none). The down drops
/// the column and the version column.
///
/// ```
/// use ordered_core::migration::add_position_column;
/// use ordered_core::{Dialect, Spec};
///
/// const STEPS: Spec = Spec::new("steps", "checklist_id", "checklists").with_version("version");
/// let m = add_position_column(Dialect::Postgres, &STEPS);
/// assert!(m.up_sql().contains("ADD COLUMN \"position\" BIGINT NULL"));
/// assert!(m.down_sql().contains("DROP COLUMN \"position\""));
/// ```
pub fn add_position_column(d: Dialect, spec: &Spec) -> Migration {
    let t = q(d, spec.table);
    let c = q(d, spec.position);
    let ty = column_type(d, spec);
    let mut up: Vec<String> = version_up(d, spec).into_iter().collect();
    if d == Dialect::Sqlite {
        // SQLite adds a CHECK only with the column
        up.push(format!(
            "ALTER TABLE {t} ADD COLUMN {c} {ty} NULL CHECK ({})",
            check_expr(d, spec, true)
        ));
    } else {
        up.push(format!("ALTER TABLE {t} ADD COLUMN {c} {ty} NULL"));
        up.push(check_up(d, spec));
    }
    let mut down = Vec::new();
    if d != Dialect::Sqlite {
        down.push(format!(
            "ALTER TABLE {t} DROP CONSTRAINT {}",
            q(d, &domain_name(spec))
        ));
    }
    down.push(format!("ALTER TABLE {t} DROP COLUMN {c}"));
    down.extend(version_down(d, spec));
    Migration { up, down }
}

/// The column type of a generated 64-bit primary key on `d` (the tables this module
/// creates use it for their `id`).
pub fn serial_primary_key(d: Dialect) -> &'static str {
    match d {
        Dialect::Postgres => "BIGSERIAL PRIMARY KEY",
        Dialect::Mysql => "BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY",
        Dialect::Sqlite => "INTEGER PRIMARY KEY AUTOINCREMENT",
    }
}

/// The column type of a key of type `ty` in the tables [`create_table`] and
/// [`create_parent_table`] make (integer primary keys auto-increment; the others hold
/// what the application chooses):
///
/// | | PostgreSQL | MySQL / MariaDB | SQLite |
/// |---|---|---|---|
/// | `Int` | `BIGINT` | `BIGINT` | `INTEGER` |
/// | `Uuid` | `UUID` | `BINARY(16)` | `BLOB` |
/// | `UuidText` | `CHAR(36)` | `CHAR(36)` | `TEXT` |
/// | `Text` | `VARCHAR(64)` | `VARCHAR(64)` with the binary collation | `TEXT` |
///
/// MySQL compares text case-insensitively under its default collations, so two string
/// keys that differ in case would be one key: the generated column compares bytes.
pub fn key_column_type(d: Dialect, ty: KeyType) -> &'static str {
    match (ty, d) {
        (KeyType::Int, Dialect::Sqlite) => "INTEGER",
        (KeyType::Int, _) => "BIGINT",
        (KeyType::Uuid, Dialect::Postgres) => "UUID",
        (KeyType::Uuid, Dialect::Mysql) => "BINARY(16)",
        (KeyType::Uuid, Dialect::Sqlite) => "BLOB",
        (KeyType::UuidText, Dialect::Sqlite) | (KeyType::Text, Dialect::Sqlite) => "TEXT",
        (KeyType::UuidText, _) => "CHAR(36)",
        (KeyType::Text, Dialect::Postgres) => "VARCHAR(64)",
        (KeyType::Text, Dialect::Mysql) => "VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
    }
}

/// [`key_column_type`] of a primary key: integers auto-increment, the others are
/// `NOT NULL PRIMARY KEY`, their values chosen by the application.
fn primary_key(d: Dialect, ty: KeyType) -> String {
    match ty {
        KeyType::Int => serial_primary_key(d).to_owned(),
        _ => format!("{} NOT NULL PRIMARY KEY", key_column_type(d, ty)),
    }
}

/// Creates a new ordered table: `id` primary key, the parent column referencing the
/// parent table (`ON DELETE CASCADE`), the further scope columns of
/// [`Spec::split_by`], the position column with its CHECK and unique constraint on
/// every scope column and the position, and `columns` (name, SQL type) of your own. The
/// parent table (with its version column, if any) must exist: see
/// [`create_parent_table`]. An association table ([`Spec::link`]) is keyed by its
/// scope columns and `id` instead (`PRIMARY KEY (playlist_id, track_id)`); a tree
/// ([`Spec::tree`]) has a nullable parent column referencing its own key.
pub fn create_table(d: Dialect, spec: &Spec, columns: &[(&str, &str)]) -> Migration {
    let t = q(d, spec.table);
    let id_ty = primary_key(d, spec.id_type);
    let parent_ty = key_column_type(d, spec.parent_type);
    let mut cols = if spec.is_link() {
        // an association row: keyed by its list and its own key (a constraint below)
        vec![format!(
            "{} {} NOT NULL",
            q(d, spec.id),
            key_column_type(d, spec.id_type)
        )]
    } else {
        vec![format!("{} {id_ty}", q(d, spec.id))]
    };
    if spec.is_tree() {
        // the parent is a row of this table; NULL: the root list. Deleting a row
        // deletes its subtree
        let fk = if d == Dialect::Mysql {
            String::new()
        } else {
            format!(" REFERENCES {t} ({}) ON DELETE CASCADE", q(d, spec.id))
        };
        cols.push(format!("{} {parent_ty} NULL{fk}", q(d, spec.parent)));
    } else if spec.locks_rows() {
        // no parent table: the scope column alone (none for a global list)
        if !spec.is_global() {
            let null = if spec.nullable() { "NULL" } else { "NOT NULL" };
            cols.push(format!("{} {parent_ty} {null}", q(d, spec.parent)));
        }
    } else if d == Dialect::Mysql {
        // the foreign key is a table constraint below: MySQL ignores an inline
        // REFERENCES, MariaDB (10.5 and later) honours it, and both would make two
        cols.push(format!("{} {parent_ty} NOT NULL", q(d, spec.parent)));
    } else {
        cols.push(format!(
            "{} {parent_ty} NOT NULL REFERENCES {} ({}) ON DELETE CASCADE",
            q(d, spec.parent),
            q(d, spec.parent_table),
            q(d, spec.parent_id)
        ));
    }
    for c in spec.split_by {
        cols.push(format!(
            "{} {} NOT NULL",
            q(d, c.name),
            key_column_type(d, c.ty)
        ));
    }
    for (name, ty) in columns {
        cols.push(format!("{} {ty}", q(d, name)));
    }
    cols.push(format!(
        "{} {} NOT NULL",
        q(d, spec.position),
        column_type(d, spec)
    ));
    if spec.is_link() {
        let key: Vec<String> = spec
            .scope_columns()
            .map(|(c, _)| q(d, c))
            .chain(std::iter::once(q(d, spec.id)))
            .collect();
        cols.push(format!("PRIMARY KEY ({})", key.join(", ")));
    }
    // a table constraint: MariaDB refuses a named CHECK inside a column definition
    cols.push(format!(
        "CONSTRAINT {} CHECK ({})",
        q(d, &domain_name(spec)),
        check_expr(d, spec, false)
    ));
    if d == Dialect::Postgres {
        cols.push(format!(
            "CONSTRAINT {} {} ({}) DEFERRABLE INITIALLY IMMEDIATE",
            q(d, &spec.unique_name()),
            unique_kw(spec),
            unique_cols(d, spec)
        ));
    }
    if d == Dialect::Mysql {
        // the unique key inside CREATE TABLE, so the table is one DDL statement: on a
        // Galera cluster a separate CREATE UNIQUE INDEX after a foreign key is a second
        // total-order DDL that parallel appliers can deadlock against an INSERT into the
        // parent (MDEV-25039); the explicit parent index keeps InnoDB from making the
        // unique index back the foreign key (it could then never be dropped, 1553)
        cols.push(format!(
            "UNIQUE KEY {} ({})",
            q(d, &spec.unique_name()),
            unique_cols(d, spec)
        ));
        if spec.nullable() {
            cols.push(root_column_def(spec));
            cols.push(format!(
                "UNIQUE KEY {} ({}, {})",
                q(d, &root_unique_name(spec)),
                q(d, &root_column(spec)),
                q(d, spec.position)
            ));
        }
        if spec.is_tree() {
            cols.push(format!(
                "FOREIGN KEY ({}) REFERENCES {t} ({}) ON DELETE CASCADE",
                q(d, spec.parent),
                q(d, spec.id)
            ));
        }
        if !spec.locks_rows() {
            cols.push(format!(
                "KEY {} ({})",
                q(d, &format!("{}_{}_idx", spec.table, spec.parent)),
                q(d, spec.parent)
            ));
            // the foreign key, once (no inline REFERENCES on this engine, above)
            cols.push(format!(
                "FOREIGN KEY ({}) REFERENCES {} ({}) ON DELETE CASCADE",
                q(d, spec.parent),
                q(d, spec.parent_table),
                q(d, spec.parent_id)
            ));
        }
    }
    let engine = if d == Dialect::Mysql {
        " ENGINE=InnoDB"
    } else {
        ""
    };
    let mut up = vec![format!(
        "CREATE TABLE {t} (\n  {}\n){engine}",
        cols.join(",\n  ")
    )];
    if d == Dialect::Sqlite {
        up.push(unique_up(d, spec));
        up.extend(root_unique(d, spec).0);
    }
    Migration {
        up,
        down: vec![format!("DROP TABLE {t}")],
    }
}

/// Creates a parent table `parent_table (parent_id, <columns>, version)` for examples
/// and tests; real applications already have theirs. For a table without a parent table
/// ([`Spec::without_parent`], [`Spec::global`]): the lock table ([`create_lock_table`]).
pub fn create_parent_table(d: Dialect, spec: &Spec, columns: &[(&str, &str)]) -> Migration {
    if spec.locks_rows() {
        // no parent table: the lock table stands in for it
        return create_lock_table(d);
    }
    let id_ty = primary_key(d, spec.parent_type);
    let mut cols = vec![format!("{} {id_ty}", q(d, spec.parent_id))];
    for (name, ty) in columns {
        cols.push(format!("{} {ty}", q(d, name)));
    }
    if let Some(v) = spec.version {
        cols.push(format!("{} BIGINT NOT NULL DEFAULT 0", q(d, v)));
    }
    let engine = if d == Dialect::Mysql {
        " ENGINE=InnoDB"
    } else {
        ""
    };
    Migration {
        up: vec![format!(
            "CREATE TABLE {} (\n  {}\n){engine}",
            q(d, spec.parent_table),
            cols.join(",\n  ")
        )],
        down: vec![format!("DROP TABLE {}", q(d, spec.parent_table))],
    }
}
