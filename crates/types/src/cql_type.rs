//! The CQL data types Varve knows.

use crate::user_type::{quote_if_needed, UserType, UserTypeRef};
use std::sync::Arc;

/// A CQL data type. `Frozen` wraps a collection or tuple whose value is
/// stored and replaced as one cell.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CqlType {
    Ascii,
    Text,
    Blob,
    Boolean,
    TinyInt,
    SmallInt,
    Int,
    BigInt,
    Varint,
    Float,
    Double,
    Decimal,
    Uuid,
    Timeuuid,
    Timestamp,
    Date,
    Time,
    Duration,
    Inet,
    Counter,
    List(Box<CqlType>),
    Set(Box<CqlType>),
    Map(Box<CqlType>, Box<CqlType>),
    Tuple(Vec<CqlType>),
    Frozen(Box<CqlType>),
    /// A user-defined type; bare it is non-frozen (one cell per field),
    /// inside `Frozen` it is one cell.
    Udt(Arc<UserType>),
    /// A user type as the parser saw it, not yet looked up in the schema
    /// (never stored, encoded or compared).
    UserRef(UserTypeRef),
    /// Cassandra 5.0's `vector<element, dimension>`: always one cell, a
    /// fixed number (at least 1) of non-null elements. The element type is
    /// kept as written (`vector<list<int>, 2>` is not shown frozen), as
    /// Cassandra prints it.
    Vector(Box<CqlType>, usize),
    /// A Cassandra type class with no CQL name (`LexicalUUIDType`,
    /// `EmptyType`): its fully qualified class name.
    Custom(String),
}

/// The class of Cassandra's `empty` type, whose only value is no bytes.
pub const EMPTY_TYPE_CLASS: &str = "org.apache.cassandra.db.marshal.EmptyType";
/// The class of Cassandra's `LexicalUUIDType`: 16 bytes ordered as a
/// `java.util.UUID` (two signed longs).
pub const LEXICAL_UUID_CLASS: &str = "org.apache.cassandra.db.marshal.LexicalUUIDType";

impl CqlType {
    /// The type without any `Frozen` wrapper.
    /// Whether a duration is this type or inside it (a tuple's element, a
    /// collection's): Cassandra keeps such types out of primary keys.
    pub fn references_duration(&self) -> bool {
        match self {
            CqlType::Duration => true,
            CqlType::List(e) | CqlType::Set(e) | CqlType::Frozen(e) | CqlType::Vector(e, _) => {
                e.references_duration()
            }
            CqlType::Map(k, v) => k.references_duration() || v.references_duration(),
            CqlType::Tuple(items) => items.iter().any(CqlType::references_duration),
            CqlType::Udt(u) => u.field_types.iter().any(CqlType::references_duration),
            _ => false,
        }
    }

    /// Whether the user type `keyspace.name` is this type or inside it.
    pub fn references_user_type(&self, keyspace: &str, name: &str) -> bool {
        match self {
            CqlType::List(e) | CqlType::Set(e) | CqlType::Frozen(e) | CqlType::Vector(e, _) => {
                e.references_user_type(keyspace, name)
            }
            CqlType::Map(k, v) => {
                k.references_user_type(keyspace, name) || v.references_user_type(keyspace, name)
            }
            CqlType::Tuple(items) => items.iter().any(|t| t.references_user_type(keyspace, name)),
            CqlType::Udt(u) => {
                (u.keyspace == keyspace && u.name == name) || u.references(keyspace, name)
            }
            _ => false,
        }
    }

    /// The field types when values of this type are encoded as a tuple
    /// (a tuple or a user type, frozen or not).
    pub fn tuple_fields(&self) -> Option<&[CqlType]> {
        match self.unfrozen() {
            CqlType::Tuple(items) => Some(items),
            CqlType::Udt(u) => Some(&u.field_types),
            _ => None,
        }
    }

    /// The user type, frozen or not.
    pub fn user_type(&self) -> Option<&Arc<UserType>> {
        match self.unfrozen() {
            CqlType::Udt(u) => Some(u),
            _ => None,
        }
    }

    pub fn unfrozen(&self) -> &CqlType {
        match self {
            CqlType::Frozen(inner) => inner.unfrozen(),
            other => other,
        }
    }

    /// True for a list, set, map or user type that is not frozen: its
    /// elements (fields) are stored as separate cells.
    pub fn is_multi_cell(&self) -> bool {
        matches!(
            self,
            CqlType::List(_)
                | CqlType::Set(_)
                | CqlType::Map(_, _)
                | CqlType::Udt(_)
                | CqlType::UserRef(_)
        )
    }

