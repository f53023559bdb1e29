//! The connections the library runs on.

use diesel::connection::{AnsiTransactionManager, Connection};
use diesel::result::QueryResult;
use ordered_core::{Dialect, Reply, Statement, Wire};

mod sealed {
    pub trait Sealed {}
}

/// A Diesel connection the library can drive: `PgConnection`, `MysqlConnection` and
/// `SqliteConnection`, each behind its cargo feature. Pooled connections work through
/// `&mut *pooled`.
///
/// It executes the statements `ordered-core` builds with `sql_query` and typed binds,
/// and decodes their rows; it holds no SQL of its own.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a connection `ordered-diesel` supports",
    note = "use `PgConnection`, `MysqlConnection` or `SqliteConnection` (enable the `postgres`, `mysql` or `sqlite` feature); for a pooled connection pass `&mut *pooled`"
)]
pub trait OrderedConnection:
    Connection<TransactionManager = AnsiTransactionManager> + sealed::Sealed + Sized
{
    /// The engine.
    const DIALECT: Dialect;
    /// How the library opens its own transaction ([`ordered_core::sql::begin`]):
    /// `BEGIN IMMEDIATE` on SQLite, READ COMMITTED on the servers.
    const BEGIN: &'static str;
    /// Executes one statement and decodes its result as `wire` says.
    #[doc(hidden)]
    fn run(&mut self, stmt: &Statement, wire: Wire) -> QueryResult<Reply>;
}

/// The row shapes of [`ordered_core::Returns`] and the query with its binds, shared by
/// the sync connections and the diesel-async ones.
#[cfg(any(
    feature = "postgres",
    feature = "mysql",
    feature = "sqlite",
    feature = "async"
))]
pub(crate) mod rows {
    use diesel::backend::Backend;
    use diesel::query_builder::{BoxedSqlQuery, SqlQuery};
    use diesel::result::{Error as DieselError, QueryResult};
    use diesel::serialize::ToSql;
    use diesel::sql_types::{BigInt, Binary, HasSqlType, Nullable, Text};
    use ordered_core::{Arg, Id, Position, Reply, Row, Statement, Wire};

    #[derive(diesel::QueryableByName)]
    pub(crate) struct IntRow {
        #[diesel(sql_type = BigInt)]
        o_id: i64,
        #[diesel(sql_type = BigInt)]
        o_parent: i64,
        #[diesel(sql_type = BigInt)]
        o_pos: i64,
    }

    #[derive(diesel::QueryableByName)]
    pub(crate) struct KeyRow {
        #[diesel(sql_type = BigInt)]
        o_id: i64,
        #[diesel(sql_type = BigInt)]
        o_parent: i64,
        #[diesel(sql_type = Text)]
        o_pos: String,
    }

    #[derive(diesel::QueryableByName)]
    pub(crate) struct ParentRow {
        #[diesel(sql_type = BigInt)]
        o_id: i64,
        #[diesel(sql_type = BigInt)]
        o_version: i64,
    }

    #[derive(diesel::QueryableByName)]
    pub(crate) struct ListedIntRow {
        #[diesel(sql_type = BigInt)]
        o_version: i64,
        #[diesel(sql_type = Nullable<BigInt>)]
        o_id: Option<i64>,
        #[diesel(sql_type = Nullable<BigInt>)]
        o_parent: Option<i64>,
        #[diesel(sql_type = Nullable<BigInt>)]
        o_pos: Option<i64>,
    }

    #[derive(diesel::QueryableByName)]
    pub(crate) struct ListedKeyRow {
        #[diesel(sql_type = BigInt)]
        o_version: i64,
        #[diesel(sql_type = Nullable<BigInt>)]
        o_id: Option<i64>,
        #[diesel(sql_type = Nullable<BigInt>)]
        o_parent: Option<i64>,
        #[diesel(sql_type = Nullable<Text>)]
        o_pos: Option<String>,
    }

    #[derive(diesel::QueryableByName)]
    pub(crate) struct TaggedIntRow {
        #[diesel(sql_type = BigInt)]
        o_q: i64,
        #[diesel(sql_type = BigInt)]
        o_id: i64,
        #[diesel(sql_type = BigInt)]
        o_parent: i64,
        #[diesel(sql_type = BigInt)]
        o_pos: i64,
    }

    #[derive(diesel::QueryableByName)]
    pub(crate) struct TaggedKeyRow {
        #[diesel(sql_type = BigInt)]
        o_q: i64,
        #[diesel(sql_type = BigInt)]
        o_id: i64,
        #[diesel(sql_type = BigInt)]
        o_parent: i64,
        #[diesel(sql_type = Text)]
        o_pos: String,
    }

    /// The reply to a [`ordered_core::Returns::Tagged`] statement.
    pub(crate) fn tagged_int(rows: Vec<TaggedIntRow>) -> Reply {
        tagged(rows.into_iter().map(|r| {
            (
                r.o_q,
                Id::Int(r.o_id),
                Id::Int(r.o_parent),
                Position::Int(r.o_pos),
            )
        }))
    }

