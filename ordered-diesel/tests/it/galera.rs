//! MariaDB Galera Cluster: the library on a 3-node cluster (`.ci/galera.sh start`, then
//! `ORDERED_GALERA_URLS=$(.ci/galera.sh urls)`). Without the variable these tests say
//! they skipped; `ORDERED_REQUIRE_GALERA=1` makes them fail instead.
//!
//! - a spec without a version column is refused on a node, and runs on a single server;
//! - reads through one node see what was written through another (causal reads);
//! - several nodes writing one hot collection: no operation whose transaction the
//!   cluster silently dropped is reported as a success (the server bug the library
//!   guards against with its GTID check), and every success is in the database.
#![cfg(feature = "mysql")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use crate::common::*;
use diesel::{Connection, MysqlConnection, RunQueryDsl};
use ordered_core::adapter::sql::Returns;
use ordered_diesel::__private::{Request, Statement};
use ordered_diesel::{
    Dialect, Error, OrderedConnection, OrderingError, Placement, RebalancePolicy, Spec,
};

/// The cluster, shared by the tests of this file, except the failover test, which kills
/// a node and has it alone.
static CLUSTER: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// The cluster's node URLs, held for one test.
struct Nodes {
    urls: Vec<String>,
    _shared: Option<std::sync::RwLockReadGuard<'static, ()>>,
    _alone: Option<std::sync::RwLockWriteGuard<'static, ()>>,
}

impl std::ops::Deref for Nodes {
    type Target = [String];
    fn deref(&self) -> &[String] {
        &self.urls
    }
}

/// The cluster's nodes, or `None` (skipped) when `ORDERED_GALERA_URLS` is not set.
fn nodes() -> Option<Nodes> {
    let urls = urls()?;
    let shared = CLUSTER
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Some(Nodes {
        urls,
        _shared: Some(shared),
        _alone: None,
    })
}

/// [`nodes`], with no other test of this file running.
fn nodes_alone() -> Option<Nodes> {
    let urls = urls()?;
    let alone = CLUSTER
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Some(Nodes {
        urls,
        _shared: None,
        _alone: Some(alone),
    })
}

fn urls() -> Option<Vec<String>> {
    match std::env::var("ORDERED_GALERA_URLS") {
        Ok(v) if !v.is_empty() => {
            let urls: Vec<String> = v.split(',').map(str::to_owned).collect();
            assert!(
                urls.len() >= 2,
                "ORDERED_GALERA_URLS needs two nodes or more"
            );
            Some(urls)
        }
        _ if std::env::var("ORDERED_REQUIRE_GALERA").is_ok_and(|v| v == "1") => {
            panic!("ORDERED_REQUIRE_GALERA=1 but ORDERED_GALERA_URLS is not set")
        }
        _ => {
            eprintln!(
                "skipped: ORDERED_GALERA_URLS is not set (start a cluster with .ci/galera.sh)"
            );
            None
        }
    }
}

fn node(url: &str) -> MysqlConnection {
    MysqlConnection::open_url(url)
}

/// Fresh tables for `test` through `conn`, with parents `parents`.
fn fresh(
    conn: &mut MysqlConnection,
    test: &str,
    strategy: &'static dyn ordered_diesel::PositionStrategy,
    parents: &[i64],
) -> Tables {
    let t = tables(test, strategy, RebalancePolicy::Window, test.to_owned());
    let parents: Vec<Id> = parents.iter().map(|&p| Id::Int(p)).collect();
    reset(conn, &t, &parents);
    t
}

fn insert(
    conn: &mut MysqlConnection,
    t: &Tables,
    parent: i64,
    at: Placement,
    title: &str,
) -> ordered_diesel::Result<Id> {
    ord(t)
        .insert(conn, parent, at, |c: &mut MysqlConnection, slot| {
            c.insert_item(t, title, &slot)
        })
        .map(|i| i.value)
}

