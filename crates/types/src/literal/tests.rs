use super::*;
use crate::time::parse_uuid;

fn int_err(ty: &CqlType, s: &str) -> Error {
    from_integer_literal(ty, s).unwrap_err()
}

#[test]
fn strings() {
    assert_eq!(
        from_string_literal(&CqlType::Text, "it's"),
        Ok(Value::Text("it's".into()))
    );
    assert!(from_string_literal(&CqlType::Ascii, "é").is_err());
    assert_eq!(
        from_string_literal(&CqlType::Inet, "10.0.0.1"),
        Ok(Value::Inet("10.0.0.1".parse().unwrap()))
    );
    assert!(from_string_literal(&CqlType::Inet, "localhost").is_err());
    assert_eq!(
        from_string_literal(&CqlType::Date, "1970-01-02"),
        Ok(Value::Date((1 << 31) + 1))
    );
    assert_eq!(
        from_string_literal(&CqlType::Timestamp, "1970-01-01 00:00:01Z"),
        Ok(Value::Timestamp(1000))
    );
    assert_eq!(
        from_string_literal(&CqlType::Time, "00:00:01"),
        Ok(Value::Time(1_000_000_000))
    );
    let e = from_string_literal(&CqlType::Int, "1").unwrap_err();
    assert_eq!(
        e.message_for_column("k"),
        "Invalid STRING constant (1) for \"k\" of type int"
    );
    assert!(from_string_literal(&CqlType::Blob, "00").is_err());
    assert!(from_string_literal(&CqlType::Uuid, "123e4567-e89b-12d3-a456-426614174000").is_err());
    let frozen_list = CqlType::Frozen(Box::new(CqlType::List(Box::new(CqlType::Text))));
    assert!(matches!(
        from_string_literal(&frozen_list, "x"),
        Err(Error::InvalidLiteral { kind: "STRING", .. })
    ));
}

#[test]
fn integers() {
    assert_eq!(
        from_integer_literal(&CqlType::Int, "-2147483648"),
        Ok(Value::Int(i32::MIN))
    );
    assert_eq!(
        int_err(&CqlType::Int, "2147483648"),
        Error::Marshal("Unable to make int from '2147483648'".into())
    );
    assert!(from_integer_literal(&CqlType::TinyInt, "128").is_err());
    assert_eq!(
        from_integer_literal(&CqlType::TinyInt, "-128"),
        Ok(Value::TinyInt(-128))
    );
    assert!(from_integer_literal(&CqlType::SmallInt, "32768").is_err());
    assert_eq!(
        from_integer_literal(&CqlType::BigInt, "9223372036854775807"),
        Ok(Value::BigInt(i64::MAX))
    );
    assert!(from_integer_literal(&CqlType::BigInt, "9223372036854775808").is_err());
    assert_eq!(
        from_integer_literal(&CqlType::Counter, "5"),
        Ok(Value::Counter(5))
    );
    assert_eq!(
        from_integer_literal(&CqlType::Varint, "-99999999999999999999999"),
        Ok(Value::Varint("-99999999999999999999999".parse().unwrap()))
    );
    assert_eq!(
        from_integer_literal(&CqlType::Decimal, "12"),
        Ok(Value::Decimal {
            unscaled: 12.into(),
            scale: 0
        })
    );
    assert_eq!(
        from_integer_literal(&CqlType::Double, "3"),
        Ok(Value::Double(3.0))
    );
    assert_eq!(
        from_integer_literal(&CqlType::Float, "3"),
        Ok(Value::Float(3.0))
    );
    assert_eq!(
        from_integer_literal(&CqlType::Timestamp, "1000"),
        Ok(Value::Timestamp(1000))
    );
    assert_eq!(
        from_integer_literal(&CqlType::Date, "2147483648"),
        Ok(Value::Date(1 << 31))
    );
    assert_eq!(
        from_integer_literal(&CqlType::Time, "5"),
        Ok(Value::Time(5))
    );
    assert!(from_integer_literal(&CqlType::Duration, "5").is_err());
    let e = int_err(&CqlType::Text, "42");
    assert_eq!(
        e.message_for_column("v"),
        "Invalid INTEGER constant (42) for \"v\" of type text"
    );
    assert!(matches!(
        int_err(&CqlType::Boolean, "1"),
        Error::InvalidLiteral { .. }
    ));
}

#[test]
fn floats() {
    assert_eq!(
        from_float_literal(&CqlType::Double, "1.5"),
        Ok(Value::Double(1.5))
    );
    assert_eq!(
        from_float_literal(&CqlType::Double, "-Infinity"),
        Ok(Value::Double(f64::NEG_INFINITY))
    );
    assert_eq!(
        from_float_literal(&CqlType::Float, "Infinity"),
        Ok(Value::Float(f32::INFINITY))
    );
    assert!(
        matches!(from_float_literal(&CqlType::Float, "NaN"), Ok(Value::Float(f)) if f.is_nan())
    );
    assert_eq!(
        from_float_literal(&CqlType::Float, "0.1"),
        Ok(Value::Float(0.1))
    );
    assert_eq!(
        from_float_literal(&CqlType::Decimal, "1.50e-3"),
        Ok(Value::Decimal {
            unscaled: 150.into(),
            scale: 5
        })
    );
    assert!(from_float_literal(&CqlType::Decimal, "NaN").is_err());
    assert!(from_float_literal(&CqlType::Double, "inf").is_err());
    assert!(matches!(
        from_float_literal(&CqlType::Int, "1.5"),
        Err(Error::InvalidLiteral { kind: "FLOAT", .. })
    ));
}

