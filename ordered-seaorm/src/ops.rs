//! The operations, async: each one transaction that locks the parent, reads under the
//! lock, plans in `ordered-core` and writes.

use std::any::TypeId;
use std::future::Future;
use std::pin::Pin;

use ordered_core::adapter::{Arg, Feed, Finished, Io, Job, Protocol, Returns, Settings};
use ordered_core::adapter::{Reply, Statement, Wire};
use std::marker::PhantomData;

use ordered_core::{
    AppKey, Changes, Dialect, Id, Inserted, Listing, Outcome, Placement, Position, Request, Row,
};
use sea_orm::{
    ActiveModelBehavior, ActiveModelTrait, ConnectionTrait, DatabaseTransaction, DbBackend, DbErr,
    EntityTrait, IntoActiveModel, SqliteTransactionMode, TransactionOptions, TransactionTrait,
    Value,
};
use tracing::Instrument;

use crate::OrderedEntity;
use crate::error::{Db, Error, Result};

/// Where the caller's insert must put the new row: the collection and the position,
/// read in the model's own types with [`Slot::scope`], [`Slot::int`] and [`Slot::key`]
/// (a `DbErr`, usable with `?`, if the type does not fit).
pub type Slot = ordered_core::adapter::Slot<DbErr>;

/// The slot the protocol asked for, reporting in SeaORM's error.
pub(crate) fn slot(parent: Id, position: Position) -> Slot {
    Slot::new(parent, position, DbErr::Type)
}

/// The future an insert closure returns.
pub type InsertFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, DbErr>> + Send + 'a>>;

/// The future a `before_commit` hook returns ([`OrderedTable::apply`]).
pub type HookFuture<'a> = Pin<Box<dyn Future<Output = Result<(), DbErr>> + Send + 'a>>;

type NoInsert = for<'a> fn(&'a DatabaseTransaction, Slot) -> InsertFuture<'a, ()>;
type NoHook<X = Changes> = for<'a> fn(&'a DatabaseTransaction, &'a X) -> HookFuture<'a>;

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
///     item: E::Key,
/// ) -> Result<(), ordered_seaorm::Error> {
///     E::ordered().move_to_start(db, item).await?;
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

/// A core statement as SeaORM's, with its values.
fn statement(backend: DbBackend, stmt: &Statement) -> sea_orm::Statement {
    let values: Vec<Value> = stmt
        .args
        .iter()
        .map(|a| match a {
            Arg::I64(v) => Value::from(*v),
            Arg::Text(t) => Value::from(t.clone()),
            Arg::Bytes(b) => Value::from(b.clone()),
            Arg::F64(n) => Value::from(n.get()),
        })
        .collect();
    sea_orm::Statement::from_sql_and_values(backend, stmt.sql.clone(), values)
}

/// A row of [`list_models`](ordered_core::adapter::sql::list_models): the list's
/// version and the caller's row, `None` for the one row of an empty list.
struct Versioned<M> {
    version: i64,
    row: Option<M>,
}

impl<M: sea_orm::FromQueryResult> sea_orm::FromQueryResult for Versioned<M> {
    fn from_query_result(res: &sea_orm::QueryResult, pre: &str) -> Result<Self, DbErr> {
        let version = res.try_get::<i64>(pre, "o_version")?;
        let present = res.try_get::<i64>(pre, "o_present")? != 0;
        let row = if present {
            Some(M::from_query_result(res, pre)?)
        } else {
            None
        };
        Ok(Versioned { version, row })
    }
}

