//! The operations, async: each one transaction that locks the parent, reads under the
//! lock, plans in `ordered-core` and writes.

use std::any::TypeId;
use std::future::Future;
use std::pin::Pin;

use ordered_core::retry::{Attempts, Class, Stop, classify_message, is_connection_lost, refine};
use ordered_core::{
    Action, Arg, Changes, Dialect, Id, Listing, Outcome, Placement, Position, Reply, Report,
    Request, Returns, Row, Settings, Spec, Statement, Wire, observe, sql,
};
use sea_orm::{
    ActiveModelBehavior, ActiveModelTrait, ConnectionTrait, DatabaseTransaction, DbBackend, DbErr,
    EntityTrait, IntoActiveModel, SqliteTransactionMode, TransactionOptions, TransactionTrait,
    Value,
};
use tracing::Instrument;

use crate::OrderedEntity;
use crate::error::{Error, Result};

/// Where the caller's insert must put the new row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    /// The collection (parent key).
    pub parent: Id,
    /// The position.
    pub position: Position,
    id: ordered_core::engine::InsertedId,
}

impl Slot {
    pub(crate) fn new(parent: impl Into<Id>, position: Position) -> Slot {
        let parent = parent.into();
        Slot {
            parent,
            position,
            id: Default::default(),
        }
    }

    /// Tells the library the id of the row your insert created (from `RETURNING id` on
    /// PostgreSQL and SQLite), which saves the statement that reads it back by
    /// its slot for the outcome's changes. It must be the new row's id: the changes and
    /// the hook report it as given (for an association table, [`Spec::link`], the
    /// pair of its list and its own key: `Id::from((playlist, track))`).
    pub fn inserted_id(&self, id: impl Into<Id>) {
        let id = id.into();
        self.id.set(id);
    }

    pub(crate) fn reply(&self) -> ordered_core::Reply {
        self.id.reply()
    }

    /// The collection key as the model's scope type (`i64`, `i32`, `i16`, `Uuid` or
    /// `String`), for the insert's scope field; an error usable with `?` in the insert
    /// closure if the key is of another type.
    pub fn scope<K: ordered_core::ScopeKey>(&self) -> Result<K, DbErr> {
        K::from_scope(self.parent).ok_or_else(|| {
            DbErr::Type(format!(
                "the collection key {} is not of the type asked for",
                self.parent
            ))
        })
    }

    /// The position as an integer (gapped and dense strategies); an error usable with
    /// `?` in the insert closure if the table stores keys.
    pub fn int(&self) -> Result<i64, DbErr> {
        self.position
            .as_int()
            .ok_or_else(|| DbErr::Type("the position is a key, not an integer".into()))
    }

    /// The position as a fractional key; an error usable with `?` if the table stores
    /// integers.
    pub fn key(&self) -> Result<String, DbErr> {
        self.position
            .as_key()
            .map(str::to_owned)
            .ok_or_else(|| DbErr::Type("the position is an integer, not a key".into()))
    }
}

/// What an insert returns: the caller's own result and the operation's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inserted<T> {
    /// What the insert closure returned (typically the new model).
    pub value: T,
    /// Position, new version, rows written.
    pub outcome: Outcome,
}

/// The future an insert closure returns.
pub type InsertFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, DbErr>> + Send + 'a>>;

/// The future a `before_commit` hook returns ([`Ordering::apply`]).
pub type HookFuture<'a> = Pin<Box<dyn Future<Output = Result<(), DbErr>> + Send + 'a>>;

type NoInsert = for<'a> fn(&'a DatabaseTransaction, Slot) -> InsertFuture<'a, ()>;
type NoHook = for<'a> fn(&'a DatabaseTransaction, &'a Changes) -> HookFuture<'a>;

/// The one bound generic application code needs for a connection the operations run
/// on: `&DatabaseConnection` (the library owns the transaction and retries) or
/// `&DatabaseTransaction` (a savepoint in yours, no retries). Implemented for every
/// type that meets it.
///
/// ```
/// use ordered_seaorm::{OrderedConnection, OrderedEntity};
///
/// async fn bump_to_top<E: OrderedEntity, C: OrderedConnection>(
///     db: &C,
///     item: i64,
/// ) -> Result<(), ordered_seaorm::Error> {
///     E::ordering().move_to_start(db, item).await?;
///     Ok(())
/// }
/// ```
pub trait OrderedConnection:
    ConnectionTrait + TransactionTrait<Transaction = DatabaseTransaction> + Send + Sync + 'static
{
}

impl<C> OrderedConnection for C where
    C: ConnectionTrait
        + TransactionTrait<Transaction = DatabaseTransaction>
        + Send
        + Sync
        + 'static
{
}

/// The engine of a connection.
pub fn dialect(backend: DbBackend) -> Result<Dialect> {
    match backend {
        DbBackend::Postgres => Ok(Dialect::Postgres),
        DbBackend::MySql => Ok(Dialect::Mysql),
        DbBackend::Sqlite => Ok(Dialect::Sqlite),
        #[allow(unreachable_patterns)]
        _ => Err(Error::Database(DbErr::BackendNotSupported {
            db: "this backend",
            ctx: "ordered-seaorm supports PostgreSQL, MySQL/MariaDB and SQLite",
        })),
    }
}

