//! Error tests: kind, position and message of failures; the nesting limit
//! at N and N+1; and property tests that parsing never panics.

mod common;
use common::*;
use proptest::prelude::*;
use varve_cql::{parse_type, ParseError, MAX_NESTING_DEPTH};

fn err(text: &str) -> ParseError {
    match parse(text) {
        Ok(p) => panic!("{text:?} parsed: {p:?}"),
        Err(e) => e,
    }
}

#[test]
fn positions_and_messages() {
    let e = err("SELECT * FROM FROM");
    assert_eq!((e.kind, e.line, e.column), (ParseErrorKind::Syntax, 1, 14));
    assert!(e.message.contains("'FROM'"), "{}", e.message);
    assert!(
        e.message.contains("(SELECT * FROM [FROM]...)"),
        "{}",
        e.message
    );
    assert!(
        e.to_string()
            .starts_with("line 1:14 mismatched input 'FROM' expecting identifier"),
        "{e}"
    );

    let e = err("SELECT * FROM t WHERE k = 1 x");
    assert_eq!((e.line, e.column), (1, 28));
    assert!(
        e.message.starts_with("mismatched input 'x' expecting EOF"),
        "{}",
        e.message
    );

    let e = err("SELECT *\nFROM t\nWHERE k = ");
    assert_eq!((e.line, e.column), (3, 10));
    assert!(
        e.message
            .starts_with("no viable alternative at input '<EOF>'"),
        "{}",
        e.message
    );

    let e = err("SELCT * FROM t");
    assert_eq!((e.line, e.column), (1, 0));
    assert!(
        e.message
            .starts_with("no viable alternative at input 'SELCT'"),
        "{}",
        e.message
    );

    let e = err("SELECT * FROM t WHERE k = 'abc");
    assert_eq!((e.kind, e.line, e.column), (ParseErrorKind::Syntax, 1, 26));

    let e = err("SELECT * FROM t WHERE k = 0xabc");
    assert_eq!(e.kind, ParseErrorKind::Invalid);

    let e = err("INSERT INTO t (k) VALUES (1) garbage");
    assert!(e.message.contains("'garbage'"), "{}", e.message);

    let e = err("CREATE TABLE t (k int PRIMARY KEY, v list<list<int>>)");
    assert_eq!(
        (e.kind, e.line, e.column),
        (ParseErrorKind::Unsupported, 1, 37)
    );

    let e = err("SELECT * FROM t WHERE k = @");
    assert_eq!((e.line, e.column), (1, 26));
    assert!(e.message.contains("'@'"), "{}", e.message);
}

#[test]
fn reserved_words_need_quotes() {
    assert_eq!(err_kind("SELECT select FROM t"), ParseErrorKind::Syntax);
    assert_eq!(
        err_kind("CREATE TABLE t (from int PRIMARY KEY)"),
        ParseErrorKind::Syntax
    );
    let e = err("CREATE TABLE t (from int PRIMARY KEY)");
    assert!(e.message.contains("quote it"), "{}", e.message);
    assert!(parse("CREATE TABLE t (\"from\" int PRIMARY KEY)").is_ok());
    let keyword_columns = "key, value, type, ttl, writetime, count, timestamp, date, time, text, \
                           list, map, keys, filtering, static, distinct, json, role";
    let defs: Vec<String> = keyword_columns
        .split(", ")
        .map(|c| format!("{c} int"))
        .collect();
    let create = format!("CREATE TABLE t ({}, PRIMARY KEY (key))", defs.join(", "));
    let Statement::CreateTable(t) = stmt(&create) else {
        panic!()
    };
    assert_eq!(t.columns.len(), 18);
    assert!(parse(&format!("SELECT {keyword_columns} FROM t WHERE key = 1")).is_ok());
}

fn nested_list(depth: usize) -> String {
    format!(
        "SELECT * FROM t WHERE k = {}1{}",
        "[".repeat(depth),
        "]".repeat(depth)
    )
}

