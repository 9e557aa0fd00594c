//! Native scalar functions (now(), uuid(), toTimestamp(), blobAsText(),
//! ...), shared by terms in writes and by selectors in SELECT.

use crate::context::Ctx;
use crate::error::{QueryError, Result};
use crate::terms::{eval, Evaluated};
use varve_cql::ast::{Literal, Term};
use varve_types::time::{self, TimeuuidBound};
use varve_types::{codec, CqlType, Value};

/// A typed value flowing through functions.
pub type Typed = (CqlType, Option<Value>);

const MILLIS_PER_DAY: i64 = 86_400_000;
const DATE_EPOCH: i64 = 1 << 31;

/// A function call in a term (write value, WHERE value), coerced to `ty`.
pub fn call_term(
    ctx: &Ctx,
    fname: &str,
    args: &[Term],
    ty: &CqlType,
    name: &str,
) -> Result<Evaluated> {
    if canonical(fname) == "fromjson" {
        return crate::json::from_json_term(ctx, args, ty);
    }
    let mut typed_args = Vec::with_capacity(args.len());
    for (i, arg) in args.iter().enumerate() {
        let first = typed_args.first().map(|(t, _): &Typed| t);
        let arg_ty = argument_type(fname, i, arg, first)
            .or_else(|| receiver_typed(fname, i, arg, ty))
            .unwrap_or_else(|| natural_type(arg));
        typed_args.push((arg_ty.clone(), eval(ctx, arg, &arg_ty, name)?.into_option()));
    }
    let types: Vec<CqlType> = typed_args.iter().map(|(t, _)| t.clone()).collect();
    check_arguments(fname, &types)?;
    let (ret_ty, value) = apply(fname, typed_args)?;
    let Some(value) = value else {
        return Ok(Evaluated::Null);
    };
    if ret_ty.unfrozen() == ty.unfrozen() {
        return Ok(Evaluated::Value(value));
    }
    // Assignable when the bytes are valid for the target (e.g. text->ascii is not).
    if compatible(&ret_ty, ty) {
        let bytes = codec::serialize(&value);
        if let Ok(v) = codec::deserialize(ty, &bytes) {
            return Ok(Evaluated::Value(v));
        }
    }
    Err(QueryError::Invalid(format!(
        "Type error: cannot assign result of function system.{} (type {}) to {} (type {})",
        fname.to_lowercase(),
        ret_ty,
        name,
        ty
    )))
}

fn compatible(from: &CqlType, to: &CqlType) -> bool {
    matches!(
        (from.unfrozen(), to.unfrozen()),
        (CqlType::Timeuuid, CqlType::Uuid) | (CqlType::Ascii, CqlType::Text) | (CqlType::Blob, _)
    )
}

/// The type a literal argument takes in a call of `fname`, picking the
/// overload Cassandra would (an integer or string given to toDate() is a
/// timestamp, a uuid is a timeuuid); `first` is the first argument's type
/// when this is a later one.
pub fn argument_type(
    fname: &str,
    index: usize,
    arg: &Term,
    first: Option<&CqlType>,
) -> Option<CqlType> {
    let f = canonical(fname);
    if crate::mask_fns::is_mask_function(&f) {
        return crate::mask_fns::argument_type(&f, index, first);
    }
    if f == "floor" {
        return match (index, first) {
            (1, _) => Some(CqlType::Duration),
            (2, Some(first)) => Some(crate::time_floor::start_type(first)),
            _ => None,
        };
    }
    if f.starts_with("blobas") {
        return Some(CqlType::Blob);
    }
    if let Some(source) = f.strip_suffix("asblob") {
        return type_by_name(source);
    }
    match f.as_str() {
        "mintimeuuid" | "maxtimeuuid" => Some(CqlType::Timestamp),
        "totimestamp" | "todate" | "tounixtimestamp" => match arg {
            Term::Literal(Literal::Uuid(_)) => Some(CqlType::Timeuuid),
            Term::Literal(Literal::Integer(_) | Literal::String(_)) => Some(CqlType::Timestamp),
            _ => None,
        },
        "abs" => match arg {
            Term::Literal(Literal::Integer(_)) => Some(CqlType::Int),
            Term::Literal(Literal::Float(_)) => Some(CqlType::Double),
            _ => None,
        },
        "exp" | "log" | "log10" | "round" => Some(CqlType::Double),
        _ => None,
    }
}

