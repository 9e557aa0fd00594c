//! Types named by Cassandra's marshal classes in quotes, the "custom type"
//! form of CQL's grammar: `v 'org.apache.cassandra.db.marshal.Int32Type'`.
//!
//! Cassandra 5.0.4 reads the string with its `TypeParser` and keeps the
//! CQL type it stands for: a native class is its CQL type (`DateType` the
//! old name of `timestamp`), `ListType(...)`, `SetType(...)`,
//! `MapType(...)` are non-frozen collections whose collection elements are
//! frozen, `TupleType(...)` a tuple, `FrozenType(x)` x frozen (a native type
//! stays as it is), `VectorType(t, n)` a vector; so `system_schema.columns`
//! and DESCRIBE show CQL names afterwards. The package may be left out
//! (`'Int32Type'`), blanks are ignored and the empty string is `blob`.
//! A class Cassandra does not have is a syntax error, worded as Cassandra
//! words it. `LexicalUUIDType` and `EmptyType` stay custom types
//! (`CqlType::Custom`), as in Cassandra; `ReversedType(t)` is `t`, in
//! descending order on a clustering column (`is_reversed`). The composite
//! classes and `UserType` are refused as not supported
//! (tests/differential/known_differences.md).

use crate::error::ParseErrorKind;
use varve_types::CqlType;

/// The package of Cassandra's marshal classes.
const PACKAGE: &str = "org.apache.cassandra.db.marshal.";

/// Deepest nesting of parameters read.
const MAX_DEPTH: usize = 32;

/// Cassandra's classes that Varve has no CQL type for.
const UNSUPPORTED_CLASSES: [&str; 2] = ["PartitionerDefinedOrder", "UserType"];

/// Classes Cassandra keeps as custom types: their values are bytes that
/// the class checks and orders (`CqlType::Custom`).
const CUSTOM_CLASSES: [&str; 2] = ["EmptyType", "LexicalUUIDType"];

/// Whether the quoted class `text` is a `ReversedType(...)`: the type it
/// wraps, in descending order when it names a clustering column.
pub(super) fn is_reversed(text: &str) -> bool {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let short = compact.strip_prefix(PACKAGE).unwrap_or(&compact);
    short.starts_with("ReversedType(")
}

/// A refusal: its kind (the error code) and Cassandra's message.
pub(super) type Refusal = (ParseErrorKind, String);

/// The CQL type that the quoted class name `text` stands for.
pub(super) fn class_type(text: &str) -> Result<CqlType, Refusal> {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.is_empty() {
        return Ok(CqlType::Blob);
    }
    let mut reader = ClassReader {
        text,
        rest: &compact,
    };
    let t = reader.class(0)?;
    if !reader.rest.is_empty() {
        return Err(reader.cannot_parse("unexpected trailing characters"));
    }
    Ok(t)
}

/// Cassandra's `TypeParser.isIdentifierChar`.
fn is_identifier_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '.' | '_' | '&')
}

fn native(class: &str) -> Option<CqlType> {
    Some(match class {
        "AsciiType" => CqlType::Ascii,
        "UTF8Type" => CqlType::Text,
        "BytesType" => CqlType::Blob,
        "BooleanType" => CqlType::Boolean,
        "ByteType" => CqlType::TinyInt,
        "ShortType" => CqlType::SmallInt,
        "Int32Type" => CqlType::Int,
        "LongType" => CqlType::BigInt,
        "IntegerType" => CqlType::Varint,
        "FloatType" => CqlType::Float,
        "DoubleType" => CqlType::Double,
        "DecimalType" => CqlType::Decimal,
        "UUIDType" => CqlType::Uuid,
        "TimeUUIDType" => CqlType::Timeuuid,
        "TimestampType" | "DateType" => CqlType::Timestamp,
        "SimpleDateType" => CqlType::Date,
        "TimeType" => CqlType::Time,
        "DurationType" => CqlType::Duration,
        "InetAddressType" => CqlType::Inet,
        "CounterColumnType" => CqlType::Counter,
        _ => return None,
    })
}

/// A collection inside a collection is frozen, as in Cassandra's schema.
fn frozen_if_multi_cell(t: CqlType) -> CqlType {
    if t.is_multi_cell() {
        CqlType::Frozen(Box::new(t))
    } else {
        t
    }
}

struct ClassReader<'a> {
    /// The string as written, for messages.
    text: &'a str,
    /// What is left to read, blanks removed.
    rest: &'a str,
}

