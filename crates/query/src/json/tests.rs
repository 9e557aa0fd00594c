//! JSON text of every type, and JSON read back into every type, with the
//! texts and messages Cassandra 5.0.4 gives (tests/differential
//! 16_issue21_json.cql checks the same against a real node).

use super::decode::{from_json, DecodeError};
use super::encode::{timestamp_text, to_json};
use super::text::{parse, Json, JSON_NESTING_DEPTH_MAX};
use super::*;
use num_bigint::BigInt;
use std::net::IpAddr;
use varve_types::time::parse_uuid;
use varve_types::{CqlType, Value};

fn json(v: Value) -> String {
    to_json(Some(&v))
}

fn read(ty: &CqlType, text: &str) -> std::result::Result<Option<Value>, DecodeError> {
    from_json(ty, &parse(text).expect("valid JSON"))
}

fn marshal_error(ty: &CqlType, text: &str) -> String {
    match read(ty, text) {
        Err(DecodeError::Marshal(m)) => m,
        other => panic!("{text} as {ty}: {other:?}"),
    }
}

#[test]
fn scalars_encode_as_cassandra_writes_them() {
    assert_eq!(to_json(None), "null");
    assert_eq!(json(Value::Int(-7)), "-7");
    assert_eq!(json(Value::TinyInt(4)), "4");
    assert_eq!(json(Value::SmallInt(3)), "3");
    assert_eq!(json(Value::BigInt(i64::MAX)), "9223372036854775807");
    assert_eq!(json(Value::Counter(5)), "5");
    let big: BigInt = "123456789012345678901234567890".parse().unwrap();
    assert_eq!(json(Value::Varint(big)), "123456789012345678901234567890");
    assert_eq!(json(Value::Boolean(true)), "true");
    assert_eq!(json(Value::Blob(vec![0xca, 0xfe])), "\"0xcafe\"");
    assert_eq!(json(Value::Blob(vec![])), "\"0x\"");
    assert_eq!(
        json(Value::Text("q\"u\\o/te' é\t\n\u{1}".into())),
        "\"q\\\"u\\\\o/te' é\\t\\n\\u0001\""
    );
    assert_eq!(json(Value::Ascii("a".into())), "\"a\"");
    let u = parse_uuid("550e8400-e29b-41d4-a716-446655440000").unwrap();
    assert_eq!(
        json(Value::Uuid(u)),
        "\"550e8400-e29b-41d4-a716-446655440000\""
    );
    assert_eq!(
        json(Value::Timeuuid(u)),
        "\"550e8400-e29b-41d4-a716-446655440000\""
    );
}

#[test]
fn floats_and_decimals_encode_as_java_prints_them() {
    assert_eq!(json(Value::Double(1.5)), "1.5");
    assert_eq!(json(Value::Double(12345678.9)), "1.23456789E7");
    assert_eq!(json(Value::Double(1e-5)), "1.0E-5");
    assert_eq!(json(Value::Double(f64::NAN)), "null");
    assert_eq!(json(Value::Double(f64::NEG_INFINITY)), "null");
    assert_eq!(json(Value::Float(f32::INFINITY)), "null");
    assert_eq!(json(Value::Float(0.1)), "0.1");
    assert_eq!(json(Value::Float(1e10)), "1.0E10");
    let dec = |u: i64, scale: i32| {
        json(Value::Decimal {
            unscaled: BigInt::from(u),
            scale,
        })
    };
    assert_eq!(dec(150, 2), "1.50");
    assert_eq!(dec(1, -3), "1E+3");
    assert_eq!(dec(1, 6), "0.000001");
    assert_eq!(dec(10, 8), "1.0E-7");
}