/// Executes one core statement on `db` and decodes its result as `wire` says.
#[doc(hidden)]
pub async fn run<C: ConnectionTrait>(db: &C, stmt: &Statement, wire: Wire) -> Result<Reply, DbErr> {
    let backend = db.get_database_backend();
    let values: Vec<Value> = stmt
        .args
        .iter()
        .map(|a| match a {
            Arg::I64(v) => Value::from(*v),
            Arg::Text(t) => Value::from(t.clone()),
            Arg::Bytes(b) => Value::from(b.clone()),
        })
        .collect();
    let s = sea_orm::Statement::from_sql_and_values(backend, stmt.sql.clone(), values);
    Ok(match stmt.returns {
        Returns::Nothing => Reply::Affected(db.execute_raw(s).await?.rows_affected()),
        Returns::Rows => {
            let mut rows = Vec::new();
            for r in db.query_all_raw(s).await? {
                rows.push(item_row(&r, wire)?);
            }
            Reply::Rows(rows)
        }
        Returns::Tagged => {
            let mut rows = Vec::new();
            for r in db.query_all_raw(s).await? {
                rows.push((r.try_get::<i64>("", "o_q")?, item_row(&r, wire)?));
            }
            Reply::Tagged(rows)
        }
        Returns::Parent => {
            let mut out = Vec::new();
            for r in db.query_all_raw(s).await? {
                let id = if wire.text {
                    wire.parent_key(&r.try_get::<String>("", "o_id")?)
                        .map_err(decode)?
                } else {
                    Id::Int(r.try_get::<i64>("", "o_id")?)
                };
                out.push((id, r.try_get::<i64>("", "o_version")?));
            }
            Reply::Parents(out)
        }
        Returns::Count => Reply::Count(match db.query_one_raw(s).await? {
            Some(r) => r.try_get::<i64>("", "o_count")?,
            None => 0,
        }),
        Returns::Listed => {
            let mut version = None;
            let mut rows = Vec::new();
            for r in db.query_all_raw(s).await? {
                version = Some(r.try_get::<i64>("", "o_version")?);
                // an empty collection's row has null item columns
                let empty = if wire.text {
                    r.try_get::<Option<String>>("", "o_id")?.is_none()
                } else {
                    r.try_get::<Option<i64>>("", "o_id")?.is_none()
                };
                if !empty {
                    rows.push(item_row(&r, wire)?);
                }
            }
            Reply::Listed { version, rows }
        }
    })
}

fn decode(e: ordered_core::sql::DecodeError) -> DbErr {
    DbErr::Type(e.to_string())
}

/// An item row (`o_id`, `o_parent`, `o_pos`) of a query result.
fn item_row(r: &sea_orm::QueryResult, wire: Wire) -> Result<Row, DbErr> {
    if wire.text {
        return wire
            .row(
                &r.try_get::<String>("", "o_id")?,
                &r.try_get::<String>("", "o_parent")?,
                r.try_get::<String>("", "o_pos")?,
            )
            .map_err(decode);
    }
    let position = if wire.key {
        Position::Key(r.try_get::<String>("", "o_pos")?)
    } else {
        Position::Int(r.try_get::<i64>("", "o_pos")?)
    };
    Ok(Row {
        id: Id::Int(r.try_get("", "o_id")?),
        parent: Id::Int(r.try_get("", "o_parent")?),
        position,
    })
}

/// Commits the library's transaction. On a Galera node (`check`) the commit is sent as
/// a statement of the transaction's own connection, so that [`sql::galera::unchanged`]
/// can run on that session before the connection goes back to the pool: a cluster that
/// aborted the transaction may still answer COMMIT with success. SeaORM's commit then
/// finds no transaction open, which MySQL answers with success.
async fn commit(txn: DatabaseTransaction, check: bool) -> Result<()> {
    let committed = if check {
        match txn.execute_unprepared("COMMIT").await {
            Ok(_) => match run(&txn, &sql::galera::unchanged(), Wire::PLAIN).await {
                Ok(Reply::Count(n)) => sql::galera::check_committed(n).map_err(Error::Ordering),
                Ok(other) => Err(unexpected(&other)),
                Err(e) => Err(Error::CommitUnknown(e)),
            },
            // the connection died while COMMIT was under way: it may have committed
            Err(e) if is_connection_lost(&e.to_string()) => Err(Error::CommitUnknown(e)),
            // refused (a certification failure): rolled back; retried as the error says
            Err(e) => Err(Error::Database(e)),
        }
    } else {
        Ok(())
    };
    let closed = txn.commit().await;
    match (committed, closed) {
        (Err(e), _) => Err(e),
        (Ok(()), Ok(())) => Ok(()),
        (Ok(()), Err(e)) if is_connection_lost(&e.to_string()) => Err(Error::CommitUnknown(e)),
        (Ok(()), Err(e)) => Err(Error::Database(e)),
    }
}

/// A read outside the library's transactions; on MySQL/MariaDB a causal read
/// ([`sql::galera::causal`]), so that on a Galera node it sees every write the cluster
/// committed before it, whichever node took them.
async fn read<C: ConnectionTrait>(db: &C, stmt: &Statement, key: Wire) -> Result<Reply> {
    if db.get_database_backend() == DbBackend::MySql {
        match run(db, &sql::galera::causal(stmt), key).await {
            Err(e) if sql::galera::is_not_galera(&e.to_string()) => {}
            r => return r.map_err(lost_or_database),
        }
    }
    run(db, stmt, key).await.map_err(lost_or_database)
}

/// The item rows of a [`read`] (`list`, `verify`).
async fn read_rows<C: ConnectionTrait>(db: &C, stmt: &Statement, key: Wire) -> Result<Vec<Row>> {
    match read(db, stmt, key).await? {
        Reply::Rows(rows) => Ok(rows),
        other => Err(unexpected(&other)),
    }
}