/// Executes one core statement on `db` and decodes its result as `wire` says.
#[doc(hidden)]
pub async fn run<C: ConnectionTrait>(db: &C, stmt: &Statement, wire: Wire) -> Result<Reply, DbErr> {
    let s = statement(db.get_database_backend(), stmt);
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
        Returns::Record => Reply::Record(match db.query_one_raw(s).await? {
            Some(r) => Some((
                r.try_get::<String>("", "o_digest")?,
                r.try_get::<String>("", "o_outcome")?,
            )),
            None => None,
        }),
        Returns::Links => {
            let mut out = Vec::new();
            for r in db.query_all_raw(s).await? {
                out.push((
                    r.try_get::<String>("", "o_id")?,
                    r.try_get::<String>("", "o_parent")?,
                    r.try_get::<Option<String>>("", "o_link")?,
                ));
            }
            Reply::Links(out)
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

fn decode(e: ordered_core::adapter::sql::DecodeError) -> DbErr {
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

/// The options of the library's transactions: `BEGIN IMMEDIATE` on SQLite, and READ
/// COMMITTED on the servers for a transaction of its own (no gap locks on MySQL, so
/// writers on adjacent parents do not deadlock; no 40001 storms on PostgreSQL under a
/// stricter session default). The parent lock serialises the writers of one parent.
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
/// let tracks = track::Entity::ordered();
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

/// Operations on one ordered table, with options. Build it from an entity with
/// [`OrderedTable::of`] (or use the [`OrderedEntity`] methods, which take the defaults), or
/// from a [`Spec`](crate::Spec) built at run time with [`OrderedTable::new`].
///
/// Pass a `&DatabaseConnection` to let the library own the transaction (and retry), or
/// a `&DatabaseTransaction` to run inside yours (a savepoint, no retries). SQLite
/// transactions are opened `BEGIN IMMEDIATE` (`SqliteTransactionMode::Immediate`).
pub struct OrderedTable<K = Id, P = Id> {
    s: Settings,
    keys: PhantomData<fn() -> (K, P)>,
}

ordered_core::handle!(OrderedTable);

impl OrderedTable {
    /// Operations on the table of entity `E`, in its key types.
    pub fn of<E: OrderedEntity>() -> OrderedTable<E::Key, E::Scope> {
        OrderedTable {
            s: Settings::new(E::spec()),
            keys: PhantomData,
        }
    }
}

impl<K: AppKey, P: AppKey> OrderedTable<K, P> {
    /// Runs a write as one transaction, with retries when the library owns it, in the
    /// operation's span.
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
        H: for<'a> FnMut(&'a DatabaseTransaction, &'a Changes<K, P>) -> HookFuture<'a> + Send,
        T: Send,
    {
        let d = dialect(db.get_database_backend())?;
        let p = Protocol::new(&self.s, d, Job::Write(Box::new(req)), hook.is_some());
        let span = p.span().clone();
        let (f, value) = drive(db, self.s.wire(), p, insert, hook, Changes::typed::<K, P>)
            .instrument(span)
            .await?;
        Ok((f.into_outcome()?, value))
    }

    /// A read: statements outside any transaction, on any connection.
    async fn read<C: ConnectionTrait>(&self, db: &C, job: Job) -> Result<Finished> {
        let d = dialect(db.get_database_backend())?;
        let mut p = Protocol::<Db>::new(&self.s, d, job, false);
        let mut feed = Feed::Start;
        loop {
            feed = match p.next(feed) {
                Io::Execute(stmt) => run(db, &stmt, self.s.wire()).await.map_err(Db).into(),
                Io::Done(f) => return Ok(f),
                Io::Fail(f) => return Err(f.into()),
                other => Feed::Refused(ordered_core::Error::Inconsistent(format!(
                    "a read asked for {other:?}"
                ))),
            };
        }
    }

    /// A job that may open a transaction (`ensure_ordering`), through the writers' loop.
    pub(crate) async fn schema_job<C: OrderedConnection>(
        &self,
        db: &C,
        job: Job,
    ) -> Result<Finished> {
        let d = dialect(db.get_database_backend())?;
        let p = Protocol::new(&self.s, d, job, false);
        drive::<C, (), NoInsert, NoHook<Changes>, Changes>(db, self.s.wire(), p, None, None, Ok)
            .await
            .map(|(f, _)| f)
    }

    async fn write<C>(&self, db: &C, req: Request) -> Result<Outcome<K, P>>
    where
        C: OrderedConnection,
    {
        let (o, _) = self
            .execute::<C, (), NoInsert, NoHook<Changes<K, P>>>(db, req, None, None)
            .await?;
        Ok(o.typed()?)
    }

    /// Runs any request but an insert ([`OrderedTable::insert_with`]) with a hook:
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
    /// let tracks = track::Entity::ordered();
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
    pub async fn apply<C, H>(&self, db: &C, req: Request, before_commit: H) -> Result<Outcome<K, P>>
    where
        C: OrderedConnection,
        H: for<'a> FnMut(&'a DatabaseTransaction, &'a Changes<K, P>) -> HookFuture<'a> + Send,
    {
        let req = req.without_insert()?;
        let (o, _) = self
            .execute::<C, (), NoInsert, H>(db, req, None, Some(before_commit))
            .await?;
        Ok(o.typed()?)
    }

    /// [`OrderedTable::insert`] with a `before_commit` hook (see [`OrderedTable::apply`]).
    pub async fn insert_with<C, T, F, H>(
        &self,
        db: &C,
        parent: impl Into<P>,
        at: Placement,
        insert: F,
        before_commit: H,
    ) -> Result<Inserted<T, K, P>>
    where
        C: OrderedConnection,
        F: for<'a> FnMut(&'a DatabaseTransaction, Slot) -> InsertFuture<'a, T> + Send,
        H: for<'a> FnMut(&'a DatabaseTransaction, &'a Changes<K, P>) -> HookFuture<'a> + Send,
        T: Send,
    {
        let parent = ordered_core::adapter::key::<P>(&parent.into())?;
        let (outcome, value) = self
            .execute(
                db,
                Request::Insert { parent, at },
                Some(insert),
                Some(before_commit),
            )
            .await?;
        Ok(Inserted::of(outcome, value)?.typed()?)
    }

    /// Inserts a row at any [`Placement`] of `parent`'s list (the named `insert_*`
    /// methods are shorthands for it).
    pub async fn insert<C, T, F>(
        &self,
        db: &C,
        parent: impl Into<P>,
        at: Placement,
        f: F,
    ) -> Result<Inserted<T, K, P>>
    where
        C: OrderedConnection,
        F: for<'a> FnMut(&'a DatabaseTransaction, Slot) -> InsertFuture<'a, T> + Send,
        T: Send,
    {
        let parent = ordered_core::adapter::key::<P>(&parent.into())?;
        let (outcome, value) = self
            .execute::<C, T, F, NoHook<Changes<K, P>>>(
                db,
                Request::Insert { parent, at },
                Some(f),
                None,
            )
            .await?;
        Ok(Inserted::of(outcome, value)?.typed()?)
    }
}

impl<K: AppKey, P: AppKey> OrderedTable<K, P> {
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
    /// let inserted = track::Entity::ordered().insert_model(&db, 1, Placement::Last, card).await?;
    /// assert_eq!((inserted.value.playlist_id, inserted.value.position), (1, 1024));
    /// assert_eq!(inserted.outcome.changes.rows[0].id, inserted.value.id);
    /// # Ok(()) }
    /// ```
    pub async fn insert_model<C, A>(
        &self,
        db: &C,
        parent: impl Into<P>,
        at: Placement,
        model: A,
    ) -> Result<Inserted<<A::Entity as EntityTrait>::Model, K, P>>
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
        // an `f64` field, or a decimal one from the exact decimal text
        Position::Num(n) => row.try_set(column, n.get().into()).or_else(|e| {
            let _text = n.to_string();
            #[cfg(feature = "decimal")]
            if let Ok(v) = <sea_orm::prelude::Decimal as std::str::FromStr>::from_str(&_text)
                && row.try_set(column, v.into()).is_ok()
            {
                return Ok(());
            }
            #[cfg(feature = "bigdecimal")]
            if let Ok(v) = <sea_orm::prelude::BigDecimal as std::str::FromStr>::from_str(&_text)
                && row.try_set(column, v.into()).is_ok()
            {
                return Ok(());
            }
            Err(e)
        }),
    }
}

