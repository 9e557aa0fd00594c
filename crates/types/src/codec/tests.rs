use super::*;

fn list(t: CqlType) -> CqlType {
    CqlType::List(Box::new(t))
}
fn set(t: CqlType) -> CqlType {
    CqlType::Set(Box::new(t))
}
fn frozen(t: CqlType) -> CqlType {
    CqlType::Frozen(Box::new(t))
}

fn rt(ty: &CqlType, v: Value) {
    let b = serialize(&v);
    assert_eq!(deserialize(ty, &b), Ok(v), "{ty}");
}

#[test]
fn fixed_width_encodings() {
    assert_eq!(serialize(&Value::Int(1)), [0, 0, 0, 1]);
    assert_eq!(serialize(&Value::SmallInt(-2)), [0xFF, 0xFE]);
    assert_eq!(serialize(&Value::Boolean(true)), [1]);
    assert_eq!(serialize(&Value::Date(1 << 31)), [0x80, 0, 0, 0]);
    assert_eq!(
        serialize(&Value::Double(1.0)),
        [0x3F, 0xF0, 0, 0, 0, 0, 0, 0]
    );
    assert_eq!(
        deserialize(&CqlType::Boolean, &[2]),
        Ok(Value::Boolean(true))
    );
    for (ty, ok_len) in [
        (CqlType::Boolean, 1),
        (CqlType::TinyInt, 1),
        (CqlType::SmallInt, 2),
        (CqlType::Int, 4),
        (CqlType::Float, 4),
        (CqlType::Date, 4),
        (CqlType::BigInt, 8),
        (CqlType::Counter, 8),
        (CqlType::Timestamp, 8),
        (CqlType::Double, 8),
        (CqlType::Uuid, 16),
    ] {
        assert!(deserialize(&ty, &vec![0; ok_len]).is_ok(), "{ty}");
        assert!(deserialize(&ty, &vec![0; ok_len + 1]).is_err(), "{ty}");
        assert!(deserialize(&ty, &vec![0; ok_len - 1]).is_err(), "{ty}");
        assert!(is_empty_allowed(&ty));
    }
}

#[test]
fn varint_and_decimal() {
    use num_bigint::BigInt;
    assert_eq!(serialize(&Value::Varint(BigInt::from(0))), [0]);
    assert_eq!(serialize(&Value::Varint(BigInt::from(128))), [0x00, 0x80]);
    assert_eq!(serialize(&Value::Varint(BigInt::from(-129))), [0xFF, 0x7F]);
    assert_eq!(
        deserialize(&CqlType::Varint, &[0xFF]),
        Ok(Value::Varint(BigInt::from(-1)))
    );
    assert!(deserialize(&CqlType::Varint, &[]).is_err());
    let d = Value::Decimal {
        unscaled: BigInt::from(12345),
        scale: 2,
    };
    assert_eq!(serialize(&d), [0, 0, 0, 2, 0x30, 0x39]);
    rt(&CqlType::Decimal, d);
    assert!(deserialize(&CqlType::Decimal, &[0, 0, 0, 2]).is_err());
}

#[test]
fn text_validation() {
    assert!(deserialize(&CqlType::Text, &[0xC3, 0x28]).is_err());
    assert!(deserialize(&CqlType::Ascii, "é".as_bytes()).is_err());
    assert_eq!(
        deserialize(&CqlType::Ascii, b""),
        Ok(Value::Ascii(String::new()))
    );
    rt(&CqlType::Text, Value::Text("héllo".into()));
}

#[test]
fn time_and_timeuuid() {
    assert!(deserialize(&CqlType::Time, &NANOS_PER_DAY.to_be_bytes()).is_err());
    assert!(deserialize(&CqlType::Time, &(-1i64).to_be_bytes()).is_err());
    rt(&CqlType::Time, Value::Time(NANOS_PER_DAY - 1));
    let mut u = [0u8; 16];
    assert!(deserialize(&CqlType::Timeuuid, &u).is_err());
    u[6] = 0x10;
    rt(&CqlType::Timeuuid, Value::Timeuuid(u));
    u[6] = 0x40;
    rt(&CqlType::Uuid, Value::Uuid(u));
}

#[test]
fn inet() {
    rt(&CqlType::Inet, Value::Inet("127.0.0.1".parse().unwrap()));
    rt(&CqlType::Inet, Value::Inet("::1".parse().unwrap()));
    assert!(deserialize(&CqlType::Inet, &[1, 2, 3]).is_err());
    assert!(deserialize(&CqlType::Inet, &[]).is_err());
}

#[test]
fn duration() {
    let v = Value::Duration {
        months: 1,
        days: 2,
        nanos: 3,
    };
    assert_eq!(serialize(&v), [2, 4, 6]);
    rt(&CqlType::Duration, v);
    rt(
        &CqlType::Duration,
        Value::Duration {
            months: -1,
            days: 0,
            nanos: i64::MIN,
        },
    );
    rt(
        &CqlType::Duration,
        Value::Duration {
            months: i32::MAX,
            days: i32::MAX,
            nanos: i64::MAX,
        },
    );
    // Mixed signs, truncation, trailing bytes, months beyond int.
    assert!(deserialize(&CqlType::Duration, &[2, 3, 0]).is_err());
    assert!(deserialize(&CqlType::Duration, &[2, 4]).is_err());
    assert!(deserialize(&CqlType::Duration, &[2, 4, 6, 0]).is_err());
    let mut big = Vec::new();
    write_vint(vint::zigzag(i64::from(i32::MAX) + 1), &mut big);
    big.extend_from_slice(&[0, 0]);
    assert!(deserialize(&CqlType::Duration, &big).is_err());
    assert!(!is_empty_allowed(&CqlType::Duration));
}

