//! Which `table!` SQL types can hold item and scope keys, and which model field types
//! read them: what `#[derive(Ordered)]` checks at compile time, so that a model whose
//! key field does not match its column is a compile error on that field, not a cast
//! failure at run time.
//!
//! | SQL type (`table!`) | field type | [`KeyType`] |
//! |---|---|---|
//! | `BigInt`, `Integer`, `SmallInt` | `i64`, `i32`, `i16` | [`KeyType::Int`] |
//! | `Uuid` (PostgreSQL, feature `uuid`) | `uuid::Uuid` | [`KeyType::Uuid`] |
//! | `Binary` (MySQL `BINARY(16)`, an SQLite blob) | `Vec<u8>` (16 bytes) | [`KeyType::Uuid`] |
//! | `Text` (`VARCHAR`, `CHAR(36)`, MariaDB's `UUID`) | `String` | [`KeyType::Text`] |
//! | `Nullable<_>` of any of these (a scope column only: NULL is the root list) | `Option<_>` of its field type | the same |
//!
//! Diesel maps `uuid::Uuid` to PostgreSQL's `uuid` only; on MySQL and SQLite a UUID
//! column is `Binary` with a `Vec<u8>` field (pass `Id::from(Uuid::from_slice(&v)?)`),
//! or `Text` with a `String` field.

use diesel::sql_types::{BigInt, Binary, Integer, SmallInt, Text};
use ordered_core::KeyType;

/// A `table!` SQL type that can hold keys, and how the library binds and reads it.
#[diagnostic::on_unimplemented(
    message = "a column of SQL type `{Self}` cannot hold an ordered table's keys",
    note = "key and scope columns are `BigInt`, `Integer`, `SmallInt`, `Uuid` (PostgreSQL), `Binary` (16-byte UUIDs) or `Text`; a nullable scope column (NULL: the root list) is `Nullable<_>` of one of them"
)]
pub trait KeyColumn {
    /// How the column stores keys.
    const TYPE: KeyType;
}

/// A model field type that can hold keys, with the SQL type it reads.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an ordered table's key or scope field",
    note = "key fields are `i64` (`BigInt`), `i32` (`Integer`), `i16` (`SmallInt`), `uuid::Uuid` (`Uuid`, PostgreSQL), `Vec<u8>` (`Binary`) or `String` (`Text`)"
)]
pub trait KeyField {
    /// The SQL type of the column it reads.
    type Sql;
}

/// The SQL type a key field reads (`Self`) is its column's (`ST`).
#[diagnostic::on_unimplemented(
    message = "the key field reads SQL type `{Self}`, but its column is `{ST}`",
    note = "use `i64` for `BigInt`, `i32` for `Integer`, `i16` for `SmallInt`, `uuid::Uuid` for `Uuid`, `Vec<u8>` for `Binary`, `String` for `Text`, and `Option<_>` of one of them for a `Nullable<_>` scope column"
)]
pub trait ReadsColumn<ST> {}
impl<T> ReadsColumn<T> for T {}

/// The scope column and the parent table's key column have the same SQL type.
#[diagnostic::on_unimplemented(
    message = "the scope column's SQL type `{Self}` differs from the parent key's `{ST}`",
    note = "the scope column holds the parent row's key: give both columns the same type"
)]
pub trait SameKey<ST> {}
impl<T> SameKey<T> for T {}

macro_rules! keys {
    ($($st:ty => $ty:expr, $field:ty;)*) => {$(
        impl KeyColumn for $st {
            const TYPE: KeyType = $ty;
        }
        // the notes above say which field type reads which column
        #[diagnostic::do_not_recommend]
        impl KeyField for $field {
            type Sql = $st;
        }
    )*};
}
keys! {
    BigInt => KeyType::Int, i64;
    Integer => KeyType::Int, i32;
    SmallInt => KeyType::Int, i16;
    Text => KeyType::Text, String;
    Binary => KeyType::Uuid, Vec<u8>;
}

/// A nullable scope column: NULL is the root list (`Id::ROOT`).
impl<ST: KeyColumn> KeyColumn for diesel::sql_types::Nullable<ST> {
    const TYPE: KeyType = ST::TYPE;
}

/// A nullable scope field reads a `Nullable` column.
#[diagnostic::do_not_recommend]
impl<F: KeyField> KeyField for Option<F> {
    type Sql = diesel::sql_types::Nullable<F::Sql>;
}

#[cfg(any(feature = "postgres", feature = "async-postgres"))]
impl KeyColumn for diesel::sql_types::Uuid {
    const TYPE: KeyType = KeyType::Uuid;
}

#[cfg(all(
    feature = "uuid",
    any(feature = "postgres", feature = "async-postgres")
))]
#[diagnostic::do_not_recommend]
impl KeyField for uuid::Uuid {
    type Sql = diesel::sql_types::Uuid;
}
