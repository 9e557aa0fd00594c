//! Arithmetic in terms: values of INSERT and UPDATE, and of WHERE. The
//! operation is typed against its receiver (the column), each operand is
//! evaluated as a value of its parameter's type, and the result is given
//! to the receiver.

use super::{apply, resolve, Operand, Signature};
use crate::context::Ctx;
use crate::error::{QueryError, Result};
use crate::terms::{eval, Evaluated};
use varve_cql::ast::{ArithOp, Term};
use varve_types::{codec, CqlType, Value};

/// How the resolver sees a term.
pub fn operand(term: &Term) -> Operand {
    match term {
        Term::Literal(lit) => Operand::Literal(lit.clone()),
        Term::Bind(_) => Operand::Bind,
        Term::Cast { ty, .. } => Operand::Typed(ty.clone()),
        Term::Operation { op, left, right } => {
            Operand::Op(*op, Box::new(operand(left)), Box::new(operand(right)))
        }
        Term::Negate(x) => Operand::Neg(Box::new(operand(x))),
        Term::Tuple(items) if items.len() == 1 => operand(&items[0]),
        Term::FunctionCall { .. } => Operand::Typed(crate::functions::natural_type(term)),
        _ => Operand::Unfit,
    }
}

/// The overload of `left op right` given to a receiver of type `ty`.
pub fn signature(op: ArithOp, left: &Term, right: &Term, ty: &CqlType) -> Result<Signature> {
    resolve(op, &operand(left), &operand(right), Some(ty))
}

/// Cassandra's name of argument `i` of an operation, which names a bind
/// marker given to it.
pub fn argument_name(function: &str, i: usize) -> String {
    format!("arg{i}(system.{function})")
}

/// A one-element tuple as an operand is the parenthesised term.
pub fn ungrouped(term: &Term) -> &Term {
    match term {
        Term::Tuple(items) if items.len() == 1 => &items[0],
        other => other,
    }
}

fn operand_value(
    ctx: &Ctx,
    term: &Term,
    ty: &CqlType,
    function: &str,
    i: usize,
) -> Result<Option<Value>> {
    match eval(ctx, ungrouped(term), ty, &argument_name(function, i))? {
        Evaluated::Value(v) => Ok(Some(v)),
        Evaluated::Null => Ok(None),
        Evaluated::Unset => Err(QueryError::Invalid(format!(
            "Invalid unset value for argument in call to function {function}"
        ))),
    }
}

/// Evaluates `left op right` as a value for `name` of type `ty`.
pub fn eval_operation(
    ctx: &Ctx,
    op: ArithOp,
    left: &Term,
    right: &Term,
    ty: &CqlType,
    name: &str,
) -> Result<Evaluated> {
    let sig = signature(op, left, right, ty)?;
    let function = op.function_name();
    let l = operand_value(ctx, left, &sig.left, function, 0)?;
    let r = operand_value(ctx, right, &sig.right, function, 1)?;
    match apply(op, &sig, l.as_ref(), r.as_ref())? {
        None => Ok(Evaluated::Null),
        Some(v) => given_to(v, &sig.result, ty, name).map(Evaluated::Value),
    }
}

/// A result of type `from` as a value of the receiver's type `to` (the
/// same bytes: an int result for a varint column, a bigint for a
/// timestamp).
fn given_to(v: Value, from: &CqlType, to: &CqlType, name: &str) -> Result<Value> {
    if from == to.unfrozen() {
        return Ok(v);
    }
    codec::deserialize(to.unfrozen(), &codec::serialize(&v)).map_err(|_| {
        QueryError::Invalid(format!(
            "Type error: cannot assign a value of type {from} to {name} of type {to}"
        ))
    })
}
