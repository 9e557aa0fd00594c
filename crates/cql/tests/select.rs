//! Golden tests: SELECT statements, selectors, relations and literals.

mod common;
use common::*;

#[test]
fn select_golden() {
    let base = |sel| select(name("t"), sel);
    golden(vec![
        (
            "SELECT * FROM t",
            Statement::Select(base(Selection::Wildcard)),
        ),
        (
            "select * from KS.Tab;",
            Statement::Select(select(qname("ks", "tab"), Selection::Wildcard)),
        ),
        (
            r#"SELECT "Key", value, key FROM "MyKs"."T""#,
            Statement::Select(select(
                qname("MyKs", "T"),
                items(vec![scol("Key"), scol("value"), scol("key")]),
            )),
        ),
        (
            "SELECT json FROM t",
            Statement::Select(base(items(vec![scol("json")]))),
        ),
        (
            "SELECT distinct, ttl FROM t",
            Statement::Select(base(items(vec![scol("distinct"), scol("ttl")]))),
        ),
        (
            "SELECT JSON * FROM t",
            Statement::Select(Select {
                json: true,
                ..base(Selection::Wildcard)
            }),
        ),
        (
            "SELECT DISTINCT k FROM t",
            Statement::Select(Select {
                distinct: true,
                ..base(items(vec![scol("k")]))
            }),
        ),
        (
            "SELECT JSON DISTINCT json FROM t",
            Statement::Select(Select {
                json: true,
                distinct: true,
                ..base(items(vec![scol("json")]))
            }),
        ),
    ]);
}

#[test]
fn selectors() {
    let st = stmt(
        "SELECT count(*), COUNT(1), count(c), writetime(v) AS wt, ttl(v), toTimestamp(now()), \
         token(k), CAST(v AS text), 'lit', ?, max(v) FROM t",
    );
    let Statement::Select(sel) = st else { panic!() };
    let Selection::Items(items) = sel.selection else {
        panic!()
    };
    let exprs: Vec<_> = items.iter().map(|s| s.expr.clone()).collect();
    assert_eq!(
        exprs,
        vec![
            SelectorExpr::CountStar,
            SelectorExpr::CountStar,
            SelectorExpr::FunctionCall {
                name: "count".into(),
                args: vec![scol("c")]
            },
            SelectorExpr::WriteTime("v".into()),
            SelectorExpr::Ttl("v".into()),
            SelectorExpr::FunctionCall {
                name: "totimestamp".into(),
                args: vec![SelectorExpr::FunctionCall {
                    name: "now".into(),
                    args: vec![]
                }],
            },
            SelectorExpr::FunctionCall {
                name: "token".into(),
                args: vec![scol("k")]
            },
            SelectorExpr::Cast {
                expr: Box::new(scol("v")),
                ty: CqlType::Text
            },
            SelectorExpr::Term(s("lit")),
            SelectorExpr::Term(bind(0)),
            SelectorExpr::FunctionCall {
                name: "max".into(),
                args: vec![scol("v")]
            },
        ]
    );
    assert_eq!(items[3].alias.as_deref(), Some("wt"));
}

#[test]
fn clauses() {
    let st = stmt(
        "SELECT * FROM t WHERE k = 1 AND c > 2 GROUP BY k, c ORDER BY c DESC, d \
         PER PARTITION LIMIT 3 LIMIT ? ALLOW FILTERING",
    );
    let expected = Select {
        where_clause: vec![eq("k", int("1")), rel(col("c"), Operator::Gt, int("2"))],
        group_by: vec![
            SelectorExpr::Column("k".into()),
            SelectorExpr::Column("c".into()),
        ],
        order_by: vec![("c".into(), Order::Desc), ("d".into(), Order::Asc)],
        per_partition_limit: Some(int("3")),
        limit: Some(bind(0)),
        allow_filtering: true,
        ..select(name("t"), Selection::Wildcard)
    };
    assert_eq!(st, Statement::Select(expected));
}

fn where_of(text: &str) -> Vec<Relation> {
    match stmt(text) {
        Statement::Select(s) => s.where_clause,
        other => panic!("{other:?}"),
    }
}