/// On MySQL/MariaDB: whether the server is a Galera node ([`sql::galera::probe`], which
/// on a node also waits until it has applied the cluster's committed writes).
async fn galera_probe<C: ConnectionTrait>(db: &C) -> Result<bool, DbErr> {
    if db.get_database_backend() != DbBackend::MySql {
        return Ok(false);
    }
    match run(db, &sql::galera::probe(), Wire::PLAIN).await {
        Ok(Reply::Count(on)) => Ok(on == 1),
        Ok(_) => Ok(false),
        Err(e) if sql::galera::is_not_galera(&e.to_string()) => Ok(false),
        Err(e) => Err(e),
    }
}

/// A failed attempt on a Galera node, with the reply to [`sql::galera::unchanged`] run
/// before its `ROLLBACK`: a new GTID means statements escaped the transaction before it
/// failed, and a retry would apply the operation on top of part of itself.
fn escaped(e: Error, unchanged: Result<Reply, DbErr>, locked: Option<Id>) -> Error {
    let count = match unchanged {
        Ok(Reply::Count(n)) => Some(n),
        _ => None,
    };
    match e {
        Error::ConnectionLost(_)
        | Error::Ordering(ordered_core::Error::PartiallyApplied { .. }) => e,
        e => sql::galera::check_escaped(count, locked).map_or(e, Error::Ordering),
    }
}

fn lost_or_database(e: DbErr) -> Error {
    if is_connection_lost(&e.to_string()) {
        Error::ConnectionLost(e)
    } else {
        Error::Database(e)
    }
}

/// The options of the library's transactions: `BEGIN IMMEDIATE` on SQLite, and READ
/// COMMITTED on the servers for a transaction of its own.
fn transaction_options(backend: DbBackend, own: bool) -> TransactionOptions {
    TransactionOptions {
        isolation_level: (backend != DbBackend::Sqlite && own)
            .then_some(sea_orm::IsolationLevel::ReadCommitted),
        sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
        ..TransactionOptions::default()
    }
}

/// Opens a transaction of yours the way the library opens its own: `BEGIN IMMEDIATE`
/// on SQLite (SeaORM's `begin()` opens DEFERRED transactions, in which a write after a
/// read fails with `database is locked` when another connection writes: 104 of 160
/// concurrent moves, in one measurement), READ COMMITTED on PostgreSQL and
/// MySQL/MariaDB. Pass the transaction to the operations; they run in savepoints of
/// it, and [`Error::is_retryable`] tells you when to retry it.
///
/// ```
/// # include!("../doctest_setup.rs");
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let db = setup().await?;
/// let txn = ordered_seaorm::begin(&db).await?;
/// let tracks = track::Entity::ordering();
/// let a = tracks.insert_last(&txn, 1, new_track("A")).await?.value;
/// tracks.insert_before(&txn, 1, a.id, new_track("B")).await?;
/// txn.commit().await?;
/// # Ok(()) }
/// ```
pub async fn begin<C>(db: &C) -> Result<DatabaseTransaction, DbErr>
where
    C: TransactionTrait<Transaction = DatabaseTransaction> + ConnectionTrait,
{
    db.begin_with_options(transaction_options(db.get_database_backend(), true))
        .await
}

/// A failure inside the caller's own transaction on SQLite that is `SQLITE_BUSY`: a
/// DEFERRED transaction (SeaORM's default `begin()`) that read first cannot take the
/// write lock while another connection holds it, and no wait helps; the caller must
/// open its transactions IMMEDIATE ([`crate::begin`]).
fn deferred_busy(backend: DbBackend, err: Error) -> Error {
    match err {
        Error::Database(e)
            if backend == DbBackend::Sqlite
                && ordered_core::retry::reason(&e.to_string()) == "busy" =>
        {
            Error::SqliteDeferred(e)
        }
        other => other,
    }
}

fn classify(e: &DbErr) -> Class {
    classify_message(&e.to_string())
}

/// Operations on one ordered table, with options. Build it from an entity with
/// [`Ordering::of`] (or use the [`OrderedEntity`] methods, which take the defaults), or
/// from a [`Spec`] built at run time with [`Ordering::new`].
///
/// Pass a `&DatabaseConnection` to let the library own the transaction (and retry), or
/// a `&DatabaseTransaction` to run inside yours (a savepoint, no retries). SQLite
/// transactions are opened `BEGIN IMMEDIATE` (`SqliteTransactionMode::Immediate`).
#[derive(Debug, Clone)]
pub struct Ordering {
    s: Settings,
}

impl Ordering {
    /// Operations on the table `spec` describes.
    pub fn new(spec: Spec) -> Self {
        Ordering {
            s: Settings::new(spec),
        }
    }

    /// Operations on the table of entity `E`.
    pub fn of<E: OrderedEntity>() -> Self {
        Self::new(E::spec())
    }

    ordered_core::settings_options!();

