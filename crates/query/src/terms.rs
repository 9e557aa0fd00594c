//! Turning terms of the syntax tree into typed values.

use crate::api::BoundValue;
use crate::context::Ctx;
use crate::error::{QueryError, Result};
use crate::functions;
use bytes::Bytes;
use varve_cql::ast::{Literal, Term};
use varve_types::{codec, literal, CqlType, Value};

/// A term's value: absent (unset marker), null, or a value.
#[derive(Debug, Clone, PartialEq)]
pub enum Evaluated {
    Unset,
    Null,
    Value(Value),
}

impl Evaluated {
    /// The value, treating unset and null as absent.
    pub fn into_option(self) -> Option<Value> {
        match self {
            Evaluated::Value(v) => Some(v),
            _ => None,
        }
    }
}

/// True when a bind marker appears anywhere inside `term`.
pub fn contains_bind(term: &Term) -> bool {
    match term {
        Term::Bind(_) => true,
        Term::List(items) | Term::Set(items) | Term::Tuple(items) => {
            items.iter().any(contains_bind)
        }
        Term::UserType(fields) => fields.iter().any(|(_, t)| contains_bind(t)),
        Term::Map(entries) => entries
            .iter()
            .any(|(k, v)| contains_bind(k) || contains_bind(v)),
        Term::FunctionCall { args, .. } => args.iter().any(contains_bind),
        Term::Cast { term, .. } | Term::Negate(term) => contains_bind(term),
        Term::Operation { left, right, .. } => contains_bind(left) || contains_bind(right),
        Term::Literal(_) => false,
    }
}

/// Cassandra refuses bind markers inside list, set and map literals (a
/// list literal given to a vector, of type `ty`, may hold them).
pub fn check_collection_literal(term: &Term, ty: &CqlType, name: &str) -> Result<()> {
    let (kind, inner): (&str, Vec<&Term>) = match term {
        Term::List(_) if ty.vector().is_some() => return Ok(()),
        Term::List(items) => ("list", items.iter().collect()),
        Term::Set(items) => ("set", items.iter().collect()),
        Term::Map(entries) => ("map", entries.iter().flat_map(|(k, v)| [k, v]).collect()),
        _ => return Ok(()),
    };
    if inner.iter().any(|t| contains_bind(t)) {
        return Err(QueryError::Invalid(format!(
            "Invalid {kind} literal for {name}: bind variables are not supported inside collection literals"
        )));
    }
    Ok(())
}

/// The bytes bound to `term` when they can be used as sent, without
/// decoding them into a [`Value`] and encoding that again: a bind marker
/// holding a non-empty value of a type that [`codec::stores_verbatim`].
/// The bytes are validated as [`eval`] would, with its error. `None` when
/// the term needs [`eval`].
pub fn bound_verbatim<'c>(
    ctx: &'c Ctx,
    term: &Term,
    ty: &CqlType,
    name: &str,
) -> Option<Result<&'c Bytes>> {
    let Term::Bind(i) = term else { return None };
    let Some(BoundValue::Value(bytes)) = ctx.values.get(*i) else {
        return None;
    };
    if bytes.is_empty() || !codec::stores_verbatim(ty) {
        return None;
    }
    Some(
        codec::validate(ty.unfrozen(), bytes)
            .map(|()| bytes)
            .map_err(|e| QueryError::Invalid(format!("Invalid value for {name}: {e}"))),
    )
}

