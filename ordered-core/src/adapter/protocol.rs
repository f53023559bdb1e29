//! The attempt protocol as a state machine with no I/O: everything an adapter did
//! around [`Operation`] before, decided once. It asks for the Galera probe, the
//! transaction or savepoint, the operation's statements, the caller's insert and hook,
//! `COMMIT` and its Galera check, `ROLLBACK` and the check before it, classifies every
//! failure, and says when to pause and retry; the read operations (`list`,
//! `list_versioned`, `index_of`, `verify`, `check_schema`, `check_key_order`) are
//! statement sequences of the same machine. It never sleeps: [`Io::Sleep`] asks the
//! adapter to, on its own clock (`std::thread::sleep` or `tokio::time::sleep`).
//!
//! An adapter feeds it in one loop (`E` is the client's error type, [`DbFailure`]):
//!
//! ```
//! use ordered_core::adapter::{DbFailure, Feed, Io, Job, Protocol};
//! use ordered_core::{Dialect, Placement, Request, Spec};
//! use ordered_core::adapter::{Reply, Settings};
//!
//! #[derive(Debug)]
//! struct Failed(String);
//! impl std::fmt::Display for Failed {
//!     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str(&self.0) }
//! }
//! impl DbFailure for Failed {
//!     fn message(&self) -> String { self.0.clone() }
//! }
//!
//! const TRACKS: Spec = Spec::new("tracks", "playlist_id", "playlists");
//! let job = Job::Write(Box::new(Request::Insert { parent: 1.into(), at: Placement::Last }));
//! let mut p = Protocol::<Failed>::new(&Settings::new(TRACKS), Dialect::Sqlite, job, false);
//! // SQLite: no Galera probe; the adapter opens its own transaction
//! assert!(matches!(p.next(Feed::Start), Io::Begin));
//! // then the operation's statements: the lock first
//! let Io::Execute(lock) = p.next(Feed::Began { nested: false }) else { unreachable!() };
//! assert!(lock.sql.starts_with("SELECT"));
//! // a lost connection ends the attempt: roll back, then the failure to return
//! assert!(matches!(p.next(Feed::Failed(Failed("server closed the connection".into()))), Io::Rollback { .. }));
//! assert!(matches!(p.next(Feed::Ok), Io::Fail(_)));
//! ```

use std::time::Duration;

use crate::constraint::Constraint;
use crate::engine::{Action, Listing, Operation, Outcome, Reply, Settings};
use crate::error::{Error, Status};
use crate::id::Id;
use crate::plan::{Read, Request, Row};
use crate::position::Position;
use crate::retry::{self, Attempts, Class, Stop};
use crate::sql::{self, Dialect, Statement};
use crate::{Changes, migration, requests, verify};

/// What the protocol needs to know of a client's error, beside its text.
pub trait DbFailure: std::fmt::Display + std::fmt::Debug {
    /// The engine's message (for Diesel, the database error's own message), which
    /// classifies it ([`retry::classify_message`]) when the client gives no kind.
    fn message(&self) -> String;

    /// How it is retried. By default from [`DbFailure::message`].
    fn class(&self) -> Class {
        retry::classify_message(&self.message())
    }

    /// Whether the connection is gone (the server ends the transaction uncommitted).
    fn is_connection_lost(&self) -> bool {
        retry::is_connection_lost(&self.message())
    }

    /// Whether the server stated it (a refusal), rather than the client failing on its
    /// own: a failed `COMMIT` the server refused is a rollback; any other is an unknown
    /// outcome.
    fn is_from_server(&self) -> bool {
        true
    }
}

/// What the protocol runs: a write (one transaction, retried) or a read.
#[derive(Debug, Clone, PartialEq)]
pub enum Job {
    /// A write operation.
    Write(Box<Request>),
    /// `list`: the collection's items.
    List(Id),
    /// `list_versioned`: the items with the collection's version, in one statement.
    ListVersioned(Id),
    /// `page`: at most `limit` items after the cursor's place (or from the start), with
    /// the collection's version, in one statement.
    Page {
        /// The collection.
        parent: Id,
        /// Where the page starts (`None`: the start).
        after: Option<crate::Cursor>,
        /// How many rows at most (at least one).
        limit: u32,
    },
    /// `index_of`: the item's 0-based index.
    IndexOf(Id),
    /// `verify`: every row of the collection, checked.
    Verify(Id),
    /// `check_schema`: the table's constraints.
    CheckSchema,
    /// `check_key_order`: the key column's collation.
    CheckKeyOrder,
    /// `ensure_ordering`: adds what the table lacks ([`migration::ensure_plan`]).
    Ensure,
    /// `adopt_ordering`: renumbers in this order and adds what the table lacks
    /// ([`migration::adopt_plan`]).
    Adopt(Vec<String>),
    /// `verify_linked` (and the start of `convert_linked`): every row's link, each
    /// list walked ([`crate::linked::survey`]).
    Links {
        /// The link column.
        column: String,
        /// Which neighbour it names.
        link: crate::linked::Link,
    },
    /// `purge_requests`: deletes the table's request records older than `older_than`,
    /// `batch` at a time ([`sql::purge_records`]), until a batch comes back short.
    Purge {
        /// How old a record must be to go.
        older_than: Duration,
        /// Records per statement (at least one).
        batch: u32,
    },
}

/// What a [`Job`] produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Finished {
    /// A write's outcome.
    Outcome(Outcome),
    /// Item rows.
    Rows(Vec<Row>),
    /// A versioned list.
    Listing(Listing),
    /// A page of a list.
    Page(crate::Page),
    /// An index.
    Index(u64),
    /// A verification report.
    Report(verify::Report),
    /// A check passed.
    Checked,
    /// What `ensure_ordering` or `adopt_ordering` added.
    Ensured(migration::Ensured),
    /// How many request records a purge deleted.
    Purged(u64),
    /// The lists of a linked-list table and the ones that are not one chain.
    Links(crate::linked::Survey),
}

