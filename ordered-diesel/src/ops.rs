//! The operations: each one transaction that locks the parent, reads under the lock,
//! plans in `ordered-core` and writes.

use diesel::connection::{AnsiTransactionManager, TransactionManager};
use diesel::result::{DatabaseErrorKind, Error as DieselError, QueryResult};
use ordered_core::adapter::retry::is_connection_lost;
use ordered_core::adapter::{Feed, Finished, Io, Job, Protocol, Settings, Wire};
use std::marker::PhantomData;

use ordered_core::{AppKey, Changes, Id, Inserted, Listing, Ordered, Outcome, Placement, Request};

use crate::conn::OrderedConnection;
use crate::error::{Db, Result};

/// Where the caller's insert must put the new row: the collection and the position,
/// read in the model's own types with [`Slot::scope`], [`Slot::int`] and [`Slot::key`]
/// (a Diesel error, usable with `?`, if the type does not fit).
pub type Slot = ordered_core::adapter::Slot<DieselError>;

/// The slot the protocol asked for, reporting in Diesel's error.
pub(crate) fn slot(parent: Id, position: ordered_core::Position) -> Slot {
    Slot::new(parent, position, |m| {
        DieselError::SerializationError(m.into())
    })
}

/// Operations on one ordered table, with options, taking and returning keys in the
/// model's own types (`K` the items', `P` the lists'). Get it from a model with
/// `Track::ordered()` ([`OrderedDsl::ordered`], or [`OrderedTable::of`]); the
/// [`OrderedDsl`] functions on the model take the defaults. A table described at run
/// time ([`OrderedTable::new`]) takes and returns [`Id`]s.
pub struct OrderedTable<K = Id, P = Id> {
    pub(crate) s: Settings,
    pub(crate) keys: PhantomData<fn() -> (K, P)>,
}

/// The constructors, options and common impls of an `OrderedTable` (a struct with an
/// `s: Settings` field and a `keys` marker): [`ordered_core::handle!`] and `of` from a
/// Diesel model, for the sync one here and the async one in [`crate::async_diesel`].
macro_rules! settings_builders {
    ($name:ident) => {
        ordered_core::handle!($name);

        impl $name {
            /// Operations on the table of model `M` (`#[derive(Ordered)]`), with its
            /// key types.
            pub fn of<M: Ordered>() -> $name<M::Key, M::Scope> {
                $name {
                    s: Settings::new(M::SPEC),
                    keys: std::marker::PhantomData,
                }
            }
        }
    };
}
#[cfg(feature = "async")]
pub(crate) use settings_builders;

settings_builders!(OrderedTable);

/// The caller's insert of a new row.
type InsertFn<'a, C, T> = dyn FnMut(&mut C, Slot) -> QueryResult<T> + 'a;
/// The caller's statements run before `COMMIT`, given the changes (`X`: in the model's
/// key types).
type HookFn<'a, C, X> = dyn FnMut(&mut C, &X) -> QueryResult<()> + 'a;

impl<K: AppKey, P: AppKey> OrderedTable<K, P> {
    /// Runs a write as one transaction, with retries when the library owns it, in the
    /// operation's span.
    fn execute<C, T>(
        &self,
        conn: &mut C,
        req: Request,
        insert: Option<&mut InsertFn<'_, C, T>>,
        hook: Option<&mut HookFn<'_, C, Changes<K, P>>>,
    ) -> Result<(Outcome, Option<T>)>
    where
        C: OrderedConnection,
    {
        let p = Protocol::new(
            &self.s,
            C::DIALECT,
            Job::Write(Box::new(req)),
            hook.is_some(),
        );
        let span = p.span().clone();
        let _entered = span.enter();
        let (f, value) = drive(conn, self.s.wire(), p, insert, hook, Changes::typed::<K, P>)?;
        Ok((f.into_outcome()?, value))
    }

    fn read<C: OrderedConnection>(&self, conn: &mut C, job: Job) -> Result<Finished> {
        let p = Protocol::new(&self.s, C::DIALECT, job, false);
        drive::<C, (), Changes>(conn, self.s.wire(), p, None, None, Ok).map(|(f, _)| f)
    }

    fn schema_job<C: OrderedConnection>(&self, conn: &mut C, job: Job) -> Result<Finished> {
        self.read(conn, job)
    }

    fn write<C: OrderedConnection>(&self, conn: &mut C, req: Request) -> Result<Outcome<K, P>> {
        let (o, _) = self.execute::<C, ()>(conn, req, None, None)?;
        Ok(o.typed()?)
    }

