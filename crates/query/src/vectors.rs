//! Cassandra 5.0's vectors in statements: list literals assigned to a
//! `vector<T, n>` (bind markers allowed inside, unlike in collection
//! literals) and the similarity functions `similarity_cosine`,
//! `similarity_euclidean` and `similarity_dot_product`.
//!
//! The scores are jvector's, computed in single precision as Cassandra
//! does: cosine `(1 + cos) / 2` (refused when either vector is all zeros),
//! euclidean `1 / (1 + squared distance)`, dot product `(1 + dot) / 2`.
//! Cassandra asserts that every element is finite and answers NaN or an
//! infinity with a ServerError (`java.lang.AssertionError`); so does Varve,
//! with a message that says why.

use crate::error::{QueryError, Result};
use crate::terms::Evaluated;
use varve_cql::ast::{Literal, Term};
use varve_types::{CqlType, Value};

/// The names of the similarity functions, lowercase.
pub const SIMILARITY_FUNCTIONS: [&str; 3] = [
    "similarity_cosine",
    "similarity_euclidean",
    "similarity_dot_product",
];

/// Whether `fname` (lowercase) is a similarity function.
pub fn is_similarity(fname: &str) -> bool {
    SIMILARITY_FUNCTIONS.contains(&fname)
}

/// A list literal as a value of `vector<element, n>` for `name`, with
/// Cassandra's checks in its order: the element count, then each element's
/// kind, then nulls. `eval_element` evaluates one element as `element`.
pub fn eval_literal(
    items: &[Term],
    element: &CqlType,
    n: usize,
    name: &str,
    mut eval_element: impl FnMut(&Term, &CqlType) -> Result<Evaluated>,
) -> Result<Evaluated> {
    let ty = CqlType::Vector(Box::new(element.clone()), n);
    if items.len() != n {
        return Err(QueryError::Invalid(format!(
            "Invalid vector literal for {name} of type {ty}; expected {n} elements, but given {}",
            items.len()
        )));
    }
    let mut values = Vec::with_capacity(n);
    for item in items {
        let evaluated = eval_element(item, element).map_err(|e| match item {
            Term::Literal(_) | Term::List(_) | Term::Set(_) | Term::Map(_) | Term::Tuple(_) => {
                QueryError::Invalid(format!(
                    "Invalid vector literal for {name}: value {} is not of type {}",
                    term_text(item),
                    element
                ))
            }
            _ => e,
        })?;
        match evaluated {
            Evaluated::Value(v) => values.push(v),
            Evaluated::Null | Evaluated::Unset => {
                return Err(QueryError::Invalid(
                    "null is not supported inside vectors".into(),
                ))
            }
        }
    }
    Ok(Evaluated::Value(Value::Vector(values)))
}

/// A term as Cassandra prints it in messages and selection names.
pub fn term_text(term: &Term) -> String {
    let join = |items: &[Term]| items.iter().map(term_text).collect::<Vec<_>>().join(", ");
    match term {
        Term::Literal(Literal::Null) => "NULL".into(),
        Term::Literal(lit) => crate::select::selectors::literal_text(lit),
        Term::Bind(_) => "?".into(),
        Term::List(items) => format!("[{}]", join(items)),
        Term::Set(items) => format!("{{{}}}", join(items)),
        Term::Tuple(items) => format!("({})", join(items)),
        Term::Map(entries) => {
            let shown: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}: {}", term_text(k), term_text(v)))
                .collect();
            format!("{{{}}}", shown.join(", "))
        }
        Term::Cast { ty, term } => format!("({ty}){}", term_text(term)),
        Term::Negate(t) => format!("-{}", term_text(t)),
        _ => "...".into(),
    }
}

/// The signature Cassandra names in arity errors.
fn signature(fname: &str) -> String {
    format!("system.{fname}(vector<float, n>, vector<float, n>)")
}

