//! Cassandra's internal type names (`org.apache.cassandra.db.marshal.*`),
//! which the native protocol sends for a type it has no `[option]` id for:
//! a custom type (0x0000) named by its class and parameters. Cassandra 5.0
//! sends `vector<float, 3>` so, as
//! `org.apache.cassandra.db.marshal.VectorType(org.apache.cassandra.db.marshal.FloatType , 3)`
//! (a space on each side of the comma before the dimension, none between
//! other parameters), and drivers read the element type from it.
//!
//! Forms: a native type is its class; `ListType(e)`, `SetType(e)`,
//! `MapType(k,v)`, `TupleType(a,b,...)`; a frozen collection or user type
//! is wrapped in `FrozenType(...)`; a user type is
//! `UserType(keyspace,hex(name),hex(field):type,...)`. Element types are
//! written as the column's type was (Cassandra prints `vector<list<int>, 1>`
//! with a bare `ListType`).

use crate::user_type::UserType;
use crate::CqlType;
use std::sync::Arc;

/// The package of every marshal class.
pub const PACKAGE: &str = "org.apache.cassandra.db.marshal.";

/// Deepest nesting [`parse_marshal_name`] reads.
const MAX_DEPTH: usize = 32;

fn native_class(ty: &CqlType) -> Option<&'static str> {
    Some(match ty {
        CqlType::Ascii => "AsciiType",
        CqlType::Text => "UTF8Type",
        CqlType::Blob => "BytesType",
        CqlType::Boolean => "BooleanType",
        CqlType::TinyInt => "ByteType",
        CqlType::SmallInt => "ShortType",
        CqlType::Int => "Int32Type",
        CqlType::BigInt => "LongType",
        CqlType::Varint => "IntegerType",
        CqlType::Float => "FloatType",
        CqlType::Double => "DoubleType",
        CqlType::Decimal => "DecimalType",
        CqlType::Uuid => "UUIDType",
        CqlType::Timeuuid => "TimeUUIDType",
        CqlType::Timestamp => "TimestampType",
        CqlType::Date => "SimpleDateType",
        CqlType::Time => "TimeType",
        CqlType::Duration => "DurationType",
        CqlType::Inet => "InetAddressType",
        CqlType::Counter => "CounterColumnType",
        _ => return None,
    })
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

/// Cassandra's marshal name of `ty`.
pub fn marshal_name(ty: &CqlType) -> String {
    if let Some(class) = native_class(ty) {
        return format!("{PACKAGE}{class}");
    }
    let names = |types: &[CqlType]| -> String {
        types.iter().map(marshal_name).collect::<Vec<_>>().join(",")
    };
    match ty {
        CqlType::List(e) => format!("{PACKAGE}ListType({})", marshal_name(e)),
        CqlType::Set(e) => format!("{PACKAGE}SetType({})", marshal_name(e)),
        CqlType::Map(k, v) => format!("{PACKAGE}MapType({},{})", marshal_name(k), marshal_name(v)),
        CqlType::Tuple(items) => format!("{PACKAGE}TupleType({})", names(items)),
        CqlType::Frozen(inner) => match inner.as_ref() {
            CqlType::Tuple(_) | CqlType::Vector(_, _) => marshal_name(inner),
            other => format!("{PACKAGE}FrozenType({})", marshal_name(other)),
        },
        CqlType::Udt(u) => {
            let mut out = format!("{PACKAGE}UserType({},{}", u.keyspace, hex(&u.name));
            for (name, t) in u.field_names.iter().zip(&u.field_types) {
                out.push_str(&format!(",{}:{}", hex(name), marshal_name(t)));
            }
            out.push(')');
            out
        }
        CqlType::Vector(e, n) => format!("{PACKAGE}VectorType({} , {n})", marshal_name(e)),
        // Never on the wire: the query layer resolves it first.
        CqlType::UserRef(r) => r.name.clone(),
        // A composite's components are separated by ", " on the wire, as
        // Cassandra prints them there (its schema tables print no space).
        CqlType::Custom(class) if class.contains("CompositeType(") => {
            class.replace(",org.apache.", ", org.apache.")
        }
        CqlType::Custom(class) => class.clone(),
        _ => unreachable!("native types are named above"),
    }
}

