//! Writes a Diesel migration folder that adds ordering to a table.
//!
//! ```sh
//! cargo run -p ordered-diesel --features cli --bin ordered-diesel-migration -- \
//!     --engine postgres --table tracks --scope playlist_id --parent playlists \
//!     --version-column version --backfill created_at,id --dir migrations
//! ```
//!
//! `--adopt` takes over a position column the table already has (the app's own integer
//! order), keeping its order (or the `--backfill` order). `--scope board_id,status` orders
//! per several columns (the first names the parent row). Without `--parent` the
//! collections are locked and versioned in the lock table (`ordered_locks`, created if
//! missing); without `--scope` either, the table is one global list. `--nullable-scope`:
//! NULL in the scope column is the root list (locked in the lock table, so no
//! `--parent`); `--parent` naming the table itself with it makes a tree.
//! `--request-records` also creates the table of request records (`ordered_requests`,
//! if missing), which writes made with a request key need; its down keeps it (other
//! tables may use it). `--strategy numeric` (a `DOUBLE PRECISION` position) or
//! `--strategy decimal --precision P --scale S` (`NUMERIC(P, S)`) for numeric positions.
//!
//! A table kept as a linked list (`prev_id` or `next_id`) is converted in three steps:
//! `--position-column-only` writes the expand migration (the nullable position column
//! and the parent's version column); then, with that migration run,
//! `--convert-linked prev_id --database-url URL` walks each list under its lock and
//! writes positions in chain order, reporting the lists that are not one chain (and
//! exiting with status 2 if any, having converted the others); `--verify-linked prev_id`
//! only reports; then `ensure_ordering` (or an `--adopt` migration) adds `NOT NULL` and
//! the unique constraint. `--links next` for a `next_id` column.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use ordered_diesel::linked::Link;
use ordered_diesel::migrations::{self, Backfill};
use ordered_diesel::{
    Dense, Dialect, Fractional, Gapped, Numeric, PositionStrategy, RebalancePolicy, ScopeColumn,
    Spec,
};

#[derive(Clone, Copy, ValueEnum)]
enum Engine {
    Postgres,
    Mysql,
    Sqlite,
}

#[derive(Clone, Copy, ValueEnum)]
enum Strategy {
    Gapped,
    Dense,
    Fractional,
    /// `DOUBLE PRECISION` positions 65,535 apart.
    Numeric,
    /// `NUMERIC(--precision, --scale)` positions.
    Decimal,
}

#[derive(Clone, Copy, ValueEnum)]
enum LinkArg {
    /// The column names the row before (the head's is NULL).
    Prev,
    /// The column names the row after (the tail's is NULL).
    Next,
}

#[derive(Clone, Copy, ValueEnum)]
enum KeyArg {
    Int,
    Uuid,
    UuidText,
    Text,
}