/// Evaluates `term` as a value of `ty` for the column (or marker) `name`.
pub fn eval(ctx: &Ctx, term: &Term, ty: &CqlType, name: &str) -> Result<Evaluated> {
    check_collection_literal(term, ty, name)?;
    let declared = ty;
    let ty = ty.unfrozen();
    if ty.is_user_type() {
        if let Some(e) = crate::user_types::values::mismatch(term, declared, name) {
            return Err(e);
        }
    }
    match term {
        Term::Literal(lit) => eval_literal(lit, ty, name).map(|v| match v {
            Some(v) => Evaluated::Value(v),
            None => Evaluated::Null,
        }),
        Term::Bind(i) => match ctx.bound(*i)? {
            BoundValue::Unset => Ok(Evaluated::Unset),
            BoundValue::Null => Ok(Evaluated::Null),
            BoundValue::Value(bytes) => {
                match codec::deserialize(ty, bytes) {
                    Ok(v) => Ok(Evaluated::Value(v)),
                    // Cassandra's "empty value" of a fixed-width type (an int of
                    // zero bytes): drivers read it back as null, so we store null.
                    // Text, ascii and blob decode zero bytes as the empty value above.
                    Err(_) if bytes.is_empty() && codec::is_empty_allowed(ty) => {
                        Ok(Evaluated::Null)
                    }
                    Err(e) => Err(QueryError::Invalid(format!(
                        "Invalid value for {name}: {e}"
                    ))),
                }
            }
        },
        Term::List(items) => match ty {
            // Drivers send Python tuples as list literals; accept them for tuples.
            CqlType::Tuple(_) | CqlType::Udt(_) => eval(ctx, &Term::Tuple(items.clone()), ty, name),
            CqlType::List(elem) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    out.push(element(ctx, item, elem, name)?);
                }
                Ok(Evaluated::Value(Value::List(out)))
            }
            CqlType::Vector(elem, n) => {
                crate::vectors::eval_literal(items, elem, *n, name, |t, et| eval(ctx, t, et, name))
            }
            _ => Err(type_mismatch("list literal", ty, name)),
        },
        Term::Set(items) => match ty {
            CqlType::Set(elem) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    out.push(element(ctx, item, elem, name)?);
                }
                Ok(Evaluated::Value(Value::Set(out)))
            }
            _ => Err(type_mismatch("set literal", ty, name)),
        },
        Term::Map(entries) => match ty {
            CqlType::Map(k, v) => {
                let mut out = Vec::with_capacity(entries.len());
                for (kt, vt) in entries {
                    out.push((element(ctx, kt, k, name)?, element(ctx, vt, v, name)?));
                }
                Ok(Evaluated::Value(Value::Map(out)))
            }
            CqlType::Set(_) if entries.is_empty() => Ok(Evaluated::Value(Value::Set(Vec::new()))),
            _ => Err(type_mismatch("map literal", ty, name)),
        },
        Term::UserType(fields) => crate::user_types::values::eval_literal(ctx, fields, ty, name),
        Term::Tuple(items) => match ty.tuple_fields() {
            Some(types) => {
                if items.len() > types.len() {
                    return Err(QueryError::Invalid(format!(
                        "Invalid tuple literal for {name}: too many elements. Type {} expects {} but got {}",
                        ty,
                        types.len(),
                        items.len()
                    )));
                }
                let mut out = Vec::with_capacity(types.len());
                for (i, t) in types.iter().enumerate() {
                    match items.get(i) {
                        Some(item @ Term::Literal(_)) if ty.is_user_type() => {
                            let v = eval(ctx, item, t, name).map_err(|_| {
                                QueryError::Invalid(format!(
                                    "Invalid tuple literal for {name}: component {i} is not of type {t}"
                                ))
                            })?;
                            out.push(v.into_option())
                        }
                        Some(item) => out.push(eval(ctx, item, t, name)?.into_option()),
                        None => out.push(None),
                    }
                }
                Ok(Evaluated::Value(Value::Tuple(out)))
            }
            _ => Err(type_mismatch("tuple literal", ty, name)),
        },
        Term::FunctionCall { name: fname, args } => {
            functions::call_term(ctx, fname, args, ty, name)
        }
        Term::Cast { ty: hint, term } => {
            let v = eval(ctx, term, hint, name)?;
            match v {
                Evaluated::Value(v) => {
                    let bytes = codec::serialize(&v);
                    codec::deserialize(ty, &bytes).map(Evaluated::Value).map_err(|_| {
                        QueryError::Invalid(format!("Type error: cannot assign a value of type {hint} to {name} of type {ty}"))
                    })
                }
                other => Ok(other),
            }
        }
        Term::Operation { op, left, right } => {
            crate::arith::terms::eval_operation(ctx, *op, left, right, declared, name)
        }
        // `-(5)`: a parenthesised term, not a tuple.
        Term::Negate(inner) => match eval(ctx, crate::arith::terms::ungrouped(inner), ty, name)? {
            Evaluated::Value(v) => negate(v, name).map(Evaluated::Value),
            other => Ok(other),
        },
    }
}

/// A collection element: nulls are rejected as Cassandra does.
fn element(ctx: &Ctx, term: &Term, ty: &CqlType, name: &str) -> Result<Value> {
    match eval(ctx, term, ty, name)? {
        Evaluated::Value(v) => Ok(v),
        Evaluated::Null => Err(QueryError::Invalid(
            "null is not supported inside collections".into(),
        )),
        Evaluated::Unset => Err(QueryError::Invalid(
            "unset value is not supported inside collections".into(),
        )),
    }
}

fn negate(v: Value, name: &str) -> Result<Value> {
    Ok(match v {
        Value::TinyInt(x) => Value::TinyInt(x.wrapping_neg()),
        Value::SmallInt(x) => Value::SmallInt(x.wrapping_neg()),
        Value::Int(x) => Value::Int(x.wrapping_neg()),
        Value::BigInt(x) => Value::BigInt(x.wrapping_neg()),
        Value::Float(x) => Value::Float(-x),
        Value::Double(x) => Value::Double(-x),
        Value::Varint(x) => Value::Varint(-x),
        Value::Decimal { unscaled, scale } => Value::Decimal {
            unscaled: -unscaled,
            scale,
        },
        _ => {
            return Err(QueryError::Invalid(format!(
                "Cannot negate the value for {name}"
            )))
        }
    })
}

/// Converts a literal to a value of `ty` (`None` for NULL).
pub fn eval_literal(lit: &Literal, ty: &CqlType, name: &str) -> Result<Option<Value>> {
    let ty = ty.unfrozen();
    let (kind, text, result) = match lit {
        Literal::Null => return Ok(None),
        Literal::String(s) => ("STRING", s.clone(), literal::from_string_literal(ty, s)),
        Literal::Integer(s) => ("INTEGER", s.clone(), literal::from_integer_literal(ty, s)),
        Literal::Float(s) => ("FLOAT", s.clone(), literal::from_float_literal(ty, s)),
        Literal::Boolean(b) => ("BOOLEAN", b.to_string(), literal::from_boolean(ty, *b)),
        Literal::Uuid(u) => (
            "UUID",
            varve_types::time::format_uuid(u),
            literal::from_uuid_literal(ty, u),
        ),
        Literal::Blob(b) => ("HEX", hex(b), literal::from_blob_literal(ty, b)),
        Literal::Duration(s) => ("DURATION", s.clone(), literal::from_duration_literal(ty, s)),
    };
    result.map(Some).map_err(|e| match (e, ty) {
        // A composite's bytes are refused as Cassandra's validation words it.
        (varve_types::Error::Marshal(message), CqlType::Custom(_)) => QueryError::Invalid(message),
        _ => QueryError::Invalid(format!(
            "Invalid {kind} constant ({text}) for \"{name}\" of type {ty}"
        )),
    })
}

fn hex(b: &[u8]) -> String {
    let mut s = String::from("0x");
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

fn type_mismatch(what: &str, ty: &CqlType, name: &str) -> QueryError {
    QueryError::Invalid(format!("Invalid {what} for {name} of type {ty}"))
}
