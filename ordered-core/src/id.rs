//! Item and scope keys of any common type: integers, UUIDs and strings.
//!
//! The planner only compares and copies keys, so [`Id`] is one small `Copy` value
//! whatever the table's key type; [`KeyType`] says how the table stores it, and the
//! statements of [`crate::sql`] bind and read it in each engine's spelling.
//!
//! ```
//! use ordered_core::{Id, KeyType};
//!
//! let card = Id::from(uuid::Uuid::from_u128(7));
//! assert_eq!(card.to_string(), "00000000-0000-0000-0000-000000000007");
//! assert_eq!(Id::from(42_i32), 42);
//! let slug = Id::text("intro")?;
//! assert_eq!(slug.as_str(), Some("intro"));
//! assert_eq!(KeyType::Uuid.parse("00000000000000000000000000000007"), Some(card));
//! # Ok::<(), ordered_core::KeyTooLong>(())
//! ```

use std::fmt;

use arrayvec::ArrayString;
/// The UUID type of [`Id::Uuid`] (the `uuid` crate's).
pub use uuid::Uuid;

/// The longest text key, in bytes.
pub const MAX_TEXT_KEY: usize = 64;

/// An item or scope key: an integer (16, 32 or 64 bits, read as `i64`), a UUID, or a
/// string of at most [`MAX_TEXT_KEY`] bytes.
///
/// Conversions: `From` the integer types and [`Uuid`], [`Id::text`] (or `TryFrom`) for
/// strings; back with [`Id::as_int`], [`Id::as_uuid`], [`Id::as_str`] or `TryFrom<Id>`
/// for `i64`, `i32`, `i16`, `Uuid` and `String`. An `Id` compares equal to the integer
/// or UUID it holds. It displays as the number, the hyphenated UUID or the string.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Id {
    /// An integer key (`SMALLINT`, `INTEGER`, `BIGINT`).
    Int(i64),
    /// A UUID (`uuid` on PostgreSQL, `BINARY(16)`, `CHAR(36)`, MariaDB's `UUID`, or
    /// SQLite's blob or text; see [`KeyType`]).
    Uuid(Uuid),
    /// A string key (`TEXT`, `VARCHAR`, `CHAR`).
    Text(ArrayString<MAX_TEXT_KEY>),
}

/// A string key longer than [`MAX_TEXT_KEY`] bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a text key is at most {MAX_TEXT_KEY} bytes; this one has {0}")]
pub struct KeyTooLong(pub usize);

impl Id {
    /// The smallest key in `Id`'s order (integers sort before UUIDs, UUIDs before
    /// strings): a bound for ranges over `(position, id)` pairs.
    pub const MIN_KEY: Id = Id::Int(i64::MIN);

    /// The largest key in `Id`'s order: the longest string of the largest character.
    pub fn max_key() -> Id {
        let mut s = ArrayString::new();
        while s.try_push(char::MAX).is_ok() {}
        Id::Text(s)
    }

    /// A string key; an error for one longer than [`MAX_TEXT_KEY`] bytes.
    pub fn text(s: &str) -> Result<Id, KeyTooLong> {
        ArrayString::from(s)
            .map(Id::Text)
            .map_err(|_| KeyTooLong(s.len()))
    }

    /// The integer, for an integer key.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Id::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// The UUID, for a UUID key.
    pub fn as_uuid(&self) -> Option<Uuid> {
        match self {
            Id::Uuid(u) => Some(*u),
            _ => None,
        }
    }

    /// The string, for a text key.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Id::Text(s) => Some(s.as_str()),
            _ => None,
        }
    }

    /// Whether this key has the shape `ty` stores (an integer for the integer types,
    /// a UUID for both UUID types, a string for text).
    pub fn fits(&self, ty: KeyType) -> bool {
        matches!(
            (self, ty),
            (Id::Int(_), KeyType::Int)
                | (Id::Uuid(_), KeyType::Uuid | KeyType::UuidText)
                | (Id::Text(_), KeyType::Text)
        )
    }
}

