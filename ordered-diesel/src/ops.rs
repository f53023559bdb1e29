//! The operations: each one transaction that locks the parent, reads under the lock,
//! plans in `ordered-core` and writes.

use diesel::connection::{AnsiTransactionManager, TransactionManager};
use diesel::result::{DatabaseErrorKind, Error as DieselError, QueryResult};
use ordered_core::{
    Action, Changes, Id, Listing, Ordered, Outcome, Placement, Position, Reply, Report, Request,
    Row, Settings, Spec, Wire, observe, sql,
};

use crate::conn::OrderedConnection;
use crate::error::{Class, Error, Result, classify};
use ordered_core::retry::{Stop, is_connection_lost, refine};

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
    /// `String`), for the insert's `scope.eq(...)`. An error, usable with `?` in the
    /// insert closure, if the key is of another type.
    ///
    /// ```
    /// # use ordered_diesel::{Id, Slot};
    /// fn scope_of(slot: &Slot) -> diesel::QueryResult<i64> {
    ///     slot.scope::<i64>()
    /// }
    /// ```
    pub fn scope<K: ordered_core::ScopeKey>(&self) -> QueryResult<K> {
        K::from_scope(self.parent).ok_or_else(|| {
            DieselError::SerializationError(
                format!(
                    "the collection key {} is not of the type asked for",
                    self.parent
                )
                .into(),
            )
        })
    }

    /// The position as an integer (gapped and dense strategies). An error, usable with
    /// `?` in the insert closure, if the table stores keys.
    pub fn int(&self) -> QueryResult<i64> {
        self.position.as_int().ok_or_else(|| {
            DieselError::SerializationError("the position is a key, not an integer".into())
        })
    }

    /// The position as a fractional key. An error, usable with `?` in the insert
    /// closure, if the table stores integers.
    pub fn key(&self) -> QueryResult<String> {
        self.position.as_key().map(str::to_owned).ok_or_else(|| {
            DieselError::SerializationError("the position is an integer, not a key".into())
        })
    }
}