#[test]
fn times_and_addresses_encode_as_strings() {
    assert_eq!(
        timestamp_text(1_430_659_854_234),
        "2015-05-03 13:30:54.234Z"
    );
    assert_eq!(timestamp_text(-315_619_200_000), "1960-01-01 00:00:00.000Z");
    // One millisecond before year 0: 1 BC is year 0, 2 BC is year -1 (era year 2).
    assert_eq!(
        timestamp_text(-62_167_219_200_001),
        "0002-12-31 23:59:59.999Z"
    );
    assert_eq!(
        timestamp_text(253_402_300_800_000),
        "+10000-01-01 00:00:00.000Z"
    );
    assert_eq!(json(Value::Timestamp(0)), "\"1970-01-01 00:00:00.000Z\"");
    assert_eq!(json(Value::Date(1 << 31)), "\"1970-01-01\"");
    assert_eq!(json(Value::Date(0)), "\"-5877641-06-23\"");
    assert_eq!(
        json(Value::Time(48_654_234_000_000)),
        "\"13:30:54.234000000\""
    );
    let d = Value::Duration {
        months: 0,
        days: 0,
        nanos: 3_723_000_000_000,
    };
    assert_eq!(json(d), "\"1h2m3s\"");
    let zero = Value::Duration {
        months: 0,
        days: 0,
        nanos: 0,
    };
    assert_eq!(json(zero), "\"\"");
    let ip = |s: &str| json(Value::Inet(s.parse::<IpAddr>().unwrap()));
    assert_eq!(ip("127.0.0.1"), "\"127.0.0.1\"");
    assert_eq!(ip("2001:db8::1"), "\"2001:db8:0:0:0:0:0:1\"");
    assert_eq!(ip("::ffff:1.2.3.4"), "\"1.2.3.4\"");
}

#[test]
fn collections_encode_as_arrays_and_objects() {
    let list = Value::List(vec![Value::Int(1), Value::Int(2)]);
    assert_eq!(json(list.clone()), "[1, 2]");
    assert_eq!(json(Value::Set(vec![Value::Text("x".into())])), "[\"x\"]");
    let map = Value::Map(vec![(Value::Int(1), Value::Text("one".into()))]);
    assert_eq!(json(map), "{\"1\": \"one\"}");
    let text_keys = Value::Map(vec![(Value::Text("k".into()), Value::Boolean(false))]);
    assert_eq!(json(text_keys), "{\"k\": false}");
    let list_keys = Value::Map(vec![(list, Value::Boolean(true))]);
    assert_eq!(json(list_keys), "{\"[1, 2]\": true}");
    let tuple = Value::Tuple(vec![Some(Value::Int(1)), None, Some(Value::Double(2.5))]);
    assert_eq!(json(tuple), "[1, null, 2.5]");
}

#[test]
fn select_json_keys_quote_names_that_are_not_lower_case() {
    assert_eq!(column_key("k"), "\"k\"");
    assert_eq!(column_key("writetime(v)"), "\"writetime(v)\"");
    assert_eq!(column_key("CaseCol"), "\"\\\"CaseCol\\\"\"");
}

#[test]
fn numbers_parse_into_the_class_jackson_picks() {
    assert_eq!(parse("1").unwrap(), Json::Int(1));
    assert_eq!(parse("2147483648").unwrap(), Json::Long(2_147_483_648));
    assert!(matches!(
        parse("9223372036854775808").unwrap(),
        Json::BigInteger(_)
    ));
    assert_eq!(parse("1.0").unwrap(), Json::Double(1.0));
    assert_eq!(parse("1e400").unwrap(), Json::Double(f64::INFINITY));
    assert!(parse("01").is_err());
    assert!(parse("-").is_err());
    assert!(parse("1.").is_err());
}