/// A literal first argument of `floor` in a term takes the type of the
/// term's receiver, as Cassandra picks the overload that returns it
/// (`t >= floor('2023-11-14 22:10:00', 1h)` floors a timestamp).
fn receiver_typed(fname: &str, index: usize, arg: &Term, receiver: &CqlType) -> Option<CqlType> {
    let literal = matches!(arg, Term::Literal(Literal::String(_) | Literal::Integer(_)));
    let temporal = matches!(
        receiver.unfrozen(),
        CqlType::Timestamp | CqlType::Date | CqlType::Time
    );
    (fname.eq_ignore_ascii_case("floor") && index == 0 && literal && temporal)
        .then(|| receiver.unfrozen().clone())
}

/// The type a term has on its own (for function arguments).
pub fn natural_type(term: &Term) -> CqlType {
    match term {
        Term::Literal(Literal::String(_)) => CqlType::Text,
        Term::Literal(Literal::Integer(_)) => CqlType::Int,
        Term::Literal(Literal::Float(_)) => CqlType::Double,
        Term::Literal(Literal::Boolean(_)) => CqlType::Boolean,
        Term::Literal(Literal::Uuid(_)) => CqlType::Uuid,
        Term::Literal(Literal::Blob(_)) => CqlType::Blob,
        Term::Literal(Literal::Duration(_)) => CqlType::Duration,
        Term::FunctionCall { name, .. } => return_type(name).unwrap_or(CqlType::Blob),
        Term::Cast { ty, .. } => ty.clone(),
        _ => CqlType::Blob,
    }
}

/// The return type of a zero-argument or fixed-type function.
fn return_type(fname: &str) -> Option<CqlType> {
    let f = canonical(fname);
    if let Some(t) = f.strip_prefix("blobas") {
        return type_by_name(t);
    }
    if f.ends_with("asblob") {
        return Some(CqlType::Blob);
    }
    Some(match f.as_str() {
        "now" | "currenttimeuuid" | "mintimeuuid" | "maxtimeuuid" => CqlType::Timeuuid,
        "uuid" => CqlType::Uuid,
        "currenttimestamp" | "totimestamp" => CqlType::Timestamp,
        "currentdate" | "todate" => CqlType::Date,
        "currenttime" => CqlType::Time,
        "tounixtimestamp" => CqlType::BigInt,
        "tojson" => CqlType::Text,
        "exp" | "log" | "log10" | "round" => CqlType::Double,
        _ => return None,
    })
}

fn type_by_name(name: &str) -> Option<CqlType> {
    Some(match name {
        "ascii" => CqlType::Ascii,
        "text" | "varchar" => CqlType::Text,
        "blob" => CqlType::Blob,
        "boolean" => CqlType::Boolean,
        "tinyint" => CqlType::TinyInt,
        "smallint" => CqlType::SmallInt,
        "int" => CqlType::Int,
        "bigint" => CqlType::BigInt,
        "varint" => CqlType::Varint,
        "float" => CqlType::Float,
        "double" => CqlType::Double,
        "decimal" => CqlType::Decimal,
        "uuid" => CqlType::Uuid,
        "timeuuid" => CqlType::Timeuuid,
        "timestamp" => CqlType::Timestamp,
        "date" => CqlType::Date,
        "time" => CqlType::Time,
        "duration" => CqlType::Duration,
        "inet" => CqlType::Inet,
        _ => return None,
    })
}

