//! Cassandra's ordering of serialized values, type by type.
//!
//! Rules (from `org.apache.cassandra.db.marshal.*Type`):
//! - an empty (0-byte) value sorts before every other value of any type;
//! - tinyint..bigint, counter, timestamp, time: signed integers;
//! - date: unsigned 32-bit; boolean: false < true;
//! - float/double: Java's `Float.compare`/`Double.compare` (-0 < +0, every
//!   NaN equal and above +Infinity);
//! - varint, decimal: numeric (`1.0` equals `1.00`);
//! - text, ascii, blob, inet, duration: unsigned bytes, shorter prefix first;
//! - uuid: version first; version 1 by timestamp, other versions by the
//!   high 64 bits unsigned; then the low 64 bits unsigned;
//! - timeuuid: timestamp, then the low 8 bytes as *signed* bytes;
//! - frozen list/set/map: element by element (map: key, then value), then
//!   the shorter collection first; tuple: field by field with null first,
//!   trailing null or empty fields ignored; a user type as a tuple of its
//!   field types; vector: element by element.
//!
//! Malformed input never panics: a comparison that cannot parse its input
//! falls back to unsigned bytewise order.

use crate::{codec, CqlType, Value};
use num_bigint::{BigInt, Sign};
use std::cmp::Ordering;

mod values;

/// How a `CompositeType`'s class name starts.
const COMPOSITE_PREFIX: &str = "org.apache.cassandra.db.marshal.CompositeType(";

/// How a `DynamicCompositeType`'s class name starts.
const DYNAMIC_PREFIX: &str = "org.apache.cassandra.db.marshal.DynamicCompositeType(";

/// A dynamic composite's aliases (`a=>Int32Type,...`), by alias byte.
pub(crate) fn dynamic_aliases(class: &str) -> Option<Vec<(u8, CqlType)>> {
    let inner = class.strip_prefix(DYNAMIC_PREFIX)?.strip_suffix(')')?;
    inner
        .split(',')
        .map(|pair| {
            let (alias, ty) = pair.split_once("=>")?;
            let alias = *alias.trim().as_bytes().first()?;
            Some((alias, crate::marshal::parse_marshal_name(ty.trim())?))
        })
        .collect()
}

/// One component of a dynamic composite: its type, value, end-of-component
/// byte and the bytes after it. The type comes from an alias (the header's
/// top bit set, the alias in its low byte) or is named in full.
fn dynamic_component<'b>(
    aliases: &[(u8, CqlType)],
    bytes: &'b [u8],
) -> Option<(CqlType, &'b [u8], i8, &'b [u8])> {
    let header = u16::from_be_bytes([*bytes.first()?, *bytes.get(1)?]);
    let (ty, rest) = if header & 0x8000 != 0 {
        let alias = (header & 0xFF) as u8;
        let ty = aliases.iter().find(|(a, _)| *a == alias)?.1.clone();
        (ty, &bytes[2..])
    } else {
        let end = 2 + usize::from(header);
        let name = std::str::from_utf8(bytes.get(2..end)?).ok()?;
        (crate::marshal::parse_marshal_name(name)?, &bytes[end..])
    };
    let (value, eoc, after) = component(rest)?;
    Some((ty, value, eoc, after))
}

/// A type's Java class name, simple and full (parameters left out).
fn class_names(ty: &CqlType) -> (String, String) {
    let marshal = crate::marshal::marshal_name(ty);
    let full = marshal.split('(').next().unwrap_or_default().to_string();
    let simple = full.rsplit('.').next().unwrap_or_default().to_string();
    (simple, full)
}

