//! Every operation from async Diesel ([diesel-async] 0.9): the same names, arguments,
//! results and errors as the sync [`crate::Ordering`], as `async fn`s over
//! `AsyncPgConnection` (feature `async-postgres`), `AsyncMysqlConnection`
//! (`async-mysql`) and `SyncConnectionWrapper<SqliteConnection>` (`async-sqlite`).
//! Pooled connections (deadpool, bb8) work as `&mut *pooled`. The same
//! `#[derive(Ordered)]` serves both: [`Ordering::of`] takes the model.
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
//! use ordered_diesel::async_diesel::Ordering;
//!
//! # async fn demo(conn: &mut AsyncPgConnection, playlist: i64, intro: i64) -> Result<(), ordered_diesel::Error> {
//! let tracks = Ordering::of::<Track>();
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
use ordered_core::retry::Attempts;
use ordered_core::{
    Action, Changes, Dialect, Id, Listing, Ordered, Outcome, Placement, Reply, Report, Request,
    Row, Settings, Spec, Statement, Wire, observe, sql,
};
use tracing::Instrument;

use crate::error::{Error, Result};
use crate::ops::{
    Inserted, Settled, Slot, after_rollback, causal_reply, commit_error, committed,
    duplicate_error, escaped, galera_flag, settle, unexpected,
};

/// What an insert closure returns: a boxed future of the caller's own insert, which
/// borrows the connection (`|conn, slot| Box::pin(async move { ... })`).
pub type InsertFuture<'a, T> = Pin<Box<dyn Future<Output = QueryResult<T>> + Send + 'a>>;

/// The future a `before_commit` hook returns ([`Ordering::apply`]).
pub type HookFuture<'a> = Pin<Box<dyn Future<Output = QueryResult<()>> + Send + 'a>>;

/// What [`Ordering::write`] passes for "no hook".
type NoHook<C> = for<'a> fn(&'a mut C, &'a Changes) -> HookFuture<'a>;

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
}

