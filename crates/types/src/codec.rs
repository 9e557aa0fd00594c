//! The native protocol (v4/v5) byte encoding of CQL values.
//!
//! Encodings, all big-endian:
//!
//! | type                         | bytes                                              |
//! |------------------------------|----------------------------------------------------|
//! | boolean, tinyint             | 1                                                  |
//! | smallint                     | 2                                                  |
//! | int, float, date (u32)       | 4                                                  |
//! | bigint, double, timestamp, time, counter | 8                                      |
//! | uuid, timeuuid (version 1)   | 16                                                 |
//! | inet                         | 4 or 16                                            |
//! | varint                       | two's complement, at least 1 byte                  |
//! | decimal                      | `[int scale][varint unscaled]`                     |
//! | duration                     | three zig-zag vints: months, days, nanoseconds     |
//! | list, set                    | `[int n]` then n times `[int len][bytes]`          |
//! | map                          | `[int n]` then n times key and value, each framed  |
//! | tuple, user type             | per field `[int len][bytes]`, len -1 is null       |
//! | vector (Cassandra 5.0)       | n elements, fixed-width bare, others `[vint len][bytes]` ([`vector`]) |
//!
//! `deserialize` is strict: it rejects wrong widths, trailing bytes, bad
//! UTF-8 and the 0-byte "empty value" (see [`is_empty_allowed`]). Serializing
//! a set or map sorts its elements in the element type's order and drops
//! duplicates, as Cassandra stores them.

mod vector;
mod vint;

use crate::compare::{canonical_map, canonical_set};
use crate::{CqlType, Error, Result, Value};
use num_bigint::BigInt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub use vector::split as split_vector;
pub use vint::{read_unsigned as read_vint, write_unsigned as write_vint};

/// Nanoseconds in a day: `time` values lie in `0..NANOS_PER_DAY`.
pub const NANOS_PER_DAY: i64 = 86_400_000_000_000;
/// Length prefix that marks a null tuple field.
pub const NULL_LEN: i32 = -1;
/// Nesting depth past which `deserialize` refuses a type, so hostile
/// schemas cannot exhaust the stack.
pub const NESTING_DEPTH_MAX: usize = 64;

/// Encodes `v` into a fresh buffer.
pub fn serialize(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    serialize_into(v, &mut out);
    out
}

/// Appends the encoding of `v` to `out`.
pub fn serialize_into(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Ascii(s) | Value::Text(s) => out.extend_from_slice(s.as_bytes()),
        Value::Blob(b) => out.extend_from_slice(b),
        Value::Boolean(b) => out.push(u8::from(*b)),
        Value::TinyInt(n) => out.extend_from_slice(&n.to_be_bytes()),
        Value::SmallInt(n) => out.extend_from_slice(&n.to_be_bytes()),
        Value::Int(n) => out.extend_from_slice(&n.to_be_bytes()),
        Value::BigInt(n) | Value::Counter(n) | Value::Timestamp(n) | Value::Time(n) => {
            out.extend_from_slice(&n.to_be_bytes())
        }
        Value::Varint(n) => out.extend_from_slice(&n.to_signed_bytes_be()),
        Value::Float(f) => out.extend_from_slice(&f.to_be_bytes()),
        Value::Double(f) => out.extend_from_slice(&f.to_be_bytes()),
        Value::Decimal { unscaled, scale } => {
            out.extend_from_slice(&scale.to_be_bytes());
            out.extend_from_slice(&unscaled.to_signed_bytes_be());
        }
        Value::Uuid(u) | Value::Timeuuid(u) => out.extend_from_slice(u),
        Value::Date(d) => out.extend_from_slice(&d.to_be_bytes()),
        Value::Duration {
            months,
            days,
            nanos,
        } => {
            vint::write_unsigned(vint::zigzag(i64::from(*months)), out);
            vint::write_unsigned(vint::zigzag(i64::from(*days)), out);
            vint::write_unsigned(vint::zigzag(*nanos), out);
        }
        Value::Inet(IpAddr::V4(a)) => out.extend_from_slice(&a.octets()),
        Value::Inet(IpAddr::V6(a)) => out.extend_from_slice(&a.octets()),
        Value::List(items) => {
            let refs: Vec<&Value> = items.iter().collect();
            write_elements(&refs, out);
        }
        Value::Set(items) => write_elements(&canonical_set(items), out),
        Value::Map(entries) => {
            let kept = canonical_map(entries);
            write_len(kept.len(), out);
            for (k, v) in kept {
                write_framed(k, out);
                write_framed(v, out);
            }
        }
        Value::Tuple(fields) => {
            for f in fields {
                match f {
                    Some(v) => write_framed(v, out),
                    None => out.extend_from_slice(&NULL_LEN.to_be_bytes()),
                }
            }
        }
        Value::Vector(items) => vector::write(items, out),
    }
}

