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

/// A stored position: an integer, a fractional key or a number.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum Position {
    /// An integer position (gapped or dense strategies).
    Int(i64),
    /// A fractional key (byte order).
    Key(String),
    /// A numeric position ([`crate::Numeric`]: a `DOUBLE PRECISION` or `NUMERIC(p, s)`
    /// column).
    Num(Num),
}

/// A finite `f64` that is not negative zero: a numeric position. NaN, the infinities
/// and `-0.0` have no place in an order the database keeps (NaN equals nothing, `-0.0`
/// equals `0.0` under the unique constraint but not bit for bit), so they are refused
/// where they are read ([`Num::new`]). Ordered as numbers.
#[derive(Clone, Copy, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct Num(f64);

impl Num {
    /// The number, if it is finite and not `-0.0`.
    ///
    /// ```
    /// use ordered_core::position::Num;
    /// assert!(Num::new(65_535.0).is_some());
    /// assert!(Num::new(f64::NAN).is_none());
    /// assert!(Num::new(f64::INFINITY).is_none());
    /// assert!(Num::new(-0.0).is_none());
    /// ```
    pub fn new(v: f64) -> Option<Num> {
        (v.is_finite() && !(v == 0.0 && v.is_sign_negative())).then_some(Num(v))
    }

    /// The number.
    pub const fn get(self) -> f64 {
        self.0
    }
}

impl TryFrom<f64> for Num {
    type Error = &'static str;
    fn try_from(v: f64) -> Result<Self, Self::Error> {
        Num::new(v).ok_or("a numeric position is finite and not -0")
    }
}

impl AsRef<f64> for Num {
    fn as_ref(&self) -> &f64 {
        &self.0
    }
}

impl From<Num> for f64 {
    fn from(n: Num) -> f64 {
        n.0
    }
}

impl PartialEq for Num {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Num {}

impl PartialOrd for Num {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Num {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // finite and never -0.0: total_cmp is the numeric order
        self.0.total_cmp(&other.0)
    }
}

impl std::hash::Hash for Num {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}

impl fmt::Debug for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for Num {
    /// The shortest decimal that reads back as the same `f64` (for a `NUMERIC(p, s)`
    /// position with `p <= 15`, the stored decimal itself).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Position {
    /// The integer, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Position::Int(i) => Some(*i),
            _ => None,
        }
    }
    /// The key, if this is one.
    pub fn as_key(&self) -> Option<&str> {
        match self {
            Position::Key(k) => Some(k),
            _ => None,
        }
    }
    /// The number, if this is one.
    pub fn as_num(&self) -> Option<f64> {
        match self {
            Position::Num(n) => Some(n.get()),
            _ => None,
        }
    }
}

impl fmt::Debug for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::Int(i) => write!(f, "{i}"),
            Position::Key(k) => write!(f, "{k:?}"),
            Position::Num(n) => write!(f, "{n}"),
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::Int(i) => write!(f, "{i}"),
            Position::Key(k) => write!(f, "{k:?}"),
            Position::Num(n) => write!(f, "{n}"),
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
    /// A double-precision float (`DOUBLE PRECISION`, `DOUBLE`, `REAL`).
    Float,
    /// An exact decimal `NUMERIC(precision, scale)` (`DECIMAL` on MySQL/MariaDB; a
    /// `NUMERIC` column of SQLite, which stores it as a float).
    Decimal {
        /// Digits in all (at most 15, so that every value is exact as an `f64`).
        precision: u8,
        /// Digits after the point.
        scale: u8,
    },
}

impl PositionKind {
    /// The key length cap, for keys.
    pub fn key_cap(&self) -> Option<usize> {
        match self {
            PositionKind::Key { max_len } => Some(*max_len),
            _ => None,
        }
    }

    /// Whether positions are numbers ([`PositionKind::Float`] or
    /// [`PositionKind::Decimal`]).
    pub fn is_numeric(&self) -> bool {
        matches!(self, PositionKind::Float | PositionKind::Decimal { .. })
    }
}

impl From<Num> for Position {
    fn from(v: Num) -> Self {
        Position::Num(v)
    }
}
