//! Cassandra 5.0's masking functions, as plain functions of the selection:
//! `mask_null`, `mask_default`, `mask_replace`, `mask_inner`, `mask_outer`
//! and `mask_hash`. (Column masks, `MASKED WITH`, are off by default in
//! Cassandra 5.0, `dynamic_data_masking_enabled: false`, and are not built.)
//!
//! - `mask_default(x)` is a fixed value of x's type: `'****'` for text,
//!   zero for numbers, the epoch for times, an empty blob or collection,
//!   `false`, the nil UUID, `0.0.0.0`, and a tuple, vector or user type
//!   of its fields' defaults.
//! - `mask_inner(x, begin, end[, pad])` keeps `begin` characters at the
//!   start and `end` at the end and pads the rest (`*` by default);
//!   `mask_outer` pads those and keeps the rest. A null or negative count
//!   is 0; characters are counted as Java counts them (UTF-16 units).
//! - `mask_hash(x[, algorithm])` is the digest of x's serialized bytes,
//!   SHA-256 unless another algorithm Java knows by that name is given.

use crate::error::{QueryError, Result};
use crate::functions::Typed;
use varve_types::{codec, CqlType, Value};

pub const NAMES: [&str; 6] = [
    "mask_null",
    "mask_default",
    "mask_replace",
    "mask_inner",
    "mask_outer",
    "mask_hash",
];

/// The character that pads what `mask_inner` / `mask_outer` hide.
const DEFAULT_PAD: char = '*';
/// What `mask_default` gives for text.
const DEFAULT_TEXT: &str = "****";

pub fn is_mask_function(name: &str) -> bool {
    NAMES.contains(&name)
}

/// The signature Cassandra prints in a message about arguments.
fn signature(name: &str) -> &'static str {
    match name {
        "mask_null" => "system.mask_null(any)",
        "mask_default" => "system.mask_default(any)",
        "mask_replace" => "system.mask_replace(any, any)",
        "mask_inner" => "system.mask_inner([text|varchar|ascii], int, int, [text])",
        "mask_outer" => "system.mask_outer([text|varchar|ascii], int, int, [text])",
        _ => "system.mask_hash(any, [text])",
    }
}

/// The type the `index`-th literal argument takes, `first` being the
/// first argument's type.
pub fn argument_type(name: &str, index: usize, first: Option<&CqlType>) -> Option<CqlType> {
    match (name, index) {
        ("mask_replace", 1) => first.cloned(),
        ("mask_inner" | "mask_outer", 1 | 2) => Some(CqlType::Int),
        ("mask_inner" | "mask_outer", 3) | ("mask_hash", 1) => Some(CqlType::Text),
        _ => None,
    }
}

/// Cassandra's checks of a call, before it runs: the argument count, a
/// bare NULL as the masked value, and the value's type for the text
/// functions. `shown` are the arguments as written.
pub fn check(name: &str, shown: &[String], types: &[CqlType], first_is_null: bool) -> Result<()> {
    let arity_ok = match name {
        "mask_null" | "mask_default" => types.len() == 1,
        "mask_replace" => types.len() == 2,
        "mask_inner" | "mask_outer" => matches!(types.len(), 3 | 4),
        _ => matches!(types.len(), 1 | 2),
    };
    if !arity_ok {
        return Err(invalid(format!(
            "Invalid number of arguments for function {}",
            signature(name)
        )));
    }
    if first_is_null && name != "mask_null" {
        return Err(invalid(format!(
            "Cannot infer type of argument NULL in call to function {}: use type casts to disambiguate",
            signature(name)
        )));
    }
    let text = matches!(types[0].unfrozen(), CqlType::Text | CqlType::Ascii);
    if matches!(name, "mask_inner" | "mask_outer") && !text {
        return Err(invalid(format!(
            "Function system.{name} requires an argument of type [text|varchar|ascii], but found argument {} of type {}",
            shown[0], types[0]
        )));
    }
    Ok(())
}

fn invalid(message: String) -> QueryError {
    QueryError::Invalid(message)
}

/// Applies a masking function (its call already checked).
pub fn apply(name: &str, args: &[Typed]) -> Result<Typed> {
    let (ty, value) = args.first().cloned().unwrap_or((CqlType::Blob, None));
    let arg = |i: usize| args.get(i).and_then(|(_, v)| v.as_ref());
    Ok(match name {
        "mask_null" => (ty, None),
        "mask_default" => (ty.clone(), Some(default_of(&ty))),
        "mask_replace" => (ty, arg(1).cloned()),
        "mask_hash" => {
            let algorithm = match arg(1) {
                Some(Value::Text(a) | Value::Ascii(a)) => a.as_str(),
                _ => "SHA-256",
            };
            let digest = value
                .map(|v| hash(algorithm, &codec::serialize(&v)))
                .transpose()?;
            (CqlType::Blob, digest.map(Value::Blob))
        }
        _ => {
            let count = |i| match arg(i) {
                Some(Value::Int(n)) => (*n).max(0) as usize,
                _ => 0,
            };
            let pad = match arg(3) {
                Some(Value::Text(p) | Value::Ascii(p)) => single_char(name, p)?,
                _ => DEFAULT_PAD,
            };
            let masked = value.map(|v| {
                let keep_ends = name == "mask_inner";
                remask(&v, count(1), count(2), pad, keep_ends)
            });
            (ty, masked)
        }
    })
}

