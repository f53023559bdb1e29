//! Retries: which engine errors mean "run the whole operation again", and how long to
//! wait between attempts. Shared by the adapters, which see the
//! errors through different drivers.

use std::hash::BuildHasher;
use std::time::{Duration, Instant};

/// How an engine error should be handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Retry the whole transaction (deadlock, serialization failure, lock timeout,
    /// `SQLITE_BUSY`). On MySQL a lock-wait timeout only ends the statement: the adapter
    /// rolls the transaction back before retrying.
    Retry,
    /// Retry once: a duplicate on the position key should be impossible under the
    /// protocol, but can be a serialization failure in disguise.
    RetryOnce,
    /// Return it.
    Fatal,
}

/// Message fragments of retryable errors, per engine.
const RETRYABLE: &[&str] = &[
    "deadlock detected",                       // PostgreSQL 40P01
    "could not serialize access",              // PostgreSQL 40001
    "could not obtain lock",                   // PostgreSQL 55P03 (NOWAIT)
    "canceling statement due to lock timeout", // PostgreSQL 55P03
    "Deadlock found",                          // MySQL 1213 (already rolled back)
    "Lock wait timeout exceeded",              // MySQL 1205: roll back, then retry
    "Record has changed since last read",      // MariaDB 1020 (snapshot isolation)
    "WSREP has not yet prepared node",         // Galera 1047: the node is not ready yet
    "database is locked",                      // SQLITE_BUSY / SQLITE_LOCKED
    "database table is locked",
    "database is busy",
];

/// The kind of a retryable failure, for logs and metrics: `deadlock`,
/// `serialization`, `lock_timeout`, `busy` (SQLite), `cluster` (a Galera node not
/// ready), `duplicate`, or `other`.
pub fn reason(msg: &str) -> &'static str {
    const KINDS: &[(&str, &str)] = &[
        ("deadlock", "deadlock"),
        ("Deadlock", "deadlock"),
        ("serialize", "serialization"),
        ("Record has changed", "serialization"),
        ("lock timeout", "lock_timeout"),
        ("Lock wait timeout", "lock_timeout"),
        ("could not obtain lock", "lock_timeout"),
        ("WSREP", "cluster"),
        ("database is locked", "busy"),
        ("database table is locked", "busy"),
        ("database is busy", "busy"),
    ];
    if let Some((_, kind)) = KINDS.iter().find(|(m, _)| msg.contains(m)) {
        kind
    } else if DUPLICATE.iter().any(|m| msg.contains(m)) {
        "duplicate"
    } else {
        "other"
    }
}

/// Message fragments of a duplicate key.
const DUPLICATE: &[&str] = &[
    "duplicate key value violates unique constraint", // PostgreSQL 23505
    "Duplicate entry",                                // MySQL 1062
    // MySQL/MariaDB 1557, 1761, 1762: a foreign key action (ON DELETE SET NULL) that
    // would duplicate a key
    "would lead to a duplicate entry",
    "UNIQUE constraint failed", // SQLite 2067
];

/// Classifies an engine error by its message (the drivers report codes differently,
/// the messages are stable).
pub fn classify_message(msg: &str) -> Class {
    if RETRYABLE.iter().any(|m| msg.contains(m)) {
        Class::Retry
    } else if DUPLICATE.iter().any(|m| msg.contains(m)) {
        Class::RetryOnce
    } else {
        Class::Fatal
    }
}

/// Narrows a duplicate to the table's own position key: [`Class::RetryOnce`] stays only
/// when the message names the `(parent, position)` constraint (PostgreSQL, MySQL) or
/// column (SQLite). A duplicate on any other key comes from the caller's row and is
/// never retried.
pub fn refine(spec: &crate::Spec, msg: &str, class: Class) -> Class {
    if class != Class::RetryOnce {
        return class;
    }
    let named = msg.contains(&spec.unique_name())
        || msg.contains(&format!("{}.{}", spec.table, spec.position));
    if named {
        Class::RetryOnce
    } else {
        Class::Fatal
    }
}

