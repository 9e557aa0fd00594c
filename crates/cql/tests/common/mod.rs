//! Shorthand constructors for the golden tests' expected trees.
#![allow(dead_code)]

pub use varve_cql::ast::*;
pub use varve_cql::{parse, ParseErrorKind};
pub use varve_types::CqlType;

pub fn stmt(text: &str) -> Statement {
    match parse(text) {
        Ok(p) => p.statement,
        Err(e) => panic!("{text:?} failed: {e}"),
    }
}

/// Asserts each (input, expected statement) pair.
pub fn golden(cases: Vec<(&str, Statement)>) {
    for (text, expected) in cases {
        assert_eq!(stmt(text), expected, "input: {text}");
    }
}

pub fn name(n: &str) -> QualifiedName {
    QualifiedName {
        keyspace: None,
        name: n.into(),
    }
}

pub fn qname(ks: &str, n: &str) -> QualifiedName {
    QualifiedName {
        keyspace: Some(ks.into()),
        name: n.into(),
    }
}

pub fn s(v: &str) -> Term {
    Term::Literal(Literal::String(v.into()))
}

pub fn int(v: &str) -> Term {
    Term::Literal(Literal::Integer(v.into()))
}

pub fn float(v: &str) -> Term {
    Term::Literal(Literal::Float(v.into()))
}

pub fn bind(i: usize) -> Term {
    Term::Bind(i)
}

pub fn col(c: &str) -> RelationLhs {
    RelationLhs::Column(c.into())
}

pub fn rel(lhs: RelationLhs, op: Operator, rhs: Term) -> Relation {
    Relation { lhs, op, rhs }
}

pub fn eq(c: &str, rhs: Term) -> Relation {
    rel(col(c), Operator::Eq, rhs)
}

pub fn func(n: &str, args: Vec<Term>) -> Term {
    Term::FunctionCall {
        name: n.into(),
        args,
    }
}

pub fn select(table: QualifiedName, selection: Selection) -> Select {
    Select {
        table,
        json: false,
        distinct: false,
        selection,
        where_clause: vec![],
        group_by: vec![],
        order_by: vec![],
        per_partition_limit: None,
        limit: None,
        allow_filtering: false,
    }
}

pub fn items(exprs: Vec<SelectorExpr>) -> Selection {
    Selection::Items(
        exprs
            .into_iter()
            .map(|expr| Selector { expr, alias: None })
            .collect(),
    )
}

pub fn scol(c: &str) -> SelectorExpr {
    SelectorExpr::Column(c.into())
}

pub fn cdef(n: &str, ty: CqlType) -> ColumnDef {
    ColumnDef {
        name: n.into(),
        ty,
        is_static: false,
    }
}

pub fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

pub fn list(t: CqlType) -> CqlType {
    CqlType::List(Box::new(t))
}

pub fn set(t: CqlType) -> CqlType {
    CqlType::Set(Box::new(t))
}

pub fn map(k: CqlType, v: CqlType) -> CqlType {
    CqlType::Map(Box::new(k), Box::new(v))
}

pub fn frozen(t: CqlType) -> CqlType {
    CqlType::Frozen(Box::new(t))
}

pub fn err_kind(text: &str) -> ParseErrorKind {
    match parse(text) {
        Ok(p) => panic!("{text:?} parsed: {p:?}"),
        Err(e) => e.kind,
    }
}