impl Id {
    /// This key if it [`fits`](Id::fits) `ty`, else [`Error::WrongKeyType`](crate::Error::WrongKeyType).
    pub fn checked(self, ty: KeyType) -> Result<Id, crate::Error> {
        match self.fits(ty) {
            true => Ok(self),
            false => Err(crate::Error::WrongKeyType {
                key: self,
                expected: ty,
            }),
        }
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Int(v) => write!(f, "{v}"),
            Id::Uuid(u) => write!(f, "{}", u.hyphenated()),
            Id::Text(s) => f.write_str(s),
        }
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Int(v) => write!(f, "{v}"),
            Id::Uuid(u) => write!(f, "{}", u.hyphenated()),
            Id::Text(s) => write!(f, "{:?}", s.as_str()),
        }
    }
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Id {
            fn from(v: $t) -> Id {
                Id::Int(i64::from(v))
            }
        }
        impl PartialEq<$t> for Id {
            fn eq(&self, other: &$t) -> bool {
                *self == Id::Int(i64::from(*other))
            }
        }
        impl PartialEq<Id> for $t {
            fn eq(&self, other: &Id) -> bool {
                Id::Int(i64::from(*self)) == *other
            }
        }
        impl TryFrom<Id> for $t {
            type Error = WrongKey;
            fn try_from(id: Id) -> Result<$t, WrongKey> {
                id.as_int().and_then(|v| <$t>::try_from(v).ok()).ok_or(WrongKey(id))
            }
        }
    )*};
}
from_int!(i16, i32, i64, u8, u16, u32);

impl From<Uuid> for Id {
    fn from(u: Uuid) -> Id {
        Id::Uuid(u)
    }
}

impl PartialEq<Uuid> for Id {
    fn eq(&self, other: &Uuid) -> bool {
        *self == Id::Uuid(*other)
    }
}

impl PartialEq<Id> for Uuid {
    fn eq(&self, other: &Id) -> bool {
        Id::Uuid(*self) == *other
    }
}

impl PartialEq<&str> for Id {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == Some(*other)
    }
}

impl TryFrom<&str> for Id {
    type Error = KeyTooLong;
    fn try_from(s: &str) -> Result<Id, KeyTooLong> {
        Id::text(s)
    }
}

impl TryFrom<&String> for Id {
    type Error = KeyTooLong;
    fn try_from(s: &String) -> Result<Id, KeyTooLong> {
        Id::text(s)
    }
}

impl TryFrom<String> for Id {
    type Error = KeyTooLong;
    fn try_from(s: String) -> Result<Id, KeyTooLong> {
        Id::text(&s)
    }
}

/// Parses what [`Id`]'s `Display` writes: an integer, else a hyphenated UUID, else a
/// string key.
impl std::str::FromStr for Id {
    type Err = KeyTooLong;
    fn from_str(s: &str) -> Result<Id, KeyTooLong> {
        if let Ok(v) = s.parse::<i64>() {
            return Ok(Id::Int(v));
        }
        if s.len() == 36
            && let Ok(u) = Uuid::try_parse(s)
        {
            return Ok(Id::Uuid(u));
        }
        Id::text(s)
    }
}

/// An [`Id`] of another shape than the one asked for (`TryFrom<Id>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the key {0} is not of the type asked for")]
pub struct WrongKey(pub Id);

impl TryFrom<Id> for Uuid {
    type Error = WrongKey;
    fn try_from(id: Id) -> Result<Uuid, WrongKey> {
        id.as_uuid().ok_or(WrongKey(id))
    }
}

impl TryFrom<Id> for String {
    type Error = WrongKey;
    fn try_from(id: Id) -> Result<String, WrongKey> {
        id.as_str().map(str::to_owned).ok_or(WrongKey(id))
    }
}

/// A Rust type that can be an item or scope key: what the derives accept as the type
/// of the id and scope fields, and what the typed operations take and return.
pub trait Key: Sized {
    /// How a column of this type stores it by default.
    const TYPE: KeyType;
    /// This key as an [`Id`]; `None` for a string longer than [`MAX_TEXT_KEY`] bytes
    /// or bytes that are not 16.
    fn to_id(&self) -> Option<Id>;
    /// The key an [`Id`] holds, if it has this type's shape.
    fn from_id(id: Id) -> Option<Self>;
}

