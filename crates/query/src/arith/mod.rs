//! Arithmetic operators (`+ - * / %`, unary `-`), typed and evaluated as
//! Cassandra 5.0's operation functions (`OperationFcts`): an operator is
//! an overloaded native function (`system._add`, ...), one per pair of
//! number types (the result as wide as the wider, floating if either is),
//! plus `timestamp/date +- duration` and `text + text`.
//!
//! Typing follows `FunctionResolver`: each overload whose result fits the
//! receiver (the column a term is for; none in a selection) is tested
//! against the operands; an exact match wins, a single weak match is
//! taken, several are ambiguous unless the receiver's own type pair is
//! among them and no operand is a bind marker. Literals have a preferred
//! type (an integer: int, bigint or varint by size; a float: double).

pub(crate) mod decimal;
pub mod terms;
pub mod values;

pub(crate) use values::add_months;

use crate::error::{QueryError, Result};
use varve_cql::ast::{ArithOp, Literal};
use varve_types::{CqlType, Value};

/// An operand as the resolver sees it.
#[derive(Debug, Clone)]
pub enum Operand {
    /// A value of a known type (a column, a cast, a typed selector).
    Typed(CqlType),
    Literal(Literal),
    /// A bind marker (or anything whose type comes from where it is used).
    Bind,
    /// A nested operation, typed against the parameter it is given to.
    Op(ArithOp, Box<Operand>, Box<Operand>),
    Neg(Box<Operand>),
    /// Something no operation takes (a collection literal, ...).
    Unfit,
}