#[test]
fn relations() {
    let cases: Vec<(&str, Relation)> = vec![
        ("a = 1", eq("a", int("1"))),
        ("a != 1", rel(col("a"), Operator::Ne, int("1"))),
        ("a < 1", rel(col("a"), Operator::Lt, int("1"))),
        ("a <= 1", rel(col("a"), Operator::Le, int("1"))),
        ("a >= 1", rel(col("a"), Operator::Ge, int("1"))),
        (
            "a IN (1, 2)",
            rel(
                col("a"),
                Operator::In,
                Term::Tuple(vec![int("1"), int("2")]),
            ),
        ),
        ("a IN ()", rel(col("a"), Operator::In, Term::Tuple(vec![]))),
        ("a IN ?", rel(col("a"), Operator::In, bind(0))),
        ("a IN :vals", rel(col("a"), Operator::In, bind(0))),
        (
            "(a, b) = (1, 2)",
            rel(
                RelationLhs::Columns(strings(&["a", "b"])),
                Operator::Eq,
                Term::Tuple(vec![int("1"), int("2")]),
            ),
        ),
        (
            "(a, b) > ?",
            rel(
                RelationLhs::Columns(strings(&["a", "b"])),
                Operator::Gt,
                bind(0),
            ),
        ),
        (
            "(a, b) IN ((1, 2), (3, 4))",
            rel(
                RelationLhs::Columns(strings(&["a", "b"])),
                Operator::In,
                Term::Tuple(vec![
                    Term::Tuple(vec![int("1"), int("2")]),
                    Term::Tuple(vec![int("3"), int("4")]),
                ]),
            ),
        ),
        (
            "token(a, b) > token(?, ?)",
            rel(
                RelationLhs::Token(strings(&["a", "b"])),
                Operator::Gt,
                func("token", vec![bind(0), bind(1)]),
            ),
        ),
        (
            "TOKEN(k) <= -5",
            rel(RelationLhs::Token(strings(&["k"])), Operator::Le, int("-5")),
        ),
        (
            "token(k) > token('x')",
            rel(
                RelationLhs::Token(strings(&["k"])),
                Operator::Gt,
                func("token", vec![s("x")]),
            ),
        ),
        (
            "token(k) >= ?",
            rel(RelationLhs::Token(strings(&["k"])), Operator::Ge, bind(0)),
        ),
        ("c CONTAINS 1", rel(col("c"), Operator::Contains, int("1"))),
        (
            "c CONTAINS KEY 'k'",
            rel(col("c"), Operator::ContainsKey, s("k")),
        ),
        (
            "key CONTAINS 'v'",
            rel(col("key"), Operator::Contains, s("v")),
        ),
        (
            "m['k'] = 3",
            rel(
                RelationLhs::MapElement {
                    column: "m".into(),
                    key: s("k"),
                },
                Operator::Eq,
                int("3"),
            ),
        ),
        (
            "c IS NOT NULL",
            rel(col("c"), Operator::IsNot, Term::Literal(Literal::Null)),
        ),
        ("c LIKE 'a%'", rel(col("c"), Operator::Like, s("a%"))),
    ];
    for (text, expected) in cases {
        let full = format!("SELECT * FROM t WHERE {text}");
        assert_eq!(where_of(&full), vec![expected], "{text}");
    }
    // A column is not a term: it cannot be the right-hand side.
    assert_eq!(
        err_kind("SELECT * FROM t WHERE key CONTAINS key"),
        ParseErrorKind::Syntax
    );
}

#[test]
fn literal_kinds() {
    let uuid = [
        0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd,
        0xef,
    ];
    let lit = |l| Term::Literal(l);
    let cases: Vec<(&str, Term)> = vec![
        ("'it''s'", s("it's")),
        ("$$dollar 'quoted'$$", s("dollar 'quoted'")),
        ("42", int("42")),
        ("-42", int("-42")),
        (
            "123456789012345678901234567890",
            int("123456789012345678901234567890"),
        ),
        ("1.5", float("1.5")),
        ("-2.5e10", float("-2.5e10")),
        ("1E5", float("1E5")),
        ("NaN", float("NaN")),
        ("Infinity", float("Infinity")),
        ("-Infinity", float("-Infinity")),
        ("- 3", int("-3")),
        ("true", lit(Literal::Boolean(true))),
        ("FALSE", lit(Literal::Boolean(false))),
        ("null", lit(Literal::Null)),
        (
            "0xdeadBEEF",
            lit(Literal::Blob(vec![0xde, 0xad, 0xbe, 0xef])),
        ),
        ("0x", lit(Literal::Blob(vec![]))),
        (
            "01234567-89ab-cdef-0123-456789ABCDEF",
            lit(Literal::Uuid(uuid)),
        ),
        ("12h30m", lit(Literal::Duration("12h30m".into()))),
        ("1y2mo", lit(Literal::Duration("1y2mo".into()))),
        ("P1D", lit(Literal::Duration("P1D".into()))),
        ("PT2H", lit(Literal::Duration("PT2H".into()))),
        ("[1, 2]", Term::List(vec![int("1"), int("2")])),
        ("[]", Term::List(vec![])),
        ("{1, 2}", Term::Set(vec![int("1"), int("2")])),
        ("{}", Term::Map(vec![])),
        (
            "{'a': 1, 'b': 2}",
            Term::Map(vec![(s("a"), int("1")), (s("b"), int("2"))]),
        ),
        ("(1, 'x')", Term::Tuple(vec![int("1"), s("x")])),
        ("now()", func("now", vec![])),
        ("uuid()", func("uuid", vec![])),
        (
            "toTimestamp(now())",
            func("totimestamp", vec![func("now", vec![])]),
        ),
        (
            "minTimeuuid('2013-01-01')",
            func("mintimeuuid", vec![s("2013-01-01")]),
        ),
        ("system.now()", func("system.now", vec![])),
        (
            "(bigint) 5",
            Term::Cast {
                ty: CqlType::BigInt,
                term: Box::new(int("5")),
            },
        ),
        (
            "(list<int>) [1]",
            Term::Cast {
                ty: list(CqlType::Int),
                term: Box::new(Term::List(vec![int("1")])),
            },
        ),
        ("-?", Term::Negate(Box::new(bind(0)))),
        ("{?: :v}", Term::Map(vec![(bind(0), bind(1))])),
    ];
    for (text, expected) in cases {
        let full = format!("SELECT * FROM t WHERE c = {text}");
        assert_eq!(where_of(&full), vec![eq("c", expected)], "{text}");
    }
}

