//! CQL types as `[option]` (spec section 4.2.5.2): a `[short]` id and,
//! for collections, tuples and UDTs, the inner types.
//!
//! `Frozen` is not on the wire: a frozen type encodes as its inner type.
//! Decoding is bounded by [`MAX_TYPE_NESTING_DEPTH`] so hostile input
//! cannot exhaust the stack. A UDT (0x0030) is `[string keyspace][string
//! name][short n]` then n times `[string field][option type]`. A custom
//! type (0x0000) is `[string class]`: Cassandra 5.0's vectors travel so
//! (`varve_types::marshal`); other custom classes decode as errors.
//!
//! Older clients do not know every id: like Cassandra's `DataType`, a type
//! whose id came after the client's version ([`first_version_with_id`]:
//! date, time, smallint and tinyint in v4, duration in v5) is sent as the
//! custom type named by its marshal class (a v3 client reads a `date` column
//! as `org.apache.cassandra.db.marshal.SimpleDateType`, a v4 client a
//! `duration` as `org.apache.cassandra.db.marshal.DurationType`).

use std::sync::Arc;
use varve_types::marshal::{marshal_name, parse_marshal_name};
use varve_types::{CqlType, UserType};

use crate::error::{ProtocolError, Result};
use crate::primitives::{put_short, put_string, short_len, Reader};

/// Deepest nesting of collection/tuple types accepted when decoding.
pub const MAX_TYPE_NESTING_DEPTH: usize = 32;

/// `[option]` ids.
pub mod type_id {
    pub const CUSTOM: u16 = 0x0000;
    pub const ASCII: u16 = 0x0001;
    pub const BIGINT: u16 = 0x0002;
    pub const BLOB: u16 = 0x0003;
    pub const BOOLEAN: u16 = 0x0004;
    pub const COUNTER: u16 = 0x0005;
    pub const DECIMAL: u16 = 0x0006;
    pub const DOUBLE: u16 = 0x0007;
    pub const FLOAT: u16 = 0x0008;
    pub const INT: u16 = 0x0009;
    pub const TIMESTAMP: u16 = 0x000B;
    pub const UUID: u16 = 0x000C;
    pub const VARCHAR: u16 = 0x000D;
    pub const VARINT: u16 = 0x000E;
    pub const TIMEUUID: u16 = 0x000F;
    pub const INET: u16 = 0x0010;
    pub const DATE: u16 = 0x0011;
    pub const TIME: u16 = 0x0012;
    pub const SMALLINT: u16 = 0x0013;
    pub const TINYINT: u16 = 0x0014;
    pub const DURATION: u16 = 0x0015;
    pub const LIST: u16 = 0x0020;
    pub const MAP: u16 = 0x0021;
    pub const SET: u16 = 0x0022;
    pub const UDT: u16 = 0x0030;
    pub const TUPLE: u16 = 0x0031;
}

/// The first protocol version that has an `[option]` id for `ty` (native
/// types only; a collection's elements are judged one by one).
pub fn first_version_with_id(ty: &CqlType) -> u8 {
    match ty {
        CqlType::Date | CqlType::Time | CqlType::SmallInt | CqlType::TinyInt => 4,
        CqlType::Duration => 5,
        _ => 1,
    }
}