macro_rules! finished_as {
    ($($(#[$doc:meta])* $name:ident -> $t:ty = $variant:ident;)*) => {
        impl Finished {
            $(
                $(#[$doc])*
                pub fn $name(self) -> Result<$t, Error> {
                    match self {
                        Finished::$variant(v) => Ok(v),
                        other => Err(Error::Inconsistent(format!("unexpected result: {other:?}"))),
                    }
                }
            )*

            /// A check's result.
            pub fn into_checked(self) -> Result<(), Error> {
                match self {
                    Finished::Checked => Ok(()),
                    other => Err(Error::Inconsistent(format!("unexpected result: {other:?}"))),
                }
            }
        }
    };
}

finished_as! {
    /// A write's outcome.
    into_outcome -> Outcome = Outcome;
    /// `list`'s rows.
    into_rows -> Vec<Row> = Rows;
    /// `list_versioned`'s listing.
    into_listing -> Listing = Listing;
    /// `page`'s page.
    into_page -> crate::Page = Page;
    /// `index_of`'s index.
    into_index -> u64 = Index;
    /// `verify`'s report.
    into_report -> verify::Report = Report;
    /// `ensure_ordering`'s and `adopt_ordering`'s report.
    into_ensured -> migration::Ensured = Ensured;
    /// `purge_requests`' count.
    into_purged -> u64 = Purged;
    /// `verify_linked`'s survey.
    into_links -> crate::linked::Survey = Links;
}

/// What the adapter must do next.
#[derive(Debug)]
pub enum Io<E> {
    /// Execute this statement on the connection (inside the transaction once one is
    /// open) and feed [`Feed::Reply`] with its decoded result, or [`Feed::Failed`].
    Execute(Statement),
    /// Open the library's own transaction (the isolation and mode of
    /// [`sql::begin_statements`]); inside the caller's transaction open a savepoint
    /// instead. Feed [`Feed::Began`] saying which, or [`Feed::Failed`].
    Begin,
    /// Run the caller's insert of the new row at this collection and position; feed
    /// [`Feed::Reply`] with [`Reply::Inserted`] (or [`Reply::InsertedId`]).
    Insert {
        /// The collection.
        parent: Id,
        /// The position.
        position: Position,
    },
    /// Run the caller's hook with the changes; feed [`Feed::Ok`].
    BeforeCommit(Changes),
    /// Commit the transaction, or release the savepoint; feed [`Feed::Ok`].
    Commit {
        /// A savepoint of the caller's transaction.
        savepoint: bool,
        /// A statement follows on the same session ([`sql::galera::unchanged`]), then
        /// [`Io::Release`]: an adapter whose transaction object hands its connection
        /// back when it commits sends `COMMIT` as a statement instead.
        then_check: bool,
    },
    /// After a `COMMIT` sent as a statement and its check: close the transaction object
    /// (nothing is left to commit on the server); feed [`Feed::Ok`].
    Release,
    /// Roll the transaction (or savepoint) back; feed [`Feed::Ok`], or [`Feed::Failed`]
    /// where the client marks its connection unusable after a failed `ROLLBACK`.
    Rollback {
        /// A savepoint of the caller's transaction.
        savepoint: bool,
    },
    /// Pause this long before the next attempt, then feed [`Feed::Ok`].
    Sleep(Duration),
    /// The job is complete.
    Done(Finished),
    /// The job failed: return this.
    Fail(Failure<E>),
}

/// What the adapter feeds the protocol.
#[derive(Debug)]
pub enum Feed<E> {
    /// The first call.
    Start,
    /// A statement's result, or the caller's insert ran.
    Reply(Reply),
    /// A transaction (`nested: false`) or savepoint (`nested: true`) is open.
    Began {
        /// Inside the caller's transaction.
        nested: bool,
    },
    /// The step succeeded.
    Ok,
    /// The step failed with the client's error.
    Failed(E),
    /// The step was refused by the library itself.
    Refused(Error),
}

impl<E> Feed<E> {
    /// The feed after the caller's insert ran, its value kept in `value`; `reply` is
    /// [`Slot::reply`](super::Slot::reply).
    pub fn inserted<T>(reply: Reply, result: Result<T, E>, value: &mut Option<T>) -> Self {
        match result {
            Ok(v) => {
                *value = Some(v);
                Feed::Reply(reply)
            }
            Err(e) => Feed::Failed(e),
        }
    }

    /// The feed for an insert the caller gave no closure for.
    pub fn no_insert() -> Self {
        Feed::Refused(Error::Inconsistent(
            "an insert without a row to insert".into(),
        ))
    }
}

impl<E> From<Result<Reply, E>> for Feed<E> {
    fn from(r: Result<Reply, E>) -> Self {
        match r {
            Ok(reply) => Feed::Reply(reply),
            Err(e) => Feed::Failed(e),
        }
    }
}

impl<E> From<Result<(), E>> for Feed<E> {
    fn from(r: Result<(), E>) -> Self {
        match r {
            Ok(()) => Feed::Ok,
            Err(e) => Feed::Failed(e),
        }
    }
}

/// Why a job failed, with the client's error where there is one: each adapter maps it
/// onto its own `Error` variant of the same name.
#[derive(Debug)]
pub enum Failure<E> {
    /// The library refused the request.
    Refused(Error),
    /// The database failed.
    Database(E),
    /// Every attempt failed with a retryable error; the last one.
    RetriesExhausted {
        /// Attempts made.
        attempts: u32,
        /// The last error.
        last: E,
    },
    /// The connection failed during `COMMIT`.
    CommitUnknown(E),
    /// The connection failed before `COMMIT`: nothing was applied.
    ConnectionLost(E),
    /// SQLite's `database is locked` inside the caller's (DEFERRED) transaction.
    SqliteDeferred(E),
}

impl<E: DbFailure> Failure<E> {
    /// A client error as the adapters report it outside a `COMMIT`: a lost
    /// connection, or another database failure.
    pub fn of(e: E) -> Self {
        if e.is_connection_lost() {
            Failure::ConnectionLost(e)
        } else {
            Failure::Database(e)
        }
    }

    /// The failure with the words the adapters' `Error` shows for it.
    fn describe(&self) -> String {
        match self {
            Failure::Refused(e) => e.to_string(),
            Failure::Database(e) => format!("database error: {e}"),
            Failure::RetriesExhausted { attempts, last } => {
                format!("gave up after {attempts} attempts: {last}")
            }
            Failure::CommitUnknown(e) => format!(
                "the commit outcome is unknown ({e}): repeat the request with its request key, which returns the outcome if it was applied and applies it if not, or re-read the collection before retrying"
            ),
            Failure::ConnectionLost(e) => format!(
                "the connection was lost before the commit ({e}); nothing was applied: reconnect and retry"
            ),
            Failure::SqliteDeferred(e) => format!("database is locked ({e})"),
        }
    }

    /// Its [`Kind`].
    pub fn kind(&self) -> Kind<'_> {
        match self {
            Failure::Refused(e) => Kind::Refused(e),
            Failure::Database(e) => Kind::Database {
                retryable: e.class() == Class::Retry,
            },
            Failure::RetriesExhausted { .. } => Kind::RetriesExhausted,
            Failure::CommitUnknown(_) => Kind::CommitUnknown,
            Failure::ConnectionLost(_) => Kind::ConnectionLost,
            Failure::SqliteDeferred(_) => Kind::SqliteDeferred,
        }
    }

    fn class(&self, spec: &crate::Spec) -> Class {
        match self {
            Failure::Database(e) => retry::refine(spec, &e.to_string(), e.class()),
            Failure::Refused(e) if e.is_retryable() => Class::Retry,
            _ => Class::Fatal,
        }
    }
}

/// What an adapter's error is, for its `code`, `status` and `is_retryable`, decided
/// once for every adapter.
#[derive(Debug, Clone, Copy)]
pub enum Kind<'a> {
    /// A refusal.
    Refused(&'a Error),
    /// A database failure; `retryable` from [`DbFailure::class`].
    Database {
        /// A new attempt may succeed.
        retryable: bool,
    },
    /// Retries ran out.
    RetriesExhausted,
    /// The commit's outcome is unknown.
    CommitUnknown,
    /// The connection was lost before the commit.
    ConnectionLost,
    /// SQLite's `database is locked` inside the caller's DEFERRED transaction.
    SqliteDeferred,
}

impl Kind<'_> {
    /// Whether running the whole operation again may succeed. A duplicate is not: the
    /// library retries one on the position key itself (then reports `Inconsistent`),
    /// and one on another key is the caller's row.
    pub fn is_retryable(&self) -> bool {
        match self {
            Kind::Database { retryable } => *retryable,
            Kind::Refused(e) => e.is_retryable(),
            Kind::ConnectionLost | Kind::SqliteDeferred => true,
            Kind::RetriesExhausted | Kind::CommitUnknown => false,
        }
    }

    /// The stable machine-readable code: the refusal's [`Error::code`], or
    /// `database_busy` (retryable), `database_error`, `retries_exhausted`,
    /// `commit_unknown`, `connection_lost`, `sqlite_deferred`.
    pub fn code(&self) -> &'static str {
        match self {
            Kind::Refused(e) => e.code(),
            Kind::Database { retryable: true } => "database_busy",
            Kind::Database { retryable: false } => "database_error",
            Kind::RetriesExhausted => "retries_exhausted",
            Kind::CommitUnknown => "commit_unknown",
            Kind::ConnectionLost => "connection_lost",
            Kind::SqliteDeferred => "sqlite_deferred",
        }
    }

    /// What it means for the client: a refusal's own status; `RetryLater` for a busy
    /// database, exhausted retries, a lost connection and a busy deferred SQLite
    /// transaction; `Conflict` for an unknown commit outcome (re-read the list first);
    /// `Internal` for any other database failure.
    pub fn status(&self) -> Status {
        match self {
            Kind::Refused(e) => e.status(),
            Kind::Database { retryable: true }
            | Kind::RetriesExhausted
            | Kind::ConnectionLost
            | Kind::SqliteDeferred => Status::RetryLater,
            Kind::Database { retryable: false } => Status::Internal,
            Kind::CommitUnknown => Status::Conflict,
        }
    }
}