    /// Inserts a row at any [`Placement`] of `parent`'s list (the named `insert_*`
    /// methods are shorthands for it).
    pub fn insert<C, T, F>(
        &self,
        conn: &mut C,
        parent: impl Into<P>,
        at: Placement,
        mut f: F,
    ) -> Result<Inserted<T, K, P>>
    where
        C: OrderedConnection,
        F: FnMut(&mut C, Slot) -> QueryResult<T>,
    {
        let parent = ordered_core::adapter::key::<P>(&parent.into())?;
        let (outcome, value) =
            self.execute(conn, Request::Insert { parent, at }, Some(&mut f), None)?;
        Ok(Inserted::of(outcome, value)?.typed()?)
    }

    /// [`OrderedTable::insert`] with a hook: `before_commit` runs your own statements (an
    /// outbox row, an audit entry, `updated_at`) inside the library's transaction, after
    /// the insert and every relabel and before `COMMIT`, with the
    /// [`Changes`] in hand. It runs again if the operation is retried, and an error
    /// from it rolls everything back. The library keeps its own transaction, so its
    /// retries stay on.
    pub fn insert_with<C, T, F, H>(
        &self,
        conn: &mut C,
        parent: impl Into<P>,
        at: Placement,
        mut insert: F,
        mut before_commit: H,
    ) -> Result<Inserted<T, K, P>>
    where
        C: OrderedConnection,
        F: FnMut(&mut C, Slot) -> QueryResult<T>,
        H: FnMut(&mut C, &Changes<K, P>) -> QueryResult<()>,
    {
        let parent = ordered_core::adapter::key::<P>(&parent.into())?;
        let (outcome, value) = self.execute(
            conn,
            Request::Insert { parent, at },
            Some(&mut insert),
            Some(&mut before_commit),
        )?;
        Ok(Inserted::of(outcome, value)?.typed()?)
    }

    /// Runs any request but an insert ([`OrderedTable::insert_with`]) with a hook:
    /// `before_commit` runs your own statements inside the library's transaction, after
    /// every write and before `COMMIT`, with the [`Changes`] in hand in the model's key
    /// types (write an outbox event atomically with the move). It runs again if the
    /// operation is retried, and an error from it rolls the whole operation back.
    ///
    /// ```
    /// # include!("../doctest_setup.rs");
    /// # use diesel::sql_types::{BigInt, Text};
    /// # fn main() -> Result<(), ordered_diesel::Error> {
    /// # let conn = &mut setup();
    /// # diesel::sql_query("CREATE TABLE outbox (item BIGINT, body TEXT)").execute(conn)?;
    /// let a = Track::insert_last(conn, 1, |c, slot| new_track(c, slot, "A"))?.value;
    /// let b = Track::insert_last(conn, 1, |c, slot| new_track(c, slot, "B"))?.value;
    /// let moved = Track::ordered().apply(
    ///     conn,
    ///     ordered_diesel::Request::Move { item: b.into(), at: ordered_diesel::Placement::Before(a.into()) },
    ///     |conn, changes| {
    ///         // the changes in the model's key types: `c.id` is the track's `i64`
    ///         for c in &changes.rows {
    ///             diesel::sql_query("INSERT INTO outbox (item, body) VALUES (?, ?)")
    ///                 .bind::<BigInt, _>(c.id)
    ///                 .bind::<Text, _>(format!("moved to {}", c.position))
    ///                 .execute(conn)?;
    ///         }
    ///         Ok(())
    ///     },
    /// )?;
    /// assert_eq!(moved.changes.rows.len(), 1);
    /// # Ok(()) }
    /// ```
    pub fn apply<C, H>(
        &self,
        conn: &mut C,
        req: Request,
        mut before_commit: H,
    ) -> Result<Outcome<K, P>>
    where
        C: OrderedConnection,
        H: FnMut(&mut C, &Changes<K, P>) -> QueryResult<()>,
    {
        let req = req.without_insert()?;
        let (o, _) = self.execute::<C, ()>(conn, req, None, Some(&mut before_commit))?;
        Ok(o.typed()?)
    }