/// What an insert returns: the caller's own result and the operation's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inserted<T> {
    /// What the insert closure returned (typically the new row or its id).
    pub value: T,
    /// Position, new version, rows written.
    pub outcome: Outcome,
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

    /// Runs `req` as one transaction, with retries when the library owns it, in the
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
        let span = observe::span(&self.s.spec, &req);
        let _entered = span.enter();
        let result = self.attempts(conn, &req, insert, hook);
        let reported = match &result {
            Ok((o, _)) => Ok(o),
            Err(e) => Err(e.code()),
        };
        observe::finished(&span, &self.s.spec, &req, reported);
        result
    }

    fn attempts<C, T>(
        &self,
        conn: &mut C,
        req: &Request,
        mut insert: Option<&mut InsertFn<'_, C, T>>,
        mut hook: Option<&mut HookFn<'_, C>>,
    ) -> Result<(Outcome, Option<T>)>
    where
        C: OrderedConnection,
    {
        let mut attempts = ordered_core::retry::Attempts::new(self.s.retry);
        loop {
            let attempt = attempts.begin();
            // MySQL/MariaDB: is this a Galera node? On one, the probe is also the causal
            // wait that must come before BEGIN
            let probed = if C::DIALECT == ordered_core::Dialect::Mysql {
                galera_flag(conn.run(&sql::galera::probe(), Wire::PLAIN))
            } else {
                Ok(false)
            };
            let result = match probed {
                Err(e) => Err(Error::from(e)),
                Ok(galera) => {
                    attempts.use_policy(self.s.retry_on(galera));
                    match crate::conn::begin_own(conn) {
                        Ok(()) => self.own_transaction(
                            conn,
                            req,
                            insert.as_deref_mut(),
                            hook.as_deref_mut(),
                            galera,
                        ),
                        Err(DieselError::AlreadyInTransaction) => {
                            // inside the caller's transaction: a savepoint, no retries
                            return self.savepoint(
                                conn,
                                req,
                                insert.as_deref_mut(),
                                hook.as_deref_mut(),
                                galera,
                            );
                        }
                        Err(e) => Err(Error::from(e)),
                    }
                }
            };
            match settle(&self.s.spec, req, &mut attempts, attempt, result)? {
                Settled::Done(v) => return Ok(v),
                Settled::Retry(pause) => std::thread::sleep(pause),
                Settled::Duplicate(e) => {
                    let probe = conn.run(&sql::schema_probe(C::DIALECT, &self.s.spec), Wire::PLAIN);
                    return Err(duplicate_error(C::DIALECT, &self.s.spec, e, probe));
                }
            }
        }
    }

    /// One attempt in the library's own transaction, which `BEGIN` has opened: the
    /// operation, then `COMMIT`, or `ROLLBACK` after a failure.
    fn own_transaction<C, T>(
        &self,
        conn: &mut C,
        req: &Request,
        insert: Option<&mut InsertFn<'_, C, T>>,
        hook: Option<&mut HookFn<'_, C>>,
        galera: bool,
    ) -> Result<(Outcome, Option<T>)>
    where
        C: OrderedConnection,
    {
        let mut locked = None;
        let e = match self.drive(conn, req, insert, hook, galera, &mut locked) {
            Ok(v) => {
                return match crate::conn::commit_own(conn) {
                    // a cluster that aborted the transaction may still answer COMMIT with
                    // success; the GTID tells whether it wrote anything
                    Ok(()) if galera => {
                        committed(conn.run(&sql::galera::unchanged(), Wire::PLAIN)).map(|()| v)
                    }
                    Ok(()) => Ok(v),
                    Err(e) => Err(commit_error(e)),
                };
            }
            Err(e) => e,
        };
        // on a node, a failure may follow statements that escaped the transaction: then
        // it is PartiallyApplied, never retried
        let e = if galera {
            // a node that aborted the transaction may answer the next statement with
            // that abort's error instead (MariaDB keeps it "for the next interaction"):
            // then the check is asked once more, so that an escape is never missed
            let mut unchanged = conn.run(&sql::galera::unchanged(), Wire::PLAIN);
            if unchanged.is_err() {
                unchanged = conn.run(&sql::galera::unchanged(), Wire::PLAIN);
            }
            escaped(e, unchanged, locked)
        } else {
            e
        };
        // a failed operation leaves nothing behind; on MySQL this also ends a transaction
        // that a lock-wait timeout left open
        let rolled_back = AnsiTransactionManager::rollback_transaction(conn);
        Err(after_rollback(e, rolled_back))
    }

    /// The operation inside the caller's transaction: a savepoint, and no retries.
    fn savepoint<C, T>(
        &self,
        conn: &mut C,
        req: &Request,
        insert: Option<&mut InsertFn<'_, C, T>>,
        hook: Option<&mut HookFn<'_, C>>,
        galera: bool,
    ) -> Result<(Outcome, Option<T>)>
    where
        C: OrderedConnection,
    {
        AnsiTransactionManager::begin_transaction(conn)?;
        match self.drive(conn, req, insert, hook, galera, &mut None) {
            Ok(v) => {
                AnsiTransactionManager::commit_transaction(conn)?;
                Ok(v)
            }
            Err(e) => {
                // the engine may have rolled the whole transaction back already (an
                // InnoDB deadlock, MariaDB's 1020): the savepoint is gone then, and the
                // engine's error is the one that tells the caller to retry, so it is
                // kept; Diesel marks the caller's transaction for rollback (and a lost
                // connection is ConnectionLost already)
                let _ = AnsiTransactionManager::rollback_transaction(conn);
                Err(e)
            }
        }
    }

    /// One attempt: feeds the state machine until it is done.
    fn drive<C, T>(
        &self,
        conn: &mut C,
        req: &Request,
        mut insert: Option<&mut InsertFn<'_, C, T>>,
        mut hook: Option<&mut HookFn<'_, C>>,
        galera: bool,
        locked: &mut Option<Id>,
    ) -> Result<(Outcome, Option<T>)>
    where
        C: OrderedConnection,
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
                Action::Execute(stmt) => reply = conn.run(&stmt, key)?,
                Action::Insert { parent, position } => {
                    let f = insert.as_mut().ok_or_else(|| {
                        ordered_core::Error::Inconsistent(
                            "an insert without a row to insert".into(),
                        )
                    })?;
                    let slot = Slot::new(parent, position);
                    let sent = slot.clone();
                    value = Some(f(conn, sent)?);
                    reply = slot.reply();
                }
                Action::BeforeCommit(changes) => {
                    if let Some(h) = hook.as_mut() {
                        h(conn, &changes)?;
                    }
                    reply = Reply::None;
                }
                Action::Done(outcome) => return Ok((outcome, value)),
            }
        }
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
        let value = value
            .ok_or_else(|| ordered_core::Error::Inconsistent("the insert did not run".into()))?;
        Ok(Inserted { value, outcome })
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
        let value = value
            .ok_or_else(|| ordered_core::Error::Inconsistent("the insert did not run".into()))?;
        Ok(Inserted { value, outcome })
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

    fn write<C: OrderedConnection>(&self, conn: &mut C, req: Request) -> Result<Outcome> {
        self.execute::<C, ()>(conn, req, None, None).map(|(o, _)| o)
    }

    /// Inserts a row at the start of `parent`'s list. `insert` runs the caller's own
    /// Diesel insert, with the parent and position in [`Slot`], inside the library's
    /// transaction (it may run again if the operation is retried).
    pub fn insert_first<C, T, F>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
        insert: F,
    ) -> Result<Inserted<T>>
    where
        C: OrderedConnection,
        F: FnMut(&mut C, Slot) -> QueryResult<T>,
    {
        let parent = parent.into();
        self.insert(conn, parent, Placement::First, insert)
    }

    /// Inserts a row at the end of `parent`'s list.
    pub fn insert_last<C, T, F>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
        insert: F,
    ) -> Result<Inserted<T>>
    where
        C: OrderedConnection,
        F: FnMut(&mut C, Slot) -> QueryResult<T>,
    {
        let parent = parent.into();
        self.insert(conn, parent, Placement::Last, insert)
    }

    /// Inserts a row directly before `anchor` in `parent`'s list.
    pub fn insert_before<C, T, F>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
        anchor: impl Into<Id>,
        insert: F,
    ) -> Result<Inserted<T>>
    where
        C: OrderedConnection,
        F: FnMut(&mut C, Slot) -> QueryResult<T>,
    {
        let parent = parent.into();
        let anchor = anchor.into();
        self.insert(conn, parent, Placement::Before(anchor), insert)
    }

    /// Inserts a row directly after `anchor` in `parent`'s list.
    pub fn insert_after<C, T, F>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
        anchor: impl Into<Id>,
        insert: F,
    ) -> Result<Inserted<T>>
    where
        C: OrderedConnection,
        F: FnMut(&mut C, Slot) -> QueryResult<T>,
    {
        let parent = parent.into();
        let anchor = anchor.into();
        self.insert(conn, parent, Placement::After(anchor), insert)
    }

    /// Inserts a row between `prev` and `next` (`None`: the start or end), which must
    /// still be adjacent: otherwise [`ordered_core::Error::StaleNeighbours`].
    pub fn insert_between<C, T, F>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
        prev: Option<Id>,
        next: Option<Id>,
        insert: F,
    ) -> Result<Inserted<T>>
    where
        C: OrderedConnection,
        F: FnMut(&mut C, Slot) -> QueryResult<T>,
    {
        let parent = parent.into();
        self.insert(conn, parent, Placement::Between { prev, next }, insert)
    }

    /// Inserts a row at `index` (0-based; the list's length appends).
    pub fn insert_at_index<C, T, F>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
        index: u64,
        insert: F,
    ) -> Result<Inserted<T>>
    where
        C: OrderedConnection,
        F: FnMut(&mut C, Slot) -> QueryResult<T>,
    {
        let parent = parent.into();
        self.insert(conn, parent, Placement::Index(index), insert)
    }

    /// Moves `item` to any [`Placement`] in its own collection (the named `move_*`
    /// methods are shorthands for it).
    pub fn move_to<C: OrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
        at: Placement,
    ) -> Result<Outcome> {
        let item = item.into();
        self.write(conn, Request::Move { item, at })
    }

    /// Moves `item` directly before `anchor` (same collection).
    pub fn move_before<C: OrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
        anchor: impl Into<Id>,
    ) -> Result<Outcome> {
        let item = item.into();
        let anchor = anchor.into();
        self.write(
            conn,
            Request::Move {
                item,
                at: Placement::Before(anchor),
            },
        )
    }

    /// Moves `item` directly after `anchor` (same collection).
    pub fn move_after<C: OrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
        anchor: impl Into<Id>,
    ) -> Result<Outcome> {
        let item = item.into();
        let anchor = anchor.into();
        self.write(
            conn,
            Request::Move {
                item,
                at: Placement::After(anchor),
            },
        )
    }

    /// Moves `item` between `prev` and `next`, which must still be adjacent once `item`
    /// is left out.
    pub fn move_between<C: OrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
        prev: Option<Id>,
        next: Option<Id>,
    ) -> Result<Outcome> {
        let item = item.into();
        self.write(
            conn,
            Request::Move {
                item,
                at: Placement::Between { prev, next },
            },
        )
    }

    /// Moves `item` to the start of its list.
    pub fn move_to_start<C: OrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
    ) -> Result<Outcome> {
        let item = item.into();
        self.write(
            conn,
            Request::Move {
                item,
                at: Placement::First,
            },
        )
    }

    /// Moves `item` to the end of its list.
    pub fn move_to_end<C: OrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
    ) -> Result<Outcome> {
        let item = item.into();
        self.write(
            conn,
            Request::Move {
                item,
                at: Placement::Last,
            },
        )
    }

    /// Moves `item` to `index` of its list (counted without the item).
    pub fn move_to_index<C: OrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
        index: u64,
    ) -> Result<Outcome> {
        let item = item.into();
        self.write(
            conn,
            Request::Move {
                item,
                at: Placement::Index(index),
            },
        )
    }

    /// Moves `item` one place towards the start (nothing if it is first).
    pub fn move_up<C: OrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
    ) -> Result<Outcome> {
        let item = item.into();
        self.write(conn, Request::MoveUp { item })
    }

    /// Moves `item` one place towards the end (nothing if it is last).
    pub fn move_down<C: OrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
    ) -> Result<Outcome> {
        let item = item.into();
        self.write(conn, Request::MoveDown { item })
    }

    /// Exchanges the places of `a` and `b` (same collection).
    pub fn swap<C: OrderedConnection>(
        &self,
        conn: &mut C,
        a: impl Into<Id>,
        b: impl Into<Id>,
    ) -> Result<Outcome> {
        let a = a.into();
        let b = b.into();
        self.write(conn, Request::Swap { a, b })
    }

    /// Moves `item` into collection `parent` at `at`, locking both collections in
    /// increasing key order.
    pub fn move_to_parent<C: OrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
        parent: impl Into<Id>,
        at: Placement,
    ) -> Result<Outcome> {
        let item = item.into();
        let parent = parent.into();
        self.write(conn, Request::MoveToParent { item, parent, at })
    }

    /// Deletes `item` (dense lists close the gap).
    pub fn remove<C: OrderedConnection>(
        &self,
        conn: &mut C,
        item: impl Into<Id>,
    ) -> Result<Outcome> {
        let item = item.into();
        self.write(conn, Request::Remove { item })
    }

    /// Sets the whole order of `parent` to `ids`, which must be exactly its current
    /// items. Writes only the rows that must move (n minus the longest increasing run).
    pub fn reorder<C: OrderedConnection>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
        ids: &[Id],
    ) -> Result<Outcome> {
        let parent = parent.into();
        self.write(
            conn,
            Request::Reorder {
                parent,
                ids: ids.to_vec(),
            },
        )
    }

    /// Spreads `parent`'s items evenly, keeping their order.
    pub fn rebalance<C: OrderedConnection>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
    ) -> Result<Outcome> {
        let parent = parent.into();
        self.write(conn, Request::Rebalance { parent })
    }

    /// Repairs what [`Ordering::verify`] reports (duplicates, out-of-domain positions,
    /// over-long keys) by relabelling the collection in its current `ORDER BY position,
    /// id` order.
    pub fn heal<C: OrderedConnection>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
    ) -> Result<Outcome> {
        let parent = parent.into();
        self.rebalance(conn, parent)
    }

    /// The items of `parent`, `ORDER BY position, id`.
    pub fn list<C: OrderedConnection>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
    ) -> Result<Vec<Row>> {
        let parent = self.s.scope_key(parent.into())?;
        read_rows(
            conn,
            &sql::list(C::DIALECT, &self.s.spec, parent),
            self.s.wire(),
        )
    }

    /// The items of `parent` with the collection's version, read in one statement, so
    /// the version is the one of this very list (without a version column,
    /// `version` is `None`). Send both to the client; it sends the version back with
    /// its next write ([`Ordering::expect_version`]), which is refused with
    /// [`ordered_core::Error::VersionConflict`] if anyone wrote in between. A missing
    /// parent is [`ordered_core::Error::ParentNotFound`].
    ///
    /// ```
    /// # include!("../doctest_setup.rs");
    /// # fn main() -> Result<(), ordered_diesel::Error> {
    /// # let conn = &mut setup();
    /// let a = Track::insert_last(conn, 1, |c, slot| new_track(c, slot, "A"))?.value;
    /// let seen = Track::ordering().list_versioned(conn, 1)?;
    /// assert_eq!(seen.rows.len(), 1);
    /// // the client drags with the version it was shown
    /// let moved = Track::ordering()
    ///     .expect_version(seen.version.unwrap())
    ///     .move_to_start(conn, a)?;
    /// assert_eq!(moved.version, Some(seen.version.unwrap() + 1));
    /// # Ok(()) }
    /// ```
    pub fn list_versioned<C: OrderedConnection>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
    ) -> Result<Listing> {
        let parent = self.s.scope_key(parent.into())?;
        let stmt = sql::list_versioned(C::DIALECT, &self.s.spec, parent);
        let reply = read(conn, &stmt, self.s.wire())?;
        Ok(Listing::from_reply(&self.s.spec, parent, reply)?)
    }

    /// The 0-based index of `item` in its list.
    pub fn index_of<C: OrderedConnection>(&self, conn: &mut C, item: impl Into<Id>) -> Result<u64> {
        let item = self.s.item_key(item.into())?;
        let item_read = ordered_core::plan::Read::Item { id: item };
        let row = match read(
            conn,
            &sql::read(C::DIALECT, &self.s.spec, &item_read, false),
            self.s.wire(),
        )? {
            Reply::Rows(rows) => rows.into_iter().next(),
            other => return Err(unexpected(&other)),
        }
        .ok_or(ordered_core::Error::NotFound { id: item })?;
        let stmt = sql::count_before(C::DIALECT, &self.s.spec, row.parent, &row.position);
        match conn.run(&stmt, self.s.wire())? {
            Reply::Count(n) => Ok(u64::try_from(n).unwrap_or(0)),
            other => Err(unexpected(&other)),
        }
    }

    /// Checks `parent`'s collection: duplicate positions, positions outside the domain,
    /// over-long keys, and that the database returns them in byte order.
    pub fn verify<C: OrderedConnection>(
        &self,
        conn: &mut C,
        parent: impl Into<Id>,
    ) -> Result<Report> {
        // every row, the ones the row filter leaves out included
        let parent = self.s.scope_key(parent.into())?;
        let stmt = sql::list_all(C::DIALECT, &self.s.spec, parent);
        let rows = read_rows(conn, &stmt, self.s.wire())?;
        Ok(ordered_core::verify(&self.s.spec, &rows))
    }

    /// Checks the table for what the protocol relies on: a unique constraint on exactly
    /// `(scope, position)`, deferrable on PostgreSQL (the one-statement relabel needs
    /// it), and a CHECK constraint on the position column (the library's domain). A
    /// problem is [`ordered_core::Error::SchemaMismatch`], which says the statement that
    /// fixes it. Run it at startup or in a migration test when adopting an existing
    /// table, beside [`Ordering::check_key_order`]; it reads the catalog, no rows.
    ///
    /// ```
    /// # include!("../doctest_setup.rs");
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let conn = &mut setup();
    /// // the generated migration creates the constraint
    /// ordered_diesel::Ordering::of::<Track>().check_schema(conn)?;
    /// # Ok(()) }
    /// ```
    pub fn check_schema<C: OrderedConnection>(&self, conn: &mut C) -> Result<()> {
        match conn.run(&sql::schema_probe(C::DIALECT, &self.s.spec), Wire::PLAIN)? {
            Reply::Count(n) => Ok(ordered_core::check_schema(C::DIALECT, &self.s.spec, n)?),
            other => Err(unexpected(&other)),
        }
    }

    /// Checks that the key column sorts by raw bytes, by behaviour rather than by the
    /// catalog: the engine sorts and deduplicates a set of probe strings under the
    /// column's collation, and any difference from byte order is
    /// [`ordered_core::Error::KeyCollation`]. Run it at startup or in a migration test;
    /// integer positions need no check. It reads no rows.
    ///
    /// ```
    /// # include!("../doctest_setup.rs");
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let conn = &mut setup();
    /// // Track positions are integers: nothing to probe; key columns are probed
    /// ordered_diesel::Ordering::of::<Track>().check_key_order(conn)?;
    /// # Ok(()) }
    /// ```
    pub fn check_key_order<C: OrderedConnection>(&self, conn: &mut C) -> Result<()> {
        if !self.s.is_key() {
            return Ok(());
        }
        let stmt = sql::probe_key_order(
            C::DIALECT,
            &self.s.spec,
            ordered_core::verify::KEY_ORDER_PROBES,
        );
        match conn.run(&stmt, self.s.wire())? {
            Reply::Rows(rows) => Ok(ordered_core::check_key_order(&self.s.spec, &rows)?),
            other => Err(unexpected(&other)),
        }
    }
}