/// One overload: `left op right -> result` (`right` is unused for `-x`).
#[derive(Debug, Clone, PartialEq)]
pub struct Signature {
    pub left: CqlType,
    pub right: CqlType,
    pub result: CqlType,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fit {
    Exact,
    Weak,
    No,
}

const NUMBERS: [CqlType; 9] = [
    CqlType::TinyInt,
    CqlType::SmallInt,
    CqlType::Int,
    CqlType::BigInt,
    CqlType::Float,
    CqlType::Double,
    CqlType::Decimal,
    CqlType::Varint,
    CqlType::Counter,
];

fn candidates(op: ArithOp) -> Vec<Signature> {
    let mut out = Vec::new();
    for l in &NUMBERS {
        for r in &NUMBERS {
            if let Some(result) = values::numeric_result(l, r) {
                out.push(Signature {
                    left: l.clone(),
                    right: r.clone(),
                    result,
                });
            }
        }
    }
    if matches!(op, ArithOp::Add | ArithOp::Sub) {
        for t in [CqlType::Timestamp, CqlType::Date] {
            out.push(Signature {
                left: t.clone(),
                right: CqlType::Duration,
                result: t,
            });
        }
    }
    if op == ArithOp::Add {
        for (l, r) in [
            (CqlType::Text, CqlType::Text),
            (CqlType::Text, CqlType::Ascii),
            (CqlType::Ascii, CqlType::Text),
            (CqlType::Ascii, CqlType::Ascii),
        ] {
            let result = if l == CqlType::Ascii && r == CqlType::Ascii {
                CqlType::Ascii
            } else {
                CqlType::Text
            };
            out.push(Signature {
                left: l,
                right: r,
                result,
            });
        }
    }
    out
}

/// Whether a value of `from` may be given where `to` is expected
/// (Cassandra's `isValueCompatibleWith`).
fn value_compatible(to: &CqlType, from: &CqlType) -> bool {
    to == from
        || matches!(
            (to, from),
            (CqlType::Text, CqlType::Ascii)
                | (CqlType::BigInt | CqlType::Counter, CqlType::Timestamp)
                | (CqlType::Timestamp, CqlType::BigInt)
                | (CqlType::Varint, CqlType::Int | CqlType::BigInt)
                | (CqlType::Blob, _)
        )
}

fn type_fit(ty: &CqlType, param: &CqlType) -> Fit {
    if ty.unfrozen() == param {
        Fit::Exact
    } else if value_compatible(param, ty.unfrozen()) {
        Fit::Weak
    } else {
        Fit::No
    }
}

/// The type a literal prefers (an exact match when a parameter has it).
fn preferred(lit: &Literal) -> Option<CqlType> {
    Some(match lit {
        Literal::Integer(s) => {
            if s.parse::<i32>().is_ok() {
                CqlType::Int
            } else if s.parse::<i64>().is_ok() {
                CqlType::BigInt
            } else {
                CqlType::Varint
            }
        }
        Literal::Float(_) => CqlType::Double,
        // Cassandra prefers ascii for a string that is all ASCII.
        Literal::String(s) if s.is_ascii() => CqlType::Ascii,
        Literal::String(_) => CqlType::Text,
        Literal::Boolean(_) => CqlType::Boolean,
        Literal::Uuid(_) => CqlType::Uuid,
        Literal::Blob(_) => CqlType::Blob,
        Literal::Duration(_) => CqlType::Duration,
        Literal::Null => return None,
    })
}

fn literal_fit(lit: &Literal, param: &CqlType) -> Fit {
    use CqlType as T;
    if preferred(lit).as_ref() == Some(param) {
        return Fit::Exact;
    }
    let weak = match lit {
        Literal::Null => !matches!(param, T::Counter),
        Literal::Integer(_) => matches!(
            param,
            T::TinyInt
                | T::SmallInt
                | T::Int
                | T::BigInt
                | T::Varint
                | T::Float
                | T::Double
                | T::Decimal
                | T::Counter
                | T::Date
                | T::Time
                | T::Timestamp
                | T::Duration
        ),
        Literal::Float(_) => matches!(param, T::Float | T::Double | T::Decimal),
        Literal::String(_) => matches!(
            param,
            T::Ascii | T::Text | T::Inet | T::Date | T::Time | T::Timestamp
        ),
        Literal::Uuid(_) => matches!(param, T::Timeuuid),
        _ => false,
    };
    if weak {
        Fit::Weak
    } else {
        Fit::No
    }
}

fn operand_fit(arg: &Operand, param: &CqlType) -> Fit {
    match arg {
        Operand::Typed(ty) => type_fit(ty, param),
        Operand::Literal(lit) => literal_fit(lit, param),
        Operand::Bind => Fit::Weak,
        Operand::Unfit => Fit::No,
        // A nested operation resolves against the parameter; when it
        // cannot, it is weak here and fails with its own error later.
        Operand::Op(..) | Operand::Neg(_) => match resolve_operand(arg, Some(param)) {
            Ok(sig) if &sig.result == param => Fit::Exact,
            Ok(sig) if value_compatible(param, &sig.result) => Fit::Weak,
            Ok(_) => Fit::No,
            Err(_) => Fit::Weak,
        },
    }
}

fn resolve_operand(arg: &Operand, receiver: Option<&CqlType>) -> Result<Signature> {
    match arg {
        Operand::Op(op, l, r) => resolve(*op, l, r, receiver),
        Operand::Neg(x) => resolve_negation(x, receiver),
        _ => Err(QueryError::Server("not an operation".into())),
    }
}

fn shown(arg: &Operand) -> String {
    match arg {
        Operand::Typed(ty) => ty.to_string(),
        Operand::Literal(Literal::Null) => "NULL".into(),
        Operand::Literal(lit) => crate::select::selectors::literal_text(lit),
        Operand::Bind => "?".into(),
        Operand::Op(op, l, r) => format!("{} {} {}", shown(l), op.symbol(), shown(r)),
        Operand::Neg(x) => format!("-{}", shown(x)),
        Operand::Unfit => "?".into(),
    }
}

/// The overload of `left op right` for a receiver of type `receiver`
/// (`None` in a selection). `names` are how the operands are shown in
/// errors.
pub fn resolve(
    op: ArithOp,
    left: &Operand,
    right: &Operand,
    receiver: Option<&CqlType>,
) -> Result<Signature> {
    resolve_named(op, left, right, receiver, None)
}

/// [`resolve`], with the operands' names for its errors.
pub fn resolve_named(
    op: ArithOp,
    left: &Operand,
    right: &Operand,
    receiver: Option<&CqlType>,
    names: Option<(&str, &str)>,
) -> Result<Signature> {
    let mut weak = Vec::new();
    for sig in candidates(op) {
        if let Some(rt) = receiver {
            if type_fit(&sig.result, rt.unfrozen()) == Fit::No {
                continue;
            }
        }
        match (operand_fit(left, &sig.left), operand_fit(right, &sig.right)) {
            (Fit::Exact, Fit::Exact) => return Ok(sig),
            (Fit::No, _) | (_, Fit::No) => {}
            _ => weak.push(sig),
        }
    }
    let (ln, rn) = match names {
        Some((l, r)) => (l.to_string(), r.to_string()),
        None => (shown(left), shown(right)),
    };
    if weak.is_empty() {
        return Err(QueryError::Invalid(format!(
            "the '{}' operation is not supported between {ln} and {rn}",
            op.symbol()
        )));
    }
    if weak.len() == 1 {
        return Ok(weak.remove(0));
    }
    let has_marker = matches!(left, Operand::Bind) || matches!(right, Operand::Bind);
    if let (Some(rt), false) = (receiver, has_marker) {
        let rt = rt.unfrozen();
        if let Some(sig) = weak.iter().find(|s| &s.left == rt && &s.right == rt) {
            return Ok(sig.clone());
        }
    }
    Err(QueryError::Invalid(format!(
        "Ambiguous '{}' operation with args {ln} and {rn}: use type hint to disambiguate, example '(int) ?'",
        op.symbol()
    )))
}

/// The overload of `-x` (`system._negate`, one per number type).
pub fn resolve_negation(x: &Operand, receiver: Option<&CqlType>) -> Result<Signature> {
    let mut weak = Vec::new();
    for ty in NUMBERS {
        if let Some(rt) = receiver {
            if type_fit(&ty, rt.unfrozen()) == Fit::No {
                continue;
            }
        }
        match operand_fit(x, &ty) {
            Fit::Exact => return Ok(negation(ty)),
            Fit::Weak => weak.push(ty),
            Fit::No => {}
        }
    }
    match weak.len() {
        0 => Err(QueryError::Invalid(
            "Invalid call to function system._negate, none of its type signatures match".into(),
        )),
        1 => Ok(negation(weak.remove(0))),
        _ => Err(QueryError::Invalid(
            "Ambiguous negation: use type casts to disambiguate".into(),
        )),
    }
}

fn negation(ty: CqlType) -> Signature {
    Signature {
        left: ty.clone(),
        right: ty.clone(),
        result: ty,
    }
}

/// Evaluates `left op right` of the overload `sig`: null if either is
/// null; a failure is Cassandra's FunctionFailure naming the operand
/// types.
pub fn apply(
    op: ArithOp,
    sig: &Signature,
    left: Option<&Value>,
    right: Option<&Value>,
) -> Result<Option<Value>> {
    let (Some(l), Some(r)) = (left, right) else {
        return Ok(None);
    };
    let out = if values::is_number(&sig.result) {
        values::numeric(op, &sig.result, l, r)
    } else if matches!(sig.result, CqlType::Timestamp | CqlType::Date) {
        values::temporal(op, l, r)
    } else {
        values::concat(l, r).ok_or_else(|| "not a text".to_string())
    };
    out.map(Some).map_err(|message| failure(op, sig, message))
}

/// `-x` of the overload `sig`.
pub fn apply_negation(sig: &Signature, x: Option<&Value>) -> Result<Option<Value>> {
    match x {
        None => Ok(None),
        Some(v) => values::negate(v).map(Some).ok_or_else(|| {
            QueryError::Invalid(format!("Cannot negate a value of type {}", sig.left))
        }),
    }
}

fn failure(op: ArithOp, sig: &Signature, message: String) -> QueryError {
    QueryError::FunctionFailure {
        keyspace: "system".into(),
        function: op.function_name().into(),
        arg_types: vec![sig.left.to_string(), sig.right.to_string()],
        message: format!(
            "the operation '{} {} {}' failed: {message}",
            sig.left,
            op.symbol(),
            sig.right
        ),
    }
}

/// The operator of an operation function's name (`_add` ...).
pub fn operator_of(function: &str) -> Option<ArithOp> {
    [
        ArithOp::Add,
        ArithOp::Sub,
        ArithOp::Mul,
        ArithOp::Div,
        ArithOp::Mod,
    ]
    .into_iter()
    .find(|op| op.function_name() == function)
}

/// The negation function's name.
pub const NEGATE: &str = "_negate";

/// The overload for operands of exactly these types, if there is one.
pub fn signature_of(op: ArithOp, left: &CqlType, right: &CqlType) -> Option<Signature> {
    let (l, r) = (left.unfrozen(), right.unfrozen());
    candidates(op)
        .into_iter()
        .find(|s| &s.left == l && &s.right == r)
}

/// An operation function (`_add`, ..., `_negate`) applied to typed
/// values, for selectors compiled to function calls; `None` when `name`
/// is no operation.
pub fn apply_function(
    name: &str,
    args: &[(CqlType, Option<Value>)],
) -> Option<Result<(CqlType, Option<Value>)>> {
    if name == NEGATE {
        let [(ty, v)] = args else {
            return Some(Err(QueryError::Invalid(
                "Invalid number of arguments in call to function system._negate".into(),
            )));
        };
        let sig = negation(ty.unfrozen().clone());
        return Some(apply_negation(&sig, v.as_ref()).map(|v| (sig.result, v)));
    }
    let op = operator_of(name)?;
    let [(lt, lv), (rt, rv)] = args else {
        return Some(Err(QueryError::Invalid(format!(
            "Invalid number of arguments in call to function system.{name}"
        ))));
    };
    let Some(sig) = signature_of(op, lt, rt) else {
        return Some(Err(QueryError::Invalid(format!(
            "the '{}' operation is not supported between {lt} and {rt}",
            op.symbol()
        ))));
    };
    Some(apply(op, &sig, lv.as_ref(), rv.as_ref()).map(|v| (sig.result, v)))
}

#[cfg(test)]
mod tests;
