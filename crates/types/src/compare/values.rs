//! Ordering of decoded values without their type, used to sort and
//! deduplicate set elements and map keys before they are serialized.
//!
//! Scalars are compared through their encodings with the type their variant
//! names, so this order agrees with [`super::compare`] on the same type.
//! Values of different variants (never both in one well-typed collection)
//! order by variant to keep the order total.

use super::compare;
use crate::{codec, CqlType, Value};
use std::cmp::Ordering;

/// The scalar type a value's variant stands for, `None` for collections
/// and tuples.
fn scalar_type(v: &Value) -> Option<CqlType> {
    Some(match v {
        Value::Ascii(_) => CqlType::Ascii,
        Value::Text(_) => CqlType::Text,
        Value::Blob(_) => CqlType::Blob,
        Value::Boolean(_) => CqlType::Boolean,
        Value::TinyInt(_) => CqlType::TinyInt,
        Value::SmallInt(_) => CqlType::SmallInt,
        Value::Int(_) => CqlType::Int,
        Value::BigInt(_) => CqlType::BigInt,
        Value::Varint(_) => CqlType::Varint,
        Value::Float(_) => CqlType::Float,
        Value::Double(_) => CqlType::Double,
        Value::Decimal { .. } => CqlType::Decimal,
        Value::Uuid(_) => CqlType::Uuid,
        Value::Timeuuid(_) => CqlType::Timeuuid,
        Value::Timestamp(_) => CqlType::Timestamp,
        Value::Date(_) => CqlType::Date,
        Value::Time(_) => CqlType::Time,
        Value::Duration { .. } => CqlType::Duration,
        Value::Inet(_) => CqlType::Inet,
        Value::Counter(_) => CqlType::Counter,
        Value::List(_) | Value::Set(_) | Value::Map(_) | Value::Tuple(_) | Value::Vector(_) => {
            return None
        }
    })
}

fn variant_rank(v: &Value) -> u8 {
    match v {
        Value::List(_) => 100,
        Value::Set(_) => 101,
        Value::Map(_) => 102,
        Value::Tuple(_) => 103,
        Value::Vector(_) => 104,
        // Scalars: rank by their type name, stable and distinct.
        other => scalar_type(other).map_or(0, |t| match t {
            CqlType::Ascii => 1,
            CqlType::Text => 2,
            CqlType::Blob => 3,
            CqlType::Boolean => 4,
            CqlType::TinyInt => 5,
            CqlType::SmallInt => 6,
            CqlType::Int => 7,
            CqlType::BigInt => 8,
            CqlType::Varint => 9,
            CqlType::Float => 10,
            CqlType::Double => 11,
            CqlType::Decimal => 12,
            CqlType::Uuid => 13,
            CqlType::Timeuuid => 14,
            CqlType::Timestamp => 15,
            CqlType::Date => 16,
            CqlType::Time => 17,
            CqlType::Duration => 18,
            CqlType::Inet => 19,
            _ => 20,
        }),
    }
}

fn lexicographic<T>(a: &[T], b: &[T], mut cmp: impl FnMut(&T, &T) -> Ordering) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let c = cmp(x, y);
        if c != Ordering::Equal {
            return c;
        }
    }
    a.len().cmp(&b.len())
}

/// The elements of a set as Cassandra stores them: sorted, without
/// duplicates.
pub(crate) fn canonical_set(items: &[Value]) -> Vec<&Value> {
    let mut refs: Vec<&Value> = items.iter().collect();
    refs.sort_by(|a, b| order_values(a, b));
    refs.dedup_by(|a, b| order_values(a, b) == Ordering::Equal);
    refs
}

/// The entries of a map as Cassandra stores them: sorted by key; of equal
/// keys the last one written wins, as in `{k: 1, k: 2}`.
pub(crate) fn canonical_map(entries: &[(Value, Value)]) -> Vec<&(Value, Value)> {
    let mut refs: Vec<&(Value, Value)> = entries.iter().collect();
    refs.sort_by(|a, b| order_values(&a.0, &b.0)); // stable: keeps write order
    let mut kept: Vec<&(Value, Value)> = Vec::with_capacity(refs.len());
    for e in refs {
        match kept.last_mut() {
            Some(last) if order_values(&last.0, &e.0) == Ordering::Equal => *last = e,
            _ => kept.push(e),
        }
    }
    kept
}

/// Cassandra's order between two values of the same (inferred) type. Sets
/// and maps compare in their canonical (stored) order.
pub(crate) fn order_values(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::List(x), Value::List(y)) | (Value::Vector(x), Value::Vector(y)) => {
            lexicographic(x, y, order_values)
        }
        (Value::Set(x), Value::Set(y)) => {
            lexicographic(&canonical_set(x), &canonical_set(y), |p, q| {
                order_values(p, q)
            })
        }
        (Value::Map(x), Value::Map(y)) => lexicographic(
            &canonical_map(x),
            &canonical_map(y),
            |(ka, va), (kb, vb)| order_values(ka, kb).then_with(|| order_values(va, vb)),
        ),
        (Value::Tuple(x), Value::Tuple(y)) => order_tuples(x, y),
        _ => match (scalar_type(a), scalar_type(b)) {
            (Some(ta), Some(tb)) if ta == tb => {
                compare(&ta, &codec::serialize(a), &codec::serialize(b))
            }
            _ => variant_rank(a).cmp(&variant_rank(b)),
        },
    }
}

fn order_tuples(x: &[Option<Value>], y: &[Option<Value>]) -> Ordering {
    for (fa, fb) in x.iter().zip(y) {
        let c = match (fa, fb) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(p), Some(q)) => order_values(p, q),
        };
        if c != Ordering::Equal {
            return c;
        }
    }
    let n = x.len().min(y.len());
    let has_content = |rest: &[Option<Value>]| {
        rest.iter()
            .flatten()
            .any(|v| !codec::serialize(v).is_empty())
    };
    has_content(&x[n..]).cmp(&has_content(&y[n..]))
}
