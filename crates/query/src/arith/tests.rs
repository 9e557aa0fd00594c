//! Typing and evaluation of operations against results Cassandra 5.0.4
//! returned (corpus 21_issue21_arithmetic and OperationFctsTest).

use super::*;
use num_bigint::BigInt;
use varve_types::literal::parse_decimal;

fn typed(t: CqlType) -> Operand {
    Operand::Typed(t)
}

fn int_lit(s: &str) -> Operand {
    Operand::Literal(Literal::Integer(s.into()))
}

fn run(op: ArithOp, l: Value, r: Value) -> Result<Option<Value>> {
    let sig = signature_of(op, &l.cql_type_for_tests(), &r.cql_type_for_tests()).unwrap();
    apply(op, &sig, Some(&l), Some(&r))
}

trait TypeOf {
    fn cql_type_for_tests(&self) -> CqlType;
}

impl TypeOf for Value {
    fn cql_type_for_tests(&self) -> CqlType {
        match self {
            Value::TinyInt(_) => CqlType::TinyInt,
            Value::SmallInt(_) => CqlType::SmallInt,
            Value::Int(_) => CqlType::Int,
            Value::BigInt(_) => CqlType::BigInt,
            Value::Varint(_) => CqlType::Varint,
            Value::Float(_) => CqlType::Float,
            Value::Double(_) => CqlType::Double,
            Value::Decimal { .. } => CqlType::Decimal,
            Value::Timestamp(_) => CqlType::Timestamp,
            Value::Date(_) => CqlType::Date,
            Value::Duration { .. } => CqlType::Duration,
            Value::Text(_) => CqlType::Text,
            Value::Ascii(_) => CqlType::Ascii,
            _ => CqlType::Blob,
        }
    }
}

fn dec(s: &str) -> Value {
    let (unscaled, scale) = parse_decimal(s).unwrap();
    Value::Decimal { unscaled, scale }
}

#[test]
fn result_types_widen_as_cassandra() {
    use CqlType as T;
    let cases = [
        (T::TinyInt, T::SmallInt, T::SmallInt),
        (T::Int, T::BigInt, T::BigInt),
        (T::Int, T::Float, T::Float),
        (T::BigInt, T::Float, T::Double),
        (T::Int, T::Decimal, T::Decimal),
        (T::Float, T::Varint, T::Decimal),
        (T::Varint, T::BigInt, T::Varint),
        (T::Counter, T::Int, T::BigInt),
        (T::Double, T::Float, T::Double),
    ];
    for (l, r, want) in cases {
        for (a, b) in [(&l, &r), (&r, &l)] {
            let sig = resolve(ArithOp::Add, &typed(a.clone()), &typed(b.clone()), None).unwrap();
            assert_eq!(sig.result, want, "{a} + {b}");
        }
    }
}

#[test]
fn literals_take_their_preferred_types() {
    let a = typed(CqlType::TinyInt);
    assert_eq!(
        resolve(ArithOp::Add, &a, &int_lit("1"), None)
            .unwrap()
            .result,
        CqlType::Int
    );
    let big = int_lit("3000000000");
    assert_eq!(
        resolve(ArithOp::Add, &a, &big, None).unwrap().result,
        CqlType::BigInt
    );
    // With a receiver, only overloads giving its type count.
    let sig = resolve(
        ArithOp::Add,
        &int_lit("1"),
        &int_lit("1"),
        Some(&CqlType::TinyInt),
    )
    .unwrap();
    assert_eq!(sig.left, CqlType::TinyInt);
    let sig = resolve(
        ArithOp::Div,
        &int_lit("1"),
        &int_lit("2"),
        Some(&CqlType::Float),
    )
    .unwrap();
    assert_eq!((sig.left, sig.right), (CqlType::Float, CqlType::Float));
}