/// Message fragments that mean the connection was lost (during COMMIT: the outcome is
/// unknown).
pub fn is_connection_lost(msg: &str) -> bool {
    [
        "server closed the connection",
        "terminating connection", // PostgreSQL 57P01 (pg_terminate_backend)
        "Connection was killed",  // MariaDB 1927 (KILL)
        "error communicating with database", // sqlx (SeaORM): an I/O error, EOF
        "Lost connection",
        "gone away",
        "no connection",
        "connection closed",
        "Connection reset",
        "broken pipe",
    ]
    .iter()
    .any(|m| msg.contains(m))
}

/// Why [`Attempts::after_failure`] says to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The error is not retryable: return it.
    Fatal,
    /// Retries ran out (attempts or deadline): report the last error as exhausted.
    Exhausted,
    /// A duplicate on the position key came back after its one retry. The protocol
    /// rules that out, so report it as [`crate::Error::Inconsistent`].
    DuplicateAgain,
}

/// Bounded retries around the whole operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all (1: no retry).
    pub max_attempts: u32,
    /// First backoff; it doubles on each retry.
    pub base: Duration,
    /// Longest backoff.
    pub cap: Duration,
    /// No new attempt starts after this much time.
    pub deadline: Duration,
}

impl Default for RetryPolicy {
    /// 5 attempts, backoff from 5 ms doubling up to 200 ms with full jitter, 2 s deadline.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base: Duration::from_millis(5),
            cap: Duration::from_millis(200),
            deadline: Duration::from_secs(2),
        }
    }
}

impl RetryPolicy {
    /// No retries.
    pub const NONE: RetryPolicy = RetryPolicy {
        max_attempts: 1,
        base: Duration::ZERO,
        cap: Duration::ZERO,
        deadline: Duration::ZERO,
    };

    /// For a MariaDB Galera Cluster, which the adapters use there unless another policy
    /// was set: 20 attempts, backoff from 10 ms doubling up to 500 ms with full jitter,
    /// 10 s deadline. When several nodes write one collection, every writer that loses
    /// certification retries, and the default's 5 attempts left over a quarter of the
    /// operations on a hot collection written from three nodes unfinished.
    pub const GALERA: RetryPolicy = RetryPolicy {
        max_attempts: 20,
        base: Duration::from_millis(10),
        cap: Duration::from_millis(500),
        deadline: Duration::from_secs(10),
    };

    /// The pause before attempt `attempt + 1`: exponential, capped, with full jitter.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let exp = self
            .base
            .saturating_mul(
                1u32.checked_shl(attempt.saturating_sub(1))
                    .unwrap_or(u32::MAX),
            )
            .min(self.cap);
        let r = std::collections::hash_map::RandomState::new().hash_one(Instant::now());
        let nanos = u64::try_from(exp.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(if nanos == 0 {
            0
        } else {
            r % nanos.saturating_add(1)
        })
    }

    /// Whether another attempt may start after `attempt` attempts begun at `started`.
    pub fn allows(&self, attempt: u32, started: Instant) -> bool {
        attempt < self.max_attempts && started.elapsed() < self.deadline
    }

    /// The pause before the next attempt, never past the deadline.
    pub fn pause(&self, attempt: u32, started: Instant) -> Duration {
        self.backoff(attempt)
            .min(self.deadline.saturating_sub(started.elapsed()))
    }
}

/// Tracks one operation's attempts and decides whether to retry.
#[derive(Debug, Clone)]
pub struct Attempts {
    policy: RetryPolicy,
    started: Instant,
    attempt: u32,
    once_used: bool,
}