#[derive(Debug)]
enum State {
    Start,
    Probe,
    Begin,
    Drive,
    Commit,
    Committed,
    Released,
    /// The check before `ROLLBACK` on a Galera node; `asked` times so far.
    Escaped {
        asked: u8,
    },
    Rollback,
    /// The rollback of an operation that changed nothing ([`Outcome::unchanged`]), or
    /// the end of a replayed one.
    Discard,
    /// The read of the request's record ([`sql::find_record`]).
    Find,
    /// The transaction of an unchanged operation's record.
    RecordBegin,
    /// The insert of an unchanged operation's record.
    RecordWrite,
    /// `purge_requests`: a batch.
    Purge,
    Sleep,
    /// The schema probe that explains a duplicate.
    Duplicate,
    /// A read: a causal read (MySQL) that may fall back to the plain statement.
    Causal(Statement),
    Read,
    /// `index_of`: the count before the item.
    Count,
    /// `ensure_ordering`: the schema probe.
    Inspect,
    /// `ensure_ordering`: the count of rows that would break what it adds.
    RowsCheck,
    /// `adopt_ordering` of a numeric column: the count of the rows it renumbers.
    Renumbering,
    /// `ensure_ordering`: its statements, one at a time.
    Ddl,
    /// `ensure_ordering`: the rollback after a statement of its transaction failed.
    DdlRollback,
    Over,
}

/// One step of `ensure_ordering`'s plan.
#[derive(Debug)]
enum Ddl {
    Run(String),
    Begin,
    Commit,
}

/// One job in flight: see the module docs.
#[derive(Debug)]
pub struct Protocol<E> {
    settings: Settings,
    dialect: Dialect,
    job: Job,
    hook: bool,
    state: State,
    attempts: Attempts,
    attempt: u32,
    galera: bool,
    nested: bool,
    op: Option<Operation>,
    locked: Option<Id>,
    outcome: Option<Outcome>,
    failure: Option<Failure<E>>,
    span: tracing::Span,
    /// `ensure_ordering`: the steps left, what they add, and whether its transaction
    /// is open.
    ddl: std::collections::VecDeque<Ddl>,
    ensured: Vec<migration::Fix>,
    /// `adopt_ordering` of a numeric column: its count of the rows it renumbers, and
    /// the statement that counts them while it has not run.
    renumbered: u64,
    renumbering: Option<sql::Statement>,
    in_ddl_txn: bool,
    /// The write's request record ([`crate::requests`]).
    record: Option<requests::Record>,
    /// The outcome is a recorded one, returned again.
    replaying: bool,
    /// `purge_requests`: records deleted so far.
    purged: u64,
}