#[test]
fn markers_and_mismatches_are_refused() {
    let err = |r: Result<Signature>| r.unwrap_err().to_string();
    let e = err(resolve(
        ArithOp::Add,
        &Operand::Bind,
        &int_lit("1"),
        Some(&CqlType::Int),
    ));
    assert!(
        e.starts_with("Ambiguous '+' operation with args ? and 1"),
        "{e}"
    );
    let e = err(resolve(
        ArithOp::Add,
        &typed(CqlType::Int),
        &typed(CqlType::Text),
        None,
    ));
    assert!(e.starts_with("the '+' operation is not supported"), "{e}");
    let e = err(resolve(
        ArithOp::Add,
        &typed(CqlType::Timestamp),
        &int_lit("1"),
        None,
    ));
    assert!(e.starts_with("Ambiguous"), "{e}");
    let e = err(resolve_negation(&typed(CqlType::Timestamp), None));
    assert!(e.starts_with("Ambiguous negation"), "{e}");
    assert!(resolve(
        ArithOp::Mul,
        &typed(CqlType::Time),
        &typed(CqlType::Duration),
        None
    )
    .is_err());
    // One side decides a marker's type.
    let sig = resolve(
        ArithOp::Add,
        &int_lit("1"),
        &Operand::Bind,
        Some(&CqlType::TinyInt),
    )
    .unwrap();
    assert_eq!(sig.right, CqlType::TinyInt);
}

#[test]
fn integers_wrap_and_refuse_zero_divisors() {
    assert_eq!(
        run(ArithOp::Add, Value::Int(i32::MAX), Value::Int(1)).unwrap(),
        Some(Value::Int(i32::MIN))
    );
    assert_eq!(
        run(ArithOp::Div, Value::Int(i32::MIN), Value::Int(-1)).unwrap(),
        Some(Value::Int(i32::MIN))
    );
    assert_eq!(
        run(ArithOp::Mod, Value::BigInt(i64::MIN), Value::BigInt(-1)).unwrap(),
        Some(Value::BigInt(0))
    );
    assert_eq!(
        run(ArithOp::Add, Value::TinyInt(127), Value::TinyInt(1)).unwrap(),
        Some(Value::TinyInt(-128))
    );
    assert_eq!(
        run(ArithOp::Mod, Value::Int(-7), Value::Int(2)).unwrap(),
        Some(Value::Int(-1))
    );
    let e = run(ArithOp::Div, Value::Int(3), Value::Int(0))
        .unwrap_err()
        .to_string();
    assert_eq!(e, "the operation 'int / int' failed: / by zero");
    let e = run(ArithOp::Mod, Value::TinyInt(3), Value::TinyInt(0))
        .unwrap_err()
        .to_string();
    assert_eq!(e, "the operation 'tinyint % tinyint' failed: / by zero");
    let e = run(ArithOp::Div, Value::Varint(BigInt::from(1)), Value::Int(0))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "the operation 'varint / int' failed: BigInteger divide by zero"
    );
    assert_eq!(
        run(ArithOp::Div, Value::Varint(BigInt::from(-7)), Value::Int(2)).unwrap(),
        Some(Value::Varint(BigInt::from(-3)))
    );
}

#[test]
fn floats_follow_ieee_and_decimals_go_through_doubles() {
    assert_eq!(
        run(ArithOp::Div, Value::Float(5.5), Value::Int(0)).unwrap(),
        Some(Value::Float(f32::INFINITY))
    );
    assert_eq!(
        run(ArithOp::Add, Value::Float(1.1), Value::Double(0.0)).unwrap(),
        Some(Value::Double(1.100000023841858))
    );
    assert_eq!(
        run(ArithOp::Div, Value::Float(5.5), Value::Int(3)).unwrap(),
        Some(Value::Float(1.8333334))
    );
    // An int becomes the decimal 2.0 (BigDecimal.valueOf(double)).
    assert_eq!(
        run(ArithOp::Mul, dec("1.50"), Value::Int(2)).unwrap(),
        Some(dec("3.000"))
    );
    assert_eq!(
        run(ArithOp::Add, dec("1"), Value::Float(1.1)).unwrap(),
        Some(dec("2.100000023841858"))
    );
    assert_eq!(
        run(ArithOp::Div, dec("8.5"), Value::Int(3)).unwrap(),
        Some(dec("2.83333333333333333333333333333333"))
    );
    let e = run(ArithOp::Add, dec("1"), Value::Double(f64::NAN))
        .unwrap_err()
        .to_string();
    assert!(
        e.ends_with("A NaN cannot be converted into a decimal"),
        "{e}"
    );
    let e = run(ArithOp::Div, dec("8.5"), Value::Int(0))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "the operation 'decimal / int' failed: BigInteger divide by zero"
    );
}

fn ts(s: &str) -> Value {
    Value::Timestamp(varve_types::time::parse_timestamp(s).unwrap())
}