    /// The items of `parent` as your own rows (a `QueryableByName` model: derive it
    /// beside `Queryable` and `Selectable`), `ORDER BY position, id`, with the list's
    /// version, in one statement ([`list_versioned`](Self::list_versioned) with your
    /// columns instead of the library's). A missing parent is
    /// [`ParentNotFound`](ordered_core::Error::ParentNotFound).
    pub fn list_models<T, C>(&self, conn: &mut C, parent: impl Into<P>) -> Result<Listing<T>>
    where
        C: OrderedConnection,
        T: diesel::deserialize::QueryableByName<C::Backend> + 'static,
    {
        let parent = self
            .s
            .scope_key(ordered_core::adapter::key::<P>(&parent.into())?)?;
        let stmt = ordered_core::adapter::sql::list_models(C::DIALECT, &self.s.spec, parent);
        let rows = conn.load_models::<T>(&stmt)?;
        Ok(Listing::of_models(&self.s.spec, parent, rows)?)
    }

    ordered_core::operations! {
        sync;
        conn: &mut C where C: OrderedConnection;
        insert: where F: FnMut(&mut C, Slot) -> QueryResult<T>,
    }
}

/// The adapter's loop: feeds the core's [`Protocol`] with the results of the I/O it
/// asks for, until it is done.
fn drive<C, T, X>(
    conn: &mut C,
    wire: Wire,
    mut p: Protocol<Db>,
    mut insert: Option<&mut InsertFn<'_, C, T>>,
    mut hook: Option<&mut HookFn<'_, C, X>>,
    typed: fn(Changes) -> std::result::Result<X, ordered_core::Error>,
) -> Result<(Finished, Option<T>)>
where
    C: OrderedConnection,
{
    let mut value = None;
    let mut feed = Feed::Start;
    loop {
        feed = match p.next(feed) {
            Io::Execute(stmt) => conn.run(&stmt, wire).map_err(Db).into(),
            Io::Begin => match crate::conn::begin_own(conn) {
                Ok(()) => Feed::Began { nested: false },
                // inside the caller's transaction: a savepoint
                Err(DieselError::AlreadyInTransaction) => {
                    match AnsiTransactionManager::begin_transaction(conn) {
                        Ok(()) => Feed::Began { nested: true },
                        Err(e) => Feed::Failed(Db(e)),
                    }
                }
                Err(e) => Feed::Failed(Db(e)),
            },
            Io::Insert { parent, position } => match insert.as_mut() {
                Some(f) => {
                    let slot = slot(parent, position);
                    // the reply after the insert: it may have reported its id
                    let result = f(conn, slot.clone()).map_err(Db);
                    Feed::inserted(slot.reply(), result, &mut value)
                }
                None => Feed::no_insert(),
            },
            Io::BeforeCommit(changes) => match hook.as_mut() {
                Some(h) => match typed(changes) {
                    Ok(changes) => h(conn, &changes).map_err(Db).into(),
                    Err(e) => Feed::Refused(e),
                },
                None => Feed::Ok,
            },
            Io::Commit {
                savepoint: true, ..
            } => AnsiTransactionManager::commit_transaction(conn)
                .map_err(Db)
                .into(),
            Io::Commit { .. } => crate::conn::commit_own(conn).map_err(Db).into(),
            Io::Release => Feed::Ok,
            Io::Rollback { .. } => AnsiTransactionManager::rollback_transaction(conn)
                .map_err(Db)
                .into(),
            Io::Sleep(pause) => {
                std::thread::sleep(pause);
                Feed::Ok
            }
            Io::Done(f) => return Ok((f, value)),
            Io::Fail(f) => return Err(f.into()),
        };
    }
}

/// Whether the connection itself failed (the server ends the transaction uncommitted),
/// or Diesel has marked it broken (a `ROLLBACK` failed earlier): either way it cannot
/// be used again.
pub(crate) fn connection_lost(e: &DieselError) -> bool {
    match e {
        DieselError::DatabaseError(DatabaseErrorKind::ClosedConnection, _)
        | DieselError::BrokenTransactionManager => true,
        DieselError::DatabaseError(_, info) => is_connection_lost(info.message()),
        _ => false,
    }
}