fn write_len(n: usize, out: &mut Vec<u8>) {
    // Values longer than 2 GiB cannot be framed by the protocol at all;
    // saturate rather than wrap so a reader fails instead of misframing.
    let n = i32::try_from(n).unwrap_or(i32::MAX);
    out.extend_from_slice(&n.to_be_bytes());
}

fn write_framed(v: &Value, out: &mut Vec<u8>) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    serialize_into(v, out);
    let len = i32::try_from(out.len() - at - 4).unwrap_or(i32::MAX);
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

fn write_elements(items: &[&Value], out: &mut Vec<u8>) {
    write_len(items.len(), out);
    for v in items {
        write_framed(v, out);
    }
}

/// True when Cassandra accepts a 0-byte value (an "empty value", distinct
/// from null) for `ty`: every non-collection type except `duration`
/// (collections, tuples and durations have no empty form; text, ascii and
/// blob take 0 bytes as an ordinary value anyway). [`deserialize`] rejects
/// empty values of fixed-width and numeric types; the caller decides
/// whether to store them raw.
pub fn is_empty_allowed(ty: &CqlType) -> bool {
    !matches!(
        ty.unfrozen(),
        CqlType::List(_)
            | CqlType::Set(_)
            | CqlType::Map(_, _)
            | CqlType::Tuple(_)
            | CqlType::Udt(_)
            | CqlType::UserRef(_)
            | CqlType::Duration
    )
}

/// Checks that `bytes` is a valid encoding of `ty`. Text, ascii and blob
/// are checked in place, without building a [`Value`].
pub fn validate(ty: &CqlType, bytes: &[u8]) -> Result<()> {
    match ty {
        CqlType::Blob => Ok(()),
        CqlType::Ascii => match bytes.iter().position(|b| !b.is_ascii()) {
            Some(pos) => Err(Error::invalid(
                ty,
                format!("non-ASCII byte at offset {pos}"),
            )),
            None => Ok(()),
        },
        CqlType::Text => match std::str::from_utf8(bytes) {
            Ok(_) => Ok(()),
            Err(e) => Err(Error::invalid(ty, format!("invalid UTF-8: {e}"))),
        },
        _ => deserialize(ty, bytes).map(|_| ()),
    }
}

/// True when every valid encoding of `ty` is also the one [`serialize`]
/// gives back for its value, so a validated value can be stored as sent:
/// text, blob, the fixed-width numbers, dates and times, uuids and inet,
/// and vectors of fixed-width elements that are themselves verbatim
/// (`vector<float, n>`). Not booleans (any non-zero byte is true), varints
/// and decimals (which may carry redundant sign bytes), durations,
/// collections, tuples and UDTs. Frozen wrappers are looked through.
pub fn stores_verbatim(ty: &CqlType) -> bool {
    if let CqlType::Vector(e, _) = ty.unfrozen() {
        return e.vector_element_width().is_some() && stores_verbatim(e);
    }
    matches!(
        ty.unfrozen(),
        CqlType::Ascii
            | CqlType::Text
            | CqlType::Blob
            | CqlType::TinyInt
            | CqlType::SmallInt
            | CqlType::Int
            | CqlType::BigInt
            | CqlType::Counter
            | CqlType::Timestamp
            | CqlType::Float
            | CqlType::Double
            | CqlType::Date
            | CqlType::Time
            | CqlType::Uuid
            | CqlType::Timeuuid
            | CqlType::Inet
    )
}

/// Decodes `bytes` as a value of `ty`, strictly.
pub fn deserialize(ty: &CqlType, bytes: &[u8]) -> Result<Value> {
    decode(ty, bytes, 0)
}

fn fixed<const N: usize>(ty: &CqlType, bytes: &[u8]) -> Result<[u8; N]> {
    bytes
        .try_into()
        .map_err(|_| Error::invalid(ty, format!("expected {N} bytes, got {}", bytes.len())))
}

