//! Golden tests: INSERT, UPDATE, DELETE and BATCH.

mod common;
use common::*;

fn insert(cols: &[&str], values: Vec<Term>) -> Insert {
    Insert {
        table: name("t"),
        columns: strings(cols),
        values,
        json: None,
        json_default_unset: false,
        using: Using::default(),
        conditions: Conditions::None,
    }
}

#[test]
fn insert_golden() {
    golden(vec![
        (
            "INSERT INTO t (k, \"Value\", key) VALUES (1, 'a', ?)",
            Statement::Insert(insert(
                &["k", "Value", "key"],
                vec![int("1"), s("a"), bind(0)],
            )),
        ),
        (
            "insert into t (k) values (1) IF NOT EXISTS USING TTL 10 AND TIMESTAMP 123;",
            Statement::Insert(Insert {
                conditions: Conditions::IfNotExists,
                using: Using {
                    ttl: Some(int("10")),
                    timestamp: Some(int("123")),
                },
                ..insert(&["k"], vec![int("1")])
            }),
        ),
        (
            "INSERT INTO t (k) VALUES (1) USING TIMESTAMP ? AND TTL ? IF NOT EXISTS",
            Statement::Insert(Insert {
                conditions: Conditions::IfNotExists,
                using: Using {
                    ttl: Some(bind(1)),
                    timestamp: Some(bind(0)),
                },
                ..insert(&["k"], vec![int("1")])
            }),
        ),
        (
            "INSERT INTO t JSON '{\"k\": 1}'",
            Statement::Insert(Insert {
                json: Some(s("{\"k\": 1}")),
                ..insert(&[], vec![])
            }),
        ),
        (
            "INSERT INTO t JSON ? DEFAULT NULL USING TTL 5",
            Statement::Insert(Insert {
                json: Some(bind(0)),
                using: Using {
                    ttl: Some(int("5")),
                    timestamp: None,
                },
                ..insert(&[], vec![])
            }),
        ),
        (
            "INSERT INTO t JSON '{}' DEFAULT UNSET IF NOT EXISTS",
            Statement::Insert(Insert {
                json: Some(s("{}")),
                json_default_unset: true,
                conditions: Conditions::IfNotExists,
                ..insert(&[], vec![])
            }),
        ),
    ]);
    assert_eq!(
        err_kind("INSERT INTO t JSON '{}' DEFAULT nothing"),
        ParseErrorKind::Syntax
    );
    assert_eq!(
        err_kind("INSERT INTO t (a, b) VALUES (1)"),
        ParseErrorKind::Invalid
    );
}

fn update(assignments: Vec<Assignment>) -> Statement {
    Statement::Update(Update {
        table: name("t"),
        using: Using::default(),
        assignments,
        where_clause: vec![eq("k", int("0"))],
        conditions: Conditions::None,
    })
}

#[test]
fn assignments() {
    let cases: Vec<(&str, Assignment)> = vec![
        (
            "c = 1",
            Assignment::Set {
                column: "c".into(),
                value: int("1"),
            },
        ),
        (
            "c['k'] = 1",
            Assignment::SetElement {
                column: "c".into(),
                key: s("k"),
                value: int("1"),
            },
        ),
        (
            "l[0] = 'x'",
            Assignment::SetElement {
                column: "l".into(),
                key: int("0"),
                value: s("x"),
            },
        ),
        (
            "c = c + 1",
            Assignment::Add {
                column: "c".into(),
                value: int("1"),
            },
        ),
        (
            "c = c + {'a'}",
            Assignment::Add {
                column: "c".into(),
                value: Term::Set(vec![s("a")]),
            },
        ),
        (
            "c = [1] + c",
            Assignment::Prepend {
                column: "c".into(),
                value: Term::List(vec![int("1")]),
            },
        ),
        (
            "c = c - {'a'}",
            Assignment::Remove {
                column: "c".into(),
                value: Term::Set(vec![s("a")]),
            },
        ),
        (
            "c = c -1",
            Assignment::Remove {
                column: "c".into(),
                value: int("1"),
            },
        ),
        (
            "c += 2",
            Assignment::Add {
                column: "c".into(),
                value: int("2"),
            },
        ),
        (
            "c -= ?",
            Assignment::Remove {
                column: "c".into(),
                value: bind(0),
            },
        ),
        (
            "\"C\" = \"C\" + 1",
            Assignment::Add {
                column: "C".into(),
                value: int("1"),
            },
        ),
        (
            "ttl = now()",
            Assignment::Set {
                column: "ttl".into(),
                value: func("now", vec![]),
            },
        ),
    ];
    for (text, expected) in cases {
        let full = format!("UPDATE t SET {text} WHERE k = 0");
        assert_eq!(stmt(&full), update(vec![expected]), "{text}");
    }
    assert_eq!(
        err_kind("UPDATE t SET a = b + 1 WHERE k = 0"),
        ParseErrorKind::Invalid
    );
    assert_eq!(
        err_kind("UPDATE t SET a = 1 + b WHERE k = 0"),
        ParseErrorKind::Invalid
    );
    assert_eq!(
        err_kind("UPDATE t SET a = b WHERE k = 0"),
        ParseErrorKind::Syntax
    );
    assert_eq!(
        err_kind("UPDATE t SET a = a WHERE k = 0"),
        ParseErrorKind::Syntax
    );
    assert_eq!(
        err_kind("UPDATE t SET a.f + 1 WHERE k = 0"),
        ParseErrorKind::Syntax
    );
}