#[test]
fn other_kinds() {
    assert_eq!(
        from_boolean(&CqlType::Boolean, true),
        Ok(Value::Boolean(true))
    );
    assert!(from_boolean(&CqlType::Int, true).is_err());
    let v4 = parse_uuid("123e4567-e89b-42d3-a456-426614174000").unwrap();
    let v1 = parse_uuid("50554d6e-29bb-11e5-b345-feff819cdc9f").unwrap();
    assert_eq!(from_uuid_literal(&CqlType::Uuid, &v4), Ok(Value::Uuid(v4)));
    assert_eq!(
        from_uuid_literal(&CqlType::Timeuuid, &v1),
        Ok(Value::Timeuuid(v1))
    );
    assert!(from_uuid_literal(&CqlType::Timeuuid, &v4).is_err());
    assert!(from_uuid_literal(&CqlType::Text, &v4).is_err());
    assert_eq!(
        from_blob_literal(&CqlType::Blob, &[1, 2]),
        Ok(Value::Blob(vec![1, 2]))
    );
    let e = from_blob_literal(&CqlType::Text, &[0xCA, 0xFE]).unwrap_err();
    assert_eq!(
        e.message_for_column("c"),
        "Invalid HEX constant (0xcafe) for \"c\" of type text"
    );
    assert_eq!(
        from_duration_literal(&CqlType::Duration, "1mo2d3ns"),
        Ok(Value::Duration {
            months: 1,
            days: 2,
            nanos: 3
        })
    );
    assert!(from_duration_literal(&CqlType::Text, "1h").is_err());
}

#[test]
fn decimal_text() {
    for (s, u, sc) in [
        ("0", 0, 0),
        ("-1.25", -125, 2),
        ("1E+3", 1, -3),
        (".5", 5, 1),
        ("7.", 7, 0),
    ] {
        assert_eq!(parse_decimal(s), Some((BigInt::from(u), sc)), "{s}");
    }
    for bad in [
        "",
        ".",
        "1..2",
        "1e",
        "e5",
        "1.2.3",
        "--1",
        "1e99999999999",
        "0x10",
    ] {
        assert_eq!(parse_decimal(bad), None, "{bad}");
    }
    assert_eq!(format_decimal(&BigInt::from(-125), 2), "-1.25");
    assert_eq!(format_decimal(&BigInt::from(5), 3), "0.005");
    assert_eq!(format_decimal(&BigInt::from(5), -2), "500");
    assert_eq!(format_decimal(&BigInt::from(5), 1000), "5E-1000");
    assert_eq!(parse_decimal("5E-1000"), Some((BigInt::from(5), 1000)));
}

#[test]
fn cql_literals() {
    let v = Value::Map(vec![(
        Value::Text("it's".into()),
        Value::List(vec![Value::Blob(vec![0xAB])]),
    )]);
    assert_eq!(to_cql_literal(&v), "{'it''s': [0xab]}");
    assert_eq!(to_cql_literal(&Value::Blob(vec![])), "0x");
    assert_eq!(
        to_cql_literal(&Value::Timestamp(0)),
        "'1970-01-01 00:00:00.000000+0000'"
    );
    assert_eq!(
        to_cql_literal(&Value::Double(f64::NEG_INFINITY)),
        "-Infinity"
    );
    assert_eq!(to_cql_literal(&Value::Float(1.0)), "1.0");
    assert_eq!(to_cql_literal(&Value::Double(1e300)), "1e300");
    let t = Value::Tuple(vec![Some(Value::Int(1)), None, Some(Value::Set(vec![]))]);
    assert_eq!(to_cql_literal(&t), "(1, null, {})");
    let u = parse_uuid("123e4567-e89b-42d3-a456-426614174000").unwrap();
    assert_eq!(
        to_cql_literal(&Value::Uuid(u)),
        "123e4567-e89b-42d3-a456-426614174000"
    );
    assert_eq!(
        to_cql_literal(&Value::Duration {
            months: 0,
            days: 1,
            nanos: 0
        }),
        "1d"
    );
    assert_eq!(
        to_cql_literal(&Value::Inet("::1".parse().unwrap())),
        "'::1'"
    );
    assert_eq!(to_cql_literal(&Value::Date(1 << 31)), "'1970-01-01'");
    assert_eq!(to_cql_literal(&Value::Time(1)), "'00:00:00.000000001'");
}