/// A type with exactly `depth` levels of `<...>`.
fn nested_type(depth: usize) -> String {
    let outer = depth - 1;
    format!("{}list<int>{}", "frozen<".repeat(outer), ">".repeat(outer))
}

#[test]
fn nesting_limit_at_n_and_n_plus_one() {
    assert!(parse(&nested_list(MAX_NESTING_DEPTH)).is_ok());
    let e = err(&nested_list(MAX_NESTING_DEPTH + 1));
    assert_eq!(e.kind, ParseErrorKind::Syntax);
    assert!(e.message.contains("nesting too deep"), "{}", e.message);

    assert!(parse_type(&nested_type(MAX_NESTING_DEPTH)).is_ok());
    assert!(parse_type(&nested_type(MAX_NESTING_DEPTH + 1)).is_err());

    let calls = |n: usize| format!("SELECT {}k{} FROM t", "f(".repeat(n), ")".repeat(n));
    assert!(parse(&calls(MAX_NESTING_DEPTH)).is_ok());
    assert!(parse(&calls(MAX_NESTING_DEPTH + 1)).is_err());

    let negs = |n: usize| format!("SELECT * FROM t WHERE k = {}?", "- ".repeat(n));
    assert!(parse(&negs(MAX_NESTING_DEPTH)).is_ok());
    assert!(parse(&negs(MAX_NESTING_DEPTH + 1)).is_err());

    // Far past the limit must still be an error, not a stack overflow.
    assert!(parse(&nested_list(100_000)).is_err());
    assert!(parse(&format!(
        "SELECT * FROM t WHERE k = {}1",
        "(".repeat(100_000)
    ))
    .is_err());
}

const VALID: &[&str] = &[
    "SELECT a, count(*), writetime(b) AS w FROM ks.t WHERE k = ? AND c IN (1, 2) ORDER BY c DESC LIMIT 10",
    "INSERT INTO t (k, v, m) VALUES (1, 'x', {'a': [1, 2]}) IF NOT EXISTS USING TTL 10",
    "UPDATE t USING TIMESTAMP 5 SET l = [1] + l, m['k'] = 0x01 WHERE k = 01234567-89ab-cdef-0123-456789abcdef IF v = 1h30m",
    "DELETE m['k'] FROM t WHERE token(k) > token(?) IF EXISTS",
    "BEGIN BATCH INSERT INTO t (k) VALUES (1); DELETE FROM t WHERE k = 2; APPLY BATCH",
    "CREATE TABLE t (k int, c text, v frozen<map<text, tuple<int, list<int>>>>, PRIMARY KEY ((k), c)) WITH compaction = {'class': 'x'}",
    "ALTER TABLE t ADD (a int, b text)",
    "DESCRIBE KEYSPACE ks",
    "SELECT * FROM t WHERE (a, b) > (1, -2.5e10) AND c CONTAINS KEY $$x$$ /* c */ -- d",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_arbitrary_text(text in "\\PC{0,200}") {
        let _ = parse(&text);
        let _ = parse_type(&text);
    }

    #[test]
    fn never_panics_on_cql_like_text(text in "[a-zA-Z0-9_ ()\\[\\]{}<>=!,;.*?:'\"$+\\-/]{0,200}") {
        let _ = parse(&text);
        let _ = parse_type(&text);
    }

    #[test]
    fn never_panics_on_mutated_statements(
        idx in 0..VALID.len(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, "\\PC{0,3}"), 1..6),
    ) {
        let mut text = VALID[idx].to_string();
        prop_assert!(parse(&text).is_ok(), "seed {} must parse", text);
        for (at, op, insert) in edits {
            let boundaries: Vec<usize> =
                (0..=text.len()).filter(|i| text.is_char_boundary(*i)).collect();
            let i = boundaries[at.index(boundaries.len())];
            match op {
                0 => text.insert_str(i, &insert),
                1 => {
                    let end = boundaries.iter().copied().find(|&b| b > i).unwrap_or(i);
                    text.replace_range(i..end, "");
                }
                _ => text.truncate(i),
            }
        }
        let _ = parse(&text);
    }
}
