//! Checking a collection read from the database.

use crate::Id;
use crate::error::Error;
use crate::plan::Row;
use crate::position::Position;
use crate::spec::Spec;

/// The answer to [`crate::sql::schema_probe`]: `Ok` when the table has a unique
/// constraint on `(parent, position)` the protocol can relabel through (deferrable on
/// PostgreSQL) and a CHECK constraint on the position column, else
/// [`Error::SchemaMismatch`] saying what to change. Run it at startup or in a migration
/// test, beside [`check_key_order`], when adopting an existing table.
///
/// ```
/// use ordered_core::{Dialect, Spec, verify::check_schema};
///
/// const CARDS: Spec = Spec::new("cards", "column_id", "columns");
/// assert!(check_schema(Dialect::Postgres, &CARDS, 2 + 4).is_ok());
/// let e = check_schema(Dialect::Postgres, &CARDS, 1 + 4).unwrap_err();
/// assert!(e.to_string().contains("DEFERRABLE INITIALLY IMMEDIATE"), "{e}");
/// let e = check_schema(Dialect::Postgres, &CARDS, 2).unwrap_err();
/// assert!(e.to_string().contains("CHECK"), "{e}");
/// ```
pub fn check_schema(d: crate::Dialect, spec: &Spec, probe: i64) -> Result<(), Error> {
    use crate::sql::{
        Facts, SCHEMA_DOMAIN_TRIGGERS, SCHEMA_HAS_CHECK, SCHEMA_NARROW, SCHEMA_NO_POSITION,
        SCHEMA_NO_ROOT_UNIQUE, SCHEMA_NO_VERSION, SCHEMA_NULLABLE, SCHEMA_SET_NULL,
        SCHEMA_VERSION_NOT_INTEGER,
    };
    let f = Facts(probe);
    let t = spec.table;
    let mismatch = |problem: &'static str, fix: String| Error::SchemaMismatch {
        table: t.to_owned(),
        problem,
        fix,
    };
    if f.has(SCHEMA_NO_POSITION) {
        return Err(no_position(spec));
    }
    check_unique(d, spec, probe)?;
    if f.has(SCHEMA_SET_NULL) {
        return Err(crate::migration::set_null(d, spec));
    }
    if !f.has(SCHEMA_HAS_CHECK) && !f.has(SCHEMA_DOMAIN_TRIGGERS) {
        let domain = crate::migration::check_constraint(d, spec);
        return Err(mismatch(
            "no CHECK constraint keeps its position column in the library's domain, so a row written around the library can hold a position it never gives (out of range, empty, or on SQLite of another type) and break the next relabel",
            match d {
                crate::Dialect::Sqlite => format!(
                    "SQLite cannot add a CHECK to an existing column: ensure_ordering adds two triggers that refuse what the CHECK ({domain}) would"
                ),
                _ => format!(
                    "ensure_ordering adds it: ALTER TABLE {t} ADD CONSTRAINT {t}_{}_domain CHECK ({domain})",
                    spec.position
                ),
            },
        ));
    }
    if f.has(SCHEMA_NULLABLE) {
        return Err(mismatch(
            "its position column accepts NULL, and a row without a position is in no place of its list",
            match d {
                crate::Dialect::Sqlite => {
                    "ensure_ordering adds two triggers that refuse a row without a position"
                        .to_owned()
                }
                _ => format!("ensure_ordering makes {t}.{} NOT NULL", spec.position),
            },
        ));
    }
    if f.has(SCHEMA_NARROW) {
        return Err(mismatch(
            "its position column is a 32-bit integer: gapped positions step by 1024, so one list overflows after about two million appends",
            format!(
                "ensure_ordering widens {t}.{} to BIGINT (a 64-bit i64 in the model)",
                spec.position
            ),
        ));
    }
    if f.has(SCHEMA_NO_VERSION) {
        return Err(mismatch(
            if spec.locks_rows() {
                "the lock table its lists are locked and versioned in is missing"
            } else {
                "the parent table has no version column of that name"
            },
            "ensure_ordering adds it".to_owned(),
        ));
    }
    if f.has(SCHEMA_VERSION_NOT_INTEGER) {
        return Err(version_not_integer(spec));
    }
    if f.has(SCHEMA_NO_ROOT_UNIQUE) && spec.nullable() && d != crate::Dialect::Postgres {
        return Err(mismatch(
            "no unique index covers the root list's positions (the unique index treats each NULL scope as distinct)",
            "ensure_ordering adds it".to_owned(),
        ));
    }
    Ok(())
}