#[test]
fn collection_framing() {
    let ty = list(CqlType::Int);
    let v = Value::List(vec![Value::Int(1), Value::Int(2)]);
    let b = serialize(&v);
    assert_eq!(
        b,
        [0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 2]
    );
    rt(&ty, v);
    let bad: [&[u8]; 7] = [
        &[0, 0, 0],                            // truncated count
        &[0xFF, 0xFF, 0xFF, 0xFF],             // negative count
        &[0, 0, 0, 1],                         // missing element
        &[0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF], // null element
        &[0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 1], // length past end
        &[0, 0, 0, 0, 9],                      // trailing byte
        &[0x7F, 0xFF, 0xFF, 0xFF],             // absurd count
    ];
    for b in bad {
        assert!(deserialize(&ty, b).is_err(), "{b:?}");
    }
    assert!(deserialize(&ty, &[]).is_err());
    assert!(!is_empty_allowed(&ty));
}

#[test]
fn sets_and_maps_are_sorted_and_deduplicated() {
    let v = Value::Set(vec![
        Value::Int(3),
        Value::Int(-1),
        Value::Int(3),
        Value::Int(2),
    ]);
    let b = serialize(&v);
    assert_eq!(
        deserialize(&set(CqlType::Int), &b),
        Ok(Value::Set(vec![
            Value::Int(-1),
            Value::Int(2),
            Value::Int(3)
        ]))
    );
    let m = Value::Map(vec![
        (Value::Text("b".into()), Value::Int(1)),
        (Value::Text("a".into()), Value::Int(2)),
        (Value::Text("b".into()), Value::Int(3)),
    ]);
    let ty = CqlType::Map(Box::new(CqlType::Text), Box::new(CqlType::Int));
    assert_eq!(
        deserialize(&ty, &serialize(&m)),
        Ok(Value::Map(vec![
            (Value::Text("a".into()), Value::Int(2)),
            (Value::Text("b".into()), Value::Int(3)),
        ]))
    );
}

#[test]
fn tuples_with_nulls() {
    let ty = CqlType::Tuple(vec![CqlType::Int, CqlType::Text, CqlType::Boolean]);
    let v = Value::Tuple(vec![Some(Value::Int(1)), None, Some(Value::Boolean(false))]);
    rt(&ty, v.clone());
    rt(&frozen(ty.clone()), v);
    // Missing trailing fields read as null.
    let short = serialize(&Value::Tuple(vec![Some(Value::Int(7))]));
    assert_eq!(
        deserialize(&ty, &short),
        Ok(Value::Tuple(vec![Some(Value::Int(7)), None, None]))
    );
    let mut long = serialize(&Value::Tuple(vec![None, None, None]));
    long.extend_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF]);
    assert!(deserialize(&ty, &long).is_err());
}

#[test]
fn nesting_limit() {
    let nest = |levels: usize| {
        let (mut ty, mut v) = (CqlType::Int, Value::Int(0));
        for _ in 0..levels {
            ty = list(ty);
            v = Value::List(vec![v]);
        }
        (ty, v)
    };
    let (ty, v) = nest(NESTING_DEPTH_MAX);
    assert_eq!(deserialize(&ty, &serialize(&v)), Ok(v));
    let (ty, v) = nest(NESTING_DEPTH_MAX + 2);
    assert!(deserialize(&ty, &serialize(&v)).is_err());
}

mod user_types {
    use crate::codec::{deserialize, serialize};
    use crate::{CqlType, UserType, Value};
    use std::sync::Arc;

    fn addr() -> CqlType {
        CqlType::Frozen(Box::new(CqlType::Udt(Arc::new(UserType {
            keyspace: "ks".into(),
            name: "addr".into(),
            field_names: vec!["street".into(), "zip".into()],
            field_types: vec![CqlType::Text, CqlType::Int],
        }))))
    }

    #[test]
    fn a_user_type_value_round_trips() {
        let v = Value::Tuple(vec![Some(Value::Text("x".into())), None]);
        let bytes = serialize(&v);
        assert_eq!(bytes, [0, 0, 0, 1, b'x', 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(deserialize(&addr(), &bytes).unwrap(), v);
    }

    #[test]
    fn missing_trailing_fields_read_as_null() {
        let v = deserialize(&addr(), &[0, 0, 0, 1, b'x']).unwrap();
        assert_eq!(v, Value::Tuple(vec![Some(Value::Text("x".into())), None]));
        assert_eq!(
            deserialize(&addr(), &[]).unwrap(),
            Value::Tuple(vec![None, None])
        );
    }

    #[test]
    fn extra_fields_and_bad_fields_are_refused() {
        let three = serialize(&Value::Tuple(vec![None, None, None]));
        assert!(deserialize(&addr(), &three).is_err());
        assert!(deserialize(&addr(), &[0, 0, 0, 0, 0, 0, 0, 2, 0, 1]).is_err());
    }
}