impl<E: DbFailure> Protocol<E> {
    /// The protocol for `job` on `dialect` with `settings`; `hook`: the caller gave a
    /// `before_commit` hook ([`Io::BeforeCommit`]).
    pub fn new(settings: &Settings, dialect: Dialect, job: Job, hook: bool) -> Self {
        Protocol {
            settings: *settings,
            dialect,
            hook,
            state: State::Start,
            attempts: Attempts::new(settings.retry),
            attempt: 0,
            galera: false,
            nested: false,
            op: None,
            locked: None,
            outcome: None,
            failure: None,
            ddl: std::collections::VecDeque::new(),
            ensured: Vec::new(),
            renumbered: 0,
            renumbering: None,
            in_ddl_txn: false,
            record: match (&job, settings.request) {
                (Job::Write(req), Some(key)) => Some(requests::Record::new(
                    &settings.spec,
                    requests::RequestKey {
                        key,
                        tenant: settings.tenant,
                    },
                    req,
                    settings.concurrency,
                    settings.within,
                    settings.idempotency,
                )),
                _ => None,
            },
            replaying: false,
            purged: 0,
            span: match &job {
                Job::Write(req) => crate::observe::span(&settings.spec, req),
                _ => tracing::Span::none(),
            },
            job,
        }
    }

