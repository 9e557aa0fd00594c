use super::*;
use num_bigint::BigInt;
use Ordering::{Equal, Greater, Less};

fn cv(ty: &CqlType, a: Value, b: Value) -> Ordering {
    let typed = compare_values(ty, &a, &b);
    assert_eq!(
        order_values(&a, &b),
        typed,
        "value order disagrees for {ty}"
    );
    typed
}

fn dec(u: i64, s: i32) -> Value {
    Value::Decimal {
        unscaled: BigInt::from(u),
        scale: s,
    }
}

#[test]
fn empty_sorts_first() {
    for ty in [CqlType::Int, CqlType::Text, CqlType::Uuid, CqlType::Varint] {
        assert_eq!(compare(&ty, &[], &[]), Equal);
        assert_eq!(compare(&ty, &[], &[0x80, 0, 0, 0]), Less);
        assert_eq!(compare(&ty, &[0x80, 0, 0, 0], &[]), Greater);
    }
}

#[test]
fn integers_are_signed_dates_unsigned() {
    assert_eq!(cv(&CqlType::Int, Value::Int(-1), Value::Int(1)), Less);
    assert_eq!(
        cv(&CqlType::TinyInt, Value::TinyInt(-128), Value::TinyInt(127)),
        Less
    );
    assert_eq!(
        cv(&CqlType::BigInt, Value::BigInt(i64::MIN), Value::BigInt(0)),
        Less
    );
    assert_eq!(
        cv(
            &CqlType::Timestamp,
            Value::Timestamp(-5),
            Value::Timestamp(5)
        ),
        Less
    );
    assert_eq!(
        cv(&CqlType::Date, Value::Date(1), Value::Date(u32::MAX)),
        Less
    );
    assert_eq!(
        cv(
            &CqlType::Boolean,
            Value::Boolean(false),
            Value::Boolean(true)
        ),
        Less
    );
    assert_eq!(compare(&CqlType::Boolean, &[1], &[7]), Equal);
}

#[test]
fn floats_follow_java() {
    let d = |x: f64| Value::Double(x);
    assert_eq!(cv(&CqlType::Double, d(-0.0), d(0.0)), Less);
    assert_eq!(cv(&CqlType::Double, d(f64::NAN), d(f64::INFINITY)), Greater);
    assert_eq!(cv(&CqlType::Double, d(f64::NAN), d(-f64::NAN)), Equal);
    assert_eq!(cv(&CqlType::Double, d(f64::NEG_INFINITY), d(-1e308)), Less);
    assert_eq!(
        cv(&CqlType::Float, Value::Float(-2.5), Value::Float(1.0)),
        Less
    );
}

#[test]
fn varint_and_decimal_are_numeric() {
    let v = |n: i64| Value::Varint(BigInt::from(n));
    assert_eq!(cv(&CqlType::Varint, v(-300), v(2)), Less);
    assert_eq!(cv(&CqlType::Varint, v(256), v(255)), Greater);
    // Non-minimal encodings compare by value.
    assert_eq!(compare(&CqlType::Varint, &[0, 0, 1], &[1]), Equal);
    assert_eq!(cv(&CqlType::Decimal, dec(10, 1), dec(100, 2)), Equal);
    assert_eq!(cv(&CqlType::Decimal, dec(15, 1), dec(2, 0)), Less);
    assert_eq!(cv(&CqlType::Decimal, dec(-15, 1), dec(-2, 0)), Greater);
    assert_eq!(cv(&CqlType::Decimal, dec(0, 5), dec(0, -3)), Equal);
    assert_eq!(
        cv(&CqlType::Decimal, dec(1, i32::MAX), dec(1, i32::MIN)),
        Less
    );
    assert_eq!(cv(&CqlType::Decimal, dec(-1, 0), dec(0, 0)), Less);
    assert_eq!(cv(&CqlType::Decimal, dec(999, 3), dec(1, 0)), Less);
}