    /// True for list, set and map, frozen or not.
    pub fn is_collection(&self) -> bool {
        matches!(
            self.unfrozen(),
            CqlType::List(_) | CqlType::Set(_) | CqlType::Map(_, _)
        )
    }

    /// True for a user type (resolved or not), frozen or not.
    pub fn is_user_type(&self) -> bool {
        matches!(self.unfrozen(), CqlType::Udt(_) | CqlType::UserRef(_))
    }

    /// The name Cassandra prints in `system_schema.columns.type` and in
    /// DESCRIBE, for example `frozen<map<text, int>>`.
    pub fn cql_name(&self) -> String {
        match self {
            CqlType::Ascii => "ascii".into(),
            CqlType::Text => "text".into(),
            CqlType::Blob => "blob".into(),
            CqlType::Boolean => "boolean".into(),
            CqlType::TinyInt => "tinyint".into(),
            CqlType::SmallInt => "smallint".into(),
            CqlType::Int => "int".into(),
            CqlType::BigInt => "bigint".into(),
            CqlType::Varint => "varint".into(),
            CqlType::Float => "float".into(),
            CqlType::Double => "double".into(),
            CqlType::Decimal => "decimal".into(),
            CqlType::Uuid => "uuid".into(),
            CqlType::Timeuuid => "timeuuid".into(),
            CqlType::Timestamp => "timestamp".into(),
            CqlType::Date => "date".into(),
            CqlType::Time => "time".into(),
            CqlType::Duration => "duration".into(),
            CqlType::Inet => "inet".into(),
            CqlType::Counter => "counter".into(),
            CqlType::List(e) => format!("list<{}>", e.cql_name()),
            CqlType::Set(e) => format!("set<{}>", e.cql_name()),
            CqlType::Map(k, v) => format!("map<{}, {}>", k.cql_name(), v.cql_name()),
            CqlType::Tuple(items) => {
                let names: Vec<String> = items.iter().map(CqlType::cql_name).collect();
                format!("frozen<tuple<{}>>", names.join(", "))
            }
            CqlType::Frozen(inner) => match inner.as_ref() {
                CqlType::Tuple(_) => inner.cql_name(),
                other => format!("frozen<{}>", other.cql_name()),
            },
            CqlType::Udt(u) => u.cql_name(),
            CqlType::UserRef(r) => quote_if_needed(&r.name),
            CqlType::Vector(e, n) => format!("vector<{}, {n}>", e.cql_name()),
            CqlType::Custom(class) if class == EMPTY_TYPE_CLASS => "empty".into(),
            CqlType::Custom(class) => format!("'{class}'"),
        }
    }

    /// The fixed serialized width in bytes, for types that have one.
    pub fn fixed_width(&self) -> Option<usize> {
        match self {
            CqlType::Boolean | CqlType::TinyInt => Some(1),
            CqlType::SmallInt => Some(2),
            CqlType::Int | CqlType::Float | CqlType::Date => Some(4),
            CqlType::BigInt
            | CqlType::Double
            | CqlType::Timestamp
            | CqlType::Time
            | CqlType::Counter => Some(8),
            CqlType::Uuid | CqlType::Timeuuid => Some(16),
            CqlType::Vector(e, n) => e.vector_element_width()?.checked_mul(*n),
            _ => None,
        }
    }
}

impl CqlType {
    /// The width of this type's values inside a vector when Cassandra
    /// writes them without a length prefix (its `valueLengthIfFixed`):
    /// boolean, int, bigint, float, double, timestamp, uuid, timeuuid and
    /// vectors of those. Every other element (tinyint, smallint, date and
    /// time included) is prefixed by its length as an unsigned vint.
    pub fn vector_element_width(&self) -> Option<usize> {
        match self {
            CqlType::Boolean => Some(1),
            CqlType::Int | CqlType::Float => Some(4),
            CqlType::BigInt | CqlType::Double | CqlType::Timestamp => Some(8),
            CqlType::Uuid | CqlType::Timeuuid => Some(16),
            CqlType::Vector(e, n) => e.vector_element_width()?.checked_mul(*n),
            CqlType::Frozen(inner) => inner.vector_element_width(),
            _ => None,
        }
    }

    /// The vector's element type and dimension, frozen or not.
    pub fn vector(&self) -> Option<(&CqlType, usize)> {
        match self.unfrozen() {
            CqlType::Vector(e, n) => Some((e, *n)),
            _ => None,
        }
    }
}

impl std::fmt::Display for CqlType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.cql_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_cassandra() {
        let t = CqlType::Frozen(Box::new(CqlType::Map(
            Box::new(CqlType::Text),
            Box::new(CqlType::Int),
        )));
        assert_eq!(t.cql_name(), "frozen<map<text, int>>");
        let tup = CqlType::Tuple(vec![CqlType::Int, CqlType::Text]);
        assert_eq!(tup.cql_name(), "frozen<tuple<int, text>>");
        assert_eq!(
            CqlType::Frozen(Box::new(tup)).cql_name(),
            "frozen<tuple<int, text>>"
        );
    }
}

