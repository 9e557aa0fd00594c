//! The point-lookup shortcut of [`analyse`] against the general analysis.

use super::*;
use crate::api::{BoundValue, QueryOptions};
use varve_cql::ast::Statement;
use varve_schema::table::TableSpec;

fn table(pk: &[(&str, CqlType)], ck: &[(&str, CqlType)]) -> Table {
    let mut columns: Vec<(String, CqlType, bool)> = pk
        .iter()
        .chain(ck)
        .map(|(n, t)| (n.to_string(), t.clone(), false))
        .collect();
    columns.push(("v".into(), CqlType::Text, false));
    Table::create(TableSpec {
        keyspace: "ks".into(),
        name: "t".into(),
        id: 1,
        columns,
        partition_key: pk.iter().map(|(n, _)| n.to_string()).collect(),
        clustering: ck.iter().map(|(n, _)| (n.to_string(), false)).collect(),
        options: Default::default(),
    })
    .unwrap()
}

pub(super) fn where_clause(cql: &str) -> Vec<Relation> {
    match varve_cql::parse(cql).unwrap().statement {
        Statement::Select(s) => s.where_clause,
        other => panic!("not a SELECT: {other:?}"),
    }
}

/// Runs `f` with a context holding `values`.
pub(super) fn with_ctx<R>(values: &[BoundValue], f: impl FnOnce(&Ctx) -> R) -> R {
    let opts = QueryOptions::default();
    let ctx = Ctx {
        schema: Arc::new(varve_schema::Schema::default()),
        creator: None,
        values: values.to_vec(),
        keyspace: Some("ks".into()),
        opts: &opts,
        timestamp_micros: 0,
        now_seconds: 0,
        warnings: Vec::new(),
        allow_filtering: true,
        read_shape: None,
    };
    f(&ctx)
}

/// Both analyses of `cql` with `values` bound: results (or errors) as text.
fn both(table: &Table, cql: &str, values: &[BoundValue]) -> (String, String) {
    let rels = where_clause(cql);
    with_ctx(values, |ctx| {
        (
            format!("{:?}", analyse(ctx, table, &rels)),
            format!("{:?}", analyse_all(ctx, table, &rels)),
        )
    })
}

/// Whether [`analyse`] takes the shortcut for `cql` on `table`.
fn shortcut(table: &Table, cql: &str, values: &[BoundValue]) -> bool {
    let rels = where_clause(cql);
    with_ctx(values, |ctx| single_key(ctx, table, &rels).is_some())
}

fn value(b: &[u8]) -> BoundValue {
    BoundValue::Value(Bytes::copy_from_slice(b))
}

/// Point lookups by marker and by literal, on tables with and without
/// clustering columns, with good and bad keys: the shortcut gives what the
/// general analysis gives, error messages included.
#[test]
fn the_single_key_shortcut_agrees_with_the_general_analysis() {
    let blob = table(&[("k", CqlType::Blob)], &[]);
    let int_ck = table(&[("k", CqlType::Int)], &[("c", CqlType::Int)]);
    let text = table(
        &[("k", CqlType::Text)],
        &[("c", CqlType::Int), ("d", CqlType::Text)],
    );
    let too_long = vec![7u8; MAX_KEY_BYTES + 1];
    let longest = vec![7u8; MAX_KEY_BYTES];
    let cases: Vec<(&Table, &str, Vec<BoundValue>)> = vec![
        (&blob, "SELECT * FROM t WHERE k = ?", vec![value(b"key")]),
        (&blob, "SELECT * FROM t WHERE k = ?", vec![value(b"")]),
        (&blob, "SELECT * FROM t WHERE k = ?", vec![value(&longest)]),
        (&blob, "SELECT * FROM t WHERE k = ?", vec![value(&too_long)]),
        (&blob, "SELECT * FROM t WHERE k = ?", vec![BoundValue::Null]),
        (
            &blob,
            "SELECT * FROM t WHERE k = ?",
            vec![BoundValue::Unset],
        ),
        (&blob, "SELECT * FROM t WHERE k = ?", vec![]),
        (&blob, "SELECT * FROM t WHERE k = 0x0102", vec![]),
        (&int_ck, "SELECT * FROM t WHERE k = 5", vec![]),
        (
            &int_ck,
            "SELECT * FROM t WHERE k = ?",
            vec![value(&[0, 0, 0, 9])],
        ),
        (&int_ck, "SELECT * FROM t WHERE k = ?", vec![value(&[1, 2])]),
        (&int_ck, "SELECT * FROM t WHERE k = 'text'", vec![]),
        (&text, "SELECT * FROM t WHERE k = 'a'", vec![]),
        (
            &text,
            "SELECT * FROM t WHERE k = ?",
            vec![value(&[0xff, 0xfe])],
        ),
    ];
    for (t, cql, values) in &cases {
        assert!(shortcut(t, cql, values), "{cql} should take the shortcut");
        let (fast, general) = both(t, cql, values);
        assert_eq!(fast, general, "{cql} with {values:?}");
    }
}