    /// The reply to a [`ordered_core::Returns::Tagged`] statement on a key table.
    pub(crate) fn tagged_key(rows: Vec<TaggedKeyRow>) -> Reply {
        tagged(rows.into_iter().map(|r| {
            (
                r.o_q,
                Id::Int(r.o_id),
                Id::Int(r.o_parent),
                Position::Key(r.o_pos),
            )
        }))
    }

    fn tagged(rows: impl Iterator<Item = (i64, Id, Id, Position)>) -> Reply {
        Reply::Tagged(
            rows.map(|(q, id, parent, position)| {
                (
                    q,
                    Row {
                        id,
                        parent,
                        position,
                    },
                )
            })
            .collect(),
        )
    }

    /// The reply to a [`ordered_core::Returns::Listed`] statement.
    pub(crate) fn listed_int(rows: Vec<ListedIntRow>) -> Reply {
        listed(rows.into_iter().map(|r| {
            let row = item(r.o_id, r.o_parent, r.o_pos.map(Position::Int));
            (r.o_version, row)
        }))
    }

    /// The reply to a [`ordered_core::Returns::Listed`] statement on a key table.
    pub(crate) fn listed_key(rows: Vec<ListedKeyRow>) -> Reply {
        listed(rows.into_iter().map(|r| {
            let row = item(r.o_id, r.o_parent, r.o_pos.map(Position::Key));
            (r.o_version, row)
        }))
    }

    /// The item of a joined row; `None` for an empty collection's row.
    fn item(id: Option<i64>, parent: Option<i64>, position: Option<Position>) -> Option<Row> {
        Some(Row {
            id: Id::Int(id?),
            parent: Id::Int(parent?),
            position: position?,
        })
    }

    fn listed(rows: impl Iterator<Item = (i64, Option<Row>)>) -> Reply {
        let mut version = None;
        let mut out = Vec::new();
        for (v, row) in rows {
            version = Some(v);
            out.extend(row);
        }
        Reply::Listed { version, rows: out }
    }

    #[derive(diesel::QueryableByName)]
    pub(crate) struct CountRow {
        #[diesel(sql_type = BigInt)]
        o_count: i64,
    }

    impl From<IntRow> for Row {
        fn from(r: IntRow) -> Row {
            Row {
                id: Id::Int(r.o_id),
                parent: Id::Int(r.o_parent),
                position: Position::Int(r.o_pos),
            }
        }
    }

    impl From<KeyRow> for Row {
        fn from(r: KeyRow) -> Row {
            Row {
                id: Id::Int(r.o_id),
                parent: Id::Int(r.o_parent),
                position: Position::Key(r.o_pos),
            }
        }
    }

    impl From<ParentRow> for (Id, i64) {
        fn from(r: ParentRow) -> (Id, i64) {
            (Id::Int(r.o_id), r.o_version)
        }
    }

    // Rows of a table whose keys are not integers: every key and position is text
    // (`ordered_core::Wire`), parsed back by the core.

    #[derive(diesel::QueryableByName)]
    pub(crate) struct TextRow {
        #[diesel(sql_type = Text)]
        o_id: String,
        #[diesel(sql_type = Text)]
        o_parent: String,
        #[diesel(sql_type = Text)]
        o_pos: String,
    }

    #[derive(diesel::QueryableByName)]
    pub(crate) struct ParentTextRow {
        #[diesel(sql_type = Text)]
        o_id: String,
        #[diesel(sql_type = BigInt)]
        o_version: i64,
    }

    #[derive(diesel::QueryableByName)]
    pub(crate) struct ListedTextRow {
        #[diesel(sql_type = BigInt)]
        o_version: i64,
        #[diesel(sql_type = Nullable<Text>)]
        o_id: Option<String>,
        #[diesel(sql_type = Nullable<Text>)]
        o_parent: Option<String>,
        #[diesel(sql_type = Nullable<Text>)]
        o_pos: Option<String>,
    }

    #[derive(diesel::QueryableByName)]
    pub(crate) struct TaggedTextRow {
        #[diesel(sql_type = BigInt)]
        o_q: i64,
        #[diesel(sql_type = Text)]
        o_id: String,
        #[diesel(sql_type = Text)]
        o_parent: String,
        #[diesel(sql_type = Text)]
        o_pos: String,
    }

    fn decode(e: ordered_core::sql::DecodeError) -> DieselError {
        DieselError::DeserializationError(Box::new(e))
    }

    /// Item rows of a text wire.
    pub(crate) fn text_rows(wire: Wire, rows: Vec<TextRow>) -> QueryResult<Reply> {
        rows.into_iter()
            .map(|r| wire.row(&r.o_id, &r.o_parent, r.o_pos).map_err(decode))
            .collect::<QueryResult<_>>()
            .map(Reply::Rows)
    }