fn decode(ty: &CqlType, bytes: &[u8], depth: usize) -> Result<Value> {
    if depth > NESTING_DEPTH_MAX {
        return Err(Error::invalid(ty, "type nested too deeply"));
    }
    Ok(match ty {
        CqlType::Frozen(inner) => return decode(inner, bytes, depth + 1),
        CqlType::Ascii => {
            if let Some(pos) = bytes.iter().position(|b| !b.is_ascii()) {
                return Err(Error::invalid(
                    ty,
                    format!("non-ASCII byte at offset {pos}"),
                ));
            }
            Value::Ascii(String::from_utf8_lossy(bytes).into_owned())
        }
        CqlType::Text => match std::str::from_utf8(bytes) {
            Ok(s) => Value::Text(s.to_owned()),
            Err(e) => return Err(Error::invalid(ty, format!("invalid UTF-8: {e}"))),
        },
        CqlType::Blob => Value::Blob(bytes.to_vec()),
        CqlType::Custom(class) => {
            let width = match class.as_str() {
                crate::cql_type::EMPTY_TYPE_CLASS => Some(0),
                crate::cql_type::LEXICAL_UUID_CLASS => Some(16),
                _ => None,
            };
            if let Some(n) = width.filter(|n| *n != bytes.len()) {
                return Err(Error::invalid(
                    ty,
                    format!("expected {n} bytes, got {}", bytes.len()),
                ));
            }
            // A lexical UUID is a UUID in all but its order (and its JSON).
            if class == crate::cql_type::LEXICAL_UUID_CLASS {
                return Ok(Value::Uuid(fixed(ty, bytes)?));
            }
            if crate::composite::is_composite(class) {
                crate::composite::validate(class, bytes)?;
            }
            Value::Blob(bytes.to_vec())
        }
        CqlType::Boolean => Value::Boolean(fixed::<1>(ty, bytes)?[0] != 0),
        CqlType::TinyInt => Value::TinyInt(i8::from_be_bytes(fixed(ty, bytes)?)),
        CqlType::SmallInt => Value::SmallInt(i16::from_be_bytes(fixed(ty, bytes)?)),
        CqlType::Int => Value::Int(i32::from_be_bytes(fixed(ty, bytes)?)),
        CqlType::BigInt => Value::BigInt(i64::from_be_bytes(fixed(ty, bytes)?)),
        CqlType::Counter => Value::Counter(i64::from_be_bytes(fixed(ty, bytes)?)),
        CqlType::Timestamp => Value::Timestamp(i64::from_be_bytes(fixed(ty, bytes)?)),
        CqlType::Float => Value::Float(f32::from_be_bytes(fixed(ty, bytes)?)),
        CqlType::Double => Value::Double(f64::from_be_bytes(fixed(ty, bytes)?)),
        CqlType::Date => Value::Date(u32::from_be_bytes(fixed(ty, bytes)?)),
        CqlType::Time => {
            let n = i64::from_be_bytes(fixed(ty, bytes)?);
            if !(0..NANOS_PER_DAY).contains(&n) {
                return Err(Error::invalid(ty, format!("{n} ns is outside one day")));
            }
            Value::Time(n)
        }
        CqlType::Uuid => Value::Uuid(fixed(ty, bytes)?),
        CqlType::Timeuuid => {
            let u: [u8; 16] = fixed(ty, bytes)?;
            if u[6] >> 4 != 1 {
                return Err(Error::invalid(
                    ty,
                    format!("version {} is not 1", u[6] >> 4),
                ));
            }
            Value::Timeuuid(u)
        }
        CqlType::Varint => {
            if bytes.is_empty() {
                return Err(Error::invalid(ty, "empty"));
            }
            Value::Varint(BigInt::from_signed_bytes_be(bytes))
        }
        CqlType::Decimal => {
            if bytes.len() < 5 {
                return Err(Error::invalid(
                    ty,
                    format!("{} bytes, need at least 5", bytes.len()),
                ));
            }
            let scale = i32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            Value::Decimal {
                unscaled: BigInt::from_signed_bytes_be(&bytes[4..]),
                scale,
            }
        }
        CqlType::Inet => match bytes.len() {
            4 => Value::Inet(IpAddr::V4(Ipv4Addr::from(fixed::<4>(ty, bytes)?))),
            16 => Value::Inet(IpAddr::V6(Ipv6Addr::from(fixed::<16>(ty, bytes)?))),
            n => {
                return Err(Error::invalid(
                    ty,
                    format!("expected 4 or 16 bytes, got {n}"),
                ))
            }
        },
        CqlType::Duration => decode_duration(ty, bytes)?,
        CqlType::List(e) => Value::List(decode_elements(ty, e, bytes, depth)?),
        CqlType::Set(e) => Value::Set(decode_elements(ty, e, bytes, depth)?),
        CqlType::Map(k, v) => {
            let mut r = Reader { ty, bytes, pos: 0 };
            let n = r.count()?;
            let mut entries = Vec::new();
            for _ in 0..n {
                let key = decode(k, r.framed()?, depth + 1)?;
                let value = decode(v, r.framed()?, depth + 1)?;
                entries.push((key, value));
            }
            r.finish()?;
            Value::Map(entries)
        }
        CqlType::Tuple(types) => decode_fields(ty, types, bytes, depth)?,
        CqlType::Udt(u) => decode_fields(ty, &u.field_types, bytes, depth)?,
        CqlType::UserRef(r) => {
            return Err(Error::invalid(ty, format!("unknown type {}", r.name)));
        }
        CqlType::Vector(e, n) => return vector::read(ty, e, *n, bytes, depth),
    })
}

