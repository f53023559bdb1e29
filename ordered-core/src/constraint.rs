//! The application's own constraints the database refused a row for, read from the
//! engines' messages, so that a refusal can name the constraint (never the row's values
//! or the database's text).

use std::fmt;

/// What kind of constraint a row broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum ConstraintKind {
    /// A unique constraint or unique index (a duplicate slug, a link already filed).
    Unique,
    /// A foreign key: the row refers to one that does not exist (or is still referred to).
    ForeignKey,
    /// A CHECK constraint.
    Check,
    /// A NOT NULL column left without a value.
    NotNull,
}

impl fmt::Display for ConstraintKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConstraintKind::Unique => "unique",
            ConstraintKind::ForeignKey => "foreign key",
            ConstraintKind::Check => "check",
            ConstraintKind::NotNull => "not-null",
        })
    }
}

/// A constraint a statement broke: its kind and its name as the engine gives it (the
/// constraint's name on PostgreSQL; the key's or constraint's name on MySQL/MariaDB, the
/// column's for NOT NULL; on SQLite, which names no unique or not-null constraint, its
/// columns as `table.column, ...`, and nothing for a foreign key).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Constraint {
    /// The kind.
    pub kind: ConstraintKind,
    /// The name (see the type's docs); empty when the engine gives none.
    pub name: String,
}

/// The text between `open` and the next `close` after `after` in `m`.
fn quoted<'a>(m: &'a str, after: &str, open: char, close: char) -> Option<&'a str> {
    let rest = &m[m.find(after)? + after.len()..];
    let rest = &rest[rest.find(open)? + open.len_utf8()..];
    Some(&rest[..rest.find(close)?])
}

/// The rest of the line after `after` in `m`.
fn tail<'a>(m: &'a str, after: &str) -> Option<&'a str> {
    let rest = &m[m.find(after)? + after.len()..];
    Some(rest.lines().next().unwrap_or("").trim())
}

impl Constraint {
    /// The constraint an engine's error message names, if it is a constraint violation
    /// (PostgreSQL, MySQL/MariaDB or SQLite, wherever the message sits in the client's
    /// text).
    ///
    /// ```
    /// use ordered_core::constraint::{Constraint, ConstraintKind};
    ///
    /// let pg = r#"duplicate key value violates unique constraint "posts_slug_key""#;
    /// let c = Constraint::parse(pg).unwrap();
    /// assert_eq!((c.kind, c.name.as_str()), (ConstraintKind::Unique, "posts_slug_key"));
    /// let sqlite = "UNIQUE constraint failed: posts.slug";
    /// assert_eq!(Constraint::parse(sqlite).unwrap().name, "posts.slug");
    /// let mysql = "Duplicate entry 'hello' for key 'slug'";
    /// assert_eq!(Constraint::parse(mysql).unwrap().name, "slug"); // never the value
    /// assert_eq!(Constraint::parse("deadlock detected"), None);
    /// ```
    pub fn parse(message: &str) -> Option<Constraint> {
        use ConstraintKind::*;
        let found = |kind, name: &str| {
            Some(Constraint {
                kind,
                name: name.to_owned(),
            })
        };
        let m = message;
        // PostgreSQL: the kind is in the phrase, the quoted name follows it
        for (phrase, kind, name_after) in [
            (
                "violates unique constraint",
                Unique,
                "violates unique constraint",
            ),
            (
                "violates foreign key constraint",
                ForeignKey,
                "violates foreign key constraint",
            ),
            (
                "violates check constraint",
                Check,
                "violates check constraint",
            ),
            (
                "violates not-null constraint",
                NotNull,
                "null value in column",
            ),
        ] {
            if m.contains(phrase) {
                return found(kind, quoted(m, name_after, '"', '"').unwrap_or(""));
            }
        }
        // MySQL and MariaDB
        if m.contains("Duplicate entry") {
            let key = quoted(m, "' for key ", '\'', '\'')?;
            // MySQL 8 says `table.key`
            return found(Unique, key.rsplit('.').next().unwrap_or(key));
        }
        if m.contains("a foreign key constraint fails") {
            return found(ForeignKey, quoted(m, "CONSTRAINT ", '`', '`').unwrap_or(""));
        }
        if let Some(name) = quoted(m, "Check constraint ", '\'', '\'') {
            return found(Check, name);
        }
        if m.contains("` failed for `") {
            return found(Check, quoted(m, "CONSTRAINT ", '`', '`')?);
        }
        if m.contains("cannot be null") {
            return found(NotNull, quoted(m, "Column ", '\'', '\'')?);
        }
        if m.contains("doesn't have a default value") {
            return found(NotNull, quoted(m, "Field ", '\'', '\'')?);
        }
        // SQLite
        if m.contains("UNIQUE constraint failed:") {
            return found(Unique, tail(m, "UNIQUE constraint failed:")?);
        }
        if m.contains("FOREIGN KEY constraint failed") {
            return found(ForeignKey, "");
        }
        if m.contains("CHECK constraint failed") {
            return found(Check, tail(m, "CHECK constraint failed:").unwrap_or(""));
        }
        if m.contains("NOT NULL constraint failed:") {
            return found(NotNull, tail(m, "NOT NULL constraint failed:")?);
        }
        None
    }