    /// Runs `req` in the operation's span.
    async fn execute<C, T, F, H>(
        &self,
        db: &C,
        req: Request,
        insert: Option<F>,
        hook: Option<H>,
    ) -> Result<(Outcome, Option<T>)>
    where
        C: OrderedConnection,
        F: for<'a> FnMut(&'a DatabaseTransaction, Slot) -> InsertFuture<'a, T> + Send,
        H: for<'a> FnMut(&'a DatabaseTransaction, &'a Changes) -> HookFuture<'a> + Send,
        T: Send,
    {
        let span = observe::span(&self.s.spec, &req);
        let result = self
            .attempts(db, req.clone(), insert, hook)
            .instrument(span.clone())
            .await;
        let reported = match &result {
            Ok((o, _)) => Ok(o),
            Err(e) => Err(e.code()),
        };
        observe::finished(&span, &self.s.spec, &req, reported);
        result
    }

    async fn attempts<C, T, F, H>(
        &self,
        db: &C,
        req: Request,
        mut insert: Option<F>,
        mut hook: Option<H>,
    ) -> Result<(Outcome, Option<T>)>
    where
        C: OrderedConnection,
        F: for<'a> FnMut(&'a DatabaseTransaction, Slot) -> InsertFuture<'a, T> + Send,
        H: for<'a> FnMut(&'a DatabaseTransaction, &'a Changes) -> HookFuture<'a> + Send,
        T: Send,
    {
        let nested = TypeId::of::<C>() == TypeId::of::<DatabaseTransaction>();
        // READ COMMITTED on MySQL/MariaDB (no gap locks, so writers on adjacent parents
        // do not deadlock) and on PostgreSQL (under a REPEATABLE READ or SERIALIZABLE
        // session default, writers queued on a busy parent would all fail with 40001
        // and starve); the parent lock serialises the writers of one parent. Only for a
        // transaction of its own: inside the caller's it is a savepoint.
        let options = transaction_options(db.get_database_backend(), !nested);
        let mut attempts = Attempts::new(self.s.retry);
        loop {
            let attempt = attempts.begin();
            let mut locked = None;
            // MySQL/MariaDB: is this a Galera node? On one, the probe is also the causal
            // wait that must come before BEGIN
            let galera = match galera_probe(db).await {
                Ok(g) => Ok(g),
                Err(e) if is_connection_lost(&e.to_string()) => {
                    return Err(Error::ConnectionLost(e));
                }
                // classified below like any other failure (a causal wait that timed out
                // is a lock-wait timeout, retried)
                Err(e) => Err(Error::Database(e)),
            };
            let began = match galera {
                Ok(g) => {
                    attempts.use_policy(self.s.retry_on(g));
                    Ok((g, db.begin_with_options(options).await))
                }
                Err(e) => Err(e),
            };
            let err = match began {
                Err(e) => e,
                Ok((galera, began)) => match began {
                    // a pool hands out a fresh connection; a dead one passed in cannot begin
                    Err(e) if is_connection_lost(&e.to_string()) => {
                        return Err(Error::ConnectionLost(e));
                    }
                    Err(e) => Error::Database(e),
                    Ok(txn) => match self
                        .drive(
                            &txn,
                            &req,
                            insert.as_mut(),
                            hook.as_mut(),
                            galera,
                            &mut locked,
                        )
                        .await
                    {
                        Ok(mut v) => match commit(txn, galera && !nested).await {
                            Ok(()) => {
                                v.0.attempts = attempt;
                                return Ok(v);
                            }
                            Err(e @ (Error::CommitUnknown(_) | Error::ConnectionLost(_))) => {
                                return Err(e);
                            }
                            Err(e) => e,
                        },
                        Err(Error::Database(e)) if is_connection_lost(&e.to_string()) => {
                            // the server rolls back what it did not commit
                            let _ = txn.rollback().await;
                            return Err(Error::ConnectionLost(e));
                        }
                        Err(e) => {
                            // on a node, statements may have escaped the transaction
                            // before the failure: then it is PartiallyApplied, not retried
                            let e = if galera {
                                // asked once more when the first answer is the
                                // abort's deferred error (see the Diesel adapter)
                                let mut unchanged =
                                    run(&txn, &sql::galera::unchanged(), Wire::PLAIN).await;
                                if unchanged.is_err() {
                                    unchanged =
                                        run(&txn, &sql::galera::unchanged(), Wire::PLAIN).await;
                                }
                                escaped(e, unchanged, locked)
                            } else {
                                e
                            };
                            // nothing is left behind; on MySQL this also ends a transaction a
                            // lock-wait timeout left open
                            let _ = txn.rollback().await;
                            e
                        }
                    },
                },
            };
            if nested {
                return Err(deferred_busy(db.get_database_backend(), err));
            }
            let class = match &err {
                Error::Database(e) => refine(&self.s.spec, &e.to_string(), classify(e)),
                Error::Ordering(e) if e.is_retryable() => Class::Retry,
                _ => Class::Fatal,
            };
            // a duplicate on a key the spec does not name: the caller's row, or a unique
            // index on (scope, position) under another name, which the probe can tell
            if matches!(&err, Error::Database(e) if classify(e) == Class::RetryOnce)
                && class == Class::Fatal
            {
                return Err(match self.schema(db, true).await {
                    Err(e @ Error::Ordering(ordered_core::Error::SchemaMismatch { .. })) => e,
                    _ => err,
                });
            }
            match attempts.after_failure(class) {
                Ok(pause) => {
                    observe::retried(&self.s.spec, &req, attempt, &err);
                    tokio::time::sleep(pause).await;
                }
                Err(Stop::Exhausted) => {
                    return Err(match err {
                        Error::Database(last) => Error::RetriesExhausted {
                            attempts: attempt,
                            last,
                        },
                        other => other,
                    });
                }
                Err(Stop::DuplicateAgain) => {
                    // a bug, a table changed behind the library's back, or a constraint
                    // that cannot be deferred (the schema probe tells)
                    let refused = Error::Ordering(ordered_core::Error::Inconsistent(format!(
                        "a duplicate position survived a retry ({err})"
                    )));
                    return Err(match self.schema(db, true).await {
                        Err(e @ Error::Ordering(ordered_core::Error::SchemaMismatch { .. })) => e,
                        _ => refused,
                    });
                }
                Err(Stop::Fatal) => return Err(err),
            }
        }
    }

    async fn drive<T, F, H>(
        &self,
        txn: &DatabaseTransaction,
        req: &Request,
        mut insert: Option<&mut F>,
        mut hook: Option<&mut H>,
        galera: bool,
        locked: &mut Option<Id>,
    ) -> Result<(Outcome, Option<T>)>
    where
        F: for<'a> FnMut(&'a DatabaseTransaction, Slot) -> InsertFuture<'a, T> + Send,
        H: for<'a> FnMut(&'a DatabaseTransaction, &'a Changes) -> HookFuture<'a> + Send,
    {
        let d = dialect(txn.get_database_backend())?;
        let key = self.s.wire();
        let mut op = self.s.operation(d, req);
        if galera {
            op = op.on_galera();
        }
        if hook.is_some() {
            op = op.with_hook();
        }
        let mut reply = Reply::None;
        let mut value = None;
        loop {
            let action = op.next(reply);
            *locked = op.locked().first().copied();
            match action? {
                Action::Execute(stmt) => reply = run(txn, &stmt, key).await?,
                Action::Insert { parent, position } => {
                    let f = insert.as_mut().ok_or_else(|| {
                        ordered_core::Error::Inconsistent(
                            "an insert without a row to insert".into(),
                        )
                    })?;
                    let slot = Slot::new(parent, position);
                    value = Some(f(txn, slot.clone()).await?);
                    reply = slot.reply();
                }
                Action::BeforeCommit(changes) => {
                    if let Some(h) = hook.as_mut() {
                        h(txn, &changes).await?;
                    }
                    reply = Reply::None;
                }
                Action::Done(outcome) => return Ok((outcome, value)),
            }
        }
    }

    async fn write<C>(&self, db: &C, req: Request) -> Result<Outcome>
    where
        C: OrderedConnection,
    {
        self.execute::<C, (), NoInsert, NoHook>(db, req, None, None)
            .await
            .map(|(o, _)| o)
    }

    /// Runs any request but an insert ([`Ordering::insert_with`]) with a hook:
    /// `before_commit` runs your own statements (an outbox row, `updated_at`, an audit
    /// entry) inside the library's transaction, after every write and before
    /// `COMMIT`, with the [`Changes`] in hand. It runs again if the operation is
    /// retried, and an error from it rolls everything back; the library keeps its own
    /// transaction, so its retries stay on.
    ///
    /// ```
    /// # include!("../doctest_setup.rs");
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let db = setup().await?;
    /// # db.execute_unprepared("CREATE TABLE outbox (body TEXT)").await?;
    /// use ordered_seaorm::{Placement, Request};
    /// let tracks = track::Entity::ordering();
    /// let a = tracks.insert_last(&db, 1, new_track("A")).await?.value;
    /// let b = tracks.insert_last(&db, 1, new_track("B")).await?.value;
    /// let moved = tracks
    ///     .apply(&db, Request::Move { item: b.id.into(), at: Placement::Before(a.id.into()) }, |txn, changes| {
    ///         let body = format!("{} rows moved", changes.rows.len());
    ///         Box::pin(async move {
    ///             txn.execute_raw(sea_orm::Statement::from_sql_and_values(
    ///                 txn.get_database_backend(),
    ///                 "INSERT INTO outbox (body) VALUES (?)",
    ///                 [body.into()],
    ///             ))
    ///             .await?;
    ///             Ok(())
    ///         })
    ///     })
    ///     .await?;
    /// assert_eq!(moved.changes.rows[0].id, b.id);
    /// # Ok(()) }
    /// ```
    pub async fn apply<C, H>(&self, db: &C, req: Request, before_commit: H) -> Result<Outcome>
    where
        C: OrderedConnection,
        H: for<'a> FnMut(&'a DatabaseTransaction, &'a Changes) -> HookFuture<'a> + Send,
    {
        let req = req.without_insert()?;
        self.execute::<C, (), NoInsert, H>(db, req, None, Some(before_commit))
            .await
            .map(|(o, _)| o)
    }

    /// [`Ordering::insert`] with a `before_commit` hook (see [`Ordering::apply`]).
    pub async fn insert_with<C, T, F, H>(
        &self,
        db: &C,
        parent: impl Into<Id>,
        at: Placement,
        insert: F,
        before_commit: H,
    ) -> Result<Inserted<T>>
    where
        C: OrderedConnection,
        F: for<'a> FnMut(&'a DatabaseTransaction, Slot) -> InsertFuture<'a, T> + Send,
        H: for<'a> FnMut(&'a DatabaseTransaction, &'a Changes) -> HookFuture<'a> + Send,
        T: Send,
    {
        let parent = parent.into();
        let (outcome, value) = self
            .execute(
                db,
                Request::Insert { parent, at },
                Some(insert),
                Some(before_commit),
            )
            .await?;
        let value = value
            .ok_or_else(|| ordered_core::Error::Inconsistent("the insert did not run".into()))?;
        Ok(Inserted { value, outcome })
    }

    /// Inserts a row at any [`Placement`] of `parent`'s list (the named `insert_*`
    /// methods are shorthands for it).
    pub async fn insert<C, T, F>(
        &self,
        db: &C,
        parent: impl Into<Id>,
        at: Placement,
        f: F,
    ) -> Result<Inserted<T>>
    where
        C: OrderedConnection,
        F: for<'a> FnMut(&'a DatabaseTransaction, Slot) -> InsertFuture<'a, T> + Send,
        T: Send,
    {
        let parent = parent.into();
        let (outcome, value) = self
            .execute::<C, T, F, NoHook>(db, Request::Insert { parent, at }, Some(f), None)
            .await?;
        let value = value
            .ok_or_else(|| ordered_core::Error::Inconsistent("the insert did not run".into()))?;
        Ok(Inserted { value, outcome })
    }
}

