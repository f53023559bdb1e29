//! Every operation from async Diesel ([diesel-async] 0.9): the same names, arguments,
//! results and errors as the sync [`crate::OrderedTable`], as `async fn`s over
//! `AsyncPgConnection` (feature `async-postgres`), `AsyncMysqlConnection`
//! (`async-mysql`) and `SyncConnectionWrapper<SqliteConnection>` (`async-sqlite`).
//! Pooled connections (deadpool, bb8) work as `&mut *pooled`. The same
//! `#[derive(Ordered)]` serves both: [`OrderedTable::of`] takes the model.
//!
//! The protocol is the same state machine as the sync adapter's: own transactions (READ
//! COMMITTED on the servers, `BEGIN IMMEDIATE` on SQLite), a savepoint inside the
//! caller's transaction (no retries), classified retries that sleep on tokio's timer
//! (diesel-async's connections run on tokio), `ConnectionLost` and `CommitUnknown`, and
//! the Galera checks on MySQL/MariaDB.
//!
//! ```no_run
//! # use diesel::prelude::*;
//! # diesel::table! { tracks (id) { id -> BigInt, playlist_id -> BigInt, title -> Text, position -> BigInt, } }
//! # diesel::table! { playlists (id) { id -> BigInt, version -> BigInt, } }
//! # diesel::allow_tables_to_appear_in_same_query!(tracks, playlists);
//! # #[derive(Queryable, Selectable, ordered_diesel::Ordered)]
//! # #[diesel(table_name = tracks)]
//! # #[ordered(scope = playlist_id, parent = playlists, version = version)]
//! # struct Track { id: i64, playlist_id: i64, title: String, position: i64 }
//! use diesel_async::{AsyncPgConnection, RunQueryDsl};
//! use ordered_diesel::async_diesel::OrderedTable;
//!
//! # async fn demo(conn: &mut AsyncPgConnection, playlist: i64, intro: i64) -> Result<(), ordered_diesel::Error> {
//! let tracks = OrderedTable::of::<Track>();
//! let demo = tracks
//!     .insert_last(conn, playlist, |conn, slot| {
//!         Box::pin(async move {
//!             diesel::insert_into(tracks::table)
//!                 .values((
//!                     tracks::playlist_id.eq(slot.scope::<i64>()?),
//!                     tracks::title.eq("Demo"),
//!                     tracks::position.eq(slot.int()?),
//!                 ))
//!                 .returning(tracks::id)
//!                 .get_result::<i64>(conn)
//!                 .await
//!         })
//!     })
//!     .await?
//!     .value;
//! tracks.move_before(conn, demo, intro).await?;
//! # Ok(()) }
//! ```
//!
//! [diesel-async]: https://docs.rs/diesel-async

use std::future::Future;
use std::pin::Pin;

use diesel::result::{Error as DieselError, QueryResult};
use ordered_core::adapter::{Feed, Finished, Io, Job, Protocol, Settings};
use ordered_core::adapter::{Reply, Statement, Wire, sql};
use ordered_core::{
    AppKey, Changes, Dialect, Id, Inserted, Listing, Ordered, Outcome, Placement, Request,
};
use tracing::Instrument;

use crate::error::{Db, Result};
use crate::ops::Slot;

/// What an insert closure returns: a boxed future of the caller's own insert, which
/// borrows the connection (`|conn, slot| Box::pin(async move { ... })`).
pub type InsertFuture<'a, T> = Pin<Box<dyn Future<Output = QueryResult<T>> + Send + 'a>>;

/// The future a `before_commit` hook returns ([`OrderedTable::apply`]).
pub type HookFuture<'a> = Pin<Box<dyn Future<Output = QueryResult<()>> + Send + 'a>>;

/// What a write without a hook passes for it.
type NoHook<C, X = Changes> = for<'a> fn(&'a mut C, &'a X) -> HookFuture<'a>;
/// What a write that inserts nothing passes for the insert.
type NoInsert<C> = for<'a> fn(&'a mut C, Slot) -> InsertFuture<'a, ()>;

mod sealed {
    pub trait Sealed {}
}