    /// The write's `tracing` span ([`crate::observe::span`]): the adapter enters it
    /// (or instruments its future with it) while it drives the protocol, so that its
    /// own events fall inside; the protocol records the end of the operation in it.
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// The next step, given the result of the last one ([`Feed::Start`] first).
    pub fn next(&mut self, feed: Feed<E>) -> Io<E> {
        let state = std::mem::replace(&mut self.state, State::Over);
        match (state, feed) {
            (State::Start, _) => self.start(),
            (State::Probe, feed) => self.probed(feed),
            (State::Begin, Feed::Began { nested }) => {
                self.nested = nested;
                if let Some(rec) = &self.record {
                    self.state = State::Find;
                    return Io::Execute(sql::find_record(self.dialect, rec));
                }
                self.start_operation()
            }
            (State::Find, Feed::Reply(Reply::Record(None))) => self.start_operation(),
            (State::Find, Feed::Reply(Reply::Record(Some((digest, text))))) => {
                self.replay(&digest, &text)
            }
            (State::Find, Feed::Failed(e)) => self.record_failed(e),
            (State::Find, other) => {
                let f = match other {
                    Feed::Reply(r) => unexpected(&r),
                    other => Error::Inconsistent(format!(
                        "unexpected step result: {}",
                        feed_name(&other)
                    )),
                };
                self.failing(Failure::Refused(f))
            }
            (State::RecordBegin, Feed::Began { nested }) => {
                self.nested = nested;
                let text = self.outcome.as_ref().map(requests::encode);
                match (text, &self.record) {
                    (Some(Ok(text)), Some(rec)) => {
                        self.state = State::RecordWrite;
                        Io::Execute(sql::insert_record(self.dialect, rec, &text))
                    }
                    (Some(Err(e)), _) => self.failing(Failure::Refused(e)),
                    _ => self.failing(Failure::Refused(Error::Inconsistent(
                        "a record without its outcome".into(),
                    ))),
                }
            }
            (State::RecordBegin, Feed::Failed(e)) => self.settle(Failure::of(e)),
            (State::RecordBegin, other) => self.unexpected_feed(other),
            (State::RecordWrite, Feed::Reply(_)) => {
                self.state = State::Commit;
                Io::Commit {
                    savepoint: self.nested,
                    then_check: self.galera && !self.nested,
                }
            }
            (State::RecordWrite, Feed::Failed(e)) => self.record_failed(e),
            (State::RecordWrite, other) => self.unexpected_feed(other),
            (State::Purge, Feed::Reply(Reply::Affected(n))) => {
                self.purged += n;
                match &self.job {
                    Job::Purge { batch, .. } if n >= u64::from((*batch).max(1)) => {
                        self.state = State::Purge;
                        self.purge_batch()
                    }
                    _ => self.finish(Finished::Purged(self.purged)),
                }
            }
            (State::Purge, Feed::Failed(e)) if requests::is_missing_table(&e.message()) => {
                self.fail(Failure::Refused(requests::missing_table()))
            }
            (State::Purge, Feed::Failed(e)) => self.fail(Failure::of(e)),
            (State::Purge, other) => self.unexpected_feed(other),
            (State::Begin, Feed::Failed(e)) => self.settle(Failure::of(e)),
            (State::Begin, other) => self.unexpected_feed(other),
            (State::Drive, Feed::Reply(reply)) => self.drive(reply),
            (State::Drive, Feed::Ok) => self.drive(Reply::None),
            // a duplicate of the record: another call with the same key committed first
            (State::Drive, Feed::Failed(e)) if self.op.as_ref().is_some_and(Operation::recording) => {
                self.record_failed(e)
            }
            (State::Drive, Feed::Failed(e)) => self.failing(Failure::of(e)),
            (State::Drive, Feed::Refused(e)) => self.failing(Failure::Refused(e)),
            (State::Drive, other) => self.unexpected_feed(other),
            (State::Commit, Feed::Ok) => {
                if self.galera && !self.nested {
                    self.state = State::Committed;
                    Io::Execute(sql::galera::unchanged())
                } else {
                    self.done()
                }
            }
            (State::Commit, Feed::Failed(e)) => {
                if self.nested {
                    return self.fail(Failure::of(e));
                }
                // a refusal the server stated is a rollback (retried as it says); a
                // lost connection leaves the outcome unknown
                if e.is_from_server() && !e.is_connection_lost() {
                    self.settle(Failure::Database(e))
                } else {
                    self.settle(Failure::CommitUnknown(e))
                }
            }
            (State::Commit, other) => self.unexpected_feed(other),
            // a cluster that aborted the transaction may still answer COMMIT with
            // success; the GTID tells whether it wrote anything
            (State::Committed, Feed::Reply(Reply::Count(n))) => {
                match sql::galera::check_committed(n) {
                    Ok(()) => {
                        self.state = State::Released;
                        Io::Release
                    }
                    Err(e) => self.settle(Failure::Refused(e)),
                }
            }
            (State::Committed, Feed::Failed(e)) => self.settle(Failure::CommitUnknown(e)),
            (State::Committed, other) => self.unexpected_feed(other),
            (State::Released, Feed::Failed(e)) => {
                if e.is_connection_lost() {
                    self.settle(Failure::CommitUnknown(e))
                } else {
                    self.settle(Failure::Database(e))
                }
            }
            (State::Released, _) => self.done(),
            (State::Escaped { asked }, feed) => {
                let count = match feed {
                    Feed::Reply(Reply::Count(n)) => Some(n),
                    // a node that aborted the transaction may answer the next statement
                    // with that abort's error instead (MariaDB keeps it "for the next
                    // interaction"): then the check is asked once more, so that an
                    // escape is never missed
                    Feed::Failed(_) if asked < 2 => {
                        self.state = State::Escaped { asked: asked + 1 };
                        return Io::Execute(sql::galera::unchanged());
                    }
                    _ => None,
                };
                if let Some(refused) = sql::galera::check_escaped(count, self.locked) {
                    self.failure = Some(Failure::Refused(refused));
                }
                self.rollback()
            }
            (State::Rollback, feed) => {
                let failure = self.take_failure();
                let failure = match (failure, feed) {
                    // the server rolls back what it did not commit; part of a
                    // PartiallyApplied operation is committed, whatever ROLLBACK says
                    (
                        f @ (Failure::ConnectionLost(_)
                        | Failure::Refused(Error::PartiallyApplied { .. })),
                        _,
                    ) => f,
                    // a client that marks its connection broken after a failed ROLLBACK
                    // (Diesel; Galera answers one with 1213 after an abort): it must be
                    // replaced
                    (_, Feed::Failed(rb)) if !self.nested => Failure::ConnectionLost(rb),
                    (f, _) => f,
                };
                if self.nested {
                    self.fail(failure)
                } else {
                    self.settle(failure)
                }
            }
            // an operation that changed nothing is recorded in a transaction of its own
            (State::Discard, Feed::Ok)
                if self.record.is_some()
                    && !self.replaying
                    && self.outcome.as_ref().is_some_and(|o| o.unchanged) =>
            {
                self.state = State::RecordBegin;
                Io::Begin
            }
            (State::Discard, Feed::Ok) => self.done(),
            // the operation's answer stands; the connection is not usable
            (State::Discard, Feed::Failed(e)) if !self.nested => {
                self.fail(Failure::ConnectionLost(e))
            }
            (State::Discard, Feed::Failed(e)) => self.fail(Failure::of(e)),
            (State::Discard, other) => self.unexpected_feed(other),
            (State::Sleep, _) => self.start(),
            (State::Duplicate, feed) => {
                let failure = self.take_failure();
                match feed {
                    // a foreign key that set a scope column to NULL moved rows onto
                    // taken positions: the schema's doing, not an inconsistency
                    Feed::Reply(Reply::Count(n)) if sql::Facts(n).has(sql::SCHEMA_SET_NULL) => {
                        self.fail(Failure::Refused(crate::migration::set_null(
                            self.dialect,
                            &self.settings.spec,
                        )))
                    }
                    Feed::Reply(Reply::Count(n)) => {
                        match verify::check_unique(self.dialect, &self.settings.spec, n) {
                            Err(e) => self.fail(Failure::Refused(e)),
                            Ok(()) => self.fail(failure),
                        }
                    }
                    _ => self.fail(failure),
                }
            }
            (State::Causal(plain), Feed::Failed(e)) if sql::galera::is_not_galera(&e.message()) => {
                self.state = State::Read;
                Io::Execute(plain)
            }
            (State::Causal(_) | State::Read, Feed::Reply(reply)) => self.read(reply),
            (State::Causal(_) | State::Read | State::Count, Feed::Failed(e)) => {
                self.fail(Failure::of(e))
            }
            (State::Count, Feed::Reply(Reply::Count(n))) => {
                self.finish(Finished::Index(u64::try_from(n).unwrap_or(0)))
            }
            (State::Count, other) => self.unexpected_feed(other),
            (State::Inspect, Feed::Reply(Reply::Count(n))) => self.inspected(n),
            (State::RowsCheck, Feed::Reply(Reply::Count(0))) => self.next_ddl(),
            (State::Renumbering, Feed::Reply(Reply::Count(n))) => {
                self.renumbered = u64::try_from(n).unwrap_or(0);
                if n == 0 {
                    self.ensured.retain(|f| *f != migration::Fix::Renumbered);
                }
                self.next_ddl()
            }
            (State::RowsCheck, Feed::Reply(Reply::Count(n))) => {
                self.fail(Failure::Refused(Error::SchemaMismatch {
                    table: self.settings.spec.table.to_owned(),
                    problem: "rows of it would break a constraint it lacks: positions shared within a list, missing, or outside the library's domain",
                    fix: format!(
                        "{n} such rows or shared positions: renumber the table with adopt_ordering (it keeps each list's order: position, then id), then run ensure_ordering again"
                    ),
                }))
            }
            (State::Ddl, Feed::Began { nested }) => {
                self.nested = nested;
                self.next_ddl()
            }
            (State::Ddl, Feed::Reply(_) | Feed::Ok) => self.next_ddl(),
            (
                State::Inspect | State::RowsCheck | State::Renumbering | State::Ddl,
                Feed::Failed(e),
            ) => {
                if self.in_ddl_txn {
                    self.in_ddl_txn = false;
                    self.failure = Some(Failure::of(e));
                    self.state = State::DdlRollback;
                    Io::Rollback {
                        savepoint: self.nested,
                    }
                } else {
                    self.fail(Failure::of(e))
                }
            }
            (State::DdlRollback, _) => {
                let failure = self.take_failure();
                self.fail(failure)
            }
            (State::Inspect | State::RowsCheck | State::Renumbering | State::Ddl, other) => {
                self.unexpected_feed(other)
            }
            (State::Causal(_) | State::Read, other) => self.unexpected_feed(other),
            (State::Over, _) => self.fail(Failure::Refused(Error::Inconsistent(
                "the protocol was driven past its end".into(),
            ))),
        }
    }