impl Attempts {
    /// Starts counting.
    pub fn new(policy: RetryPolicy) -> Self {
        Attempts {
            policy,
            started: Instant::now(),
            attempt: 0,
            once_used: false,
        }
    }
    /// Changes the policy for the attempts still to come (the count and the clock go
    /// on): the adapters switch to [`RetryPolicy::GALERA`] once they know the server.
    pub fn use_policy(&mut self, policy: RetryPolicy) {
        self.policy = policy;
    }
    /// Begins an attempt; returns its number (from 1).
    pub fn begin(&mut self) -> u32 {
        self.attempt += 1;
        self.attempt
    }
    /// After a failure of class `c`: `Ok(pause)` to retry after `pause`, or why to stop.
    pub fn after_failure(&mut self, c: Class) -> Result<Duration, Stop> {
        match c {
            Class::Fatal => return Err(Stop::Fatal),
            Class::Retry => {}
            Class::RetryOnce if std::mem::replace(&mut self.once_used, true) => {
                return Err(Stop::DuplicateAgain);
            }
            Class::RetryOnce => {}
        }
        if !self.policy.allows(self.attempt, self.started) {
            return Err(Stop::Exhausted);
        }
        Ok(self.policy.pause(self.attempt, self.started))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_per_engine_messages() {
        assert_eq!(classify_message("ERROR: deadlock detected"), Class::Retry);
        assert_eq!(
            classify_message("Lock wait timeout exceeded; try restarting transaction"),
            Class::Retry
        );
        assert_eq!(classify_message("database is locked"), Class::Retry);
        assert_eq!(
            classify_message("WSREP has not yet prepared node for application use"),
            Class::Retry
        );
        assert_eq!(
            classify_message("UNIQUE constraint failed: t.a, t.b"),
            Class::RetryOnce
        );
        assert_eq!(classify_message("syntax error"), Class::Fatal);
    }

    #[test]
    fn only_the_position_key_is_retried_once() {
        let spec = crate::Spec {
            table: "tracks",
            id: "id",
            parent: "playlist_id",
            position: "position",
            parent_table: "playlists",
            parent_id: "id",
            id_type: crate::KeyType::Int,
            parent_type: crate::KeyType::Int,
            split_by: &[],
            null_scope: crate::NullScope::Refused,
            link: false,
            filter: None,
            version: None,
            unique: None,
            strategy: &crate::Gapped::DEFAULT,
            policy: crate::RebalancePolicy::Window,
            removal: crate::Removal::Cascade,
        };
        let pg = format!(
            "duplicate key value violates unique constraint \"{}\"",
            spec.unique_name()
        );
        assert_eq!(refine(&spec, &pg, classify_message(&pg)), Class::RetryOnce);
        let lite = "UNIQUE constraint failed: tracks.playlist_id, tracks.position";
        assert_eq!(
            refine(&spec, lite, classify_message(lite)),
            Class::RetryOnce
        );
        let other = "Duplicate entry 'x' for key 'tracks_title_key'";
        assert_eq!(refine(&spec, other, classify_message(other)), Class::Fatal);
        let busy = "database is locked";
        assert_eq!(refine(&spec, busy, classify_message(busy)), Class::Retry);
    }

    #[test]
    fn backoff_is_bounded_and_attempts_stop() {
        let p = RetryPolicy::default();
        for attempt in 1..10 {
            assert!(p.backoff(attempt) <= p.cap);
        }
        assert_eq!(RetryPolicy::NONE.backoff(3), Duration::ZERO);
        let mut a = Attempts::new(RetryPolicy {
            max_attempts: 2,
            ..p
        });
        a.begin();
        assert!(a.after_failure(Class::Retry).is_ok());
        a.begin();
        assert_eq!(a.after_failure(Class::Retry), Err(Stop::Exhausted));
        let mut once = Attempts::new(p);
        once.begin();
        assert!(once.after_failure(Class::RetryOnce).is_ok());
        once.begin();
        assert_eq!(
            once.after_failure(Class::RetryOnce),
            Err(Stop::DuplicateAgain)
        );
        assert_eq!(once.after_failure(Class::Fatal), Err(Stop::Fatal));
    }
}
