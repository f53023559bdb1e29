//! The connections the library runs on.

use diesel::connection::{AnsiTransactionManager, Connection};
use diesel::result::{Error as DieselError, QueryResult};
use ordered_core::Dialect;
use ordered_core::adapter::{Reply, Statement, Wire};

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
    /// How the library opens its own transaction ([`ordered_core::adapter::sql::begin`]):
    /// `BEGIN IMMEDIATE` on SQLite, READ COMMITTED on the servers.
    const BEGIN: &'static str;
    /// Executes one statement and decodes its result as `wire` says.
    #[doc(hidden)]
    fn run(&mut self, stmt: &Statement, wire: Wire) -> QueryResult<Reply>;
    /// Executes a [`list_models`](ordered_core::adapter::sql::list_models) statement:
    /// each row's version and the caller's row (`None` for an empty list's row).
    #[doc(hidden)]
    fn load_models<T>(&mut self, stmt: &Statement) -> QueryResult<Vec<(i64, Option<T>)>>
    where
        T: diesel::deserialize::QueryableByName<Self::Backend> + 'static;
}

/// Opens the library's own transaction: `AlreadyInTransaction` inside the caller's.
///
/// On MySQL/MariaDB and SQLite it runs [`ordered_core::adapter::sql::begin_statements`] as kept
/// prepared statements (one round trip each on MySQL, where Diesel's text `BEGIN` is
/// three; no compile on SQLite) and records the transaction in Diesel's transaction
/// manager as `begin_transaction_sql` does, so that the caller's code run inside it
/// (an insert) nests savepoints as usual. Diesel's instrumentation then sees the
/// statements, not a `BeginTransaction` event. On PostgreSQL, where Diesel's text
/// `BEGIN` is one round trip already, it is Diesel's.
pub(crate) fn begin_own<C: OrderedConnection>(conn: &mut C) -> QueryResult<()> {
    use diesel::connection::TransactionDepthChange;
    if C::DIALECT == Dialect::Postgres {
        return AnsiTransactionManager::begin_transaction_sql(conn, C::BEGIN);
    }
    valid_status(conn).and_then(|s| match s.transaction_depth() {
        Some(_) => Err(DieselError::AlreadyInTransaction),
        None => Ok(()),
    })?;
    for sql in ordered_core::adapter::sql::begin_statements(C::DIALECT) {
        conn.run(&ordered_core::adapter::sql::command(sql), Wire::PLAIN)?;
    }
    valid_status(conn)?.change_transaction_depth(TransactionDepthChange::IncreaseDepth)
}

/// Commits the library's own transaction ([`begin_own`]): `COMMIT` as a kept statement
/// on MySQL/MariaDB and SQLite. As Diesel's `commit_transaction` does, a failed `COMMIT`
/// is followed by a `ROLLBACK`, and the connection is marked broken if that fails too.
pub(crate) fn commit_own<C: OrderedConnection>(conn: &mut C) -> QueryResult<()> {
    use diesel::connection::{TransactionDepthChange, TransactionManager};
    if C::DIALECT == Dialect::Postgres {
        return AnsiTransactionManager::commit_transaction(conn);
    }
    match conn.run(
        &ordered_core::adapter::sql::command(ordered_core::adapter::sql::COMMIT),
        Wire::PLAIN,
    ) {
        Ok(_) => {
            valid_status(conn)?.change_transaction_depth(TransactionDepthChange::DecreaseDepth)
        }
        Err(commit_error) => match AnsiTransactionManager::rollback_transaction(conn) {
            Ok(()) => Err(commit_error),
            Err(rollback_error) => {
                AnsiTransactionManager::transaction_manager_status_mut(conn).set_in_error();
                Err(DieselError::RollbackErrorOnCommit {
                    rollback_error: Box::new(rollback_error),
                    commit_error: Box::new(commit_error),
                })
            }
        },
    }
}

/// Diesel's transaction state of `conn`, or `BrokenTransactionManager`.
fn valid_status<C: OrderedConnection>(
    conn: &mut C,
) -> QueryResult<&mut diesel::connection::ValidTransactionManagerStatus> {
    use diesel::connection::{TransactionManager, TransactionManagerStatus};
    match AnsiTransactionManager::transaction_manager_status_mut(conn) {
        TransactionManagerStatus::Valid(s) => Ok(s),
        TransactionManagerStatus::InError => Err(DieselError::BrokenTransactionManager),
    }
}

