//! CQL type names: native types, `frozen<>`, collections and tuples, with
//! the validity rules Cassandra applies when it prepares a type (no
//! non-frozen collection inside a collection, no counters inside
//! collections or tuples, no durations in sets or as map keys).
//! A user type is named by a [`CqlType::UserRef`] the query layer looks
//! up; a quoted marshal class name is the CQL type it stands for
//! ([`super::class_types`]). `vector<T, n>` takes any
//! element type (Cassandra 5.0.4 refuses none) and a positive dimension.

use super::Parser;
use crate::error::{ParseError, ParseErrorKind, Result};
use crate::keywords::is_reserved;
use crate::lexer::{Punct, Tok};
use varve_types::{CqlType, UserTypeRef};

/// Whether `name` is a native type's name (which a user type may not take).
pub(super) fn is_native_name(name: &str) -> bool {
    native(name).is_some()
}

fn native(name: &str) -> Option<CqlType> {
    Some(match name {
        "ascii" => CqlType::Ascii,
        "bigint" => CqlType::BigInt,
        "blob" => CqlType::Blob,
        "boolean" => CqlType::Boolean,
        "counter" => CqlType::Counter,
        "date" => CqlType::Date,
        "decimal" => CqlType::Decimal,
        "double" => CqlType::Double,
        "duration" => CqlType::Duration,
        "float" => CqlType::Float,
        "inet" => CqlType::Inet,
        "int" => CqlType::Int,
        "smallint" => CqlType::SmallInt,
        "text" | "varchar" => CqlType::Text,
        "time" => CqlType::Time,
        "timestamp" => CqlType::Timestamp,
        "timeuuid" => CqlType::Timeuuid,
        "tinyint" => CqlType::TinyInt,
        "uuid" => CqlType::Uuid,
        "varint" => CqlType::Varint,
        _ => return None,
    })
}

/// Tuple components are frozen implicitly, as in Cassandra.
fn freeze_component(t: CqlType) -> CqlType {
    if t.is_multi_cell() {
        CqlType::Frozen(Box::new(t))
    } else {
        t
    }
}