fn date(s: &str) -> Value {
    Value::Date(varve_types::time::parse_date(s).unwrap())
}

fn dur(months: i32, days: i32, nanos: i64) -> Value {
    Value::Duration {
        months,
        days,
        nanos,
    }
}

#[test]
fn durations_move_timestamps_and_dates() {
    let h = 3_600_000_000_000;
    assert_eq!(
        run(ArithOp::Add, ts("2016-01-31 00:00:00+0000"), dur(1, 0, 0)).unwrap(),
        Some(ts("2016-02-29 00:00:00+0000"))
    );
    assert_eq!(
        run(
            ArithOp::Add,
            ts("2016-01-31 23:00:00+0000"),
            dur(1, 0, 2 * h)
        )
        .unwrap(),
        Some(ts("2016-03-01 01:00:00+0000"))
    );
    assert_eq!(
        run(ArithOp::Add, ts("2016-02-29 12:00:00+0000"), dur(12, 0, 0)).unwrap(),
        Some(ts("2017-02-28 12:00:00+0000"))
    );
    assert_eq!(
        run(
            ArithOp::Sub,
            ts("2016-09-27 16:10:00+0000"),
            dur(1, 2, 3 * h)
        )
        .unwrap(),
        Some(ts("2016-08-25 13:10:00+0000"))
    );
    assert_eq!(
        run(ArithOp::Sub, date("2016-03-31"), dur(1, 0, 0)).unwrap(),
        Some(date("2016-02-29"))
    );
    assert_eq!(
        run(ArithOp::Sub, date("1970-01-01"), dur(0, 1, 0)).unwrap(),
        Some(date("1969-12-31"))
    );
    // The smallest date minus a day wraps to the largest, as in Java.
    assert_eq!(
        run(ArithOp::Sub, Value::Date(0), dur(0, 1, 0)).unwrap(),
        Some(Value::Date(u32::MAX))
    );
    let e = run(ArithOp::Add, date("2016-09-27"), dur(0, 0, h))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "the operation 'date + duration' failed: The duration must have a day precision. Was: 1h"
    );
    let e = run(
        ArithOp::Add,
        ts("2016-09-27 00:00:00+0000"),
        dur(0, 0, 999_000),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(e, "the operation 'timestamp + duration' failed: The duration must have a millisecond precision. Was: 999us");
}

#[test]
fn texts_concatenate() {
    let t = |s: &str| Value::Text(s.into());
    let a = |s: &str| Value::Ascii(s.into());
    assert_eq!(
        run(ArithOp::Add, t("ab"), a("cd")).unwrap(),
        Some(t("abcd"))
    );
    assert_eq!(
        run(ArithOp::Add, a("ab"), a("cd")).unwrap(),
        Some(a("abcd"))
    );
}

#[test]
fn nulls_give_null_and_no_input_panics() {
    let sig = signature_of(ArithOp::Div, &CqlType::Int, &CqlType::Int).unwrap();
    assert_eq!(
        apply(ArithOp::Div, &sig, None, Some(&Value::Int(0))).unwrap(),
        None
    );
    let values = [
        Value::TinyInt(i8::MIN),
        Value::SmallInt(0),
        Value::Int(i32::MIN),
        Value::BigInt(i64::MIN),
        Value::Varint(BigInt::from(0)),
        Value::Float(f32::NAN),
        Value::Double(f64::NEG_INFINITY),
        dec("0"),
        Value::Decimal {
            unscaled: BigInt::from(1),
            scale: i32::MIN,
        },
        Value::Decimal {
            unscaled: BigInt::from(-1),
            scale: i32::MAX,
        },
        Value::Timestamp(i64::MIN),
        Value::Date(u32::MAX),
        dur(i32::MIN, i32::MAX, i64::MIN),
        Value::Text(String::new()),
    ];
    for op in [
        ArithOp::Add,
        ArithOp::Sub,
        ArithOp::Mul,
        ArithOp::Div,
        ArithOp::Mod,
    ] {
        for l in &values {
            for r in &values {
                let (lt, rt) = (l.cql_type_for_tests(), r.cql_type_for_tests());
                if let Some(sig) = signature_of(op, &lt, &rt) {
                    let _ = apply(op, &sig, Some(l), Some(r));
                }
            }
        }
    }
}
