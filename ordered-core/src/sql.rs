//! SQL text per engine. Identifiers are quoted per engine and every value is a bind
//! parameter; the adapters execute these statements as they are.

use std::fmt::Write as _;

use crate::id::{Id, KeyType};
use crate::plan::{Passes, RangeRead, Read, Row, Write};
use crate::position::{PARK_POSITION, Position, PositionKind, TEMP_KEY_PREFIX};
use crate::spec::{ScopeColumn, Spec};

/// The SQL engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Dialect {
    /// PostgreSQL 12 or later.
    Postgres,
    /// MySQL 8 or MariaDB 10.6 or later (InnoDB).
    Mysql,
    /// SQLite 3.35 or later.
    Sqlite,
}

/// How an adapter opens its own transaction on `d`: `BEGIN IMMEDIATE` on SQLite, which
/// takes the write lock up front instead of failing to upgrade later; READ COMMITTED on
/// MySQL/MariaDB, where the locking neighbour reads would otherwise take gap locks that
/// make writers on *adjacent* parents deadlock, and on PostgreSQL, where a session
/// default of REPEATABLE READ or SERIALIZABLE would make every writer queued on a busy
/// parent fail with `40001` when the holder commits, and retry, and queue again. The
/// parent lock serialises one parent's writers, so READ COMMITTED is all the protocol
/// needs; inside the caller's transaction the caller's level stays.
pub const fn begin(d: Dialect) -> &'static str {
    match d {
        Dialect::Postgres => BEGIN_STATEMENTS_PG[0],
        Dialect::Mysql => "SET TRANSACTION ISOLATION LEVEL READ COMMITTED; BEGIN",
        Dialect::Sqlite => BEGIN_STATEMENTS_SQLITE[0],
    }
}

const BEGIN_STATEMENTS_PG: &[&str] = &["BEGIN ISOLATION LEVEL READ COMMITTED"];
const BEGIN_STATEMENTS_SQLITE: &[&str] = &["BEGIN IMMEDIATE"];

/// [`begin`] as statements of one command each, in order, for an adapter that runs them
/// as prepared statements kept on the connection instead of as one text batch: on
/// MySQL/MariaDB a text batch is three round trips with Diesel's client (it switches
/// multi-statement mode on and off around it), each kept statement one; on SQLite a kept
/// statement is not compiled again. No statement takes a bind.
///
/// ```
/// use ordered_core::{Dialect, sql};
/// assert_eq!(
///     sql::begin_statements(Dialect::Mysql),
///     ["SET TRANSACTION ISOLATION LEVEL READ COMMITTED", "START TRANSACTION"]
/// );
/// assert_eq!(sql::begin_statements(Dialect::Sqlite), [sql::begin(Dialect::Sqlite)]);
/// ```
pub const fn begin_statements(d: Dialect) -> &'static [&'static str] {
    match d {
        Dialect::Postgres => BEGIN_STATEMENTS_PG,
        Dialect::Mysql => &[
            "SET TRANSACTION ISOLATION LEVEL READ COMMITTED",
            "START TRANSACTION",
        ],
        Dialect::Sqlite => BEGIN_STATEMENTS_SQLITE,
    }
}

/// The statement that commits the library's own transaction, on every engine.
pub const COMMIT: &str = "COMMIT";

/// A statement of no binds and no rows ([`begin_statements`], [`COMMIT`]).
pub fn command(sql: &str) -> Statement {
    Statement {
        sql: sql.to_owned(),
        args: Vec::new(),
        returns: Returns::Nothing,
    }
}

/// A bind value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// A 64-bit integer (`BIGINT`).
    I64(i64),
    /// Text.
    Text(String),
    /// Bytes (a UUID in binary form, `BINARY(16)` or an SQLite blob).
    Bytes(Vec<u8>),
}

impl From<&Position> for Arg {
    fn from(p: &Position) -> Self {
        match p {
            Position::Int(v) => Arg::I64(*v),
            Position::Key(k) => Arg::Text(k.clone()),
        }
    }
}

/// A key as a parameter of SQL of your own (an insert of a row with a UUID or string
/// key): the placeholder for parameter number `n` (1-based; `$n` on PostgreSQL, `?`
/// elsewhere), cast to `uuid` where PostgreSQL needs it, and its argument, both as the
/// library's own statements bind a key of type `ty`.
///
/// ```
/// use ordered_core::{Arg, Dialect, Id, KeyType, sql};
///
/// let card = Id::Uuid(ordered_core::id::Uuid::from_u128(1));
/// let (ph, arg) = sql::key_param(Dialect::Postgres, KeyType::Uuid, card, 1);
/// assert_eq!(ph, "CAST($1 AS UUID)");
/// assert_eq!(arg, Arg::Text("00000000-0000-0000-0000-000000000001".into()));
/// let (ph, arg) = sql::key_param(Dialect::Mysql, KeyType::Uuid, card, 1);
/// assert_eq!((ph.as_str(), arg.clone()), ("?", Arg::Bytes(card.as_uuid().unwrap().as_bytes().to_vec())));
/// ```
pub fn key_param(d: Dialect, ty: KeyType, id: Id, n: usize) -> (String, Arg) {
    let mut b = B::new(d);
    // the placeholder number comes from the arguments bound so far
    b.args = vec![Arg::I64(0); n.saturating_sub(1)];
    b.key(ty, id);
    let arg = b.args.pop().unwrap_or(Arg::I64(0));
    (b.sql, arg)
}

/// How an adapter decodes the rows of a table's statements: whether keys come back as
/// text ([`Spec::text_wire`]; then the position does too), whether positions are keys,
/// and the key types to parse text back into. Build it with [`Wire::of`]; statements
/// that read no table (the Galera probes, the schema probe) use [`Wire::PLAIN`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wire {
    /// Keys, and positions, are text: decode `o_id`, `o_parent`, `o_pos` as text and
    /// parse them with [`Wire::row`] (and a parent row's `o_id` with
    /// [`Wire::parent_key`]).
    pub text: bool,
    /// Positions are fractional keys (text) rather than integers.
    pub key: bool,
    /// The items' key type.
    pub id: KeyType,
    /// The scope's key type.
    pub parent: KeyType,
    /// More scope columns ([`Spec::split_by`]): `o_parent` holds every scope value
    /// (see [`Wire::row`]).
    pub split: &'static [ScopeColumn],
    /// The table is one list ([`Spec::global`]): every row's collection is
    /// [`Id::GLOBAL`].
    pub global: bool,
    /// The scope column may be NULL ([`Spec::nullable`]): `o_parent` is `''` for the
    /// root list ([`Id::ROOT`]) and `=` followed by the key for any other.
    pub nullable: bool,
    /// An association table ([`Spec::link`]): `o_id` is the row's own key, and the
    /// row's id is its collection and that key together.
    pub link: bool,
}

/// A value the database handed back that does not parse as the key or position its
/// column should hold (a spec whose key types do not match the table).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the database returned {value:?} where {expected} was expected: check the model's key types against the table"
)]
pub struct DecodeError {
    /// The text returned.
    pub value: String,
    /// What it should have been.
    pub expected: &'static str,
}

impl Wire {
    /// Integer keys and integer positions.
    pub const PLAIN: Wire = Wire {
        text: false,
        key: false,
        id: KeyType::Int,
        parent: KeyType::Int,
        split: &[],
        global: false,
        nullable: false,
        link: false,
    };

