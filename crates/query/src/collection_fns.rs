//! Cassandra 5.0's collection functions: `map_keys`, `map_values`,
//! `collection_count`, `collection_min`, `collection_max`,
//! `collection_sum` and `collection_avg`, on frozen and non-frozen
//! collections. A null (or, non-frozen, empty) collection gives null; sums
//! and averages follow the aggregates' arithmetic (`crate::sum_avg`).

use crate::error::{QueryError, Result};
use crate::sum_avg::{is_summable, SumAvg};
use varve_types::{codec, compare, CqlType, Value};

/// The names, as Cassandra 5.0 has them.
pub const NAMES: [&str; 7] = [
    "map_keys",
    "map_values",
    "collection_count",
    "collection_min",
    "collection_max",
    "collection_sum",
    "collection_avg",
];

pub fn is_collection_function(name: &str) -> bool {
    NAMES.contains(&name)
}

/// What `name` returns for an argument of type `ty`, or Cassandra's
/// refusal naming the argument as it was written (`shown`).
pub fn return_type(name: &str, shown: &str, ty: &CqlType) -> Result<CqlType> {
    let refuse = |what: &str| {
        QueryError::Invalid(format!(
            "Function system.{name} requires a {what} argument, but found argument {shown} of type {ty}"
        ))
    };
    let ret = match (name, ty.unfrozen()) {
        ("map_keys", CqlType::Map(k, _)) => CqlType::Set(k.clone()),
        ("map_values", CqlType::Map(_, v)) => CqlType::List(v.clone()),
        ("map_keys" | "map_values", _) => return Err(refuse("map")),
        ("collection_count", CqlType::Map(..) | CqlType::List(_) | CqlType::Set(_)) => CqlType::Int,
        ("collection_count", _) => return Err(refuse("collection")),
        ("collection_min" | "collection_max", CqlType::List(e) | CqlType::Set(e)) => (**e).clone(),
        ("collection_min" | "collection_max", _) => return Err(refuse("set or list")),
        (_, CqlType::List(e) | CqlType::Set(e)) if is_summable(e) => (**e).clone(),
        _ => return Err(refuse("numeric set/list")),
    };
    Ok(ret)
}

/// Applies `name` to a value of type `ty` (already checked by
/// [`return_type`]).
pub fn apply(name: &str, ty: &CqlType, value: Option<&Value>) -> Result<Option<Value>> {
    let ret = return_type(name, "", ty)?;
    let Some(value) = value else {
        return Ok(None);
    };
    let out = match (name, value) {
        ("map_keys", Value::Map(entries)) => {
            Value::Set(entries.iter().map(|(k, _)| k.clone()).collect())
        }
        ("map_values", Value::Map(entries)) => {
            Value::List(entries.iter().map(|(_, v)| v.clone()).collect())
        }
        ("collection_count", Value::Map(entries)) => Value::Int(entries.len() as i32),
        ("collection_count", Value::List(items) | Value::Set(items)) => {
            Value::Int(items.len() as i32)
        }
        ("collection_min" | "collection_max", Value::List(items) | Value::Set(items)) => {
            let Some(best) = extreme(&ret, items, name == "collection_max") else {
                return Ok(None);
            };
            best
        }
        ("collection_sum" | "collection_avg", Value::List(items) | Value::Set(items)) => {
            let mut acc = SumAvg::new(&ret);
            for v in items {
                acc.add(v).map_err(QueryError::Invalid)?;
            }
            if name == "collection_sum" {
                acc.sum()
            } else {
                acc.avg()
            }
        }
        _ => {
            return Err(QueryError::Invalid(format!(
                "Invalid argument for function system.{name}"
            )))
        }
    };
    Ok(Some(out))
}

/// The smallest (or largest) of `items` in the element type's order.
fn extreme(ty: &CqlType, items: &[Value], largest: bool) -> Option<Value> {
    let mut best: Option<(&Value, Vec<u8>)> = None;
    for v in items {
        let bytes = codec::serialize(v).to_vec();
        let better = match &best {
            None => true,
            Some((_, b)) => {
                let ord = compare::compare(ty, &bytes, b);
                if largest {
                    ord.is_gt()
                } else {
                    ord.is_lt()
                }
            }
        };
        if better {
            best = Some((v, bytes));
        }
    }
    best.map(|(v, _)| v.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(ty: CqlType) -> CqlType {
        CqlType::List(Box::new(ty))
    }

    #[test]
    fn types_and_refusals_as_cassandra_words_them() {
        let m = CqlType::Map(Box::new(CqlType::Int), Box::new(CqlType::Text));
        assert_eq!(
            return_type("map_keys", "m", &m).unwrap(),
            CqlType::Set(Box::new(CqlType::Int))
        );
        assert_eq!(
            return_type("map_values", "m", &m).unwrap(),
            list(CqlType::Text)
        );
        assert_eq!(
            return_type("collection_min", "m", &m).unwrap_err().to_string(),
            "Function system.collection_min requires a set or list argument, but found argument m of type map<int, text>"
        );
        assert_eq!(
            return_type("collection_count", "k", &CqlType::Int).unwrap_err().to_string(),
            "Function system.collection_count requires a collection argument, but found argument k of type int"
        );
        let texts = CqlType::Frozen(Box::new(CqlType::Set(Box::new(CqlType::Text))));
        assert!(return_type("collection_sum", "fs", &texts)
            .unwrap_err()
            .to_string()
            .ends_with("requires a numeric set/list argument, but found argument fs of type frozen<set<text>>"));
    }

    #[test]
    fn values_follow_the_element_type() {
        let l = list(CqlType::Double);
        let v = Value::List(vec![
            Value::Double(1.5),
            Value::Double(2.5),
            Value::Double(0.25),
        ]);
        let run = |name| apply(name, &l, Some(&v)).unwrap();
        assert_eq!(run("collection_min"), Some(Value::Double(0.25)));
        assert_eq!(run("collection_max"), Some(Value::Double(2.5)));
        assert_eq!(run("collection_sum"), Some(Value::Double(4.25)));
        assert_eq!(run("collection_count"), Some(Value::Int(3)));
        assert_eq!(apply("collection_avg", &l, None).unwrap(), None);
        let bytes = list(CqlType::TinyInt);
        let v = Value::List(vec![
            Value::TinyInt(1),
            Value::TinyInt(2),
            Value::TinyInt(127),
        ]);
        assert_eq!(
            apply("collection_sum", &bytes, Some(&v)).unwrap(),
            Some(Value::TinyInt(-126))
        );
        assert_eq!(
            apply("collection_avg", &bytes, Some(&v)).unwrap(),
            Some(Value::TinyInt(43))
        );
    }
}
