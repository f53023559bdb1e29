//! The attempt protocol's decisions, step by step, with no database: what every adapter
//! now does because the core's `Protocol` says so (the engine suites prove the same
//! through every adapter on every engine).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use ordered_core::adapter::{
    DbFailure, Failure, Feed, Finished, Io, Job, Protocol, Reply, Settings,
};
use ordered_core::{Dialect, Error, Placement, Request, Row, Spec};

#[derive(Debug)]
struct Failed(&'static str);

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl DbFailure for Failed {
    fn message(&self) -> String {
        self.0.to_owned()
    }
}

const TRACKS: Spec = Spec::new("tracks", "playlist_id", "playlists").with_version("version");

fn write(d: Dialect, req: Request) -> Protocol<Failed> {
    Protocol::new(&Settings::new(TRACKS), d, Job::Write(Box::new(req)), false)
}

fn move_first() -> Request {
    Request::Move {
        item: 7.into(),
        at: Placement::First,
    }
}

fn execute(io: Io<Failed>) -> String {
    match io {
        Io::Execute(stmt) => stmt.sql,
        other => panic!("expected a statement, got {other:?}"),
    }
}

#[test]
fn a_deadlock_is_rolled_back_paused_and_retried_from_the_probe() {
    let mut p = write(Dialect::Mysql, move_first());
    assert!(execute(p.next(Feed::Start)).contains("wsrep_on"));
    // not a node
    assert!(matches!(p.next(Feed::Reply(Reply::Count(0))), Io::Begin));
    let lock = execute(p.next(Feed::Began { nested: false }));
    assert!(lock.contains("FOR UPDATE"), "{lock}");
    let deadlock = Failed("Deadlock found when trying to get lock; try restarting transaction");
    assert!(matches!(
        p.next(Feed::Failed(deadlock)),
        Io::Rollback { savepoint: false }
    ));
    let Io::Sleep(pause) = p.next(Feed::Ok) else {
        panic!("a deadlock is retried after a pause")
    };
    assert!(pause.as_millis() < 2000);
    // the next attempt starts over with the probe
    assert!(execute(p.next(Feed::Ok)).contains("wsrep_on"));
}

#[test]
fn inside_the_callers_transaction_nothing_is_retried_and_a_busy_sqlite_says_so() {
    let mut p = write(Dialect::Sqlite, move_first());
    assert!(matches!(p.next(Feed::Start), Io::Begin));
    let _lock = execute(p.next(Feed::Began { nested: true }));
    assert!(matches!(
        p.next(Feed::Failed(Failed("database is locked"))),
        Io::Rollback { savepoint: true }
    ));
    // a failed ROLLBACK TO SAVEPOINT keeps the engine's error
    match p.next(Feed::Failed(Failed("no such savepoint"))) {
        Io::Fail(Failure::SqliteDeferred(e)) => assert_eq!(e.0, "database is locked"),
        other => panic!("expected SqliteDeferred, got {other:?}"),
    }
    // negative control: the library's own transaction retries the same failure
    let mut own = write(Dialect::Sqlite, move_first());
    own.next(Feed::Start);
    own.next(Feed::Began { nested: false });
    own.next(Feed::Failed(Failed("database is locked")));
    assert!(matches!(own.next(Feed::Ok), Io::Sleep(_)));
}

#[test]
fn a_lost_connection_is_not_retried_and_a_failed_rollback_after_another_failure_is_one() {
    let mut p = write(Dialect::Postgres, move_first());
    p.next(Feed::Start);
    p.next(Feed::Began { nested: false });
    let lost = Failed("server closed the connection unexpectedly");
    assert!(matches!(p.next(Feed::Failed(lost)), Io::Rollback { .. }));
    assert!(matches!(
        p.next(Feed::Failed(Failed("no connection to the server"))),
        Io::Fail(Failure::ConnectionLost(_))
    ));
    // a refusal whose ROLLBACK fails: the client marks its connection broken
    let mut p = write(Dialect::Postgres, move_first());
    p.next(Feed::Start);
    p.next(Feed::Began { nested: false });
    assert!(matches!(
        p.next(Feed::Failed(Failed("permission denied for table tracks"))),
        Io::Rollback { .. }
    ));
    match p.next(Feed::Failed(Failed("rollback failed"))) {
        Io::Fail(Failure::ConnectionLost(e)) => assert_eq!(e.0, "rollback failed"),
        other => panic!("expected ConnectionLost, got {other:?}"),
    }
}

#[test]
fn a_duplicate_on_another_key_is_the_callers_and_asks_the_schema_probe() {
    let mut p = write(Dialect::Postgres, move_first());
    p.next(Feed::Start);
    p.next(Feed::Began { nested: false });
    let dup = Failed(r#"duplicate key value violates unique constraint "tracks_slug_key""#);
    p.next(Feed::Failed(dup));
    let probe = execute(p.next(Feed::Ok));
    assert!(
        probe.contains("pg_constraint") || probe.contains("pg_index"),
        "{probe}"
    );
    // the probe finds the spec's constraint: the caller's own duplicate comes back as
    // the refusal that names its constraint
    match p.next(Feed::Reply(Reply::Count(7))) {
        Io::Fail(Failure::Refused(e)) => {
            assert_eq!(e.code(), "constraint_violation");
            assert_eq!(
                e.constraint().map(|c| c.name.as_str()),
                Some("tracks_slug_key")
            );
        }
        other => panic!("expected the caller's duplicate, got {other:?}"),
    }
    // the probe finds no such constraint: the schema is what to fix, and it says so
    let mut p = write(Dialect::Postgres, move_first());
    p.next(Feed::Start);
    p.next(Feed::Began { nested: false });
    p.next(Feed::Failed(Failed(
        r#"duplicate key value violates unique constraint "tracks_slug_key""#,
    )));
    p.next(Feed::Ok);
    assert!(matches!(
        p.next(Feed::Reply(Reply::Count(0))),
        Io::Fail(Failure::Refused(Error::SchemaMismatch { .. }))
    ));
}

#[test]
fn on_a_galera_node_a_failed_attempt_asks_twice_whether_anything_escaped() {
    let mut p = write(Dialect::Mysql, move_first());
    p.next(Feed::Start);
    assert!(matches!(p.next(Feed::Reply(Reply::Count(1))), Io::Begin));
    // the bracket's mark opens the transaction
    let first = execute(p.next(Feed::Began { nested: false }));
    assert!(first.contains("WSREP_LAST_WRITTEN_GTID"), "{first}");
    // an error mid-way: the check before ROLLBACK is asked again after a deferred abort
    let check = execute(p.next(Feed::Failed(Failed("Lock wait timeout exceeded"))));
    assert!(check.contains("<=> @ordered_gtid"), "{check}");
    let again = execute(p.next(Feed::Failed(Failed("Deadlock found"))));
    assert_eq!(again, check);
    // nothing escaped, nothing locked yet: rolled back and retried
    assert!(matches!(
        p.next(Feed::Reply(Reply::Count(1))),
        Io::Rollback { .. }
    ));
    assert!(matches!(p.next(Feed::Ok), Io::Sleep(_)));
}

#[test]
fn a_read_on_mysql_is_causal_and_falls_back_where_there_is_no_galera() {
    let mut p = Protocol::<Failed>::new(
        &Settings::new(TRACKS),
        Dialect::Mysql,
        Job::List(1.into()),
        false,
    );
    let causal = execute(p.next(Feed::Start));
    assert!(causal.starts_with("SET STATEMENT wsrep_sync_wait = 1 FOR SELECT"));
    let plain = execute(p.next(Feed::Failed(Failed(
        "Unknown system variable 'wsrep_sync_wait'",
    ))));
    assert!(plain.starts_with("SELECT"), "{plain}");
    let row = Row {
        id: 7.into(),
        parent: 1.into(),
        position: 1024.into(),
    };
    match p.next(Feed::Reply(Reply::Rows(vec![row.clone()]))) {
        Io::Done(Finished::Rows(rows)) => assert_eq!(rows, [row]),
        other => panic!("expected the rows, got {other:?}"),
    }
    // a key of the wrong type is refused before any statement
    let mut p = Protocol::<Failed>::new(
        &Settings::new(TRACKS),
        Dialect::Mysql,
        Job::List("seven".try_into().unwrap()),
        false,
    );
    assert!(matches!(
        p.next(Feed::Start),
        Io::Fail(Failure::Refused(
            Error::WrongKeyType { .. } | Error::WrongScope { .. }
        ))
    ));
}

fn keyed(d: Dialect, req: Request, key: &str) -> Protocol<Failed> {
    let mut s = Settings::new(TRACKS);
    s.request = ordered_core::Id::text(key).ok();
    Protocol::new(&s, d, Job::Write(Box::new(req)), false)
}

/// The recorded outcome of `req` under `key`, as the records table holds it.
fn recorded(req: &Request, key: &str, o: &ordered_core::Outcome) -> Reply {
    let rec = ordered_core::requests::Record::new(
        &TRACKS,
        ordered_core::RequestKey {
            key: ordered_core::Id::text(key).unwrap(),
            tenant: None,
        },
        req,
        ordered_core::Concurrency::Neighbours,
        None,
        None,
    );
    Reply::Record(Some((
        rec.digest,
        ordered_core::requests::encode(o).unwrap(),
    )))
}

#[test]
fn a_request_key_reads_its_record_first_and_a_repeat_returns_the_recorded_outcome() {
    let o = ordered_core::Outcome {
        position: Some(ordered_core::Position::Int(512)),
        version: Some(3),
        rows_written: 1,
        ..Default::default()
    };
    let mut p = keyed(Dialect::Sqlite, move_first(), "k1");
    assert!(matches!(p.next(Feed::Start), Io::Begin));
    let find = execute(p.next(Feed::Began { nested: false }));
    assert!(find.contains("\"ordered_requests\""), "{find}");
    // found, the same request: rolled back (nothing written), the outcome replayed
    assert!(matches!(
        p.next(Feed::Reply(recorded(&move_first(), "k1", &o))),
        Io::Rollback { savepoint: false }
    ));
    let Io::Done(Finished::Outcome(back)) = p.next(Feed::Ok) else {
        panic!("the replayed outcome")
    };
    assert!(back.replayed);
    assert_eq!(
        (back.position, back.version),
        (o.position.clone(), o.version)
    );

    // found, another request under the key: refused, nothing retried
    let mut p = keyed(Dialect::Sqlite, move_first(), "k1");
    p.next(Feed::Start);
    p.next(Feed::Began { nested: false });
    let up = Request::MoveUp { item: 7.into() };
    assert!(matches!(
        p.next(Feed::Reply(recorded(&up, "k1", &o))),
        Io::Rollback { .. }
    ));
    match p.next(Feed::Ok) {
        Io::Fail(Failure::Refused(Error::IdempotencyKeyReused { key })) => {
            assert_eq!(key.to_string(), "k1")
        }
        other => panic!("expected idempotency_key_reused, got {other:?}"),
    }

    // not found: the operation runs, the lock first
    let mut p = keyed(Dialect::Sqlite, move_first(), "k2");
    p.next(Feed::Start);
    p.next(Feed::Began { nested: false });
    let lock = execute(p.next(Feed::Reply(Reply::Record(None))));
    assert!(lock.contains("\"playlists\""), "{lock}");
}

#[test]
fn a_duplicate_record_is_another_call_with_the_key_and_is_retried_to_find_it() {
    let mut p = keyed(Dialect::Postgres, move_first(), "k3");
    p.next(Feed::Start);
    p.next(Feed::Began { nested: false });
    // the record's read: missing table says how to make it
    match p.next(Feed::Failed(Failed(
        "relation \"ordered_requests\" does not exist",
    ))) {
        Io::Rollback { .. } => {}
        other => panic!("{other:?}"),
    }
    match p.next(Feed::Ok) {
        Io::Fail(Failure::Refused(Error::SchemaMismatch { table, fix, .. })) => {
            assert_eq!(table, "ordered_requests");
            assert!(fix.contains("create_requests_table"), "{fix}");
        }
        other => panic!("expected schema_mismatch, got {other:?}"),
    }
    // inside the caller's transaction the duplicate is the caller's to retry
    let mut p = keyed(Dialect::Postgres, move_first(), "k3");
    p.next(Feed::Start);
    p.next(Feed::Began { nested: true });
    let dup = Failed("duplicate key value violates unique constraint \"ordered_requests_pkey\"");
    // a failure of the record's read itself is the same
    assert!(matches!(
        p.next(Feed::Failed(dup)),
        Io::Rollback { savepoint: true }
    ));
    match p.next(Feed::Ok) {
        Io::Fail(Failure::Refused(e @ Error::RequestInFlight { .. })) => {
            assert!(e.is_retryable());
            assert_eq!(e.code(), "request_in_flight");
        }
        other => panic!("expected request_in_flight, got {other:?}"),
    }
}
