//! Scanning of the literals that start like identifiers or numbers:
//! uuids (`01234567-89ab-...`, unquoted), hex blobs (`0x...`), integers
//! and floats (with an optional leading `-`), and durations in the three
//! forms Cassandra accepts (`1h30m`, ISO `P1DT2H` / `P2W`, and
//! `P0001-02-03T04:05:06`).
//!
//! A `P...` word is a duration only when the whole word matches; `price`
//! or `p1` stay identifiers. As in Cassandra, a word such as `p1d` is a
//! duration, not an identifier.

use super::{is_ident_char, Lexer, Tok};
use crate::error::ParseErrorKind;

const UUID_TEXT_LEN: usize = 36;
const UUID_DASHES: [usize; 4] = [8, 13, 18, 23];

fn byte_at(b: &[u8], i: usize) -> Option<u8> {
    b.get(i).copied()
}

fn is_digit_at(b: &[u8], i: usize) -> bool {
    byte_at(b, i).is_some_and(|c| c.is_ascii_digit())
}

fn ends_word(b: &[u8], i: usize) -> bool {
    !byte_at(b, i).is_some_and(|c| is_ident_char(c as char))
}

fn digits_from(b: &[u8], mut i: usize) -> usize {
    while is_digit_at(b, i) {
        i += 1;
    }
    i
}