macro_rules! key_int {
    ($($t:ty),*) => {$(
        impl Key for $t {
            const TYPE: KeyType = KeyType::Int;
            fn to_id(&self) -> Option<Id> {
                Some(Id::from(*self))
            }
            fn from_id(id: Id) -> Option<Self> {
                <$t>::try_from(id).ok()
            }
        }
    )*};
}
key_int!(i16, i32, i64);

impl Key for Uuid {
    const TYPE: KeyType = KeyType::Uuid;
    fn to_id(&self) -> Option<Id> {
        Some(Id::Uuid(*self))
    }
    fn from_id(id: Id) -> Option<Self> {
        id.as_uuid()
    }
}

impl Key for String {
    const TYPE: KeyType = KeyType::Text;
    fn to_id(&self) -> Option<Id> {
        Id::text(self).ok()
    }
    fn from_id(id: Id) -> Option<Self> {
        id.as_str().map(str::to_owned)
    }
}

/// A UUID as its 16 bytes: how Diesel reads a `BINARY(16)` (MySQL) or blob (SQLite)
/// column.
impl Key for Vec<u8> {
    const TYPE: KeyType = KeyType::Uuid;
    fn to_id(&self) -> Option<Id> {
        Uuid::from_slice(self).ok().map(Id::Uuid)
    }
    fn from_id(id: Id) -> Option<Self> {
        id.as_uuid().map(|u| u.as_bytes().to_vec())
    }
}

/// How a table stores a key column, which decides how the statements bind and read it.
///
/// | type | PostgreSQL | MySQL / MariaDB | SQLite |
/// |---|---|---|---|
/// | `Int` | `SMALLINT`, `INTEGER`, `BIGINT`, `SERIAL` | `SMALLINT`, `INT`, `BIGINT` | `INTEGER` |
/// | `Uuid` | `uuid` | `BINARY(16)` | a 16-byte blob (how sqlx and SeaORM store a `Uuid`) |
/// | `UuidText` | `text` holding UUIDs | `CHAR(36)`, MariaDB's `UUID` | `TEXT` holding UUIDs |
/// | `Text` | `text`, `varchar` | `VARCHAR`, `CHAR` | `TEXT` |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum KeyType {
    /// An integer of up to 64 bits.
    #[default]
    Int,
    /// A UUID in the engine's binary form.
    Uuid,
    /// A UUID stored as its 36-character hyphenated text.
    UuidText,
    /// A string of at most [`MAX_TEXT_KEY`] bytes.
    Text,
}

impl fmt::Display for KeyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeyType::Int => "an integer",
            KeyType::Uuid | KeyType::UuidText => "a UUID",
            KeyType::Text => "a string",
        })
    }
}

impl KeyType {
    /// Whether the statements hand this key back as text (every type but `Int`).
    pub fn is_text(self) -> bool {
        self != KeyType::Int
    }

    /// The key a statement handed back as text: a number for `Int`, a UUID from its
    /// hyphenated or plain hexadecimal form, a string. `None` when it does not parse.
    pub fn parse(self, s: &str) -> Option<Id> {
        match self {
            KeyType::Int => s.trim().parse().ok().map(Id::Int),
            KeyType::Uuid | KeyType::UuidText => Uuid::try_parse(s.trim()).ok().map(Id::Uuid),
            KeyType::Text => Id::text(s).ok(),
        }
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for Id {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Int(v) => s.serialize_i64(*v),
            Id::Uuid(u) => s.collect_str(&u.hyphenated()),
            Id::Text(t) => s.serialize_str(t),
        }
    }
}

/// A number reads as an integer key, a hyphenated UUID as a UUID key, any other
/// string as a text key.
#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Id {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Id, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer, a UUID or a string key")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Id, E> {
                Ok(Id::Int(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Id, E> {
                i64::try_from(v).map(Id::Int).map_err(E::custom)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Id, E> {
                if v.len() == 36
                    && let Ok(u) = Uuid::try_parse(v)
                {
                    return Ok(Id::Uuid(u));
                }
                Id::text(v).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}