/// `DynamicCompositeType`'s order: component by component; components of
/// different types by their class names (simple, then full), of one type
/// by the type, then the signed end-of-component byte.
fn dynamic(class: &str, mut a: &[u8], mut b: &[u8]) -> Option<Ordering> {
    let aliases = dynamic_aliases(class)?;
    loop {
        match (a.is_empty(), b.is_empty()) {
            (true, true) => return Some(Ordering::Equal),
            (true, false) => return Some(Ordering::Less),
            (false, true) => return Some(Ordering::Greater),
            _ => {}
        }
        let (tx, x, x_eoc, x_rest) = dynamic_component(&aliases, a)?;
        let (ty, y, y_eoc, y_rest) = dynamic_component(&aliases, b)?;
        if tx != ty {
            return Some(class_names(&tx).cmp(&class_names(&ty)));
        }
        let ord = compare(&tx, x, y).then(x_eoc.cmp(&y_eoc));
        if ord != Ordering::Equal {
            return Some(ord);
        }
        (a, b) = (x_rest, y_rest);
    }
}

/// A composite's component types, from its class name
/// (`CompositeType(t1,t2,...)`, nested parentheses allowed).
pub(crate) fn composite_types(class: &str) -> Option<Vec<CqlType>> {
    let inner = class.strip_prefix(COMPOSITE_PREFIX)?.strip_suffix(')')?;
    let (mut depth, mut start, mut out) = (0usize, 0usize, Vec::new());
    for (i, c) in inner.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.checked_sub(1)?,
            ',' if depth == 0 => {
                out.push(crate::marshal::parse_marshal_name(&inner[start..i])?);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(crate::marshal::parse_marshal_name(&inner[start..])?);
    Some(out)
}

/// One component of a composite: its bytes and its end-of-component byte.
fn component(bytes: &[u8]) -> Option<(&[u8], i8, &[u8])> {
    let len = usize::from(u16::from_be_bytes([*bytes.first()?, *bytes.get(1)?]));
    let value = bytes.get(2..2 + len)?;
    let eoc = *bytes.get(2 + len)? as i8;
    Some((value, eoc, &bytes[3 + len..]))
}

/// `CompositeType`'s order: component by component (`[u16 length][bytes]
/// [end-of-component byte]`), each by its type, then by the signed
/// end-of-component byte; a composite that ends first sorts first.
fn composite(class: &str, mut a: &[u8], mut b: &[u8]) -> Option<Ordering> {
    let types = composite_types(class)?;
    for ty in &types {
        match (a.is_empty(), b.is_empty()) {
            (true, true) => return Some(Ordering::Equal),
            (true, false) => return Some(Ordering::Less),
            (false, true) => return Some(Ordering::Greater),
            _ => {}
        }
        let (x, x_eoc, x_rest) = component(a)?;
        let (y, y_eoc, y_rest) = component(b)?;
        let ord = compare(ty, x, y).then(x_eoc.cmp(&y_eoc));
        if ord != Ordering::Equal {
            return Some(ord);
        }
        (a, b) = (x_rest, y_rest);
    }
    Some(a.cmp(b))
}

#[cfg(test)]
pub(crate) use values::order_values;
pub(crate) use values::{canonical_map, canonical_set};

/// Compares two serialized values of type `ty`.
pub fn compare(ty: &CqlType, a: &[u8], b: &[u8]) -> Ordering {
    typed(ty, a, b).unwrap_or_else(|| a.cmp(b))
}

/// Compares two values of type `ty` by Cassandra's order of their encodings.
pub fn compare_values(ty: &CqlType, a: &Value, b: &Value) -> Ordering {
    compare(ty, &codec::serialize(a), &codec::serialize(b))
}

/// Java's `Double.compare`: a total order with -0.0 < 0.0 and NaN last.
pub fn java_double_compare(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.total_cmp(&b),
    }
}

