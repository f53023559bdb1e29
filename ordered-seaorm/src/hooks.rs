//! Helpers to call from your own `ActiveModelBehavior` (the derive never implements it
//! for you).
//!
//! ```
//! # include!("../doctest_setup.rs");
//! # use sea_orm::TransactionTrait;
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let db = setup().await?;
//! // e.g. in `before_save(mut self, db, insert)` when `insert` and the position is NotSet:
//! let txn = db.begin().await?;
//! let slot = ordered_seaorm::hooks::slot_for_insert(&txn, &track::Entity::spec(), 1, ordered_seaorm::Placement::Last).await?;
//! track::ActiveModel { playlist_id: Set(slot.scope()?), title: Set("Intro".into()), position: Set(slot.int()?), ..Default::default() }
//!     .insert(&txn)
//!     .await?;
//! txn.commit().await?;
//! # Ok(()) }
//! ```

use ordered_core::adapter::{Action, Operation, Reply};
use ordered_core::{Id, Placement, Request, Spec};
use sea_orm::ConnectionTrait;

use crate::error::{Error, Result};
use crate::ops::{Slot, dialect, run};

/// Locks `parent`, reads under the lock, relabels if needed, and returns where a new row
/// placed at `at` must go. Call it inside the transaction that then inserts the row
/// (for instance from `ActiveModelBehavior::before_save` when inserting): the lock is
/// held until that transaction ends. Outside a transaction the lock ends with the
/// statement and two concurrent inserts may pick the same slot (the unique constraint
/// then refuses one).
pub async fn slot_for_insert<C: ConnectionTrait>(
    db: &C,
    spec: &Spec,
    parent: impl Into<Id>,
    at: Placement,
) -> Result<Slot> {
    let parent = parent.into();
    let d = dialect(db.get_database_backend())?;
    let key = ordered_core::adapter::Wire::of(spec);
    let mut op = Operation::new(*spec, d, Request::Insert { parent, at });
    let mut reply = Reply::None;
    loop {
        match op.next(reply)? {
            Action::Execute(stmt) => reply = run(db, &stmt, key).await?,
            Action::Insert { parent, position } => return Ok(crate::ops::slot(parent, position)),
            Action::Done(_) | Action::BeforeCommit(_) => {
                return Err(Error::Ordering(ordered_core::Error::Inconsistent(
                    "an insert that placed no row".into(),
                )));
            }
        }
    }
}