#[test]
fn bind_markers_are_numbered_in_text_order() {
    let p =
        parse("SELECT * FROM t WHERE a = ? AND b = :Name AND c IN (?, :\"Q\") LIMIT :lim").unwrap();
    assert_eq!(
        p.bind_markers,
        vec![
            None,
            Some("name".into()),
            None,
            Some("Q".into()),
            Some("lim".into())
        ]
    );
    let p = parse("UPDATE t USING TTL ? SET v = ? WHERE k = ?").unwrap();
    let Statement::Update(u) = p.statement else {
        panic!()
    };
    assert_eq!(u.using.ttl, Some(bind(0)));
    assert_eq!(u.where_clause, vec![eq("k", bind(2))]);
}

#[test]
fn comments_anywhere() {
    let text = "-- leading\nSELECT /* inline */ * // trailing\nFROM t -- end\n; /* after */";
    assert_eq!(
        stmt(text),
        Statement::Select(select(name("t"), Selection::Wildcard))
    );
}

/// ScyllaDB's `USING TIMEOUT`, which its drivers add to metadata SELECTs
/// once Varve offers a ScyllaDB extension: a duration is accepted and
/// dropped; anything else after it is an error.
#[test]
fn scylla_using_timeout_is_accepted_and_dropped() {
    let plain = stmt("SELECT keyspace_name FROM system_schema.scylla_keyspaces");
    let timed =
        stmt("SELECT keyspace_name FROM system_schema.scylla_keyspaces USING TIMEOUT 2000ms");
    assert_eq!(timed, plain);
    let limited = stmt("SELECT * FROM t WHERE k = 1 LIMIT 3 ALLOW FILTERING USING TIMEOUT 5s");
    assert_eq!(
        limited,
        stmt("SELECT * FROM t WHERE k = 1 LIMIT 3 ALLOW FILTERING")
    );
    assert!(varve_cql::parse("SELECT * FROM t USING TIMEOUT 5").is_err());
    assert!(varve_cql::parse("SELECT * FROM t USING TIMEOUT ?").is_err());
    assert!(varve_cql::parse("SELECT * FROM t USING TTL 5").is_err());
}

#[test]
fn user_type_fields_and_literals() {
    let Statement::Select(sel) = stmt("SELECT a.zip, a.\"In\".x FROM t") else {
        panic!()
    };
    let Selection::Items(items) = sel.selection else {
        panic!()
    };
    let field = |e: SelectorExpr, f: &str| SelectorExpr::Field {
        expr: Box::new(e),
        field: f.into(),
    };
    assert_eq!(items[0].expr, field(scol("a"), "zip"));
    assert_eq!(items[1].expr, field(field(scol("a"), "In"), "x"));
    let Statement::Select(sel) = stmt("SELECT writetime(a.zip), ttl(a.\"Z\") FROM t") else {
        panic!()
    };
    let Selection::Items(items) = sel.selection else {
        panic!()
    };
    let meta = |f: &str, ttl| SelectorExpr::FieldWriteTime {
        column: "a".into(),
        field: f.into(),
        ttl,
    };
    assert_eq!(items[0].expr, meta("zip", false));
    assert_eq!(items[1].expr, meta("Z", true));
    let Statement::Insert(ins) = stmt("INSERT INTO t (k, a) VALUES (1, {street: 'x', \"Zip\": ?})")
    else {
        panic!()
    };
    assert_eq!(
        ins.values[1],
        Term::UserType(vec![("street".into(), s("x")), ("Zip".into(), bind(0))])
    );
    // A map literal keeps its terms: a string or a literal word is no name.
    let Statement::Insert(ins) = stmt("INSERT INTO t (k, m) VALUES (1, {'a': 1, true: 2})") else {
        panic!()
    };
    assert!(matches!(ins.values[1], Term::Map(_)));
}

