//! Golden tests: DESCRIBE / DESC.

mod common;
use common::*;

#[test]
fn describe_golden() {
    let d = Statement::Describe;
    golden(vec![
        ("DESCRIBE CLUSTER", d(Describe::Cluster)),
        ("desc keyspaces", d(Describe::Keyspaces)),
        ("DESCRIBE SCHEMA", d(Describe::Schema { full: false })),
        ("DESCRIBE FULL SCHEMA;", d(Describe::Schema { full: true })),
        (
            "DESCRIBE KEYSPACE",
            d(Describe::Keyspace {
                name: None,
                only: false,
            }),
        ),
        (
            "DESCRIBE KEYSPACE ks",
            d(Describe::Keyspace {
                name: Some("ks".into()),
                only: false,
            }),
        ),
        (
            "DESC ONLY KEYSPACE \"Ks\"",
            d(Describe::Keyspace {
                name: Some("Ks".into()),
                only: true,
            }),
        ),
        ("DESCRIBE TABLES", d(Describe::Tables)),
        ("DESCRIBE TABLE ks.t", d(Describe::Table(qname("ks", "t")))),
        ("DESCRIBE COLUMNFAMILY t", d(Describe::Table(name("t")))),
        ("DESCRIBE TYPES", d(Describe::Types)),
        ("DESCRIBE FUNCTIONS", d(Describe::Functions)),
        ("DESCRIBE AGGREGATES", d(Describe::Aggregates)),
        ("DESCRIBE ks", d(Describe::Name(name("ks")))),
        ("DESCRIBE ks.t", d(Describe::Name(qname("ks", "t")))),
        ("DESCRIBE only", d(Describe::Name(name("only")))),
        ("DESCRIBE type", d(Describe::Name(name("type")))),
        (
            "DESCRIBE TYPE ks.addr",
            Statement::Describe(Describe::Type(qname("ks", "addr"))),
        ),
        (
            "DESCRIBE INDEX i",
            Statement::Unsupported("secondary indexes".into()),
        ),
        (
            "DESCRIBE MATERIALIZED VIEW v",
            Statement::Unsupported("materialized views".into()),
        ),
    ]);
    assert_eq!(
        err_kind("DESCRIBE KEYSPACE ks WITH INTERNALS"),
        ParseErrorKind::Unsupported
    );
    assert_eq!(err_kind("DESCRIBE"), ParseErrorKind::Syntax);
}