fn hex_value(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// A uuid at the start of `b`, followed by a non-identifier character.
fn uuid_at(b: &[u8]) -> Option<[u8; 16]> {
    if b.len() < UUID_TEXT_LEN || !ends_word(b, UUID_TEXT_LEN) {
        return None;
    }
    let mut nibbles = Vec::with_capacity(32);
    for (i, &c) in b[..UUID_TEXT_LEN].iter().enumerate() {
        if UUID_DASHES.contains(&i) {
            if c != b'-' {
                return None;
            }
        } else {
            nibbles.push(hex_value(c)?);
        }
    }
    let mut out = [0u8; 16];
    for (i, pair) in nibbles.chunks(2).enumerate() {
        out[i] = (pair[0] << 4) | pair[1];
    }
    Some(out)
}

/// Length in bytes of a duration unit at `b[i..]`, longest first.
fn unit_len(b: &[u8], i: usize) -> Option<usize> {
    let lower = |k: usize| byte_at(b, i + k).map(|c| c.to_ascii_lowercase());
    match (lower(0), lower(1)) {
        (Some(b'm'), Some(b'o' | b's')) | (Some(b'u' | b'n'), Some(b's')) => Some(2),
        (Some(0xC2), Some(0xB5)) if lower(2) == Some(b's') => Some(3), // µs
        (Some(b'y' | b'w' | b'd' | b'h' | b'm' | b's'), _) => Some(1),
        _ => None,
    }
}

/// End of a `(digits unit)+` duration starting at `i`, if there is one.
fn unit_duration_end(b: &[u8], i: usize) -> Option<usize> {
    let mut end = None;
    let mut j = i;
    loop {
        let after_digits = digits_from(b, j);
        if after_digits == j {
            return end;
        }
        match unit_len(b, after_digits) {
            Some(len) => {
                j = after_digits + len;
                end = Some(j);
            }
            None => return end,
        }
    }
}

/// `digits letter` at `i`, case-insensitive: the index after it.
fn component(b: &[u8], i: usize, letter: u8) -> Option<usize> {
    let j = digits_from(b, i);
    (j > i && byte_at(b, j).is_some_and(|c| c.to_ascii_uppercase() == letter)).then_some(j + 1)
}

/// End of an ISO 8601 duration starting with `P` at `i`.
fn iso_duration_end(b: &[u8], i: usize) -> Option<usize> {
    if !byte_at(b, i).is_some_and(|c| c.eq_ignore_ascii_case(&b'p')) {
        return None;
    }
    let start = i + 1;
    if let Some(end) = component(b, start, b'W') {
        return Some(end);
    }
    if let Some(end) = alternative_iso_end(b, start) {
        return Some(end);
    }
    let mut j = start;
    let mut any = false;
    for letter in [b'Y', b'M', b'D'] {
        if let Some(next) = component(b, j, letter) {
            j = next;
            any = true;
        }
    }
    if byte_at(b, j).is_some_and(|c| c.eq_ignore_ascii_case(&b't')) {
        let mut k = j + 1;
        let mut any_time = false;
        for letter in [b'H', b'M', b'S'] {
            if let Some(next) = component(b, k, letter) {
                k = next;
                any_time = true;
            }
        }
        if any_time {
            j = k;
            any = true;
        }
    }
    any.then_some(j)
}

/// `dddd-dd-ddThh:mm:ss` at `i`.
fn alternative_iso_end(b: &[u8], i: usize) -> Option<usize> {
    const SHAPE: &[u8] = b"dddd-dd-ddTdd:dd:dd";
    for (k, &s) in SHAPE.iter().enumerate() {
        let c = byte_at(b, i + k)?;
        let ok = match s {
            b'd' => c.is_ascii_digit(),
            b'T' => c.eq_ignore_ascii_case(&b't'),
            other => c == other,
        };
        if !ok {
            return None;
        }
    }
    Some(i + SHAPE.len())
}

impl Lexer<'_> {
    /// Scans a literal at the current position, or returns `None` when the
    /// text there is not one (an identifier, punctuation, ...).
    pub(super) fn scan_literal(&mut self) -> Option<Tok> {
        let rest = self.rest();
        let b = rest.as_bytes();
        let first = *b.first()?;
        if first.is_ascii_hexdigit() {
            if let Some(uuid) = uuid_at(b) {
                self.bump_n(UUID_TEXT_LEN);
                return Some(Tok::Uuid(uuid));
            }
        }
        let sign = usize::from(first == b'-');
        if let Some(end) = iso_duration_end(b, sign) {
            if ends_word(b, end) {
                let text = rest[..end].to_string();
                self.bump_n(end);
                return Some(Tok::Duration(text));
            }
        }
        if !is_digit_at(b, sign) {
            return None;
        }
        if sign == 0 && first == b'0' && matches!(byte_at(b, 1), Some(b'x' | b'X')) {
            return Some(self.scan_blob());
        }
        Some(self.scan_number(sign))
    }

    fn scan_blob(&mut self) -> Tok {
        let (line, column) = (self.line, self.column);
        let b = self.rest().as_bytes();
        let mut end = 2;
        while byte_at(b, end).is_some_and(|c| c.is_ascii_hexdigit()) {
            end += 1;
        }
        let hex = &b[2..end];
        let bytes: Option<Vec<u8>> = hex
            .chunks(2)
            .map(|pair| match pair {
                [hi, lo] => Some((hex_value(*hi)? << 4) | hex_value(*lo)?),
                _ => None,
            })
            .collect();
        self.bump_n(end);
        match bytes {
            Some(bytes) => Tok::Blob(bytes),
            None => {
                let msg = "An hex string representing bytes must have an even length".to_string();
                self.fail(ParseErrorKind::Invalid, msg, line, column)
            }
        }
    }

    /// Integer, float or `1h30m` duration; `b[sign]` is a digit.
    fn scan_number(&mut self, sign: usize) -> Tok {
        let rest = self.rest();
        let b = rest.as_bytes();
        let int_end = digits_from(b, sign);
        let mut end = int_end;
        let mut is_float = false;
        // `1..3` is a slice (Cassandra's RANGE token), not the float `1.`.
        if byte_at(b, end) == Some(b'.') && byte_at(b, end + 1) != Some(b'.') {
            end = digits_from(b, end + 1);
            is_float = true;
        }
        if matches!(byte_at(b, end), Some(b'e' | b'E')) {
            let mut k = end + 1;
            if matches!(byte_at(b, k), Some(b'+' | b'-')) {
                k += 1;
            }
            if is_digit_at(b, k) {
                end = digits_from(b, k);
                is_float = true;
            }
        }
        if !is_float {
            if let Some(dur_end) = unit_duration_end(b, sign) {
                let text = rest[..dur_end].to_string();
                self.bump_n(text.chars().count());
                return Tok::Duration(text);
            }
        }
        let text = rest[..end].to_string();
        self.bump_n(end);
        if is_float {
            Tok::Float(text)
        } else {
            Tok::Integer(text)
        }
    }
}