impl CqlType {
    /// Parses a type name as [`CqlType::cql_name`] prints it (and the usual
    /// aliases). Returns `None` for anything else; the CQL parser handles
    /// user input, this reads back what Varve itself wrote.
    pub fn parse_name(s: &str) -> Option<CqlType> {
        CqlType::parse_name_with(s, &|_| None)
    }

    /// As [`CqlType::parse_name`], with `user` looking up the names of
    /// user types (unquoted).
    pub fn parse_name_with(s: &str, user: UserLookup<'_>) -> Option<CqlType> {
        let (t, rest) = parse_type_prefix(s.trim(), 0, user)?;
        rest.trim().is_empty().then_some(t)
    }
}

/// Finds a user type by name, for [`CqlType::parse_name_with`].
pub type UserLookup<'a> = &'a dyn Fn(&str) -> Option<Arc<UserType>>;

/// A double-quoted name at the start of `s` (inner `""` is one quote).
fn quoted_prefix(s: &str) -> Option<(String, &str)> {
    let body = s.strip_prefix('"')?;
    let mut name = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        if c != '"' {
            name.push(c);
        } else if body[i + 1..].starts_with('"') {
            name.push('"');
            chars.next();
        } else {
            return Some((name, &body[i + 1..]));
        }
    }
    None
}

/// Deepest nesting accepted when reading a type name back.
const MAX_NAME_DEPTH: usize = 64;

fn parse_type_prefix<'s>(
    s: &'s str,
    depth: usize,
    user: UserLookup<'_>,
) -> Option<(CqlType, &'s str)> {
    if depth > MAX_NAME_DEPTH {
        return None;
    }
    let s = s.trim_start();
    if let Some((name, rest)) = quoted_prefix(s) {
        return Some((CqlType::Udt(user(&name)?), rest));
    }
    // A custom type as `cql_name` prints it: its class in single quotes.
    if let Some(body) = s.strip_prefix('\'') {
        let end = body.find('\'')?;
        return Some((CqlType::Custom(body[..end].to_string()), &body[end + 1..]));
    }
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    let (word, rest) = s.split_at(end);
    let simple = match word.to_ascii_lowercase().as_str() {
        "ascii" => Some(CqlType::Ascii),
        "text" | "varchar" => Some(CqlType::Text),
        "blob" => Some(CqlType::Blob),
        "boolean" => Some(CqlType::Boolean),
        "tinyint" => Some(CqlType::TinyInt),
        "smallint" => Some(CqlType::SmallInt),
        "int" => Some(CqlType::Int),
        "bigint" => Some(CqlType::BigInt),
        "varint" => Some(CqlType::Varint),
        "float" => Some(CqlType::Float),
        "double" => Some(CqlType::Double),
        "decimal" => Some(CqlType::Decimal),
        "uuid" => Some(CqlType::Uuid),
        "timeuuid" => Some(CqlType::Timeuuid),
        "timestamp" => Some(CqlType::Timestamp),
        "date" => Some(CqlType::Date),
        "time" => Some(CqlType::Time),
        "duration" => Some(CqlType::Duration),
        "inet" => Some(CqlType::Inet),
        "counter" => Some(CqlType::Counter),
        _ => None,
    };
    if let Some(t) = simple {
        return Some((t, rest));
    }
    if word.eq_ignore_ascii_case("empty") && user(word).is_none() {
        return Some((CqlType::Custom(EMPTY_TYPE_CLASS.into()), rest));
    }
    let Some(mut rest) = rest.trim_start().strip_prefix('<') else {
        return Some((CqlType::Udt(user(word)?), rest));
    };
    if word.eq_ignore_ascii_case("vector") {
        return parse_vector_args(rest, depth, user);
    }
    let mut args = Vec::new();
    loop {
        let (t, r) = parse_type_prefix(rest, depth + 1, user)?;
        args.push(t);
        let r = r.trim_start();
        if let Some(r) = r.strip_prefix(',') {
            rest = r;
        } else {
            rest = r.strip_prefix('>')?;
            break;
        }
    }
    let one = |args: Vec<CqlType>| -> Option<Box<CqlType>> {
        let mut it = args.into_iter();
        let t = it.next()?;
        it.next().is_none().then(|| Box::new(t))
    };
    let t = match word.to_ascii_lowercase().as_str() {
        "frozen" => match one(args)? {
            t if matches!(*t, CqlType::Tuple(_)) => *t,
            t => CqlType::Frozen(t),
        },
        "list" => CqlType::List(one(args)?),
        "set" => CqlType::Set(one(args)?),
        "map" if args.len() == 2 => {
            let mut it = args.into_iter();
            CqlType::Map(Box::new(it.next()?), Box::new(it.next()?))
        }
        "tuple" => CqlType::Tuple(args),
        _ => return None,
    };
    Some((t, rest))
}