/// The row shapes of [`ordered_core::adapter::Returns`] and the query with its binds, shared by
/// the sync connections and the diesel-async ones.
#[cfg(any(
    feature = "postgres",
    feature = "mysql",
    feature = "sqlite",
    feature = "async"
))]
pub(crate) mod rows {
    use diesel::backend::Backend;
    use diesel::result::{Error as DieselError, QueryResult};
    use diesel::serialize::ToSql;
    use diesel::sql_types::{BigInt, Binary, Double, HasSqlType, Nullable, Text};
    use ordered_core::adapter::{Arg, Reply, Statement, Wire};
    use ordered_core::{Id, Position, Row};

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

    /// The reply to a [`ordered_core::adapter::Returns::Tagged`] statement.
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

    /// The reply to a [`ordered_core::adapter::Returns::Tagged`] statement on a key table.
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

    /// The reply to a [`ordered_core::adapter::Returns::Listed`] statement.
    pub(crate) fn listed_int(rows: Vec<ListedIntRow>) -> Reply {
        listed(rows.into_iter().map(|r| {
            let row = item(r.o_id, r.o_parent, r.o_pos.map(Position::Int));
            (r.o_version, row)
        }))
    }

    /// The reply to a [`ordered_core::adapter::Returns::Listed`] statement on a key table.
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

    /// A row of [`ordered_core::adapter::sql::list_models`]: the list's version and the
    /// caller's row, `None` for the one row of an empty list.
    pub(crate) struct Versioned<T> {
        pub(crate) version: i64,
        pub(crate) row: Option<T>,
    }