/// Numeric comparison of `ua * 10^-sa` with `ub * 10^-sb`, without ever
/// building a power of ten larger than the inputs' own digit counts.
pub fn decimal_compare(ua: &BigInt, sa: i32, ub: &BigInt, sb: i32) -> Ordering {
    let sign_rank = |s: Sign| match s {
        Sign::Minus => 0,
        Sign::NoSign => 1,
        Sign::Plus => 2,
    };
    let (sign_a, sign_b) = (ua.sign(), ub.sign());
    if sign_a != sign_b || sign_a == Sign::NoSign {
        return sign_rank(sign_a).cmp(&sign_rank(sign_b));
    }
    let (ma, mb) = (
        BigInt::from(ua.magnitude().clone()),
        BigInt::from(ub.magnitude().clone()),
    );
    let digits = |m: &BigInt| m.to_string().len() as i64;
    // Adjusted exponent: position of the leading digit.
    let (ea, eb) = (digits(&ma) - i64::from(sa), digits(&mb) - i64::from(sb));
    let magnitude = if ea != eb {
        ea.cmp(&eb)
    } else {
        // Equal adjusted exponents bound the scale gap by the digit counts.
        let diff = i64::from(sa) - i64::from(sb);
        let pow = BigInt::from(10u32).pow(diff.unsigned_abs() as u32);
        if diff >= 0 {
            ma.cmp(&(mb * pow))
        } else {
            (ma * pow).cmp(&mb)
        }
    };
    if sign_a == Sign::Minus {
        magnitude.reverse()
    } else {
        magnitude
    }
}

fn be<const N: usize>(a: &[u8], b: &[u8]) -> Option<([u8; N], [u8; N])> {
    Some((a.try_into().ok()?, b.try_into().ok()?))
}

fn typed(ty: &CqlType, a: &[u8], b: &[u8]) -> Option<Ordering> {
    if a.is_empty() || b.is_empty() {
        return Some(a.len().cmp(&b.len()));
    }
    Some(match ty {
        CqlType::Frozen(inner) => return typed(inner, a, b),
        CqlType::Ascii | CqlType::Text | CqlType::Blob | CqlType::Inet | CqlType::Duration => {
            a.cmp(b)
        }
        CqlType::Custom(class) if class == crate::cql_type::LEXICAL_UUID_CLASS => {
            // java.util.UUID.compareTo: the two halves as signed longs.
            let (x, y) = be::<16>(a, b)?;
            let half = |u: [u8; 16], i: usize| {
                i64::from_be_bytes(u[i * 8..i * 8 + 8].try_into().unwrap_or_default())
            };
            (half(x, 0), half(x, 1)).cmp(&(half(y, 0), half(y, 1)))
        }
        CqlType::Custom(class) if class.starts_with(COMPOSITE_PREFIX) => composite(class, a, b)?,
        CqlType::Custom(class) if class.starts_with(DYNAMIC_PREFIX) => dynamic(class, a, b)?,
        CqlType::Custom(_) => a.cmp(b),
        CqlType::Boolean => {
            let (x, y) = be::<1>(a, b)?;
            (x[0] != 0).cmp(&(y[0] != 0))
        }
        CqlType::TinyInt => {
            let (x, y) = be::<1>(a, b)?;
            i8::from_be_bytes(x).cmp(&i8::from_be_bytes(y))
        }
        CqlType::SmallInt => {
            let (x, y) = be::<2>(a, b)?;
            i16::from_be_bytes(x).cmp(&i16::from_be_bytes(y))
        }
        CqlType::Int => {
            let (x, y) = be::<4>(a, b)?;
            i32::from_be_bytes(x).cmp(&i32::from_be_bytes(y))
        }
        CqlType::Date => {
            let (x, y) = be::<4>(a, b)?;
            u32::from_be_bytes(x).cmp(&u32::from_be_bytes(y))
        }
        CqlType::BigInt | CqlType::Counter | CqlType::Timestamp | CqlType::Time => {
            let (x, y) = be::<8>(a, b)?;
            i64::from_be_bytes(x).cmp(&i64::from_be_bytes(y))
        }
        CqlType::Float => {
            let (x, y) = be::<4>(a, b)?;
            let (x, y) = (f32::from_be_bytes(x), f32::from_be_bytes(y));
            java_double_compare(f64::from(x), f64::from(y))
        }
        CqlType::Double => {
            let (x, y) = be::<8>(a, b)?;
            java_double_compare(f64::from_be_bytes(x), f64::from_be_bytes(y))
        }
        CqlType::Varint => BigInt::from_signed_bytes_be(a).cmp(&BigInt::from_signed_bytes_be(b)),
        CqlType::Decimal => {
            if a.len() < 5 || b.len() < 5 {
                return None;
            }
            let sa = i32::from_be_bytes(a[..4].try_into().ok()?);
            let sb = i32::from_be_bytes(b[..4].try_into().ok()?);
            let (ua, ub) = (
                BigInt::from_signed_bytes_be(&a[4..]),
                BigInt::from_signed_bytes_be(&b[4..]),
            );
            decimal_compare(&ua, sa, &ub, sb)
        }
        CqlType::Uuid => {
            let (x, y) = be::<16>(a, b)?;
            uuid_compare(&x, &y)
        }
        CqlType::Timeuuid => {
            let (x, y) = be::<16>(a, b)?;
            timeuuid_compare(&x, &y)
        }
        CqlType::List(e) | CqlType::Set(e) => elements(a, b, |r| r.framed_pair(e))?,
        CqlType::Map(k, v) => elements(a, b, |r| {
            let c = r.framed_pair(k)?;
            if c != Ordering::Equal {
                return Some(c);
            }
            r.framed_pair(v)
        })?,
        CqlType::Tuple(types) => tuple(types, a, b)?,
        CqlType::Udt(u) => tuple(&u.field_types, a, b)?,
        CqlType::UserRef(_) => return None,
        CqlType::Vector(e, n) => vector(e, *n, a, b)?,
    })
}

