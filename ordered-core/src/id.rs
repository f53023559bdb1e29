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

/// An item or scope key: an integer (16, 32 or 64 bits, read as `i64`), a UUID, a
/// string of at most [`MAX_TEXT_KEY`] bytes, or the values of several columns (a
/// composite scope such as `(board_id, status)`: [`Id::Tuple`]).
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
    /// The values of several key columns, in column order: a scope of several columns
    /// (cards per `(board_id, status)`). Built `From` a pair of keys or with
    /// [`Id::tuple`]; [`Id::parts`] gives the values back. Declared between UUIDs and
    /// strings, so [`Id::MIN_KEY`] and [`Id::max_key`] stay the ends of `Id`'s order.
    Tuple(Tuple),
    /// A string key (`TEXT`, `VARCHAR`, `CHAR`).
    Text(ArrayString<MAX_TEXT_KEY>),
}

/// The bytes a [`Tuple`] holds: two parts of any kind (a string part takes its length
/// plus 2 bytes, an integer 9, a UUID 17), so every pair of keys fits.
pub const TUPLE_BYTES: usize = 2 * (MAX_TEXT_KEY + 2);

/// The values of a composite key ([`Id::Tuple`]), held inline so that [`Id`] stays
/// `Copy`: each part a tag byte and its value (an integer's 8 bytes, a UUID's 16, a
/// string's length and bytes). Never nested, never of one part.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tuple {
    len: u8,
    bytes: [u8; TUPLE_BYTES],
}

const TAG_INT: u8 = 0;
const TAG_UUID: u8 = 1;
const TAG_TEXT: u8 = 2;

impl Tuple {
    const EMPTY: Tuple = Tuple {
        len: 0,
        bytes: [0; TUPLE_BYTES],
    };
    /// What a pair too long to hold becomes: no parts, and unlike the empty tuple
    /// ([`Id::GLOBAL`]) no table's collection.
    const INVALID: Tuple = Tuple {
        len: 0,
        bytes: [0xFF; TUPLE_BYTES],
    };

    fn push(&mut self, part: Id) -> Result<(), KeyTooLong> {
        let at = usize::from(self.len);
        let mut put = |data: &[u8]| -> Result<(), KeyTooLong> {
            let end = at + data.len();
            if end > TUPLE_BYTES {
                return Err(KeyTooLong(end));
            }
            self.bytes[at..end].copy_from_slice(data);
            self.len = u8::try_from(end).map_err(|_| KeyTooLong(end))?;
            Ok(())
        };
        match part {
            Id::Int(v) => {
                let mut b = [TAG_INT; 9];
                b[1..].copy_from_slice(&v.to_be_bytes());
                put(&b)
            }
            Id::Uuid(u) => {
                let mut b = [TAG_UUID; 17];
                b[1..].copy_from_slice(u.as_bytes());
                put(&b)
            }
            Id::Text(t) => {
                let mut b = arrayvec::ArrayVec::<u8, { MAX_TEXT_KEY + 2 }>::new();
                b.push(TAG_TEXT);
                // a text key is at most MAX_TEXT_KEY (64) bytes
                b.push(u8::try_from(t.len()).map_err(|_| KeyTooLong(t.len()))?);
                b.try_extend_from_slice(t.as_bytes())
                    .map_err(|_| KeyTooLong(t.len()))?;
                put(&b)
            }
            Id::Tuple(inner) => inner.parts().try_for_each(|p| self.push(p)),
        }
    }

    /// The parts, in column order.
    pub fn parts(&self) -> Parts<'_> {
        Parts {
            rest: &self.bytes[..usize::from(self.len)],
            single: None,
        }
    }
}

/// The parts of a key, in column order ([`Id::parts`]).
#[derive(Debug, Clone)]
pub struct Parts<'a> {
    rest: &'a [u8],
    single: Option<Id>,
}

impl Iterator for Parts<'_> {
    type Item = Id;
    fn next(&mut self) -> Option<Id> {
        if let Some(id) = self.single.take() {
            return Some(id);
        }
        let (&tag, body) = self.rest.split_first()?;
        let (id, used) = match tag {
            TAG_INT => (
                Id::Int(i64::from_be_bytes(body.get(..8)?.try_into().ok()?)),
                8,
            ),
            TAG_UUID => (Id::Uuid(Uuid::from_slice(body.get(..16)?).ok()?), 16),
            _ => {
                let n = usize::from(*body.first()?);
                let text = std::str::from_utf8(body.get(1..1 + n)?).ok()?;
                (Id::Text(ArrayString::from(text).ok()?), 1 + n)
            }
        };
        self.rest = body.get(used..)?;
        Some(id)
    }
}