#[test]
fn collection_elements_and_slices() {
    let Statement::Select(sel) =
        stmt("SELECT m['a'], s[1..2], m[..?], m[?..], writetime(m['a']), maxwritetime(m), ttl(s[1..]) FROM t")
    else {
        panic!()
    };
    let Selection::Items(items) = sel.selection else {
        panic!()
    };
    let elem = |key| SelectorExpr::Element {
        expr: Box::new(scol("m")),
        key,
    };
    let slice = |c: &str, from, to| SelectorExpr::Slice {
        expr: Box::new(scol(c)),
        from,
        to,
    };
    let info = |kind, arg| SelectorExpr::CellInfo {
        kind,
        arg: Box::new(arg),
    };
    assert_eq!(items[0].expr, elem(s("a")));
    assert_eq!(items[1].expr, slice("s", Some(int("1")), Some(int("2"))));
    assert_eq!(items[2].expr, slice("m", None, Some(bind(0))));
    assert_eq!(items[3].expr, slice("m", Some(bind(1)), None));
    assert_eq!(items[4].expr, info(CellInfoKind::WriteTime, elem(s("a"))));
    assert_eq!(items[5].expr, info(CellInfoKind::MaxWriteTime, scol("m")));
    assert_eq!(
        items[6].expr,
        info(CellInfoKind::Ttl, slice("s", Some(int("1")), None))
    );
    // Plain writetime() keeps its own variant.
    let Statement::Select(sel) = stmt("SELECT writetime(v), ttl(v) FROM t") else {
        panic!()
    };
    let Selection::Items(items) = sel.selection else {
        panic!()
    };
    assert_eq!(items[0].expr, SelectorExpr::WriteTime("v".into()));
    assert_eq!(items[1].expr, SelectorExpr::Ttl("v".into()));
    for bad in [
        "SELECT m[..] FROM t",
        "SELECT m['a'..'b'..'c'] FROM t",
        "SELECT m[] FROM t",
    ] {
        assert!(varve_cql::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn several_operations_on_one_column() {
    for ok in [
        "UPDATE t SET m['a'] = 1, m['b'] = 2 WHERE k = 1",
        "UPDATE t SET l = l + [1], l = l + [2] WHERE k = 1",
        "UPDATE t SET s = s + {1}, s = s - {2} WHERE k = 1",
        "UPDATE t SET l = [0] + l, l[1] = 2 WHERE k = 1",
        "UPDATE t SET u.a = 1, u.b = 2 WHERE k = 1",
    ] {
        assert!(varve_cql::parse(ok).is_ok(), "{ok}");
    }
    for bad in [
        "UPDATE t SET m = {'x': 1}, m['y'] = 2 WHERE k = 1",
        "UPDATE t SET m['y'] = 2, m = {'x': 1} WHERE k = 1",
        "UPDATE t SET v = 1, v = 2 WHERE k = 1",
        "UPDATE t SET s = {1}, s = s + {2} WHERE k = 1",
        "UPDATE t SET u.a = 1, u.a = 2 WHERE k = 1",
    ] {
        let err = varve_cql::parse(bad).unwrap_err();
        assert_eq!(err.kind, ParseErrorKind::Syntax, "{bad}");
        assert!(
            err.message
                .starts_with("Multiple incompatible setting of column "),
            "{bad}: {}",
            err.message
        );
    }
}

#[test]
fn group_by_may_end_with_a_function_call() {
    let st = stmt("SELECT count(*) FROM t GROUP BY k, floor(t, 1h)");
    let Statement::Select(s) = st else {
        panic!("not a select")
    };
    assert_eq!(s.group_by.len(), 2);
    assert_eq!(s.group_by[0], SelectorExpr::Column("k".into()));
    assert!(
        matches!(&s.group_by[1], SelectorExpr::FunctionCall { name, args } if name == "floor" && args.len() == 2)
    );
}