    /// Whether this is the primary key of `spec`'s table: its default name on PostgreSQL
    /// (`<table>_pkey`), `PRIMARY` on MySQL/MariaDB, its columns on SQLite.
    pub fn is_primary_key_of(&self, spec: &crate::Spec) -> bool {
        if self.kind != ConstraintKind::Unique {
            return false;
        }
        if self.name == "PRIMARY" || self.name == format!("{}_pkey", spec.table) {
            return true;
        }
        // SQLite: the key's columns, in order
        let mut cols: Vec<&str> = Vec::new();
        if !spec.is_global() {
            cols.push(spec.parent);
            cols.extend(spec.split_by.iter().map(|c| c.name));
        }
        cols.push(spec.id);
        let want: Vec<String> = if spec.is_link() {
            cols.iter().map(|c| format!("{}.{c}", spec.table)).collect()
        } else {
            vec![format!("{}.{}", spec.table, spec.id)]
        };
        self.name == want.join(", ")
    }
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.name.is_empty() {
            write!(f, "a {} constraint", self.kind)
        } else {
            write!(f, "the {} constraint {}", self.kind, self.name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ConstraintKind::*;

    fn parsed(m: &str) -> (ConstraintKind, String) {
        let c = Constraint::parse(m).unwrap_or_else(|| panic!("{m}"));
        (c.kind, c.name)
    }

    #[test]
    fn every_engines_messages_name_the_constraint_and_never_the_value() {
        for (m, kind, name) in [
            (
                r#"duplicate key value violates unique constraint "t_pkey""#,
                Unique,
                "t_pkey",
            ),
            (
                r#"insert or update on table "t" violates foreign key constraint "t_p_fkey""#,
                ForeignKey,
                "t_p_fkey",
            ),
            (
                r#"new row for relation "t" violates check constraint "t_c""#,
                Check,
                "t_c",
            ),
            (
                r#"null value in column "slug" of relation "t" violates not-null constraint"#,
                NotNull,
                "slug",
            ),
            ("Duplicate entry '1-2' for key 'PRIMARY'", Unique, "PRIMARY"),
            ("Duplicate entry 'x' for key 't.slug'", Unique, "slug"),
            (
                "Cannot add or update a child row: a foreign key constraint fails (`db`.`t`, CONSTRAINT `t_fk` FOREIGN KEY (`p`) REFERENCES `p` (`id`))",
                ForeignKey,
                "t_fk",
            ),
            ("CONSTRAINT `t_c` failed for `db`.`t`", Check, "t_c"),
            ("Check constraint 't_c' is violated.", Check, "t_c"),
            ("Column 'slug' cannot be null", NotNull, "slug"),
            ("UNIQUE constraint failed: t.a, t.b", Unique, "t.a, t.b"),
            ("FOREIGN KEY constraint failed", ForeignKey, ""),
            ("CHECK constraint failed: t_c", Check, "t_c"),
            ("NOT NULL constraint failed: t.slug", NotNull, "t.slug"),
            // wrapped by a client (SeaORM)
            (
                "Execution Error: error returned from database: (code: 2067) UNIQUE constraint failed: t.slug",
                Unique,
                "t.slug",
            ),
        ] {
            assert_eq!(parsed(m), (kind, name.to_owned()), "{m}");
        }
        assert_eq!(Constraint::parse("database is locked"), None);
        assert_eq!(Constraint::parse("Lock wait timeout exceeded"), None);
    }

    #[test]
    fn a_links_primary_key_is_its_list_and_its_own_key() {
        let spec = crate::Spec::link("pt", "playlist_id", "playlists", "track_id");
        let c = |name: &str| Constraint {
            kind: Unique,
            name: name.to_owned(),
        };
        assert!(c("pt_pkey").is_primary_key_of(&spec));
        assert!(c("PRIMARY").is_primary_key_of(&spec));
        assert!(c("pt.playlist_id, pt.track_id").is_primary_key_of(&spec));
        assert!(!c("pt.track_id").is_primary_key_of(&spec));
        assert!(!c("pt_slug_key").is_primary_key_of(&spec));
    }
}