/// Element by element, each in its type's order, as Cassandra compares
/// vectors whether their elements are fixed-width or not.
fn vector(element: &CqlType, n: usize, a: &[u8], b: &[u8]) -> Option<Ordering> {
    let x = codec::split_vector(element, n, a)?;
    let y = codec::split_vector(element, n, b)?;
    for (x, y) in x.into_iter().zip(y) {
        let c = compare(element, x, y);
        if c != Ordering::Equal {
            return Some(c);
        }
    }
    Some(Ordering::Equal)
}

/// The 60-bit timestamp of a version-1 uuid with its version nibble on
/// top, so that a plain integer comparison orders by time.
fn reordered_time(u: &[u8; 16]) -> u64 {
    let msb = u64::from_be_bytes([u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7]]);
    (msb << 48) | ((msb << 16) & 0xFFFF_0000_0000) | (msb >> 32)
}

fn low_u64(u: &[u8; 16]) -> u64 {
    u64::from_be_bytes([u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]])
}

fn uuid_compare(a: &[u8; 16], b: &[u8; 16]) -> Ordering {
    let (va, vb) = (a[6] >> 4, b[6] >> 4);
    if va != vb {
        return va.cmp(&vb);
    }
    let high = if va == 1 {
        // Signed in Cassandra; the version nibble keeps the sign bit clear.
        (reordered_time(a) as i64).cmp(&(reordered_time(b) as i64))
    } else {
        a[..8].cmp(&b[..8])
    };
    high.then_with(|| low_u64(a).cmp(&low_u64(b)))
}

fn timeuuid_compare(a: &[u8; 16], b: &[u8; 16]) -> Ordering {
    (reordered_time(a) as i64)
        .cmp(&(reordered_time(b) as i64))
        .then_with(|| {
            let signed = |u: &[u8; 16]| -> [i8; 8] { std::array::from_fn(|i| u[8 + i] as i8) };
            signed(a).cmp(&signed(b))
        })
}

/// Two framing cursors walking the same collection or tuple layout.
struct Pair<'a> {
    a: &'a [u8],
    b: &'a [u8],
}

