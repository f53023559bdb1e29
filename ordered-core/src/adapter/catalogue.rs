//! The operation catalogue, written once for every front.

/// The catalogue of operations of an adapter's `Ordering`, written once for every front
/// (sync Diesel, diesel-async, SeaORM): the named inserts, every write, every read.
///
/// The front writes, in the `impl` block the macro is called in, three methods the
/// catalogue calls:
/// - `insert(&self, conn, parent: impl Into<Id>, at: Placement, insert: F) -> Result<Inserted<T>>`;
/// - `write(&self, conn, req: Request) -> Result<Outcome>`;
/// - `read(&self, conn, job: Job) -> Result<Finished>`.
///
/// `Result`, `Inserted`, `Outcome` and `Slot` are the front's own, named where the
/// macro is called. The arguments: `async` or `sync`, the connection parameter's type
/// and bound (`reads:` a looser one for the reads, which open no transaction), and the
/// insert closure's bound.
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
            insert_before(anchor;) => $crate::Placement::Before(anchor);
            /// Inserts a row directly after `anchor` in `parent`'s list.
            insert_after(anchor;) => $crate::Placement::After(anchor);
            /// Inserts a row between `prev` and `next` (`None`: the start or end), which
            /// must still be adjacent: otherwise
            /// [`StaleNeighbours`](ordered_core::Error::StaleNeighbours).
            insert_between(; prev: Option<$crate::Id>, next: Option<$crate::Id>) => $crate::Placement::Between { prev, next };
            /// Inserts a row at `index` (0-based; the list's length appends).
            insert_at_index(; index: u64) => $crate::Placement::Index(index);
        );
        $crate::operations!(@writes $mode $conn; $cbound;
            /// Moves `item` to any [`Placement`](ordered_core::Placement) in its own
            /// collection (the named `move_*` methods are shorthands for it).
            move_to(item; at: $crate::Placement) => $crate::Request::Move { item, at };
            /// Moves `item` directly before `anchor` (same collection).
            move_before(item, anchor;) => $crate::Request::Move { item, at: $crate::Placement::Before(anchor) };
            /// Moves `item` directly after `anchor` (same collection).
            move_after(item, anchor;) => $crate::Request::Move { item, at: $crate::Placement::After(anchor) };
            /// Moves `item` between `prev` and `next`, which must still be adjacent once
            /// `item` is left out.
            move_between(item; prev: Option<$crate::Id>, next: Option<$crate::Id>) => $crate::Request::Move { item, at: $crate::Placement::Between { prev, next } };
            /// Moves `item` to the start of its list.
            move_to_start(item;) => $crate::Request::Move { item, at: $crate::Placement::First };
            /// Moves `item` to the end of its list.
            move_to_end(item;) => $crate::Request::Move { item, at: $crate::Placement::Last };
            /// Moves `item` to `index` of its list (counted without the item).
            move_to_index(item; index: u64) => $crate::Request::Move { item, at: $crate::Placement::Index(index) };
            /// Moves `item` one place towards the start (nothing if it is first).
            move_up(item;) => $crate::Request::MoveUp { item };
            /// Moves `item` one place towards the end (nothing if it is last).
            move_down(item;) => $crate::Request::MoveDown { item };
            /// Exchanges the places of `a` and `b` (same collection).
            swap(a, b;) => $crate::Request::Swap { a, b };
            /// Moves `item` into collection `parent` at `at`, locking both collections in
            /// increasing key order.
            move_to_parent(item, parent; at: $crate::Placement) => $crate::Request::MoveToParent { item, parent, at };
            /// Deletes `item` (dense lists close the gap).
            remove(item;) => $crate::Request::Remove { item };
            /// Sets the whole order of `parent` to `ids`, which must be exactly its
            /// current items. Writes only the rows that must move (n minus the longest
            /// increasing run).
            reorder(parent; ids: &[$crate::Id]) => $crate::Request::Reorder { parent, ids: ids.to_vec() };
            /// Spreads `parent`'s items evenly, keeping their order.
            rebalance(parent;) => $crate::Request::Rebalance { parent };
            /// Repairs what `verify` reports (duplicates, out-of-domain positions,
            /// over-long keys) by relabelling the collection in its current
            /// `ORDER BY position, id` order.
            heal(parent;) => $crate::Request::Rebalance { parent };
        );
        $crate::operations!(@reads $mode $conn; $rbound;
            /// The items of `parent`, `ORDER BY position, id`.
            list(parent) -> Vec<$crate::Row> => List, into_rows;
            /// The items of `parent` with the collection's version, read in one
            /// statement, so the version is the one of this very list (without a version
            /// column, `version` is `None`). Send both to the client; it sends the
            /// version back with its next write (`expect_version`), which is refused
            /// with [`VersionConflict`](ordered_core::Error::VersionConflict) if anyone
            /// wrote in between. A missing parent is
            /// [`ParentNotFound`](ordered_core::Error::ParentNotFound).
            list_versioned(parent) -> $crate::Listing => ListVersioned, into_listing;
            /// The 0-based index of `item` in its list.
            index_of(item) -> u64 => IndexOf, into_index;
            /// Checks `parent`'s collection: duplicate positions, positions outside the
            /// domain, over-long keys, and that the database returns them in byte order.
            verify(parent) -> $crate::Report => Verify, into_report;
        );

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
        $($(#[$doc:meta])* $name:ident($($key:ident),* ; $($arg:ident: $ty:ty),*) => $at:expr;)*
    ) => {$(
        $crate::operations!(@insert_fn $mode $ib $cbound; $(#[$doc])* $name(
            &self,
            conn: $conn,
            parent: impl Into<$crate::Id>,
            $($key: impl Into<$crate::Id>,)*
            $($arg: $ty,)*
            insert: F,
        ) {
            $(let $key: $crate::Id = $key.into();)*
            $crate::operations!(@await $mode self.insert(conn, parent, $at, insert))
        });
    )*};
    (@insert_fn $mode:ident [$($ib:tt)+] $cbound:path; $(#[$m:meta])* $name:ident ($($params:tt)*) $body:block) => {
        $crate::operations!(@fn $mode $(#[$m])*
            pub fn $name<C, T, F>($($params)*) -> Result<Inserted<T>>
            where
                C: $cbound,
                $($ib)+
            $body
        );
    };
    (@writes $mode:ident $conn:ty; $cbound:path;
        $($(#[$doc:meta])* $name:ident($($key:ident),* ; $($arg:ident: $ty:ty),*) => $req:expr;)*
    ) => {$(
        $crate::operations!(@fn $mode $(#[$doc])*
        pub fn $name<C: $cbound>(
            &self,
            conn: $conn,
            $($key: impl Into<$crate::Id>,)*
            $($arg: $ty,)*
        ) -> Result<Outcome> {
            $(let $key: $crate::Id = $key.into();)*
            $crate::operations!(@await $mode self.write(conn, $req))
        });
    )*};
    (@reads $mode:ident $conn:ty; $cbound:path;
        $($(#[$doc:meta])* $name:ident($key:ident) -> $out:ty => $job:ident, $into:ident;)*
    ) => {$(
        $crate::operations!(@fn $mode $(#[$doc])*
        pub fn $name<C: $cbound>(&self, conn: $conn, $key: impl Into<$crate::Id>) -> Result<$out> {
            Ok($crate::operations!(@await $mode self.read(conn, $crate::adapter::Job::$job($key.into())))?.$into()?)
        });
    )*};
}