/// A string key longer than [`MAX_TEXT_KEY`] bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a text key is at most {MAX_TEXT_KEY} bytes; this one has {0}")]
pub struct KeyTooLong(pub usize);

impl Id {
    /// The smallest key in `Id`'s order (integers sort before UUIDs, UUIDs before
    /// strings): a bound for ranges over `(position, id)` pairs.
    pub const MIN_KEY: Id = Id::Int(i64::MIN);

    /// The collection of a table that is one list ([`Spec::global`](crate::Spec::global)):
    /// no scope values, the empty tuple (also `Id::from(())`).
    pub const GLOBAL: Id = Id::Tuple(Tuple::EMPTY);

    /// The root list of a table whose scope column may be NULL
    /// ([`Spec::tree`](crate::Spec::tree), [`Spec::with_nullable_scope`](crate::Spec::with_nullable_scope)):
    /// the rows whose scope is NULL (also `Id::from(None::<i64>)`). The same value as
    /// [`Id::GLOBAL`]: no scope value.
    pub const ROOT: Id = Id::GLOBAL;

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

    /// A composite key of `parts`, in column order (a tuple inside is spread into its
    /// parts; one part is that key itself). An error when the parts hold more than
    /// [`TUPLE_BYTES`] (any two keys fit; three need shorter strings).
    ///
    /// ```
    /// use ordered_core::Id;
    /// use uuid::Uuid;
    ///
    /// let board = Uuid::from_u128(1);
    /// let todo = Id::tuple([board.into(), Id::text("todo")?])?;
    /// assert_eq!(todo, Id::from((board, Id::text("todo")?)));
    /// assert_eq!(todo.parts().collect::<Vec<_>>(), [Id::from(board), Id::text("todo")?]);
    /// assert_eq!(todo.to_string(), "(00000000-0000-0000-0000-000000000001, todo)");
    /// assert_eq!(Id::tuple([Id::from(7)])?, 7);
    /// # Ok::<(), ordered_core::KeyTooLong>(())
    /// ```
    pub fn tuple(parts: impl IntoIterator<Item = Id>) -> Result<Id, KeyTooLong> {
        let mut t = Tuple::EMPTY;
        let mut first = None;
        let mut count = 0usize;
        for p in parts {
            if let Id::Tuple(inner) = p {
                count += inner.parts().count();
            } else {
                count += 1;
                first = Some(p);
            }
            t.push(p)?;
        }
        match (count, first) {
            (1, Some(only)) => Ok(only),
            _ => Ok(Id::Tuple(t)),
        }
    }

    /// The values of a composite key, in column order; a key of one column yields
    /// itself.
    pub fn parts(&self) -> Parts<'_> {
        match self {
            Id::Tuple(t) => t.parts(),
            other => Parts {
                rest: &[],
                single: Some(*other),
            },
        }
    }

    /// The first value of a composite key (the column that names the parent row), or
    /// the key itself.
    pub fn first(&self) -> Id {
        self.parts().next().unwrap_or(*self)
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
            // a table that is one list, or the rows whose nullable scope is NULL
            Id::Tuple(t) if t.len == 0 => f.write_str("the root list"),
            Id::Tuple(t) => {
                f.write_str("(")?;
                for (i, p) in t.parts().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{p}")?;
                }
                f.write_str(")")
            }
        }
    }
}

impl fmt::Debug for Tuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.parts()).finish()
    }
}

/// The global list's collection, [`Id::GLOBAL`].
impl From<()> for Id {
    fn from((): ()) -> Id {
        Id::GLOBAL
    }
}

/// A nullable scope value: `None` is the root list ([`Id::ROOT`]).
impl<K: Into<Id>> From<Option<K>> for Id {
    fn from(v: Option<K>) -> Id {
        v.map_or(Id::ROOT, Into::into)
    }
}