fn take_int(s: &mut &[u8]) -> Option<i32> {
    let (head, rest) = s.split_first_chunk::<4>()?;
    *s = rest;
    Some(i32::from_be_bytes(*head))
}

/// Takes one `[int len][bytes]`; `Some(None)` for a null (negative length).
fn take_framed<'a>(s: &mut &'a [u8]) -> Option<Option<&'a [u8]>> {
    let len = take_int(s)?;
    if len < 0 {
        return Some(None);
    }
    let len = usize::try_from(len).ok()?;
    if len > s.len() {
        return None;
    }
    let (v, rest) = s.split_at(len);
    *s = rest;
    Some(Some(v))
}

impl<'a> Pair<'a> {
    fn take_pair(&mut self) -> Option<(&'a [u8], &'a [u8])> {
        Some((take_framed(&mut self.a)??, take_framed(&mut self.b)??))
    }

    fn framed_pair(&mut self, ty: &CqlType) -> Option<Ordering> {
        let (x, y) = self.take_pair()?;
        Some(compare(ty, x, y))
    }
}

fn elements(
    a: &[u8],
    b: &[u8],
    mut step: impl FnMut(&mut Pair<'_>) -> Option<Ordering>,
) -> Option<Ordering> {
    let mut p = Pair { a, b };
    let na = take_int(&mut p.a)?;
    let nb = take_int(&mut p.b)?;
    for _ in 0..na.min(nb).max(0) {
        let c = step(&mut p)?;
        if c != Ordering::Equal {
            return Some(c);
        }
    }
    Some(na.cmp(&nb))
}

fn tuple(types: &[CqlType], a: &[u8], b: &[u8]) -> Option<Ordering> {
    let (mut a, mut b) = (a, b);
    let mut i = 0;
    while !a.is_empty() && !b.is_empty() {
        let fa = take_framed(&mut a)?;
        let fb = take_framed(&mut b)?;
        let c = match (fa, fb) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(x), Some(y)) => compare(types.get(i)?, x, y),
        };
        if c != Ordering::Equal {
            return Some(c);
        }
        i += 1;
    }
    // Trailing fields count only when they hold at least one byte.
    let has_content = |mut s: &[u8]| -> Option<bool> {
        while !s.is_empty() {
            if let Some(v) = take_framed(&mut s)? {
                if !v.is_empty() {
                    return Some(true);
                }
            }
        }
        Some(false)
    };
    Some(has_content(a)?.cmp(&has_content(b)?))
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod composite_tests {
    use super::*;

    fn comp(parts: &[(&[u8], u8)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (bytes, eoc) in parts {
            out.extend_from_slice(&(bytes.len() as u16).to_be_bytes());
            out.extend_from_slice(bytes);
            out.push(*eoc);
        }
        out
    }

    #[test]
    fn composites_order_component_by_component() {
        let ty = CqlType::Custom(format!(
            "{COMPOSITE_PREFIX}org.apache.cassandra.db.marshal.Int32Type,org.apache.cassandra.db.marshal.UTF8Type)"
        ));
        let minus_one = (-1i32).to_be_bytes();
        let one = 1i32.to_be_bytes();
        let a = comp(&[(&minus_one, 0), (b"z", 0)]);
        let b = comp(&[(&one, 0), (b"a", 0)]);
        let c = comp(&[(&one, 0), (b"b", 0)]);
        let prefix = comp(&[(&one, 0)]);
        assert_eq!(
            compare(&ty, &a, &b),
            Ordering::Less,
            "signed ints, not bytes"
        );
        assert_eq!(compare(&ty, &b, &c), Ordering::Less);
        assert_eq!(compare(&ty, &prefix, &b), Ordering::Less, "a prefix first");
        let end_above = comp(&[(&one, 1)]);
        assert_eq!(compare(&ty, &end_above, &prefix), Ordering::Greater);
        assert_eq!(
            compare(&ty, &[0xff], &b),
            [0xff][..].cmp(&b[..]),
            "malformed: bytes"
        );
    }
}