    /// How the statements of `spec`'s table hand back their rows.
    pub fn of(spec: &Spec) -> Wire {
        Wire {
            text: spec.text_wire(),
            key: is_key(spec),
            id: spec.id_type,
            parent: spec.parent_type,
            split: spec.split_by,
            global: spec.is_global(),
            nullable: spec.nullable(),
            link: spec.is_link(),
        }
    }

    /// An item row handed back as text. The collection of a table split by more scope
    /// columns comes as one text holding each scope value as its length in characters,
    /// `:` and the value (`1:74:todo` is `(7, "todo")`), parsed into an [`Id::Tuple`].
    pub fn row(&self, id: &str, parent: &str, position: String) -> Result<Row, DecodeError> {
        let position = if self.key {
            Position::Key(position)
        } else {
            Position::Int(position.trim().parse().map_err(|_| DecodeError {
                value: position.clone(),
                expected: "an integer position",
            })?)
        };
        let own = parse_key(self.id, id)?;
        let parent = if self.global {
            Id::GLOBAL
        } else if self.nullable {
            self.nullable_scope(parent)?
        } else if self.split.is_empty() {
            self.parent_key(parent)?
        } else {
            self.scope(parent)?
        };
        let id = if self.link {
            Id::tuple([parent, own]).map_err(|_| DecodeError {
                value: id.to_owned(),
                expected: "a key that fits beside its list's",
            })?
        } else {
            own
        };
        Ok(Row {
            id,
            parent,
            position,
        })
    }

    /// A collection of several scope values, as [`Wire::row`] describes.
    fn scope(&self, s: &str) -> Result<Id, DecodeError> {
        let bad = || DecodeError {
            value: s.to_owned(),
            expected: "the values of the scope columns",
        };
        let types = std::iter::once(self.parent).chain(self.split.iter().map(|c| c.ty));
        let mut rest = s;
        let mut parts = Vec::with_capacity(self.split.len() + 1);
        for ty in types {
            let (n, tail) = rest.split_once(':').ok_or_else(bad)?;
            let n: usize = n.parse().map_err(|_| bad())?;
            let end = tail.char_indices().nth(n).map_or(tail.len(), |(i, _)| i);
            if tail[..end].chars().count() != n {
                return Err(bad());
            }
            parts.push(parse_key(ty, &tail[..end])?);
            rest = &tail[end..];
        }
        if !rest.is_empty() {
            return Err(bad());
        }
        Id::tuple(parts).map_err(|_| bad())
    }

    /// The collection of a row of a table with a nullable scope column: `''` is the
    /// root list, `=<key>` any other.
    fn nullable_scope(&self, s: &str) -> Result<Id, DecodeError> {
        if s.is_empty() {
            return Ok(Id::ROOT);
        }
        match s.strip_prefix('=') {
            Some(key) => parse_key(self.parent, key),
            None => Err(DecodeError {
                value: s.to_owned(),
                expected: "a nullable scope value",
            }),
        }
    }

    /// A parent key (a parent row's `o_id`) handed back as text.
    pub fn parent_key(&self, s: &str) -> Result<Id, DecodeError> {
        parse_key(self.parent, s)
    }
}

fn parse_key(ty: KeyType, s: &str) -> Result<Id, DecodeError> {
    ty.parse(s).ok_or_else(|| DecodeError {
        value: s.to_owned(),
        expected: match ty {
            KeyType::Int => "an integer key",
            KeyType::Uuid | KeyType::UuidText => "a UUID key",
            KeyType::Text => "a text key",
        },
    })
}

/// What a statement returns, which tells the adapter how to decode its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Returns {
    /// Nothing; the adapter reports the affected row count.
    Nothing,
    /// Item rows: `o_id BIGINT, o_parent BIGINT, o_pos` (BIGINT or TEXT by
    /// [`PositionKind`]).
    Rows,
    /// Parent rows: `o_id BIGINT, o_version BIGINT`.
    Parent,
    /// One row `o_count BIGINT`.
    Count,
    /// A versioned list ([`list_versioned`]): rows `o_version BIGINT, o_id BIGINT NULL,
    /// o_parent BIGINT NULL, o_pos NULL` (BIGINT or TEXT by [`PositionKind`]); one row
    /// with null item columns for an empty collection, none for a missing parent.
    Listed,
    /// Item rows tagged with the index of the part of a [`fused`] read they answer:
    /// `o_q BIGINT`, then the columns of [`Returns::Rows`].
    Tagged,
}

/// One statement with its binds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// The SQL text, with the engine's placeholders (`$1` or `?`).
    pub sql: String,
    /// The binds, in placeholder order.
    pub args: Vec<Arg>,
    /// How to read the result.
    pub returns: Returns,
}

/// Rows per chunked `CASE` statement (keeps binds far below every engine's limit).
pub const CHUNK: usize = 200;

/// Quotes an identifier for the engine (doubling any embedded quote character).
pub fn quote(d: Dialect, ident: &str) -> String {
    match d {
        Dialect::Mysql => format!("`{}`", ident.replace('`', "``")),
        _ => format!("\"{}\"", ident.replace('"', "\"\"")),
    }
}

struct B {
    d: Dialect,
    sql: String,
    args: Vec<Arg>,
}

