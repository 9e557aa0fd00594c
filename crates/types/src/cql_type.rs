//! The CQL data types Varve knows.

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
}

impl CqlType {
    /// The type without any `Frozen` wrapper.
    /// Whether a duration is this type or inside it (a tuple's element, a
    /// collection's): Cassandra keeps such types out of primary keys.
    pub fn references_duration(&self) -> bool {
        match self {
            CqlType::Duration => true,
            CqlType::List(e) | CqlType::Set(e) | CqlType::Frozen(e) => e.references_duration(),
            CqlType::Map(k, v) => k.references_duration() || v.references_duration(),
            CqlType::Tuple(items) => items.iter().any(CqlType::references_duration),
            _ => false,
        }
    }

    pub fn unfrozen(&self) -> &CqlType {
        match self {
            CqlType::Frozen(inner) => inner.unfrozen(),
            other => other,
        }
    }

    /// True for a list, set or map that is not frozen: its elements are
    /// stored as separate cells.
    pub fn is_multi_cell(&self) -> bool {
        matches!(
            self,
            CqlType::List(_) | CqlType::Set(_) | CqlType::Map(_, _)
        )
    }

    /// True for list, set and map, frozen or not.
    pub fn is_collection(&self) -> bool {
        self.unfrozen().is_multi_cell()
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
        let (t, rest) = parse_type_prefix(s.trim(), 0)?;
        rest.trim().is_empty().then_some(t)
    }
}

/// Deepest nesting accepted when reading a type name back.
const MAX_NAME_DEPTH: usize = 64;

fn parse_type_prefix(s: &str, depth: usize) -> Option<(CqlType, &str)> {
    if depth > MAX_NAME_DEPTH {
        return None;
    }
    let s = s.trim_start();
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
    let mut rest = rest.trim_start().strip_prefix('<')?;
    let mut args = Vec::new();
    loop {
        let (t, r) = parse_type_prefix(rest, depth + 1)?;
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
        ] {
            let name = t.cql_name();
            let back = CqlType::parse_name(&name).unwrap();
            assert_eq!(back.cql_name(), name);
        }
        assert_eq!(CqlType::parse_name("nope"), None);
        assert_eq!(CqlType::parse_name("list<int"), None);
        assert_eq!(CqlType::parse_name(&"list<".repeat(100)), None);
    }
}
