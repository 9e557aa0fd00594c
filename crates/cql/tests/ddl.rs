//! Golden tests: keyspace and table DDL, USE, TRUNCATE, types, and the
//! statements recognised as unsupported.

mod common;
use common::*;

fn props_map(pairs: &[(&str, &str)]) -> PropertyValue {
    PropertyValue::Map(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

/// The schema from the seed document (its compaction class name was cut
/// off mid-word there; restored here).
const SEED_KEYSPACE: &str = "CREATE KEYSPACE tlp_stress
WITH replication = {'class': 'NetworkTopologyStrategy', 'DC1': '3'}
AND durable_writes = true;";

const SEED_TABLE: &str = "CREATE TABLE tlp_stress.keyvaluelargeblob_2 (
    key text,
    column_0 blob,
    column_1 blob,
    value blob,
    PRIMARY KEY (key, column_0, column_1)
) WITH CLUSTERING ORDER BY (column_0 ASC, column_1 ASC)
    AND additional_write_policy = '99p'
    AND bloom_filter_fp_chance = 0.01
    AND caching = {'keys': 'ALL', 'rows_per_partition': 'NONE'}
    AND cdc = false
    AND comment = ''
    AND compaction = {'class': 'org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy',
                      'max_threshold': '32', 'min_threshold': '4'}
    AND compression = {'chunk_length_in_kb': '16',
                       'class': 'org.apache.cassandra.io.compress.LZ4Compressor'}
    AND crc_check_chance = 1.0
    AND default_time_to_live = 0
    AND extensions = {}
    AND gc_grace_seconds = 864000
    AND max_index_interval = 2048
    AND memtable_flush_period_in_ms = 0
    AND min_index_interval = 128
    AND read_repair = 'BLOCKING'
    AND speculative_retry = '99p';";

#[test]
fn seed_schema_parses_in_full() {
    assert_eq!(
        stmt(SEED_KEYSPACE),
        Statement::CreateKeyspace(CreateKeyspace {
            name: "tlp_stress".into(),
            if_not_exists: false,
            properties: vec![
                (
                    "replication".into(),
                    props_map(&[("class", "NetworkTopologyStrategy"), ("DC1", "3")])
                ),
                ("durable_writes".into(), PropertyValue::Boolean(true)),
            ],
        })
    );
    let Statement::CreateTable(t) = stmt(SEED_TABLE) else {
        panic!()
    };
    assert_eq!(t.name, qname("tlp_stress", "keyvaluelargeblob_2"));
    assert_eq!(
        t.columns,
        vec![
            cdef("key", CqlType::Text),
            cdef("column_0", CqlType::Blob),
            cdef("column_1", CqlType::Blob),
            cdef("value", CqlType::Blob),
        ]
    );
    assert_eq!(t.partition_key, strings(&["key"]));
    assert_eq!(t.clustering_key, strings(&["column_0", "column_1"]));
    assert_eq!(
        t.clustering_order,
        vec![
            ("column_0".into(), Order::Asc),
            ("column_1".into(), Order::Asc)
        ]
    );
    let num = |n: &str| PropertyValue::Number(n.into());
    let string = |v: &str| PropertyValue::String(v.into());
    let expected: Vec<(String, PropertyValue)> = vec![
        ("additional_write_policy", string("99p")),
        ("bloom_filter_fp_chance", num("0.01")),
        (
            "caching",
            props_map(&[("keys", "ALL"), ("rows_per_partition", "NONE")]),
        ),
        ("cdc", PropertyValue::Boolean(false)),
        ("comment", string("")),
        (
            "compaction",
            props_map(&[
                (
                    "class",
                    "org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy",
                ),
                ("max_threshold", "32"),
                ("min_threshold", "4"),
            ]),
        ),
        (
            "compression",
            props_map(&[
                ("chunk_length_in_kb", "16"),
                ("class", "org.apache.cassandra.io.compress.LZ4Compressor"),
            ]),
        ),
        ("crc_check_chance", num("1.0")),
        ("default_time_to_live", num("0")),
        ("extensions", props_map(&[])),
        ("gc_grace_seconds", num("864000")),
        ("max_index_interval", num("2048")),
        ("memtable_flush_period_in_ms", num("0")),
        ("min_index_interval", num("128")),
        ("read_repair", string("BLOCKING")),
        ("speculative_retry", string("99p")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(t.properties, expected);
    assert!(!t.compact_storage);
}

fn table(columns: Vec<ColumnDef>, pk: &[&str], ck: &[&str]) -> CreateTable {
    CreateTable {
        name: name("t"),
        if_not_exists: false,
        columns,
        partition_key: strings(pk),
        clustering_key: strings(ck),
        clustering_order: vec![],
        compact_storage: false,
        properties: vec![],
    }
}

#[test]
fn create_table_forms() {
    let ints = |names: &[&str]| {
        names
            .iter()
            .map(|n| cdef(n, CqlType::Int))
            .collect::<Vec<_>>()
    };
    golden(vec![
        ("CREATE TABLE t (k int PRIMARY KEY, v int)", Statement::CreateTable(table(ints(&["k", "v"]), &["k"], &[]))),
        (
            "CREATE COLUMNFAMILY IF NOT EXISTS t (a int, b int, c int, d int, PRIMARY KEY ((a, b), c, d),)",
            Statement::CreateTable(CreateTable {
                if_not_exists: true,
                ..table(ints(&["a", "b", "c", "d"]), &["a", "b"], &["c", "d"])
            }),
        ),
        (
            "CREATE TABLE t (k int, s int STATIC, c counter, PRIMARY KEY (k)) WITH COMPACT STORAGE \
             AND CLUSTERING ORDER BY (c DESC) AND comment = 'x' AND speculative_retry = NONE",
            Statement::CreateTable(CreateTable {
                compact_storage: true,
                clustering_order: vec![("c".into(), Order::Desc)],
                properties: vec![
                    ("comment".into(), PropertyValue::String("x".into())),
                    ("speculative_retry".into(), PropertyValue::Identifier("none".into())),
                ],
                ..table(
                    vec![
                        cdef("k", CqlType::Int),
                        ColumnDef { name: "s".into(), ty: CqlType::Int, is_static: true },
                        cdef("c", CqlType::Counter),
                    ],
                    &["k"],
                    &[],
                )
            }),
        ),
    ]);
    assert_eq!(
        err_kind("CREATE TABLE t (k int, v int)"),
        ParseErrorKind::Invalid
    );
    assert_eq!(
        err_kind("CREATE TABLE t (k int PRIMARY KEY, v int, PRIMARY KEY (v))"),
        ParseErrorKind::Invalid
    );
    assert_eq!(
        err_kind("CREATE TABLE t (k int PRIMARY KEY, v list<myudt>)"),
        ParseErrorKind::Invalid
    );
    assert_eq!(
        err_kind("CREATE TABLE t (k int PRIMARY KEY) WITH a = 1 AND a = 2"),
        ParseErrorKind::Syntax
    );
}

#[test]
fn keyspace_and_misc_golden() {
    let repl = props_map(&[("class", "SimpleStrategy"), ("replication_factor", "1")]);
    golden(vec![
        ("USE ks", Statement::Use("ks".into())),
        ("use \"MyKs\";", Statement::Use("MyKs".into())),
        (
            "CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
            Statement::CreateKeyspace(CreateKeyspace {
                name: "ks".into(),
                if_not_exists: true,
                properties: vec![("replication".into(), repl.clone())],
            }),
        ),
        (
            "ALTER KEYSPACE IF EXISTS ks WITH durable_writes = false",
            Statement::AlterKeyspace(AlterKeyspace {
                name: "ks".into(),
                if_exists: true,
                properties: vec![("durable_writes".into(), PropertyValue::Boolean(false))],
            }),
        ),
        (
            "CREATE SCHEMA ks WITH caching = {'enabled': true, 'n': -1.5, 'i': 10} AND x = -3",
            Statement::CreateKeyspace(CreateKeyspace {
                name: "ks".into(),
                if_not_exists: false,
                properties: vec![
                    ("caching".into(), props_map(&[("enabled", "true"), ("n", "-1.5"), ("i", "10")])),
                    ("x".into(), PropertyValue::Number("-3".into())),
                ],
            }),
        ),
        ("DROP KEYSPACE ks", Statement::DropKeyspace { name: "ks".into(), if_exists: false }),
        ("DROP SCHEMA IF EXISTS ks", Statement::DropKeyspace { name: "ks".into(), if_exists: true }),
        ("DROP TABLE IF EXISTS ks.t", Statement::DropTable { name: qname("ks", "t"), if_exists: true }),
        ("TRUNCATE t", Statement::Truncate(name("t"))),
        ("TRUNCATE TABLE ks.t", Statement::Truncate(qname("ks", "t"))),
    ]);
}

#[test]
fn alter_table_golden() {
    let alter = |op| {
        Statement::AlterTable(AlterTable {
            name: name("t"),
            if_exists: false,
            op,
        })
    };
    golden(vec![
        (
            "ALTER TABLE t ADD v int",
            alter(AlterTableOp::Add {
                if_not_exists: false,
                columns: vec![cdef("v", CqlType::Int)],
            }),
        ),
        (
            "ALTER TABLE t ADD IF NOT EXISTS (a int, b text)",
            alter(AlterTableOp::Add {
                if_not_exists: true,
                columns: vec![cdef("a", CqlType::Int), cdef("b", CqlType::Text)],
            }),
        ),
        (
            "ALTER TABLE t DROP v",
            alter(AlterTableOp::Drop {
                if_exists: false,
                columns: strings(&["v"]),
                timestamp: None,
            }),
        ),
        (
            "ALTER TABLE t DROP (v, w) USING TIMESTAMP 1234",
            alter(AlterTableOp::Drop {
                if_exists: false,
                columns: strings(&["v", "w"]),
                timestamp: Some(1234),
            }),
        ),
        (
            "ALTER TABLE t DROP IF EXISTS (a, b)",
            alter(AlterTableOp::Drop {
                if_exists: true,
                columns: strings(&["a", "b"]),
                timestamp: None,
            }),
        ),
        (
            "ALTER TABLE t RENAME IF EXISTS a TO b AND c TO d",
            alter(AlterTableOp::Rename {
                if_exists: true,
                renames: vec![("a".into(), "b".into()), ("c".into(), "d".into())],
            }),
        ),
        (
            "ALTER TABLE t ALTER v TYPE blob",
            alter(AlterTableOp::AlterType {
                column: "v".into(),
                ty: CqlType::Blob,
            }),
        ),
        (
            "ALTER TABLE t WITH comment = 'c' AND gc_grace_seconds = 10",
            alter(AlterTableOp::With(vec![
                ("comment".into(), PropertyValue::String("c".into())),
                (
                    "gc_grace_seconds".into(),
                    PropertyValue::Number("10".into()),
                ),
            ])),
        ),
    ]);
    let Statement::AlterTable(a) = stmt("ALTER TABLE IF EXISTS ks.t DROP v") else {
        panic!()
    };
    assert!(a.if_exists);
}

#[test]
fn unsupported_statements() {
    let cases = [
        ("CREATE INDEX ON t (v)", "secondary indexes"),
        ("CREATE CUSTOM INDEX i ON t (v) USING 'x'", "secondary indexes"),
        ("DROP INDEX i", "secondary indexes"),
        ("CREATE MATERIALIZED VIEW v AS SELECT ...", "materialized views"),
        ("DROP MATERIALIZED VIEW v", "materialized views"),
        ("CREATE OR REPLACE FUNCTION f (a int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE java AS $$ return a; $$", "user-defined functions"),
        ("CREATE AGGREGATE a (int) SFUNC f STYPE int", "user-defined functions"),
        ("DROP FUNCTION f", "user-defined functions"),
        ("CREATE TRIGGER tr ON t USING 'c'", "triggers"),
    ];
    for (text, feature) in cases {
        assert_eq!(stmt(text), Statement::Unsupported(feature.into()), "{text}");
    }
}

#[test]
fn types() {
    use varve_cql::parse_type;
    let cases = vec![
        ("int", CqlType::Int),
        ("VARCHAR", CqlType::Text),
        ("text", CqlType::Text),
        ("counter", CqlType::Counter),
        ("list<int>", list(CqlType::Int)),
        ("set<text>", set(CqlType::Text)),
        ("map<text, int>", map(CqlType::Text, CqlType::Int)),
        (
            "frozen<map<text, int>>",
            frozen(map(CqlType::Text, CqlType::Int)),
        ),
        ("list<frozen<list<int>>>", list(frozen(list(CqlType::Int)))),
        (
            "tuple<int, text>",
            CqlType::Tuple(vec![CqlType::Int, CqlType::Text]),
        ),
        ("frozen<tuple<int>>", CqlType::Tuple(vec![CqlType::Int])),
        (
            "tuple<int, list<int>>",
            CqlType::Tuple(vec![CqlType::Int, frozen(list(CqlType::Int))]),
        ),
        (
            "map<frozen<set<int>>, tuple<int>>",
            map(
                frozen(set(CqlType::Int)),
                CqlType::Tuple(vec![CqlType::Int]),
            ),
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(parse_type(text), Ok(expected), "{text}");
    }
    // Marshal class names are the types they stand for.
    assert_eq!(
        parse_type("'org.apache.cassandra.db.marshal.MapType(UTF8Type,ListType(Int32Type))'"),
        Ok(map(CqlType::Text, frozen(list(CqlType::Int))))
    );
    let errors = [
        ("list<list<int>>", ParseErrorKind::Unsupported),
        ("list<address>", ParseErrorKind::Invalid),
        // Cassandra has no such class; it has this one, but Varve no type for it.
        ("'org.apache.Custom'", ParseErrorKind::Syntax),
        (
            "'UserType(ks,61,62:Int32Type)'",
            ParseErrorKind::Unsupported,
        ),
        ("'ListType(CounterColumnType)'", ParseErrorKind::Invalid),
        ("'SetType(DurationType)'", ParseErrorKind::Invalid),
        ("frozen<int>", ParseErrorKind::Invalid),
        ("list<counter>", ParseErrorKind::Invalid),
        ("set<duration>", ParseErrorKind::Invalid),
        ("map<duration, int>", ParseErrorKind::Invalid),
        ("tuple<counter>", ParseErrorKind::Invalid),
        ("map<int>", ParseErrorKind::Syntax),
        ("list<int", ParseErrorKind::Syntax),
        ("list<int> x", ParseErrorKind::Syntax),
        ("", ParseErrorKind::Syntax),
        ("select", ParseErrorKind::Syntax),
    ];
    for (text, kind) in errors {
        assert_eq!(parse_type(text).map_err(|e| e.kind), Err(kind), "{text}");
    }
    let e = parse_type("list<list<int>>").unwrap_err();
    assert_eq!(
        e.message,
        "Non-frozen collections are not allowed inside collections: list<list<int>>"
    );
    assert_eq!(
        parse_type("map<text, addr>").unwrap_err().message,
        "Non-frozen UDTs are not allowed inside collections: map<text, addr>"
    );
    let udt = |ks: Option<&str>, name: &str| {
        CqlType::UserRef(varve_types::UserTypeRef {
            keyspace: ks.map(str::to_string),
            name: name.into(),
        })
    };
    assert_eq!(parse_type("address"), Ok(udt(None, "address")));
    assert_eq!(parse_type("\"Address\""), Ok(udt(None, "Address")));
    assert_eq!(parse_type("ks.a"), Ok(udt(Some("ks"), "a")));
    assert_eq!(parse_type("frozen<a>"), Ok(frozen(udt(None, "a"))));
    assert_eq!(
        parse_type("list<frozen<a>>"),
        Ok(list(frozen(udt(None, "a"))))
    );
    assert_eq!(
        parse_type("tuple<int, a>"),
        Ok(CqlType::Tuple(vec![CqlType::Int, frozen(udt(None, "a"))]))
    );
}

#[test]
fn vector_types() {
    use varve_cql::parse_type;
    let vector = |t: CqlType, n: usize| CqlType::Vector(Box::new(t), n);
    let cases = vec![
        ("vector<float, 3>", vector(CqlType::Float, 3)),
        ("VECTOR<text,1>", vector(CqlType::Text, 1)),
        ("frozen<vector<float, 3>>", vector(CqlType::Float, 3)),
        ("vector<list<int>, 2>", vector(list(CqlType::Int), 2)),
        (
            "vector<vector<int, 2>, 2>",
            vector(vector(CqlType::Int, 2), 2),
        ),
        ("list<vector<int, 2>>", list(vector(CqlType::Int, 2))),
        (
            "vector<float, 2147483647>",
            vector(CqlType::Float, 2147483647),
        ),
        // Cassandra 5.0.4 takes these too.
        ("vector<counter, 2>", vector(CqlType::Counter, 2)),
        (
            "set<vector<duration, 1>>",
            set(vector(CqlType::Duration, 1)),
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(parse_type(text), Ok(expected), "{text}");
    }
    // Marshal class names are the types they stand for.
    assert_eq!(
        parse_type("'org.apache.cassandra.db.marshal.MapType(UTF8Type,ListType(Int32Type))'"),
        Ok(map(CqlType::Text, frozen(list(CqlType::Int))))
    );
    for (text, kind, message) in [
        (
            "vector<float, 0>",
            ParseErrorKind::Invalid,
            "vectors may only have positive dimensions; given 0",
        ),
        (
            "vector<float, -1>",
            ParseErrorKind::Invalid,
            "vectors may only have positive dimensions; given -1",
        ),
        (
            "vector<float, 2147483648>",
            ParseErrorKind::Syntax,
            "NumberFormatException",
        ),
        ("vector<float>", ParseErrorKind::Syntax, "expecting ','"),
        (
            "vector<float, x>",
            ParseErrorKind::Syntax,
            "expecting INTEGER",
        ),
        (
            "vector<float, 2, 3>",
            ParseErrorKind::Syntax,
            "expecting '>'",
        ),
    ] {
        let e = parse_type(text).unwrap_err();
        assert_eq!(e.kind, kind, "{text}");
        assert!(e.message.contains(message), "{text}: {}", e.message);
    }
}

#[test]
fn type_statements() {
    use varve_cql::ast::{AlterTypeOp, CreateType};
    let name = |ks: Option<&str>, n: &str| QualifiedName {
        keyspace: ks.map(str::to_string),
        name: n.into(),
    };
    assert_eq!(
        stmt("CREATE TYPE IF NOT EXISTS ks.addr (street text, \"Zip\" int)"),
        Statement::CreateType(CreateType {
            name: name(Some("ks"), "addr"),
            if_not_exists: true,
            fields: vec![
                ("street".into(), CqlType::Text),
                ("Zip".into(), CqlType::Int)
            ],
        })
    );
    let Statement::AlterType(a) = stmt("ALTER TYPE addr ADD IF NOT EXISTS c text") else {
        panic!("not ALTER TYPE");
    };
    assert_eq!(
        a.op,
        AlterTypeOp::Add {
            if_not_exists: true,
            field: "c".into(),
            ty: CqlType::Text
        }
    );
    let Statement::AlterType(a) = stmt("ALTER TYPE IF EXISTS addr RENAME a TO b AND c TO d") else {
        panic!("not ALTER TYPE");
    };
    assert!(a.if_exists);
    assert_eq!(
        a.op,
        AlterTypeOp::Rename {
            if_exists: false,
            renames: vec![("a".into(), "b".into()), ("c".into(), "d".into())]
        }
    );
    assert_eq!(
        stmt("DROP TYPE IF EXISTS addr"),
        Statement::DropType {
            name: name(None, "addr"),
            if_exists: true
        }
    );
    for bad in [
        "CREATE TYPE text (a int)",
        "CREATE TYPE ks.int (a int)",
        "CREATE TYPE t ()",
    ] {
        assert_eq!(err_kind(bad), ParseErrorKind::Syntax, "{bad}");
    }
}

#[test]
fn a_reversed_clustering_type_implies_a_descending_order() {
    let reversed =
        "'org.apache.cassandra.db.marshal.ReversedType(org.apache.cassandra.db.marshal.Int32Type)'";
    let Statement::CreateTable(t) = stmt(&format!(
        "CREATE TABLE t (k int, a int, c {reversed}, v int, PRIMARY KEY (k, a, c))"
    )) else {
        panic!("not a CREATE TABLE")
    };
    assert_eq!(t.columns[2].ty, CqlType::Int);
    assert_eq!(
        t.clustering_order,
        vec![
            ("a".to_string(), Order::Asc),
            ("c".to_string(), Order::Desc)
        ]
    );
    // An explicit order is kept as written; a regular column is its type.
    let Statement::CreateTable(t) = stmt(&format!(
        "CREATE TABLE t (k int, c {reversed}, v {reversed}, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c ASC)"
    )) else {
        panic!("not a CREATE TABLE")
    };
    assert_eq!(t.clustering_order, vec![("c".to_string(), Order::Asc)]);
    assert_eq!(t.columns[2].ty, CqlType::Int);
}