    impl<T, DB> diesel::deserialize::QueryableByName<DB> for Versioned<T>
    where
        DB: Backend,
        T: diesel::deserialize::QueryableByName<DB>,
        i64: diesel::deserialize::FromSql<BigInt, DB>,
    {
        fn build<'a>(
            row: &impl diesel::row::NamedRow<'a, DB>,
        ) -> diesel::deserialize::Result<Self> {
            use diesel::row::NamedRow;
            let version = NamedRow::get::<BigInt, i64>(row, "o_version")?;
            let present = NamedRow::get::<BigInt, i64>(row, "o_present")? != 0;
            let row = if present { Some(T::build(row)?) } else { None };
            Ok(Versioned { version, row })
        }
    }

    #[derive(diesel::QueryableByName)]
    pub(crate) struct CountRow {
        #[diesel(sql_type = BigInt)]
        o_count: i64,
    }

    #[derive(diesel::QueryableByName)]
    pub(crate) struct RecordRow {
        #[diesel(sql_type = Text)]
        o_digest: String,
        #[diesel(sql_type = Text)]
        o_outcome: String,
    }

    #[derive(diesel::QueryableByName)]
    pub(crate) struct LinkRow {
        #[diesel(sql_type = Text)]
        o_id: String,
        #[diesel(sql_type = Text)]
        o_parent: String,
        #[diesel(sql_type = Nullable<Text>)]
        o_link: Option<String>,
    }

    /// The reply to a [`ordered_core::adapter::Returns::Links`] statement.
    pub(crate) fn links(rows: Vec<LinkRow>) -> Reply {
        Reply::Links(
            rows.into_iter()
                .map(|r| (r.o_id, r.o_parent, r.o_link))
                .collect(),
        )
    }

    /// The reply to a [`ordered_core::adapter::Returns::Record`] statement.
    pub(crate) fn record(rows: Vec<RecordRow>) -> Reply {
        Reply::Record(rows.into_iter().next().map(|r| (r.o_digest, r.o_outcome)))
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
    // (`ordered_core::adapter::Wire`), parsed back by the core.

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

    fn decode(e: ordered_core::adapter::sql::DecodeError) -> DieselError {
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

    /// The count of a [`ordered_core::adapter::Returns::Count`] statement (0 for no row).
    pub(crate) fn count(rows: &[CountRow]) -> i64 {
        rows.first().map_or(0, |r| r.o_count)
    }

    /// A core statement as a Diesel query: its text with the backend's placeholders and
    /// its typed binds. Unlike `sql_query`, it may be kept in the connection's prepared
    /// statement cache (`reuse`, see [`reusable`](super::reusable)): keyed by its text and
    /// bind types, a statement of a fixed shape is then prepared once per connection.
    #[derive(Debug, Clone)]
    pub(crate) struct Raw<'s> {
        /// The text between placeholders (one more part than binds), borrowed from the
        /// statement, as are the binds: an operation builds a handful of statements, and
        /// on SQLite, where each runs in microseconds, copying them showed.
        parts: Vec<&'s str>,
        args: &'s [Arg],
        reuse: bool,
    }

    impl diesel::query_builder::QueryId for Raw<'_> {
        type QueryId = ();
        const HAS_STATIC_QUERY_ID: bool = false;
    }

    impl diesel::query_builder::Query for Raw<'_> {
        type SqlType = diesel::sql_types::Untyped;
    }

    impl<DB> diesel::query_builder::QueryFragment<DB> for Raw<'_>
    where
        DB: Backend
            + HasSqlType<BigInt>
            + HasSqlType<Text>
            + HasSqlType<Binary>
            + HasSqlType<Double>,
        i64: ToSql<BigInt, DB>,
        f64: ToSql<Double, DB>,
        String: ToSql<Text, DB>,
        Vec<u8>: ToSql<Binary, DB>,
    {
        fn walk_ast<'b>(
            &'b self,
            mut out: diesel::query_builder::AstPass<'_, 'b, DB>,
        ) -> QueryResult<()> {
            if !self.reuse {
                out.unsafe_to_cache_prepared();
            }
            for (i, part) in self.parts.iter().enumerate() {
                out.push_sql(part);
                match self.args.get(i) {
                    Some(Arg::I64(v)) => out.push_bind_param::<BigInt, _>(v)?,
                    Some(Arg::Text(t)) => out.push_bind_param::<Text, _>(t)?,
                    Some(Arg::Bytes(b)) => out.push_bind_param::<Binary, _>(b)?,
                    Some(Arg::F64(n)) => out.push_bind_param::<Double, _>(n.as_ref())?,
                    None => {}
                }
            }
            Ok(())
        }
    }

    impl<C> diesel::RunQueryDsl<C> for Raw<'_> {}

    /// `stmt` as a Diesel query with its typed binds: the statement's own placeholders
    /// (`$n` on PostgreSQL, `?` elsewhere, in bind order, never inside a quoted name or
    /// a string literal) are where Diesel puts its own.
    pub(crate) fn raw(stmt: &Statement, reuse: bool) -> QueryResult<Raw<'_>> {
        let parts = split_placeholders(&stmt.sql);
        if parts.len() != stmt.args.len() + 1 {
            return Err(DieselError::QueryBuilderError(
                format!(
                    "ordered-core built a statement with {} placeholders for {} binds: {}",
                    parts.len() - 1,
                    stmt.args.len(),
                    stmt.sql
                )
                .into(),
            ));
        }
        Ok(Raw {
            parts,
            args: &stmt.args,
            reuse,
        })
    }

    /// The text around the placeholders of `sql`: `?`, or `$` and digits, outside quotes.
    fn split_placeholders(sql: &str) -> Vec<&str> {
        let bytes = sql.as_bytes();
        let mut parts = Vec::new();
        let mut start = 0;
        let mut quote: Option<u8> = None;
        let mut i = 0;
        while i < bytes.len() {
            let c = bytes[i];
            match quote {
                // a doubled quote inside ends and reopens: the state comes out right
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None if matches!(c, b'\'' | b'"' | b'`') => quote = Some(c),
                None if c == b'?' => {
                    parts.push(&sql[start..i]);
                    start = i + 1;
                }
                None if c == b'$' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                    parts.push(&sql[start..i]);
                    let mut j = i + 1;
                    while bytes.get(j).is_some_and(u8::is_ascii_digit) {
                        j += 1;
                    }
                    start = j;
                    i = j;
                    continue;
                }
                None => {}
            }
            i += 1;
        }
        parts.push(&sql[start..]);
        parts
    }

    #[cfg(test)]
    mod tests {
        use super::split_placeholders;

        #[test]
        fn placeholders_outside_quotes_only() {
            assert_eq!(
                split_placeholders("SELECT '?', \"a?\", `b?` FROM t WHERE x = ? AND y = ?"),
                [
                    "SELECT '?', \"a?\", `b?` FROM t WHERE x = ",
                    " AND y = ",
                    ""
                ]
            );
            assert_eq!(
                split_placeholders("UPDATE t SET p = $1 WHERE id = $12 AND s = '$3'"),
                ["UPDATE t SET p = ", " WHERE id = ", " AND s = '$3'"]
            );
            assert_eq!(split_placeholders("SELECT 1"), ["SELECT 1"]);
        }
    }
}

/// Binds above which a statement is not kept prepared: chunked relabels and id lists
/// vary in length, and each length would be a statement of its own in the cache.
#[cfg(any(
    feature = "postgres",
    feature = "mysql",
    feature = "sqlite",
    feature = "async"
))]
const REUSABLE_BINDS: usize = 16;

