//! Generated migrations in Diesel's layout (`migrations/<timestamp>_<name>/{up.sql,down.sql}`).
//!
//! ```
//! # include!("../doctest_setup.rs");
//! use ordered_diesel::migrations::{self, Backfill};
//! use ordered_diesel::Dialect;
//! # fn main() -> std::io::Result<()> {
//! let dir = std::env::temp_dir().join("ordered-doc-migrations");
//! let m = migrations::add_ordering(Dialect::Postgres, &Track::SPEC, Backfill::By(&["id"]));
//! let folder = migrations::write(&dir, "add_track_position", &m)?;
//! assert!(std::fs::read_to_string(folder.join("up.sql"))?.contains("DEFERRABLE INITIALLY IMMEDIATE"));
//! # std::fs::remove_dir_all(dir)?;
//! # Ok(()) }
//! ```

use std::io;
use std::path::{Path, PathBuf};

pub use ordered_core::migration::{
    Backfill, Migration, add_ordering, add_position_column, adopt_ordering, backfill_sql,
    check_constraint, create_lock_table, create_parent_table, create_requests_table, create_table,
    serial_primary_key,
};

/// Writes `m` as `<dir>/<YYYY-MM-DD-HHMMSS>_<name>/{up.sql,down.sql}` (the layout of
/// `diesel migration generate`) and returns the folder. Run it with `diesel migration
/// run`, then `diesel print-schema` to pick up the new column.
pub fn write(dir: &Path, name: &str, m: &Migration) -> io::Result<PathBuf> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a migration name is letters, digits and underscores",
        ));
    }
    let stamp = chrono::Utc::now().format("%Y-%m-%d-%H%M%S");
    let folder = dir.join(format!("{stamp}_{name}"));
    std::fs::create_dir_all(&folder)?;
    std::fs::write(folder.join("up.sql"), m.up_sql())?;
    std::fs::write(folder.join("down.sql"), m.down_sql())?;
    Ok(folder)
}
