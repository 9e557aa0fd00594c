//! Lexer unit tests: one case per token kind and the tricky boundaries
//! between numbers, durations, uuids and identifiers.

use super::*;

fn lex(text: &str) -> Vec<Tok> {
    let mut lexer = Lexer::new(text);
    let mut out = Vec::new();
    loop {
        let t = lexer.next_token();
        match t.tok {
            Tok::Eof => return out,
            Tok::Error => {
                out.push(Tok::Error);
                return out;
            }
            tok => out.push(tok),
        }
    }
}

fn id(s: &str) -> Tok {
    Tok::Ident(s.into())
}

#[test]
fn identifiers_fold_case_and_quoted_keep_it() {
    assert_eq!(lex("SeLeCt Foo_1"), vec![id("select"), id("foo_1")]);
    assert_eq!(
        lex(r#""Foo ""x""""#),
        vec![Tok::QuotedIdent("Foo \"x\"".into())]
    );
    assert_eq!(lex(r#""""#), vec![Tok::Error]);
}

#[test]
fn strings() {
    assert_eq!(lex("'it''s'"), vec![Tok::Str("it's".into())]);
    assert_eq!(lex("$$a'b$c$$"), vec![Tok::Str("a'b$c".into())]);
    assert_eq!(lex("''"), vec![Tok::Str(String::new())]);
    assert_eq!(lex("'abc"), vec![Tok::Error]);
    assert_eq!(lex("$$abc"), vec![Tok::Error]);
}

#[test]
fn numbers() {
    assert_eq!(
        lex("42 -7"),
        vec![Tok::Integer("42".into()), Tok::Integer("-7".into())]
    );
    let floats = ["1.5", "-2.5e10", "1E5", "1.", "3e-2"];
    for f in floats {
        assert_eq!(lex(f), vec![Tok::Float(f.into())], "{f}");
    }
    assert_eq!(
        lex("- 7"),
        vec![Tok::Punct(Punct::Minus), Tok::Integer("7".into())]
    );
    assert_eq!(lex("NaN"), vec![id("nan")]);
}

#[test]
fn a_range_between_numbers_is_not_a_float() {
    let range = Tok::Punct(Punct::Range);
    assert_eq!(
        lex("1..3"),
        vec![
            Tok::Integer("1".into()),
            range.clone(),
            Tok::Integer("3".into())
        ]
    );
    assert_eq!(
        lex("'a'..'c'"),
        vec![Tok::Str("a".into()), range.clone(), Tok::Str("c".into())]
    );
    assert_eq!(
        lex("1.5..2"),
        vec![Tok::Float("1.5".into()), range, Tok::Integer("2".into())]
    );
    assert_eq!(lex("a.b"), vec![id("a"), Tok::Punct(Punct::Dot), id("b")]);
}

#[test]
fn blobs_and_uuids() {
    assert_eq!(lex("0xCAfe"), vec![Tok::Blob(vec![0xca, 0xfe])]);
    assert_eq!(lex("0x"), vec![Tok::Blob(vec![])]);
    assert_eq!(lex("0xabc"), vec![Tok::Error]);
    let u = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
    let mut expected = [0u8; 16];
    expected.copy_from_slice(&[
        0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a,
        0x11,
    ]);
    assert_eq!(lex(u), vec![Tok::Uuid(expected)]);
    // Not a uuid: too short, so an identifier followed by punctuation.
    assert_eq!(lex("abcdef01-9c0b")[0], id("abcdef01"));
}

#[test]
fn durations() {
    for d in [
        "12h30m", "1y2mo", "3w", "10ms", "5us", "7ns", "2µs", "1d", "-3h", "P1D", "PT2H",
    ] {
        assert_eq!(lex(d), vec![Tok::Duration(d.into())], "{d}");
    }
    for d in ["P1Y2M3DT4H5M6S", "P2W", "p0001-02-03T04:05:06", "-P1D"] {
        assert_eq!(lex(d), vec![Tok::Duration(d.into())], "{d}");
    }
    // Words starting with P that are not durations stay identifiers.
    for w in ["p", "price", "p1", "pt", "p1dx", "pk"] {
        assert_eq!(lex(w), vec![id(w)], "{w}");
    }
    // A trailing number without unit is not part of the duration.
    assert_eq!(
        lex("1h30"),
        vec![Tok::Duration("1h".into()), Tok::Integer("30".into())]
    );
}

#[test]
fn comments_and_punctuation() {
    let toks = lex("a -- x\n/* y\n z */ b // c\n<= >= != += -= ; ?:");
    let p = |p| Tok::Punct(p);
    assert_eq!(
        toks,
        vec![
            id("a"),
            id("b"),
            p(Punct::Le),
            p(Punct::Ge),
            p(Punct::Ne),
            p(Punct::PlusEq),
            p(Punct::MinusEq),
            p(Punct::Semi),
            p(Punct::Question),
            p(Punct::Colon)
        ]
    );
    assert_eq!(lex("a /* open"), vec![id("a"), Tok::Error]);
    assert_eq!(lex("a ! b"), vec![id("a"), Tok::Error]);
    assert_eq!(lex("é"), vec![Tok::Error]);
}

#[test]
fn positions_are_line_and_zero_based_column() {
    let mut lexer = Lexer::new("a\n  bc");
    let a = lexer.next_token();
    let bc = lexer.next_token();
    assert_eq!((a.line, a.column), (1, 0));
    assert_eq!((bc.line, bc.column, bc.start, bc.end), (2, 2, 4, 6));
}