/// An async Diesel connection the library can drive: `AsyncPgConnection`,
/// `AsyncMysqlConnection` and `SyncConnectionWrapper<SqliteConnection>`, each behind its
/// cargo feature. Pooled connections work through `&mut *pooled`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an async connection `ordered-diesel` supports",
    note = "use `AsyncPgConnection`, `AsyncMysqlConnection` or `SyncConnectionWrapper<SqliteConnection>` (features `async-postgres`, `async-mysql`, `async-sqlite`); for a pooled connection pass `&mut *pooled`"
)]
pub trait AsyncOrderedConnection: Send + sealed::Sealed {
    /// The engine.
    const DIALECT: Dialect;
    /// Diesel's backend of the engine (the caller's rows of `list_models` load from it).
    type Backend: diesel::backend::Backend;
    /// Opens the library's own transaction ([`sql::begin`]); `AlreadyInTransaction`
    /// inside the caller's.
    #[doc(hidden)]
    fn begin_own(&mut self) -> impl Future<Output = QueryResult<()>> + Send;
    /// Opens a savepoint inside the caller's transaction.
    #[doc(hidden)]
    fn begin_savepoint(&mut self) -> impl Future<Output = QueryResult<()>> + Send;
    /// Commits the innermost transaction or releases the savepoint.
    #[doc(hidden)]
    fn commit(&mut self) -> impl Future<Output = QueryResult<()>> + Send;
    /// Rolls back the innermost transaction or savepoint.
    #[doc(hidden)]
    fn rollback(&mut self) -> impl Future<Output = QueryResult<()>> + Send;
    /// Executes one statement and decodes its result.
    #[doc(hidden)]
    fn run(
        &mut self,
        stmt: &Statement,
        wire: Wire,
    ) -> impl Future<Output = QueryResult<Reply>> + Send;
    /// Executes a [`list_models`](sql::list_models) statement: each row's version and
    /// the caller's row (`None` for an empty list's row).
    #[doc(hidden)]
    fn load_models<T>(
        &mut self,
        stmt: &Statement,
    ) -> impl Future<Output = QueryResult<Vec<(i64, Option<T>)>>> + Send
    where
        T: diesel::deserialize::QueryableByName<Self::Backend> + Send + 'static;
}

#[cfg(any(feature = "async-postgres", feature = "async-mysql"))]
macro_rules! async_server_connection {
    ($conn:ty, $backend:ty, $dialect:expr) => {
        impl sealed::Sealed for $conn {}

        impl AsyncOrderedConnection for $conn {
            const DIALECT: Dialect = $dialect;
            type Backend = $backend;

            async fn load_models<T>(&mut self, stmt: &Statement) -> QueryResult<Vec<(i64, Option<T>)>>
            where
                T: diesel::deserialize::QueryableByName<$backend> + Send + 'static,
            {
                use diesel_async::RunQueryDsl;
                let rows = crate::conn::rows::raw(stmt, false)?
                    .load::<crate::conn::rows::Versioned<T>>(self)
                    .await?;
                Ok(rows.into_iter().map(|r| (r.version, r.row)).collect())
            }

            async fn begin_own(&mut self) -> QueryResult<()> {
                diesel_async::AnsiTransactionManager::begin_transaction_sql(
                    self,
                    sql::begin($dialect),
                )
                .await
            }

            async fn begin_savepoint(&mut self) -> QueryResult<()> {
                <diesel_async::AnsiTransactionManager as diesel_async::TransactionManager<
                                                                    Self,
                                                                >>::begin_transaction(self)
                                                                .await
            }

            async fn commit(&mut self) -> QueryResult<()> {
                <diesel_async::AnsiTransactionManager as diesel_async::TransactionManager<
                                                                    Self,
                                                                >>::commit_transaction(self)
                                                                .await
            }

            async fn rollback(&mut self) -> QueryResult<()> {
                <diesel_async::AnsiTransactionManager as diesel_async::TransactionManager<
                                                                    Self,
                                                                >>::rollback_transaction(self)
                                                                .await
            }

            async fn run(&mut self, stmt: &Statement, wire: Wire) -> QueryResult<Reply> {
                use crate::conn::rows;
                use diesel_async::RunQueryDsl;
                use ordered_core::adapter::Returns;

                // not on MySQL: see `conn::reusable`
                let kept = !matches!($dialect, Dialect::Mysql) && crate::conn::reusable(stmt);
                let q = rows::raw(stmt, kept)?;
                let key = wire.key;
                Ok(match stmt.returns {
                    Returns::Nothing => Reply::Affected(q.execute(self).await? as u64),
                    Returns::Rows if wire.text => rows::text_rows(wire, q.load(self).await?)?,
                    Returns::Parent if wire.text => {
                        rows::text_parents(wire, q.load(self).await?)?
                    }
                    Returns::Listed if wire.text => {
                        rows::text_listed(wire, q.load(self).await?)?
                    }
                    Returns::Tagged if wire.text => {
                        rows::text_tagged(wire, q.load(self).await?)?
                    }
                    Returns::Rows if key => Reply::Rows(
                        q.load::<rows::KeyRow>(self)
                            .await?
                            .into_iter()
                            .map(Into::into)
                            .collect(),
                    ),
                    Returns::Rows => Reply::Rows(
                        q.load::<rows::IntRow>(self)
                            .await?
                            .into_iter()
                            .map(Into::into)
                            .collect(),
                    ),
                    Returns::Parent => Reply::Parents(
                        q.load::<rows::ParentRow>(self)
                            .await?
                            .into_iter()
                            .map(Into::into)
                            .collect(),
                    ),
                    Returns::Count => {
                        Reply::Count(rows::count(&q.load::<rows::CountRow>(self).await?))
                    }
                    Returns::Listed if key => rows::listed_key(q.load(self).await?),
                    Returns::Listed => rows::listed_int(q.load(self).await?),
                    Returns::Tagged if key => rows::tagged_key(q.load(self).await?),
                    Returns::Tagged => rows::tagged_int(q.load(self).await?),
                    Returns::Record => rows::record(q.load(self).await?),
                    Returns::Links => rows::links(q.load(self).await?),
                })
            }
        }
    };
}