#[test]
fn text_parses_with_escapes_and_ignores_what_follows_the_value() {
    assert_eq!(
        parse("\"\\u00e9\\ud83d\\ude00\\n\"").unwrap(),
        Json::Str("é😀\n".into())
    );
    assert_eq!(
        parse("{\"k\": 15} x").unwrap(),
        Json::Map(vec![("k".into(), Json::Int(15))])
    );
    // A repeated key keeps its first place and its last value.
    let m = parse("{\"a\": 1, \"b\": 2, \"a\": 3}").unwrap();
    assert_eq!(
        m,
        Json::Map(vec![("a".into(), Json::Int(3)), ("b".into(), Json::Int(2))])
    );
    for bad in [
        "",
        "  ",
        "{\"k\": 1,}",
        "x",
        "[1",
        "\"a",
        "\"\t\"",
        "{1: 2}",
        "\"\\x\"",
    ] {
        assert!(parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn nesting_is_read_to_the_maximum_and_refused_past_it() {
    let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert!(parse(&nested(JSON_NESTING_DEPTH_MAX)).is_ok());
    let err = parse(&nested(JSON_NESTING_DEPTH_MAX + 1)).unwrap_err();
    assert!(err.contains("nesting depth"), "{err}");
}

#[test]
fn java_text_names_values_as_cassandra_errors_do() {
    let j = parse("{\"a\": [1, \"x\", 1.5e10]}").unwrap();
    assert_eq!(j.java_text(), "{a=[1, x, 1.5E10]}");
    assert_eq!(j.class_name(), "LinkedHashMap");
}

#[test]
fn scalars_decode_from_numbers_and_strings() {
    assert_eq!(read(&CqlType::Int, "5"), Ok(Some(Value::Int(5))));
    assert_eq!(read(&CqlType::Int, "\"5\""), Ok(Some(Value::Int(5))));
    assert_eq!(read(&CqlType::Int, "null"), Ok(None));
    assert_eq!(
        read(&CqlType::BigInt, "2147483648"),
        Ok(Some(Value::BigInt(2_147_483_648)))
    );
    assert_eq!(
        read(&CqlType::SmallInt, "\"12\""),
        Ok(Some(Value::SmallInt(12)))
    );
    assert_eq!(
        read(&CqlType::Varint, "\"12\""),
        Ok(Some(Value::Varint(BigInt::from(12))))
    );
    assert_eq!(
        read(&CqlType::Double, "\"NaN\"")
            .map(|v| v.map(|v| matches!(v, Value::Double(d) if d.is_nan()))),
        Ok(Some(true))
    );
    assert_eq!(
        read(&CqlType::Float, "\"-Infinity\""),
        Ok(Some(Value::Float(f32::NEG_INFINITY)))
    );
    assert_eq!(read(&CqlType::Double, "1"), Ok(Some(Value::Double(1.0))));
    assert_eq!(
        read(&CqlType::Decimal, "0.10"),
        Ok(Some(Value::Decimal {
            unscaled: BigInt::from(1),
            scale: 1
        }))
    );
    assert_eq!(
        read(&CqlType::Decimal, "\"1.0E+10\""),
        Ok(Some(Value::Decimal {
            unscaled: BigInt::from(10),
            scale: -9
        }))
    );
    assert_eq!(
        read(&CqlType::Boolean, "\"TRUE\""),
        Ok(Some(Value::Boolean(true)))
    );
    assert_eq!(
        read(&CqlType::Blob, "\"0x\""),
        Ok(Some(Value::Blob(vec![])))
    );
    assert_eq!(
        read(&CqlType::Timestamp, "253402300800000"),
        Ok(Some(Value::Timestamp(253_402_300_800_000)))
    );
    assert_eq!(
        read(&CqlType::Timestamp, "\"1000\""),
        Ok(Some(Value::Timestamp(1000)))
    );
    assert_eq!(
        read(&CqlType::Timestamp, "\"2015-05-03T13:30:54+0200\""),
        Ok(Some(Value::Timestamp(1_430_652_654_000)))
    );
    assert_eq!(
        read(&CqlType::Date, "\"1970-01-02\""),
        Ok(Some(Value::Date((1 << 31) + 1)))
    );
    assert_eq!(
        read(&CqlType::Time, "\"00:00:01\""),
        Ok(Some(Value::Time(1_000_000_000)))
    );
    assert_eq!(
        read(&CqlType::Duration, "\"P1D\""),
        Ok(Some(Value::Duration {
            months: 0,
            days: 1,
            nanos: 0
        }))
    );
    assert_eq!(
        read(&CqlType::Inet, "\"::1\""),
        Ok(Some(Value::Inet("::1".parse().unwrap())))
    );
}

#[test]
fn scalars_refuse_what_cassandra_refuses() {
    assert_eq!(
        marshal_error(&CqlType::Int, "1.5"),
        "Expected an int value, but got a Double: 1.5"
    );
    assert_eq!(
        marshal_error(&CqlType::Int, "2147483648"),
        "Expected an int value, but got a Long: 2147483648"
    );
    assert_eq!(
        marshal_error(&CqlType::Int, "\"x\""),
        "Unable to make int from 'x'"
    );
    assert_eq!(
        marshal_error(&CqlType::BigInt, "true"),
        "Expected a bigint value, but got a Boolean: true"
    );
    assert_eq!(
        marshal_error(&CqlType::TinyInt, "300"),
        "Unable to make byte from '300'"
    );
    assert_eq!(
        marshal_error(&CqlType::SmallInt, "32768"),
        "Unable to make short from '32768'"
    );
    assert_eq!(
        marshal_error(&CqlType::Varint, "1e3"),
        "Value '1000.0' is not a valid representation of a varint value"
    );
    assert_eq!(
        marshal_error(&CqlType::Decimal, "1e400"),
        "Value 'Infinity' is not a valid representation of a decimal value"
    );
    assert_eq!(
        marshal_error(&CqlType::Text, "5"),
        "Expected a UTF-8 string, but got a Integer: 5"
    );
    assert_eq!(
        marshal_error(&CqlType::Ascii, "1"),
        "Expected an ascii string, but got a Integer: 1"
    );
    assert!(marshal_error(&CqlType::Ascii, "\"é\"").starts_with("Invalid ASCII character"));
    assert_eq!(
        marshal_error(&CqlType::Boolean, "1"),
        "Expected a boolean value, but got a Integer: 1"
    );
    assert_eq!(
        marshal_error(&CqlType::Boolean, "\"yes\""),
        "Unable to make boolean from 'yes'"
    );
    assert!(marshal_error(&CqlType::Blob, "\"ff\"").contains("missing 0x prefix"));
    assert!(marshal_error(&CqlType::Blob, "\"0xf\"").contains("cannot parse 'f' as hex bytes"));
    assert_eq!(marshal_error(&CqlType::Timestamp, "1000"), "Expected a long or a datestring representation of a timestamp value, but got a Integer: 1000");
    assert_eq!(
        marshal_error(&CqlType::Timestamp, "\"x\""),
        "Unable to parse a date/time from 'x'"
    );
    assert_eq!(
        marshal_error(&CqlType::Date, "-1"),
        "Expected a string representation of a date value, but got a Integer: -1"
    );
    assert_eq!(
        marshal_error(&CqlType::Time, "\"25:00:00\""),
        "(TimeType) Unable to coerce '25:00:00' to a formatted time (long)"
    );
    assert_eq!(
        marshal_error(&CqlType::Uuid, "5"),
        "Expected a string representation of a uuid, but got a Integer: 5"
    );
    assert_eq!(
        marshal_error(&CqlType::Uuid, "\"x\""),
        "Unable to make UUID from 'x'"
    );
    assert_eq!(
        marshal_error(
            &CqlType::Timeuuid,
            "\"550e8400-e29b-41d4-a716-446655440000\""
        ),
        "TimeUUID supports only version 1 UUIDs"
    );
    assert_eq!(
        marshal_error(&CqlType::Inet, "5"),
        "Expected a string representation of an inet value, but got a Integer: 5"
    );
    assert_eq!(
        read(&CqlType::Duration, "\"x\""),
        Err(DecodeError::Invalid(
            "Unable to convert 'x' to a duration".into()
        ))
    );
}

#[test]
fn collections_and_tuples_decode_from_arrays_objects_and_strings() {
    let list = CqlType::List(Box::new(CqlType::Int));
    assert_eq!(
        read(&list, "[1, 2]"),
        Ok(Some(Value::List(vec![Value::Int(1), Value::Int(2)])))
    );
    assert_eq!(
        read(&list, "\"[1,2]\""),
        Ok(Some(Value::List(vec![Value::Int(1), Value::Int(2)])))
    );
    assert_eq!(
        marshal_error(&list, "[1, null]"),
        "Invalid null element in list"
    );
    assert_eq!(
        marshal_error(&list, "{\"a\": 1}"),
        "Expected a list, but got a LinkedHashMap: {a=1}"
    );
    let set = CqlType::Set(Box::new(CqlType::Text));
    assert_eq!(
        marshal_error(&set, "1"),
        "Expected a list (representing a set), but got a Integer: 1"
    );
    assert_eq!(
        marshal_error(&set, "[\"a\", null]"),
        "Invalid null element in set"
    );
    let map = CqlType::Map(Box::new(CqlType::Int), Box::new(CqlType::Text));
    assert_eq!(
        read(&map, "{\"1\": \"a\"}"),
        Ok(Some(Value::Map(vec![(
            Value::Int(1),
            Value::Text("a".into())
        )])))
    );
    assert_eq!(
        marshal_error(&map, "{\"x\": \"a\"}"),
        "Unable to make int from 'x'"
    );
    assert_eq!(
        marshal_error(&map, "{\"1\": null}"),
        "Invalid null value in map"
    );
    assert_eq!(
        marshal_error(&map, "[1]"),
        "Expected a map, but got a ArrayList: [1]"
    );
    let frozen_keys = CqlType::Frozen(Box::new(CqlType::Map(
        Box::new(CqlType::Frozen(Box::new(list.clone()))),
        Box::new(CqlType::Boolean),
    )));
    assert_eq!(
        read(&frozen_keys, "{\"[ 2 , 3 ]\": false}"),
        Ok(Some(Value::Map(vec![(
            Value::List(vec![Value::Int(2), Value::Int(3)]),
            Value::Boolean(false)
        )])))
    );
    assert!(marshal_error(&frozen_keys, "{\"x\": true}")
        .starts_with("Error decoding JSON string: Unrecognized token 'x'"));
    let tuple = CqlType::Tuple(vec![CqlType::Int, CqlType::Text, CqlType::Double]);
    assert_eq!(
        read(&tuple, "[1, null, 2]"),
        Ok(Some(Value::Tuple(vec![
            Some(Value::Int(1)),
            None,
            Some(Value::Double(2.0))
        ])))
    );
    assert_eq!(
        marshal_error(&tuple, "[1, \"a\"]"),
        "Tuple is missing items (expected 3): [1, a]"
    );
    assert_eq!(
        marshal_error(&tuple, "[1, \"a\", 1, 2]"),
        "Tuple contains extra items (expected 3): [1, a, 1, 2]"
    );
    assert_eq!(
        marshal_error(&tuple, "{\"a\":1}"),
        "Expected a list representation of a tuple, but got a LinkedHashMap: {a=1}"
    );
}

#[test]
fn every_value_reads_back_from_its_own_json() {
    let cases: Vec<(CqlType, Value)> = vec![
        (CqlType::Int, Value::Int(-3)),
        (CqlType::BigInt, Value::BigInt(i64::MIN)),
        (CqlType::Double, Value::Double(0.1)),
        (CqlType::Float, Value::Float(3.4028235e38)),
        // A decimal read from a JSON number goes through a double, as in
        // Cassandra: `1.50` comes back as 1.5, so the case has no trailing zero.
        (
            CqlType::Decimal,
            Value::Decimal {
                unscaled: BigInt::from(15),
                scale: 1,
            },
        ),
        (CqlType::Text, Value::Text("tab\t\"q\" é😀".into())),
        (CqlType::Blob, Value::Blob(vec![0, 255])),
        (CqlType::Timestamp, Value::Timestamp(1_430_659_854_234)),
        (CqlType::Date, Value::Date((1 << 31) + 16_000)),
        (CqlType::Time, Value::Time(1)),
        (
            CqlType::Duration,
            Value::Duration {
                months: -1,
                days: -2,
                nanos: -3,
            },
        ),
        (CqlType::Inet, Value::Inet("2001:db8::1".parse().unwrap())),
        (
            CqlType::Map(Box::new(CqlType::Boolean), Box::new(CqlType::Int)),
            Value::Map(vec![(Value::Boolean(true), Value::Int(1))]),
        ),
    ];
    for (ty, v) in cases {
        let text = to_json(Some(&v));
        assert_eq!(read(&ty, &text), Ok(Some(v)), "{ty} via {text}");
    }
}

#[test]
fn a_select_json_row_is_one_text_object_keyed_by_result_column() {
    let spec = |name: &str, ty: CqlType| crate::api::ColumnSpec {
        keyspace: "ks".into(),
        table: "t".into(),
        name: name.into(),
        ty,
    };
    let specs = vec![
        spec("k", CqlType::Int),
        spec("Up", CqlType::Text),
        spec("system.tojson(v)", CqlType::Text),
    ];
    let cell = |v: Value| Some(bytes::Bytes::from(varve_types::codec::serialize(&v)));
    let rows = vec![vec![
        cell(Value::Int(1)),
        None,
        cell(Value::Text("[1]".into())),
    ]];
    let out = rows_to_json(&specs, rows).unwrap();
    let text =
        varve_types::codec::deserialize(&CqlType::Text, out[0][0].as_ref().unwrap()).unwrap();
    assert_eq!(
        text,
        Value::Text("{\"k\": 1, \"\\\"Up\\\"\": null, \"system.tojson(v)\": \"[1]\"}".into())
    );
    let columns = select_specs(&specs, "ks", "t");
    assert_eq!(columns.len(), 1);
    assert_eq!(
        (columns[0].name.as_str(), &columns[0].ty),
        (JSON_COLUMN, &CqlType::Text)
    );
}
