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
//! tables may use it).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use ordered_diesel::migrations::{self, Backfill};
use ordered_diesel::{
    Dense, Dialect, Fractional, Gapped, PositionStrategy, RebalancePolicy, ScopeColumn, Spec,
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
    let strategy: &'static dyn PositionStrategy = match a.strategy {
        Strategy::Gapped => &GAPPED,
        Strategy::Dense => &Dense,
        Strategy::Fractional => &FRACTIONAL,
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
    let m = if a.adopt {
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
