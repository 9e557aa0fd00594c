//! Golden tests: arithmetic in terms and selectors (precedence, unary
//! minus, parentheses, list prepends), and nesting limits.

mod common;
use common::*;
use varve_cql::ast::{ArithOp, Assignment};

fn op(op: ArithOp, l: Term, r: Term) -> Term {
    Term::Operation {
        op,
        left: Box::new(l),
        right: Box::new(r),
    }
}

fn sop(op: ArithOp, l: SelectorExpr, r: SelectorExpr) -> SelectorExpr {
    SelectorExpr::Operation {
        op,
        left: Box::new(l),
        right: Box::new(r),
    }
}

fn where_rhs(text: &str) -> Term {
    match stmt(&format!("SELECT * FROM t WHERE c = {text}")) {
        Statement::Select(s) => s.where_clause[0].rhs.clone(),
        other => panic!("{other:?}"),
    }
}

fn selectors(text: &str) -> Vec<SelectorExpr> {
    match stmt(&format!("SELECT {text} FROM t")) {
        Statement::Select(s) => match s.selection {
            Selection::Items(items) => items.into_iter().map(|i| i.expr).collect(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

#[test]
fn terms_multiply_before_they_add_left_to_right() {
    use ArithOp::*;
    let cases = vec![
        ("1 + 2", op(Add, int("1"), int("2"))),
        ("1 + 2 * 3", op(Add, int("1"), op(Mul, int("2"), int("3")))),
        ("1 - 2 - 3", op(Sub, op(Sub, int("1"), int("2")), int("3"))),
        ("4 / 2 % 3", op(Mod, op(Div, int("4"), int("2")), int("3"))),
        (
            "1 * (2 + 3)",
            op(Mul, int("1"), op(Add, int("2"), int("3"))),
        ),
        ("-? + 1", op(Add, Term::Negate(Box::new(bind(0))), int("1"))),
        ("1 - -1", op(Sub, int("1"), int("-1"))),
        (
            "(int)? + 1",
            op(
                Add,
                Term::Cast {
                    ty: CqlType::Int,
                    term: Box::new(bind(0)),
                },
                int("1"),
            ),
        ),
        (
            "'a' + 1d",
            op(Add, s("a"), Term::Literal(Literal::Duration("1d".into()))),
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(where_rhs(text), expected, "{text}");
    }
}

#[test]
fn a_name_after_plus_is_a_prepend() {
    match stmt("UPDATE t SET l = [1 + 1] + l WHERE k = 0") {
        Statement::Update(u) => assert_eq!(
            u.assignments,
            vec![Assignment::Prepend {
                column: "l".into(),
                value: Term::List(vec![op(ArithOp::Add, int("1"), int("1"))]),
            }]
        ),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        stmt("UPDATE t SET c = c + 1 + 2 WHERE k = 0"),
        Statement::Update(u) if matches!(&u.assignments[0], Assignment::Add { value: Term::Operation { .. }, .. })
    ));
}

#[test]
fn selectors_keep_negations_and_parentheses() {
    use ArithOp::*;
    let neg = |e| SelectorExpr::Negate(Box::new(e));
    let paren = |e| SelectorExpr::Paren(Box::new(e));
    let lit = |v: &str| SelectorExpr::Term(int(v));
    assert_eq!(
        selectors("a + b * 2, -c, -(c + 1), (a) * 2, c - -1"),
        vec![
            sop(Add, scol("a"), sop(Mul, scol("b"), lit("2"))),
            neg(scol("c")),
            neg(paren(sop(Add, scol("c"), lit("1")))),
            sop(Mul, paren(scol("a")), lit("2")),
            sop(Sub, scol("c"), lit("-1")),
        ]
    );
    // `(type)` then a selector start is a cast, not a parenthesised name.
    assert_eq!(
        selectors("(tinyint)1 + a"),
        vec![sop(
            Add,
            SelectorExpr::Term(Term::Cast {
                ty: CqlType::TinyInt,
                term: Box::new(int("1"))
            }),
            scol("a")
        )]
    );
}

#[test]
fn a_negative_number_right_after_a_name_is_a_syntax_error() {
    // Cassandra's lexer takes `-1` as one number, as Varve's does.
    assert_eq!(err_kind("SELECT c -1 FROM t"), ParseErrorKind::Syntax);
    assert_eq!(
        err_kind("SELECT k FROM t LIMIT 1 + 1"),
        ParseErrorKind::Syntax
    );
    assert_eq!(
        err_kind("UPDATE t SET c = c * 2 WHERE k = 0"),
        ParseErrorKind::Syntax
    );
}

#[test]
fn long_chains_count_as_nesting() {
    let ok = vec!["1"; 60].join(" + ");
    assert!(matches!(
        stmt(&format!("SELECT * FROM t WHERE c = {ok}")),
        Statement::Select(_)
    ));
    let deep = vec!["1"; 10_000].join(" + ");
    assert_eq!(
        err_kind(&format!("SELECT * FROM t WHERE c = {deep}")),
        ParseErrorKind::Syntax
    );
    assert_eq!(
        err_kind(&format!("SELECT {deep} FROM t")),
        ParseErrorKind::Syntax
    );
    let product = vec!["c"; 10_000].join(" * ");
    assert_eq!(
        err_kind(&format!("SELECT {product} FROM t")),
        ParseErrorKind::Syntax
    );
}