/// Appends the `[option]` for `ty` as a client of `version` reads it.
pub fn put_type(out: &mut Vec<u8>, version: u8, ty: &CqlType) {
    use type_id as id;
    let simple = |out: &mut Vec<u8>, code: u16| put_short(out, code);
    if version < first_version_with_id(ty) {
        simple(out, id::CUSTOM);
        put_string(out, &marshal_name(ty));
        return;
    }
    let nested = |out: &mut Vec<u8>, ty: &CqlType| put_type(out, version, ty);
    #[allow(unreachable_patterns)]
    match ty {
        CqlType::Ascii => simple(out, id::ASCII),
        CqlType::Text => simple(out, id::VARCHAR),
        CqlType::Blob => simple(out, id::BLOB),
        CqlType::Boolean => simple(out, id::BOOLEAN),
        CqlType::TinyInt => simple(out, id::TINYINT),
        CqlType::SmallInt => simple(out, id::SMALLINT),
        CqlType::Int => simple(out, id::INT),
        CqlType::BigInt => simple(out, id::BIGINT),
        CqlType::Varint => simple(out, id::VARINT),
        CqlType::Float => simple(out, id::FLOAT),
        CqlType::Double => simple(out, id::DOUBLE),
        CqlType::Decimal => simple(out, id::DECIMAL),
        CqlType::Uuid => simple(out, id::UUID),
        CqlType::Timeuuid => simple(out, id::TIMEUUID),
        CqlType::Timestamp => simple(out, id::TIMESTAMP),
        CqlType::Date => simple(out, id::DATE),
        CqlType::Time => simple(out, id::TIME),
        CqlType::Duration => simple(out, id::DURATION),
        CqlType::Inet => simple(out, id::INET),
        CqlType::Counter => simple(out, id::COUNTER),
        CqlType::List(e) => {
            simple(out, id::LIST);
            nested(out, e);
        }
        CqlType::Set(e) => {
            simple(out, id::SET);
            nested(out, e);
        }
        CqlType::Map(k, v) => {
            simple(out, id::MAP);
            nested(out, k);
            nested(out, v);
        }
        CqlType::Tuple(items) => {
            simple(out, id::TUPLE);
            put_short(out, short_len(items.len()));
            for item in items.iter().take(usize::from(u16::MAX)) {
                nested(out, item);
            }
        }
        CqlType::Frozen(inner) => nested(out, inner),
        CqlType::Udt(u) => {
            simple(out, id::UDT);
            put_string(out, &u.keyspace);
            put_string(out, &u.name);
            let n = u.field_names.len().min(usize::from(u16::MAX));
            put_short(out, short_len(n));
            for (name, t) in u.field_names.iter().zip(&u.field_types).take(n) {
                put_string(out, name);
                nested(out, t);
            }
        }
        // Cassandra 5.0's vectors (and any type without an id) travel as
        // a custom type named by its marshal class.
        other => {
            simple(out, id::CUSTOM);
            put_string(out, &marshal_name(other));
        }
    }
}

/// Reads an `[option]` type.
pub fn read_type(r: &mut Reader<'_>) -> Result<CqlType> {
    read_type_at(r, 0)
}

fn read_type_at(r: &mut Reader<'_>, depth: usize) -> Result<CqlType> {
    use type_id as id;
    if depth > MAX_TYPE_NESTING_DEPTH {
        return Err(ProtocolError::invalid("type nesting is too deep"));
    }
    let inner = |r: &mut Reader<'_>| read_type_at(r, depth + 1).map(Box::new);
    Ok(match r.read_short()? {
        id::ASCII => CqlType::Ascii,
        id::BIGINT => CqlType::BigInt,
        id::BLOB => CqlType::Blob,
        id::BOOLEAN => CqlType::Boolean,
        id::COUNTER => CqlType::Counter,
        id::DECIMAL => CqlType::Decimal,
        id::DOUBLE => CqlType::Double,
        id::FLOAT => CqlType::Float,
        id::INT => CqlType::Int,
        id::TIMESTAMP => CqlType::Timestamp,
        id::UUID => CqlType::Uuid,
        id::VARCHAR => CqlType::Text,
        id::VARINT => CqlType::Varint,
        id::TIMEUUID => CqlType::Timeuuid,
        id::INET => CqlType::Inet,
        id::DATE => CqlType::Date,
        id::TIME => CqlType::Time,
        id::SMALLINT => CqlType::SmallInt,
        id::TINYINT => CqlType::TinyInt,
        id::DURATION => CqlType::Duration,
        id::LIST => CqlType::List(inner(r)?),
        id::SET => CqlType::Set(inner(r)?),
        id::MAP => {
            let k = inner(r)?;
            CqlType::Map(k, inner(r)?)
        }
        id::TUPLE => {
            let n = r.read_short_count(2)?;
            CqlType::Tuple(
                (0..n)
                    .map(|_| read_type_at(r, depth + 1))
                    .collect::<Result<_>>()?,
            )
        }
        id::UDT => {
            let keyspace = r.read_string()?;
            let name = r.read_string()?;
            let n = r.read_short_count(4)?;
            let mut u = UserType {
                keyspace,
                name,
                field_names: Vec::with_capacity(n),
                field_types: Vec::with_capacity(n),
            };
            for _ in 0..n {
                u.field_names.push(r.read_string()?);
                u.field_types.push(read_type_at(r, depth + 1)?);
            }
            CqlType::Udt(Arc::new(u))
        }
        id::CUSTOM => {
            let name = r.read_string()?;
            return parse_marshal_name(&name).ok_or_else(|| {
                ProtocolError::invalid(format!("custom type {name} is not supported"))
            });
        }
        other => {
            return Err(ProtocolError::invalid(format!(
                "unknown type id 0x{other:04x}"
            )))
        }
    })
}

