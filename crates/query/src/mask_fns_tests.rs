//! The masking functions against what Cassandra 5.0.4 answered (corpus
//! 30_issue21_mask_functions holds the same through the protocol).

use super::*;

fn text(s: &str) -> Typed {
    (CqlType::Text, Some(Value::Text(s.into())))
}

fn int(n: Option<i32>) -> Typed {
    (CqlType::Int, n.map(Value::Int))
}

fn run(name: &str, args: &[Typed]) -> Option<Value> {
    apply(name, args).unwrap().1
}

#[test]
fn inner_and_outer_keep_and_pad_as_cassandra_does() {
    let hw = text("hello world");
    let inner = |b, e| run("mask_inner", &[hw.clone(), int(b), int(e)]);
    assert_eq!(
        inner(Some(1), Some(2)),
        Some(Value::Text("h********ld".into()))
    );
    assert_eq!(
        inner(Some(0), Some(0)),
        Some(Value::Text("***********".into()))
    );
    assert_eq!(
        inner(Some(20), Some(1)),
        Some(Value::Text("hello world".into()))
    );
    assert_eq!(inner(None, None), Some(Value::Text("***********".into())));
    assert_eq!(
        inner(Some(-1), Some(2)),
        Some(Value::Text("*********ld".into()))
    );
    let outer = |b, e| run("mask_outer", &[hw.clone(), int(b), int(e)]);
    assert_eq!(
        outer(Some(1), Some(2)),
        Some(Value::Text("*ello wor**".into()))
    );
    assert_eq!(
        outer(Some(0), Some(0)),
        Some(Value::Text("hello world".into()))
    );
    assert_eq!(
        outer(Some(20), Some(1)),
        Some(Value::Text("***********".into()))
    );
    assert_eq!(
        outer(None, Some(3)),
        Some(Value::Text("hello wo***".into()))
    );
    let abc = (CqlType::Ascii, Some(Value::Ascii("abc".into())));
    let got = run("mask_outer", &[abc, int(Some(1)), int(Some(1)), text("#")]);
    assert_eq!(got, Some(Value::Ascii("#b#".into())));
    assert_eq!(
        run("mask_outer", &[text("héllo"), int(Some(1)), int(Some(1))]),
        Some(Value::Text("*éll*".into()))
    );
}

#[test]
fn refusals_carry_cassandras_messages() {
    let e = apply(
        "mask_inner",
        &[text("x"), int(Some(1)), int(Some(2)), text("##")],
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "The padding argument for function system.mask_inner should be single-character, but '##' has 2 characters.");
    let e = check(
        "mask_inner",
        &["i".into()],
        &[CqlType::Int, CqlType::Int, CqlType::Int],
        false,
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "Function system.mask_inner requires an argument of type [text|varchar|ascii], but found argument i of type int");
    let e = check(
        "mask_inner",
        &["tx".into(), "1".into()],
        &[CqlType::Text, CqlType::Int],
        false,
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "Invalid number of arguments for function system.mask_inner([text|varchar|ascii], int, int, [text])");
    let e = check("mask_hash", &["NULL".into()], &[CqlType::Blob], true).unwrap_err();
    assert!(e.to_string().starts_with(
        "Cannot infer type of argument NULL in call to function system.mask_hash(any, [text])"
    ));
    assert!(check("mask_null", &["NULL".into()], &[CqlType::Blob], true).is_ok());
    let e = apply("mask_hash", &[text("x"), text("nope")]).unwrap_err();
    assert_eq!(e.to_string(), "Hash algorithm not found: nope");
}

#[test]
fn hashes_digest_the_serialized_value() {
    let sha256_of_hello_world = "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9";
    let Some(Value::Blob(d)) = run("mask_hash", &[text("hello world")]) else {
        panic!("not a blob")
    };
    let hex: String = d.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, sha256_of_hello_world);
    let Some(Value::Blob(d)) = run("mask_hash", &[text("hello world"), text("MD5")]) else {
        panic!("not a blob")
    };
    assert_eq!(d.len(), 16);
    assert_eq!(run("mask_hash", &[(CqlType::Text, None)]), None);
}

#[test]
fn defaults_per_type() {
    assert_eq!(default_of(&CqlType::Text), Value::Text("****".into()));
    assert_eq!(default_of(&CqlType::Date), Value::Date(1 << 31));
    let tuple = CqlType::Tuple(vec![CqlType::Int, CqlType::Text]);
    assert_eq!(
        default_of(&tuple),
        Value::Tuple(vec![Some(Value::Int(0)), Some(Value::Text("****".into()))])
    );
    let vector = CqlType::Vector(Box::new(CqlType::Float), 2);
    assert_eq!(
        default_of(&vector),
        Value::Vector(vec![Value::Float(0.0); 2])
    );
    let frozen = CqlType::Frozen(Box::new(CqlType::List(Box::new(CqlType::Int))));
    assert_eq!(default_of(&frozen), Value::List(Vec::new()));
}