/// Anything but one EQ on the only partition key column takes the general
/// path.
#[test]
fn other_where_clauses_take_the_general_path() {
    let single = table(&[("k", CqlType::Int)], &[("c", CqlType::Int)]);
    let composite = table(&[("a", CqlType::Int), ("b", CqlType::Int)], &[]);
    for (t, cql) in [
        (&single, "SELECT * FROM t WHERE k IN (1, 2)"),
        (&single, "SELECT * FROM t WHERE k = 1 AND c = 2"),
        (&single, "SELECT * FROM t WHERE c = 2"),
        (&single, "SELECT * FROM t WHERE v = 'x'"),
        (&single, "SELECT * FROM t WHERE token(k) = 5"),
        (&single, "SELECT * FROM t WHERE nope = 1"),
        (&single, "SELECT * FROM t"),
        (&composite, "SELECT * FROM t WHERE a = 1"),
        (&composite, "SELECT * FROM t WHERE a = 1 AND b = 2"),
    ] {
        assert!(!shortcut(t, cql, &[]), "{cql}");
    }
}

/// A table `t (k int, c int, s set<int>, m map<int, int>, PRIMARY KEY (k, c))`.
fn collections_table() -> Table {
    let set = CqlType::Set(Box::new(CqlType::Int));
    let map = CqlType::Map(Box::new(CqlType::Int), Box::new(CqlType::Int));
    Table::create(TableSpec {
        keyspace: "ks".into(),
        name: "t".into(),
        id: 1,
        columns: vec![
            ("k".into(), CqlType::Int, false),
            ("c".into(), CqlType::Int, false),
            ("s".into(), set, false),
            ("m".into(), map, false),
        ],
        partition_key: vec!["k".into()],
        clustering: vec![("c".into(), false)],
        options: Default::default(),
    })
    .unwrap()
}

/// CONTAINS and CONTAINS KEY refuse a null or unset value, literal or bound,
/// with Cassandra's message (it once became a filter without a value, which
/// panicked when a row was tested).
#[test]
fn contains_null_is_an_invalid_request() {
    let t = collections_table();
    let cases: [(&str, Vec<BoundValue>, &str); 5] = [
        (
            "SELECT * FROM t WHERE s CONTAINS NULL ALLOW FILTERING",
            vec![],
            "null value for column s",
        ),
        (
            "SELECT * FROM t WHERE m CONTAINS NULL ALLOW FILTERING",
            vec![],
            "null value for column m",
        ),
        (
            "SELECT * FROM t WHERE m CONTAINS KEY NULL ALLOW FILTERING",
            vec![],
            "null value for column m",
        ),
        (
            "SELECT * FROM t WHERE k = 1 AND s CONTAINS ? ALLOW FILTERING",
            vec![BoundValue::Null],
            "null value for column s",
        ),
        (
            "SELECT * FROM t WHERE s CONTAINS ? ALLOW FILTERING",
            vec![BoundValue::Unset],
            "unset value for column s",
        ),
    ];
    for (cql, values, what) in cases {
        let rels = where_clause(cql);
        let got = with_ctx(&values, |ctx| analyse(ctx, &t, &rels));
        match got {
            Err(QueryError::Invalid(m)) => assert_eq!(m, format!("Unsupported {what}"), "{cql}"),
            other => panic!("{cql}: {other:?}"),
        }
    }
}
