//! Request records: writes a client can repeat.
//!
//! A client that sent a drag and got no answer (a timeout, a dropped connection, a
//! [`CommitUnknown`](crate::adapter::Failure::CommitUnknown)) cannot tell whether the
//! move was applied. Repeating it blindly is wrong for most operations: `move_up` twice
//! moves twice, a repeated drag with a version is refused with `version_conflict` though
//! the first one was applied, a repeated removal says `not_found`.
//!
//! With a request key (`OrderedTable::request_key`: a UUID or string of the client's
//! choosing, typically the `Idempotency-Key` header), every write records `(key, a
//! digest of the request, its outcome)` in the table [`TABLE`] (`ordered_requests`, made
//! by [`crate::migration::create_requests_table`]) in the operation's own transaction,
//! so the record commits exactly when the write does. A repeat with the same key:
//!
//! - finds the record and returns the recorded [`Outcome`], marked
//!   [`replayed`](crate::Outcome::replayed), and writes nothing (an insert returns
//!   [`AlreadyApplied`](crate::Error::AlreadyApplied) with the row's id, as an idempotent
//!   insert does: the caller's row closure is not run again);
//! - with a different request (another operation, item, place, list or expected
//!   version) is refused with
//!   [`IdempotencyKeyReused`](crate::Error::IdempotencyKeyReused) (422);
//! - finds no record when the first attempt was not applied, and runs the request.
//!
//! Keys are scoped per table and per tenant (`OrderedTable::tenant`, when the app
//! passes one). A request the library refuses (a stale neighbour, a missing item) wrote
//! nothing and is not recorded: its repeat is decided afresh. An operation that changed
//! nothing (a drop where the item already is) is recorded too, so its repeat returns the
//! same answer even after the list changed. Inside the caller's own transaction the
//! record commits or rolls back with it.
//!
//! The records stay until the app purges them (`OrderedTable::purge_requests`, in
//! bounded batches, each its own short statement): schedule it with the retention your
//! clients retry within (a day is common).
//!
//! ```
//! use ordered_core::requests::{self, RequestKey};
//! use ordered_core::{Concurrency, Placement, Request, Spec};
//!
//! const TRACKS: Spec = Spec::new("tracks", "playlist_id", "playlists");
//! let drag = Request::Move { item: 7.into(), at: Placement::Between { prev: Some(3.into()), next: None } };
//! let key = RequestKey::new("5b0f").unwrap();
//! let a = requests::digest(&TRACKS, &drag, Concurrency::Neighbours, None, None);
//! // the same drag: the same digest; another one: another digest
//! assert_eq!(a, requests::digest(&TRACKS, &drag, Concurrency::Neighbours, None, None));
//! let up = Request::MoveUp { item: 7.into() };
//! assert_ne!(a, requests::digest(&TRACKS, &up, Concurrency::Neighbours, None, None));
//! assert_eq!(key.key.to_string(), "5b0f");
//! ```

use sha2::{Digest as _, Sha256};

use crate::engine::{Concurrency, Outcome};
use crate::error::Error;
use crate::id::Id;
use crate::plan::Request;
use crate::spec::Spec;

/// The table of request records, one per database, shared by every ordered table.
pub const TABLE: &str = "ordered_requests";

/// How many bytes a key or tenant may take in the records table (`VARCHAR(200)`).
pub const MAX_KEY_TEXT: usize = 200;

/// A client's request key and the tenant it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestKey {
    /// The key: a UUID or a string of at most [`crate::MAX_TEXT_KEY`] bytes (or an
    /// integer).
    pub key: Id,
    /// The tenant that owns the key (`None`: keys are per table only).
    pub tenant: Option<Id>,
}

impl RequestKey {
    /// A key from a client's string (an `Idempotency-Key` header); `None` if it is
    /// empty or longer than [`crate::MAX_TEXT_KEY`] bytes.
    pub fn new(key: &str) -> Option<Self> {
        if key.is_empty() {
            return None;
        }
        Some(RequestKey {
            key: Id::text(key).ok()?,
            tenant: None,
        })
    }
}

/// A request key as stored: the text of an [`Id`] (an integer's digits, a UUID's
/// hyphenated form, a string as it is, a composite's parts).
pub fn key_text(id: Id) -> String {
    id.to_string()
}

/// What an operation's record holds besides its outcome: which table, tenant and key
/// it answers, the digest of the request, and when it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The ordered table.
    pub table: &'static str,
    /// The tenant's text (empty: none).
    pub tenant: String,
    /// The key's text.
    pub key_text: String,
    /// The key, as the client gave it (what a refusal names).
    pub key: Id,
    /// The digest of the request ([`digest`]).
    pub digest: String,
    /// When the request was made: milliseconds since the Unix epoch.
    pub at_ms: i64,
}

impl Record {
    /// The record of `req` on `spec` under `key`, made now.
    pub fn new(
        spec: &Spec,
        key: RequestKey,
        req: &Request,
        concurrency: Concurrency,
        within: Option<Id>,
        idempotency: Option<Id>,
    ) -> Self {
        Record {
            table: spec.table,
            tenant: key.tenant.map(key_text).unwrap_or_default(),
            key_text: key_text(key.key),
            key: key.key,
            digest: digest(spec, req, concurrency, within, idempotency),
            at_ms: now_ms(),
        }
    }
}

