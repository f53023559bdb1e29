//! The operations: each one transaction that locks the parent, reads under the lock,
//! plans in `ordered-core` and writes.

use diesel::connection::{AnsiTransactionManager, TransactionManager};
use diesel::result::{DatabaseErrorKind, Error as DieselError, QueryResult};
use ordered_core::adapter::retry::is_connection_lost;
use ordered_core::adapter::{Feed, Finished, Io, Job, Protocol, Settings, Wire};
use ordered_core::{
    Changes, Id, Inserted, Listing, Ordered, Outcome, Placement, Report, Request, Row, Spec,
};

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

/// Operations on one ordered table, with options. Build it from a model with
/// [`Ordering::of`] (or use the [`OrderedDsl`] methods on the model, which take the
/// defaults), or from a [`Spec`] built at run time with [`Ordering::new`].
#[derive(Debug, Clone)]
pub struct Ordering {
    pub(crate) s: Settings,
}

/// The constructors and options of an `Ordering` (a struct with one `s: Settings`
/// field): the sync one here and the async one in [`crate::async_diesel`].
macro_rules! settings_builders {
    () => {
        /// Operations on the table `spec` describes.
        pub fn new(spec: Spec) -> Self {
            Self {
                s: Settings::new(spec),
            }
        }

        /// Operations on the table of model `M` (`#[derive(Ordered)]`).
        pub fn of<M: Ordered>() -> Self {
            Self::new(M::SPEC)
        }

        ordered_core::settings_options!();
    };
}
#[cfg(feature = "async")]
pub(crate) use settings_builders;

/// The caller's insert of a new row.
type InsertFn<'a, C, T> = dyn FnMut(&mut C, Slot) -> QueryResult<T> + 'a;
/// The caller's statements run before `COMMIT`.
type HookFn<'a, C> = dyn FnMut(&mut C, &Changes) -> QueryResult<()> + 'a;

impl Ordering {
    settings_builders!();

    /// Runs a write as one transaction, with retries when the library owns it, in the
    /// operation's span.
    fn execute<C, T>(
        &self,
        conn: &mut C,
        req: Request,
        insert: Option<&mut InsertFn<'_, C, T>>,
        hook: Option<&mut HookFn<'_, C>>,
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
        let (f, value) = drive(conn, self.s.wire(), p, insert, hook)?;
        Ok((f.into_outcome()?, value))
    }

    fn read<C: OrderedConnection>(&self, conn: &mut C, job: Job) -> Result<Finished> {
        let p = Protocol::new(&self.s, C::DIALECT, job, false);
        drive::<C, ()>(conn, self.s.wire(), p, None, None).map(|(f, _)| f)
    }

    fn write<C: OrderedConnection>(&self, conn: &mut C, req: Request) -> Result<Outcome> {
        self.execute::<C, ()>(conn, req, None, None).map(|(o, _)| o)
    }

    /// Inserts a row at any [`Placement`] of `parent`'s list (the named `insert_*`
    /// methods are shorthands for it).
    pub fn insert<C, T, F>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
        at: Placement,
        mut f: F,
    ) -> Result<Inserted<T>>
    where
        C: OrderedConnection,
        F: FnMut(&mut C, Slot) -> QueryResult<T>,
    {
        let parent = parent.into();
        let (outcome, value) =
            self.execute(conn, Request::Insert { parent, at }, Some(&mut f), None)?;
        Ok(Inserted::of(outcome, value)?)
    }

    /// [`Ordering::insert`] with a hook: `before_commit` runs your own statements (an
    /// outbox row, an audit entry, `updated_at`) inside the library's transaction, after
    /// the insert and every relabel and before `COMMIT`, with the
    /// [`Changes`] in hand. It runs again if the operation is retried, and an error
    /// from it rolls everything back. The library keeps its own transaction, so its
    /// retries stay on.
    pub fn insert_with<C, T, F, H>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
        at: Placement,
        mut insert: F,
        mut before_commit: H,
    ) -> Result<Inserted<T>>
    where
        C: OrderedConnection,
        F: FnMut(&mut C, Slot) -> QueryResult<T>,
        H: FnMut(&mut C, &Changes) -> QueryResult<()>,
    {
        let parent = parent.into();
        let (outcome, value) = self.execute(
            conn,
            Request::Insert { parent, at },
            Some(&mut insert),
            Some(&mut before_commit),
        )?;
        Ok(Inserted::of(outcome, value)?)
    }

    /// Runs any request but an insert ([`Ordering::insert_with`]) with a hook:
    /// `before_commit` runs your own statements inside the library's transaction, after
    /// every write and before `COMMIT`, with the [`Changes`] in hand (write an outbox
    /// event atomically with the move). It runs again if the operation is retried, and
    /// an error from it rolls the whole operation back.
    ///
    /// ```
    /// # include!("../doctest_setup.rs");
    /// # use diesel::sql_types::{BigInt, Text};
    /// # fn main() -> Result<(), ordered_diesel::Error> {
    /// # let conn = &mut setup();
    /// # diesel::sql_query("CREATE TABLE outbox (item BIGINT, body TEXT)").execute(conn)?;
    /// let a = Track::insert_last(conn, 1, |c, slot| new_track(c, slot, "A"))?.value;
    /// let b = Track::insert_last(conn, 1, |c, slot| new_track(c, slot, "B"))?.value;
    /// let moved = Track::ordering().apply(
    ///     conn,
    ///     ordered_diesel::Request::Move { item: b.into(), at: ordered_diesel::Placement::Before(a.into()) },
    ///     |conn, changes| {
    ///         for c in &changes.rows {
    ///             diesel::sql_query("INSERT INTO outbox (item, body) VALUES (?, ?)")
    ///                 .bind::<diesel::sql_types::Nullable<BigInt>, _>(c.id.as_int())
    ///                 .bind::<Text, _>(format!("moved to {}", c.position))
    ///                 .execute(conn)?;
    ///         }
    ///         Ok(())
    ///     },
    /// )?;
    /// assert_eq!(moved.changes.rows.len(), 1);
    /// # Ok(()) }
    /// ```
    pub fn apply<C, H>(&self, conn: &mut C, req: Request, mut before_commit: H) -> Result<Outcome>
    where
        C: OrderedConnection,
        H: FnMut(&mut C, &Changes) -> QueryResult<()>,
    {
        let req = req.without_insert()?;
        self.execute::<C, ()>(conn, req, None, Some(&mut before_commit))
            .map(|(o, _)| o)
    }

    ordered_core::operations! {
        sync;
        conn: &mut C where C: OrderedConnection;
        insert: where F: FnMut(&mut C, Slot) -> QueryResult<T>,
    }
}