impl ClassReader<'_> {
    fn cannot_parse(&self, why: &str) -> Refusal {
        let text = self.text;
        (
            ParseErrorKind::Syntax,
            format!("Cannot parse type {text}: Syntax error parsing '{text}': {why}"),
        )
    }

    fn bad_definition(&self, class: &str) -> Refusal {
        let text = self.text;
        (
            ParseErrorKind::Syntax,
            format!("Error setting type {text}: Invalid definition for comparator {class}."),
        )
    }

    /// One class with its parameters.
    fn class(&mut self, depth: usize) -> Result<CqlType, Refusal> {
        if depth > MAX_DEPTH {
            return Err(self.cannot_parse("types are nested too deeply"));
        }
        let end = self
            .rest
            .find(|c: char| !is_identifier_char(c))
            .unwrap_or(self.rest.len());
        if end == 0 {
            return Err(self.cannot_parse("a class name is expected"));
        }
        let name = &self.rest[..end];
        self.rest = &self.rest[end..];
        let full = if name.contains('.') {
            name.to_string()
        } else {
            format!("{PACKAGE}{name}")
        };
        let short = full.strip_prefix(PACKAGE).unwrap_or("");
        if UNSUPPORTED_CLASSES.contains(&short) {
            // Their parameters have grammars of their own; no need to read them.
            return Err((
                ParseErrorKind::Unsupported,
                format!("custom type '{full}' is not supported"),
            ));
        }
        if short == "DynamicCompositeType" {
            return self.dynamic_composite(&full);
        }
        let params = if let Some(r) = self.rest.strip_prefix('(') {
            self.rest = r;
            Some(self.params(short, depth)?)
        } else {
            None
        };
        if CUSTOM_CLASSES.contains(&short) && params.is_none() {
            return Ok(CqlType::Custom(full));
        }
        if short == "CompositeType" {
            return self.composite(&full, params);
        }
        let known = native(short).is_some()
            || matches!(
                short,
                "ListType"
                    | "SetType"
                    | "MapType"
                    | "TupleType"
                    | "VectorType"
                    | "FrozenType"
                    | "ReversedType"
            );
        if !known {
            return Err((
                ParseErrorKind::Syntax,
                format!("Error setting type {full}: Unable to find abstract-type class '{full}'"),
            ));
        }
        self.build(short, &full, params)
    }

    /// `CompositeType(t1, ...)`: a custom type of opaque bytes named with
    /// its components' full class names, as Cassandra names it.
    fn composite(&self, full: &str, params: Option<Vec<Param>>) -> Result<CqlType, Refusal> {
        let names: Option<Vec<String>> = params
            .unwrap_or_default()
            .iter()
            .map(|p| match p {
                Param::Type(t) => Some(varve_types::marshal::marshal_name(t)),
                Param::Number(_) => None,
            })
            .collect();
        match names {
            Some(names) if !names.is_empty() => {
                Ok(CqlType::Custom(format!("{full}({})", names.join(","))))
            }
            _ => Err(self.bad_definition(full)),
        }
    }

    /// `DynamicCompositeType(a=>t1, ...)`: a custom type of opaque bytes,
    /// its aliases' classes named in full.
    fn dynamic_composite(&mut self, full: &str) -> Result<CqlType, Refusal> {
        let Some(r) = self.rest.strip_prefix('(') else {
            return Err(self.bad_definition(full));
        };
        let Some(end) = r.find(')') else {
            return Err(self.cannot_parse("')' is expected"));
        };
        let mut aliases = Vec::new();
        for pair in r[..end].split(',') {
            let Some((alias, class)) = pair.split_once("=>") else {
                return Err(self.bad_definition(full));
            };
            let class = if class.contains('.') {
                class.to_string()
            } else {
                format!("{PACKAGE}{class}")
            };
            aliases.push(format!("{alias}=>{class}"));
        }
        self.rest = &r[end + 1..];
        Ok(CqlType::Custom(format!("{full}({})", aliases.join(","))))
    }

    /// The parameters after `(`, through the closing `)`. A vector's
    /// dimension is read as a number, kept as a `Vector` of blobs.
    fn params(&mut self, short: &str, depth: usize) -> Result<Vec<Param>, Refusal> {
        let mut out = Vec::new();
        loop {
            let digits = self
                .rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(self.rest.len());
            if short == "VectorType" && !out.is_empty() && digits > 0 {
                let n = self.rest[..digits].parse::<usize>().ok();
                self.rest = &self.rest[digits..];
                out.push(Param::Number(n));
            } else {
                out.push(Param::Type(self.class(depth + 1)?));
            }
            if let Some(r) = self.rest.strip_prefix(',') {
                self.rest = r;
            } else if let Some(r) = self.rest.strip_prefix(')') {
                self.rest = r;
                return Ok(out);
            } else {
                return Err(self.cannot_parse("',' or ')' is expected"));
            }
        }
    }

    fn build(
        &self,
        short: &str,
        full: &str,
        params: Option<Vec<Param>>,
    ) -> Result<CqlType, Refusal> {
        let types = |params: &[Param]| -> Option<Vec<CqlType>> {
            params
                .iter()
                .map(|p| match p {
                    Param::Type(t) => Some(t.clone()),
                    Param::Number(_) => None,
                })
                .collect()
        };
        let Some(params) = params else {
            return native(short).ok_or_else(|| self.bad_definition(full));
        };
        let args = types(&params);
        let t = match (short, args.as_deref()) {
            ("ListType", Some([e])) => CqlType::List(Box::new(frozen_if_multi_cell(e.clone()))),
            ("SetType", Some([e])) => CqlType::Set(Box::new(frozen_if_multi_cell(e.clone()))),
            ("MapType", Some([k, v])) => CqlType::Map(
                Box::new(frozen_if_multi_cell(k.clone())),
                Box::new(frozen_if_multi_cell(v.clone())),
            ),
            ("TupleType", Some(items)) if !items.is_empty() => {
                CqlType::Tuple(items.iter().cloned().map(frozen_if_multi_cell).collect())
            }
            ("FrozenType", Some([inner])) if inner.is_multi_cell() => {
                CqlType::Frozen(Box::new(inner.clone()))
            }
            ("FrozenType", Some([inner])) => inner.clone(),
            // The order is the column's (see `is_reversed`); the type is
            // the one it wraps, as Cassandra's schema shows it.
            ("ReversedType", Some([inner])) => inner.clone(),
            ("VectorType", _) => match params.as_slice() {
                [Param::Type(e), Param::Number(Some(n))] if *n > 0 => {
                    CqlType::Vector(Box::new(e.clone()), *n)
                }
                _ => return Err(self.bad_definition(full)),
            },
            _ => return Err(self.bad_definition(full)),
        };
        Ok(t)
    }
}