/// Milliseconds since the Unix epoch (0 before it).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The digest of a request: SHA-256 (hex) of what the library sees of it, as JSON: the
/// table, the request (operation, item, place, list), what it checks of the client's
/// view (an expected version) and the list it names (`within`), and an insert's chosen
/// id. The row an insert's closure writes is the caller's and not part of it.
pub fn digest(
    spec: &Spec,
    req: &Request,
    concurrency: Concurrency,
    within: Option<Id>,
    idempotency: Option<Id>,
) -> String {
    let text = serde_json::to_string(&(spec.table, req, concurrency, within, idempotency))
        .unwrap_or_default();
    let hash = Sha256::digest(text.as_bytes());
    let mut out = String::with_capacity(64);
    for b in hash {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The recorded form of an outcome (JSON).
pub fn encode(outcome: &Outcome) -> Result<String, Error> {
    serde_json::to_string(outcome)
        .map_err(|e| Error::Inconsistent(format!("an outcome that cannot be recorded: {e}")))
}

/// A recorded outcome read back, marked replayed, its keys in the table's key types.
pub fn decode(spec: &Spec, text: &str) -> Result<Outcome, Error> {
    let mut o: Outcome = serde_json::from_str(text).map_err(|e| {
        Error::Inconsistent(format!("a request record that cannot be read back: {e}"))
    })?;
    // JSON does not tell a string key that looks like a UUID from a UUID
    let fix = |id: &mut Id, ty: crate::KeyType| {
        if ty == crate::KeyType::Text
            && let Id::Uuid(u) = *id
            && let Ok(t) = Id::text(&u.hyphenated().to_string())
        {
            *id = t;
        }
    };
    for c in &mut o.changes.rows {
        fix(&mut c.id, spec.id_type);
        fix(&mut c.parent, spec.parent_type);
    }
    for id in &mut o.changes.removed {
        fix(id, spec.id_type);
    }
    o.replayed = true;
    Ok(o)
}

/// Whether a database failure says the records table does not exist.
pub(crate) fn is_missing_table(message: &str) -> bool {
    message.contains(TABLE)
        && (message.contains("does not exist")
            || message.contains("doesn't exist")
            || message.contains("no such table"))
}

/// The refusal for a missing records table.
pub(crate) fn missing_table() -> Error {
    Error::SchemaMismatch {
        table: TABLE.to_owned(),
        problem: "the request records table is missing: writes with a request key record their outcome there",
        fix: "create it with migration::create_requests_table (ordered_diesel::migrations, ordered_seaorm::migration::create_requests_table)".to_owned(),
    }
}

/// Whether a database failure is a duplicate of a record's key: a record another call
/// with the same key committed meanwhile.
pub(crate) fn is_duplicate(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("duplicate") || m.contains("unique constraint")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Placement, Position};

    const T: Spec = Spec::new("tracks", "playlist_id", "playlists");

    #[test]
    fn digests_tell_requests_apart() {
        let m = |v: i64| Request::Move {
            item: v.into(),
            at: Placement::First,
        };
        let n = Concurrency::Neighbours;
        assert_eq!(digest(&T, &m(1), n, None, None).len(), 64);
        assert_eq!(
            digest(&T, &m(1), n, None, None),
            digest(&T, &m(1), n, None, None)
        );
        assert_ne!(
            digest(&T, &m(1), n, None, None),
            digest(&T, &m(2), n, None, None)
        );
        assert_ne!(
            digest(&T, &m(1), n, None, None),
            digest(&T, &m(1), Concurrency::Version(3), None, None)
        );
        assert_ne!(
            digest(&T, &m(1), n, None, None),
            digest(&T, &m(1), n, Some(Id::Int(4)), None)
        );
        assert_ne!(
            digest(&T, &m(1), n, None, None),
            digest(&T.with_table("cards"), &m(1), n, None, None)
        );
    }

    #[test]
    fn outcomes_round_trip_and_come_back_replayed() {
        let mut o = Outcome {
            position: Some(Position::Key("a0V".into())),
            version: Some(4),
            rows_written: 1,
            ..Outcome::default()
        };
        o.changes.record(crate::Change {
            id: Id::text("550e8400-e29b-41d4-a716-446655440000").unwrap(),
            parent: Id::Int(1),
            position: Position::Key("a0V".into()),
        });
        let spec = T.with_id_type(crate::KeyType::Text);
        let back = decode(&spec, &encode(&o).unwrap()).unwrap();
        assert!(back.replayed);
        assert_eq!(
            Outcome {
                replayed: false,
                ..back
            },
            o
        );
        assert!(decode(&spec, "{").is_err());
    }

    #[test]
    fn keys_are_short_non_empty_strings() {
        assert!(RequestKey::new("").is_none());
        assert!(RequestKey::new(&"k".repeat(crate::MAX_TEXT_KEY + 1)).is_none());
        assert_eq!(
            RequestKey::new("abc").map(|k| key_text(k.key)),
            Some("abc".into())
        );
    }

    #[test]
    fn failures_are_told_apart() {
        assert!(is_missing_table(
            "relation \"ordered_requests\" does not exist"
        ));
        assert!(is_missing_table(
            "Table 'test.ordered_requests' doesn't exist"
        ));
        assert!(is_missing_table("no such table: ordered_requests"));
        assert!(!is_missing_table("relation \"tracks\" does not exist"));
        assert!(is_duplicate(
            "duplicate key value violates unique constraint \"ordered_requests_pkey\""
        ));
        assert!(is_duplicate("Duplicate entry 'x' for key 'PRIMARY'"));
        assert!(is_duplicate(
            "UNIQUE constraint failed: ordered_requests.table_name"
        ));
    }
}