#[cfg(feature = "async-postgres")]
async_server_connection!(
    diesel_async::AsyncPgConnection,
    diesel::pg::Pg,
    Dialect::Postgres
);
#[cfg(feature = "async-mysql")]
async_server_connection!(
    diesel_async::AsyncMysqlConnection,
    diesel::mysql::Mysql,
    Dialect::Mysql
);

/// SQLite through diesel-async's wrapper: each step runs the sync adapter's statement
/// on tokio's blocking pool, against the wrapper's own `SqliteConnection` (whose
/// transaction state the wrapper shares).
#[cfg(feature = "async-sqlite")]
mod sqlite {
    use diesel::SqliteConnection;
    use diesel::connection::{AnsiTransactionManager, TransactionManager};
    use diesel::result::QueryResult;
    use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
    use ordered_core::Dialect;
    use ordered_core::adapter::{Reply, Statement, Wire, sql};

    use super::{AsyncOrderedConnection, sealed};

    impl sealed::Sealed for SyncConnectionWrapper<SqliteConnection> {}

    impl AsyncOrderedConnection for SyncConnectionWrapper<SqliteConnection> {
        const DIALECT: Dialect = Dialect::Sqlite;
        type Backend = diesel::sqlite::Sqlite;

        async fn load_models<T>(&mut self, stmt: &Statement) -> QueryResult<Vec<(i64, Option<T>)>>
        where
            T: diesel::deserialize::QueryableByName<diesel::sqlite::Sqlite> + Send + 'static,
        {
            let stmt = stmt.clone();
            self.spawn_blocking(move |c| crate::OrderedConnection::load_models::<T>(c, &stmt))
                .await
        }

        async fn begin_own(&mut self) -> QueryResult<()> {
            self.spawn_blocking(|c| {
                AnsiTransactionManager::begin_transaction_sql(c, sql::begin(Dialect::Sqlite))
            })
            .await
        }

        async fn begin_savepoint(&mut self) -> QueryResult<()> {
            self.spawn_blocking(|c| {
                <AnsiTransactionManager as TransactionManager<SqliteConnection>>::begin_transaction(
                    c,
                )
            })
            .await
        }

        async fn commit(&mut self) -> QueryResult<()> {
            self.spawn_blocking(|c| {
                <AnsiTransactionManager as TransactionManager<SqliteConnection>>::commit_transaction(c)
            })
            .await
        }

        async fn rollback(&mut self) -> QueryResult<()> {
            self.spawn_blocking(|c| {
                <AnsiTransactionManager as TransactionManager<SqliteConnection>>::rollback_transaction(c)
            })
            .await
        }

        async fn run(&mut self, stmt: &Statement, wire: Wire) -> QueryResult<Reply> {
            let stmt = stmt.clone();
            self.spawn_blocking(move |c| crate::OrderedConnection::run(c, &stmt, wire))
                .await
        }
    }
}