impl<K: AppKey, P: AppKey> OrderedTable<K, P> {
    /// The items of `parent` as your own rows (the entity's `Model`, or any
    /// `FromQueryResult` type), `ORDER BY position, id`, with the list's version, in
    /// one statement ([`list_versioned`](Self::list_versioned) with your columns
    /// instead of the library's). A missing parent is
    /// [`ParentNotFound`](ordered_core::Error::ParentNotFound).
    pub async fn list_models<M, C>(&self, db: &C, parent: impl Into<P>) -> Result<Listing<M>>
    where
        C: ConnectionTrait,
        M: sea_orm::FromQueryResult + Send + Sync,
    {
        use sea_orm::FromQueryResult;
        let parent = self
            .s
            .scope_key(ordered_core::adapter::key::<P>(&parent.into())?)?;
        let d = dialect(db.get_database_backend())?;
        let stmt = ordered_core::adapter::sql::list_models(d, &self.s.spec, parent);
        let rows = Versioned::<M>::find_by_statement(statement(db.get_database_backend(), &stmt))
            .all(db)
            .await
            .map_err(Error::from)?;
        Ok(Listing::of_models(
            &self.s.spec,
            parent,
            rows.into_iter().map(|r| (r.version, r.row)),
        )?)
    }

    ordered_core::operations! {
        async;
        conn: &C where C: OrderedConnection;
        reads: ConnectionTrait;
        insert: where
            F: for<'a> FnMut(&'a DatabaseTransaction, Slot) -> InsertFuture<'a, T> + Send,
            T: Send,
    }
}