#[test]
fn a_spec_without_a_version_column_is_refused_on_a_node() {
    let Some(urls) = nodes() else { return };
    let mut c = node(&urls[0]);
    let mut t = fresh(&mut c, "gal_nover", &GAPPED, &[1]);
    t.spec = t.spec.without_version();
    let err = insert(&mut c, &t, 1, Placement::Last, "a").unwrap_err();
    assert_eq!(
        err.refusal(),
        Some(&OrderingError::VersionColumnRequired {
            table: "o_gal_nover_i".into()
        }),
        "{err}"
    );
    assert!(err.to_string().contains("version column"), "{err}");
    assert!(
        ids(&mut c, &t, ordered_diesel::Id::Int(1)).is_empty(),
        "the refused insert wrote"
    );
    // the same spec on a single MariaDB server (wsrep off) runs
    if let Ok(single) = std::env::var("ORDERED_MYSQL_URL") {
        let mut s = node(&single);
        reset(&mut s, &t, &[ordered_diesel::Id::Int(1)]);
        insert(&mut s, &t, 1, Placement::Last, "a").unwrap();
        assert_eq!(ids(&mut s, &t, ordered_diesel::Id::Int(1)).len(), 1);
        drop_tables(&mut s, &t);
    }
    drop_tables(&mut c, &t);
}