/// The async operations on one ordered table, with options: the same builder and the
/// same operations as [`crate::OrderedTable`], awaited.
pub struct OrderedTable<K = Id, P = Id> {
    s: Settings,
    keys: std::marker::PhantomData<fn() -> (K, P)>,
}

impl<K, P> From<crate::OrderedTable<K, P>> for OrderedTable<K, P> {
    /// The same table and options, for async connections.
    fn from(o: crate::OrderedTable<K, P>) -> Self {
        OrderedTable {
            s: o.s,
            keys: std::marker::PhantomData,
        }
    }
}

crate::ops::settings_builders!(OrderedTable);

impl<K: AppKey, P: AppKey> OrderedTable<K, P> {
    /// Runs a write as one transaction, with retries when the library owns it, in the
    /// operation's span.
    async fn execute<C, T, F, H>(
        &self,
        conn: &mut C,
        req: Request,
        insert: Option<F>,
        hook: Option<H>,
    ) -> Result<(Outcome, Option<T>)>
    where
        C: AsyncOrderedConnection,
        F: for<'a> FnMut(&'a mut C, Slot) -> InsertFuture<'a, T> + Send,
        H: for<'a> FnMut(&'a mut C, &'a Changes<K, P>) -> HookFuture<'a> + Send,
        T: Send,
    {
        let p = Protocol::new(
            &self.s,
            C::DIALECT,
            Job::Write(Box::new(req)),
            hook.is_some(),
        );
        let span = p.span().clone();
        let drive = drive(conn, self.s.wire(), p, insert, hook, Changes::typed::<K, P>);
        let (f, value) = drive.instrument(span).await?;
        Ok((f.into_outcome()?, value))
    }

    async fn read<C: AsyncOrderedConnection>(&self, conn: &mut C, job: Job) -> Result<Finished> {
        let p = Protocol::new(&self.s, C::DIALECT, job, false);
        drive::<C, (), NoInsert<C>, NoHook<C>, Changes>(conn, self.s.wire(), p, None, None, Ok)
            .await
            .map(|(f, _)| f)
    }

    async fn schema_job<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        job: Job,
    ) -> Result<Finished> {
        self.read(conn, job).await
    }

    async fn write<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        req: Request,
    ) -> Result<Outcome<K, P>> {
        let (o, _) = self
            .execute::<C, (), NoInsert<C>, NoHook<C, Changes<K, P>>>(conn, req, None, None)
            .await?;
        Ok(o.typed()?)
    }

    /// [`crate::OrderedTable::apply`]: any request but an insert, with a
    /// `before_commit` hook that runs your statements in the library's transaction,
    /// after every write and before `COMMIT`, with the [`Changes`] in hand (retried with
    /// the operation, rolled back with it).
    pub async fn apply<C, H>(
        &self,
        conn: &mut C,
        req: Request,
        before_commit: H,
    ) -> Result<Outcome<K, P>>
    where
        C: AsyncOrderedConnection,
        H: for<'a> FnMut(&'a mut C, &'a Changes<K, P>) -> HookFuture<'a> + Send,
    {
        let req = req.without_insert()?;
        let (o, _) = self
            .execute::<C, (), NoInsert<C>, H>(conn, req, None, Some(before_commit))
            .await?;
        Ok(o.typed()?)
    }

    /// [`crate::OrderedTable::insert_with`]: an insert with a `before_commit` hook.
    pub async fn insert_with<C, T, F, H>(
        &self,
        conn: &mut C,
        parent: impl Into<P>,
        at: Placement,
        insert: F,
        before_commit: H,
    ) -> Result<Inserted<T, K, P>>
    where
        C: AsyncOrderedConnection,
        F: for<'a> FnMut(&'a mut C, Slot) -> InsertFuture<'a, T> + Send,
        H: for<'a> FnMut(&'a mut C, &'a Changes<K, P>) -> HookFuture<'a> + Send,
        T: Send,
    {
        let parent = ordered_core::adapter::key::<P>(&parent.into())?;
        let req = Request::Insert { parent, at };
        let (outcome, value) = self
            .execute(conn, req, Some(insert), Some(before_commit))
            .await?;
        Ok(Inserted::of(outcome, value)?.typed()?)
    }

    /// Inserts a row at any [`Placement`] of `parent`'s list: `insert` runs your own
    /// insert with the parent and position in [`Slot`], inside the library's transaction
    /// (it may run again if the operation is retried).
    pub async fn insert<C, T, F>(
        &self,
        conn: &mut C,
        parent: impl Into<P>,
        at: Placement,
        insert: F,
    ) -> Result<Inserted<T, K, P>>
    where
        C: AsyncOrderedConnection,
        F: for<'a> FnMut(&'a mut C, Slot) -> InsertFuture<'a, T> + Send,
        T: Send,
    {
        let parent = ordered_core::adapter::key::<P>(&parent.into())?;
        let req = Request::Insert { parent, at };
        let (outcome, value) = self
            .execute::<C, T, F, NoHook<C, Changes<K, P>>>(conn, req, Some(insert), None)
            .await?;
        Ok(Inserted::of(outcome, value)?.typed()?)
    }

    /// [`crate::OrderedTable::list_models`]: the items of `parent` as your own rows
    /// (a `QueryableByName` model), with the list's version, in one statement.
    pub async fn list_models<T, C>(&self, conn: &mut C, parent: impl Into<P>) -> Result<Listing<T>>
    where
        C: AsyncOrderedConnection,
        T: diesel::deserialize::QueryableByName<C::Backend> + Send + 'static,
    {
        let parent = self
            .s
            .scope_key(ordered_core::adapter::key::<P>(&parent.into())?)?;
        let stmt = sql::list_models(C::DIALECT, &self.s.spec, parent);
        let rows = conn.load_models::<T>(&stmt).await?;
        Ok(Listing::of_models(&self.s.spec, parent, rows)?)
    }

    ordered_core::operations! {
        async;
        conn: &mut C where C: AsyncOrderedConnection;
        insert: where F: for<'a> FnMut(&'a mut C, Slot) -> InsertFuture<'a, T> + Send, T: Send,
    }
}