    /// Parent rows of a text wire.
    pub(crate) fn text_parents(wire: Wire, rows: Vec<ParentTextRow>) -> QueryResult<Reply> {
        rows.into_iter()
            .map(|r| Ok((wire.parent_key(&r.o_id).map_err(decode)?, r.o_version)))
            .collect::<QueryResult<_>>()
            .map(Reply::Parents)
    }

    /// A versioned list of a text wire.
    pub(crate) fn text_listed(wire: Wire, rows: Vec<ListedTextRow>) -> QueryResult<Reply> {
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let row = match (r.o_id, r.o_parent, r.o_pos) {
                (Some(id), Some(parent), Some(pos)) => {
                    Some(wire.row(&id, &parent, pos).map_err(decode)?)
                }
                _ => None,
            };
            out.push((r.o_version, row));
        }
        Ok(listed(out.into_iter()))
    }

    /// Tagged rows of a text wire.
    pub(crate) fn text_tagged(wire: Wire, rows: Vec<TaggedTextRow>) -> QueryResult<Reply> {
        rows.into_iter()
            .map(|r| {
                Ok((
                    r.o_q,
                    wire.row(&r.o_id, &r.o_parent, r.o_pos).map_err(decode)?,
                ))
            })
            .collect::<QueryResult<_>>()
            .map(Reply::Tagged)
    }

    /// The count of a [`ordered_core::Returns::Count`] statement (0 for no row).
    pub(crate) fn count(rows: &[CountRow]) -> i64 {
        rows.first().map_or(0, |r| r.o_count)
    }

    /// `stmt` as a Diesel raw query with its typed binds.
    pub(crate) fn query<DB>(stmt: &Statement) -> BoxedSqlQuery<'static, DB, SqlQuery>
    where
        DB: Backend + HasSqlType<BigInt> + HasSqlType<Text> + HasSqlType<Binary>,
        i64: ToSql<BigInt, DB>,
        String: ToSql<Text, DB>,
        Vec<u8>: ToSql<Binary, DB>,
    {
        let mut q = diesel::sql_query(stmt.sql.clone()).into_boxed::<DB>();
        for a in &stmt.args {
            q = match a {
                Arg::I64(v) => q.bind::<BigInt, _>(*v),
                Arg::Text(t) => q.bind::<Text, _>(t.clone()),
                Arg::Bytes(b) => q.bind::<Binary, _>(b.clone()),
            };
        }
        q
    }
}

#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
macro_rules! ordered_connection {
    ($conn:ty, $backend:ty, $dialect:expr) => {
        impl sealed::Sealed for $conn {}

        impl OrderedConnection for $conn {
            const DIALECT: Dialect = $dialect;
            const BEGIN: &'static str = ordered_core::sql::begin($dialect);

            fn run(&mut self, stmt: &Statement, wire: Wire) -> QueryResult<Reply> {
                use diesel::RunQueryDsl;
                use ordered_core::Returns;

                let q = rows::query::<$backend>(stmt);
                let key = wire.key;
                Ok(match stmt.returns {
                    Returns::Nothing => Reply::Affected(q.execute(self)? as u64),
                    Returns::Rows if wire.text => rows::text_rows(wire, q.load(self)?)?,
                    Returns::Parent if wire.text => rows::text_parents(wire, q.load(self)?)?,
                    Returns::Listed if wire.text => rows::text_listed(wire, q.load(self)?)?,
                    Returns::Tagged if wire.text => rows::text_tagged(wire, q.load(self)?)?,
                    Returns::Rows if key => Reply::Rows(
                        q.load::<rows::KeyRow>(self)?
                            .into_iter()
                            .map(Into::into)
                            .collect(),
                    ),
                    Returns::Rows => Reply::Rows(
                        q.load::<rows::IntRow>(self)?
                            .into_iter()
                            .map(Into::into)
                            .collect(),
                    ),
                    Returns::Parent => Reply::Parents(
                        q.load::<rows::ParentRow>(self)?
                            .into_iter()
                            .map(Into::into)
                            .collect(),
                    ),
                    Returns::Count => Reply::Count(rows::count(&q.load::<rows::CountRow>(self)?)),
                    Returns::Listed if key => rows::listed_key(q.load(self)?),
                    Returns::Listed => rows::listed_int(q.load(self)?),
                    Returns::Tagged if key => rows::tagged_key(q.load(self)?),
                    Returns::Tagged => rows::tagged_int(q.load(self)?),
                })
            }
        }
    };
}

#[cfg(feature = "postgres")]
ordered_connection!(diesel::PgConnection, diesel::pg::Pg, Dialect::Postgres);
#[cfg(feature = "mysql")]
ordered_connection!(
    diesel::MysqlConnection,
    diesel::mysql::Mysql,
    Dialect::Mysql
);
#[cfg(feature = "sqlite")]
ordered_connection!(
    diesel::SqliteConnection,
    diesel::sqlite::Sqlite,
    Dialect::Sqlite
);