    fn start(&mut self) -> Io<E> {
        if self.settings.key_error {
            return self.fail(Failure::Refused(super::key_refused()));
        }
        let d = self.dialect;
        let spec = &self.settings.spec;
        let s = &self.settings;
        let read = |st: &mut State, stmt: Statement| {
            if d == Dialect::Mysql {
                let causal = sql::galera::causal(&stmt);
                *st = State::Causal(stmt);
                Io::Execute(causal)
            } else {
                *st = State::Read;
                Io::Execute(stmt)
            }
        };
        match &self.job {
            Job::Write(_) => {
                self.attempt = self.attempts.begin();
                self.locked = None;
                self.op = None;
                self.outcome = None;
                self.replaying = false;
                // MySQL/MariaDB: is this a Galera node? On one, the probe is also the
                // causal wait that must come before BEGIN
                if d == Dialect::Mysql {
                    self.state = State::Probe;
                    Io::Execute(sql::galera::probe())
                } else {
                    self.began_probe(false)
                }
            }
            Job::List(parent) => match s.scope_key(*parent) {
                Ok(p) => read(&mut self.state, sql::list(d, spec, p)),
                Err(e) => self.fail(Failure::Refused(e)),
            },
            Job::ListVersioned(parent) => match s.scope_key(*parent) {
                Ok(p) => read(&mut self.state, sql::list_versioned(d, spec, p)),
                Err(e) => self.fail(Failure::Refused(e)),
            },
            Job::Page {
                parent,
                after,
                limit,
            } => {
                let keys = s.scope_key(*parent).and_then(|p| match after {
                    // a cursor of another table (an integer place for a table of keys)
                    Some(c) if s.spec.strategy.check(&c.position).is_err() => {
                        Err(Error::InvalidPosition {
                            position: c.position.clone(),
                            reason: "the cursor is not of this list: start from the first page",
                        })
                    }
                    Some(c) => Ok((p, Some(c.clone_with(s.item_key(c.id)?)))),
                    None => Ok((p, None)),
                });
                match keys {
                    Ok((p, after)) => read(
                        &mut self.state,
                        sql::page(d, spec, p, after.as_ref(), *limit),
                    ),
                    Err(e) => self.fail(Failure::Refused(e)),
                }
            }
            Job::Verify(parent) => match s.scope_key(*parent) {
                // every row, the ones the row filter leaves out included
                Ok(p) => read(&mut self.state, sql::list_all(d, spec, p)),
                Err(e) => self.fail(Failure::Refused(e)),
            },
            Job::Links { .. } if spec.is_link() => self.fail(Failure::Refused(
                Error::InvalidRequest(
                    "an association table's rows are named by their list and another key: a linked list needs a table with an id column of its own",
                ),
            )),
            Job::Links { column, .. } => read(&mut self.state, sql::links(d, spec, None, column, false)),
            Job::IndexOf(item) => match s.item_key(*item) {
                Ok(id) => read(
                    &mut self.state,
                    sql::read(d, spec, &Read::Item { id }, false),
                ),
                Err(e) => self.fail(Failure::Refused(e)),
            },
            Job::CheckSchema => {
                self.state = State::Read;
                Io::Execute(sql::schema_probe(d, spec))
            }
            Job::Ensure | Job::Adopt(_) => {
                self.state = State::Inspect;
                Io::Execute(sql::schema_probe(d, spec))
            }
            Job::Purge { .. } => {
                self.state = State::Purge;
                self.purge_batch()
            }
            Job::CheckKeyOrder if !s.is_key() => self.finish(Finished::Checked),
            Job::CheckKeyOrder => {
                self.state = State::Read;
                Io::Execute(sql::probe_key_order(d, spec, verify::KEY_ORDER_PROBES))
            }
        }
    }

    /// `ensure_ordering`: the plan for what the probe found, refused before any change
    /// if it cannot be carried out.
    fn inspected(&mut self, probe: i64) -> Io<E> {
        let (d, spec) = (self.dialect, &self.settings.spec);
        let plan = match &self.job {
            Job::Adopt(order) => {
                let order: Vec<&str> = order.iter().map(String::as_str).collect();
                migration::adopt_plan(d, spec, probe, &order)
            }
            _ => migration::ensure_plan(d, spec, probe),
        };
        let plan = match plan {
            Ok(p) => p,
            Err(e) => return self.fail(Failure::Refused(e)),
        };
        self.ensured = plan.added;
        self.ddl = plan.before.into_iter().map(Ddl::Run).collect();
        if !plan.atomic.is_empty() {
            self.ddl.push_back(Ddl::Begin);
            self.ddl.extend(plan.atomic.into_iter().map(Ddl::Run));
            self.ddl.push_back(Ddl::Commit);
        }
        self.ddl.extend(plan.after.into_iter().map(Ddl::Run));
        self.renumbering = plan.renumbering;
        match plan.rows_check {
            Some(check) => {
                self.state = State::RowsCheck;
                Io::Execute(check)
            }
            None => self.next_ddl(),
        }
    }

    /// `ensure_ordering`: its next statement, or its report.
    fn next_ddl(&mut self) -> Io<E> {
        if let Some(count) = self.renumbering.take() {
            self.state = State::Renumbering;
            return Io::Execute(count);
        }
        self.state = State::Ddl;
        match self.ddl.pop_front() {
            Some(Ddl::Run(stmt)) => Io::Execute(sql::command(&stmt)),
            Some(Ddl::Begin) => {
                self.in_ddl_txn = true;
                Io::Begin
            }
            Some(Ddl::Commit) => {
                self.in_ddl_txn = false;
                Io::Commit {
                    savepoint: self.nested,
                    then_check: false,
                }
            }
            None => {
                let added = std::mem::take(&mut self.ensured);
                self.finish(Finished::Ensured(migration::Ensured {
                    added,
                    renumbered: self.renumbered,
                }))
            }
        }
    }

    /// The operation of a write, once its transaction is open (and its record, if it
    /// has a request key, was not found).
    fn start_operation(&mut self) -> Io<E> {
        let Job::Write(req) = &self.job else {
            return self.fail(Failure::Refused(Error::Inconsistent(
                "a read began a transaction".into(),
            )));
        };
        let mut op = self
            .settings
            .operation(self.dialect, req)
            .with_record(self.record.clone());
        if self.galera {
            op = op.on_galera();
        }
        if self.hook {
            op = op.with_hook();
        }
        self.op = Some(op);
        self.drive(Reply::None)
    }

