//! The operation catalogue, written once for every front.

/// The catalogue of operations of an adapter's `OrderedTable<K, P>`, written once for
/// every front (sync Diesel, diesel-async, SeaORM): the named inserts, every write,
/// every read, with the keys in the model's own types (`K` the item's, `P` the
/// list's, both [`AppKey`](crate::AppKey)).
///
/// The front writes, in the `impl<K: AppKey, P: AppKey>` block the macro is called in,
/// four methods the catalogue calls:
/// - `insert(&self, conn, parent: impl Into<P>, at: Placement, insert: F) -> Result<Inserted<T, K, P>>`;
/// - `write(&self, conn, req: Request) -> Result<Outcome<K, P>>`;
/// - `read(&self, conn, job: Job) -> Result<Finished>`;
/// - `schema_job(&self, conn, job: Job) -> Result<Finished>`: a job that may open a
///   transaction (`ensure_ordering`), on the writers' connection type.
///
/// `Result` and `Slot` are the front's own, named where the macro is called. The
/// arguments: `async` or `sync`, the connection parameter's type and bound (`reads:` a
/// looser one for the reads, which open no transaction), and the insert closure's
/// bound.
#[doc(hidden)]
#[macro_export]
macro_rules! operations {
    (@fn sync $(#[$m:meta])* pub fn $($rest:tt)*) => { $(#[$m])* pub fn $($rest)* };
    (@fn async $(#[$m:meta])* pub fn $($rest:tt)*) => { $(#[$m])* pub async fn $($rest)* };
    (@await sync $e:expr) => { $e };
    (@await async $e:expr) => { $e.await };
    (
        $mode:ident;
        conn: $conn:ty where C: $cbound:path;
        insert: where $($ibound:tt)+
    ) => {
        $crate::operations! { $mode; conn: $conn where C: $cbound; reads: $cbound; insert: where $($ibound)+ }
    };
    (
        $mode:ident;
        conn: $conn:ty where C: $cbound:path;
        reads: $rbound:path;
        insert: where $($ibound:tt)+
    ) => {
        $crate::operations!(@inserts $mode $conn; $cbound; [$($ibound)+];
            /// Inserts a row at the start of `parent`'s list. `insert` runs your own
            /// insert with the parent and position in its [`Slot`], inside the
            /// library's transaction (it may run again if the operation is retried).
            insert_first(;) => $crate::Placement::First;
            /// Inserts a row at the end of `parent`'s list.
            insert_last(;) => $crate::Placement::Last;
            /// Inserts a row directly before `anchor` in `parent`'s list.
            insert_before(; anchor: impl Into<K>) => $crate::Placement::Before($crate::adapter::key::<K>(&anchor.into())?);
            /// Inserts a row directly after `anchor` in `parent`'s list.
            insert_after(; anchor: impl Into<K>) => $crate::Placement::After($crate::adapter::key::<K>(&anchor.into())?);
            /// Inserts a row between `prev` and `next` (`None`: the start or end), which
            /// must still be adjacent: otherwise
            /// [`StaleNeighbours`](ordered_core::Error::StaleNeighbours).
            insert_between(; prev: Option<K>, next: Option<K>) => $crate::Placement::Between {
                prev: $crate::adapter::opt_key(&prev)?,
                next: $crate::adapter::opt_key(&next)?,
            };
            /// Inserts a row at `index` (0-based; the list's length appends).
            insert_at_index(; index: u64) => $crate::Placement::Index(index);
        );
        $crate::operations!(@writes $mode $conn; $cbound;
            /// Moves `item` to a [`Placement`](ordered_core::Placement) chosen at run
            /// time in its own list, as `insert` inserts at one (the named moves below
            /// are its shorthands; a drag is [`move_between`](Self::move_between)).
            move_to(item: impl Into<K>, at: $crate::Placement) => $crate::Request::Move {
                item: $crate::adapter::key::<K>(&item.into())?,
                at,
            };
            /// Moves `item` directly before `anchor` (same list).
            move_before(item: impl Into<K>, anchor: impl Into<K>) => $crate::Request::Move {
                item: $crate::adapter::key::<K>(&item.into())?,
                at: $crate::Placement::Before($crate::adapter::key::<K>(&anchor.into())?),
            };
            /// Moves `item` directly after `anchor` (same list).
            move_after(item: impl Into<K>, anchor: impl Into<K>) => $crate::Request::Move {
                item: $crate::adapter::key::<K>(&item.into())?,
                at: $crate::Placement::After($crate::adapter::key::<K>(&anchor.into())?),
            };
            /// A drag: moves `item` between `prev` and `next` (`None`: the start or the
            /// end of the list), which must still be adjacent once `item` is left out,
            /// else [`StaleNeighbours`](ordered_core::Error::StaleNeighbours). A drop
            /// where the item already is writes nothing and reports
            /// [`Outcome::unchanged`](ordered_core::Outcome::unchanged).
            move_between(item: impl Into<K>, prev: Option<K>, next: Option<K>) => $crate::Request::Move {
                item: $crate::adapter::key::<K>(&item.into())?,
                at: $crate::Placement::Between {
                    prev: $crate::adapter::opt_key(&prev)?,
                    next: $crate::adapter::opt_key(&next)?,
                },
            };
            /// Moves `item` to the start of its list.
            move_to_start(item: impl Into<K>) => $crate::Request::Move {
                item: $crate::adapter::key::<K>(&item.into())?,
                at: $crate::Placement::First,
            };
            /// Moves `item` to the end of its list.
            move_to_end(item: impl Into<K>) => $crate::Request::Move {
                item: $crate::adapter::key::<K>(&item.into())?,
                at: $crate::Placement::Last,
            };
            /// Moves `item` to `index` of its list (counted without the item).
            move_to_index(item: impl Into<K>, index: u64) => $crate::Request::Move {
                item: $crate::adapter::key::<K>(&item.into())?,
                at: $crate::Placement::Index(index),
            };
            /// Moves `item` one place towards the start (nothing if it is first).
            move_up(item: impl Into<K>) => $crate::Request::MoveUp { item: $crate::adapter::key::<K>(&item.into())? };
            /// Moves `item` one place towards the end (nothing if it is last).
            move_down(item: impl Into<K>) => $crate::Request::MoveDown { item: $crate::adapter::key::<K>(&item.into())? };
            /// Exchanges the places of `a` and `b` (same list).
            swap(a: impl Into<K>, b: impl Into<K>) => $crate::Request::Swap {
                a: $crate::adapter::key::<K>(&a.into())?,
                b: $crate::adapter::key::<K>(&b.into())?,
            };
            /// Moves `item` into list `parent` at `at`, locking both lists in
            /// increasing key order.
            move_to_parent(item: impl Into<K>, parent: impl Into<P>, at: $crate::Placement) => $crate::Request::MoveToParent {
                item: $crate::adapter::key::<K>(&item.into())?,
                parent: $crate::adapter::key::<P>(&parent.into())?,
                at,
            };
            /// Deletes `item` (dense lists close the gap). Rows the database deletes
            /// with it (`ON DELETE CASCADE`) are listed in the changes' `removed` too.
            remove(item: impl Into<K>) => $crate::Request::Remove { item: $crate::adapter::key::<K>(&item.into())? };
            /// Sets the whole order of `parent` to `ids`, which must be exactly its
            /// current items. Writes only the rows that must move (n minus the longest
            /// increasing run).
            reorder(parent: impl Into<P>, ids: &[K]) => $crate::Request::Reorder {
                parent: $crate::adapter::key::<P>(&parent.into())?,
                ids: $crate::adapter::keys(ids)?,
            };
            /// Spreads `parent`'s items evenly, keeping their order; it also repairs
            /// what `verify` reports (duplicates, out-of-domain positions, over-long
            /// keys) by relabelling the list in its current `ORDER BY position, id`
            /// order.
            rebalance(parent: impl Into<P>) => $crate::Request::Rebalance { parent: $crate::adapter::key::<P>(&parent.into())? };
        );
        $crate::operations!(@reads $mode $conn; $rbound;
            /// The items of `parent`, `ORDER BY position, id`.
            list(parent: impl Into<P>) -> Vec<$crate::Row<K, P>> => List, into_rows, |rows: Vec<$crate::Row>| {
                rows.into_iter().map($crate::Row::typed).collect::<Result<Vec<_>, _>>()
            };
            /// The items of `parent` with the list's version, read in one statement, so
            /// the version is the one of this very list (without a version column,
            /// `version` is `None`). Send both to the client; with
            /// [`Concurrency::Version`](ordered_core::Concurrency) it sends the version
            /// back with its next write, which is refused with
            /// [`VersionConflict`](ordered_core::Error::VersionConflict) if anyone wrote
            /// in between. A missing parent is
            /// [`ParentNotFound`](ordered_core::Error::ParentNotFound).
            list_versioned(parent: impl Into<P>) -> $crate::Listing<$crate::Row<K, P>> => ListVersioned, into_listing, $crate::Listing::typed;
            /// The 0-based index of `item` in its list.
            index_of(item: impl Into<K>) -> u64 => IndexOf, into_index, Ok::<u64, $crate::Error>;
            /// Checks `parent`'s list: duplicate positions, positions outside the
            /// domain, over-long keys, and that the database returns them in byte order.
            verify(parent: impl Into<P>) -> $crate::Report => Verify, into_report, Ok::<$crate::Report, $crate::Error>;
        );

        $crate::operations!(@fn $mode
        /// A page of `parent`'s list for a client that scrolls through a long one: at
        /// most `limit` rows (at least one) after `after` (`None`: from the start),
        /// `ORDER BY position, id`, with the list's version read in the same statement
        /// and the [`Cursor`](ordered_core::Cursor) of the next page (`None` after the
        /// last row). Unlike an offset, the cursor names a place in the list, so a row
        /// moved meanwhile does not shift the next page; and it carries the version, so
        /// a page read after the list changed is refused with
        /// [`ListChanged`](ordered_core::Error::ListChanged) (409): start again from the
        /// first page, or go on with [`Cursor::resume`](ordered_core::Cursor::resume).
        /// Without a version column the pages cannot tell. A missing parent is
        /// [`ParentNotFound`](ordered_core::Error::ParentNotFound).
        pub fn page<C: $rbound>(
            &self,
            conn: $conn,
            parent: impl Into<P>,
            after: Option<&$crate::Cursor<K>>,
            limit: u32,
        ) -> Result<$crate::RowPage<K, P>> {
            let job = $crate::adapter::Job::Page {
                parent: $crate::adapter::key::<P>(&parent.into())?,
                after: after.map($crate::adapter::cursor).transpose()?,
                limit,
            };
            let f = $crate::operations!(@await $mode self.read(conn, job))?;
            Ok(f.into_page()?.typed()?)
        });

        $crate::operations!(@fn $mode
        /// Deletes this table's request records ([`requests`](ordered_core::requests))
        /// made more than `older_than` ago, at most `batch` per statement (each its
        /// own short transaction outside yours, so no lock is held for long), until a
        /// batch comes back short; returns how many it deleted. Schedule it (hourly,
        /// say) with the retention your clients retry within: a request repeated
        /// after its record is gone runs again.
        pub fn purge_requests<C: $cbound>(
            &self,
            conn: $conn,
            older_than: ::std::time::Duration,
            batch: u32,
        ) -> Result<u64> {
            let job = $crate::adapter::Job::Purge { older_than, batch };
            let f = $crate::operations!(@await $mode self.schema_job(conn, job))?;
            Ok(f.into_purged()?)
        });

        $crate::operations!(@fn $mode
        /// Checks the table for what the protocol relies on: a unique constraint on
        /// exactly `(scope, position)`, deferrable on PostgreSQL (the one-statement
        /// relabel needs it), and a CHECK constraint on the position column (the
        /// library's domain). A problem is
        /// [`SchemaMismatch`](ordered_core::Error::SchemaMismatch), which says the
        /// statement that fixes it. Run it at startup or in a migration test when
        /// adopting an existing table, beside `check_key_order`; it reads the catalog,
        /// no rows.
        pub fn check_schema<C: $rbound>(&self, conn: $conn) -> Result<()> {
            $crate::operations!(@await $mode self.read(conn, $crate::adapter::Job::CheckSchema))?.into_checked()?;
            Ok(())
        });

        $crate::operations!(@fn $mode
        /// Brings the table to what the library needs, adding exactly what
        /// `check_schema` reports missing: the unique constraint on `(scope, position)`
        /// (deferrable on PostgreSQL), the domain CHECK (on SQLite, which cannot add
        /// one to an existing column, two triggers that refuse the same rows), `NOT
        /// NULL`, a 32-bit position column widened to `BIGINT`, the parent's version
        /// column or the lock table, the root list's unique index. A table that has
        /// all of it is left alone, so it is safe to call at every start, after an
        /// entity-first schema sync that dropped the constraint. What it cannot add it
        /// refuses before any change, as
        /// [`SchemaMismatch`](ordered_core::Error::SchemaMismatch): no position
        /// column, a unique constraint that is not deferrable or an index of that name
        /// over other columns, a foreign key that sets the scope to NULL, and rows that
        /// would break what it adds (positions shared in a list, missing or out of the
        /// domain: renumber them with `adopt_ordering`). On PostgreSQL and SQLite it is
        /// one transaction; MySQL/MariaDB commit each DDL statement, so there a failure
        /// halfway leaves what was added, and a second call adds the rest.
        pub fn ensure_ordering<C: $cbound>(&self, conn: $conn) -> Result<$crate::migration::Ensured> {
            let f = $crate::operations!(@await $mode self.schema_job(conn, $crate::adapter::Job::Ensure))?;
            Ok(f.into_ensured()?)
        });

        $crate::operations!(@fn $mode
        /// Takes over the position column the application already orders by (0- or
        /// 1-based, with gaps, duplicates or NULLs): renumbers every list in the order
        /// of `order_by` (columns, each optionally `ASC` or `DESC`; empty: the column
        /// itself, NULLs last, ties by id), then adds what
        /// [`ensure_ordering`](Self::ensure_ordering) would, keeping a version column
        /// the parent already has. On a table that already has all the library needs
        /// it does nothing, so a second run changes no row. Its refusals come before
        /// any change; on MySQL/MariaDB, whose DDL commits statement by statement,
        /// every statement that can fail runs before the first row is renumbered, and
        /// the renumbering is one transaction.
        pub fn adopt_ordering<C: $cbound>(&self, conn: $conn, order_by: &[&str]) -> Result<$crate::migration::Ensured> {
            let job = $crate::adapter::Job::Adopt(order_by.iter().map(|s| (*s).to_owned()).collect());
            let f = $crate::operations!(@await $mode self.schema_job(conn, job))?;
            Ok(f.into_ensured()?)
        });

        $crate::operations!(@fn $mode
        /// Checks a table kept as a linked list (`column` names each row's neighbour,
        /// the one before it with [`Link::Prev`](ordered_core::linked::Link), after it
        /// with `Link::Next`) without writing: every list of the table and the ones
        /// that are not one chain, each with the rows to repair (several heads or
        /// none, a cycle, two rows naming one neighbour, a link to a row not in the
        /// list, rows the head does not reach). One read of the whole table.
        pub fn verify_linked<C: $rbound>(
            &self,
            conn: $conn,
            column: &str,
            link: $crate::linked::Link,
        ) -> Result<$crate::linked::Survey> {
            let job = $crate::adapter::Job::Links { column: column.to_owned(), link };
            let f = $crate::operations!(@await $mode self.read(conn, job))?;
            Ok(f.into_links()?)
        });

        $crate::operations!(@fn $mode
        /// Converts a table kept as a linked list into positions, list by list: each
        /// list in a transaction of its own under its lock (so writers that lock it
        /// wait, and the links are read as they are under the lock), its rows given an
        /// even spread of positions in chain order, the link column left as it was. A
        /// list that is not one chain is left untouched and reported
        /// ([`Converted::broken`](ordered_core::linked::Converted)), the others are
        /// converted; run it again after repairing the links, then
        /// [`ensure_ordering`](Self::ensure_ordering) adds `NOT NULL` and the unique
        /// constraint. The position column must exist (nullable), with the parent's
        /// version column: [`migration::add_position_column`](ordered_core::migration::add_position_column).
        pub fn convert_linked<C: $cbound>(
            &self,
            conn: $conn,
            column: &str,
            link: $crate::linked::Link,
        ) -> Result<$crate::linked::Converted> {
            let job = $crate::adapter::Job::Links { column: column.to_owned(), link };
            let mut conn = conn;
            let survey = $crate::operations!(@await $mode self.read($crate::adapter::Reborrow::again(&mut conn), job))?.into_links()?;
            let mut done = $crate::linked::Converted::default();
            for list in survey.lists {
                let req = $crate::Request::ConvertLinked { parent: list, column: column.to_owned(), link };
                match $crate::operations!(@await $mode self.write($crate::adapter::Reborrow::again(&mut conn), req)) {
                    Ok(o) => {
                        done.lists += 1;
                        done.rows += o.changes.rows.len() as u64;
                    }
                    Err(e) => match e.refusal() {
                        Some($crate::Error::BrokenList(b)) => done.broken.push((**b).clone()),
                        _ => return Err(e),
                    },
                }
            }
            Ok(done)
        });

        $crate::operations!(@fn $mode
        /// Checks that the key column sorts by raw bytes, by behaviour rather than by
        /// the catalog: the engine sorts and deduplicates a set of probe strings under
        /// the column's collation, and any difference from byte order is
        /// [`KeyCollation`](ordered_core::Error::KeyCollation). Run it at startup or in
        /// a migration test; integer positions need no check. It reads no rows.
        pub fn check_key_order<C: $rbound>(&self, conn: $conn) -> Result<()> {
            $crate::operations!(@await $mode self.read(conn, $crate::adapter::Job::CheckKeyOrder))?.into_checked()?;
            Ok(())
        });
    };
    (@inserts $mode:ident $conn:ty; $cbound:path; $ib:tt;
        $($(#[$doc:meta])* $name:ident(; $($arg:ident: $ty:ty),*) => $at:expr;)*
    ) => {$(
        $crate::operations!(@insert_fn $mode $ib $cbound; $(#[$doc])* $name(
            &self,
            conn: $conn,
            parent: impl Into<P>,
            $($arg: $ty,)*
            insert: F,
        ) {
            let at = $at;
            $crate::operations!(@await $mode self.insert(conn, parent, at, insert))
        });
    )*};
    (@insert_fn $mode:ident [$($ib:tt)+] $cbound:path; $(#[$m:meta])* $name:ident ($($params:tt)*) $body:block) => {
        $crate::operations!(@fn $mode $(#[$m])*
            pub fn $name<C, T, F>($($params)*) -> Result<$crate::Inserted<T, K, P>>
            where
                C: $cbound,
                $($ib)+
            $body
        );
    };
    (@writes $mode:ident $conn:ty; $cbound:path;
        $($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*) => $req:expr;)*
    ) => {$(
        $crate::operations!(@fn $mode $(#[$doc])*
        pub fn $name<C: $cbound>(
            &self,
            conn: $conn,
            $($arg: $ty,)*
        ) -> Result<$crate::Outcome<K, P>> {
            let req = $req;
            $crate::operations!(@await $mode self.write(conn, req))
        });
    )*};
    (@reads $mode:ident $conn:ty; $cbound:path;
        $($(#[$doc:meta])* $name:ident($key:ident: impl Into<$kt:ident>) -> $out:ty => $job:ident, $into:ident, $typed:expr;)*
    ) => {$(
        $crate::operations!(@fn $mode $(#[$doc])*
        pub fn $name<C: $cbound>(&self, conn: $conn, $key: impl Into<$kt>) -> Result<$out> {
            let $key = $crate::adapter::key::<$kt>(&$key.into())?;
            let raw = $crate::operations!(@await $mode self.read(conn, $crate::adapter::Job::$job($key)))?.$into()?;
            Ok(($typed)(raw)?)
        });
    )*};
}

/// A connection handle used more than once in one catalogue operation: `&mut C` (Diesel)
/// reborrowed, `&C` (SeaORM) copied.
#[doc(hidden)]
pub trait Reborrow {
    /// The handle for one call.
    type Again<'a>
    where
        Self: 'a;
    /// The handle again, for one more call.
    fn again(&mut self) -> Self::Again<'_>;
}

impl<T: ?Sized> Reborrow for &mut T {
    type Again<'a>
        = &'a mut T
    where
        Self: 'a;
    fn again(&mut self) -> &mut T {
        self
    }
}

impl<T: ?Sized> Reborrow for &T {
    type Again<'a>
        = &'a T
    where
        Self: 'a;
    fn again(&mut self) -> &T {
        self
    }
}
