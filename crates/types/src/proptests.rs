//! Property tests across modules: codec round trips for every type
//! (nested frozen collections and tuples included), decoders that never
//! panic, and orderings that are total and agree with numeric order.

use crate::codec::{deserialize, serialize, stores_verbatim, validate, NANOS_PER_DAY};
use crate::compare::{compare, decimal_compare, java_double_compare, order_values};
use crate::literal::{format_decimal, parse_decimal, to_cql_literal};
use crate::time::{
    format_date, format_duration, format_time, format_timestamp, parse_date, parse_duration,
    parse_time, parse_timestamp,
};
use crate::{CqlType, Value};
use num_bigint::BigInt;
use proptest::collection::vec;
use proptest::prelude::*;
use std::cmp::Ordering;
use std::net::IpAddr;

const SCALAR_TYPES: [CqlType; 20] = [
    CqlType::Ascii,
    CqlType::Text,
    CqlType::Blob,
    CqlType::Boolean,
    CqlType::TinyInt,
    CqlType::SmallInt,
    CqlType::Int,
    CqlType::BigInt,
    CqlType::Varint,
    CqlType::Float,
    CqlType::Double,
    CqlType::Decimal,
    CqlType::Uuid,
    CqlType::Timeuuid,
    CqlType::Timestamp,
    CqlType::Date,
    CqlType::Time,
    CqlType::Duration,
    CqlType::Inet,
    CqlType::Counter,
];

fn scalar_type() -> impl Strategy<Value = CqlType> {
    proptest::sample::select(SCALAR_TYPES.to_vec())
}

fn any_type() -> impl Strategy<Value = CqlType> {
    scalar_type().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            inner.clone().prop_map(|t| CqlType::List(Box::new(t))),
            inner.clone().prop_map(|t| CqlType::Set(Box::new(t))),
            (inner.clone(), inner.clone())
                .prop_map(|(k, v)| CqlType::Map(Box::new(k), Box::new(v))),
            vec(inner.clone(), 1..4).prop_map(CqlType::Tuple),
            inner.clone().prop_map(|t| CqlType::Frozen(Box::new(t))),
            (inner, 1usize..4).prop_map(|(t, n)| CqlType::Vector(Box::new(t), n)),
        ]
    })
}

fn bigint() -> impl Strategy<Value = BigInt> {
    prop_oneof![
        any::<i128>().prop_map(BigInt::from),
        vec(any::<u8>(), 1..24).prop_map(|b| BigInt::from_signed_bytes_be(&b)),
    ]
}

fn value_of(ty: &CqlType) -> BoxedStrategy<Value> {
    match ty {
        CqlType::Ascii => "[ -~]{0,12}".prop_map(Value::Ascii).boxed(),
        CqlType::Text => ".{0,12}".prop_map(Value::Text).boxed(),
        CqlType::Blob => vec(any::<u8>(), 0..12).prop_map(Value::Blob).boxed(),
        CqlType::Boolean => any::<bool>().prop_map(Value::Boolean).boxed(),
        CqlType::TinyInt => any::<i8>().prop_map(Value::TinyInt).boxed(),
        CqlType::SmallInt => any::<i16>().prop_map(Value::SmallInt).boxed(),
        CqlType::Int => any::<i32>().prop_map(Value::Int).boxed(),
        CqlType::BigInt => any::<i64>().prop_map(Value::BigInt).boxed(),
        CqlType::Counter => any::<i64>().prop_map(Value::Counter).boxed(),
        CqlType::Varint => bigint().prop_map(Value::Varint).boxed(),
        CqlType::Float => any::<f32>().prop_map(Value::Float).boxed(),
        CqlType::Double => any::<f64>().prop_map(Value::Double).boxed(),
        CqlType::Decimal => (bigint(), any::<i32>())
            .prop_map(|(unscaled, scale)| Value::Decimal { unscaled, scale })
            .boxed(),
        CqlType::Uuid => any::<[u8; 16]>().prop_map(Value::Uuid).boxed(),
        CqlType::Custom(class) if class == crate::cql_type::LEXICAL_UUID_CLASS => {
            any::<[u8; 16]>().prop_map(Value::Uuid).boxed()
        }
        CqlType::Custom(class) if class == crate::cql_type::EMPTY_TYPE_CLASS => {
            Just(Value::Blob(Vec::new())).boxed()
        }
        CqlType::Custom(_) => vec(any::<u8>(), 0..12).prop_map(Value::Blob).boxed(),
        CqlType::Timeuuid => any::<[u8; 16]>()
            .prop_map(|mut u| {
                u[6] = (u[6] & 0x0F) | 0x10;
                Value::Timeuuid(u)
            })
            .boxed(),
        CqlType::Timestamp => any::<i64>().prop_map(Value::Timestamp).boxed(),
        CqlType::Date => any::<u32>().prop_map(Value::Date).boxed(),
        CqlType::Time => (0..NANOS_PER_DAY).prop_map(Value::Time).boxed(),
        CqlType::Duration => duration()
            .prop_map(|(months, days, nanos)| Value::Duration {
                months,
                days,
                nanos,
            })
            .boxed(),
        CqlType::Inet => prop_oneof![
            any::<[u8; 4]>().prop_map(|b| Value::Inet(IpAddr::from(b))),
            any::<[u8; 16]>().prop_map(|b| Value::Inet(IpAddr::from(b))),
        ]
        .boxed(),
        CqlType::List(e) => vec(value_of(e), 0..4).prop_map(Value::List).boxed(),
        CqlType::Set(e) => vec(value_of(e), 0..4).prop_map(Value::Set).boxed(),
        CqlType::Map(k, v) => vec((value_of(k), value_of(v)), 0..4)
            .prop_map(Value::Map)
            .boxed(),
        CqlType::Tuple(_) | CqlType::Udt(_) => {
            let types = ty.tuple_fields().unwrap_or(&[]);
            let fields: Vec<BoxedStrategy<Option<Value>>> = types
                .iter()
                .map(|t| proptest::option::of(value_of(t)).boxed())
                .collect();
            fields.prop_map(Value::Tuple).boxed()
        }
        CqlType::Frozen(inner) => value_of(inner),
        CqlType::UserRef(_) => Just(Value::Tuple(Vec::new())).boxed(),
        CqlType::Vector(e, n) => vec(value_of(e), *n).prop_map(Value::Vector).boxed(),
    }
}

