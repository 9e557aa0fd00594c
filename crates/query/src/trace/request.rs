//! How a traced request is described in `system_traces.sessions`: the
//! `request` text and the `parameters` map Cassandra 5.0.4 writes for
//! each message (QueryMessage, ExecuteMessage, BatchMessage,
//! PrepareMessage).

use std::collections::BTreeMap;

use varve_types::{codec, literal, Consistency};

use super::Request;
use crate::api::{BoundValue, ColumnSpec, QueryOptions};

/// Longest bound value shown; Cassandra cuts longer ones and ends them
/// with `...'`.
pub const BOUND_VALUE_CHARS_MAX: usize = 1000;

/// A QUERY: its text and options.
pub fn query(text: &str, opts: &QueryOptions) -> Request {
    let mut parameters = options(opts);
    parameters.insert("query".into(), text.to_string());
    if let Some(n) = opts.page_size.filter(|n| *n > 0) {
        parameters.insert("page_size".into(), n.to_string());
    }
    Request {
        kind: "Execute CQL3 query",
        parameters,
    }
}

/// An EXECUTE of a prepared statement (`found`: its text and bind specs,
/// when it is still prepared): the text, options and every bound value as
/// a CQL literal, named `bound_var_<i>_<name>`.
pub fn execute(found: Option<(&str, &[ColumnSpec])>, opts: &QueryOptions) -> Request {
    let mut parameters = options(opts);
    if let Some(n) = opts.page_size.filter(|n| *n > 0) {
        parameters.insert("page_size".into(), n.to_string());
    }
    if let Some((text, specs)) = found {
        parameters.insert("query".into(), text.to_string());
        for (i, spec) in specs.iter().enumerate() {
            let value = match &opts.names {
                Some(names) => names
                    .iter()
                    .position(|n| n == &spec.name)
                    .and_then(|at| opts.values.get(at)),
                None => opts.values.get(i),
            };
            let Some(value) = value else { continue };
            let name = format!("bound_var_{i}_{}", spec.name);
            parameters.insert(name, bound_literal(spec, value));
        }
    }
    Request {
        kind: "Execute CQL3 prepared query",
        parameters,
    }
}

/// A BATCH: its levels only.
pub fn batch(opts: &QueryOptions) -> Request {
    Request {
        kind: "Execute batch of CQL3 queries",
        parameters: options(opts),
    }
}

/// A PREPARE: the text.
pub fn prepare(text: &str) -> Request {
    Request {
        kind: "Preparing CQL3 query",
        parameters: BTreeMap::from([("query".to_string(), text.to_string())]),
    }
}

/// The levels every statement message records (the serial level is
/// SERIAL when the client sent none).
fn options(opts: &QueryOptions) -> BTreeMap<String, String> {
    let name = |code: u16| {
        Consistency::from_code(code).map_or_else(|| format!("0x{code:04x}"), |c| c.name().into())
    };
    let serial = opts
        .serial_consistency
        .unwrap_or(Consistency::Serial.code());
    BTreeMap::from([
        ("consistency_level".to_string(), name(opts.consistency)),
        ("serial_consistency_level".to_string(), name(serial)),
    ])
}

/// A bound value as the CQL literal of its marker's type.
fn bound_literal(spec: &ColumnSpec, value: &BoundValue) -> String {
    let text = match value {
        BoundValue::Null => "null".to_string(),
        BoundValue::Unset => "unset".to_string(),
        BoundValue::Value(bytes) => match codec::deserialize(&spec.ty, bytes) {
            Ok(v) => literal::to_cql_literal(&v),
            Err(_) => format!("0x{}", hex(bytes)),
        },
    };
    match text.char_indices().nth(BOUND_VALUE_CHARS_MAX) {
        Some((cut, _)) => format!("{}...'", &text[..cut]),
        None => text,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use varve_types::CqlType;

    fn spec(name: &str, ty: CqlType) -> ColumnSpec {
        ColumnSpec {
            keyspace: "ks".into(),
            table: "t".into(),
            name: name.into(),
            ty,
        }
    }

    fn opts(values: Vec<BoundValue>) -> QueryOptions {
        QueryOptions {
            values,
            page_size: Some(5000),
            consistency: Consistency::LocalOne.code(),
            ..QueryOptions::default()
        }
    }

    #[test]
    fn a_query_records_its_text_levels_and_page_size() {
        let r = query("SELECT * FROM t", &opts(vec![]));
        assert_eq!(r.kind, "Execute CQL3 query");
        let p: Vec<(&str, &str)> = r
            .parameters
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            p,
            [
                ("consistency_level", "LOCAL_ONE"),
                ("page_size", "5000"),
                ("query", "SELECT * FROM t"),
                ("serial_consistency_level", "SERIAL"),
            ]
        );
        let unpaged = QueryOptions {
            page_size: None,
            ..opts(vec![])
        };
        assert!(!query("x", &unpaged).parameters.contains_key("page_size"));
    }

    #[test]
    fn an_execute_records_bound_values_as_literals() {
        let specs = [spec("k", CqlType::Int), spec("v", CqlType::Text)];
        let values = vec![
            BoundValue::Value(Bytes::from_static(&[0, 0, 0, 2])),
            BoundValue::Value(Bytes::from_static(b"it's")),
        ];
        let r = execute(Some(("INSERT ...", &specs)), &opts(values));
        assert_eq!(r.kind, "Execute CQL3 prepared query");
        assert_eq!(r.parameters["bound_var_0_k"], "2");
        assert_eq!(r.parameters["bound_var_1_v"], "'it''s'");
        assert_eq!(r.parameters["query"], "INSERT ...");
        let nulls = execute(
            Some(("q", &specs)),
            &opts(vec![BoundValue::Null, BoundValue::Unset]),
        );
        assert_eq!(nulls.parameters["bound_var_0_k"], "null");
        assert_eq!(nulls.parameters["bound_var_1_v"], "unset");
    }

    #[test]
    fn long_and_malformed_values_are_cut_or_shown_as_bytes() {
        let long = vec![BoundValue::Value(Bytes::from(vec![b'x'; 3000]))];
        let specs = [spec("v", CqlType::Text)];
        let r = execute(Some(("q", &specs)), &opts(long));
        let shown = &r.parameters["bound_var_0_v"];
        assert_eq!(shown.chars().count(), BOUND_VALUE_CHARS_MAX + 4);
        assert!(shown.ends_with("xx...'"));
        let bad = vec![BoundValue::Value(Bytes::from_static(&[1, 2, 3]))];
        let r = execute(Some(("q", &[spec("k", CqlType::Int)])), &opts(bad));
        assert_eq!(r.parameters["bound_var_0_k"], "0x010203");
    }

    #[test]
    fn batches_and_prepares_record_what_cassandra_records() {
        let b = batch(&opts(vec![]));
        assert_eq!(b.kind, "Execute batch of CQL3 queries");
        assert_eq!(
            b.parameters.keys().collect::<Vec<_>>(),
            ["consistency_level", "serial_consistency_level"]
        );
        assert_eq!(prepare("SELECT 1").parameters["query"], "SELECT 1");
    }
}
