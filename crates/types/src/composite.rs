//! Checking the bytes of Cassandra's legacy composite types
//! (`CompositeType`, `DynamicCompositeType`), kept as custom types: each
//! component is `[u16 length][value][end-of-component byte]`, a dynamic
//! one preceded by its type (an alias, or a class name). A value is
//! refused with the message Cassandra's `AbstractCompositeType.validate`
//! gives; the order is in `compare.rs`.

use crate::{codec, CqlType, Error, Result};

const COMPOSITE: &str = "org.apache.cassandra.db.marshal.CompositeType(";
const DYNAMIC: &str = "org.apache.cassandra.db.marshal.DynamicCompositeType(";

/// Whether `class` names a composite type.
pub fn is_composite(class: &str) -> bool {
    class.starts_with(COMPOSITE) || class.starts_with(DYNAMIC)
}

/// Checks `bytes` as a value of the composite type `class`.
pub fn validate(class: &str, mut bytes: &[u8]) -> Result<()> {
    let fixed = crate::compare::composite_types(class);
    let aliases = crate::compare::dynamic_aliases(class);
    let mut i = 0;
    while !bytes.is_empty() {
        let ty = match (&fixed, &aliases) {
            // Bytes past the declared components are not looked at
            // (Cassandra 5.0.4 accepts them).
            (Some(types), _) => match types.get(i) {
                Some(t) => t.clone(),
                None => return Ok(()),
            },
            (None, Some(aliases)) => {
                let (ty, rest) = dynamic_type(aliases, bytes, i)?;
                bytes = rest;
                ty
            }
            _ => return Ok(()),
        };
        if bytes.len() < 2 {
            return Err(marshal(format!(
                "Not enough bytes to read value size of component {i}"
            )));
        }
        let len = usize::from(u16::from_be_bytes([bytes[0], bytes[1]]));
        let Some(value) = bytes.get(2..2 + len) else {
            return Err(marshal(format!(
                "Not enough bytes to read value of component {i}"
            )));
        };
        codec::deserialize(&ty, value).map_err(|e| marshal(e.to_string()))?;
        let Some(&eoc) = bytes.get(2 + len) else {
            return Err(marshal(format!(
                "Not enough bytes to read the end-of-component byte of component{i}"
            )));
        };
        bytes = &bytes[3 + len..];
        if eoc != 0 && !bytes.is_empty() {
            return Err(marshal(format!(
                "Invalid bytes remaining after an end-of-component at component{i}"
            )));
        }
        i += 1;
    }
    Ok(())
}

/// A dynamic component's type and the bytes after its type part.
fn dynamic_type<'b>(
    aliases: &[(u8, CqlType)],
    bytes: &'b [u8],
    i: usize,
) -> Result<(CqlType, &'b [u8])> {
    if bytes.len() < 2 {
        return Err(marshal(format!(
            "Not enough bytes to header of the comparator part of component {i}"
        )));
    }
    let header = u16::from_be_bytes([bytes[0], bytes[1]]);
    let not_found = || marshal(format!("Cannot find comparator for component {i}"));
    if header & 0x8000 != 0 {
        let alias = (header & 0xFF) as u8;
        let ty = aliases
            .iter()
            .find(|(a, _)| *a == alias)
            .ok_or_else(not_found)?;
        return Ok((ty.1.clone(), &bytes[2..]));
    }
    let end = 2 + usize::from(header);
    let Some(name) = bytes.get(2..end) else {
        return Err(marshal(format!(
            "Not enough bytes to read comparator name of component {i}"
        )));
    };
    let ty = std::str::from_utf8(name)
        .ok()
        .and_then(crate::marshal::parse_marshal_name)
        .ok_or_else(not_found)?;
    Ok((ty, &bytes[end..]))
}

fn marshal(message: String) -> Error {
    Error::Marshal(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAIR: &str = "org.apache.cassandra.db.marshal.CompositeType(org.apache.cassandra.db.marshal.Int32Type,org.apache.cassandra.db.marshal.UTF8Type)";
    const DYN: &str = "org.apache.cassandra.db.marshal.DynamicCompositeType(a=>org.apache.cassandra.db.marshal.Int32Type)";

    #[test]
    fn well_formed_values_pass_and_cut_ones_say_where() {
        assert!(validate(PAIR, &[0, 4, 0, 0, 0, 1, 0, 0, 1, b'a', 0]).is_ok());
        assert!(validate(PAIR, &[]).is_ok());
        let e = validate(PAIR, &[0, 4, 0, 0, 0, 1]).unwrap_err().to_string();
        assert_eq!(
            e,
            "Not enough bytes to read the end-of-component byte of component0"
        );
        let e = validate(PAIR, &[0, 4, 0, 0]).unwrap_err().to_string();
        assert_eq!(e, "Not enough bytes to read value of component 0");
        let e = validate(PAIR, &[0, 4, 0, 0, 0, 1, 1, 0])
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "Invalid bytes remaining after an end-of-component at component0"
        );
        assert!(
            validate(PAIR, &[0, 2, 0, 1, 0]).is_err(),
            "an int of 2 bytes"
        );
        assert!(validate(DYN, &[0x80, b'a', 0, 4, 0, 0, 0, 1, 0]).is_ok());
        let e = validate(DYN, &[0x80, b'z', 0, 4, 0, 0, 0, 1, 0])
            .unwrap_err()
            .to_string();
        assert_eq!(e, "Cannot find comparator for component 0");
    }
}