/// The adapter's loop: feeds the core's [`Protocol`] with the results of the I/O it
/// asks for, until it is done.
fn drive<C, T>(
    conn: &mut C,
    wire: Wire,
    mut p: Protocol<Db>,
    mut insert: Option<&mut InsertFn<'_, C, T>>,
    mut hook: Option<&mut HookFn<'_, C>>,
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
                Some(h) => h(conn, &changes).map_err(Db).into(),
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
/// name on `Ordering::of::<Self>()`.
macro_rules! dsl {
    (
        inserts { $($i:ident($($ik:ident),*; $($ia:ident: $it:ty),*);)* }
        writes { $($w:ident($($wk:ident),*; $($wa:ident: $wt:ty),*);)* }
        reads { $($r:ident($rk:ident) -> $ro:ty;)* }
    ) => {
        $(
            #[doc = concat!("[`Ordering::", stringify!($i), "`].")]
            fn $i<C, T, F>(conn: &mut C, $($ik: impl Into<Id>,)* $($ia: $it,)* insert: F) -> Result<Inserted<T>>
            where
                C: OrderedConnection,
                F: FnMut(&mut C, Slot) -> QueryResult<T>,
            {
                Ordering::of::<Self>().$i(conn, $($ik,)* $($ia,)* insert)
            }
        )*
        $(
            #[doc = concat!("[`Ordering::", stringify!($w), "`].")]
            fn $w<C: OrderedConnection>(conn: &mut C, $($wk: impl Into<Id>,)* $($wa: $wt),*) -> Result<Outcome> {
                Ordering::of::<Self>().$w(conn, $($wk,)* $($wa),*)
            }
        )*
        $(
            #[doc = concat!("[`Ordering::", stringify!($r), "`].")]
            fn $r<C: OrderedConnection>(conn: &mut C, $rk: impl Into<Id>) -> Result<$ro> {
                Ordering::of::<Self>().$r(conn, $rk)
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
/// let order: Vec<ordered_diesel::Id> = Track::list(conn, 1)?.iter().map(|r| r.id).collect();
/// assert_eq!(order, [intro, credits, demo]); // an Id compares equal to the key it holds
/// # Ok(()) }
/// ```
pub trait OrderedDsl: Ordered + Sized {
    dsl! {
        inserts {
            insert_first(parent;);
            insert_last(parent;);
            insert_before(parent, anchor;);
            insert_after(parent, anchor;);
            insert_between(parent; prev: Option<Id>, next: Option<Id>);
            insert_at_index(parent; index: u64);
        }
        writes {
            move_to(item; at: Placement);
            move_before(item, anchor;);
            move_after(item, anchor;);
            move_between(item; prev: Option<Id>, next: Option<Id>);
            move_to_start(item;);
            move_to_end(item;);
            move_to_index(item; index: u64);
            move_up(item;);
            move_down(item;);
            swap(a, b;);
            move_to_parent(item, parent; at: Placement);
            remove(item;);
            reorder(parent; ids: &[Id]);
            rebalance(parent;);
            heal(parent;);
        }
        reads {
            list(parent) -> Vec<Row>;
            list_versioned(parent) -> Listing;
            index_of(item) -> u64;
            verify(parent) -> Report;
        }
    }

    /// The operations with options ([`Ordering::expect_version`], retries).
    fn ordering() -> Ordering {
        Ordering::of::<Self>()
    }
}

impl<M: Ordered> OrderedDsl for M {}