/// Whether a statement is kept in the connection's prepared statement cache: one of a
/// fixed shape (locks, reads, one-row writes: a handful of texts per table). Kept, it is
/// prepared once per connection: on SQLite no compile on later runs (most of what an
/// operation costs there), on PostgreSQL a `Bind`/`Execute` of the named statement without
/// a parse, on MySQL/MariaDB an `EXECUTE` without the `PREPARE` and `CLOSE` round trips. A
/// table dropped and created since is planned again by the engine (SQLite re-prepares on
/// `SQLITE_SCHEMA`, PostgreSQL re-plans a statement whose table changed, inside a
/// REPEATABLE READ transaction too, MariaDB re-prepares it: `live::prepared`).
///
/// On MySQL/MariaDB a kept statement that failed is not run again: see
/// [`forget_after_failure`]. diesel-async's `AsyncMysqlConnection` (mysql_async, not the
/// C client) keeps nothing: the deadlock test that shows the reset works is the sync
/// adapter's, and no test shows that a kept mysql_async statement runs again after one.
#[cfg(any(
    feature = "postgres",
    feature = "mysql",
    feature = "sqlite",
    feature = "async"
))]
pub(crate) fn reusable(stmt: &Statement) -> bool {
    stmt.args.len() <= REUSABLE_BINDS
}

/// After a kept statement failed on MySQL/MariaDB, the connection's prepared statements
/// are closed (Diesel's cache is emptied and starts again, unbounded as by default), so
/// that the failed one is prepared anew on its next run.
///
/// The reason is a client library bug, not the server: when an error (a deadlock, a lock
/// wait timeout, a Galera brute-force abort) arrives after the rows' metadata, so in
/// `mysql_stmt_store_result`, Diesel's `mysql_stmt_free_result` leaves the statement of
/// MariaDB Connector/C (3.3 and 3.4: `madb_reset_stmt`) in `MYSQL_STMT_USER_FETCHING` with
/// no rows; its next `mysql_stmt_execute` then waits for good for rows the server never
/// sends, its transaction open and its locks held, while the server shows the connection
/// idle. Closing a statement in that state is safe (it is what a statement prepared anew
/// goes through after every run). The cost is a `PREPARE` of each statement once more, and
/// only after a failure, which the operation retries or reports anyway.
#[cfg(feature = "mysql")]
pub(crate) fn forget_after_failure<C: diesel::Connection>(conn: &mut C) {
    use diesel::connection::CacheSize;
    conn.set_prepared_statement_cache_size(CacheSize::Disabled);
    conn.set_prepared_statement_cache_size(CacheSize::Unbounded);
}

#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
macro_rules! ordered_connection {
    ($conn:ty, $backend:ty, $dialect:expr) => {
        impl sealed::Sealed for $conn {}

        impl OrderedConnection for $conn {
            const DIALECT: Dialect = $dialect;
            const BEGIN: &'static str = ordered_core::adapter::sql::begin($dialect);

            fn run(&mut self, stmt: &Statement, wire: Wire) -> QueryResult<Reply> {
                use diesel::RunQueryDsl;
                use ordered_core::adapter::Returns;

                let kept = reusable(stmt);
                let q = rows::raw(stmt, kept)?;
                let key = wire.key;
                let reply = (|| {
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
                        Returns::Count => {
                            Reply::Count(rows::count(&q.load::<rows::CountRow>(self)?))
                        }
                        Returns::Listed if key => rows::listed_key(q.load(self)?),
                        Returns::Listed => rows::listed_int(q.load(self)?),
                        Returns::Tagged if key => rows::tagged_key(q.load(self)?),
                        Returns::Tagged => rows::tagged_int(q.load(self)?),
                        Returns::Record => rows::record(q.load(self)?),
                        Returns::Links => rows::links(q.load(self)?),
                    })
                })();
                #[cfg(feature = "mysql")]
                if kept && reply.is_err() && matches!($dialect, Dialect::Mysql) {
                    forget_after_failure(self);
                }
                reply
            }

            fn load_models<T>(&mut self, stmt: &Statement) -> QueryResult<Vec<(i64, Option<T>)>>
            where
                T: diesel::deserialize::QueryableByName<$backend> + 'static,
            {
                use diesel::RunQueryDsl;
                let rows = rows::raw(stmt, false)?.load::<rows::Versioned<T>>(self)?;
                Ok(rows.into_iter().map(|r| (r.version, r.row)).collect())
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