/// Writes through node 1, reads through node 2 at once: `list` waits for node 2 to
/// apply the write (its causal read), 200 times out of 200. A plain read of node 2
/// right after the commit (no causal wait) is the control: it can see the list as it
/// was, and the count of such reads is printed. Both connections keep the library's
/// statements prepared, its causal-wait probe among them: a kept statement still waits
/// for the node to apply what came before.
#[test]
fn reads_through_one_node_see_writes_through_another() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering as Atomic};

    let Some(urls) = nodes() else { return };
    let mut w = node(&urls[0]);
    let mut r = node(&urls[1]);
    let cached = Arc::new(AtomicUsize::new(0));
    for c in [&mut w, &mut r] {
        let n = Arc::clone(&cached);
        c.set_instrumentation(move |ev: diesel::connection::InstrumentationEvent<'_>| {
            // the causal-wait probe, kept
            if let diesel::connection::InstrumentationEvent::CacheQuery { sql, .. } = ev
                && sql.contains("wsrep_sync_wait")
            {
                n.fetch_add(1, Atomic::SeqCst);
            }
        });
    }
    let t = fresh(&mut w, "gal_causal", &GAPPED, &[1]);
    // the table reaches the other node before the first plain read (which does not
    // wait, and would find no table rather than stale rows)
    let wait_for_table = format!("SELECT 1 FROM {} LIMIT 0", t.spec.table);
    let t0 = Instant::now();
    while diesel::connection::SimpleConnection::batch_execute(&mut r, &wait_for_table).is_err() {
        assert!(
            t0.elapsed().as_secs() < 10,
            "the table never reached the other node"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let plain =
        ordered_core::adapter::sql::list(Dialect::Mysql, &t.spec, ordered_diesel::Id::Int(1));
    let mut stale_plain = 0;
    for i in 0..200 {
        let id = insert(&mut w, &t, 1, Placement::First, &format!("i{i}")).unwrap();
        if i % 2 == 0 {
            // the control first (it must not wait), then the library's read
            match r.run(&plain, ordered_core::adapter::Wire::PLAIN).unwrap() {
                ordered_diesel::__private::Reply::Rows(rows) => {
                    if rows.first().map(|x| x.id) != Some(id) {
                        stale_plain += 1;
                    }
                }
                other => panic!("{other:?}"),
            }
        }
        let seen = ord(&t).list(&mut r, 1).unwrap();
        assert_eq!(
            seen.first().map(|x| x.id),
            Some(id),
            "round {i}: node 2 served a list without node 1's committed insert"
        );
        assert_eq!(seen.len(), i + 1);
        assert_eq!(ord(&t).index_of(&mut r, id).unwrap(), 0);
    }
    assert!(
        cached.load(Atomic::SeqCst) > 0,
        "the causal-wait probe was not kept prepared on a Galera node"
    );
    eprintln!(
        "galera causal reads: 200/200 fresh through the library; plain reads without the causal wait: {stale_plain}/100 stale"
    );
    drop_tables(&mut w, &t);
}

/// A node's connection cut at `COMMIT` (by a loopback proxy in front of node 1), after
/// the node applied it and before: each move under a request key ends in
/// `CommitUnknown`, and its repeat with the key through node 2 returns the recorded
/// outcome (the record replicated with the move) or applies the move (neither was
/// committed). Either way the item moved exactly once. Without the key, the control's
/// blind repeat after a committed cut moves it twice.
#[test]
fn a_commit_cut_on_a_node_is_resolved_by_repeating_with_the_request_key() {
    use crate::common::proxy::{CUT_AFTER_COMMIT, CUT_BEFORE_COMMIT, PASS, Proxy};
    use std::sync::atomic::Ordering as Atomic;

    let Some(urls) = nodes() else { return };
    let mut c = node(&urls[0]);
    let mut other = node(&urls[1]);
    let t = fresh(&mut c, "gal_cut", &GAPPED, &[1]);
    fresh_records(&mut c, &t);
    for i in 0..4 {
        insert(&mut c, &t, 1, Placement::Last, &format!("i{i}")).unwrap();
    }
    let host = urls[0]
        .split('@')
        .nth(1)
        .and_then(|h| h.split('/').next())
        .unwrap()
        .to_owned();
    let proxy = Proxy::start(host.clone());
    let proxied = urls[0].replace(&host, &format!("127.0.0.1:{}", proxy.port));
    let up_once = |order: &[Id], item: Id| {
        let mut o = order.to_vec();
        let at = o.iter().position(|&x| x == item).unwrap();
        o.swap(at - 1, at);
        o
    };
    let (mut replayed, mut applied) = (0, 0);
    for round in 0..6 {
        let committed = round % 2 == 0;
        let label = format!("round {round} committed={committed}");
        let before = ids(&mut other, &t, ordered_diesel::Id::Int(1));
        let item = before[3];
        let key = format!("gal-cut-{round}");
        let mut via = node(&proxied);
        proxy.mode.store(
            if committed {
                CUT_AFTER_COMMIT
            } else {
                CUT_BEFORE_COMMIT
            },
            Atomic::SeqCst,
        );
        let e = ord(&t)
            .request_key(key.clone())
            .move_up(&mut via, item)
            .expect_err("the cut commit reported success");
        proxy.mode.store(PASS, Atomic::SeqCst);
        assert!(matches!(e, Error::CommitUnknown(_)), "{label}: {e:?}");
        drop(via);
        // the repeat, through the other node
        let again = ord(&t)
            .request_key(key)
            .move_up(&mut other, item)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(again.replayed, committed, "{label}: {again:?}");
        if again.replayed {
            replayed += 1;
        } else {
            applied += 1;
        }
        assert_eq!(
            ids(&mut other, &t, ordered_diesel::Id::Int(1)),
            up_once(&before, item),
            "{label}: not applied exactly once"
        );
        // back where it was, for the next round
        ord(&t).move_to_end(&mut c, item).unwrap();
    }
    // the control: a blind repeat after a committed cut moves twice
    let before = ids(&mut other, &t, ordered_diesel::Id::Int(1));
    let item = before[3];
    let mut via = node(&proxied);
    proxy.mode.store(CUT_AFTER_COMMIT, Atomic::SeqCst);
    let e = ord(&t).move_up(&mut via, item).unwrap_err();
    proxy.mode.store(PASS, Atomic::SeqCst);
    assert!(matches!(e, Error::CommitUnknown(_)), "{e:?}");
    drop(via);
    ord(&t).move_up(&mut other, item).unwrap();
    let after = ids(&mut other, &t, ordered_diesel::Id::Int(1));
    assert_eq!(
        after.iter().position(|&x| x == item),
        Some(1),
        "the control's blind repeat did not move twice: {after:?}"
    );
    eprintln!(
        "galera commit cuts: 6 CommitUnknown under a request key, all resolved through the other node: {replayed} replayed, {applied} applied by the repeat; the unkeyed control moved twice"
    );
    drop_tables(&mut c, &t);
}

/// Brings a killed node back (`.ci/galera.sh start` starts what is not running and waits
/// until it is synced), also when the test fails.
struct Revive(u8);

impl Drop for Revive {
    fn drop(&mut self) {
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/galera.sh");
        let out = std::process::Command::new(&script).arg("start").output();
        match out {
            Ok(o) if o.status.success() => eprintln!("galera: node{} is back", self.0),
            Ok(o) => eprintln!(
                "galera: node{} did not come back: {}",
                self.0,
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => eprintln!("galera: {}: {e}", script.display()),
        }
    }
}

/// What one write of the failover test ended as.
#[derive(Debug, Clone)]
struct Acked {
    list: i64,
    /// An insert (its title is its key), or a move.
    insert: bool,
    /// The outcome (None: an insert's repeat answered `already_applied`).
    outcome: Option<ordered_diesel::Outcome<i64, i64>>,
    /// The failure of the try the node's death interrupted, if any.
    interrupted: Option<String>,
}

/// The writer node dies under load. Four writers, each on a list of its own, send keyed
/// inserts and moves through node 3; half way through node 3 is killed (SIGKILL, a
/// crash). A write in flight ends as `ConnectionLost`, `CommitUnknown` or another
/// failure of the connection; the writer connects to node 1 and repeats it with its key,
/// which answers with the recorded outcome (replayed) or applies it, and goes on there.
/// Then: every write was acknowledged exactly once (each insert's row is there once;
/// each list's version went up once per write that changed it, and no two writes claim
/// one version), and `verify` finds every list sound. Node 3 is started again after.
#[test]
fn the_writer_node_dies_and_the_writes_move_to_another_node() {
    use std::sync::atomic::{AtomicUsize, Ordering as Atomic};
    const WRITERS: i64 = 4;
    const OPS: usize = 60;
    let Some(urls) = nodes_alone() else { return };
    if urls.len() < 3 {
        eprintln!("skipped: the failover test needs three nodes");
        return;
    }
    let (writer, survivor) = (urls[2].clone(), urls[0].clone());
    let mut c = node(&survivor);
    let t = fresh(
        &mut c,
        "gal_failover",
        &GAPPED,
        &(1..=WRITERS).collect::<Vec<_>>(),
    );
    fresh_records(&mut c, &t);
    for p in 1..=WRITERS {
        for i in 0..3 {
            insert(&mut c, &t, p, Placement::Last, &format!("seed-{p}-{i}")).unwrap();
        }
    }
    let start: BTreeMap<i64, i64> = (1..=WRITERS)
        .map(|p| {
            (
                p,
                ord(&t).list_versioned(&mut c, p).unwrap().version.unwrap(),
            )
        })
        .collect();
    let acked = AtomicUsize::new(0);
    let revive = Revive(3);
    let results: Vec<Vec<(String, Acked)>> = std::thread::scope(|s| {
        let writers: Vec<_> = (1..=WRITERS)
            .map(|p| {
                let (t, writer, survivor, acked) = (&t, &writer, &survivor, &acked);
                s.spawn(move || {
                    let mut conn = node(writer);
                    let mut on_writer = true;
                    let mut mine: Vec<Id> = ord(t)
                        .list(&mut conn, p)
                        .unwrap()
                        .into_iter()
                        .map(|r| r.id)
                        .collect();
                    let mut out = Vec::new();
                    for i in 0..OPS {
                        let key = format!("fo-{p}-{i}");
                        let is_insert = i % 2 == 0;
                        let item = mine[(i * 7 + p as usize) % mine.len()];
                        let mut interrupted = None;
                        let mut tries = 0;
                        let done = loop {
                            tries += 1;
                            let h = ord(t).request_key(key.clone());
                            let r = if is_insert {
                                h.insert_last(&mut conn, p, |c: &mut MysqlConnection, slot| {
                                    c.insert_item(t, &key, &slot)
                                })
                                .map(|ins| (Some(ins.value), Some(ins.outcome)))
                            } else {
                                h.move_up(&mut conn, item).map(|o| (None, Some(o)))
                            };
                            match r {
                                Ok(x) => break x,
                                Err(e) => {
                                    if let Some(OrderingError::AlreadyApplied { id, .. }) =
                                        e.refusal()
                                    {
                                        break (Some(*id), None);
                                    }
                                    assert!(
                                        e.refusal().is_none(),
                                        "writer {p} op {i}: refused {e}"
                                    );
                                    assert!(tries < 50, "writer {p} op {i}: {e}");
                                    interrupted.get_or_insert_with(|| format!("{}: {e}", e.code()));
                                    // the node is gone: the survivor, with the same key
                                    std::thread::sleep(std::time::Duration::from_millis(100));
                                    if on_writer && let Ok(n) = MysqlConnection::establish(survivor)
                                    {
                                        conn = n;
                                        on_writer = false;
                                    }
                                }
                            }
                        };
                        let (new, outcome) = done;
                        if let Some(id) = new.filter(|_| is_insert)
                            && !mine.contains(&id)
                        {
                            mine.push(id);
                        }
                        acked.fetch_add(1, Atomic::SeqCst);
                        out.push((
                            key,
                            Acked {
                                list: p,
                                insert: is_insert,
                                outcome: outcome.map(|o| o.typed().unwrap()),
                                interrupted,
                            },
                        ));
                    }
                    out
                })
            })
            .collect();
        // half way: the writer node crashes
        while acked.load(Atomic::SeqCst) < (WRITERS as usize * OPS) / 2 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/galera.sh");
        let killed = std::process::Command::new(script)
            .args(["kill", "3"])
            .output()
            .unwrap();
        assert!(
            killed.status.success(),
            "{}",
            String::from_utf8_lossy(&killed.stderr)
        );
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    // the oracle, on the survivor
    let mut interrupted: BTreeMap<String, usize> = BTreeMap::new();
    let (mut replayed, mut applied_by_repeat) = (0, 0);
    for p in 1..=WRITERS {
        let mine: Vec<&Acked> = results
            .iter()
            .flatten()
            .map(|(_, a)| a)
            .filter(|a| a.list == p)
            .collect();
        let mut claimed = BTreeSet::new();
        let mut writes = 0;
        for a in &mine {
            if let Some(why) = &a.interrupted {
                let kind = why.split(':').next().unwrap_or("").to_owned();
                *interrupted.entry(kind).or_default() += 1;
                match &a.outcome {
                    Some(o) if o.replayed => replayed += 1,
                    None => replayed += 1,
                    Some(_) => applied_by_repeat += 1,
                }
            }
            match &a.outcome {
                Some(o) if o.unchanged => {}
                Some(o) => {
                    writes += 1;
                    assert!(
                        claimed.insert(o.version.unwrap()),
                        "list {p}: two writes claim version {:?}",
                        o.version
                    );
                }
                // an insert answered already_applied: applied once, by an earlier try
                None => writes += 1,
            }
        }
        let now = ord(&t).list_versioned(&mut c, p).unwrap();
        assert_eq!(
            now.version.unwrap() - start[&p],
            writes,
            "list {p}: the version went up once per acknowledged write"
        );
        sound(&mut c, &t, Id::Int(p));
    }
    for (key, a) in results.iter().flatten() {
        if a.insert {
            let n: i64 = diesel::sql_query(format!(
                "SELECT COUNT(*) AS n FROM {} WHERE title = '{key}'",
                t.spec.table
            ))
            .get_result::<Count>(&mut c)
            .unwrap()
            .n;
            assert_eq!(n, 1, "insert {key}: {n} rows");
        }
    }
    assert!(
        !interrupted.is_empty(),
        "no write was in flight when the node died"
    );
    eprintln!(
        "galera failover: {} writes through node 3, killed half way; in flight: {interrupted:?}; their repeats with the key on node 1: {replayed} replayed, {applied_by_repeat} applied; every write acknowledged once",
        WRITERS as usize * OPS
    );
    drop_tables(&mut c, &t);
    drop(revive);
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

/// The test-only last statement of every write: the parent's version as this
/// transaction sees it, and whether it still runs inside a transaction.
fn log_version(_: Dialect, _: &Spec, _: &Request) -> Statement {
    Statement {
        sql: "INSERT INTO o_gal_log (v, in_tx) SELECT version, @@in_transaction FROM o_gal_multi_p WHERE id = 1".into(),
        args: vec![],
        returns: Returns::Nothing,
    }
}

#[derive(Default)]
struct Tally {
    ok: Vec<(i64, Option<Id>)>, // (version, inserted id)
    errors: BTreeMap<String, usize>,
    attempts: Vec<u32>,
}

/// Several nodes write one hot collection at once. The library's claim: whatever the
/// cluster does, an operation reported as a success is in the database, with its own
/// version. The server bug it guards against (a transaction aborted by another node's
/// write, whose later statements and COMMIT still answer success) shows as
/// `PartiallyApplied` or is retried as `CommitDropped`, never as `Ok`.
#[test]
fn several_writer_nodes_never_report_a_dropped_transaction_as_a_success() {
    let Some(urls) = nodes() else { return };
    let mut c = node(&urls[0]);
    let t = fresh(&mut c, "gal_multi", &GAPPED, &[1]);
    c.exec("DROP TABLE IF EXISTS o_gal_log");
    c.exec("CREATE TABLE o_gal_log (op BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, v BIGINT NOT NULL, in_tx INT NOT NULL)");
    let mut seeded = Vec::new();
    for i in 0..32 {
        seeded.push(insert(&mut c, &t, 1, Placement::Last, &format!("s{i}")).unwrap());
    }
    let v0 = version(&mut c, &t, ordered_diesel::Id::Int(1));
    let writers_per_node = 4;
    let ops = 100;
    let started = Instant::now();
    let handles: Vec<_> = (0..urls.len() * writers_per_node)
        .map(|w| {
            let url = urls[w % urls.len()].clone();
            let t = t.clone();
            let seeded = seeded.clone();
            std::thread::spawn(move || {
                let mut conn = node(&url);
                let o = ord(&t).with_final_statement(log_version);
                let mut rng = 0x9E37_79B9_7F4A_7C15_u64 ^ (w as u64 + 1);
                let mut next = move || {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng
                };
                let mut tally = Tally::default();
                for _ in 0..ops {
                    let anchor = seeded[(next() % seeded.len() as u64) as usize];
                    let r = if next() % 2 == 0 {
                        o.insert(
                            &mut conn,
                            1,
                            Placement::After(anchor),
                            |c: &mut MysqlConnection, slot| c.insert_item(&t, "w", &slot),
                        )
                        .map(|i| (i.outcome, Some(i.value)))
                    } else {
                        let mut item = seeded[(next() % seeded.len() as u64) as usize];
                        if item == anchor {
                            item = seeded[(seeded.iter().position(|&x| x == anchor).unwrap() + 1)
                                % seeded.len()];
                        }
                        o.move_to(&mut conn, item, Placement::Before(anchor))
                            .map(|o| (o, None))
                    };
                    match r {
                        // a move to where the item already was: nothing committed
                        Ok((out, _)) if out.unchanged => tally.attempts.push(out.attempts),
                        Ok((out, id)) => {
                            tally.ok.push((out.version.unwrap(), id));
                            tally.attempts.push(out.attempts);
                        }
                        Err(e) => {
                            let key = match &e {
                                Error::Ordering(o) => format!("{o:?}")
                                    .split([' ', '{', '('])
                                    .next()
                                    .unwrap()
                                    .to_owned(),
                                Error::RetriesExhausted { .. } => "RetriesExhausted".into(),
                                Error::ConnectionLost(_) => {
                                    conn = node(&url);
                                    "ConnectionLost".into()
                                }
                                other => format!("{other}"),
                            };
                            *tally.errors.entry(key).or_default() += 1;
                        }
                    }
                }
                tally
            })
        })
        .collect();
    let mut all = Tally::default();
    for h in handles {
        let t = h.join().unwrap();
        all.ok.extend(t.ok);
        all.attempts.extend(t.attempts);
        for (k, n) in t.errors {
            *all.errors.entry(k).or_default() += n;
        }
    }
    let elapsed = started.elapsed();

    // every node has applied everything before the checks
    let mut views = Vec::new();
    for u in urls.iter() {
        let mut n = node(u);
        views.push((
            ord(&t).list(&mut n, 1).unwrap(),
            version(&mut n, &t, ordered_diesel::Id::Int(1)),
        ));
    }
    for (i, v) in views.iter().enumerate() {
        assert_eq!(v, &views[0], "node {} differs from node 1", i + 1);
    }
    let (rows, final_version) = views[0].clone();
    let present: BTreeSet<Id> = rows.iter().map(|r| r.id).collect();
    // 1. no two successes share a version: each bumped the parent itself, and committed
    let mut versions = BTreeSet::new();
    for (v, _) in &all.ok {
        assert!(versions.insert(*v), "version {v} reported by two successes");
        assert!(
            *v > v0 && *v <= final_version,
            "version {v} outside {v0}..={final_version}"
        );
    }
    // 2. every reported insert is in the table
    for (v, id) in &all.ok {
        if let Some(id) = id {
            assert!(
                present.contains(id),
                "the insert reported at version {v} (id {id}) is not in the table"
            );
        }
    }
    // 3. every success wrote its log row inside its transaction, under its own version
    let logged: BTreeMap<i64, Vec<i64>> = {
        let stmt = Statement {
            sql: "SELECT CAST(op AS SIGNED) AS o_id, CAST(v AS SIGNED) AS o_parent, CAST(in_tx AS SIGNED) AS o_pos FROM o_gal_log ORDER BY op".into(),
            args: vec![],
            returns: Returns::Rows,
        };
        let mut n = node(&urls[0]);
        match n.run(&stmt, ordered_core::adapter::Wire::PLAIN).unwrap() {
            // the final statement runs after the bump: it logs the reported version
            ordered_diesel::__private::Reply::Rows(rows) => {
                rows.into_iter().fold(BTreeMap::new(), |mut m, r| {
                    m.entry(r.parent.as_int().unwrap_or(0))
                        .or_insert_with(Vec::new)
                        .push(r.position.as_int().unwrap_or(-1));
                    m
                })
            }
            other => panic!("{other:?}"),
        }
    };
    let escaped = logged.values().flatten().filter(|tx| **tx == 0).count();
    for (v, _) in &all.ok {
        assert!(
            logged.get(v).is_some_and(|txs| txs.contains(&1)),
            "the success at version {v} has no log row written inside its transaction: {:?}",
            logged.get(v)
        );
    }
    let partial = all.errors.get("PartiallyApplied").copied().unwrap_or(0);
    // the log is an independent witness: a log row written outside a transaction is an
    // operation the cluster aborted part-way, and each of those was reported so
    assert!(
        escaped <= partial,
        "{escaped} operations ran partly outside their transaction, {partial} reported; the failures: {:?}",
        all.errors
    );
    let report = ord(&t).verify(&mut c, 1).unwrap();
    if partial == 0 {
        // nothing half-applied: the collection is sound
        assert!(report.is_ok(), "{report:?}");
    } else {
        // what PartiallyApplied says to do: heal, then the collection is sound again
        ord(&t).rebalance(&mut c, 1).unwrap();
        let healed = ord(&t).verify(&mut c, 1).unwrap();
        assert!(
            healed.is_ok(),
            "after heal: {healed:?} (before: {report:?})"
        );
    }
    let retried = all.attempts.iter().filter(|a| **a > 1).count();
    let max_attempts = all.attempts.iter().max().copied().unwrap_or(0);
    eprintln!(
        "galera multi-writer: {} nodes x {writers_per_node} writers x {ops} ops in {:.1} s: {} ok ({retried} after retries, up to {max_attempts} attempts), errors {:?}; log rows written outside a transaction: {escaped}; final version {final_version} (seeded at {v0})",
        urls.len(),
        elapsed.as_secs_f64(),
        all.ok.len(),
        all.errors
    );
    let _ = std::fs::write(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/ordered-galera.txt"),
        format!(
            "multi-writer: {} nodes x {writers_per_node} writers x {ops} ops, {:.1} s: {} ok ({retried} retried, max {max_attempts} attempts), errors {:?}, log rows outside a transaction {escaped}\n",
            urls.len(),
            elapsed.as_secs_f64(),
            all.ok.len(),
            all.errors
        ),
    );
    assert!(!all.ok.is_empty());
    c.exec("DROP TABLE IF EXISTS o_gal_log");
    drop_tables(&mut c, &t);
}