impl Ordering {
    /// Inserts your `ActiveModel` at `at` in `parent`'s list: the library sets its scope
    /// and position fields under the lock and inserts it with
    /// [`ActiveModelTrait::insert`] (so your `ActiveModelBehavior` runs), inside its own
    /// transaction. Returns the inserted `Model`. A retried attempt inserts a fresh copy
    /// of `model`.
    ///
    /// ```
    /// # include!("../doctest_setup.rs");
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let db = setup().await?;
    /// use ordered_seaorm::Placement;
    /// let card = track::ActiveModel { title: Set("Intro".into()), ..Default::default() };
    /// let inserted = track::Entity::ordering().insert_model(&db, 1, Placement::Last, card).await?;
    /// assert_eq!((inserted.value.playlist_id, inserted.value.position), (1, 1024));
    /// assert_eq!(inserted.outcome.changes.rows[0].id, inserted.value.id);
    /// # Ok(()) }
    /// ```
    pub async fn insert_model<C, A>(
        &self,
        db: &C,
        parent: impl Into<Id>,
        at: Placement,
        model: A,
    ) -> Result<Inserted<<A::Entity as EntityTrait>::Model>>
    where
        C: OrderedConnection,
        A: ActiveModelTrait + ActiveModelBehavior + Clone + Send + Sync + 'static,
        A::Entity: OrderedEntity,
        <A::Entity as EntityTrait>::Model: IntoActiveModel<A> + Send,
    {
        let parent = parent.into();
        let id_column = self.s.spec.id;
        let link = self.s.spec.is_link();
        self.insert(db, parent, at, move |txn, slot| {
            let mut row = model.clone();
            Box::pin(async move {
                set_slot::<A>(&mut row, &slot)?;
                let inserted = row.insert(txn).await?;
                // the model came back from `INSERT ... RETURNING` (or its re-read): its
                // id saves the read-back by slot
                if let Some(id) = model_id::<A::Entity>(&inserted, id_column) {
                    // an association row is named by its list and its own key
                    match link {
                        true => {
                            if let Ok(full) = Id::tuple([slot.parent, id]) {
                                slot.inserted_id(full);
                            }
                        }
                        false => slot.inserted_id(id),
                    }
                }
                Ok(inserted)
            })
        })
        .await
    }
}