/// The dimension shared by the arguments of a similarity function, from
/// their types (`None` for an argument whose type comes from the others:
/// a literal or a bind marker), with Cassandra's errors.
pub fn check_similarity_args(fname: &str, args: &[(String, Option<CqlType>)]) -> Result<usize> {
    if args.len() != 2 {
        return Err(QueryError::Invalid(format!(
            "Invalid number of arguments for function {}",
            signature(fname)
        )));
    }
    let mut dimension = None;
    for (shown, ty) in args {
        let Some(ty) = ty else { continue };
        match ty.vector() {
            Some((CqlType::Float, n)) => {
                if dimension.is_some_and(|d| d != n) {
                    return Err(QueryError::Invalid(
                        "All arguments must have the same vector dimensions".into(),
                    ));
                }
                dimension = Some(n);
            }
            _ => {
                return Err(QueryError::Invalid(format!(
                    "Function system.{fname} requires a float vector argument, but found argument {shown} of type {ty}"
                )))
            }
        }
    }
    dimension.ok_or_else(|| {
        QueryError::Invalid(format!(
            "Cannot infer type of argument {} in call to function {}: use type casts to disambiguate",
            args[0].0,
            signature(fname)
        ))
    })
}

/// The floats of a `vector<float, n>` value.
fn floats(v: &Value) -> Option<Vec<f32>> {
    let Value::Vector(items) = v else { return None };
    items
        .iter()
        .map(|x| match x {
            Value::Float(f) => Some(*f),
            _ => None,
        })
        .collect()
}

/// Applies a similarity function; a null argument gives null.
pub fn similarity(fname: &str, a: Option<&Value>, b: Option<&Value>) -> Result<Option<Value>> {
    let (Some(a), Some(b)) = (a, b) else {
        return Ok(None);
    };
    let bad = || QueryError::Invalid(format!("Function system.{fname} requires float vectors"));
    let (a, b) = (floats(a).ok_or_else(bad)?, floats(b).ok_or_else(bad)?);
    if a.len() != b.len() {
        return Err(QueryError::Invalid(
            "All arguments must have the same vector dimensions".into(),
        ));
    }
    if !a.iter().chain(&b).all(|x| x.is_finite()) {
        return Err(QueryError::Server(format!(
            "java.lang.AssertionError: system.{fname} takes only finite numbers (Cassandra 5.0.4 fails the same way)"
        )));
    }
    let score = match fname {
        "similarity_cosine" => {
            let zero = |v: &[f32]| v.iter().all(|&x| x == 0.0);
            if zero(&a) || zero(&b) {
                return Err(QueryError::Invalid(format!(
                    "Function system.{fname} doesn't support all-zero vectors."
                )));
            }
            (1.0 + cosine(&a, &b)) / 2.0
        }
        "similarity_euclidean" => 1.0 / (1.0 + square_distance(&a, &b)),
        "similarity_dot_product" => (1.0 + dot(&a, &b)) / 2.0,
        _ => return Err(QueryError::Invalid(format!("Unknown function '{fname}'"))),
    };
    Ok(Some(Value::Float(score)))
}

/// The sums run in order in single precision, as jvector's scalar code
/// does, so results agree to the last bit.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).fold(0.0f32, |s, (x, y)| s + x * y)
}

fn square_distance(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).fold(0.0f32, |s, (x, y)| {
        let d = x - y;
        s + d * d
    })
}