pub(crate) fn unexpected(r: &Reply) -> Error {
    Error::Ordering(ordered_core::Error::Inconsistent(format!(
        "unexpected reply from the connection: {r:?}"
    )))
}

/// A failed COMMIT: a refusal the server stated is a rollback; a lost connection leaves
/// the outcome unknown.
pub(crate) fn commit_error(e: DieselError) -> Error {
    match &e {
        DieselError::DatabaseError(..) if !connection_lost(&e) => Error::Database(e),
        _ => Error::CommitUnknown(e),
    }
}

/// What [`settle`] makes of an attempt.
pub(crate) enum Settled<T> {
    /// It succeeded: return this.
    Done(T),
    /// Retry after this pause.
    Retry(std::time::Duration),
    /// A duplicate position came back after the retry: return this error, unless the
    /// schema probe ([`sql::schema_probe`]) explains it (a PostgreSQL constraint that is
    /// not deferrable).
    Duplicate(Error),
}

/// The error to return for [`Settled::Duplicate`], given the reply to the schema probe.
pub(crate) fn duplicate_error(
    d: ordered_core::Dialect,
    spec: &Spec,
    err: Error,
    probe: QueryResult<Reply>,
) -> Error {
    match probe {
        Ok(Reply::Count(n)) => {
            ordered_core::verify::check_unique(d, spec, n).map_or_else(Error::from, |()| err)
        }
        _ => err,
    }
}