/// Writes `<dir>/<timestamp>_<name>/{up.sql,down.sql}` adding an ordered position column,
/// its CHECK and unique constraint, and the parent's version column.
#[derive(Parser)]
#[command(name = "ordered-diesel-migration", version)]
struct Args {
    /// The engine the SQL is for.
    #[arg(long, value_enum)]
    engine: Engine,
    /// The items table.
    #[arg(long)]
    table: String,
    /// The scope columns, comma-separated: the one holding the parent key first, then
    /// any that split a parent's rows into several lists. None: one global list.
    #[arg(long, value_delimiter = ',')]
    scope: Vec<String>,
    /// The parent table. None: the collections are locked in the lock table.
    #[arg(long)]
    parent: Option<String>,
    /// The parent table's key column.
    #[arg(long, default_value = "id")]
    parent_key: String,
    /// The items' key column.
    #[arg(long, default_value = "id")]
    id: String,
    /// The position column to add.
    #[arg(long, default_value = "position")]
    position: String,
    /// A version column to add to the parent table.
    #[arg(long = "version-column")]
    version_column: Option<String>,
    /// How positions are chosen.
    #[arg(long, value_enum, default_value = "gapped")]
    strategy: Strategy,
    /// Number existing rows per collection in this order (comma-separated columns).
    #[arg(long, value_delimiter = ',')]
    backfill: Vec<String>,
    /// Take over an existing integer position column instead of adding one, keeping its
    /// order (ties by id, NULLs last), or the `--backfill` order when given.
    #[arg(long)]
    adopt: bool,
    /// NULL in the scope column is the root list (no `--parent`, or `--parent` naming
    /// the table itself: a tree).
    #[arg(long = "nullable-scope")]
    nullable_scope: bool,
    /// An association table: its key is the scope column(s) and `--id` together (no id
    /// column of its own).
    #[arg(long)]
    link: bool,
    /// Also create the table of request records (`ordered_requests`) if missing: writes
    /// with a request key (`request_key`) record their outcome there.
    #[arg(long = "request-records")]
    request_records: bool,
    /// `--strategy decimal`: the column's precision (at most 15).
    #[arg(long)]
    precision: Option<u8>,
    /// `--strategy decimal`: the column's scale.
    #[arg(long)]
    scale: Option<u8>,
    /// Write only the expand step: the nullable position column and the parent's
    /// version column, for a table whose rows get their positions from a program
    /// (`--convert-linked`).
    #[arg(long = "position-column-only")]
    position_column_only: bool,
    /// Convert the table's linked list kept in this column into positions, on the
    /// database at `--database-url` (no migration folder is written).
    #[arg(long = "convert-linked", value_name = "COLUMN")]
    convert_linked: Option<String>,
    /// Report the lists of the linked list kept in this column that are not one chain,
    /// on the database at `--database-url`, writing nothing.
    #[arg(long = "verify-linked", value_name = "COLUMN")]
    verify_linked: Option<String>,
    /// Which neighbour the linked list's column names.
    #[arg(long, value_enum, default_value = "prev")]
    links: LinkArg,
    /// The key type of the items and their lists (`--convert-linked`).
    #[arg(long = "key-type", value_enum, default_value = "int")]
    key_type: KeyArg,
    /// The database `--convert-linked` and `--verify-linked` run on.
    #[arg(long = "database-url")]
    database_url: Option<String>,
    /// Where the migrations live.
    #[arg(long, default_value = "migrations")]
    dir: PathBuf,
    /// The migration's name.
    #[arg(long)]
    name: Option<String>,
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn main() -> ExitCode {
    let a = Args::parse();
    static GAPPED: Gapped = Gapped::DEFAULT;
    static FRACTIONAL: Fractional = Fractional::DEFAULT;
    static FLOAT: Numeric = Numeric::FLOAT;
    let strategy: &'static dyn PositionStrategy = match a.strategy {
        Strategy::Gapped => &GAPPED,
        Strategy::Dense => &Dense,
        Strategy::Fractional => &FRACTIONAL,
        Strategy::Numeric => &FLOAT,
        Strategy::Decimal => match (a.precision, a.scale) {
            (Some(p), Some(s)) if (2..=15).contains(&p) && s < p => {
                Box::leak(Box::new(Numeric::decimal(p, s)))
            }
            _ => {
                eprintln!(
                    "ordered-diesel-migration: --strategy decimal needs --precision (2 to 15) and --scale (below it), as the column's NUMERIC(precision, scale)"
                );
                return ExitCode::FAILURE;
            }
        },
    };
    let name = a
        .name
        .clone()
        .unwrap_or_else(|| format!("add_ordering_to_{}", a.table));
    if a.scope.is_empty() && a.parent.is_some() {
        eprintln!(
            "ordered-diesel-migration: --parent needs --scope, the column that names the parent row (leave both out for one global list)"
        );
        return ExitCode::FAILURE;
    }
    if a.parent.is_none() && a.version_column.is_some() {
        eprintln!(
            "ordered-diesel-migration: --version-column names a column of the parent table; without --parent the versions live in the lock table"
        );
        return ExitCode::FAILURE;
    }
    let tree = a.nullable_scope && a.parent.as_deref() == Some(a.table.as_str());
    if a.nullable_scope && a.parent.is_some() && !tree {
        eprintln!(
            "ordered-diesel-migration: a nullable scope's root list has no parent row: leave out --parent (the lists are locked in the lock table), or name the table itself for a tree"
        );
        return ExitCode::FAILURE;
    }
    let mut scope = a.scope.into_iter().map(leak);
    let first = scope.next().unwrap_or("");
    // the migration's statements name key columns but never bind a key
    let split: Vec<ScopeColumn> = scope
        .map(|c| ScopeColumn::new(c, ordered_diesel::KeyType::Int))
        .collect();
    let base = match a.parent {
        _ if tree => Spec::tree("", first),
        Some(p) => Spec::new("", first, leak(p)).with_parent_id(leak(a.parent_key)),
        None if a.nullable_scope => Spec::without_parent("", first).with_nullable_scope(),
        None => Spec::without_parent("", first),
    };
    if a.link && (base.locks_rows() || a.nullable_scope) {
        eprintln!(
            "ordered-diesel-migration: an association table (--link) is locked on its parent's row: give --parent (another table) and no --nullable-scope"
        );
        return ExitCode::FAILURE;
    }
    let base = base.with_link(a.link);
    let version = if base.locks_rows() {
        base.version
    } else {
        a.version_column.map(leak)
    };
    let spec = base
        .with_id(leak(a.id))
        .with_position(leak(a.position))
        .with_split_by(Box::leak(split.into_boxed_slice()))
        .with_strategy(strategy)
        .with_policy(RebalancePolicy::Window)
        .with_table(leak(a.table));
    let spec = match version {
        Some(v) => spec.with_version(v),
        None => spec.without_version(),
    };
    let key = match a.key_type {
        KeyArg::Int => ordered_diesel::KeyType::Int,
        KeyArg::Uuid => ordered_diesel::KeyType::Uuid,
        KeyArg::UuidText => ordered_diesel::KeyType::UuidText,
        KeyArg::Text => ordered_diesel::KeyType::Text,
    };
    let spec = spec.with_id_type(key).with_parent_type(key);
    let dialect = match a.engine {
        Engine::Postgres => Dialect::Postgres,
        Engine::Mysql => Dialect::Mysql,
        Engine::Sqlite => Dialect::Sqlite,
    };
    let order: Vec<&str> = a.backfill.iter().map(String::as_str).collect();
    let backfill = if order.is_empty() {
        Backfill::None
    } else {
        Backfill::By(&order)
    };
    let link = match a.links {
        LinkArg::Prev => Link::Prev,
        LinkArg::Next => Link::Next,
    };
    if let Some(column) = a.convert_linked.as_ref().or(a.verify_linked.as_ref()) {
        let Some(url) = a.database_url.as_deref() else {
            eprintln!(
                "ordered-diesel-migration: --convert-linked and --verify-linked run on a database: give --database-url"
            );
            return ExitCode::FAILURE;
        };
        let write = a.convert_linked.is_some();
        return match run::linked(dialect, url, spec, column, link, write) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("ordered-diesel-migration: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let m = if a.position_column_only {
        migrations::add_position_column(dialect, &spec)
    } else if a.adopt {
        match migrations::adopt_ordering(dialect, &spec, &order) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("ordered-diesel-migration: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        migrations::add_ordering(dialect, &spec, backfill)
    };
    let mut m = m;
    if a.request_records {
        m.up.extend(migrations::create_requests_table(dialect).up);
    }
    match migrations::write(&a.dir, &name, &m) {
        Ok(folder) => {
            println!("{}", folder.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ordered-diesel-migration: cannot write the migration: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `--convert-linked` and `--verify-linked`: on a connection of the engine's, with the
/// report printed one list a line.
mod run {
    use std::process::ExitCode;

    use ordered_diesel::linked::{Broken, Link};
    use ordered_diesel::{Dialect, Spec};

    fn report(broken: &[Broken]) {
        for b in broken {
            println!("refused: {b}");
        }
    }

    #[allow(unused_variables)]
    pub(super) fn linked(
        dialect: Dialect,
        url: &str,
        spec: Spec,
        column: &str,
        link: Link,
        write: bool,
    ) -> Result<ExitCode, String> {
        macro_rules! on {
            ($conn:ty) => {{
                use diesel::Connection;
                let mut conn = <$conn>::establish(url).map_err(|e| e.to_string())?;
                let table = ordered_diesel::OrderedTable::new(spec);
                if write {
                    let done = table
                        .convert_linked(&mut conn, column, link)
                        .map_err(|e| e.to_string())?;
                    println!(
                        "converted {} lists ({} rows); {} refused",
                        done.lists,
                        done.rows,
                        done.broken.len()
                    );
                    report(&done.broken);
                    Ok(if done.broken.is_empty() {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::from(2)
                    })
                } else {
                    let survey = table
                        .verify_linked(&mut conn, column, link)
                        .map_err(|e| e.to_string())?;
                    println!(
                        "{} lists ({} rows); {} not one chain",
                        survey.lists.len(),
                        survey.rows,
                        survey.broken.len()
                    );
                    report(&survey.broken);
                    Ok(if survey.broken.is_empty() {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::from(2)
                    })
                }
            }};
        }
        match dialect {
            #[cfg(feature = "postgres")]
            Dialect::Postgres => on!(diesel::PgConnection),
            #[cfg(feature = "mysql")]
            Dialect::Mysql => on!(diesel::MysqlConnection),
            #[cfg(feature = "sqlite")]
            Dialect::Sqlite => on!(diesel::SqliteConnection),
            #[allow(unreachable_patterns)]
            other => Err(format!(
                "this build has no {other:?} connection: build with the `{}` feature",
                match other {
                    Dialect::Postgres => "postgres",
                    Dialect::Mysql => "mysql",
                    Dialect::Sqlite => "sqlite",
                }
            )),
        }
    }
}