/// A pair of keys: a scope of two columns, e.g. `(board_id, status)`.
impl<A: Into<Id>, B: Into<Id>> From<(A, B)> for Id {
    fn from((a, b): (A, B)) -> Id {
        // two keys always fit (TUPLE_BYTES); two tuples are refused by Id::tuple only
        // past that size, which pairs of plain keys never reach
        // pairs holding tuples can be too long: then the empty tuple, which no table's
        // scope fits, so the operation is refused with a typed error
        Id::tuple([a.into(), b.into()]).unwrap_or(Id::Tuple(Tuple::INVALID))
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Int(v) => write!(f, "{v}"),
            Id::Uuid(u) => write!(f, "{}", u.hyphenated()),
            Id::Text(s) => write!(f, "{:?}", s.as_str()),
            Id::Tuple(t) => write!(f, "{t:?}"),
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
pub trait Key: Sized + Send + Sync {
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

/// A key in the application's own type: what the typed operations take and return for
/// an item or a list, and what an insert closure reads its list as
/// (`slot.scope::<(Uuid, String)>()`). Implemented for every [`Key`] (one column), for
/// `Option<K>` (a nullable scope: `None` is the root list, [`Id::ROOT`]), for pairs and
/// triples of keys (a list per several columns, or the key of a row of an association
/// table: its list and its own key) and for [`Id`] itself (generic code, a table
/// described at run time).
pub trait AppKey: Sized + Send + Sync {
    /// This key as an [`Id`]; `None` when it cannot be one (a string longer than
    /// [`MAX_TEXT_KEY`] bytes, bytes that are not a UUID's 16).
    fn to_key(&self) -> Option<Id>;
    /// The value `id` holds, if it has this shape.
    fn from_key(id: Id) -> Option<Self>;
}

impl<K: Key> AppKey for K {
    fn to_key(&self) -> Option<Id> {
        self.to_id()
    }
    fn from_key(id: Id) -> Option<Self> {
        K::from_id(id)
    }
}

impl AppKey for Id {
    fn to_key(&self) -> Option<Id> {
        Some(*self)
    }
    fn from_key(id: Id) -> Option<Self> {
        Some(id)
    }
}

/// The one list of a table that is one list ([`Id::GLOBAL`]).
impl AppKey for () {
    fn to_key(&self) -> Option<Id> {
        Some(Id::GLOBAL)
    }
    fn from_key(id: Id) -> Option<Self> {
        (id == Id::GLOBAL).then_some(())
    }
}

/// A nullable scope column's value: `None` for the root list ([`Id::ROOT`]).
impl<K: Key> AppKey for Option<K> {
    fn to_key(&self) -> Option<Id> {
        match self {
            None => Some(Id::ROOT),
            Some(k) => k.to_id(),
        }
    }
    fn from_key(id: Id) -> Option<Self> {
        if id == Id::ROOT {
            return Some(None);
        }
        K::from_id(id).map(Some)
    }
}

impl<A: Key, B: Key> AppKey for (A, B) {
    fn to_key(&self) -> Option<Id> {
        Id::tuple([self.0.to_id()?, self.1.to_id()?]).ok()
    }
    fn from_key(id: Id) -> Option<Self> {
        let mut p = id.parts();
        let v = (A::from_id(p.next()?)?, B::from_id(p.next()?)?);
        p.next().is_none().then_some(v)
    }
}

impl<A: Key, B: Key, C: Key> AppKey for (A, B, C) {
    fn to_key(&self) -> Option<Id> {
        Id::tuple([self.0.to_id()?, self.1.to_id()?, self.2.to_id()?]).ok()
    }
    fn from_key(id: Id) -> Option<Self> {
        let mut p = id.parts();
        let v = (
            A::from_id(p.next()?)?,
            B::from_id(p.next()?)?,
            C::from_id(p.next()?)?,
        );
        p.next().is_none().then_some(v)
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
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
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
impl serde::Serialize for Id {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Int(v) => s.serialize_i64(*v),
            Id::Uuid(u) => s.collect_str(&u.hyphenated()),
            Id::Text(t) => s.serialize_str(t),
            // the root list (or a table that is one list): no scope value
            Id::Tuple(t) if t.len == 0 => s.serialize_none(),
            Id::Tuple(t) => s.collect_seq(t.parts()),
        }
    }
}

/// A number reads as an integer key, a hyphenated UUID as a UUID key, any other
/// string as a text key, an array of keys as a composite key ([`Id::tuple`]), and
/// `null` as the root list ([`Id::ROOT`]), which is how it serialises.
impl<'de> serde::Deserialize<'de> for Id {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Id, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "an integer, a UUID or a string key, an array of keys, or null (the root list)",
                )
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Id, A::Error> {
                let mut parts = Vec::new();
                while let Some(p) = seq.next_element::<Id>()? {
                    parts.push(p);
                }
                Id::tuple(parts).map_err(serde::de::Error::custom)
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Id, E> {
                Ok(Id::ROOT)
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<Id, E> {
                Ok(Id::ROOT)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn todo(board: u128) -> Id {
        Id::from((Uuid::from_u128(board), Id::text("todo").unwrap()))
    }

    #[test]
    fn tuples_hold_their_parts_in_order() {
        let t = Id::tuple([
            Id::Int(-3),
            Uuid::from_u128(9).into(),
            Id::text("ü-é").unwrap(),
        ])
        .unwrap();
        let parts: Vec<Id> = t.parts().collect();
        assert_eq!(
            parts,
            [
                Id::Int(-3),
                Uuid::from_u128(9).into(),
                Id::text("ü-é").unwrap()
            ]
        );
        assert_eq!(t.first(), Id::Int(-3));
        // a tuple inside is spread; one part is that key itself
        assert_eq!(Id::tuple([t]).unwrap(), t);
        assert_eq!(Id::tuple([Id::Int(4)]).unwrap(), Id::Int(4));
        assert_eq!(Id::tuple([]).unwrap(), Id::GLOBAL);
        assert_eq!(Id::from(()), Id::GLOBAL);
        // two tuples with the same parts are one key; others are not
        assert_eq!(todo(1), todo(1));
        assert_ne!(todo(1), todo(2));
        assert!(!todo(1).fits(KeyType::Int) && Id::GLOBAL.parts().next().is_none());
    }

    #[test]
    fn any_pair_fits_and_longer_tuples_are_refused() {
        let long = Id::text(&"x".repeat(MAX_TEXT_KEY)).unwrap();
        let pair = Id::from((long, long));
        assert_eq!(pair.parts().count(), 2);
        // a third long part does not fit: an error from Id::tuple, and a pair of such
        // tuples is a value no table's scope fits (not the global list's)
        assert!(Id::tuple([long, long, long]).is_err());
        let too_long = Id::from((pair, pair));
        assert_ne!(too_long, Id::GLOBAL);
        assert_eq!(too_long.parts().count(), 0);
    }

    #[test]
    fn tuples_display_and_serialise_as_their_parts() {
        let t = Id::from((7_i64, Id::text("done").unwrap()));
        assert_eq!(t.to_string(), "(7, done)");
        assert_eq!(format!("{t:?}"), "[7, \"done\"]");
        {
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, "[7,\"done\"]");
            assert_eq!(serde_json::from_str::<Id>(&json).unwrap(), t);
            assert_eq!(serde_json::from_str::<Id>("[]").unwrap(), Id::GLOBAL);
        }
    }

    #[test]
    fn scope_keys_read_pairs_back_in_the_apps_types() {
        let t = todo(5);
        let (board, status): (Uuid, String) = AppKey::from_key(t).unwrap();
        assert_eq!((board, status.as_str()), (Uuid::from_u128(5), "todo"));
        assert_eq!(<(Uuid, i64)>::from_key(t), None);
        assert_eq!(<(Uuid, String, i64)>::from_key(t), None);
        assert_eq!(<i64>::from_key(Id::Int(3)), Some(3));
    }

    #[test]
    fn app_keys_round_trip_and_the_root_list_is_none() {
        assert_eq!(7_i64.to_key(), Some(Id::Int(7)));
        assert_eq!(
            (Uuid::from_u128(5), "todo".to_owned()).to_key(),
            Some(todo(5))
        );
        assert_eq!(None::<i64>.to_key(), Some(Id::ROOT));
        assert_eq!(Some(3_i32).to_key(), Some(Id::Int(3)));
        assert_eq!(<Option<i64>>::from_key(Id::ROOT), Some(None));
        assert_eq!(().to_key(), Some(Id::GLOBAL));
        assert_eq!(<()>::from_key(Id::Int(1)), None);
        assert_eq!(Id::Int(4).to_key(), Some(Id::Int(4)));
        // a string no row can have is no key, not a truncated one
        assert_eq!("x".repeat(MAX_TEXT_KEY + 1).to_key(), None);
    }

    #[test]
    fn the_root_list_prints_as_words_and_serialises_as_null() {
        assert_eq!(Id::ROOT.to_string(), "the root list");
        {
            assert_eq!(serde_json::to_string(&Id::ROOT).unwrap(), "null");
            assert_eq!(serde_json::from_str::<Id>("null").unwrap(), Id::ROOT);
        }
        let e = crate::Error::VersionConflict {
            parent: Id::ROOT,
            expected: 1,
            actual: 2,
        };
        assert_eq!(
            e.to_string(),
            "the root list is at version 2, not 1: re-read the list"
        );
    }
}