/// Reads a marshal name as [`marshal_name`] writes it (the package may be
/// left out, spaces are ignored); `None` for anything else.
pub fn parse_marshal_name(s: &str) -> Option<CqlType> {
    let compact: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    let (t, rest) = parse_at(&compact, 0)?;
    rest.is_empty().then_some(t)
}

fn parse_at(s: &str, depth: usize) -> Option<(CqlType, &str)> {
    if depth > MAX_DEPTH {
        return None;
    }
    let s = s.strip_prefix(PACKAGE).unwrap_or(s);
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    let (class, rest) = s.split_at(end);
    let native = [
        CqlType::Ascii,
        CqlType::Text,
        CqlType::Blob,
        CqlType::Boolean,
        CqlType::TinyInt,
        CqlType::SmallInt,
        CqlType::Int,
        CqlType::BigInt,
        CqlType::Varint,
        CqlType::Float,
        CqlType::Double,
        CqlType::Decimal,
        CqlType::Uuid,
        CqlType::Timeuuid,
        CqlType::Timestamp,
        CqlType::Date,
        CqlType::Time,
        CqlType::Duration,
        CqlType::Inet,
        CqlType::Counter,
    ];
    if let Some(t) = native.into_iter().find(|t| native_class(t) == Some(class)) {
        return Some((t, rest));
    }
    let rest = rest.strip_prefix('(')?;
    if class == "UserType" {
        return parse_user_type(rest, depth);
    }
    let mut args = Vec::new();
    let mut rest = rest;
    if let Some(r) = rest.strip_prefix(')').filter(|_| class == "TupleType") {
        return Some((CqlType::Tuple(args), r));
    }
    loop {
        let (t, r) = match (class, args.len()) {
            ("VectorType", 1) => {
                let end = r_digits(rest);
                let n: usize = rest[..end].parse().ok().filter(|&n| n > 0)?;
                return Some((
                    CqlType::Vector(Box::new(args.pop()?), n),
                    rest[end..].strip_prefix(')')?,
                ));
            }
            _ => parse_at(rest, depth + 1)?,
        };
        args.push(t);
        if let Some(r2) = r.strip_prefix(',') {
            rest = r2;
        } else {
            rest = r.strip_prefix(')')?;
            break;
        }
    }
    let one = |mut args: Vec<CqlType>| (args.len() == 1).then(|| Box::new(args.remove(0)));
    let t = match class {
        "ListType" => CqlType::List(one(args)?),
        "SetType" => CqlType::Set(one(args)?),
        "MapType" if args.len() == 2 => {
            let v = args.pop()?;
            CqlType::Map(Box::new(args.pop()?), Box::new(v))
        }
        "TupleType" => CqlType::Tuple(args),
        "FrozenType" => CqlType::Frozen(one(args)?),
        _ => return None,
    };
    Some((t, rest))
}

fn r_digits(s: &str) -> usize {
    s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len())
}

fn unhex(s: &str) -> Option<String> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