/// The id of `model` in the column named `column`, if it has one of the key types.
fn model_id<E: EntityTrait>(model: &E::Model, column: &str) -> Option<Id> {
    use sea_orm::ModelTrait;
    let column = <E::Column as std::str::FromStr>::from_str(column).ok()?;
    value_key(model.get(column))
}

/// The key a SeaORM value holds.
pub(crate) fn value_key(v: Value) -> Option<Id> {
    match v {
        Value::BigInt(Some(v)) => Some(Id::Int(v)),
        Value::Int(Some(v)) => Some(v.into()),
        Value::SmallInt(Some(v)) => Some(v.into()),
        Value::String(Some(s)) => Id::text(&s).ok(),
        #[cfg(feature = "uuid")]
        Value::Uuid(Some(u)) => Some(Id::Uuid(u)),
        _ => None,
    }
}

/// A key as a SeaORM value, for statements of your own (an outbox row naming a
/// changed item): an integer as `BIGINT`, a UUID as `Uuid` (feature `uuid`; else its
/// hyphenated text), a string as text.
pub fn key_value(id: Id) -> Value {
    key_values(id)
        .into_iter()
        .next()
        .unwrap_or(Value::BigInt(None))
}

/// The SeaORM values a key can take, widest first: a column accepts the one of its
/// own type (an integer key as `i64`, `i32` or `i16`).
pub(crate) fn key_values(id: impl Into<Id>) -> Vec<Value> {
    let id = id.into();
    match id {
        Id::Int(v) => {
            let mut out = vec![Value::from(v)];
            out.extend(i32::try_from(v).ok().map(Value::from));
            out.extend(i16::try_from(v).ok().map(Value::from));
            out
        }
        #[cfg(feature = "uuid")]
        Id::Uuid(u) => vec![Value::from(u)],
        #[cfg(not(feature = "uuid"))]
        Id::Uuid(u) => vec![Value::from(u.hyphenated().to_string())],
        Id::Text(s) => vec![Value::from(s.as_str())],
        // the root list of a nullable scope: NULL, of whichever type the column takes
        Id::Tuple(_) if id == Id::ROOT => vec![
            Value::BigInt(None),
            Value::Int(None),
            Value::SmallInt(None),
            Value::String(None),
            #[cfg(feature = "uuid")]
            Value::Uuid(None),
        ],
        // a composite key is set column by column (set_slot)
        Id::Tuple(_) => Vec::new(),
    }
}

/// Sets `column` of `row` to the key `id`, in the value type the column takes.
fn set_key<A: ActiveModelTrait>(
    row: &mut A,
    column: <A::Entity as EntityTrait>::Column,
    id: Id,
) -> Result<(), DbErr> {
    let mut last = None;
    for v in key_values(id) {
        match row.try_set(column, v) {
            Ok(()) => return Ok(()),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| DbErr::Type(format!("no value for the key {id}"))))
}