#[test]
fn update_golden() {
    let st = stmt(
        "UPDATE ks.t USING TTL 100 AND TIMESTAMP 5 SET a = 1, b = b + 2 \
         WHERE k = 0 AND c IN (1, 2) IF a = 1 AND m['x'] != null AND b IN (1, 2)",
    );
    let expected = Statement::Update(Update {
        table: qname("ks", "t"),
        using: Using {
            ttl: Some(int("100")),
            timestamp: Some(int("5")),
        },
        assignments: vec![
            Assignment::Set {
                column: "a".into(),
                value: int("1"),
            },
            Assignment::Add {
                column: "b".into(),
                value: int("2"),
            },
        ],
        where_clause: vec![
            eq("k", int("0")),
            rel(
                col("c"),
                Operator::In,
                Term::Tuple(vec![int("1"), int("2")]),
            ),
        ],
        conditions: Conditions::If(vec![
            Condition {
                column: "a".into(),
                element: None,
                field: None,
                op: Operator::Eq,
                rhs: int("1"),
            },
            Condition {
                column: "m".into(),
                element: Some(s("x")),
                field: None,
                op: Operator::Ne,
                rhs: Term::Literal(Literal::Null),
            },
            Condition {
                column: "b".into(),
                element: None,
                field: None,
                op: Operator::In,
                rhs: Term::Tuple(vec![int("1"), int("2")]),
            },
        ]),
    });
    assert_eq!(st, expected);
    let Statement::Update(u) = stmt("UPDATE t SET a = 1 WHERE k = 0 IF EXISTS") else {
        panic!()
    };
    assert_eq!(u.conditions, Conditions::IfExists);
    // A column named `exists` in a condition.
    let Statement::Update(u) = stmt("UPDATE t SET a = 1 WHERE k = 0 IF exists = 1") else {
        panic!()
    };
    assert!(matches!(u.conditions, Conditions::If(_)));
}

#[test]
fn delete_golden() {
    let target = |c: &str, e: Option<Term>| DeleteTarget {
        column: c.into(),
        element: e,
        field: None,
    };
    golden(vec![
        (
            "DELETE FROM t WHERE k = 0",
            Statement::Delete(Delete {
                table: name("t"),
                targets: vec![],
                using: Using::default(),
                where_clause: vec![eq("k", int("0"))],
                conditions: Conditions::None,
            }),
        ),
        (
            "DELETE a, m['k'], l[0] FROM t USING TIMESTAMP 7 WHERE k = 0 AND c > 1 IF EXISTS",
            Statement::Delete(Delete {
                table: name("t"),
                targets: vec![
                    target("a", None),
                    target("m", Some(s("k"))),
                    target("l", Some(int("0"))),
                ],
                using: Using {
                    ttl: None,
                    timestamp: Some(int("7")),
                },
                where_clause: vec![eq("k", int("0")), rel(col("c"), Operator::Gt, int("1"))],
                conditions: Conditions::IfExists,
            }),
        ),
    ]);
    assert_eq!(
        err_kind("DELETE FROM t USING TTL 5 WHERE k = 0"),
        ParseErrorKind::Syntax
    );
}

#[test]
fn batch_golden() {
    let st = stmt(
        "BEGIN UNLOGGED BATCH USING TIMESTAMP 9 \
           INSERT INTO t (k) VALUES (?); \
           UPDATE t SET v = ? WHERE k = ? \
           DELETE FROM t WHERE k = ?; \
         APPLY BATCH;",
    );
    let Statement::Batch(b) = st else {
        panic!("{st:?}")
    };
    assert_eq!(b.kind, BatchKind::Unlogged);
    assert_eq!(b.using.timestamp, Some(int("9")));
    assert_eq!(b.statements.len(), 3);
    assert!(matches!(b.statements[2], Statement::Delete(_)));
    let p = parse("BEGIN BATCH INSERT INTO t (k) VALUES (?) APPLY BATCH").unwrap();
    assert_eq!(p.bind_markers.len(), 1);
    let Statement::Batch(b) =
        stmt("begin counter batch update t set c = c + 1 where k = 1 apply batch")
    else {
        panic!()
    };
    assert_eq!(b.kind, BatchKind::Counter);
    let Statement::Batch(b) = stmt("BEGIN BATCH APPLY BATCH") else {
        panic!()
    };
    assert_eq!((b.kind, b.statements.len()), (BatchKind::Logged, 0));
    assert_eq!(
        err_kind("BEGIN BATCH USING TTL 5 APPLY BATCH"),
        ParseErrorKind::Invalid
    );
    assert_eq!(
        err_kind("BEGIN BATCH SELECT * FROM t APPLY BATCH"),
        ParseErrorKind::Syntax
    );
    assert_eq!(
        err_kind("BEGIN BATCH INSERT INTO t (k) VALUES (1)"),
        ParseErrorKind::Syntax
    );
}

#[test]
fn user_type_fields_in_writes() {
    let Statement::Update(u) = stmt("UPDATE t SET a.zip = 2 WHERE k = 0 IF a.zip = 1") else {
        panic!()
    };
    assert_eq!(
        u.assignments,
        vec![Assignment::SetField {
            column: "a".into(),
            field: "zip".into(),
            value: int("2")
        }]
    );
    let Conditions::If(c) = u.conditions else {
        panic!()
    };
    assert_eq!(c[0].field.as_deref(), Some("zip"));
    let Statement::Delete(d) = stmt("DELETE a.\"Zip\", m['k'] FROM t WHERE k = 0") else {
        panic!()
    };
    assert_eq!(d.targets[0].field.as_deref(), Some("Zip"));
    assert_eq!(d.targets[1].field, None);
}