/// The adapter's loop: feeds the core's [`Protocol`] with the results of the I/O it
/// asks for, until it is done; it sleeps on tokio's timer.
async fn drive<C, T, F, H, X>(
    conn: &mut C,
    wire: Wire,
    mut p: Protocol<Db>,
    mut insert: Option<F>,
    mut hook: Option<H>,
    typed: fn(Changes) -> std::result::Result<X, ordered_core::Error>,
) -> Result<(Finished, Option<T>)>
where
    C: AsyncOrderedConnection,
    F: for<'a> FnMut(&'a mut C, Slot) -> InsertFuture<'a, T> + Send,
    H: for<'a> FnMut(&'a mut C, &'a X) -> HookFuture<'a> + Send,
    X: Send + Sync,
    T: Send,
{
    let mut value = None;
    let mut feed = Feed::Start;
    loop {
        feed = match p.next(feed) {
            Io::Execute(stmt) => conn.run(&stmt, wire).await.map_err(Db).into(),
            Io::Begin => match conn.begin_own().await {
                Ok(()) => Feed::Began { nested: false },
                // inside the caller's transaction: a savepoint
                Err(DieselError::AlreadyInTransaction) => match conn.begin_savepoint().await {
                    Ok(()) => Feed::Began { nested: true },
                    Err(e) => Feed::Failed(Db(e)),
                },
                Err(e) => Feed::Failed(Db(e)),
            },
            Io::Insert { parent, position } => match insert.as_mut() {
                Some(f) => {
                    let slot = crate::ops::slot(parent, position);
                    // the reply after the insert: it may have reported its id
                    let result = f(conn, slot.clone()).await.map_err(Db);
                    Feed::inserted(slot.reply(), result, &mut value)
                }
                None => Feed::no_insert(),
            },
            Io::BeforeCommit(changes) => match hook.as_mut() {
                Some(h) => match typed(changes) {
                    Ok(changes) => h(conn, &changes).await.map_err(Db).into(),
                    Err(e) => Feed::Refused(e),
                },
                None => Feed::Ok,
            },
            Io::Commit { .. } => conn.commit().await.map_err(Db).into(),
            Io::Release => Feed::Ok,
            Io::Rollback { .. } => conn.rollback().await.map_err(Db).into(),
            Io::Sleep(pause) => {
                tokio::time::sleep(pause).await;
                Feed::Ok
            }
            Io::Done(f) => return Ok((f, value)),
            Io::Fail(f) => return Err(f.into()),
        };
    }
}