/// Sets the scope and position fields of `row` (the position as `i64`, or `i32` for
/// an `i32` field).
fn set_slot<A>(row: &mut A, slot: &Slot) -> Result<(), DbErr>
where
    A: ActiveModelTrait,
    A::Entity: OrderedEntity,
{
    let split = <A::Entity as OrderedEntity>::split_columns();
    if <A::Entity as OrderedEntity>::spec().is_global() {
        // one list: no scope column to set
    } else if split.is_empty() {
        set_key(
            row,
            <A::Entity as OrderedEntity>::scope_column(),
            slot.parent,
        )?;
    } else {
        // a list per several columns: each scope column gets its value
        let columns = std::iter::once(<A::Entity as OrderedEntity>::scope_column()).chain(split);
        for (column, part) in columns.zip(slot.parent.parts()) {
            set_key(row, column, part)?;
        }
    }
    let column = <A::Entity as OrderedEntity>::position_column();
    match &slot.position {
        Position::Key(k) => row.try_set(column, k.clone().into()),
        Position::Int(v) => row.try_set(column, (*v).into()).or_else(|e| {
            let narrow = i32::try_from(*v).map_err(|_| e)?;
            row.try_set(column, narrow.into())
        }),
    }
}

/// The operations' wrappers: the keys before `;` are taken as `impl Into<Id>` (an
/// integer, a `Uuid`, an `Id`), the arguments after it as they are.
macro_rules! insert_ops {
    ($($(#[$doc:meta])* $name:ident($($key:ident),* ; $($arg:ident: $ty:ty),*) => $at:expr;)*) => {
        impl Ordering {
            $(
                $(#[$doc])*
                pub async fn $name<C, T, F>(&self, db: &C, parent: impl Into<Id>, $($key: impl Into<Id>,)* $($arg: $ty,)* insert: F) -> Result<Inserted<T>>
                where
                    C: OrderedConnection,
                    F: for<'a> FnMut(&'a DatabaseTransaction, Slot) -> InsertFuture<'a, T> + Send,
                    T: Send,
                {
                    $(let $key: Id = $key.into();)*
                    self.insert(db, parent.into(), $at, insert).await
                }
            )*
        }
    };
}

insert_ops! {
    /// Inserts at the start of `parent`'s list. `insert` runs your own insert (e.g.
    /// `ActiveModel::insert(txn)`) inside the library's transaction with the slot; it
    /// may run again if the operation is retried.
    insert_first(;) => Placement::First;
    /// Inserts at the end of `parent`'s list.
    insert_last(;) => Placement::Last;
    /// Inserts directly before `anchor`.
    insert_before(anchor;) => Placement::Before(anchor);
    /// Inserts directly after `anchor`.
    insert_after(anchor;) => Placement::After(anchor);
    /// Inserts between `prev` and `next`, which must still be adjacent.
    insert_between(; prev: Option<Id>, next: Option<Id>) => Placement::Between { prev, next };
    /// Inserts at `index` (0-based; the length appends).
    insert_at_index(; index: u64) => Placement::Index(index);
}

macro_rules! write_ops {
    ($($(#[$doc:meta])* $name:ident($($key:ident),* ; $($arg:ident: $ty:ty),*) => $req:expr;)*) => {
        impl Ordering {
            $(
                $(#[$doc])*
                pub async fn $name<C>(&self, db: &C, $($key: impl Into<Id>,)* $($arg: $ty),*) -> Result<Outcome>
                where
                    C: OrderedConnection,
                {
                    $(let $key: Id = $key.into();)*
                    self.write(db, $req).await
                }
            )*
        }
    };
}

write_ops! {
    /// Moves `item` to any [`Placement`] in its own collection.
    move_to(item; at: Placement) => Request::Move { item, at };
    /// Moves `item` directly before `anchor` (same collection).
    move_before(item, anchor;) => Request::Move { item, at: Placement::Before(anchor) };
    /// Moves `item` directly after `anchor` (same collection).
    move_after(item, anchor;) => Request::Move { item, at: Placement::After(anchor) };
    /// Moves `item` between `prev` and `next`, which must still be adjacent without it.
    move_between(item; prev: Option<Id>, next: Option<Id>) => Request::Move { item, at: Placement::Between { prev, next } };
    /// Moves `item` to the start of its list.
    move_to_start(item;) => Request::Move { item, at: Placement::First };
    /// Moves `item` to the end of its list.
    move_to_end(item;) => Request::Move { item, at: Placement::Last };
    /// Moves `item` to `index` (counted without the item).
    move_to_index(item; index: u64) => Request::Move { item, at: Placement::Index(index) };
    /// Moves `item` one place up (nothing if first).
    move_up(item;) => Request::MoveUp { item };
    /// Moves `item` one place down (nothing if last).
    move_down(item;) => Request::MoveDown { item };
    /// Exchanges the places of `a` and `b`.
    swap(a, b;) => Request::Swap { a, b };
    /// Moves `item` into `parent` at `at`, locking both collections in increasing order.
    move_to_parent(item, parent; at: Placement) => Request::MoveToParent { item, parent, at };
    /// Deletes `item`.
    remove(item;) => Request::Remove { item };
    /// Sets the whole order of `parent`; writes only the rows that must move.
    reorder(parent; ids: &[Id]) => Request::Reorder { parent, ids: ids.to_vec() };
    /// Spreads `parent`'s items evenly, keeping their order.
    rebalance(parent;) => Request::Rebalance { parent };
    /// Repairs what [`Ordering::verify`] reports by relabelling in the current order.
    heal(parent;) => Request::Rebalance { parent };
}

impl Ordering {
    /// The items of `parent`, `ORDER BY position, id`.
    pub async fn list<C: ConnectionTrait>(
        &self,
        db: &C,
        parent: impl Into<Id>,
    ) -> Result<Vec<Row>> {
        let parent = self.s.scope_key(parent.into())?;
        let d = dialect(db.get_database_backend())?;
        read_rows(db, &sql::list(d, &self.s.spec, parent), self.s.wire()).await
    }

    /// The items of `parent` with the collection's version, read in one statement, so
    /// the version is the one of this very list (`None` without a version column).
    /// Send both to the client; it sends the version back with its next write
    /// ([`Ordering::expect_version`]), refused with
    /// [`ordered_core::Error::VersionConflict`] if anyone wrote in between.
    pub async fn list_versioned<C: ConnectionTrait>(
        &self,
        db: &C,
        parent: impl Into<Id>,
    ) -> Result<Listing> {
        let parent = self.s.scope_key(parent.into())?;
        let d = dialect(db.get_database_backend())?;
        let stmt = sql::list_versioned(d, &self.s.spec, parent);
        let reply = read(db, &stmt, self.s.wire()).await?;
        Ok(Listing::from_reply(&self.s.spec, parent, reply)?)
    }

    /// The 0-based index of `item` in its list.
    pub async fn index_of<C: ConnectionTrait>(&self, db: &C, item: impl Into<Id>) -> Result<u64> {
        let item = self.s.item_key(item.into())?;
        let d = dialect(db.get_database_backend())?;
        let item_read = ordered_core::plan::Read::Item { id: item };
        let row = match read(
            db,
            &sql::read(d, &self.s.spec, &item_read, false),
            self.s.wire(),
        )
        .await?
        {
            Reply::Rows(rows) => rows.into_iter().next(),
            other => return Err(unexpected(&other)),
        }
        .ok_or(ordered_core::Error::NotFound { id: item })?;
        match run(
            db,
            &sql::count_before(d, &self.s.spec, row.parent, &row.position),
            self.s.wire(),
        )
        .await?
        {
            Reply::Count(n) => Ok(u64::try_from(n).unwrap_or(0)),
            other => Err(unexpected(&other)),
        }
    }

    /// Checks `parent`'s collection: duplicates, out-of-domain positions, over-long
    /// keys, and that the database returns them in byte order.
    pub async fn verify<C: ConnectionTrait>(
        &self,
        db: &C,
        parent: impl Into<Id>,
    ) -> Result<Report> {
        // every row, the ones the row filter leaves out included
        let parent = self.s.scope_key(parent.into())?;
        let d = dialect(db.get_database_backend())?;
        let rows = read_rows(db, &sql::list_all(d, &self.s.spec, parent), self.s.wire()).await?;
        Ok(ordered_core::verify(&self.s.spec, &rows))
    }

    /// Checks the table for what the protocol relies on: a unique constraint on exactly
    /// `(scope, position)`, deferrable on PostgreSQL (the one-statement relabel needs
    /// it), and a CHECK constraint on the position column (the library's domain). A
    /// problem is [`ordered_core::Error::SchemaMismatch`], which says the statement that
    /// fixes it. Run it at startup or in a migration test when adopting an existing
    /// table, beside [`Ordering::check_key_order`]; it reads the catalog, no rows.
    pub async fn check_schema<C: ConnectionTrait>(&self, db: &C) -> Result<()> {
        self.schema(db, false).await
    }

    /// The schema probe, read as [`ordered_core::check_schema`] or, for a refused
    /// duplicate, as its unique-constraint part only.
    async fn schema<C: ConnectionTrait>(&self, db: &C, unique_only: bool) -> Result<()> {
        let d = dialect(db.get_database_backend())?;
        match run(db, &sql::schema_probe(d, &self.s.spec), Wire::PLAIN).await? {
            Reply::Count(n) if unique_only => {
                Ok(ordered_core::verify::check_unique(d, &self.s.spec, n)?)
            }
            Reply::Count(n) => Ok(ordered_core::check_schema(d, &self.s.spec, n)?),
            other => Err(unexpected(&other)),
        }
    }

    /// Checks that the key column sorts by raw bytes, by behaviour rather than by the
    /// catalog: the engine sorts and deduplicates a set of probe strings under the
    /// column's collation, and any difference from byte order is
    /// [`ordered_core::Error::KeyCollation`]. Run it at startup or in a migration test;
    /// integer positions need no check. It reads no rows.
    pub async fn check_key_order<C: ConnectionTrait>(&self, db: &C) -> Result<()> {
        if !self.s.is_key() {
            return Ok(());
        }
        let d = dialect(db.get_database_backend())?;
        let stmt = sql::probe_key_order(d, &self.s.spec, ordered_core::verify::KEY_ORDER_PROBES);
        match run(db, &stmt, self.s.wire()).await? {
            Reply::Rows(rows) => Ok(ordered_core::check_key_order(&self.s.spec, &rows)?),
            other => Err(unexpected(&other)),
        }
    }
}

fn unexpected(r: &Reply) -> Error {
    Error::Ordering(ordered_core::Error::Inconsistent(format!(
        "unexpected reply from the connection: {r:?}"
    )))
}
