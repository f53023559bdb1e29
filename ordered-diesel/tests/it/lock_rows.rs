//! Lists with no parent table (`Spec::without_parent`), on every engine, under
//! contention: writers start at once on a collection that has no lock row yet, so the
//! first upserts of `ordered_locks` race to create it; then they insert into one hot gap
//! of it, which relabels under that lock row. Every insert commits (retries allowed),
//! the versions are exactly 1..=n with no two writes sharing one, the list is exactly
//! the replay of the writes in version order, and the lock row's version is the last.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

use crate::common::*;

use std::sync::{Barrier, Mutex};

use ordered_diesel::{Gapped, Id, OrderedTable, RebalancePolicy, RetryPolicy, Spec};

static GAP64: Gapped = Gapped::new(64);

const WRITERS: usize = 8;
const EACH: usize = 15;

fn race<C: TestConn>() {
    let engine = C::name();
    let db = format!("lockrows_{engine}");
    let mut c = C::connect(&db);
    let mut t = tables("lockrows", &GAP64, RebalancePolicy::Window, db.clone());
    t.spec = Spec::without_parent(t.items, "parent_id").with_strategy(&GAP64);
    reset(&mut c, &t, &[]);
    let q = |s: &str| ordered_core::adapter::sql::quote(C::DIALECT, s);
    c.exec(&format!(
        "DELETE FROM {} WHERE {} = '{}'",
        q(ordered_diesel::__private::LOCK_TABLE),
        q("table_name"),
        t.items
    ));
    let list = Id::Int(7); // never written: no lock row yet
    let policy = RetryPolicy {
        max_attempts: 200,
        deadline: std::time::Duration::from_secs(40),
        ..RetryPolicy::default()
    };
    // (version after the write, hot-gap insert?, the new item)
    let writes: Mutex<Vec<(i64, bool, Id)>> = Mutex::new(Vec::new());
    let first: Mutex<Option<Id>> = Mutex::new(None);
    for hot in [false, true] {
        let start = Barrier::new(WRITERS);
        std::thread::scope(|s| {
            for w in 0..WRITERS {
                let (t, writes, first, start) = (&t, &writes, &first, &start);
                s.spawn(move || {
                    let mut conn = C::open(&t.db);
                    let o = OrderedTable::new(t.spec).retry(policy);
                    start.wait();
                    for i in 0..EACH {
                        let title = format!("w{w}-{i}");
                        let f =
                            |c: &mut C, slot: ordered_diesel::Slot| c.insert_item(t, &title, &slot);
                        let anchor = *first.lock().unwrap();
                        let made = match (hot, anchor) {
                            (true, Some(a)) => o.insert_after(&mut conn, list, a, f),
                            _ => o.insert_last(&mut conn, list, f),
                        }
                        .unwrap_or_else(|e| panic!("{}: insert failed: {e}", C::name()));
                        let v = made.outcome.version.expect("a version");
                        assert_eq!(made.outcome.changes.versions.len(), 1);
                        assert_eq!(made.outcome.changes.versions[0].parent, list);
                        writes.lock().unwrap().push((v, hot, made.value));
                    }
                });
            }
        });
        // the hot gap is after the first item the first round left
        let rows = ord(&t).list(&mut c, list).unwrap();
        *first.lock().unwrap() = rows.first().map(|r| r.id);
    }
    let mut writes = writes.into_inner().unwrap();
    writes.sort_unstable();
    let n = (2 * WRITERS * EACH) as i64;
    let versions: Vec<i64> = writes.iter().map(|w| w.0).collect();
    assert_eq!(versions, (1..=n).collect::<Vec<_>>(), "{engine}: versions");
    // the replay: an insert at the end, or right after the first item
    let mut replay: Vec<Id> = Vec::new();
    for &(_, hot, id) in &writes {
        if hot {
            replay.insert(1, id);
        } else {
            replay.push(id);
        }
    }
    let listed = ord(&t).list_versioned(&mut c, list).unwrap();
    let got: Vec<Id> = listed.rows.iter().map(|r| r.id).collect();
    assert_eq!(
        got, replay,
        "{engine}: the list is not the replay of its versions"
    );
    assert_eq!(listed.version, Some(n), "{engine}: the lock row's version");
    let report = ord(&t).verify(&mut c, list).unwrap();
    assert!(report.is_ok(), "{engine}: {report:?}");
    // a collection never written reads as empty, at version 0
    let empty = ord(&t).list_versioned(&mut c, Id::Int(8)).unwrap();
    assert_eq!((empty.rows.len(), empty.version), (0, Some(0)), "{engine}");
}

#[test]
fn writers_race_on_a_new_lock_row_on_every_engine() {
    if enabled("sqlite") {
        race::<diesel::SqliteConnection>();
    }
    if enabled("postgres") {
        race::<diesel::PgConnection>();
    }
    #[cfg(feature = "mysql")]
    if enabled("mysql") {
        race::<diesel::MysqlConnection>();
    }
}