impl B {
    fn new(d: Dialect) -> Self {
        B {
            d,
            sql: String::with_capacity(160),
            args: Vec::new(),
        }
    }
    fn s(&mut self, s: &str) -> &mut Self {
        self.sql.push_str(s);
        self
    }
    fn id(&mut self, ident: &str) -> &mut Self {
        // as `quote`, written in place: an operation quotes a few dozen identifiers, and
        // on SQLite, where a statement runs in microseconds, an allocation each showed
        let q = match self.d {
            Dialect::Mysql => '`',
            _ => '"',
        };
        self.sql.push(q);
        for part in ident.split_inclusive(q) {
            self.sql.push_str(part);
            if part.ends_with(q) {
                self.sql.push(q);
            }
        }
        self.sql.push(q);
        self
    }
    fn bind(&mut self, a: Arg) -> &mut Self {
        self.args.push(a);
        match self.d {
            Dialect::Postgres => {
                let _ = write!(self.sql, "${}", self.args.len());
            }
            _ => self.sql.push('?'),
        }
        self
    }
    fn i(&mut self, v: i64) -> &mut Self {
        self.bind(Arg::I64(v))
    }
    /// A key of a column of type `ty`: an integer, a UUID (text cast to `uuid` on
    /// PostgreSQL, 16 bytes on the others, or its hyphenated text) or a string.
    fn key(&mut self, ty: KeyType, id: Id) -> &mut Self {
        match id {
            Id::Int(v) => self.i(v),
            Id::Uuid(u) => match (ty, self.d) {
                (KeyType::Uuid, Dialect::Postgres) => self
                    .s("CAST(")
                    .bind(Arg::Text(u.hyphenated().to_string()))
                    .s(" AS UUID)"),
                (KeyType::Uuid, _) => self.bind(Arg::Bytes(u.as_bytes().to_vec())),
                _ => self.bind(Arg::Text(u.hyphenated().to_string())),
            },
            Id::Text(t) => self.bind(Arg::Text(t.to_string())),
            // a composite key binds part by part (scope_is); whole, it is refused
            // before any statement (Spec::check_scope), so this matches no row
            Id::Tuple(_) => self.bind(Arg::Text(id.to_string())),
        }
    }
    /// `parent = ? [AND split = ? ...]`: the rows of the collection `scope`, in the
    /// columns of the table `alias` when given. A value with another number of parts
    /// than the table's scope columns matches nothing.
    fn scope_is(&mut self, spec: &Spec, alias: Option<&str>, scope: Id) -> &mut Self {
        if spec.is_global() {
            // one list: every row (Spec::check_scope refused any other value)
            return self.s("1 = 1");
        }
        if spec.split_by.is_empty() {
            if let Some(a) = alias {
                self.s(a).s(".");
            }
            if spec.nullable() && scope == Id::ROOT {
                // the root list: never `= NULL`, which matches no row
                return self.id(spec.parent).s(" IS NULL");
            }
            return self.id(spec.parent).s(" = ").scope(spec, scope);
        }
        if scope.parts().count() != spec.split_by.len() + 1 {
            return self.s("1 = 0");
        }
        self.s("(");
        for (i, ((col, ty), part)) in spec.scope_columns().zip(scope.parts()).enumerate() {
            if i > 0 {
                self.s(" AND ");
            }
            if let Some(a) = alias {
                self.s(a).s(".");
            }
            self.id(col).s(" = ").key(ty, part);
        }
        self.s(")")
    }
    /// `table_name = ? AND scope_key = ?`: the lock row of the collection `scope` of a
    /// table with no parent table ([`Spec::locks_rows`]).
    fn lock_row_is(&mut self, spec: &Spec, scope: Id) -> &mut Self {
        self.id("table_name")
            .s(" = ")
            .bind(Arg::Text(spec.table.to_owned()))
            .s(" AND ")
            .id("scope_key")
            .s(" = ")
            .bind(Arg::Text(spec.lock_name(scope)))
    }
    /// `parent = ?[, split = ? ...], `: the assignments that put a row in `scope`, each
    /// followed by a comma (none for a global list).
    fn scope_set(&mut self, spec: &Spec, scope: Id) -> &mut Self {
        // one part per scope column (a one-column scope is its own part; a global list
        // has no column)
        let mut parts = scope.parts();
        for (col, ty) in spec.scope_columns() {
            self.id(col).s(" = ");
            match parts.next() {
                Some(part) => self.key(ty, part),
                // refused before any statement (Spec::check_scope)
                None => self.s("NULL"),
            };
            self.s(", ");
        }
        self
    }
    /// A row's collection as a statement hands it back, `o_parent`: the scope column,
    /// or for a table split by more scope columns every one of them in one text, each
    /// as its length in characters, `:`, and its text (`36:<uuid>4:todo`), which
    /// [`Wire::row`] takes apart. NULL when the row is (a `LEFT JOIN`'s missing row).
    fn scope_out(&mut self, spec: &Spec, text: bool, alias: Option<&str>) -> &mut Self {
        let col = |b: &mut B, ident: &str| {
            if let Some(a) = alias {
                b.s(a).s(".");
            }
            b.id(ident);
        };
        if spec.is_global() {
            // a global list's rows all belong to Id::GLOBAL (Wire::row)
            return self.cast_text(|b| {
                b.s("''");
            });
        }
        if spec.nullable() {
            // '' for the root list (NULL), '=' and the key for any other: a LEFT JOIN's
            // missing row has a NULL o_id, and Wire::row tells '' from an empty key
            self.s("COALESCE(");
            if self.d == Dialect::Mysql {
                self.s("CONCAT('=', ");
                self.out_key(true, spec.parent_type, |b| col(b, spec.parent));
                self.s(")");
            } else {
                self.s("'=' || ");
                self.out_key(true, spec.parent_type, |b| col(b, spec.parent));
            }
            return self.s(", '')");
        }
        if spec.split_by.is_empty() {
            return self.out_key(text, spec.parent_type, |b| col(b, spec.parent));
        }
        let mysql = self.d == Dialect::Mysql;
        self.s(if mysql { "CONCAT(" } else { "(" });
        for (i, (name, ty)) in spec.scope_columns().enumerate() {
            if i > 0 {
                self.s(if mysql { ", " } else { " || " });
            }
            self.s(match self.d {
                Dialect::Sqlite => "LENGTH(",
                _ => "CHAR_LENGTH(",
            });
            self.out_key(true, ty, |b| col(b, name));
            self.s(if mysql { "), ':', " } else { ") || ':' || " });
            self.out_key(true, ty, |b| col(b, name));
        }
        self.s(")")
    }
    /// An item id of `spec`'s table: for an association table its own key (the `id`
    /// column's value), in a statement already limited to the item's list.
    fn item(&mut self, spec: &Spec, id: Id) -> &mut Self {
        self.key(spec.id_type, spec.own_key(id))
    }
    /// `id = ?`: the row `id`, in the columns of the table `alias` when given; for an
    /// association table its own key and its list (`track_id = ? AND playlist_id = ?`).
    fn item_is(&mut self, spec: &Spec, alias: Option<&str>, id: Id) -> &mut Self {
        if let Some(a) = alias {
            self.s(a).s(".");
        }
        self.id(spec.id).s(" = ").item(spec, id);
        if spec.is_link() {
            self.s(" AND ").scope_is(spec, alias, spec.link_scope(id));
        }
        self
    }
    /// ` AND <alias>.scope = ...` joining a relabel's ranked rows back to the table:
    /// for an association table, whose `id` is unique only within a list.
    fn same_list(&mut self, spec: &Spec, alias: &str, parent: Id) -> &mut Self {
        if spec.is_link() {
            self.s(" AND ").scope_is(spec, Some(alias), parent);
        }
        self
    }
    /// A scope value (parent key) of `spec`'s table.
    fn scope(&mut self, spec: &Spec, id: Id) -> &mut Self {
        self.key(spec.parent_type, id)
    }
    /// A key column as a statement hands it back: `BIGINT`, or on a text wire
    /// ([`Spec::text_wire`]) text (a binary UUID as 32 hexadecimal digits).
    fn out_key(&mut self, text: bool, ty: KeyType, f: impl FnOnce(&mut Self)) -> &mut Self {
        if !text {
            return self.cast_int(f);
        }
        match (ty, self.d) {
            (KeyType::Uuid, Dialect::Mysql) => {
                self.s("LOWER(HEX(");
                f(self);
                self.s("))")
            }
            // SQLite's hex(NULL) is '': a missing item of a LEFT JOIN stays NULL
            (KeyType::Uuid, Dialect::Sqlite) => {
                self.s("NULLIF(LOWER(HEX(");
                f(self);
                self.s(")), '')")
            }
            _ => self.cast_text(f),
        }
    }
    /// `CAST(<expr> AS TEXT)` in the engine's spelling.
    fn cast_text(&mut self, f: impl FnOnce(&mut Self)) -> &mut Self {
        self.s("CAST(");
        f(self);
        self.s(if self.d == Dialect::Mysql {
            " AS CHAR)"
        } else {
            " AS TEXT)"
        })
    }
    fn done(self, returns: Returns) -> Statement {
        Statement {
            sql: self.sql,
            args: self.args,
            returns,
        }
    }
    /// `CAST(<expr> AS BIGINT)` in the engine's spelling.
    fn cast_int(&mut self, f: impl FnOnce(&mut Self)) -> &mut Self {
        match self.d {
            Dialect::Sqlite => f(self),
            _ => {
                self.s("CAST(");
                f(self);
                self.s(match self.d {
                    Dialect::Mysql => " AS SIGNED)",
                    _ => " AS BIGINT)",
                });
            }
        }
        self
    }
}

fn is_key(spec: &Spec) -> bool {
    matches!(spec.strategy.kind(), PositionKind::Key { .. })
}

/// The columns every item read selects, aliased `o_id`, `o_parent`, `o_pos`.
fn item_columns(b: &mut B, spec: &Spec) {
    item_columns_of(b, spec, None);
}