/// Checks the argument types of a native function, as Cassandra resolves
/// overloads: an argument of another type is an InvalidRequest.
pub fn check_arguments(fname: &str, types: &[CqlType]) -> Result<()> {
    let called = fname.to_ascii_lowercase();
    let f = canonical(fname);
    let allowed: Vec<CqlType> = if f.starts_with("blobas") {
        // Every type is value-compatible with blob: any argument is taken
        // as its bytes (Cassandra accepts blobAsInt(int_column)).
        return Ok(());
    } else if let Some(source) = f.strip_suffix("asblob") {
        type_by_name(source).into_iter().collect()
    } else {
        match f.as_str() {
            "totimestamp" | "todate" | "tounixtimestamp" => {
                return check_conversion(&f, &called, types);
            }
            "mintimeuuid" | "maxtimeuuid" => vec![CqlType::Timestamp],
            _ => return Ok(()),
        }
    };
    for (i, t) in types.iter().enumerate() {
        if !allowed.iter().any(|a| a == t.unfrozen()) {
            return Err(QueryError::Invalid(format!(
                "Type error: argument {i} of type {t} cannot be passed to function system.{f}, which takes {}",
                allowed.iter().map(|a| a.cql_name()).collect::<Vec<_>>().join(" or ")
            )));
        }
    }
    Ok(())
}

/// The name a function is dispatched on: Cassandra 5.0's snake-case
/// names (`to_timestamp`, `int_as_blob`, `blob_as_int`, `current_date`,
/// `to_json`, ...) mapped to the older ones, lower case.
pub fn canonical(fname: &str) -> String {
    let f = fname.to_ascii_lowercase();
    let legacy = match f.as_str() {
        "to_timestamp" => "totimestamp",
        "to_date" => "todate",
        "to_unix_timestamp" => "tounixtimestamp",
        "min_timeuuid" => "mintimeuuid",
        "max_timeuuid" => "maxtimeuuid",
        "current_timestamp" => "currenttimestamp",
        "current_date" => "currentdate",
        "current_time" => "currenttime",
        "current_timeuuid" => "currenttimeuuid",
        "to_json" => "tojson",
        "from_json" => "fromjson",
        _ => {
            if let Some(t) = f
                .strip_prefix("blob_as_")
                .filter(|t| type_by_name(t).is_some())
            {
                return format!("blobas{t}");
            }
            if let Some(t) = f
                .strip_suffix("_as_blob")
                .filter(|t| type_by_name(t).is_some())
            {
                return format!("{t}asblob");
            }
            return f;
        }
    };
    legacy.to_string()
}

/// The overloads of Cassandra 5.0's time conversions, in the order its
/// messages list them: argument type and result type.
fn conversion_signatures(f: &str) -> &'static [(CqlType, CqlType)] {
    use CqlType::{BigInt, Date, Timestamp, Timeuuid};
    match f {
        "totimestamp" => &[(Timeuuid, Timestamp), (Date, Timestamp)],
        "todate" => &[(Timeuuid, Date), (Timestamp, Date)],
        _ => &[(Timeuuid, BigInt), (Date, BigInt), (Timestamp, BigInt)],
    }
}

/// `totimestamp`, `todate` or `tounixtimestamp` takes one argument of a
/// type among its overloads.
fn check_conversion(f: &str, called: &str, types: &[CqlType]) -> Result<()> {
    let signatures = conversion_signatures(f);
    let fits = |t: &CqlType| signatures.iter().any(|(a, _)| a == t.unfrozen());
    if types.len() == 1 && fits(&types[0]) {
        return Ok(());
    }
    let known: Vec<String> = signatures
        .iter()
        .map(|(a, r)| format!("system.{called} : ({a}) -> {r}"))
        .collect();
    Err(QueryError::Invalid(format!(
        "Invalid call to function {called}, none of its type signatures match (known type signatures: {})",
        known.join(", ")
    )))
}

