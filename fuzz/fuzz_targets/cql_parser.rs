//! Fuzz target: the CQL lexer and parser on arbitrary text.
//!
//! The input is parsed as a whole statement and as a type name. Bytes that
//! are not UTF-8 are also tried after lossy conversion, so the parser sees
//! replacement characters too. Any panic, stack overflow or hang is a bug:
//! bad CQL must only ever yield a syntax error.
#![no_main]

use libfuzzer_sys::fuzz_target;

fn parse_all(text: &str) {
    let _ = varve_cql::parse(text);
    let _ = varve_cql::parse_type(text);
}

fuzz_target!(|data: &[u8]| {
    match std::str::from_utf8(data) {
        Ok(text) => parse_all(text),
        Err(_) => parse_all(&String::from_utf8_lossy(data)),
    }
});