fn single_char(name: &str, pad: &str) -> Result<char> {
    let units = pad.encode_utf16().count();
    let mut chars = pad.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if units == 1 => Ok(c),
        _ => Err(invalid(format!(
            "The padding argument for function system.{name} should be single-character, but '{pad}' has {units} characters."
        ))),
    }
}

/// Text with its first `begin` and last `end` UTF-16 units kept and the
/// middle padded (`keep_ends`), or the other way round.
fn remask(v: &Value, begin: usize, end: usize, pad: char, keep_ends: bool) -> Value {
    let (text, ascii) = match v {
        Value::Ascii(s) => (s.as_str(), true),
        Value::Text(s) => (s.as_str(), false),
        other => return other.clone(),
    };
    let units: Vec<u16> = text.encode_utf16().collect();
    let len = units.len();
    let (b, e) = (begin.min(len), end.min(len.saturating_sub(begin.min(len))));
    let mut out: Vec<u16> = Vec::with_capacity(len);
    let mut pad_units = [0u16; 2];
    let pad_units = pad.encode_utf16(&mut pad_units);
    for (i, u) in units.iter().enumerate() {
        let at_ends = i < b || i >= len - e;
        if at_ends == keep_ends {
            out.push(*u);
        } else {
            out.extend_from_slice(pad_units);
        }
    }
    let s = String::from_utf16_lossy(&out);
    if ascii {
        Value::Ascii(s)
    } else {
        Value::Text(s)
    }
}

fn hash(algorithm: &str, bytes: &[u8]) -> Result<Vec<u8>> {
    use sha2::Digest;
    Ok(match algorithm.to_ascii_uppercase().as_str() {
        "SHA-256" | "SHA256" => sha2::Sha256::digest(bytes).to_vec(),
        "SHA-224" | "SHA224" => sha2::Sha224::digest(bytes).to_vec(),
        "SHA-384" | "SHA384" => sha2::Sha384::digest(bytes).to_vec(),
        "SHA-512" | "SHA512" => sha2::Sha512::digest(bytes).to_vec(),
        "SHA-512/224" => sha2::Sha512_224::digest(bytes).to_vec(),
        "SHA-512/256" => sha2::Sha512_256::digest(bytes).to_vec(),
        "SHA-1" | "SHA1" | "SHA" => sha1::Sha1::digest(bytes).to_vec(),
        "MD5" => md5::Md5::digest(bytes).to_vec(),
        _ => return Err(invalid(format!("Hash algorithm not found: {algorithm}"))),
    })
}

/// `mask_default`'s value of a type.
pub fn default_of(ty: &CqlType) -> Value {
    match ty.unfrozen() {
        CqlType::Ascii => Value::Ascii(DEFAULT_TEXT.into()),
        CqlType::Text => Value::Text(DEFAULT_TEXT.into()),
        CqlType::TinyInt => Value::TinyInt(0),
        CqlType::SmallInt => Value::SmallInt(0),
        CqlType::Int => Value::Int(0),
        CqlType::BigInt | CqlType::Counter => Value::BigInt(0),
        CqlType::Varint => Value::Varint(0.into()),
        CqlType::Float => Value::Float(0.0),
        CqlType::Double => Value::Double(0.0),
        CqlType::Decimal => Value::Decimal {
            unscaled: 0.into(),
            scale: 0,
        },
        CqlType::Boolean => Value::Boolean(false),
        CqlType::Blob => Value::Blob(Vec::new()),
        CqlType::Uuid => Value::Uuid([0; 16]),
        // Cassandra's: the smallest version-1 UUID its generator makes.
        CqlType::Timeuuid => Value::Timeuuid(MIN_TIMEUUID),
        CqlType::Timestamp => Value::Timestamp(0),
        CqlType::Date => Value::Date(1 << 31),
        CqlType::Time => Value::Time(0),
        CqlType::Duration => Value::Duration {
            months: 0,
            days: 0,
            nanos: 0,
        },
        CqlType::Inet => Value::Inet(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)),
        CqlType::List(_) => Value::List(Vec::new()),
        CqlType::Set(_) => Value::Set(Vec::new()),
        CqlType::Map(..) => Value::Map(Vec::new()),
        CqlType::Tuple(fields) => {
            Value::Tuple(fields.iter().map(|f| Some(default_of(f))).collect())
        }
        CqlType::Udt(u) => {
            Value::Tuple(u.field_types.iter().map(|f| Some(default_of(f))).collect())
        }
        CqlType::Vector(e, n) => Value::Vector(vec![default_of(e); *n]),
        // Frozen is unwrapped above; nothing else is left.
        _ => Value::Blob(Vec::new()),
    }
}

/// `13814000-1dd2-11b2-8080-808080808080`.
const MIN_TIMEUUID: [u8; 16] = [
    0x13, 0x81, 0x40, 0x00, 0x1d, 0xd2, 0x11, 0xb2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
];

#[cfg(test)]
#[path = "mask_fns_tests.rs"]
mod tests;