impl Parser<'_> {
    pub(super) fn cql_type(&mut self) -> Result<CqlType> {
        let start = self.token_at(0).clone();
        let at = |kind, msg: String| ParseError::new(kind, msg, start.line, start.column);
        let word = match self.peek().clone() {
            Tok::Ident(w) => w,
            Tok::QuotedIdent(_) => return self.user_type_ref(),
            Tok::Str(text) => {
                let t = super::class_types::class_type(&text).map_err(|(k, m)| at(k, m))?;
                check_nested(&t).map_err(|(k, m)| at(k, m))?;
                self.pos += 1;
                return Ok(t);
            }
            _ => return Err(self.expecting("type")),
        };
        if let Some(t) = native(&word) {
            self.pos += 1;
            return Ok(t);
        }
        let generic = self.is_punct_at(1, Punct::Lt);
        match word.as_str() {
            "frozen" if generic => {
                let inner = self.nested(|p| p.type_args(1))?.remove(0);
                match inner {
                    CqlType::Tuple(_) | CqlType::Frozen(_) | CqlType::Vector(_, _) => Ok(inner),
                    t if t.is_multi_cell() => Ok(CqlType::Frozen(Box::new(t))),
                    t => Err(at(
                        ParseErrorKind::Invalid,
                        format!(
                            "frozen<> is only allowed on collections, tuples, and user-defined \
                             types (got {t})"
                        ),
                    )),
                }
            }
            "list" | "set" if generic => {
                let elem = self.nested(|p| p.type_args(1))?.remove(0);
                let t = if word == "list" {
                    CqlType::List(Box::new(elem.clone()))
                } else {
                    CqlType::Set(Box::new(elem.clone()))
                };
                check_collection_element(&t, &elem).map_err(|(k, m)| at(k, m))?;
                if word == "set" && elem == CqlType::Duration {
                    let msg = format!("Durations are not allowed inside sets: {t}");
                    return Err(at(ParseErrorKind::Invalid, msg));
                }
                Ok(t)
            }
            "map" if generic => {
                let mut args = self.nested(|p| p.type_args(2))?;
                let v = args.pop().unwrap_or(CqlType::Int);
                let k = args.pop().unwrap_or(CqlType::Int);
                let t = CqlType::Map(Box::new(k.clone()), Box::new(v.clone()));
                check_collection_element(&t, &k).map_err(|(kd, m)| at(kd, m))?;
                check_collection_element(&t, &v).map_err(|(kd, m)| at(kd, m))?;
                if k == CqlType::Duration {
                    let msg = format!("Durations are not allowed as map keys: {t}");
                    return Err(at(ParseErrorKind::Invalid, msg));
                }
                Ok(t)
            }
            "tuple" if generic => {
                let items = self.nested(|p| p.type_args(0))?;
                if items.contains(&CqlType::Counter) {
                    let msg = "counters are not allowed inside tuples".to_string();
                    return Err(at(ParseErrorKind::Invalid, msg));
                }
                Ok(CqlType::Tuple(
                    items.into_iter().map(freeze_component).collect(),
                ))
            }
            "vector" if generic => {
                let (element, dimension) = self.nested(|p| p.vector_args())?;
                match usize::try_from(dimension) {
                    Ok(n) if n > 0 => Ok(CqlType::Vector(Box::new(element), n)),
                    _ => Err(at(
                        ParseErrorKind::Invalid,
                        format!("vectors may only have positive dimensions; given {dimension}"),
                    )),
                }
            }
            w if !is_reserved(w) => self.user_type_ref(),
            _ => Err(self.expecting("type")),
        }
    }

    /// `name` or `keyspace.name` of a user type.
    fn user_type_ref(&mut self) -> Result<CqlType> {
        let q = self.qualified_name()?;
        Ok(CqlType::UserRef(UserTypeRef {
            keyspace: q.keyspace,
            name: q.name,
        }))
    }

    /// `<t, n>` after `vector`; `n` is a Java int in Cassandra's grammar, so
    /// a larger number is a syntax error.
    fn vector_args(&mut self) -> Result<(CqlType, i64)> {
        self.pos += 1; // vector
        self.expect_punct(Punct::Lt)?;
        let element = self.cql_type()?;
        self.expect_punct(Punct::Comma)?;
        let dimension = match self.peek() {
            Tok::Integer(s) => s.parse::<i32>().ok(),
            _ => return Err(self.expecting("INTEGER")),
        };
        let Some(dimension) = dimension else {
            let text = self.current_text();
            return Err(self.syntax_error(format!(
                "NumberFormatException For input string: \"{text}\""
            )));
        };
        self.pos += 1;
        self.expect_punct(Punct::Gt)?;
        Ok((element, i64::from(dimension)))
    }

    /// `<t, t, ...>` after the type name; exactly `count` types, or at
    /// least one when `count` is 0.
    fn type_args(&mut self, count: usize) -> Result<Vec<CqlType>> {
        self.pos += 1; // the type name
        self.expect_punct(Punct::Lt)?;
        let mut out = vec![self.cql_type()?];
        while self.eat_punct(Punct::Comma) {
            out.push(self.cql_type()?);
        }
        if count != 0 && out.len() != count {
            let expected = if out.len() < count { "','" } else { "'>'" };
            return Err(self.expecting(expected));
        }
        self.expect_punct(Punct::Gt)?;
        Ok(out)
    }
}

/// The rules of collections, for a type that did not come through the
/// generic forms above (a marshal class name).
fn check_nested(t: &CqlType) -> std::result::Result<(), (ParseErrorKind, String)> {
    let elements: Vec<&CqlType> = match t {
        CqlType::List(e) | CqlType::Set(e) => vec![e],
        CqlType::Map(k, v) => vec![k, v],
        CqlType::Frozen(inner) => return check_nested(inner),
        CqlType::Tuple(items) if items.contains(&CqlType::Counter) => {
            let msg = "counters are not allowed inside tuples".to_string();
            return Err((ParseErrorKind::Invalid, msg));
        }
        CqlType::Tuple(items) => items.iter().collect(),
        _ => Vec::new(),
    };
    if matches!(t, CqlType::List(_) | CqlType::Set(_) | CqlType::Map(..)) {
        for e in &elements {
            check_collection_element(t, e)?;
        }
        let duration_key = match t {
            CqlType::Set(e) | CqlType::Map(e, _) => **e == CqlType::Duration,
            _ => false,
        };
        if duration_key {
            let msg = format!("Durations are not allowed inside sets or as map keys: {t}");
            return Err((ParseErrorKind::Invalid, msg));
        }
    }
    elements.into_iter().try_for_each(check_nested)
}

fn check_collection_element(
    t: &CqlType,
    elem: &CqlType,
) -> std::result::Result<(), (ParseErrorKind, String)> {
    if elem.is_user_type() && elem.is_multi_cell() {
        return Err((
            ParseErrorKind::Invalid,
            format!("Non-frozen UDTs are not allowed inside collections: {t}"),
        ));
    }
    if elem.is_multi_cell() {
        return Err((
            ParseErrorKind::Unsupported,
            format!("Non-frozen collections are not allowed inside collections: {t}"),
        ));
    }
    if *elem == CqlType::Counter {
        return Err((
            ParseErrorKind::Invalid,
            format!("Counters are not allowed inside collections: {t}"),
        ));
    }
    Ok(())
}