    /// A record of the request's key was found: the same request returns its recorded
    /// outcome (an insert, the row it made, as an idempotent insert does) and writes
    /// nothing; another request is refused.
    fn replay(&mut self, digest: &str, text: &str) -> Io<E> {
        let Some(rec) = &self.record else {
            return self.failing(Failure::Refused(Error::Inconsistent(
                "a record read without a request key".into(),
            )));
        };
        if digest.trim() != rec.digest {
            return self.failing(Failure::Refused(Error::IdempotencyKeyReused {
                key: rec.key,
            }));
        }
        let outcome = match requests::decode(&self.settings.spec, text) {
            Ok(o) => o,
            Err(e) => return self.failing(Failure::Refused(e)),
        };
        if let Job::Write(req) = &self.job
            && let Request::Insert { parent, .. } = **req
        {
            let id = outcome
                .changes
                .rows
                .iter()
                .find(|c| c.parent == parent && Some(&c.position) == outcome.position.as_ref())
                .map(|c| c.id);
            let refused = match id {
                Some(id) => Error::AlreadyApplied { id, parent },
                None => Error::Inconsistent("a recorded insert without its row".into()),
            };
            return self.failing(Failure::Refused(refused));
        }
        self.outcome = Some(outcome);
        self.replaying = true;
        self.state = State::Discard;
        Io::Rollback {
            savepoint: self.nested,
        }
    }

    /// A failed read or insert of the request's record: a duplicate is another call
    /// with the same key that committed first (retried: the next attempt finds its
    /// record); a missing table says how to create it.
    fn record_failed(&mut self, e: E) -> Io<E> {
        let message = e.message();
        let key = self.record.as_ref().map_or(Id::Int(0), |r| r.key);
        if requests::is_missing_table(&message) {
            self.failing(Failure::Refused(requests::missing_table()))
        } else if requests::is_duplicate(&message) && !e.is_connection_lost() {
            self.failing(Failure::Refused(Error::RequestInFlight { key }))
        } else {
            self.failing(Failure::of(e))
        }
    }

    /// `purge_requests`: the next batch.
    fn purge_batch(&mut self) -> Io<E> {
        let Job::Purge { older_than, batch } = &self.job else {
            return self.fail(Failure::Refused(Error::Inconsistent(
                "a purge without its job".into(),
            )));
        };
        let age = i64::try_from(older_than.as_millis()).unwrap_or(i64::MAX);
        let before = requests::now_ms().saturating_sub(age);
        Io::Execute(sql::purge_records(
            self.dialect,
            self.settings.spec.table,
            before,
            (*batch).max(1),
        ))
    }

    fn probed(&mut self, feed: Feed<E>) -> Io<E> {
        match feed {
            Feed::Reply(Reply::Count(on)) => self.began_probe(on == 1),
            Feed::Reply(_) => self.began_probe(false),
            Feed::Failed(e) if sql::galera::is_not_galera(&e.message()) => self.began_probe(false),
            // classified like any other failure (a causal wait that timed out is a
            // lock-wait timeout, retried)
            Feed::Failed(e) => self.settle(Failure::of(e)),
            other => self.unexpected_feed(other),
        }
    }

    fn began_probe(&mut self, galera: bool) -> Io<E> {
        self.galera = galera;
        self.attempts.use_policy(self.settings.retry_on(galera));
        self.state = State::Begin;
        Io::Begin
    }

    fn drive(&mut self, reply: Reply) -> Io<E> {
        let Some(op) = self.op.as_mut() else {
            return self.fail(Failure::Refused(Error::Inconsistent(
                "an operation driven before its transaction".into(),
            )));
        };
        let action = op.next(reply);
        self.locked = op.locked().first().copied();
        match action {
            Ok(Action::Execute(stmt)) => {
                self.state = State::Drive;
                Io::Execute(stmt)
            }
            Ok(Action::Insert { parent, position }) => {
                self.state = State::Drive;
                Io::Insert { parent, position }
            }
            Ok(Action::BeforeCommit(changes)) => {
                self.state = State::Drive;
                Io::BeforeCommit(changes)
            }
            // nothing written but the lock's version bump: undone
            Ok(Action::Done(outcome)) if outcome.unchanged => {
                self.outcome = Some(outcome);
                self.state = State::Discard;
                Io::Rollback {
                    savepoint: self.nested,
                }
            }
            Ok(Action::Done(outcome)) => {
                self.outcome = Some(outcome);
                self.state = State::Commit;
                Io::Commit {
                    savepoint: self.nested,
                    then_check: self.galera && !self.nested,
                }
            }
            Err(e) => self.failing(Failure::Refused(e)),
        }
    }

    /// A failed attempt inside the transaction: the Galera check, then `ROLLBACK`.
    fn failing(&mut self, failure: Failure<E>) -> Io<E> {
        let lost = matches!(failure, Failure::ConnectionLost(_));
        self.failure = Some(failure);
        // on a node, a failure may follow statements that escaped the transaction:
        // then it is PartiallyApplied, never retried
        if self.galera && !self.nested && !lost {
            self.state = State::Escaped { asked: 1 };
            return Io::Execute(sql::galera::unchanged());
        }
        self.rollback()
    }

    fn rollback(&mut self) -> Io<E> {
        // a failed operation leaves nothing behind; on MySQL this also ends a
        // transaction that a lock-wait timeout left open
        self.state = State::Rollback;
        Io::Rollback {
            savepoint: self.nested,
        }
    }

    fn take_failure(&mut self) -> Failure<E> {
        self.failure.take().unwrap_or_else(|| {
            Failure::Refused(Error::Inconsistent("a failure without its error".into()))
        })
    }