/// The problem [`check_schema`] reports for a table without its position column (what
/// `add_ordering` run at run time expects to find).
pub const NO_POSITION: &str = "it has no position column (or the table is missing)";

/// A table without its position column: what [`check_schema`] reports and
/// `ensure_ordering` refuses.
pub(crate) fn no_position(spec: &Spec) -> Error {
    Error::SchemaMismatch {
        table: spec.table.to_owned(),
        problem: NO_POSITION,
        fix: format!(
            "add one with add_ordering, or name the column the application orders {} by (with_position) and adopt it with adopt_ordering",
            spec.table
        ),
    }
}

/// A parent's version column that is not an integer: what [`check_schema`] reports and
/// `ensure_ordering` refuses.
pub(crate) fn version_not_integer(spec: &Spec) -> Error {
    Error::SchemaMismatch {
        table: spec.table.to_owned(),
        problem: "the parent's version column is not an integer",
        fix: format!(
            "name another column with with_version, or change {}.{} to BIGINT",
            spec.parent_table,
            spec.version.unwrap_or("version")
        ),
    }
}

/// The unique-constraint part of [`check_schema`] (what a write refused by a duplicate
/// position is explained by).
pub fn check_unique(d: crate::Dialect, spec: &Spec, probe: i64) -> Result<(), Error> {
    let name = spec.unique_name();
    let cols: Vec<&str> = spec
        .scope_columns()
        .map(|(c, _)| c)
        .chain([spec.position])
        .collect();
    let cols = format!("({})", cols.join(", "));
    match probe & 3 {
        2.. => Ok(()),
        1 => Err(Error::SchemaMismatch {
            table: spec.table.to_owned(),
            problem: "its unique constraint on (scope, position) is not deferrable, and PostgreSQL then refuses the one-statement relabel the library runs when a gap is full",
            fix: format!(
                "replace it with ALTER TABLE {t} ADD CONSTRAINT {name} UNIQUE {cols} DEFERRABLE INITIALLY IMMEDIATE (drop the old constraint or unique index in the same migration)",
                t = spec.table
            ),
        }),
        _ => Err(Error::SchemaMismatch {
            table: spec.table.to_owned(),
            problem: "no unique constraint covers exactly (scope, position), so nothing stops two rows from taking one place",
            fix: match d {
                crate::Dialect::Postgres => format!(
                    "ensure_ordering adds it: ALTER TABLE {t} ADD CONSTRAINT {name} UNIQUE {cols} DEFERRABLE INITIALLY IMMEDIATE",
                    t = spec.table
                ),
                _ => format!(
                    "ensure_ordering adds it: CREATE UNIQUE INDEX {name} ON {t} {cols}",
                    t = spec.table
                ),
            },
        }),
    }
}

/// What [`verify`] found wrong with a collection. Empty lists mean it is sound.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Report {
    /// Items checked.
    pub items: u64,
    /// Positions held by more than one item, with those items.
    pub duplicates: Vec<(Position, Vec<Id>)>,
    /// Items whose position is outside the strategy's domain, malformed, or of the
    /// wrong kind.
    pub invalid: Vec<Id>,
    /// Items whose key is longer than the cap.
    pub over_long: Vec<Id>,
    /// Whether the rows came back out of order (an engine or collation problem).
    pub misordered: bool,
}