/// The adapter's loop: feeds the core's [`Protocol`] with the results of the I/O it
/// asks for, until it is done; it sleeps on tokio's timer.
async fn drive<C, T, F, H, X>(
    db: &C,
    wire: Wire,
    mut p: Protocol<Db>,
    mut insert: Option<F>,
    mut hook: Option<H>,
    typed: fn(Changes) -> std::result::Result<X, ordered_core::Error>,
) -> Result<(Finished, Option<T>)>
where
    C: OrderedConnection,
    F: for<'a> FnMut(&'a DatabaseTransaction, Slot) -> InsertFuture<'a, T> + Send,
    H: for<'a> FnMut(&'a DatabaseTransaction, &'a X) -> HookFuture<'a> + Send,
    T: Send,
{
    // on a transaction of the caller's, `begin` opens a savepoint
    let nested = TypeId::of::<C>() == TypeId::of::<DatabaseTransaction>();
    let options = transaction_options(db.get_database_backend(), !nested);
    let mut txn: Option<DatabaseTransaction> = None;
    let mut value = None;
    let mut feed = Feed::Start;
    loop {
        feed = match p.next(feed) {
            Io::Execute(stmt) => match &txn {
                Some(t) => run(t, &stmt, wire).await,
                None => run(db, &stmt, wire).await,
            }
            .map_err(Db)
            .into(),
            Io::Begin => match db.begin_with_options(options).await {
                Ok(t) => {
                    txn = Some(t);
                    Feed::Began { nested }
                }
                Err(e) => Feed::Failed(Db(e)),
            },
            Io::Insert { parent, position } => match (insert.as_mut(), &txn) {
                (Some(f), Some(t)) => {
                    let slot = slot(parent, position);
                    // the reply after the insert: it may have reported its id
                    let result = f(t, slot.clone()).await.map_err(Db);
                    Feed::inserted(slot.reply(), result, &mut value)
                }
                _ => Feed::no_insert(),
            },
            Io::BeforeCommit(changes) => match (hook.as_mut(), &txn) {
                (Some(h), Some(t)) => match typed(changes) {
                    Ok(changes) => h(t, &changes).await.map_err(Db).into(),
                    Err(e) => Feed::Refused(e),
                },
                _ => Feed::Ok,
            },
            // the COMMIT as a statement of the transaction's own connection, so that
            // the check that follows runs on that session before the connection goes
            // back to the pool; SeaORM's commit at `Release` then finds no transaction
            // open, which MySQL answers with success
            Io::Commit {
                then_check: true, ..
            } => match &txn {
                Some(t) => t
                    .execute_unprepared("COMMIT")
                    .await
                    .map(|_| ())
                    .map_err(Db)
                    .into(),
                None => Feed::Ok,
            },
            Io::Commit { .. } | Io::Release => match txn.take() {
                Some(t) => t.commit().await.map_err(Db).into(),
                None => Feed::Ok,
            },
            // a failed ROLLBACK leaves nothing to do: the server ends the transaction,
            // and sqlx's connection stays usable
            Io::Rollback { .. } => {
                if let Some(t) = txn.take() {
                    let _ = t.rollback().await;
                }
                Feed::Ok
            }
            Io::Sleep(pause) => {
                tokio::time::sleep(pause).await;
                Feed::Ok
            }
            Io::Done(f) => return Ok((f, value)),
            Io::Fail(f) => return Err(f.into()),
        };
    }
}