/// `element, dimension>` of a vector type name.
fn parse_vector_args<'s>(
    s: &'s str,
    depth: usize,
    user: UserLookup<'_>,
) -> Option<(CqlType, &'s str)> {
    let (element, rest) = parse_type_prefix(s, depth + 1, user)?;
    let rest = rest.trim_start().strip_prefix(',')?.trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let dimension: usize = rest[..end].parse().ok()?;
    if dimension == 0 || dimension > VECTOR_DIMENSION_MAX {
        return None;
    }
    let rest = rest[end..].trim_start().strip_prefix('>')?;
    Some((CqlType::Vector(Box::new(element), dimension), rest))
}

/// The largest vector dimension: Cassandra keeps it in a Java `int`.
pub const VECTOR_DIMENSION_MAX: usize = i32::MAX as usize;

#[cfg(test)]
mod parse_tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for t in [
            CqlType::Int,
            CqlType::Frozen(Box::new(CqlType::Map(
                Box::new(CqlType::Text),
                Box::new(CqlType::List(Box::new(CqlType::Int))),
            ))),
            CqlType::Set(Box::new(CqlType::Frozen(Box::new(CqlType::Tuple(vec![
                CqlType::Int,
                CqlType::Blob,
            ]))))),
            CqlType::Tuple(vec![
                CqlType::Int,
                CqlType::Frozen(Box::new(CqlType::List(Box::new(CqlType::Text)))),
            ]),
            CqlType::Vector(Box::new(CqlType::Float), 3),
            CqlType::Vector(
                Box::new(CqlType::Vector(
                    Box::new(CqlType::List(Box::new(CqlType::Int))),
                    2,
                )),
                1,
            ),
            CqlType::List(Box::new(CqlType::Vector(Box::new(CqlType::Text), 7))),
        ] {
            let name = t.cql_name();
            let back = CqlType::parse_name(&name).unwrap();
            assert_eq!(back.cql_name(), name);
        }
        assert_eq!(CqlType::parse_name("nope"), None);
        assert_eq!(CqlType::parse_name("list<int"), None);
        assert_eq!(CqlType::parse_name(&"list<".repeat(100)), None);
        assert_eq!(CqlType::parse_name("vector<float, 0>"), None);
        assert_eq!(CqlType::parse_name("vector<float>"), None);
        assert_eq!(CqlType::parse_name("vector<float, 2147483648>"), None);
        assert_eq!(
            CqlType::parse_name("vector<float,3>"),
            Some(CqlType::Vector(Box::new(CqlType::Float), 3))
        );
    }

    #[test]
    fn user_type_names_read_back() {
        let addr = Arc::new(UserType {
            keyspace: "ks".into(),
            name: "Addr".into(),
            field_names: vec!["zip".into()],
            field_types: vec![CqlType::Int],
        });
        let lookup = |n: &str| (n == "Addr").then(|| addr.clone());
        let t = CqlType::List(Box::new(CqlType::Frozen(Box::new(CqlType::Udt(
            addr.clone(),
        )))));
        assert_eq!(t.cql_name(), "list<frozen<\"Addr\">>");
        assert_eq!(CqlType::parse_name_with(&t.cql_name(), &lookup), Some(t));
        assert_eq!(CqlType::parse_name_with("other", &lookup), None);
        assert_eq!(CqlType::parse_name_with("\"Addr", &lookup), None);
    }
}

#[cfg(test)]
mod custom_tests {
    use super::*;

    #[test]
    fn custom_types_read_back_as_cql_name_prints_them() {
        let none: UserLookup<'_> = &|_| None;
        for t in [
            CqlType::Custom(LEXICAL_UUID_CLASS.into()),
            CqlType::Custom(EMPTY_TYPE_CLASS.into()),
            CqlType::List(Box::new(CqlType::Custom(LEXICAL_UUID_CLASS.into()))),
        ] {
            assert_eq!(
                CqlType::parse_name_with(&t.cql_name(), none),
                Some(t.clone())
            );
        }
        assert_eq!(CqlType::Custom(EMPTY_TYPE_CLASS.into()).cql_name(), "empty");
        assert_eq!(
            CqlType::Custom(LEXICAL_UUID_CLASS.into()).cql_name(),
            "'org.apache.cassandra.db.marshal.LexicalUUIDType'"
        );
    }
}