#[test]
fn uuid_orders() {
    let v1 = |ts: u64, low: u8| {
        let mut u = [0u8; 16];
        u[0..4].copy_from_slice(&(ts as u32).to_be_bytes());
        u[4..6].copy_from_slice(&((ts >> 32) as u16).to_be_bytes());
        u[6..8].copy_from_slice(&(((ts >> 48) as u16 & 0xFFF) | 0x1000).to_be_bytes());
        u[8] = low;
        u
    };
    // The time_low field alone would order these the other way.
    let (a, b) = (v1(0x1_0000_0000, 0), v1(0x0_FFFF_FFFF, 0));
    assert_eq!(compare(&CqlType::Timeuuid, &a, &b), Greater);
    assert_eq!(compare(&CqlType::Uuid, &a, &b), Greater);
    // Timeuuid: clock sequence bytes compare signed; uuid: unsigned.
    let (p, n) = (v1(5, 0x7F), v1(5, 0x80));
    assert_eq!(compare(&CqlType::Timeuuid, &p, &n), Greater);
    assert_eq!(compare(&CqlType::Uuid, &p, &n), Less);
    // Uuid: version first.
    let mut v4 = [0u8; 16];
    v4[6] = 0x40;
    assert_eq!(compare(&CqlType::Uuid, &v1(u64::MAX >> 4, 0xFF), &v4), Less);
    let mut v4b = v4;
    v4b[0] = 1;
    assert_eq!(compare(&CqlType::Uuid, &v4, &v4b), Less);
}

#[test]
fn collections_and_tuples() {
    let l = |xs: &[i32]| Value::List(xs.iter().map(|&x| Value::Int(x)).collect());
    let ty = CqlType::Frozen(Box::new(CqlType::List(Box::new(CqlType::Int))));
    assert_eq!(cv(&ty, l(&[1, 2]), l(&[1, 2, 0])), Less);
    assert_eq!(cv(&ty, l(&[-1, 9]), l(&[1])), Less);
    assert_eq!(cv(&ty, l(&[]), l(&[i32::MIN])), Less);
    let mty = CqlType::Map(Box::new(CqlType::Int), Box::new(CqlType::Text));
    let m = |k: i32, v: &str| Value::Map(vec![(Value::Int(k), Value::Text(v.into()))]);
    assert_eq!(cv(&mty, m(1, "b"), m(1, "a")), Greater);
    assert_eq!(cv(&mty, m(-1, "z"), m(1, "a")), Less);
    let tty = CqlType::Tuple(vec![CqlType::Int, CqlType::Text]);
    let t = |a: Option<i32>, b: Option<&str>| {
        Value::Tuple(vec![a.map(Value::Int), b.map(|s| Value::Text(s.into()))])
    };
    assert_eq!(cv(&tty, t(None, Some("z")), t(Some(i32::MIN), None)), Less);
    assert_eq!(cv(&tty, t(Some(1), None), t(Some(1), Some("a"))), Less);
    assert_eq!(cv(&tty, t(Some(1), Some("")), t(Some(1), None)), Greater);
    // Trailing nulls and empties count as absent.
    let short = Value::Tuple(vec![Some(Value::Int(1))]);
    assert_eq!(cv(&tty, short.clone(), t(Some(1), None)), Equal);
    assert_eq!(cv(&tty, short, t(Some(1), Some(""))), Equal);
}

#[test]
fn malformed_input_falls_back_to_bytes() {
    assert_eq!(compare(&CqlType::Int, &[1], &[0, 0, 0, 5]), Greater);
    let ty = CqlType::List(Box::new(CqlType::Int));
    assert_eq!(compare(&ty, &[0, 0, 0, 1, 0xFF], &[0, 0, 0, 1, 0]), Greater);
    assert_eq!(
        compare(&CqlType::Decimal, &[0, 0, 0, 1], &[0, 0, 0, 1, 5]),
        Less
    );
    assert_eq!(compare(&CqlType::Uuid, &[1; 15], &[1; 16]), Less);
}

#[test]
fn user_types_order_field_by_field() {
    let u = CqlType::Frozen(Box::new(CqlType::Udt(std::sync::Arc::new(
        crate::UserType {
            keyspace: "ks".into(),
            name: "p".into(),
            field_names: vec!["a".into(), "b".into()],
            field_types: vec![CqlType::Int, CqlType::Text],
        },
    ))));
    let v = |a: Option<i32>, b: Option<&str>| {
        Value::Tuple(vec![a.map(Value::Int), b.map(|s| Value::Text(s.into()))])
    };
    assert_eq!(cv(&u, v(Some(-5), Some("z")), v(Some(1), Some("a"))), Less);
    assert_eq!(
        cv(&u, v(Some(1), Some("b")), v(Some(1), Some("a"))),
        Greater
    );
    assert_eq!(cv(&u, v(None, Some("z")), v(Some(i32::MIN), None)), Less);
    assert_eq!(cv(&u, v(Some(1), None), v(Some(1), Some("a"))), Less);
}