/// The end of one attempt, for the sync and the async adapter alike: a success gets its
/// attempt count (and a relabel is logged); a failure is classified, and either retried
/// after a pause or turned into the error to return.
pub(crate) fn settle<T>(
    spec: &Spec,
    req: &Request,
    attempts: &mut ordered_core::retry::Attempts,
    attempt: u32,
    result: Result<(Outcome, Option<T>)>,
) -> Result<Settled<(Outcome, Option<T>)>> {
    let err = match result {
        Ok(mut v) => {
            v.0.attempts = attempt;
            return Ok(Settled::Done(v));
        }
        // the connection is gone: retrying on it cannot help
        Err(e @ Error::ConnectionLost(_)) => return Err(e),
        Err(e) => e,
    };
    let class = match &err {
        Error::Database(e) => refine(spec, &e.to_string(), classify(e)),
        Error::Ordering(e) if e.is_retryable() => Class::Retry,
        _ => Class::Fatal,
    };
    // a duplicate on a key the spec does not name: the caller's row, or a unique index on
    // (scope, position) under another name, which the schema probe can tell
    if matches!(&err, Error::Database(e) if classify(e) == Class::RetryOnce)
        && class == Class::Fatal
    {
        return Ok(Settled::Duplicate(err));
    }
    match attempts.after_failure(class) {
        Ok(pause) => {
            observe::retried(spec, req, attempt, &err);
            Ok(Settled::Retry(pause))
        }
        Err(Stop::Exhausted) => Err(match err {
            Error::Database(last) => Error::RetriesExhausted {
                attempts: attempt,
                last,
            },
            other => other,
        }),
        // a bug, a table changed behind the library's back, or (the caller checks) a
        // constraint that cannot be deferred
        Err(Stop::DuplicateAgain) => Ok(Settled::Duplicate(Error::Ordering(
            ordered_core::Error::Inconsistent(format!(
                "a duplicate position survived a retry ({err})"
            )),
        ))),
        Err(Stop::Fatal) => Err(err),
    }
}

