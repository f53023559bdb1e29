//! SQL text per engine. Identifiers are quoted per engine and every value is a bind
//! parameter; the adapters execute these statements as they are.

use std::fmt::Write as _;

use crate::id::{Id, KeyType};
use crate::plan::{Passes, RangeRead, Read, Row, Write};
use crate::position::{Num, PARK_POSITION, Position, PositionKind, TEMP_KEY_PREFIX};
use crate::spec::{ScopeColumn, Spec};

/// The SQL engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
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
/// use ordered_core::{Dialect};
/// use ordered_core::adapter::{sql};
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
    /// A double-precision float (`DOUBLE PRECISION`): a numeric position, cast to the
    /// column's type in the SQL where the engine needs it.
    F64(Num),
}

impl From<&Position> for Arg {
    fn from(p: &Position) -> Self {
        match p {
            Position::Int(v) => Arg::I64(*v),
            Position::Key(k) => Arg::Text(k.clone()),
            Position::Num(n) => Arg::F64(*n),
        }
    }
}

/// A key as a parameter of SQL of your own (an insert of a row with a UUID or string
/// key): the placeholder for parameter number `n` (1-based; `$n` on PostgreSQL, `?`
/// elsewhere), cast to `uuid` where PostgreSQL needs it, and its argument, both as the
/// library's own statements bind a key of type `ty`.
///
/// ```
/// use ordered_core::{Dialect, Id, KeyType};
/// use ordered_core::adapter::{Arg, sql};
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
    /// Positions come back as text rather than integers: fractional keys, or numbers
    /// ([`Wire::num`]). Decode `o_pos` as text and make it a position with
    /// [`Wire::position`].
    pub key: bool,
    /// Positions are numbers ([`crate::Numeric`]), handed back as text that reads back
    /// as the same `f64` ([`Wire::position`] parses it).
    pub num: bool,
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
        num: false,
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
            key: is_text_position(spec),
            num: spec.strategy.kind().is_numeric(),
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
            self.position(position)?
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

    /// A position handed back as text ([`Wire::key`]): a fractional key as it is, a
    /// number parsed. A number that is not a finite `f64` other than `-0` (NaN, an
    /// infinity, `-0`: values an app wrote around the library) stays text, which
    /// the strategy's [`check`](crate::PositionStrategy::check) then refuses as an
    /// invalid position, so that an operation on its list is refused with a typed
    /// error and `verify` reports the row.
    ///
    /// ```
    /// use ordered_core::adapter::{Wire, sql};
    /// use ordered_core::{Numeric, Position, Spec};
    ///
    /// const CARDS: Spec = Spec::new("cards", "list_id", "lists").with_strategy(&Numeric::FLOAT);
    /// let wire = Wire::of(&CARDS);
    /// assert_eq!(wire.position("0.30000000000000004".into())?, Position::Num((0.1f64 + 0.2).try_into().unwrap()));
    /// assert_eq!(wire.position("NaN".into())?, Position::Key("NaN".into()));
    /// # Ok::<(), sql::DecodeError>(())
    /// ```
    pub fn position(&self, text: String) -> Result<Position, DecodeError> {
        if !self.num {
            return Ok(Position::Key(text));
        }
        let t = text.trim();
        let v: f64 = t.parse().map_err(|_| DecodeError {
            value: text.clone(),
            expected: "a numeric position",
        })?;
        Ok(match Num::new(v) {
            Some(n) => Position::Num(n),
            None => Position::Key(t.to_owned()),
        })
    }

    /// A row of a linked list ([`Returns::Links`]): its id, its collection and the id
    /// its link names, all handed back as text whatever the table's wire.
    pub fn link_row(
        &self,
        id: &str,
        parent: &str,
        link: Option<&str>,
    ) -> Result<(Id, Id, Option<Id>), DecodeError> {
        let text = Wire {
            text: true,
            key: true,
            num: false,
            ..*self
        };
        let row = text.row(id, parent, String::new())?;
        let link = link.map(|l| parse_key(self.id, l)).transpose()?;
        Ok((row.id, row.parent, link))
    }

    /// Every row of a [`Returns::Links`] reply, parsed with [`Wire::link_row`].
    pub fn links(
        &self,
        rows: Vec<(String, String, Option<String>)>,
    ) -> Result<Vec<(Id, Id, Option<Id>)>, DecodeError> {
        rows.into_iter()
            .map(|(id, parent, to)| self.link_row(&id, &parent, to.as_deref()))
            .collect()
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
    /// A request record ([`find_record`]): at most one row `o_digest TEXT, o_outcome
    /// TEXT`, replied as [`Reply::Record`](crate::adapter::Reply::Record).
    Record,
    /// The rows of a linked list ([`links`]): `o_id TEXT, o_parent TEXT, o_link TEXT
    /// NULL`, replied as [`Reply::Links`](crate::adapter::Reply::Links).
    Links,
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
    /// A position of `spec`'s column: a number cast to the column's type where the
    /// engine would otherwise compare in floating point (a `NUMERIC` column against a
    /// `DOUBLE PRECISION` parameter compares as floats, past the index) or cannot infer
    /// the type (PostgreSQL inside `CASE`).
    fn pos(&mut self, spec: &Spec, p: &Position) -> &mut Self {
        match (spec.strategy.kind(), p, self.d) {
            (PositionKind::Decimal { .. }, Position::Num(_), Dialect::Postgres) => {
                self.s("CAST(").bind(p.into()).s(" AS NUMERIC)")
            }
            (PositionKind::Decimal { precision, scale }, Position::Num(_), Dialect::Mysql) => {
                self.s("CAST(").bind(p.into());
                let _ = write!(self.sql, " AS DECIMAL({precision}, {scale}))");
                self
            }
            (_, Position::Num(_), Dialect::Postgres) => {
                self.s("CAST(").bind(p.into()).s(" AS DOUBLE PRECISION)")
            }
            _ => self.bind(p.into()),
        }
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

/// Positions come back as text: keys, and numbers (see [`Wire::position`]).
fn is_text_position(spec: &Spec) -> bool {
    is_key(spec) || spec.strategy.kind().is_numeric()
}

/// A numeric position column as text that reads back as the same `f64`: PostgreSQL's
/// and MySQL/MariaDB's conversions give the shortest such decimal (and a `NUMERIC`'s
/// own digits); SQLite's gives 15 digits, so it prints 17.
fn num_text(b: &mut B, f: impl FnOnce(&mut B)) {
    if b.d == Dialect::Sqlite {
        b.s("printf('%!.17g', ");
        f(b);
        b.s(")");
    } else {
        b.cast_text(f);
    }
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
    if spec.strategy.kind().is_numeric() {
        num_text(b, |b| col(b, spec.position));
    } else if text && !is_key(spec) {
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

mod lock;
mod read;
mod requests;
mod schema;
mod write;

/// The statements of the Galera flavour of the MySQL dialect (MariaDB Galera Cluster).
///
/// The adapters run [`galera::probe`] before each operation on MySQL/MariaDB: it tells
/// a cluster node from a single server, and on a node it is also the causal wait that
/// makes the node apply every write the cluster has committed before the operation's
/// transaction starts (inside an open transaction Galera skips that wait). The
/// [`Operation`](crate::adapter::Operation) then brackets its transaction with
/// [`galera::mark`] and [`galera::unchanged`] (see [`crate::Error::PartiallyApplied`]),
/// and the adapter checks [`galera::unchanged`] once more after `COMMIT`
/// ([`crate::Error::CommitDropped`]).
pub mod galera;

pub use lock::*;
pub use read::*;
pub use requests::*;
pub use schema::*;
pub use write::*;

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