/// Removes every `Frozen` wrapper, as the wire does.
pub fn strip_frozen(ty: &CqlType) -> CqlType {
    match ty {
        CqlType::Frozen(inner) => strip_frozen(inner),
        CqlType::List(e) => CqlType::List(Box::new(strip_frozen(e))),
        CqlType::Set(e) => CqlType::Set(Box::new(strip_frozen(e))),
        CqlType::Map(k, v) => CqlType::Map(Box::new(strip_frozen(k)), Box::new(strip_frozen(v))),
        CqlType::Tuple(items) => CqlType::Tuple(items.iter().map(strip_frozen).collect()),
        CqlType::Udt(u) => {
            let mut u = (**u).clone();
            u.field_types = u.field_types.iter().map(strip_frozen).collect();
            CqlType::Udt(Arc::new(u))
        }
        other => other.clone(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Types as they come back from the wire (no `Frozen`).
    pub(crate) fn arb_type() -> impl Strategy<Value = CqlType> {
        let leaf = prop_oneof![
            Just(CqlType::Ascii),
            Just(CqlType::Text),
            Just(CqlType::Blob),
            Just(CqlType::Boolean),
            Just(CqlType::TinyInt),
            Just(CqlType::SmallInt),
            Just(CqlType::Int),
            Just(CqlType::BigInt),
            Just(CqlType::Varint),
            Just(CqlType::Float),
            Just(CqlType::Double),
            Just(CqlType::Decimal),
            Just(CqlType::Uuid),
            Just(CqlType::Timeuuid),
            Just(CqlType::Timestamp),
            Just(CqlType::Date),
            Just(CqlType::Time),
            Just(CqlType::Duration),
            Just(CqlType::Inet),
            Just(CqlType::Counter),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                inner.clone().prop_map(|t| CqlType::List(Box::new(t))),
                inner.clone().prop_map(|t| CqlType::Set(Box::new(t))),
                (inner.clone(), inner.clone())
                    .prop_map(|(k, v)| CqlType::Map(Box::new(k), Box::new(v))),
                proptest::collection::vec(inner.clone(), 0..4).prop_map(CqlType::Tuple),
                (inner.clone(), 1usize..5).prop_map(|(t, n)| CqlType::Vector(Box::new(t), n)),
                proptest::collection::vec(inner, 0..4).prop_map(|types| {
                    CqlType::Udt(Arc::new(UserType {
                        keyspace: "ks".into(),
                        name: "u".into(),
                        field_names: (0..types.len()).map(|i| format!("f{i}")).collect(),
                        field_types: types,
                    }))
                }),
            ]
        })
    }

    #[test]
    fn known_ids() {
        let mut out = Vec::new();
        put_type(
            &mut out,
            5,
            &CqlType::Frozen(Box::new(CqlType::Map(
                Box::new(CqlType::Text),
                Box::new(CqlType::Counter),
            ))),
        );
        assert_eq!(out, vec![0x00, 0x21, 0x00, 0x0D, 0x00, 0x05]);
    }

    #[test]
    fn a_user_type_is_keyspace_name_and_fields() {
        let mut out = Vec::new();
        let u = UserType {
            keyspace: "k".into(),
            name: "a".into(),
            field_names: vec!["z".into()],
            field_types: vec![CqlType::Int],
        };
        put_type(
            &mut out,
            5,
            &CqlType::Frozen(Box::new(CqlType::Udt(Arc::new(u)))),
        );
        let expected = [0, 0x30, 0, 1, b'k', 0, 1, b'a', 0, 1, 0, 1, b'z', 0, 0x09];
        assert_eq!(out, expected);
        // A field count larger than the bytes that follow is refused.
        let short = [0, 0x30, 0, 1, b'k', 0, 1, b'a', 0xff, 0xff];
        assert!(read_type(&mut Reader::new(&short)).is_err());
    }

    #[test]
    fn a_vector_is_a_custom_type_named_by_its_class() {
        let ty = CqlType::Vector(Box::new(CqlType::Float), 3);
        let mut out = Vec::new();
        put_type(&mut out, 5, &ty);
        let name = b"org.apache.cassandra.db.marshal.VectorType(org.apache.cassandra.db.marshal.FloatType , 3)";
        assert_eq!(out[..2], [0, 0]);
        assert_eq!(
            usize::from(u16::from_be_bytes([out[2], out[3]])),
            name.len()
        );
        assert_eq!(&out[4..], name);
        assert_eq!(read_type(&mut Reader::new(&out)).unwrap(), ty);
        // A list of vectors: the list's id, then the vector as a custom type.
        let list = CqlType::List(Box::new(ty));
        let mut out = Vec::new();
        put_type(&mut out, 5, &list);
        assert_eq!(out[..4], [0, 0x20, 0, 0]);
        assert_eq!(read_type(&mut Reader::new(&out)).unwrap(), list);
        let mut bad = vec![0, 0, 0, 9];
        bad.extend_from_slice(b"NoSuchOne");
        assert!(read_type(&mut Reader::new(&bad)).is_err());
    }

    #[test]
    fn deep_nesting_is_rejected_not_overflowed() {
        let mut bytes = Vec::new();
        for _ in 0..10_000 {
            bytes.extend_from_slice(&[0x00, 0x20]);
        }
        bytes.extend_from_slice(&[0x00, 0x09]);
        assert!(read_type(&mut Reader::new(&bytes)).is_err());
    }

    #[test]
    fn older_clients_get_newer_types_as_custom_classes() {
        let custom = |version: u8, ty: &CqlType| {
            let mut out = Vec::new();
            put_type(&mut out, version, ty);
            let mut r = Reader::new(&out);
            assert_eq!(r.read_short(), Ok(type_id::CUSTOM), "{ty:?} in v{version}");
            r.read_string().expect("class name")
        };
        let class = |name: &str| format!("org.apache.cassandra.db.marshal.{name}");
        assert_eq!(custom(3, &CqlType::Date), class("SimpleDateType"));
        assert_eq!(custom(3, &CqlType::Time), class("TimeType"));
        assert_eq!(custom(3, &CqlType::SmallInt), class("ShortType"));
        assert_eq!(custom(3, &CqlType::TinyInt), class("ByteType"));
        assert_eq!(custom(3, &CqlType::Duration), class("DurationType"));
        assert_eq!(custom(4, &CqlType::Duration), class("DurationType"));
        // Inside a collection only the element is custom, as Cassandra
        // sends `list<date>` to a v3 client.
        let mut out = Vec::new();
        put_type(&mut out, 3, &CqlType::List(Box::new(CqlType::Date)));
        assert_eq!(out[..4], [0, 0x20, 0, 0]);
        // From the version that has the id, the id.
        let mut out = Vec::new();
        put_type(&mut out, 4, &CqlType::Date);
        assert_eq!(out, [0, 0x11]);
        let mut out = Vec::new();
        put_type(&mut out, 5, &CqlType::Duration);
        assert_eq!(out, [0, 0x15]);
    }

    proptest! {
        #[test]
        fn types_round_trip(ty in arb_type(), version in 3u8..=5) {
            let mut out = Vec::new();
            put_type(&mut out, version, &ty);
            let mut r = Reader::new(&out);
            prop_assert_eq!(read_type(&mut r)?, strip_frozen(&ty));
            prop_assert_eq!(r.remaining(), 0);
        }
    }
}