/// `keyspace,hexname,hexfield:type,...)` of a user type.
fn parse_user_type(s: &str, depth: usize) -> Option<(CqlType, &str)> {
    let (keyspace, rest) = s.split_once(',')?;
    let end = rest.find([',', ')'])?;
    let name = unhex(&rest[..end])?;
    let mut rest = &rest[end..];
    let mut u = UserType {
        keyspace: keyspace.to_string(),
        name,
        field_names: Vec::new(),
        field_types: Vec::new(),
    };
    while let Some(r) = rest.strip_prefix(',') {
        let (field, r) = r.split_once(':')?;
        let (t, r) = parse_at(r, depth + 1)?;
        u.field_names.push(unhex(field)?);
        u.field_types.push(t);
        rest = r;
    }
    Some((CqlType::Udt(Arc::new(u)), rest.strip_prefix(')')?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(t: CqlType, n: usize) -> CqlType {
        CqlType::Vector(Box::new(t), n)
    }

    #[test]
    fn names_as_cassandra_sends_them() {
        // Captured from Cassandra 5.0.4's result metadata.
        let cases = [
            (
                vector(CqlType::Float, 3),
                "org.apache.cassandra.db.marshal.VectorType(org.apache.cassandra.db.marshal.FloatType , 3)",
            ),
            (
                vector(CqlType::Frozen(Box::new(CqlType::List(Box::new(CqlType::Int)))), 2),
                "org.apache.cassandra.db.marshal.VectorType(org.apache.cassandra.db.marshal.FrozenType(org.apache.cassandra.db.marshal.ListType(org.apache.cassandra.db.marshal.Int32Type)) , 2)",
            ),
            (
                vector(vector(CqlType::Int, 2), 2),
                "org.apache.cassandra.db.marshal.VectorType(org.apache.cassandra.db.marshal.VectorType(org.apache.cassandra.db.marshal.Int32Type , 2) , 2)",
            ),
            (
                vector(CqlType::Tuple(vec![CqlType::Int, CqlType::Text]), 1),
                "org.apache.cassandra.db.marshal.VectorType(org.apache.cassandra.db.marshal.TupleType(org.apache.cassandra.db.marshal.Int32Type,org.apache.cassandra.db.marshal.UTF8Type) , 1)",
            ),
            (
                vector(CqlType::Map(Box::new(CqlType::Int), Box::new(CqlType::Text)), 1),
                "org.apache.cassandra.db.marshal.VectorType(org.apache.cassandra.db.marshal.MapType(org.apache.cassandra.db.marshal.Int32Type,org.apache.cassandra.db.marshal.UTF8Type) , 1)",
            ),
        ];
        for (ty, name) in cases {
            assert_eq!(marshal_name(&ty), name);
            assert_eq!(parse_marshal_name(name), Some(ty));
        }
        let ut = CqlType::Udt(Arc::new(UserType {
            keyspace: "vp".into(),
            name: "ut".into(),
            field_names: vec!["a".into(), "b".into()],
            field_types: vec![vector(CqlType::Float, 2), CqlType::Int],
        }));
        let name = "org.apache.cassandra.db.marshal.VectorType(org.apache.cassandra.db.marshal.FrozenType(org.apache.cassandra.db.marshal.UserType(vp,7574,61:org.apache.cassandra.db.marshal.VectorType(org.apache.cassandra.db.marshal.FloatType , 2),62:org.apache.cassandra.db.marshal.Int32Type)) , 1)";
        let ty = vector(CqlType::Frozen(Box::new(ut)), 1);
        assert_eq!(marshal_name(&ty), name);
        assert_eq!(parse_marshal_name(name), Some(ty));
    }

    #[test]
    fn bad_names_are_refused() {
        for name in [
            "",
            "VectorType(FloatType , 0)",
            "VectorType(FloatType)",
            "VectorType(FloatType , 3",
            "ListType(FloatType,FloatType)",
            "NoSuchType",
            "UserType(ks,zz)",
            "FloatType trailing",
        ] {
            assert_eq!(parse_marshal_name(name), None, "{name}");
        }
        let deep = format!("{}Int32Type{}", "ListType(".repeat(100), ")".repeat(100));
        assert_eq!(parse_marshal_name(&deep), None);
        assert_eq!(
            parse_marshal_name("VectorType(FloatType,2)"),
            Some(vector(CqlType::Float, 2))
        );
        assert_eq!(
            parse_marshal_name("VectorType(TupleType() , 1)"),
            Some(vector(CqlType::Tuple(Vec::new()), 1))
        );
        assert_eq!(parse_marshal_name("ListType()"), None);
    }
}
