//! Arithmetic selectors (`a + b`, `c * 2`, `-d`, `ts + 1d`): typed with no
//! receiver, so each operand keeps its own type and a literal its
//! preferred one, and compiled to a call of the operation function
//! (`_add`, ..., `_negate`), which aggregation, element binding and
//! evaluation already know. The column is named as Cassandra names it:
//! `left op right`, `-x`, parentheses kept.

use super::selectors::{compile_expr, constant, literal_text, Sel};
use crate::arith::{self, Operand};
use crate::error::Result;
use varve_cql::ast::{ArithOp, SelectorExpr, Term};
use varve_schema::Table;
use varve_types::CqlType;

/// An operand: compiled already, or a literal waiting for its type.
enum Side<'a> {
    Compiled(Box<Sel>, String, CqlType),
    Literal(&'a Term, String),
}

fn side<'a>(table: &Table, expr: &'a SelectorExpr) -> Result<Side<'a>> {
    match expr {
        SelectorExpr::Term(t @ Term::Literal(lit)) => Ok(Side::Literal(t, literal_text(lit))),
        SelectorExpr::Paren(inner) => Ok(match side(table, inner)? {
            Side::Literal(t, name) => Side::Literal(t, format!("({name})")),
            Side::Compiled(sel, name, ty) => Side::Compiled(sel, format!("({name})"), ty),
        }),
        // A marker takes its type from the operation: the resolver finds
        // it ambiguous unless the other side decides.
        SelectorExpr::Term(t @ Term::Bind(_)) => Ok(Side::Literal(t, "?".into())),
        other => {
            let (sel, name, ty) = compile_expr(table, other)?;
            Ok(Side::Compiled(Box::new(sel), name, ty))
        }
    }
}

impl Side<'_> {
    fn operand(&self) -> Operand {
        match self {
            Side::Compiled(_, _, ty) => Operand::Typed(ty.clone()),
            Side::Literal(Term::Literal(lit), _) => Operand::Literal(lit.clone()),
            Side::Literal(..) => Operand::Bind,
        }
    }

    fn name(&self) -> &str {
        match self {
            Side::Compiled(_, name, _) | Side::Literal(_, name) => name,
        }
    }

    /// The compiled operand, a literal as a value of `ty`.
    fn compile(self, ty: &CqlType) -> Result<Sel> {
        match self {
            Side::Compiled(sel, _, _) => Ok(*sel),
            Side::Literal(term, _) => constant(term, ty.clone()).map(|(sel, _, _)| sel),
        }
    }
}

pub fn compile_operation(
    table: &Table,
    op: ArithOp,
    left: &SelectorExpr,
    right: &SelectorExpr,
) -> Result<(Sel, String, CqlType)> {
    let (l, r) = (side(table, left)?, side(table, right)?);
    let name = format!("{} {} {}", l.name(), op.symbol(), r.name());
    let sig = arith::resolve_named(
        op,
        &l.operand(),
        &r.operand(),
        None,
        Some((l.name(), r.name())),
    )?;
    let function = format!("system.{}", op.function_name());
    let args = vec![
        l.compile(&sig.left)?.into_argument(0, &function),
        r.compile(&sig.right)?.into_argument(1, &function),
    ];
    let sel = Sel::Func {
        name: op.function_name().into(),
        args,
    };
    Ok((sel, name, sig.result))
}

pub fn compile_negation(table: &Table, x: &SelectorExpr) -> Result<(Sel, String, CqlType)> {
    let x = side(table, x)?;
    let name = format!("-{}", x.name());
    let sig = arith::resolve_negation(&x.operand(), None)?;
    let sel = Sel::Func {
        name: arith::NEGATE.into(),
        args: vec![x
            .compile(&sig.left)?
            .into_argument(0, &format!("system.{}", arith::NEGATE))],
    };
    Ok((sel, name, sig.result))
}