/// A tuple's or user type's fields; missing trailing fields read as nulls,
/// as in Cassandra.
fn decode_fields(ty: &CqlType, types: &[CqlType], bytes: &[u8], depth: usize) -> Result<Value> {
    let mut r = Reader { ty, bytes, pos: 0 };
    let mut fields = Vec::with_capacity(types.len());
    for t in types {
        if r.pos == bytes.len() {
            fields.push(None);
            continue;
        }
        fields.push(match r.framed_or_null()? {
            Some(b) => Some(decode(t, b, depth + 1)?),
            None => None,
        });
    }
    r.finish()?;
    Ok(Value::Tuple(fields))
}

fn decode_duration(ty: &CqlType, bytes: &[u8]) -> Result<Value> {
    let mut pos = 0;
    let mut parts = [0i64; 3];
    for part in &mut parts {
        let (raw, used) = vint::read_unsigned(&bytes[pos..])
            .ok_or_else(|| Error::invalid(ty, "truncated vint"))?;
        *part = vint::unzigzag(raw);
        pos += used;
    }
    if pos != bytes.len() {
        return Err(Error::invalid(
            ty,
            format!("{} trailing bytes", bytes.len() - pos),
        ));
    }
    let [months, days, nanos] = parts;
    let months = i32::try_from(months).map_err(|_| Error::invalid(ty, "months overflow int"))?;
    let days = i32::try_from(days).map_err(|_| Error::invalid(ty, "days overflow int"))?;
    let signs = [
        i64::from(months).signum(),
        i64::from(days).signum(),
        nanos.signum(),
    ];
    if signs.contains(&1) && signs.contains(&-1) {
        return Err(Error::invalid(
            ty,
            "months, days and nanoseconds must share one sign",
        ));
    }
    Ok(Value::Duration {
        months,
        days,
        nanos,
    })
}

fn decode_elements(ty: &CqlType, e: &CqlType, bytes: &[u8], depth: usize) -> Result<Vec<Value>> {
    let mut r = Reader { ty, bytes, pos: 0 };
    let n = r.count()?;
    let mut items = Vec::new();
    for _ in 0..n {
        items.push(decode(e, r.framed()?, depth + 1)?);
    }
    r.finish()?;
    Ok(items)
}

/// A cursor over collection and tuple framing that never reads past the end.
struct Reader<'a> {
    ty: &'a CqlType,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn int(&mut self) -> Result<i32> {
        let end = self.pos + 4;
        let b = self.bytes.get(self.pos..end).ok_or_else(|| {
            Error::invalid(self.ty, format!("truncated length at offset {}", self.pos))
        })?;
        self.pos = end;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// An element count; each element takes at least 4 bytes, so a count
    /// larger than the remaining bytes allow is rejected before allocating.
    fn count(&mut self) -> Result<usize> {
        let n = self.int()?;
        let n = usize::try_from(n)
            .map_err(|_| Error::invalid(self.ty, format!("negative element count {n}")))?;
        if n > (self.bytes.len() - self.pos) / 4 {
            return Err(Error::invalid(
                self.ty,
                format!("element count {n} exceeds the bytes"),
            ));
        }
        Ok(n)
    }

    fn framed_or_null(&mut self) -> Result<Option<&'a [u8]>> {
        let len = self.int()?;
        if len == NULL_LEN {
            return Ok(None);
        }
        let len = usize::try_from(len)
            .map_err(|_| Error::invalid(self.ty, format!("negative length {len}")))?;
        let end = self.pos.checked_add(len).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| {
            Error::invalid(
                self.ty,
                format!("length {len} at offset {} runs past the end", self.pos),
            )
        })?;
        let b = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(Some(b))
    }

    fn framed(&mut self) -> Result<&'a [u8]> {
        self.framed_or_null()?
            .ok_or_else(|| Error::invalid(self.ty, "null element in a collection"))
    }

    fn finish(&self) -> Result<()> {
        if self.pos != self.bytes.len() {
            return Err(Error::invalid(
                self.ty,
                format!("{} trailing bytes", self.bytes.len() - self.pos),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