/// [`item_columns`] of the table named `alias` in a join.
fn item_columns_of(b: &mut B, spec: &Spec, alias: Option<&str>) {
    let col = |b: &mut B, ident: &str| {
        if let Some(a) = alias {
            b.s(a).s(".");
        }
        b.id(ident);
    };
    let text = spec.text_wire();
    b.out_key(text, spec.id_type, |b| col(b, spec.id))
        .s(" AS o_id, ")
        .scope_out(spec, text, alias)
        .s(" AS o_parent, ");
    if text && !is_key(spec) {
        b.cast_text(|b| col(b, spec.position));
    } else if is_key(spec) {
        if b.d == Dialect::Mysql {
            // the column is VARBINARY (byte order, no padding); hand it back as text
            b.s("CAST(");
            col(b, spec.position);
            b.s(" AS CHAR)");
        } else {
            col(b, spec.position);
        }
    } else {
        b.cast_int(|b| col(b, spec.position));
    }
    b.s(" AS o_pos");
}

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
fn lock_row(d: Dialect, spec: &Spec, scope: Id, bump: bool) -> Vec<Statement> {
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
enum LockTarget {
    Parent(Id),
    ParentOf(Id),
}

fn lock(d: Dialect, spec: &Spec, target: LockTarget, bump: bool) -> Statement {
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
fn lock_by_update(
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

/// One part of a [`fused`] read: a read the planner will ask for, written so that it
/// needs nothing read before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// One item by id: the rows of [`Read::Item`].
    Item(Id),
    /// The first (`last`: the last) item of `parent`, leaving out `exclude`: a
    /// [`Read::Range`] with no bounds and a limit of one.
    Edge {
        /// The collection.
        parent: Id,
        /// The last item instead of the first.
        last: bool,
        /// An item to leave out (the one being moved).
        exclude: Option<Id>,
    },
    /// The nearest item of `parent` before (`up`) or after the position of the item
    /// `of`, leaving out `exclude`: a [`Read::Range`] bounded by that position with a
    /// limit of one. The position comes from a subquery in the same statement, so the
    /// fused read must also hold [`Probe::Item`] of `of` to tell which range it was.
    Near {
        /// The collection.
        parent: Id,
        /// The item whose neighbour this is.
        of: Id,
        /// Before it, instead of after.
        up: bool,
        /// An item to leave out (the one being moved).
        exclude: Option<Id>,
    },
    /// The version of the parent row `parent` as it was before this operation's bump,
    /// when the bump was the lock ([`lock_by_bump`], MySQL): one row with the parent's
    /// key as `o_id` and `o_parent` and the version minus one as `o_pos`, read back by
    /// [`fused_versions`]. No planner read.
    Version {
        /// The parent row's key.
        parent: Id,
    },
}

impl Probe {
    /// The planner read this part answers on its own, when it needs no other part
    /// (every probe but [`Probe::Near`]).
    pub fn read(&self) -> Option<Read> {
        match self {
            Probe::Item(id) => Some(Read::Item { id: *id }),
            Probe::Edge {
                parent,
                last,
                exclude,
            } => Some(Read::Range(RangeRead::edge(*parent, *last, *exclude))),
            Probe::Near { .. } | Probe::Version { .. } => None,
        }
    }
}

/// Several planner reads in one statement (a `UNION ALL`), each row tagged `o_q` with
/// the index of its [`Probe`] ([`Returns::Tagged`]): a move reads its item, its anchor
/// and the anchor's neighbour in one round trip under the lock. Every part is the same
/// query as its own [`read`], locking on MySQL when `locking` (the anchor's position
/// too), so every part sees the rows as they are under the lock.
pub fn fused(d: Dialect, spec: &Spec, probes: &[Probe], locking: bool) -> Statement {
    let mut b = B::new(d);
    let lock = locking && d == Dialect::Mysql;
    for (i, p) in probes.iter().enumerate() {
        if i > 0 {
            b.s(" UNION ALL ");
        }
        // SQLite takes no parenthesised members; a derived table keeps each part's
        // ORDER BY and LIMIT on every engine
        b.s(if d == Dialect::Sqlite {
            "SELECT * FROM ("
        } else {
            "("
        });
        b.s("SELECT ")
            .cast_int(|b| {
                let _ = write!(b.sql, "{i}");
            })
            .s(" AS o_q, ");
        if let Probe::Version { parent } = p {
            version_columns(&mut b, spec);
            b.s(" FROM ")
                .id(spec.parent_table)
                .s(" WHERE ")
                .id(spec.parent_id)
                .s(" = ")
                .scope(spec, *parent);
        } else {
            item_columns(&mut b, spec);
            b.s(" FROM ").id(spec.table).s(" WHERE ");
        }
        match p {
            Probe::Version { .. } => {}
            Probe::Item(id) => {
                b.item_is(spec, None, *id);
            }
            Probe::Edge {
                parent,
                last,
                exclude,
            } => range(&mut b, spec, &RangeRead::edge(*parent, *last, *exclude)),
            Probe::Near {
                parent,
                of,
                up,
                exclude,
            } => {
                b.scope_is(spec, None, *parent)
                    .s(" AND ")
                    .id(spec.position)
                    .s(if *up { " < " } else { " > " })
                    .s("(SELECT ")
                    .id(spec.position)
                    .s(" FROM ")
                    .id(spec.table)
                    .s(" WHERE ")
                    .item_is(spec, None, *of);
                if lock {
                    b.s(" FOR UPDATE");
                }
                b.s(")");
                if let Some(x) = exclude {
                    b.s(" AND ").id(spec.id).s(" <> ").item(spec, *x);
                }
                b.s(" ORDER BY ")
                    .id(spec.position)
                    .s(if *up { " DESC" } else { "" })
                    .s(" LIMIT 1");
            }
        }
        if lock {
            b.s(" FOR UPDATE");
        }
        b.s(if d == Dialect::Sqlite { ") o_f" } else { ")" });
        if d == Dialect::Sqlite {
            let _ = write!(b.sql, "{i}");
        }
    }
    b.done(Returns::Tagged)
}

/// The columns of a [`Probe::Version`] part, in the shape of the item parts' (integer
/// keys only, see [`lock_by_bump`]): the parent key twice and the version before the
/// bump where the position goes, as text for a key strategy.
fn version_columns(b: &mut B, spec: &Spec) {
    // the version before the bump; `lock_by_bump` asks for this part only with a version
    // column, and without one it is 0, as `lock` reads it
    let version = |b: &mut B| match spec.version {
        Some(v) => {
            b.id(v).s(" - 1");
        }
        None => {
            b.s("0");
        }
    };
    b.cast_int(|b| {
        b.id(spec.parent_id);
    })
    .s(" AS o_id, ")
    .cast_int(|b| {
        b.id(spec.parent_id);
    })
    .s(" AS o_parent, ");
    if is_key(spec) {
        b.s("CAST(");
        version(b);
        b.s(" AS CHAR)");
    } else {
        b.cast_int(version);
    }
    b.s(" AS o_pos");
}

/// The versions a [`fused`] read answered for its [`Probe::Version`] parts: `(parent
/// key, version before the bump)` for each such part that found its row.
pub fn fused_versions(probes: &[Probe], rows: &[(i64, Row)]) -> Vec<(Id, i64)> {
    rows.iter()
        .filter_map(|(q, row)| {
            let probe = usize::try_from(*q).ok().and_then(|q| probes.get(q))?;
            let Probe::Version { parent } = probe else {
                return None;
            };
            let v = match &row.position {
                Position::Int(v) => *v,
                Position::Key(k) => k.parse().ok()?,
            };
            Some((*parent, v))
        })
        .collect()
}

/// The planner reads a [`fused`] read answered, from its tagged rows: each probe's
/// read with its rows (a [`Probe::Near`] only when the item it is bound by was found).
pub fn fused_reads(probes: &[Probe], rows: Vec<(i64, Row)>) -> Vec<(Read, Vec<Row>)> {
    let mut parts: Vec<Vec<Row>> = vec![Vec::new(); probes.len()];
    for (q, row) in rows {
        if let Some(part) = usize::try_from(q).ok().and_then(|q| parts.get_mut(q)) {
            part.push(row);
        }
    }
    let item_row = |id: Id| {
        probes
            .iter()
            .zip(&parts)
            .find(|(p, _)| **p == Probe::Item(id))
            .and_then(|(_, rows)| rows.first())
    };
    // the bounds of each neighbour read, from its anchor's row in the same statement
    let bounds: Vec<Option<Position>> = probes
        .iter()
        .map(|p| match p {
            Probe::Near { of, .. } => item_row(*of).map(|r| r.position.clone()),
            _ => None,
        })
        .collect();
    let mut out = Vec::with_capacity(probes.len());
    for ((p, rows), bound) in probes.iter().zip(parts).zip(bounds) {
        let read = match (p, bound) {
            (
                Probe::Near {
                    parent,
                    up,
                    exclude,
                    ..
                },
                Some(pos),
            ) => Read::Range(RangeRead::neighbour(*parent, &pos, *up, *exclude)),
            _ => match p.read() {
                Some(q) => q,
                // a neighbour whose anchor is missing: nothing to cache
                None => continue,
            },
        };
        out.push((read, rows));
    }
    out
}

/// The statement for a planner read. `locking` adds `FOR UPDATE` on MySQL, where a
/// plain read inside REPEATABLE READ can see a snapshot older than the parent lock
/// (when the caller's transaction read before calling the library); PostgreSQL and SQLite
/// read fresh rows after the lock.
pub fn read(d: Dialect, spec: &Spec, r: &Read, locking: bool) -> Statement {
    let mut b = B::new(d);
    b.s("SELECT ");
    item_columns(&mut b, spec);
    b.s(" FROM ").id(spec.table).s(" WHERE ");
    match r {
        Read::Item { id } => {
            b.item_is(spec, None, *id);
        }
        Read::Range(r) => range(&mut b, spec, r),
        Read::Ancestors { of } => {
            // the chain of parents up from `of` (UNION, not UNION ALL: a cycle already
            // in the data ends the walk instead of looping)
            b.id(spec.id).s(" IN (WITH RECURSIVE o_up(o_k) AS (SELECT ");
            b.id(spec.id).s(" FROM ").id(spec.table).s(" WHERE ");
            b.id(spec.id).s(" = ").item(spec, *of);
            b.s(" UNION SELECT o_t.")
                .id(spec.parent)
                .s(" FROM ")
                .id(spec.table);
            b.s(" o_t JOIN o_up ON o_t.")
                .id(spec.id)
                .s(" = o_up.o_k WHERE o_t.");
            b.id(spec.parent).s(" IS NOT NULL) SELECT o_k FROM o_up)");
        }
    }
    if locking && d == Dialect::Mysql {
        b.s(" FOR UPDATE");
    }
    b.done(Returns::Rows)
}

fn range(b: &mut B, spec: &Spec, r: &RangeRead) {
    b.scope_is(spec, None, r.parent);
    if let Some(p) = &r.above {
        b.s(" AND ").id(spec.position).s(" > ").bind(p.into());
    }
    if let Some(p) = &r.below {
        b.s(" AND ").id(spec.position).s(" < ").bind(p.into());
    }
    if let Some(x) = r.exclude {
        b.s(" AND ").id(spec.id).s(" <> ").item(spec, x);
    }
    if r.visible {
        shown(b, spec);
    }
    let dir = if r.desc { " DESC" } else { "" };
    b.s(" ORDER BY ").id(spec.position).s(dir);
    // A limited read is a neighbour lookup: `(parent, position)` is unique, so position
    // alone is a total order, and leaving out the id lets the engine walk the unique
    // index and stop (with the id, it sorts the whole collection, and InnoDB locks every
    // row it scans). Full reads keep the id tiebreak, for tables being healed.
    if r.limit.is_none() {
        b.s(", ").id(spec.id).s(dir);
    }
    if let Some(l) = r.limit {
        // a literal, not a bind: SQLite recompiles a statement whenever the value bound
        // to its LIMIT changes, so a bound limit could never be reused prepared (the
        // limits are few: 1, and a relabel window's doubling sizes)
        let _ = write!(b.sql, " LIMIT {}", i64::try_from(l).unwrap_or(i64::MAX));
        if r.offset > 0 {
            b.s(" OFFSET ")
                .i(i64::try_from(r.offset).unwrap_or(i64::MAX));
        }
    }
}

/// ` AND (<filter>)` when the table has a row filter ([`Spec::filter`]).
fn shown(b: &mut B, spec: &Spec) {
    if let Some(f) = spec.filter {
        b.s(" AND (").s(f).s(")");
    }
}

/// The items of a collection the lists show ([`Spec::filter`]), `ORDER BY position, id`.
pub fn list(d: Dialect, spec: &Spec, parent: Id) -> Statement {
    let r = RangeRead {
        visible: true,
        ..RangeRead::all(parent)
    };
    read(d, spec, &Read::Range(r), false)
}

/// Every item of a collection, the ones the row filter leaves out included (what
/// `verify` checks), `ORDER BY position, id`.
pub fn list_all(d: Dialect, spec: &Spec, parent: Id) -> Statement {
    read(d, spec, &Read::Range(RangeRead::all(parent)), false)
}

/// The collation probe of [`crate::verify::check_key_order`]: the probe strings, run
/// through `UNION` (which removes what the column's collation calls equal) with a
/// zero-row select of the key column first (so the column's collation applies to the
/// whole union), `ORDER BY` that column. Returns item rows whose positions are the
/// probes as the engine sorted them.
pub fn probe_key_order(d: Dialect, spec: &Spec, probes: &[&str]) -> Statement {
    let mut b = B::new(d);
    // no row of the table: a placeholder key of each column's type
    let zero = |b: &mut B, ty: KeyType| {
        if !spec.text_wire() {
            b.cast_int(|b| {
                b.s("0");
            });
        } else {
            b.cast_text(|b| {
                b.s(match ty {
                    KeyType::Int => "0",
                    KeyType::Uuid | KeyType::UuidText => "'00000000-0000-0000-0000-000000000000'",
                    KeyType::Text => "''",
                });
            });
        }
    };
    b.s("SELECT ");
    zero(&mut b, spec.id_type);
    b.s(" AS o_id, ");
    if spec.is_global() {
        b.cast_text(|b| {
            b.s("''");
        });
    } else if spec.split_by.is_empty() {
        zero(&mut b, spec.parent_type);
    } else {
        // every scope value as Wire::row reads them
        let mut v = String::new();
        for (_, ty) in spec.scope_columns() {
            v.push_str(match ty {
                KeyType::Int => "1:0",
                KeyType::Uuid | KeyType::UuidText => "36:00000000-0000-0000-0000-000000000000",
                KeyType::Text => "0:",
            });
        }
        b.cast_text(|b| {
            b.s("'").s(&v).s("'");
        });
    }
    b.s(" AS o_parent, ");
    if d == Dialect::Mysql {
        b.s("CAST(o_p AS CHAR)");
    } else {
        b.s("o_p");
    }
    b.s(" AS o_pos FROM (SELECT ")
        .id(spec.position)
        .s(" AS o_p FROM ")
        .id(spec.table)
        .s(" WHERE 1 = 0");
    for p in probes {
        b.s(" UNION SELECT ").bind(Arg::Text((*p).to_owned()));
    }
    b.s(") o_probe ORDER BY o_p");
    b.done(Returns::Rows)
}

/// Every item of `parent`, `ORDER BY position, id`, with the parent's version, in one
/// statement, so one snapshot on every engine (a PostgreSQL statement, an InnoDB read
/// view, an SQLite read): the version is the one the list belongs to, and a client
/// sends it back as the expected version of its next write. The parent's row is
/// `LEFT JOIN`ed to its items, so an empty collection still has its version (one row
/// with null item columns) and a missing parent returns no row.
pub fn list_versioned(d: Dialect, spec: &Spec, parent: Id) -> Statement {
    let mut b = B::new(d);
    let col = |b: &mut B, alias: &str, ident: &str| {
        b.s(alias).s(".").id(ident);
    };
    b.s("SELECT ");
    if spec.locks_rows() {
        // the lock row, if the collection was ever written; else version 0
        b.cast_int(|b| {
            b.s("COALESCE((SELECT ")
                .id("version")
                .s(" FROM ")
                .id(crate::spec::LOCK_TABLE)
                .s(" WHERE ")
                .lock_row_is(spec, parent)
                .s("), 0)");
        });
    } else {
        b.cast_int(|b| match spec.version {
            Some(v) => col(b, "o_p", v),
            None => {
                b.s("0");
            }
        });
    }
    b.s(" AS o_version, ");
    item_columns_of(&mut b, spec, Some("o_i"));
    if spec.locks_rows() {
        b.s(" FROM (SELECT 1 AS o_one) o_p LEFT JOIN ");
    } else {
        b.s(" FROM ").id(spec.parent_table).s(" o_p LEFT JOIN ");
    }
    match spec.filter {
        // the filter names the items' own columns: apply it inside
        Some(f) => {
            b.s("(SELECT * FROM ")
                .id(spec.table)
                .s(" WHERE ")
                .s(f)
                .s(")");
        }
        None => {
            b.id(spec.table);
        }
    }
    b.s(" o_i ON ");
    if spec.locks_rows() {
        b.scope_is(spec, Some("o_i"), parent).s(" ORDER BY ");
    } else {
        col(&mut b, "o_i", spec.parent);
        b.s(" = ");
        col(&mut b, "o_p", spec.parent_id);
        // a table split by more scope columns: the list's own rows of the parent's
        if !spec.split_by.is_empty() {
            b.s(" AND ").scope_is(spec, Some("o_i"), parent);
        }
        b.s(" WHERE ");
        col(&mut b, "o_p", spec.parent_id);
        b.s(" = ")
            .scope(spec, spec.lock_key(parent))
            .s(" ORDER BY ");
    }
    col(&mut b, "o_i", spec.position);
    b.s(", ");
    col(&mut b, "o_i", spec.id);
    b.done(Returns::Listed)
}

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

/// The item of `parent` at `position` (zero or one row: `(parent, position)` is
/// unique): how an operation learns the id of a row the caller inserted.
pub fn at(d: Dialect, spec: &Spec, parent: Id, position: &Position) -> Statement {
    let mut b = B::new(d);
    b.s("SELECT ");
    item_columns(&mut b, spec);
    slot_filter(&mut b, spec, parent, " = ", position);
    b.done(Returns::Rows)
}

/// How many items of `parent` the lists show sort before `position` (the index of the
/// item there).
pub fn count_before(d: Dialect, spec: &Spec, parent: Id, position: &Position) -> Statement {
    let mut b = B::new(d);
    b.s("SELECT ")
        .cast_int(|b| {
            b.s("COUNT(*)");
        })
        .s(" AS o_count");
    slot_filter(&mut b, spec, parent, " < ", position);
    shown(&mut b, spec);
    b.done(Returns::Count)
}

/// ` FROM items WHERE parent = ? AND position <op> ?`.
fn slot_filter(b: &mut B, spec: &Spec, parent: Id, op: &str, position: &Position) {
    b.s(" FROM ")
        .id(spec.table)
        .s(" WHERE ")
        .scope_is(spec, None, parent)
        .s(" AND ")
        .id(spec.position)
        .s(op)
        .bind(position.into());
}

/// The statements of one planned write.
pub fn write(d: Dialect, spec: &Spec, w: &Write) -> Vec<Statement> {
    match w {
        Write::Set {
            id,
            parent,
            position,
        } => {
            let mut b = B::new(d);
            b.s("UPDATE ")
                .id(spec.table)
                .s(" SET ")
                .scope_set(spec, *parent)
                .id(spec.position)
                .s(" = ")
                .bind(position.into())
                .s(" WHERE ")
                .item_is(spec, None, *id);
            vec![b.done(Returns::Nothing)]
        }
        Write::Delete { id } => {
            let mut b = B::new(d);
            b.s("DELETE FROM ")
                .id(spec.table)
                .s(" WHERE ")
                .item_is(spec, None, *id);
            vec![b.done(Returns::Nothing)]
        }
        Write::Renumber {
            parent,
            above,
            below,
            first,
            step,
            hole_after,
            passes,
            ..
        } => renumber(
            d,
            spec,
            *parent,
            (*above, *below),
            (*first, *step, *hole_after),
            passes,
        ),
        Write::Assign { parent, rows } => assign(d, spec, *parent, rows),
        Write::Shift {
            parent,
            from,
            to,
            delta,
            ..
        } => shift(d, spec, *parent, *from, *to, *delta),
    }
}

/// The statements of [`Write::Renumber`]: the rows of `parent` strictly between `above`
/// and `below`, ranked, get `first + (rank - 1 + [rank > hole_after]) * step`.
fn renumber(
    d: Dialect,
    spec: &Spec,
    parent: Id,
    (above, below): (i64, i64),
    (first, step, hole_after): (i64, i64, u64),
    passes: &Passes,
) -> Vec<Statement> {
    let hole = i64::try_from(hole_after).unwrap_or(i64::MAX);
    // rows moved out of the way sit at their negations: they rank where they were
    let parked = matches!(passes, Passes::One { parks } if !parks.is_empty());
    let ranked = |b: &mut B| {
        b.s("(SELECT ")
            .id(spec.id)
            .s(" AS o_rid, ROW_NUMBER() OVER (ORDER BY ");
        if parked {
            // a parked row's rank is its old place; the key breaks a tie with a row
            // at the negation (heal's PARK_POSITION)
            b.s("CASE WHEN ")
                .id(spec.position)
                .s(" < 0 THEN -")
                .id(spec.position)
                .s(" ELSE ")
                .id(spec.position)
                .s(" END, ")
                .id(spec.id);
        } else {
            // positions are unique in a list (the spec's constraint): the scope and
            // position index gives the order (with the key as a tie-break SQLite 3.40
            // sorted the rows, 233 ms against 168 for 100k; 3.51 is the same either way)
            b.id(spec.position);
        }
        b.s(") AS o_rn FROM ")
            .id(spec.table)
            .s(" WHERE ")
            .scope_is(spec, None, parent)
            .s(" AND ")
            .id(spec.position)
            .s(" > ")
            .i(above)
            .s(" AND ")
            .id(spec.position)
            .s(" < ")
            .i(below)
            .s(") AS o_r");
    };
    let value = |b: &mut B| {
        b.i(first)
            .s(" + (o_r.o_rn - 1 + CASE WHEN o_r.o_rn > ")
            .i(hole)
            .s(" THEN 1 ELSE 0 END) * ")
            .i(step);
    };
    match d {
        Dialect::Postgres => {
            // one statement: the DEFERRABLE INITIALLY IMMEDIATE constraint is checked at
            // its end, so transient duplicates inside it are allowed
            let mut b = B::new(d);
            b.s("UPDATE ")
                .id(spec.table)
                .s(" AS o_t SET ")
                .id(spec.position)
                .s(" = ");
            value(&mut b);
            b.s(" FROM ");
            ranked(&mut b);
            b.s(" WHERE o_t.").id(spec.id).s(" = o_r.o_rid");
            b.same_list(spec, "o_t", parent);
            vec![b.done(Returns::Nothing)]
        }
        Dialect::Mysql => {
            let mut b = B::new(d);
            b.s("UPDATE ").id(spec.table).s(" AS o_t JOIN ");
            ranked(&mut b);
            b.s(" ON o_t.").id(spec.id).s(" = o_r.o_rid");
            b.same_list(spec, "o_t", parent)
                .s(" SET o_t.")
                .id(spec.position);
            match passes {
                // one pass: nothing is in the way any more
                Passes::One { parks } => {
                    b.s(" = ");
                    value(&mut b);
                    let mut out = move_out_of_the_way(d, spec, parent, parks);
                    out.push(b.done(Returns::Nothing));
                    out
                }
                Passes::Two { temp_offset } => {
                    b.s(" = -(");
                    value(&mut b);
                    b.s(" + ").i(*temp_offset).s(")");
                    vec![
                        b.done(Returns::Nothing),
                        unpark_negated(d, spec, parent, *temp_offset),
                    ]
                }
            }
        }
        Dialect::Sqlite => {
            let mut b = B::new(d);
            b.s("UPDATE ").id(spec.table).s(" SET ").id(spec.position);
            match passes {
                // one pass: nothing is in the way any more
                Passes::One { .. } => {
                    b.s(" = ");
                    value(&mut b);
                    b.s(" FROM ");
                }
                Passes::Two { temp_offset } => {
                    b.s(" = -(");
                    value(&mut b);
                    b.s(" + ").i(*temp_offset).s(") FROM ");
                }
            }
            ranked(&mut b);
            b.s(" WHERE ")
                .id(spec.table)
                .s(".")
                .id(spec.id)
                .s(" = o_r.o_rid");
            let table = quote(d, spec.table);
            b.same_list(spec, &table, parent);
            match passes {
                Passes::One { parks } => {
                    let mut out = move_out_of_the_way(d, spec, parent, parks);
                    out.push(b.done(Returns::Nothing));
                    out
                }
                Passes::Two { temp_offset } => vec![
                    b.done(Returns::Nothing),
                    unpark_negated(d, spec, parent, *temp_offset),
                ],
            }
        }
    }
}

/// `UPDATE items SET position = -position`: how both statements that cross the temporary
/// range on MySQL and SQLite begin.
fn negating(d: Dialect, spec: &Spec) -> B {
    let mut b = B::new(d);
    b.s("UPDATE ")
        .id(spec.table)
        .s(" SET ")
        .id(spec.position)
        .s(" = -")
        .id(spec.position);
    b
}

/// Before a one-pass relabel on MySQL and SQLite: the rows whose positions others are
/// about to take move to their negations (none: no statement).
fn move_out_of_the_way(d: Dialect, spec: &Spec, parent: Id, parks: &[Id]) -> Vec<Statement> {
    if parks.is_empty() {
        return Vec::new();
    }
    let mut b = negating(d, spec);
    b.s(" WHERE ").scope_is(spec, None, parent).s(" AND (");
    for (i, id) in parks.iter().enumerate() {
        if i > 0 {
            b.s(" OR ");
        }
        b.item_is(spec, None, *id);
    }
    b.s(")");
    vec![b.done(Returns::Nothing)]
}

/// Phase two on MySQL and SQLite: the temporary range `[-(2^62 - 1), -1]` holds final
/// values negated, `offset` further down; flip them back (the parking slot is below that
/// range).
fn unpark_negated(d: Dialect, spec: &Spec, parent: Id, offset: i64) -> Statement {
    let mut b = negating(d, spec);
    b.s(" - ")
        .i(offset)
        .s(" WHERE ")
        .scope_is(spec, None, parent)
        .s(" AND ")
        .id(spec.position)
        .s(" < 0 AND ")
        .id(spec.position)
        .s(" > ")
        .i(PARK_POSITION);
    b.done(Returns::Nothing)
}

fn shift(d: Dialect, spec: &Spec, parent: Id, from: i64, to: i64, delta: i64) -> Vec<Statement> {
    let range = |b: &mut B| {
        b.s(" WHERE ")
            .scope_is(spec, None, parent)
            .s(" AND ")
            .id(spec.position)
            .s(" >= ")
            .i(from)
            .s(" AND ")
            .id(spec.position)
            .s(" <= ")
            .i(to);
    };
    let mut b = B::new(d);
    b.s("UPDATE ")
        .id(spec.table)
        .s(" SET ")
        .id(spec.position)
        .s(" = ");
    match d {
        Dialect::Postgres => {
            b.id(spec.position).s(" + ").i(delta);
            range(&mut b);
            vec![b.done(Returns::Nothing)]
        }
        _ => {
            // v -> -(v + delta) - 1 in [-(n + 1), -1], then back with -v - 1
            b.s("-(").id(spec.position).s(" + ").i(delta).s(") - 1");
            range(&mut b);
            let mut u = B::new(d);
            u.s("UPDATE ")
                .id(spec.table)
                .s(" SET ")
                .id(spec.position)
                .s(" = -")
                .id(spec.position)
                .s(" - 1 WHERE ")
                .scope_is(spec, None, parent)
                .s(" AND ")
                .id(spec.position)
                .s(" < 0 AND ")
                .id(spec.position)
                .s(" > ")
                .i(PARK_POSITION);
            vec![b.done(Returns::Nothing), u.done(Returns::Nothing)]
        }
    }
}

fn id_list(b: &mut B, spec: &Spec, ids: impl Iterator<Item = Id>) {
    b.s("(");
    for (i, id) in ids.enumerate() {
        if i > 0 {
            b.s(", ");
        }
        b.item(spec, id);
    }
    b.s(")");
}

fn assign(d: Dialect, spec: &Spec, parent: Id, rows: &[(Id, Position)]) -> Vec<Statement> {
    let key = is_key(spec);
    let chunks: Vec<&[(Id, Position)]> = rows.chunks(CHUNK).collect();
    let mut out = Vec::new();
    let constraint = quote(d, &spec.unique_name());
    if d == Dialect::Postgres && chunks.len() > 1 {
        out.push(B::new(d).s_owned(format!("SET CONSTRAINTS {constraint} DEFERRED")));
    }
    if d != Dialect::Postgres {
        // park every assigned row in the temporary range first: these engines check
        // uniqueness row by row, so a final value may still be held by another row
        for chunk in &chunks {
            let mut b = B::new(d);
            b.s("UPDATE ")
                .id(spec.table)
                .s(" SET ")
                .id(spec.position)
                .s(" = ");
            if key {
                match d {
                    Dialect::Mysql => {
                        b.s("CONCAT(")
                            .bind(Arg::Text(TEMP_KEY_PREFIX.into()))
                            .s(", ")
                            .id(spec.position)
                            .s(")");
                    }
                    _ => {
                        b.bind(Arg::Text(TEMP_KEY_PREFIX.into()))
                            .s(" || ")
                            .id(spec.position);
                    }
                }
            } else {
                b.s("-").id(spec.position).s(" - 1");
            }
            b.s(" WHERE ")
                .scope_is(spec, None, parent)
                .s(" AND ")
                .id(spec.id)
                .s(" IN ");
            id_list(&mut b, spec, chunk.iter().map(|r| r.0));
            out.push(b.done(Returns::Nothing));
        }
    }
    for chunk in &chunks {
        let mut b = B::new(d);
        b.s("UPDATE ")
            .id(spec.table)
            .s(" SET ")
            .id(spec.position)
            .s(" = CASE ")
            .id(spec.id);
        for (id, p) in chunk.iter() {
            b.s(" WHEN ").item(spec, *id).s(" THEN ");
            match (d, p) {
                (Dialect::Postgres, Position::Int(_)) => {
                    b.s("CAST(").bind(p.into()).s(" AS BIGINT)");
                }
                (Dialect::Postgres, Position::Key(_)) => {
                    b.s("CAST(").bind(p.into()).s(" AS TEXT)");
                }
                _ => {
                    b.bind(p.into());
                }
            }
        }
        b.s(" END WHERE ")
            .scope_is(spec, None, parent)
            .s(" AND ")
            .id(spec.id)
            .s(" IN ");
        id_list(&mut b, spec, chunk.iter().map(|r| r.0));
        out.push(b.done(Returns::Nothing));
    }
    if d == Dialect::Postgres && chunks.len() > 1 {
        // surface a leftover duplicate here rather than at COMMIT
        out.push(B::new(d).s_owned(format!("SET CONSTRAINTS {constraint} IMMEDIATE")));
    }
    out
}

impl B {
    fn s_owned(mut self, sql: String) -> Statement {
        self.sql = sql;
        self.done(Returns::Nothing)
    }
}

/// The statements of the Galera flavour of the MySQL dialect (MariaDB Galera Cluster).
///
/// The adapters run [`galera::probe`] before each operation on MySQL/MariaDB: it tells
/// a cluster node from a single server, and on a node it is also the causal wait that
/// makes the node apply every write the cluster has committed before the operation's
/// transaction starts (inside an open transaction Galera skips that wait). The
/// [`Operation`](crate::Operation) then brackets its transaction with
/// [`galera::mark`] and [`galera::unchanged`] (see [`crate::Error::PartiallyApplied`]),
/// and the adapter checks [`galera::unchanged`] once more after `COMMIT`
/// ([`crate::Error::CommitDropped`]).
pub mod galera {
    use super::{Returns, Statement};

    /// `o_count` is 1 on a Galera node (`@@wsrep_on`), 0 on a MariaDB server without a
    /// cluster. Run with `wsrep_sync_wait = 1`, so on a node it first waits until the
    /// node has applied the cluster's committed writes. On MySQL, or a MariaDB built
    /// without wsrep, it fails: see [`is_not_galera`].
    pub fn probe() -> Statement {
        Statement {
            sql:
                "SET STATEMENT wsrep_sync_wait = 1 FOR SELECT CAST(@@wsrep_on AS SIGNED) AS o_count"
                    .into(),
            args: Vec::new(),
            returns: Returns::Count,
        }
    }

    /// Whether the probe's error message says the server has no Galera support (MySQL
    /// has no `SET STATEMENT`; a MariaDB built without wsrep has no such variable).
    pub fn is_not_galera(msg: &str) -> bool {
        msg.contains("Unknown system variable") || msg.contains("error in your SQL syntax")
    }

    /// The first statement of a transaction on a node: remembers the GTID of this
    /// session's last replicated write in a session variable.
    pub fn mark() -> Statement {
        Statement {
            sql: "SET @ordered_gtid = WSREP_LAST_WRITTEN_GTID()".into(),
            args: Vec::new(),
            returns: Returns::Nothing,
        }
    }

    /// `o_count` is 1 while this session has replicated nothing since [`mark`]. Before
    /// `COMMIT` it must be 1: a transaction's writes replicate only at its commit, so a
    /// new GTID means statements ran outside the transaction. After `COMMIT` it must be
    /// 0: a commit that wrote nothing leaves it at 1.
    pub fn unchanged() -> Statement {
        Statement {
            sql: "SELECT CAST(WSREP_LAST_WRITTEN_GTID() <=> @ordered_gtid AS SIGNED) AS o_count"
                .into(),
            args: Vec::new(),
            returns: Returns::Count,
        }
    }

    /// The check before `COMMIT`: `o_count` is 1 while this session has replicated
    /// nothing since [`mark`] *and* is still inside its transaction. A node that aborted
    /// the transaction may run the statements that follow outside it, one by one
    /// (writes among them escape); the GTID alone has been seen to miss that once in a
    /// few dozen runs of eight writers on three nodes, `@@in_transaction` does not:
    /// a transaction that is gone before its `COMMIT` is never reported a success.
    pub fn intact() -> Statement {
        Statement {
            sql: "SELECT CAST((WSREP_LAST_WRITTEN_GTID() <=> @ordered_gtid) AND @@in_transaction = 1 AS SIGNED) AS o_count"
                .into(),
            args: Vec::new(),
            returns: Returns::Count,
        }
    }

    /// `stmt` (a read outside the library's transactions: `list`, `index_of`, `verify`)
    /// as a causal read: on a Galera node it waits until the node has applied the
    /// cluster's committed writes, so a client that wrote through another node reads its
    /// own write. Where it fails with [`is_not_galera`], run `stmt` as it is.
    pub fn causal(stmt: &Statement) -> Statement {
        Statement {
            sql: format!("SET STATEMENT wsrep_sync_wait = 1 FOR {}", stmt.sql),
            args: stmt.args.clone(),
            returns: stmt.returns,
        }
    }

    /// The check before the `ROLLBACK` of a failed attempt: `unchanged` is the reply to
    /// [`unchanged`] (`None` if it could not run), `locked` the first collection the
    /// attempt locked. A new GTID since the mark means statements escaped the
    /// transaction before it failed, so the failure is [`crate::Error::PartiallyApplied`]
    /// (a retry would apply the operation on top of part of itself). Before the first
    /// lock the mark may not have run in this attempt, and nothing was written.
    pub fn check_escaped(
        unchanged: Option<i64>,
        locked: Option<crate::Id>,
    ) -> Option<crate::Error> {
        match (unchanged, locked) {
            (Some(0), Some(parent)) => Some(crate::Error::PartiallyApplied { parent }),
            _ => None,
        }
    }

    /// The check after `COMMIT`: the reply to [`unchanged`], run on the same
    /// connection right after the commit succeeded.
    pub fn check_committed(unchanged: i64) -> Result<(), crate::Error> {
        if unchanged == 1 {
            Err(crate::Error::CommitDropped)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{B, Dialect, quote};

    #[test]
    fn identifiers_written_in_place_are_quoted_as_quote_does() {
        for d in [Dialect::Postgres, Dialect::Mysql, Dialect::Sqlite] {
            for ident in ["plain", "we\"ird", "we`ird", "\"", "``", "a\"\"b`", ""] {
                let mut b = B::new(d);
                b.id(ident);
                assert_eq!(b.sql, quote(d, ident), "{d:?} {ident}");
            }
        }
    }
}