#[cfg(any(feature = "async-postgres", feature = "async-mysql"))]
macro_rules! async_server_connection {
    ($conn:ty, $backend:ty, $dialect:expr) => {
        impl sealed::Sealed for $conn {}

        impl AsyncOrderedConnection for $conn {
            const DIALECT: Dialect = $dialect;

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
                use ordered_core::Returns;

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
    use ordered_core::{Dialect, Reply, Statement, Wire, sql};

    use super::{AsyncOrderedConnection, sealed};

    impl sealed::Sealed for SyncConnectionWrapper<SqliteConnection> {}

    impl AsyncOrderedConnection for SyncConnectionWrapper<SqliteConnection> {
        const DIALECT: Dialect = Dialect::Sqlite;

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
/// same operations as [`crate::Ordering`], awaited.
#[derive(Debug, Clone)]
pub struct Ordering {
    s: Settings,
}

impl From<crate::Ordering> for Ordering {
    /// The same table and options, for async connections.
    fn from(o: crate::Ordering) -> Self {
        Ordering { s: o.s }
    }
}

impl Ordering {
    crate::ops::settings_builders!();

    /// Runs `req` as one transaction, with retries when the library owns it, in the
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
        H: for<'a> FnMut(&'a mut C, &'a Changes) -> HookFuture<'a> + Send,
        T: Send,
    {
        let span = observe::span(&self.s.spec, &req);
        let result = self
            .attempts(conn, &req, insert, hook)
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
        conn: &mut C,
        req: &Request,
        mut insert: Option<F>,
        mut hook: Option<H>,
    ) -> Result<(Outcome, Option<T>)>
    where
        C: AsyncOrderedConnection,
        F: for<'a> FnMut(&'a mut C, Slot) -> InsertFuture<'a, T> + Send,
        H: for<'a> FnMut(&'a mut C, &'a Changes) -> HookFuture<'a> + Send,
        T: Send,
    {
        let mut attempts = Attempts::new(self.s.retry);
        loop {
            let attempt = attempts.begin();
            // MySQL/MariaDB: is this a Galera node? On one, the probe is also the causal
            // wait that must come before BEGIN
            let probed = if C::DIALECT == Dialect::Mysql {
                galera_flag(conn.run(&sql::galera::probe(), Wire::PLAIN).await)
            } else {
                Ok(false)
            };
            let result = match probed {
                Err(e) => Err(Error::from(e)),
                Ok(galera) => {
                    attempts.use_policy(self.s.retry_on(galera));
                    match conn.begin_own().await {
                        Ok(()) => {
                            self.own_transaction(conn, req, insert.as_mut(), hook.as_mut(), galera)
                                .await
                        }
                        Err(DieselError::AlreadyInTransaction) => {
                            // inside the caller's transaction: a savepoint, no retries
                            return self
                                .savepoint(conn, req, insert.as_mut(), hook.as_mut(), galera)
                                .await;
                        }
                        Err(e) => Err(Error::from(e)),
                    }
                }
            };
            match settle(&self.s.spec, req, &mut attempts, attempt, result)? {
                Settled::Done(v) => return Ok(v),
                Settled::Retry(pause) => tokio::time::sleep(pause).await,
                Settled::Duplicate(e) => {
                    let probe = conn
                        .run(&sql::schema_probe(C::DIALECT, &self.s.spec), Wire::PLAIN)
                        .await;
                    return Err(duplicate_error(C::DIALECT, &self.s.spec, e, probe));
                }
            }
        }
    }

    async fn own_transaction<C, T, F, H>(
        &self,
        conn: &mut C,
        req: &Request,
        insert: Option<&mut F>,
        hook: Option<&mut H>,
        galera: bool,
    ) -> Result<(Outcome, Option<T>)>
    where
        C: AsyncOrderedConnection,
        F: for<'a> FnMut(&'a mut C, Slot) -> InsertFuture<'a, T> + Send,
        H: for<'a> FnMut(&'a mut C, &'a Changes) -> HookFuture<'a> + Send,
        T: Send,
    {
        let mut locked = None;
        let e = match self
            .drive(conn, req, insert, hook, galera, &mut locked)
            .await
        {
            Ok(v) => {
                return match conn.commit().await {
                    // a cluster that aborted the transaction may still answer COMMIT with
                    // success; the GTID tells whether it wrote anything
                    Ok(()) if galera => {
                        committed(conn.run(&sql::galera::unchanged(), Wire::PLAIN).await)
                            .map(|()| v)
                    }
                    Ok(()) => Ok(v),
                    Err(e) => Err(commit_error(e)),
                };
            }
            Err(e) => e,
        };
        // on a node, statements may have escaped before the failure (see the sync one)
        let e = if galera {
            // asked once more when the first answer is the abort's deferred error
            let mut unchanged = conn.run(&sql::galera::unchanged(), Wire::PLAIN).await;
            if unchanged.is_err() {
                unchanged = conn.run(&sql::galera::unchanged(), Wire::PLAIN).await;
            }
            escaped(e, unchanged, locked)
        } else {
            e
        };
        let rolled_back = conn.rollback().await;
        Err(after_rollback(e, rolled_back))
    }

    async fn savepoint<C, T, F, H>(
        &self,
        conn: &mut C,
        req: &Request,
        insert: Option<&mut F>,
        hook: Option<&mut H>,
        galera: bool,
    ) -> Result<(Outcome, Option<T>)>
    where
        C: AsyncOrderedConnection,
        F: for<'a> FnMut(&'a mut C, Slot) -> InsertFuture<'a, T> + Send,
        H: for<'a> FnMut(&'a mut C, &'a Changes) -> HookFuture<'a> + Send,
        T: Send,
    {
        conn.begin_savepoint().await?;
        match self.drive(conn, req, insert, hook, galera, &mut None).await {
            Ok(v) => {
                conn.commit().await?;
                Ok(v)
            }
            Err(e) => {
                // as in the sync adapter: the engine's error is kept even when the
                // engine has rolled the whole transaction back already
                let _ = conn.rollback().await;
                Err(e)
            }
        }
    }

    /// One attempt: feeds the state machine until it is done.
    #[allow(clippy::too_many_arguments)]
    async fn drive<C, T, F, H>(
        &self,
        conn: &mut C,
        req: &Request,
        mut insert: Option<&mut F>,
        mut hook: Option<&mut H>,
        galera: bool,
        locked: &mut Option<Id>,
    ) -> Result<(Outcome, Option<T>)>
    where
        C: AsyncOrderedConnection,
        F: for<'a> FnMut(&'a mut C, Slot) -> InsertFuture<'a, T> + Send,
        H: for<'a> FnMut(&'a mut C, &'a Changes) -> HookFuture<'a> + Send,
        T: Send,
    {
        let key = self.s.wire();
        let mut op = self.s.operation(C::DIALECT, req);
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
                Action::Execute(stmt) => reply = conn.run(&stmt, key).await?,
                Action::Insert { parent, position } => {
                    let f = insert.as_mut().ok_or_else(|| {
                        ordered_core::Error::Inconsistent(
                            "an insert without a row to insert".into(),
                        )
                    })?;
                    let slot = Slot::new(parent, position);
                    value = Some(f(conn, slot.clone()).await?);
                    reply = slot.reply();
                }
                Action::BeforeCommit(changes) => {
                    if let Some(h) = hook.as_mut() {
                        h(conn, &changes).await?;
                    }
                    reply = Reply::None;
                }
                Action::Done(outcome) => return Ok((outcome, value)),
            }
        }
    }

    async fn write<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        req: Request,
    ) -> Result<Outcome> {
        type NoInsert<C> = for<'a> fn(&'a mut C, Slot) -> InsertFuture<'a, ()>;
        self.execute::<C, (), NoInsert<C>, NoHook<C>>(conn, req, None, None)
            .await
            .map(|(o, _)| o)
    }

    /// [`crate::Ordering::apply`]: any request but an insert, with a `before_commit`
    /// hook that runs your statements in the library's transaction, after every write
    /// and before `COMMIT`, with the [`Changes`] in hand (retried with the operation,
    /// rolled back with it).
    pub async fn apply<C, H>(&self, conn: &mut C, req: Request, before_commit: H) -> Result<Outcome>
    where
        C: AsyncOrderedConnection,
        H: for<'a> FnMut(&'a mut C, &'a Changes) -> HookFuture<'a> + Send,
    {
        let req = req.without_insert()?;
        type NoInsert<C> = for<'a> fn(&'a mut C, Slot) -> InsertFuture<'a, ()>;
        self.execute::<C, (), NoInsert<C>, H>(conn, req, None, Some(before_commit))
            .await
            .map(|(o, _)| o)
    }

    /// [`crate::Ordering::insert_with`]: an insert with a `before_commit` hook.
    pub async fn insert_with<C, T, F, H>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
        at: Placement,
        insert: F,
        before_commit: H,
    ) -> Result<Inserted<T>>
    where
        C: AsyncOrderedConnection,
        F: for<'a> FnMut(&'a mut C, Slot) -> InsertFuture<'a, T> + Send,
        H: for<'a> FnMut(&'a mut C, &'a Changes) -> HookFuture<'a> + Send,
        T: Send,
    {
        let parent = parent.into();
        let (outcome, value) = self
            .execute(
                conn,
                Request::Insert { parent, at },
                Some(insert),
                Some(before_commit),
            )
            .await?;
        let value = value
            .ok_or_else(|| ordered_core::Error::Inconsistent("the insert did not run".into()))?;
        Ok(Inserted { value, outcome })
    }

    /// Inserts a row at any [`Placement`] of `parent`'s list: `insert` runs your own
    /// insert with the parent and position in [`Slot`], inside the library's transaction
    /// (it may run again if the operation is retried).
    pub async fn insert<C, T, F>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
        at: Placement,
        insert: F,
    ) -> Result<Inserted<T>>
    where
        C: AsyncOrderedConnection,
        F: for<'a> FnMut(&'a mut C, Slot) -> InsertFuture<'a, T> + Send,
        T: Send,
    {
        let parent = parent.into();
        let (outcome, value) = self
            .execute::<C, T, F, NoHook<C>>(conn, Request::Insert { parent, at }, Some(insert), None)
            .await?;
        let value = value
            .ok_or_else(|| ordered_core::Error::Inconsistent("the insert did not run".into()))?;
        Ok(Inserted { value, outcome })
    }

    /// [`crate::Ordering::insert_first`].
    pub async fn insert_first<C, T, F>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
        insert: F,
    ) -> Result<Inserted<T>>
    where
        C: AsyncOrderedConnection,
        F: for<'a> FnMut(&'a mut C, Slot) -> InsertFuture<'a, T> + Send,
        T: Send,
    {
        let parent = parent.into();
        self.insert(conn, parent, Placement::First, insert).await
    }

    /// [`crate::Ordering::insert_last`].
    pub async fn insert_last<C, T, F>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
        insert: F,
    ) -> Result<Inserted<T>>
    where
        C: AsyncOrderedConnection,
        F: for<'a> FnMut(&'a mut C, Slot) -> InsertFuture<'a, T> + Send,
        T: Send,
    {
        let parent = parent.into();
        self.insert(conn, parent, Placement::Last, insert).await
    }

    /// [`crate::Ordering::insert_before`].
    pub async fn insert_before<C, T, F>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
        anchor: impl Into<Id>,
        insert: F,
    ) -> Result<Inserted<T>>
    where
        C: AsyncOrderedConnection,
        F: for<'a> FnMut(&'a mut C, Slot) -> InsertFuture<'a, T> + Send,
        T: Send,
    {
        let parent = parent.into();
        let anchor = anchor.into();
        self.insert(conn, parent, Placement::Before(anchor), insert)
            .await
    }

    /// [`crate::Ordering::insert_after`].
    pub async fn insert_after<C, T, F>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
        anchor: impl Into<Id>,
        insert: F,
    ) -> Result<Inserted<T>>
    where
        C: AsyncOrderedConnection,
        F: for<'a> FnMut(&'a mut C, Slot) -> InsertFuture<'a, T> + Send,
        T: Send,
    {
        let parent = parent.into();
        let anchor = anchor.into();
        self.insert(conn, parent, Placement::After(anchor), insert)
            .await
    }

    /// [`crate::Ordering::insert_between`].
    pub async fn insert_between<C, T, F>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
        prev: Option<Id>,
        next: Option<Id>,
        insert: F,
    ) -> Result<Inserted<T>>
    where
        C: AsyncOrderedConnection,
        F: for<'a> FnMut(&'a mut C, Slot) -> InsertFuture<'a, T> + Send,
        T: Send,
    {
        let parent = parent.into();
        self.insert(conn, parent, Placement::Between { prev, next }, insert)
            .await
    }

    /// [`crate::Ordering::insert_at_index`].
    pub async fn insert_at_index<C, T, F>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
        index: u64,
        insert: F,
    ) -> Result<Inserted<T>>
    where
        C: AsyncOrderedConnection,
        F: for<'a> FnMut(&'a mut C, Slot) -> InsertFuture<'a, T> + Send,
        T: Send,
    {
        let parent = parent.into();
        self.insert(conn, parent, Placement::Index(index), insert)
            .await
    }

    /// [`crate::Ordering::move_to`].
    pub async fn move_to<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
        at: Placement,
    ) -> Result<Outcome> {
        let item = item.into();
        self.write(conn, Request::Move { item, at }).await
    }

    /// [`crate::Ordering::move_before`].
    pub async fn move_before<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
        anchor: impl Into<Id>,
    ) -> Result<Outcome> {
        let item = item.into();
        let anchor = anchor.into();
        self.move_to(conn, item, Placement::Before(anchor)).await
    }

    /// [`crate::Ordering::move_after`].
    pub async fn move_after<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
        anchor: impl Into<Id>,
    ) -> Result<Outcome> {
        let item = item.into();
        let anchor = anchor.into();
        self.move_to(conn, item, Placement::After(anchor)).await
    }

    /// [`crate::Ordering::move_between`].
    pub async fn move_between<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
        prev: Option<Id>,
        next: Option<Id>,
    ) -> Result<Outcome> {
        let item = item.into();
        self.move_to(conn, item, Placement::Between { prev, next })
            .await
    }

    /// [`crate::Ordering::move_to_start`].
    pub async fn move_to_start<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
    ) -> Result<Outcome> {
        let item = item.into();
        self.move_to(conn, item, Placement::First).await
    }

    /// [`crate::Ordering::move_to_end`].
    pub async fn move_to_end<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
    ) -> Result<Outcome> {
        let item = item.into();
        self.move_to(conn, item, Placement::Last).await
    }

    /// [`crate::Ordering::move_to_index`].
    pub async fn move_to_index<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
        index: u64,
    ) -> Result<Outcome> {
        let item = item.into();
        self.move_to(conn, item, Placement::Index(index)).await
    }

    /// [`crate::Ordering::move_up`].
    pub async fn move_up<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
    ) -> Result<Outcome> {
        let item = item.into();
        self.write(conn, Request::MoveUp { item }).await
    }

    /// [`crate::Ordering::move_down`].
    pub async fn move_down<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
    ) -> Result<Outcome> {
        let item = item.into();
        self.write(conn, Request::MoveDown { item }).await
    }

    /// [`crate::Ordering::swap`].
    pub async fn swap<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        a: impl Into<Id>,
        b: impl Into<Id>,
    ) -> Result<Outcome> {
        let a = a.into();
        let b = b.into();
        self.write(conn, Request::Swap { a, b }).await
    }

    /// [`crate::Ordering::move_to_parent`].
    pub async fn move_to_parent<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
        parent: impl Into<Id>,
        at: Placement,
    ) -> Result<Outcome> {
        let item = item.into();
        let parent = parent.into();
        self.write(conn, Request::MoveToParent { item, parent, at })
            .await
    }

    /// [`crate::Ordering::remove`].
    pub async fn remove<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
    ) -> Result<Outcome> {
        let item = item.into();
        self.write(conn, Request::Remove { item }).await
    }

    /// [`crate::Ordering::reorder`].
    pub async fn reorder<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
        ids: &[Id],
    ) -> Result<Outcome> {
        let parent = parent.into();
        let ids = ids.to_vec();
        self.write(conn, Request::Reorder { parent, ids }).await
    }

    /// [`crate::Ordering::rebalance`].
    pub async fn rebalance<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
    ) -> Result<Outcome> {
        let parent = parent.into();
        self.write(conn, Request::Rebalance { parent }).await
    }

    /// [`crate::Ordering::heal`].
    pub async fn heal<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
    ) -> Result<Outcome> {
        let parent = parent.into();
        self.rebalance(conn, parent).await
    }

    /// [`crate::Ordering::list`].
    pub async fn list<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
    ) -> Result<Vec<Row>> {
        let parent = self.s.scope_key(parent.into())?;
        let stmt = sql::list(C::DIALECT, &self.s.spec, parent);
        read_rows(conn, &stmt, self.s.wire()).await
    }

    /// [`crate::Ordering::list_versioned`]: the items with the version of the same
    /// snapshot.
    pub async fn list_versioned<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
    ) -> Result<Listing> {
        let parent = self.s.scope_key(parent.into())?;
        let stmt = sql::list_versioned(C::DIALECT, &self.s.spec, parent);
        let reply = read(conn, &stmt, self.s.wire()).await?;
        Ok(Listing::from_reply(&self.s.spec, parent, reply)?)
    }

    /// [`crate::Ordering::check_schema`].
    pub async fn check_schema<C: AsyncOrderedConnection>(&self, conn: &mut C) -> Result<()> {
        let stmt = sql::schema_probe(C::DIALECT, &self.s.spec);
        match conn.run(&stmt, Wire::PLAIN).await? {
            Reply::Count(n) => Ok(ordered_core::check_schema(C::DIALECT, &self.s.spec, n)?),
            other => Err(unexpected(&other)),
        }
    }

    /// [`crate::Ordering::index_of`].
    pub async fn index_of<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
    ) -> Result<u64> {
        let item = self.s.item_key(item.into())?;
        let item_read = ordered_core::plan::Read::Item { id: item };
        let stmt = sql::read(C::DIALECT, &self.s.spec, &item_read, false);
        let row = match read(conn, &stmt, self.s.wire()).await? {
            Reply::Rows(rows) => rows.into_iter().next(),
            other => return Err(unexpected(&other)),
        }
        .ok_or(ordered_core::Error::NotFound { id: item })?;
        let stmt = sql::count_before(C::DIALECT, &self.s.spec, row.parent, &row.position);
        match conn.run(&stmt, self.s.wire()).await? {
            Reply::Count(n) => Ok(u64::try_from(n).unwrap_or(0)),
            other => Err(unexpected(&other)),
        }
    }

    /// [`crate::Ordering::verify`].
    pub async fn verify<C: AsyncOrderedConnection>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
    ) -> Result<Report> {
        // every row, the ones the row filter leaves out included
        let parent = self.s.scope_key(parent.into())?;
        let stmt = sql::list_all(C::DIALECT, &self.s.spec, parent);
        let rows = read_rows(conn, &stmt, self.s.wire()).await?;
        Ok(ordered_core::verify(&self.s.spec, &rows))
    }

    /// [`crate::Ordering::check_key_order`].
    pub async fn check_key_order<C: AsyncOrderedConnection>(&self, conn: &mut C) -> Result<()> {
        if !self.s.is_key() {
            return Ok(());
        }
        let stmt = sql::probe_key_order(
            C::DIALECT,
            &self.s.spec,
            ordered_core::verify::KEY_ORDER_PROBES,
        );
        match conn.run(&stmt, self.s.wire()).await? {
            Reply::Rows(rows) => Ok(ordered_core::check_key_order(&self.s.spec, &rows)?),
            other => Err(unexpected(&other)),
        }
    }
}

/// A read outside the library's transactions, causal on MySQL/MariaDB (see the sync
/// adapter's).
async fn read<C: AsyncOrderedConnection>(
    conn: &mut C,
    stmt: &Statement,
    key: Wire,
) -> Result<Reply> {
    if C::DIALECT == Dialect::Mysql
        && let Some(r) = causal_reply(conn.run(&sql::galera::causal(stmt), key).await)
    {
        return r;
    }
    Ok(conn.run(stmt, key).await?)
}

/// The item rows of a [`read`] (`list`, `verify`).
async fn read_rows<C: AsyncOrderedConnection>(
    conn: &mut C,
    stmt: &Statement,
    key: Wire,
) -> Result<Vec<Row>> {
    match read(conn, stmt, key).await? {
        Reply::Rows(rows) => Ok(rows),
        other => Err(unexpected(&other)),
    }
}