/// A parameter of a class: a type, or a vector's dimension.
enum Param {
    Type(CqlType),
    Number(Option<usize>),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(text: &str) -> Result<String, Refusal> {
        class_type(text).map(|t| t.to_string())
    }

    #[test]
    fn classes_become_cql_types() {
        let m = |s: &str| format!("{PACKAGE}{s}");
        assert_eq!(t(&m("Int32Type")).unwrap(), "int");
        assert_eq!(t("Int32Type").unwrap(), "int");
        assert_eq!(t(&m("DateType")).unwrap(), "timestamp");
        assert_eq!(t(&m("SimpleDateType")).unwrap(), "date");
        assert_eq!(t("").unwrap(), "blob");
        assert_eq!(
            t(&format!("{}({})", m("ListType"), m("Int32Type"))).unwrap(),
            "list<int>"
        );
        assert_eq!(
            t(&format!(
                "{}( {} , {} )",
                m("MapType"),
                m("Int32Type"),
                m("UTF8Type")
            ))
            .unwrap(),
            "map<int, text>"
        );
        assert_eq!(
            t("ListType(SetType(Int32Type))").unwrap(),
            "list<frozen<set<int>>>"
        );
        assert_eq!(
            t("FrozenType(ListType(Int32Type))").unwrap(),
            "frozen<list<int>>"
        );
        assert_eq!(t("FrozenType(Int32Type)").unwrap(), "int");
        assert_eq!(t("VectorType(FloatType,3)").unwrap(), "vector<float, 3>");
        assert_eq!(
            t("TupleType(Int32Type,ListType(UTF8Type))").unwrap(),
            "frozen<tuple<int, frozen<list<text>>>>"
        );
    }

    #[test]
    fn unknown_and_malformed_classes_are_syntax_errors() {
        for bad in [
            "NoSuchType",
            "int32type",
            "java.lang.String",
            "Int32Type(",
            "ListType(Int32Type,Int32Type)",
            "ListType",
            "VectorType(FloatType,0)",
            "Int32Type)",
            "(",
        ] {
            let (kind, message) = class_type(bad).expect_err(bad);
            assert_eq!(kind, ParseErrorKind::Syntax, "{bad}: {message}");
        }
        let (_, message) = class_type("NoSuchType").unwrap_err();
        assert_eq!(
            message,
            "Error setting type org.apache.cassandra.db.marshal.NoSuchType: Unable to find \
             abstract-type class 'org.apache.cassandra.db.marshal.NoSuchType'"
        );
    }

    #[test]
    fn custom_classes_stay_custom_and_reversed_types_unwrap() {
        assert_eq!(
            class_type("LexicalUUIDType").unwrap(),
            CqlType::Custom(format!("{PACKAGE}LexicalUUIDType"))
        );
        assert_eq!(t(&format!("{PACKAGE}EmptyType")).unwrap(), "empty");
        assert_eq!(t("ReversedType(Int32Type)").unwrap(), "int");
        assert!(is_reversed(
            " org.apache.cassandra.db.marshal.ReversedType( Int32Type)"
        ));
        assert!(!is_reversed("Int32Type"));
        assert_eq!(
            t("CompositeType(Int32Type, UTF8Type)").unwrap(),
            format!("'{PACKAGE}CompositeType({PACKAGE}Int32Type,{PACKAGE}UTF8Type)'")
        );
    }

    #[test]
    fn classes_varve_has_no_type_for_are_unsupported() {
        let class = "UserType(ks,61,62:Int32Type)";
        let (kind, _) = class_type(class).expect_err(class);
        assert_eq!(kind, ParseErrorKind::Unsupported, "{class}");
        let deep = "ListType(".repeat(100);
        assert!(class_type(&deep).is_err());
    }
}