/// Applies a native scalar function to typed arguments.
pub fn apply(fname: &str, args: Vec<Typed>) -> Result<Typed> {
    let called = fname.to_ascii_lowercase();
    let f = canonical(fname);
    if crate::mask_fns::is_mask_function(&f) {
        return crate::mask_fns::apply(&f, &args);
    }
    if crate::collection_fns::is_collection_function(&f) {
        let [(ty, value)] = &args[..] else {
            return Err(QueryError::Invalid(format!(
                "Invalid number of arguments in call to function system.{f}: 1 required but {} provided",
                args.len()
            )));
        };
        let ret = crate::collection_fns::return_type(&f, "?", ty)?;
        return Ok((ret, crate::collection_fns::apply(&f, ty, value.as_ref())?));
    }
    if let Some(result) = crate::arith::apply_function(&f, &args) {
        return result;
    }
    let arity = |n: usize| -> Result<()> {
        if args.len() == n {
            Ok(())
        } else {
            Err(QueryError::Invalid(format!(
                "Invalid number of arguments in call to function system.{f}: {n} required but {} provided",
                args.len()
            )))
        }
    };
    if let Some(target) = f.strip_prefix("blobas") {
        arity(1)?;
        let ty = type_by_name(target).ok_or_else(|| unknown(&f))?;
        let bytes = args[0].1.as_ref().map(|v| match v {
            Value::Blob(b) => b.clone(),
            other => codec::serialize(other),
        });
        let value = match &bytes {
            Some(b) => Some(codec::deserialize(&ty, b).map_err(|_| {
                QueryError::Invalid(format!("In call to function system.{called}, value 0x{} is not a valid binary representation for type {target}", hex(b)))
            })?),
            _ => None,
        };
        return Ok((ty, value));
    }
    if let Some(source) = f.strip_suffix("asblob") {
        arity(1)?;
        type_by_name(source).ok_or_else(|| unknown(&f))?;
        return Ok((
            CqlType::Blob,
            args[0].1.as_ref().map(|v| Value::Blob(codec::serialize(v))),
        ));
    }
    if crate::vectors::is_similarity(&f) {
        if args.len() != 2 {
            return Err(QueryError::Invalid(format!(
                "Invalid number of arguments for function system.{f}(vector<float, n>, vector<float, n>)"
            )));
        }
        let score = crate::vectors::similarity(&f, args[0].1.as_ref(), args[1].1.as_ref())?;
        return Ok((CqlType::Float, score));
    }
    match f.as_str() {
        "floor" => crate::time_floor::apply(&args),
        "tojson" => {
            if args.len() != 1 {
                return Err(QueryError::Invalid(
                    "Invalid number of arguments for function system.tojson(any)".into(),
                ));
            }
            let json = crate::json::to_json_typed(&args[0].0, args[0].1.as_ref());
            Ok((CqlType::Text, Some(Value::Text(json))))
        }
        "now" | "currenttimeuuid" => {
            arity(0)?;
            Ok((
                CqlType::Timeuuid,
                Some(Value::Timeuuid(time::new_timeuuid())),
            ))
        }
        "uuid" => {
            arity(0)?;
            Ok((CqlType::Uuid, Some(Value::Uuid(time::random_uuid()))))
        }
        "currenttimestamp" => {
            arity(0)?;
            Ok((
                CqlType::Timestamp,
                Some(Value::Timestamp(time::now_millis())),
            ))
        }
        "currentdate" => {
            arity(0)?;
            Ok((CqlType::Date, Some(date_of_millis(time::now_millis()))))
        }
        "currenttime" => {
            arity(0)?;
            let ms = time::now_millis().rem_euclid(MILLIS_PER_DAY);
            Ok((CqlType::Time, Some(Value::Time(ms * 1_000_000))))
        }
        "totimestamp" => {
            arity(1)?;
            let v = args[0]
                .1
                .as_ref()
                .map(|v| millis_of(v).map(Value::Timestamp))
                .transpose()?;
            Ok((CqlType::Timestamp, v))
        }
        "todate" => {
            arity(1)?;
            let v = args[0]
                .1
                .as_ref()
                .map(|v| millis_of(v).map(date_of_millis))
                .transpose()?;
            Ok((CqlType::Date, v))
        }
        "tounixtimestamp" => {
            arity(1)?;
            let v = args[0]
                .1
                .as_ref()
                .map(|v| millis_of(v).map(Value::BigInt))
                .transpose()?;
            Ok((CqlType::BigInt, v))
        }
        "mintimeuuid" | "maxtimeuuid" => {
            arity(1)?;
            let bound = if f == "mintimeuuid" {
                TimeuuidBound::Min
            } else {
                TimeuuidBound::Max
            };
            let v = args[0]
                .1
                .as_ref()
                .map(|v| {
                    millis_of(v).map(|ms| Value::Timeuuid(time::timeuuid_for_millis(ms, bound)))
                })
                .transpose()?;
            Ok((CqlType::Timeuuid, v))
        }
        "abs" => {
            arity(1)?;
            let (ty, v) = args.into_iter().next().unwrap_or((CqlType::Int, None));
            let v = v.map(|v| match v {
                Value::TinyInt(x) => Ok(Value::TinyInt(x.wrapping_abs())),
                Value::SmallInt(x) => Ok(Value::SmallInt(x.wrapping_abs())),
                Value::Int(x) => Ok(Value::Int(x.wrapping_abs())),
                Value::BigInt(x) => Ok(Value::BigInt(x.wrapping_abs())),
                Value::Float(x) => Ok(Value::Float(x.abs())),
                Value::Double(x) => Ok(Value::Double(x.abs())),
                Value::Varint(x) => Ok(Value::Varint(if x < Default::default() { -x } else { x })),
                other => Err(QueryError::Invalid(format!(
                    "Invalid argument {other:?} for function system.abs"
                ))),
            });
            Ok((ty, v.transpose()?))
        }
        "exp" | "log" | "log10" | "round" => {
            arity(1)?;
            let x = match &args[0].1 {
                None => return Ok((CqlType::Double, None)),
                Some(v) => as_f64(v).ok_or_else(|| {
                    QueryError::Invalid(format!(
                        "Invalid argument for function system.{f}: not a number"
                    ))
                })?,
            };
            let y = match f.as_str() {
                "exp" => x.exp(),
                "log" => x.ln(),
                "log10" => x.log10(),
                _ => x.round(),
            };
            Ok((CqlType::Double, Some(Value::Double(y))))
        }
        _ => Err(unknown(&f)),
    }
}

fn as_f64(v: &Value) -> Option<f64> {
    Some(match v {
        Value::TinyInt(x) => *x as f64,
        Value::SmallInt(x) => *x as f64,
        Value::Int(x) => *x as f64,
        Value::BigInt(x) => *x as f64,
        Value::Float(x) => *x as f64,
        Value::Double(x) => *x,
        _ => return None,
    })
}

fn unknown(f: &str) -> QueryError {
    QueryError::Invalid(format!("Unknown function '{f}'"))
}

fn millis_of(v: &Value) -> Result<i64> {
    match v {
        Value::Timeuuid(u) => Ok(time::timeuuid_millis(u)),
        Value::Timestamp(ms) => Ok(*ms),
        Value::Date(d) => Ok((*d as i64 - DATE_EPOCH) * MILLIS_PER_DAY),
        other => Err(QueryError::Invalid(format!(
            "Cannot convert {other:?} to a timestamp"
        ))),
    }
}

fn date_of_millis(ms: i64) -> Value {
    Value::Date((ms.div_euclid(MILLIS_PER_DAY) + DATE_EPOCH) as u32)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