/// The norms' product is taken in double precision, then the quotient
/// rounded to single.
fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut sum, mut na, mut nb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        sum += x * y;
        na += x * x;
        nb += y * y;
    }
    (f64::from(sum) / (f64::from(na) * f64::from(nb)).sqrt()) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(xs: &[f32]) -> Value {
        Value::Vector(xs.iter().map(|&x| Value::Float(x)).collect())
    }

    fn score(f: &str, a: &[f32], b: &[f32]) -> Result<Option<Value>> {
        similarity(f, Some(&v(a)), Some(&v(b)))
    }

    #[test]
    fn scores_match_cassandra() {
        // Values recorded from Cassandra 5.0.4.
        let f = |x: f32| Ok(Some(Value::Float(x)));
        assert_eq!(
            score("similarity_cosine", &[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]),
            f(1.0)
        );
        assert_eq!(score("similarity_cosine", &[1.0, 2.0], &[2.0, 1.0]), f(0.9));
        assert_eq!(
            score("similarity_euclidean", &[1.0, 2.0, 3.0], &[0.0, 0.0, 0.0]),
            f(1.0 / 15.0)
        );
        assert_eq!(
            score("similarity_dot_product", &[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]),
            f(7.5)
        );
        assert_eq!(
            score("similarity_dot_product", &[1.0, 2.0], &[0.0, 0.0]),
            f(0.5)
        );
        assert_eq!(
            score("similarity_cosine", &[1.5, 2.5, 3.5], &[1.0, 2.0, 3.0]),
            f(0.998_707_4)
        );
    }

    #[test]
    fn bad_arguments_are_refused() {
        let err = score("similarity_cosine", &[0.0, 0.0], &[1.0, 1.0]).unwrap_err();
        assert_eq!(
            err,
            QueryError::Invalid(
                "Function system.similarity_cosine doesn't support all-zero vectors.".into()
            )
        );
        assert!(score("similarity_cosine", &[1.0, 1.0], &[-0.0, 0.0]).is_err());
        assert!(matches!(
            score("similarity_dot_product", &[1.0], &[1.0, 2.0]),
            Err(QueryError::Invalid(m)) if m == "All arguments must have the same vector dimensions"
        ));
        assert!(matches!(
            score("similarity_euclidean", &[f32::NAN], &[1.0]),
            Err(QueryError::Server(_))
        ));
        assert!(matches!(
            score("similarity_cosine", &[f32::INFINITY], &[1.0]),
            Err(QueryError::Server(_))
        ));
        assert_eq!(
            similarity("similarity_cosine", None, Some(&v(&[1.0]))),
            Ok(None)
        );
        let ints = Value::Vector(vec![Value::Int(1)]);
        assert!(similarity("similarity_cosine", Some(&ints), Some(&ints)).is_err());
    }

    #[test]
    fn argument_types_are_checked() {
        let fv = |n| Some(CqlType::Vector(Box::new(CqlType::Float), n));
        let arg = |s: &str, t: Option<CqlType>| (s.to_string(), t);
        let f = "similarity_cosine";
        assert_eq!(
            check_similarity_args(f, &[arg("v", fv(3)), arg("[1]", None)]),
            Ok(3)
        );
        assert_eq!(
            check_similarity_args(f, &[arg("?", None), arg("v", fv(2))]),
            Ok(2)
        );
        let err = |args: &[(String, Option<CqlType>)]| match check_similarity_args(f, args) {
            Err(QueryError::Invalid(m)) => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            err(&[arg("v", fv(3))]),
            "Invalid number of arguments for function system.similarity_cosine(vector<float, n>, vector<float, n>)"
        );
        assert_eq!(
            err(&[arg("v", fv(3)), arg("w", fv(2))]),
            "All arguments must have the same vector dimensions"
        );
        assert_eq!(
            err(&[arg("k", Some(CqlType::Int)), arg("v", fv(2))]),
            "Function system.similarity_cosine requires a float vector argument, but found argument k of type int"
        );
        let ints = Some(CqlType::Vector(Box::new(CqlType::Int), 2));
        assert!(err(&[arg("k", ints), arg("v", fv(2))]).contains("requires a float vector"));
        assert!(
            err(&[arg("?", None), arg("?", None)]).starts_with("Cannot infer type of argument ?")
        );
    }

    #[test]
    fn literals_are_checked_in_cassandras_order() {
        let items = |xs: &[&str]| -> Vec<Term> {
            xs.iter()
                .map(|x| match *x {
                    "null" => Term::Literal(Literal::Null),
                    s if s.starts_with('\'') => {
                        Term::Literal(Literal::String(s.trim_matches('\'').into()))
                    }
                    s => Term::Literal(Literal::Float(s.into())),
                })
                .collect()
        };
        let eval = |t: &Term, ty: &CqlType| -> Result<Evaluated> {
            match t {
                Term::Literal(Literal::Null) => Ok(Evaluated::Null),
                Term::Literal(lit) => crate::terms::eval_literal(lit, ty, "v")
                    .map(|v| v.map_or(Evaluated::Null, Evaluated::Value)),
                _ => unreachable!(),
            }
        };
        let run = |xs: &[&str]| eval_literal(&items(xs), &CqlType::Float, 3, "v", eval);
        assert_eq!(
            run(&["1.0", "2.0", "3.0"]),
            Ok(Evaluated::Value(v(&[1.0, 2.0, 3.0])))
        );
        assert_eq!(
            run(&["1.0", "null"]),
            Err(QueryError::Invalid(
                "Invalid vector literal for v of type vector<float, 3>; expected 3 elements, but given 2"
                    .into()
            ))
        );
        assert_eq!(
            run(&["1.0", "null", "3.0"]),
            Err(QueryError::Invalid(
                "null is not supported inside vectors".into()
            ))
        );
        assert_eq!(
            run(&["'a'", "2.0", "3.0"]),
            Err(QueryError::Invalid(
                "Invalid vector literal for v: value 'a' is not of type float".into()
            ))
        );
    }
}