fn duration() -> impl Strategy<Value = (i32, i32, i64)> {
    (
        0..=i32::MAX,
        0..=i32::MAX,
        0..=i64::MAX,
        any::<bool>(),
        0u8..8,
    )
        .prop_map(|(m, d, n, neg, zero_mask)| {
            let m = if zero_mask & 1 != 0 { 0 } else { m };
            let d = if zero_mask & 2 != 0 { 0 } else { d };
            let n = if zero_mask & 4 != 0 { 0 } else { n };
            if neg {
                (-m, -d, -n)
            } else {
                (m, d, n)
            }
        })
}

fn typed_value() -> impl Strategy<Value = (CqlType, Value)> {
    any_type().prop_flat_map(|t| (Just(t.clone()), value_of(&t)))
}

fn typed_pair() -> impl Strategy<Value = (CqlType, Value, Value, Value)> {
    any_type().prop_flat_map(|t| (Just(t.clone()), value_of(&t), value_of(&t), value_of(&t)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn serialize_round_trips((ty, v) in typed_value()) {
        let bytes = serialize(&v);
        let back = deserialize(&ty, &bytes);
        prop_assert!(back.is_ok(), "{ty}: {back:?}");
        let back = back.unwrap();
        prop_assert_eq!(serialize(&back), bytes);
        prop_assert_eq!(compare(&ty, &serialize(&back), &serialize(&v)), Ordering::Equal);
    }

    #[test]
    fn validate_agrees_with_deserialize_and_verbatim_types_round_trip(
        len in prop_oneof![Just(0usize), Just(1), Just(2), Just(4), Just(8), Just(16), 0usize..40],
        seed in vec(any::<u8>(), 40),
        ascii_only in any::<bool>(),
    ) {
        // Lengths of the fixed-width types, and bytes that are often ASCII
        // (so text and ascii values are valid as often as not).
        let bytes: Vec<u8> = seed[..len].iter().map(|b| if ascii_only { b & 0x7f } else { *b }).collect();
        for ty in SCALAR_TYPES.iter().flat_map(|t| [t.clone(), CqlType::Frozen(Box::new(t.clone()))]) {
            let decoded = deserialize(&ty, &bytes);
            prop_assert_eq!(validate(&ty, &bytes).is_ok(), decoded.is_ok(), "{}", ty);
            if let (true, Ok(v)) = (stores_verbatim(&ty), decoded) {
                prop_assert_eq!(serialize(&v), bytes.clone(), "{} is not stored as sent", ty);
            }
        }
    }

    #[test]
    fn deserialize_never_panics(ty in any_type(), bytes in vec(any::<u8>(), 0..64)) {
        let _ = deserialize(&ty, &bytes);
        let _ = compare(&ty, &bytes, &bytes[bytes.len() / 2..]);
    }

    #[test]
    fn corrupted_encodings_never_panic((ty, v) in typed_value(), at in any::<usize>(), byte in any::<u8>(), cut in any::<usize>()) {
        let mut bytes = serialize(&v);
        if !bytes.is_empty() {
            let i = at % bytes.len();
            bytes[i] = byte;
            let _ = deserialize(&ty, &bytes);
            let good = serialize(&v);
            let _ = compare(&ty, &bytes, &good);
            bytes.truncate(cut % bytes.len());
            let _ = deserialize(&ty, &bytes);
            let _ = compare(&ty, &good, &bytes);
        }
    }

    #[test]
    fn compare_is_a_total_order((ty, a, b, c) in typed_pair()) {
        let (x, y, z) = (serialize(&a), serialize(&b), serialize(&c));
        prop_assert_eq!(compare(&ty, &x, &x), Ordering::Equal);
        prop_assert_eq!(compare(&ty, &x, &y), compare(&ty, &y, &x).reverse());
        let (xy, yz, xz) = (compare(&ty, &x, &y), compare(&ty, &y, &z), compare(&ty, &x, &z));
        if xy != Ordering::Greater && yz != Ordering::Greater {
            prop_assert_ne!(xz, Ordering::Greater);
        }
        prop_assert_eq!(order_values(&a, &b), xy);
    }

    #[test]
    fn integers_order_numerically(a in any::<i64>(), b in any::<i64>()) {
        let cmp = |ty: &CqlType, x: Value, y: Value| compare(ty, &serialize(&x), &serialize(&y));
        prop_assert_eq!(cmp(&CqlType::BigInt, Value::BigInt(a), Value::BigInt(b)), a.cmp(&b));
        prop_assert_eq!(cmp(&CqlType::Int, Value::Int(a as i32), Value::Int(b as i32)), (a as i32).cmp(&(b as i32)));
        prop_assert_eq!(cmp(&CqlType::SmallInt, Value::SmallInt(a as i16), Value::SmallInt(b as i16)), (a as i16).cmp(&(b as i16)));
        prop_assert_eq!(cmp(&CqlType::TinyInt, Value::TinyInt(a as i8), Value::TinyInt(b as i8)), (a as i8).cmp(&(b as i8)));
        prop_assert_eq!(cmp(&CqlType::Varint, Value::Varint(a.into()), Value::Varint(b.into())), a.cmp(&b));
        prop_assert_eq!(cmp(&CqlType::Date, Value::Date(a as u32), Value::Date(b as u32)), (a as u32).cmp(&(b as u32)));
    }

    #[test]
    fn floats_order_numerically(a in any::<f64>(), b in any::<f64>()) {
        let c = compare(&CqlType::Double, &serialize(&Value::Double(a)), &serialize(&Value::Double(b)));
        prop_assert_eq!(c, java_double_compare(a, b));
        if let Some(o) = a.partial_cmp(&b) {
            if !(a == 0.0 && b == 0.0) {
                prop_assert_eq!(c, o);
            }
        }
        let (fa, fb) = (a as f32, b as f32);
        let c = compare(&CqlType::Float, &serialize(&Value::Float(fa)), &serialize(&Value::Float(fb)));
        if let Some(o) = fa.partial_cmp(&fb) {
            if !(fa == 0.0 && fb == 0.0) {
                prop_assert_eq!(c, o);
            }
        }
    }

    #[test]
    fn decimals_order_numerically(ua in any::<i64>(), sa in -30i32..30, ub in any::<i64>(), sb in -30i32..30) {
        // Oracle: bring both to the common scale 60 exactly.
        let exact = |u: i64, s: i32| BigInt::from(u) * BigInt::from(10u32).pow((60 - s) as u32);
        let want = exact(ua, sa).cmp(&exact(ub, sb));
        prop_assert_eq!(decimal_compare(&ua.into(), sa, &ub.into(), sb), want);
        let (a, b) = (Value::Decimal { unscaled: ua.into(), scale: sa }, Value::Decimal { unscaled: ub.into(), scale: sb });
        prop_assert_eq!(compare(&CqlType::Decimal, &serialize(&a), &serialize(&b)), want);
    }

    #[test]
    fn text_forms_round_trip(ms in any::<i64>(), d in any::<u32>(), t in 0..NANOS_PER_DAY, (m, dd, n) in duration()) {
        prop_assert_eq!(parse_timestamp(&format_timestamp(ms)), Ok(ms));
        prop_assert_eq!(parse_date(&format_date(d)), Ok(d));
        prop_assert_eq!(parse_time(&format_time(t)), Ok(t));
        prop_assert_eq!(parse_duration(&format_duration(m, dd, n)), Ok((m, dd, n)));
    }

    #[test]
    fn decimal_text_round_trips(u in bigint(), s in any::<i32>()) {
        let text = format_decimal(&u, s);
        let (pu, ps) = parse_decimal(&text).expect("formatted decimal parses");
        prop_assert_eq!(decimal_compare(&pu, ps, &u, s), Ordering::Equal);
    }

    #[test]
    fn literal_printing_never_panics((_ty, v) in typed_value()) {
        prop_assert!(!to_cql_literal(&v).is_empty());
    }

    #[test]
    fn text_parsers_never_panic(s in "\\PC{0,24}") {
        let _ = parse_timestamp(&s);
        let _ = parse_date(&s);
        let _ = parse_time(&s);
        let _ = parse_duration(&s);
        let _ = parse_decimal(&s);
        let _ = crate::time::parse_uuid(&s);
    }
}