    /// The end of a failed attempt of the library's own: retried after a pause, or
    /// the failure to return.
    fn settle(&mut self, failure: Failure<E>) -> Io<E> {
        if self.nested {
            return self.fail(failure);
        }
        // the connection is gone: retrying on it cannot help
        if matches!(failure, Failure::ConnectionLost(_)) {
            return self.fail(failure);
        }
        let spec = self.settings.spec;
        let class = failure.class(&spec);
        // a duplicate on a key the spec does not name: the caller's row, or a unique
        // index on (scope, position) under another name, which the schema probe tells
        if matches!(&failure, Failure::Database(e) if e.class() == Class::RetryOnce)
            && class == Class::Fatal
        {
            return self.duplicate(failure);
        }
        match self.attempts.after_failure(class) {
            Ok(pause) => {
                if let Job::Write(req) = &self.job {
                    crate::observe::retried(&spec, req, self.attempt, &failure.describe());
                }
                self.state = State::Sleep;
                Io::Sleep(pause)
            }
            Err(Stop::Exhausted) => self.fail(match failure {
                Failure::Database(last) => Failure::RetriesExhausted {
                    attempts: self.attempt,
                    last,
                },
                other => other,
            }),
            // a bug, a table changed behind the library's back, or (the probe tells) a
            // constraint that cannot be deferred
            Err(Stop::DuplicateAgain) => {
                let refused = Failure::Refused(Error::Inconsistent(format!(
                    "a duplicate position survived a retry ({})",
                    failure.describe()
                )));
                self.duplicate(refused)
            }
            Err(Stop::Fatal) => self.fail(failure),
        }
    }

    fn duplicate(&mut self, failure: Failure<E>) -> Io<E> {
        self.failure = Some(failure);
        self.state = State::Duplicate;
        Io::Execute(sql::schema_probe(self.dialect, &self.settings.spec))
    }

    fn done(&mut self) -> Io<E> {
        let mut outcome = self.outcome.take().unwrap_or_default();
        outcome.attempts = self.attempt;
        self.finish(Finished::Outcome(outcome))
    }

    fn finish(&mut self, f: Finished) -> Io<E> {
        self.state = State::Over;
        if let (Job::Write(req), Finished::Outcome(o)) = (&self.job, &f) {
            crate::observe::finished(&self.span, &self.settings.spec, req, Ok(o));
        }
        Io::Done(f)
    }

    fn fail(&mut self, failure: Failure<E>) -> Io<E> {
        self.state = State::Over;
        let failure = match failure {
            // SQLite inside the caller's DEFERRED transaction: no wait helps
            Failure::Database(e)
                if self.nested
                    && self.dialect == Dialect::Sqlite
                    && retry::reason(&e.to_string()) == "busy" =>
            {
                Failure::SqliteDeferred(e)
            }
            // a write refused by one of the application's constraints (the library's
            // own never reach here: a duplicate position is retried, then Inconsistent)
            Failure::Database(e) => match (self.violated(&e), &self.job) {
                (Some(c), Job::Write(req)) => Failure::Refused(match **req {
                    Request::Insert { parent, .. }
                        if self.settings.spec.is_link()
                            && c.is_primary_key_of(&self.settings.spec) =>
                    {
                        Error::AlreadyInList { parent }
                    }
                    _ => Error::Constraint { constraint: c },
                }),
                _ => Failure::Database(e),
            },
            other => other,
        };
        if let Job::Write(req) = &self.job {
            let code = failure.kind().code();
            crate::observe::finished(&self.span, &self.settings.spec, req, Err(code));
        }
        Io::Fail(failure)
    }

    /// The constraint a database failure names, if it is a violation of one.
    fn violated(&self, e: &E) -> Option<Constraint> {
        Constraint::parse(&e.message())
    }

    fn read(&mut self, reply: Reply) -> Io<E> {
        let spec = &self.settings.spec;
        let result = match (&self.job, reply) {
            (Job::List(_), Reply::Rows(rows)) => Ok(Finished::Rows(rows)),
            (Job::Verify(_), Reply::Rows(rows)) => {
                Ok(Finished::Report(verify::verify(spec, &rows)))
            }
            (Job::Links { link, .. }, Reply::Links(rows)) => sql::Wire::of(spec)
                .links(rows)
                .map_err(|e| Error::Inconsistent(e.to_string()))
                .map(|rows| Finished::Links(crate::linked::survey(rows, *link))),
            (Job::ListVersioned(parent), reply) => {
                Listing::from_reply(spec, *parent, reply).map(Finished::Listing)
            }
            (
                Job::Page {
                    parent,
                    after,
                    limit,
                },
                reply,
            ) => crate::Page::from_reply(spec, *parent, after.as_ref(), *limit, reply)
                .map(Finished::Page),
            (Job::IndexOf(item), Reply::Rows(rows)) => match rows.into_iter().next() {
                Some(row) => {
                    self.state = State::Count;
                    return Io::Execute(sql::count_before(
                        self.dialect,
                        spec,
                        row.parent,
                        &row.position,
                    ));
                }
                None => Err(Error::NotFound { id: *item }),
            },
            (Job::CheckSchema, Reply::Count(n)) => {
                verify::check_schema(self.dialect, spec, n).map(|()| Finished::Checked)
            }
            (Job::CheckKeyOrder, Reply::Rows(rows)) => {
                verify::check_key_order(spec, &rows).map(|()| Finished::Checked)
            }
            (_, other) => Err(unexpected(&other)),
        };
        match result {
            Ok(f) => self.finish(f),
            Err(e) => self.fail(Failure::Refused(e)),
        }
    }

    fn unexpected_feed(&mut self, feed: Feed<E>) -> Io<E> {
        let failure = match feed {
            Feed::Failed(e) => Failure::of(e),
            Feed::Refused(e) => Failure::Refused(e),
            Feed::Reply(r) => Failure::Refused(unexpected(&r)),
            other => Failure::Refused(Error::Inconsistent(format!(
                "unexpected step result: {}",
                feed_name(&other)
            ))),
        };
        if matches!(self.job, Job::Write(_)) && self.op.is_some() {
            return self.failing(failure);
        }
        self.fail(failure)
    }
}

fn feed_name<E>(f: &Feed<E>) -> &'static str {
    match f {
        Feed::Start => "start",
        Feed::Reply(_) => "reply",
        Feed::Began { .. } => "began",
        Feed::Ok => "ok",
        Feed::Failed(_) => "failed",
        Feed::Refused(_) => "refused",
    }
}

fn unexpected(r: &Reply) -> Error {
    crate::engine::unexpected("the reply to the statement asked for", r)
}
