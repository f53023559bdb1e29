//! Position values and their domains.

use std::fmt;

/// The smallest live position of the integer strategies ([`crate::Gapped`]).
pub const MIN_POSITION: i64 = 1;
/// The largest live position of the integer strategies: `2^62 - 1`, so that negation
/// into the temporary range, midpoints and differences can never overflow an `i64`.
pub const MAX_POSITION: i64 = (1 << 62) - 1;
/// The reserved parking slot for an item while its neighbours are relabelled (below
/// every temporary value). Migrations allow `[PARK_POSITION, MAX_POSITION]`.
pub const PARK_POSITION: i64 = -(1 << 62);
/// The prefix that marks a fractional key as temporary during a relabel on engines that
/// check uniqueness row by row. It is outside every key alphabet.
pub const TEMP_KEY_PREFIX: &str = "\u{1}";

/// A stored position: an integer or a fractional key.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum Position {
    /// An integer position (gapped or dense strategies).
    Int(i64),
    /// A fractional key (byte order).
    Key(String),
}

impl Position {
    /// The integer, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Position::Int(i) => Some(*i),
            Position::Key(_) => None,
        }
    }
    /// The key, if this is one.
    pub fn as_key(&self) -> Option<&str> {
        match self {
            Position::Key(k) => Some(k),
            Position::Int(_) => None,
        }
    }
}

impl fmt::Debug for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::Int(i) => write!(f, "{i}"),
            Position::Key(k) => write!(f, "{k:?}"),
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::Int(i) => write!(f, "{i}"),
            Position::Key(k) => write!(f, "{k:?}"),
        }
    }
}

impl From<i64> for Position {
    fn from(v: i64) -> Self {
        Position::Int(v)
    }
}

impl From<String> for Position {
    fn from(v: String) -> Self {
        Position::Key(v)
    }
}

impl From<&str> for Position {
    fn from(v: &str) -> Self {
        Position::Key(v.to_owned())
    }
}

/// What the position column stores, which decides its SQL type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PositionKind {
    /// A 64-bit integer.
    Integer,
    /// A byte-ordered ASCII string of at most `max_len` bytes.
    Key {
        /// The cap on key length.
        max_len: usize,
    },
}

impl PositionKind {
    /// The key length cap, for keys.
    pub fn key_cap(&self) -> Option<usize> {
        match self {
            PositionKind::Key { max_len } => Some(*max_len),
            PositionKind::Integer => None,
        }
    }
}
