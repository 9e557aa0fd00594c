//! A value from plain text typed where no CQL literal is expected (the key
//! of `nodetool getendpoints`), read as Cassandra's `AbstractType.fromString`
//! reads it: no quotes around text, a blob as hex digits (`0x` optional),
//! numbers, uuids, dates and times as their usual text.

use super::{
    from_boolean, from_duration_literal, from_float_literal, from_integer_literal,
    from_string_literal, from_uuid_literal,
};
use crate::time::parse_uuid;
use crate::{CqlType, Error, Result, Value};

/// `text` as a value of type `ty`; collections, tuples and user types are
/// refused (they have no plain-text form here).
pub fn from_text(ty: &CqlType, text: &str) -> Result<Value> {
    match ty.unfrozen() {
        CqlType::Text | CqlType::Ascii | CqlType::Inet => from_string_literal(ty, text),
        CqlType::Date | CqlType::Time | CqlType::Timestamp if is_integer(text) => {
            from_integer_literal(ty, text)
        }
        CqlType::Date | CqlType::Time | CqlType::Timestamp => from_string_literal(ty, text),
        CqlType::TinyInt
        | CqlType::SmallInt
        | CqlType::Int
        | CqlType::BigInt
        | CqlType::Varint
        | CqlType::Counter => from_integer_literal(ty, text),
        CqlType::Float | CqlType::Double | CqlType::Decimal => from_float_literal(ty, text),
        CqlType::Boolean => match text.to_ascii_lowercase().as_str() {
            "true" => from_boolean(ty, true),
            "false" => from_boolean(ty, false),
            _ => Err(Error::Marshal(format!(
                "Unable to make boolean from '{text}'"
            ))),
        },
        CqlType::Uuid | CqlType::Timeuuid => from_uuid_literal(ty, &parse_uuid(text)?),
        CqlType::Blob | CqlType::Custom(_) => hex_bytes(text)
            .map(Value::Blob)
            .ok_or_else(|| Error::Marshal(format!("cannot parse '{text}' as hex bytes"))),
        CqlType::Duration => from_duration_literal(ty, text),
        CqlType::List(_)
        | CqlType::Set(_)
        | CqlType::Map(_, _)
        | CqlType::Tuple(_)
        | CqlType::Udt(_)
        | CqlType::UserRef(_) => Err(Error::Marshal(format!(
            "a {} cannot be given as plain text",
            ty.cql_name()
        ))),
        // Cassandra's VectorType.fromString reads the encoding as hex.
        CqlType::Vector(_, _) => {
            let bytes = hex_bytes(text)
                .ok_or_else(|| Error::Marshal(format!("cannot parse '{text}' as hex bytes")))?;
            crate::codec::deserialize(ty, &bytes)
        }
        CqlType::Frozen(_) => unreachable!("unfrozen() removed every Frozen"),
    }
}

/// An optional sign, then digits only.
fn is_integer(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Hex digits (an even number of them, `0x` optional) as bytes.
fn hex_bytes(text: &str) -> Option<Vec<u8>> {
    let hex = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_read_from_their_plain_text() {
        assert_eq!(
            from_text(&CqlType::Text, "a:b c"),
            Ok(Value::Text("a:b c".into()))
        );
        assert_eq!(from_text(&CqlType::Int, "-42"), Ok(Value::Int(-42)));
        assert_eq!(from_text(&CqlType::BigInt, "7"), Ok(Value::BigInt(7)));
        assert_eq!(
            from_text(&CqlType::Boolean, "TRUE"),
            Ok(Value::Boolean(true))
        );
        assert_eq!(
            from_text(&CqlType::Blob, "0x00ff"),
            Ok(Value::Blob(vec![0, 255]))
        );
        assert_eq!(
            from_text(&CqlType::Blob, "00ff"),
            Ok(Value::Blob(vec![0, 255]))
        );
        assert_eq!(from_text(&CqlType::Double, "1.5"), Ok(Value::Double(1.5)));
        let uuid = from_text(&CqlType::Uuid, "12345678-9abc-def0-0102-030405060708");
        assert!(matches!(uuid, Ok(Value::Uuid(u)) if u[0] == 0x12 && u[15] == 8));
        assert_eq!(
            from_text(&CqlType::Timestamp, "1000"),
            Ok(Value::Timestamp(1000))
        );
        assert!(from_text(&CqlType::Date, "2026-11-28").is_ok());
    }

    #[test]
    fn text_that_is_not_of_the_type_is_refused() {
        assert!(from_text(&CqlType::Int, "x").is_err());
        assert!(from_text(&CqlType::Int, "2147483648").is_err());
        assert!(from_text(&CqlType::Boolean, "yes").is_err());
        assert!(from_text(&CqlType::Blob, "0x0").is_err());
        assert!(from_text(&CqlType::Blob, "zz").is_err());
        assert!(from_text(&CqlType::Uuid, "not-a-uuid").is_err());
        let list = CqlType::List(Box::new(CqlType::Int));
        assert!(from_text(&list, "[1]").is_err());
    }
}