impl Report {
    /// Whether nothing is wrong.
    pub fn is_ok(&self) -> bool {
        self.duplicates.is_empty()
            && self.invalid.is_empty()
            && self.over_long.is_empty()
            && !self.misordered
    }
}

/// Checks rows read with `ORDER BY position, id`: duplicates, positions outside the
/// domain, over-long keys, and that the database's order is the byte order.
pub fn verify(spec: &Spec, rows: &[Row]) -> Report {
    let mut r = Report {
        items: rows.len() as u64,
        ..Report::default()
    };
    let cap = spec.strategy.kind().key_cap();
    let valid = |p: &Position| spec.strategy.check(p).is_ok();
    for w in rows.windows(2) {
        // a value that is no position (a NaN an app wrote) is reported invalid, not
        // as out of order: the database sorts it somewhere of its own
        if valid(&w[0].position)
            && valid(&w[1].position)
            && (&w[0].position, w[0].id) > (&w[1].position, w[1].id)
        {
            r.misordered = true;
        }
    }
    let mut i = 0;
    while i < rows.len() {
        let mut j = i + 1;
        while j < rows.len() && rows[j].position == rows[i].position {
            j += 1;
        }
        if j - i > 1 {
            r.duplicates.push((
                rows[i].position.clone(),
                rows[i..j].iter().map(|x| x.id).collect(),
            ));
        }
        i = j;
    }
    for row in rows {
        if spec.strategy.check(&row.position).is_err() {
            r.invalid.push(row.id);
        }
        if let (Some(cap), Position::Key(k)) = (cap, &row.position)
            && k.len() > cap
        {
            r.over_long.push(row.id);
        }
    }
    if spec.strategy.is_dense() {
        for (i, row) in rows.iter().enumerate() {
            if row.position != Position::Int(i as i64) && !r.invalid.contains(&row.id) {
                r.invalid.push(row.id);
            }
        }
    }
    r
}

/// The strings the collation probe sorts: upper and lower case, digits, punctuation
/// that linguistic collations skip, and trailing spaces that `PAD SPACE` collations
/// drop. Under a byte-order collation they come back distinct, in byte order.
pub const KEY_ORDER_PROBES: &[&str] = &[
    "a0", "a1", "Zz", "zZ", "A", "a", "B", "b", "Ab", "aB", "ab", "ab ", "a b", "a-b", "a_b", "a~",
    "a0V", "a0v", "Z", "z", "0", "9", "-", "~", "a ", "b0", "B0",
];

/// Checks what the collation probe ([`crate::sql::probe_key_order`] over
/// [`KEY_ORDER_PROBES`]) returned: every probe once, in byte order. Anything else means
/// the key column compares by a collation other than raw bytes, and the database would
/// order (or deduplicate) keys differently from every client.
pub fn check_key_order(spec: &Spec, returned: &[Row]) -> Result<(), Error> {
    let mut want: Vec<&str> = KEY_ORDER_PROBES.to_vec();
    want.sort_unstable();
    let got: Vec<&str> = returned
        .iter()
        .map(|r| match &r.position {
            Position::Key(k) => k.as_str(),
            _ => "",
        })
        .collect();
    if got == want {
        return Ok(());
    }
    let detail = if got.len() < want.len() {
        format!(
            "it treats {} of {} distinct probe strings as equal",
            want.len() - got.len(),
            want.len()
        )
    } else {
        let at = got.iter().zip(&want).position(|(g, w)| g != w).unwrap_or(0);
        format!(
            "it sorts {:?} where byte order puts {:?}",
            got.get(at).copied().unwrap_or_default(),
            want.get(at).copied().unwrap_or_default()
        )
    };
    Err(Error::KeyCollation {
        table: spec.table.to_owned(),
        column: spec.position.to_owned(),
        detail,
    })
}