/// The error of a failed attempt after its `ROLLBACK`.
pub(crate) fn after_rollback(e: Error, rolled_back: QueryResult<()>) -> Error {
    match (e, rolled_back) {
        // the server rolls back what it did not commit; part of a PartiallyApplied
        // operation is committed, whatever the ROLLBACK says
        (
            e @ (Error::ConnectionLost(_)
            | Error::Ordering(ordered_core::Error::PartiallyApplied { .. })),
            _,
        ) => e,
        (e, Ok(())) => e,
        // Diesel marks the connection broken when a ROLLBACK fails (Galera answers one
        // with 1213 after aborting the transaction): the server has ended the
        // transaction, and the connection must be replaced
        (_, Err(rb)) => Error::ConnectionLost(rb),
    }
}

/// A failed attempt on a Galera node, with the reply to [`sql::galera::unchanged`] run
/// before its `ROLLBACK`: if the session replicated anything since the transaction's
/// mark, statements escaped the transaction before it failed, and the failure is
/// [`ordered_core::Error::PartiallyApplied`] on the first locked collection (a retry
/// would apply the operation on top of part of itself).
pub(crate) fn escaped(e: Error, unchanged: QueryResult<Reply>, locked: Option<Id>) -> Error {
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

/// The reply to [`sql::galera::unchanged`] after `COMMIT`.
pub(crate) fn committed(reply: QueryResult<Reply>) -> Result<()> {
    match reply {
        Ok(Reply::Count(n)) => Ok(sql::galera::check_committed(n)?),
        Ok(other) => Err(unexpected(&other)),
        Err(e) => Err(Error::CommitUnknown(e)),
    }
}

/// The reply to [`sql::galera::probe`]: whether the server is a Galera node.
pub(crate) fn galera_flag(reply: QueryResult<Reply>) -> QueryResult<bool> {
    match reply {
        Ok(Reply::Count(on)) => Ok(on == 1),
        Ok(_) => Ok(false),
        Err(DieselError::DatabaseError(_, info)) if sql::galera::is_not_galera(info.message()) => {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// The reply to a causal read ([`sql::galera::causal`]); `None` when the server has no
/// Galera support, and the read must run as it is.
pub(crate) fn causal_reply(reply: QueryResult<Reply>) -> Option<Result<Reply>> {
    match reply {
        Err(DieselError::DatabaseError(_, info)) if sql::galera::is_not_galera(info.message()) => {
            None
        }
        r => Some(r.map_err(Error::from)),
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

/// A read outside the library's transactions; on MySQL/MariaDB a causal read
/// ([`sql::galera::causal`]), so that on a Galera node it sees every write the cluster
/// committed before it, whichever node took them.
fn read<C: OrderedConnection>(
    conn: &mut C,
    stmt: &ordered_core::Statement,
    key: Wire,
) -> Result<Reply> {
    if C::DIALECT == ordered_core::Dialect::Mysql
        && let Some(r) = causal_reply(conn.run(&sql::galera::causal(stmt), key))
    {
        return r;
    }
    Ok(conn.run(stmt, key)?)
}

/// The item rows of a [`read`] (`list`, `verify`).
fn read_rows<C: OrderedConnection>(
    conn: &mut C,
    stmt: &ordered_core::Statement,
    key: Wire,
) -> Result<Vec<Row>> {
    match read(conn, stmt, key)? {
        Reply::Rows(rows) => Ok(rows),
        other => Err(unexpected(&other)),
    }
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
    /// [`Ordering::insert_first`].
    fn insert_first<C, T, F>(conn: &mut C, parent: impl Into<Id>, insert: F) -> Result<Inserted<T>>
    where
        C: OrderedConnection,
        F: FnMut(&mut C, Slot) -> QueryResult<T>,
    {
        let parent = parent.into();
        Ordering::of::<Self>().insert_first(conn, parent, insert)
    }
    /// [`Ordering::insert_last`].
    fn insert_last<C, T, F>(conn: &mut C, parent: impl Into<Id>, insert: F) -> Result<Inserted<T>>
    where
        C: OrderedConnection,
        F: FnMut(&mut C, Slot) -> QueryResult<T>,
    {
        let parent = parent.into();
        Ordering::of::<Self>().insert_last(conn, parent, insert)
    }
    /// [`Ordering::insert_before`].
    fn insert_before<C, T, F>(
        conn: &mut C,
        parent: impl Into<Id>,
        anchor: impl Into<Id>,
        insert: F,
    ) -> Result<Inserted<T>>
    where
        C: OrderedConnection,
        F: FnMut(&mut C, Slot) -> QueryResult<T>,
    {
        let parent = parent.into();
        let anchor = anchor.into();
        Ordering::of::<Self>().insert_before(conn, parent, anchor, insert)
    }
    /// [`Ordering::insert_after`].
    fn insert_after<C, T, F>(
        conn: &mut C,
        parent: impl Into<Id>,
        anchor: impl Into<Id>,
        insert: F,
    ) -> Result<Inserted<T>>
    where
        C: OrderedConnection,
        F: FnMut(&mut C, Slot) -> QueryResult<T>,
    {
        let parent = parent.into();
        let anchor = anchor.into();
        Ordering::of::<Self>().insert_after(conn, parent, anchor, insert)
    }
    /// [`Ordering::insert_between`].
    fn insert_between<C, T, F>(
        conn: &mut C,
        parent: impl Into<Id>,
        prev: Option<Id>,
        next: Option<Id>,
        insert: F,
    ) -> Result<Inserted<T>>
    where
        C: OrderedConnection,
        F: FnMut(&mut C, Slot) -> QueryResult<T>,
    {
        let parent = parent.into();
        Ordering::of::<Self>().insert_between(conn, parent, prev, next, insert)
    }
    /// [`Ordering::move_before`].
    fn move_before<C: OrderedConnection>(
        conn: &mut C,
        item: impl Into<Id>,
        anchor: impl Into<Id>,
    ) -> Result<Outcome> {
        let item = item.into();
        let anchor = anchor.into();
        Ordering::of::<Self>().move_before(conn, item, anchor)
    }
    /// [`Ordering::move_after`].
    fn move_after<C: OrderedConnection>(
        conn: &mut C,
        item: impl Into<Id>,
        anchor: impl Into<Id>,
    ) -> Result<Outcome> {
        let item = item.into();
        let anchor = anchor.into();
        Ordering::of::<Self>().move_after(conn, item, anchor)
    }
    /// [`Ordering::move_between`].
    fn move_between<C: OrderedConnection>(
        conn: &mut C,
        item: impl Into<Id>,
        prev: Option<Id>,
        next: Option<Id>,
    ) -> Result<Outcome> {
        let item = item.into();
        Ordering::of::<Self>().move_between(conn, item, prev, next)
    }
    /// [`Ordering::move_to_start`].
    fn move_to_start<C: OrderedConnection>(conn: &mut C, item: impl Into<Id>) -> Result<Outcome> {
        let item = item.into();
        Ordering::of::<Self>().move_to_start(conn, item)
    }
    /// [`Ordering::move_to_end`].
    fn move_to_end<C: OrderedConnection>(conn: &mut C, item: impl Into<Id>) -> Result<Outcome> {
        let item = item.into();
        Ordering::of::<Self>().move_to_end(conn, item)
    }
    /// [`Ordering::move_to_index`].
    fn move_to_index<C: OrderedConnection>(
        conn: &mut C,
        item: impl Into<Id>,
        index: u64,
    ) -> Result<Outcome> {
        let item = item.into();
        Ordering::of::<Self>().move_to_index(conn, item, index)
    }
    /// [`Ordering::move_up`].
    fn move_up<C: OrderedConnection>(conn: &mut C, item: impl Into<Id>) -> Result<Outcome> {
        let item = item.into();
        Ordering::of::<Self>().move_up(conn, item)
    }
    /// [`Ordering::move_down`].
    fn move_down<C: OrderedConnection>(conn: &mut C, item: impl Into<Id>) -> Result<Outcome> {
        let item = item.into();
        Ordering::of::<Self>().move_down(conn, item)
    }
    /// [`Ordering::swap`].
    fn swap<C: OrderedConnection>(
        conn: &mut C,
        a: impl Into<Id>,
        b: impl Into<Id>,
    ) -> Result<Outcome> {
        let a = a.into();
        let b = b.into();
        Ordering::of::<Self>().swap(conn, a, b)
    }
    /// [`Ordering::move_to_parent`].
    fn move_to_parent<C: OrderedConnection>(
        conn: &mut C,
        item: impl Into<Id>,
        parent: impl Into<Id>,
        at: Placement,
    ) -> Result<Outcome> {
        let item = item.into();
        let parent = parent.into();
        Ordering::of::<Self>().move_to_parent(conn, item, parent, at)
    }
    /// [`Ordering::remove`].
    fn remove<C: OrderedConnection>(conn: &mut C, item: impl Into<Id>) -> Result<Outcome> {
        let item = item.into();
        Ordering::of::<Self>().remove(conn, item)
    }
    /// [`Ordering::reorder`].
    fn reorder<C: OrderedConnection>(
        conn: &mut C,
        parent: impl Into<Id>,
        ids: &[Id],
    ) -> Result<Outcome> {
        let parent = parent.into();
        Ordering::of::<Self>().reorder(conn, parent, ids)
    }
    /// [`Ordering::rebalance`].
    fn rebalance<C: OrderedConnection>(conn: &mut C, parent: impl Into<Id>) -> Result<Outcome> {
        let parent = parent.into();
        Ordering::of::<Self>().rebalance(conn, parent)
    }
    /// [`Ordering::heal`].
    fn heal<C: OrderedConnection>(conn: &mut C, parent: impl Into<Id>) -> Result<Outcome> {
        let parent = parent.into();
        Ordering::of::<Self>().heal(conn, parent)
    }
    /// [`Ordering::list`].
    fn list<C: OrderedConnection>(conn: &mut C, parent: impl Into<Id>) -> Result<Vec<Row>> {
        let parent = parent.into();
        Ordering::of::<Self>().list(conn, parent)
    }
    /// [`Ordering::list_versioned`].
    fn list_versioned<C: OrderedConnection>(
        conn: &mut C,
        parent: impl Into<Id>,
    ) -> Result<Listing> {
        let parent = parent.into();
        Ordering::of::<Self>().list_versioned(conn, parent)
    }
    /// [`Ordering::index_of`].
    fn index_of<C: OrderedConnection>(conn: &mut C, item: impl Into<Id>) -> Result<u64> {
        let item = item.into();
        Ordering::of::<Self>().index_of(conn, item)
    }
    /// [`Ordering::verify`].
    fn verify<C: OrderedConnection>(conn: &mut C, parent: impl Into<Id>) -> Result<Report> {
        let parent = parent.into();
        Ordering::of::<Self>().verify(conn, parent)
    }
    /// The operations with options ([`Ordering::expect_version`], retries).
    fn ordering() -> Ordering {
        Ordering::of::<Self>()
    }
}

impl<M: Ordered> OrderedDsl for M {}