/// The model-level shorthands of [`OrderedDsl`]: each calls the operation of the same
/// name on `OrderedTable::of::<Self>()`.
macro_rules! dsl {
    (
        inserts { $($i:ident($($ia:ident: $it:ty),*);)* }
        writes { $($w:ident($($wa:ident: $wt:ty),*);)* }
        reads { $($r:ident($rk:ident: $rt:ty) -> $ro:ty;)* }
    ) => {
        $(
            #[doc = concat!("[`OrderedTable::", stringify!($i), "`].")]
            fn $i<C, T, F>(conn: &mut C, parent: impl Into<Self::Scope>, $($ia: $it,)* insert: F) -> Result<Inserted<T, Self::Key, Self::Scope>>
            where
                C: OrderedConnection,
                F: FnMut(&mut C, Slot) -> QueryResult<T>,
            {
                OrderedTable::of::<Self>().$i(conn, parent, $($ia,)* insert)
            }
        )*
        $(
            #[doc = concat!("[`OrderedTable::", stringify!($w), "`].")]
            fn $w<C: OrderedConnection>(conn: &mut C, $($wa: $wt),*) -> Result<Outcome<Self::Key, Self::Scope>> {
                OrderedTable::of::<Self>().$w(conn, $($wa),*)
            }
        )*
        $(
            #[doc = concat!("[`OrderedTable::", stringify!($r), "`].")]
            fn $r<C: OrderedConnection>(conn: &mut C, $rk: $rt) -> Result<$ro> {
                OrderedTable::of::<Self>().$r(conn, $rk)
            }
        )*
    };
}

/// The operations as associated functions of an ordered model, with default options.
///
/// ```
/// # include!("../doctest_setup.rs");
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let conn = &mut setup();
/// let intro = Track::insert_last(conn, 1, |c, slot| new_track(c, slot, "Intro"))?.value;
/// let demo = Track::insert_last(conn, 1, |c, slot| new_track(c, slot, "Demo"))?.value;
/// let credits = Track::insert_last(conn, 1, |c, slot| new_track(c, slot, "Credits"))?.value;
/// Track::move_before(conn, credits, demo)?;
/// let order: Vec<i64> = Track::list(conn, 1)?.iter().map(|r| r.id).collect();
/// assert_eq!(order, [intro, credits, demo]);
/// # Ok(()) }
/// ```
pub trait OrderedDsl: Ordered + Sized {
    dsl! {
        inserts {
            insert_first();
            insert_last();
            insert_before(anchor: impl Into<Self::Key>);
            insert_after(anchor: impl Into<Self::Key>);
            insert_between(prev: Option<Self::Key>, next: Option<Self::Key>);
            insert_at_index(index: u64);
        }
        writes {
            move_to(item: impl Into<Self::Key>, at: Placement);
            move_before(item: impl Into<Self::Key>, anchor: impl Into<Self::Key>);
            move_after(item: impl Into<Self::Key>, anchor: impl Into<Self::Key>);
            move_between(item: impl Into<Self::Key>, prev: Option<Self::Key>, next: Option<Self::Key>);
            move_to_start(item: impl Into<Self::Key>);
            move_to_end(item: impl Into<Self::Key>);
            move_to_index(item: impl Into<Self::Key>, index: u64);
            move_up(item: impl Into<Self::Key>);
            move_down(item: impl Into<Self::Key>);
            swap(a: impl Into<Self::Key>, b: impl Into<Self::Key>);
            move_to_parent(item: impl Into<Self::Key>, parent: impl Into<Self::Scope>, at: Placement);
            remove(item: impl Into<Self::Key>);
            reorder(parent: impl Into<Self::Scope>, ids: &[Self::Key]);
            rebalance(parent: impl Into<Self::Scope>);
        }
        reads {
            list(parent: impl Into<Self::Scope>) -> Vec<ordered_core::Row<Self::Key, Self::Scope>>;
            list_versioned(parent: impl Into<Self::Scope>) -> ordered_core::Listing<ordered_core::Row<Self::Key, Self::Scope>>;
            index_of(item: impl Into<Self::Key>) -> u64;
            verify(parent: impl Into<Self::Scope>) -> ordered_core::Report;
        }
    }

    /// [`OrderedTable::page`].
    fn page<C: OrderedConnection>(
        conn: &mut C,
        parent: impl Into<Self::Scope>,
        after: Option<&ordered_core::Cursor<Self::Key>>,
        limit: u32,
    ) -> Result<ordered_core::RowPage<Self::Key, Self::Scope>> {
        OrderedTable::of::<Self>().page(conn, parent, after, limit)
    }

    /// The operations with options ([`OrderedTable::within`],
    /// [`OrderedTable::concurrency`], retries), in the model's key types.
    fn ordered() -> OrderedTable<Self::Key, Self::Scope> {
        OrderedTable::of::<Self>()
    }
}

impl<M: Ordered> OrderedDsl for M {}
