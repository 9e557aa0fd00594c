//! The encoding of Cassandra 5.0's `vector<T, n>`: the n elements one
//! after the other, with no count and no nulls.
//!
//! | element type                                   | each element            |
//! |------------------------------------------------|-------------------------|
//! | fixed width (`CqlType::vector_element_width`)  | its bytes, no prefix    |
//! | any other                                      | `[unsigned vint len][bytes]` |
//!
//! So `vector<float, 3>` is exactly 12 bytes and `vector<text, 2>` of
//! `['a', 'bc']` is `01 61 02 62 63`. Decoding checks the element count
//! through the byte count (fixed) or by reading exactly n elements, and
//! refuses trailing bytes, as Cassandra's `VectorType` does.

use super::{decode, serialize, serialize_into, vint};
use crate::{CqlType, Error, Result, Value};

/// Whether `v` is written without a length prefix inside a vector: the
/// value-side twin of [`CqlType::vector_element_width`].
fn written_fixed(v: &Value) -> bool {
    match v {
        Value::Boolean(_)
        | Value::Int(_)
        | Value::Float(_)
        | Value::BigInt(_)
        | Value::Double(_)
        | Value::Timestamp(_)
        | Value::Uuid(_)
        | Value::Timeuuid(_) => true,
        Value::Vector(items) => items.iter().all(written_fixed),
        _ => false,
    }
}

/// Appends the elements of a vector.
pub(super) fn write(items: &[Value], out: &mut Vec<u8>) {
    for v in items {
        if written_fixed(v) {
            serialize_into(v, out);
        } else {
            let bytes = serialize(v);
            vint::write_unsigned(bytes.len() as u64, out);
            out.extend_from_slice(&bytes);
        }
    }
}

/// The encodings of the elements of a `vector<element, dimension>`, or
/// `None` when `bytes` does not hold exactly that many (elements are not
/// checked).
pub fn split<'a>(element: &CqlType, dimension: usize, bytes: &'a [u8]) -> Option<Vec<&'a [u8]>> {
    let mut parts = Vec::with_capacity(dimension.min(bytes.len()));
    if let Some(width) = element.vector_element_width() {
        if width.checked_mul(dimension)? != bytes.len() {
            return None;
        }
        parts.extend(bytes.chunks_exact(width.max(1)));
        return Some(parts);
    }
    let mut rest = bytes;
    for _ in 0..dimension {
        let (len, used) = vint::read_unsigned(rest)?;
        let len = usize::try_from(len).ok()?;
        let body = rest.get(used..used.checked_add(len)?)?;
        parts.push(body);
        rest = &rest[used + len..];
    }
    rest.is_empty().then_some(parts)
}

/// Decodes `bytes` as a `vector<element, dimension>` (`ty` names it in
/// errors).
pub(super) fn read(
    ty: &CqlType,
    element: &CqlType,
    dimension: usize,
    bytes: &[u8],
    depth: usize,
) -> Result<Value> {
    let mut items = Vec::with_capacity(dimension.min(bytes.len()));
    if let Some(width) = element.vector_element_width() {
        let expected = width.checked_mul(dimension);
        if expected != Some(bytes.len()) {
            let expected = expected.map_or_else(|| "more".to_string(), |e| e.to_string());
            return Err(Error::invalid(
                ty,
                format!(
                    "expected {expected} bytes ({dimension} elements of {width}), got {}",
                    bytes.len()
                ),
            ));
        }
        for chunk in bytes.chunks_exact(width.max(1)) {
            items.push(decode(element, chunk, depth + 1)?);
        }
        return Ok(Value::Vector(items));
    }
    let mut pos = 0;
    for i in 0..dimension {
        let (len, used) = vint::read_unsigned(&bytes[pos..]).ok_or_else(|| {
            Error::invalid(
                ty,
                format!("truncated: element {i} of {dimension} is missing at offset {pos}"),
            )
        })?;
        pos += used;
        let end = usize::try_from(len)
            .ok()
            .and_then(|len| pos.checked_add(len))
            .filter(|&end| end <= bytes.len())
            .ok_or_else(|| {
                Error::invalid(
                    ty,
                    format!("length {len} of element {i} at offset {pos} runs past the end"),
                )
            })?;
        items.push(decode(element, &bytes[pos..end], depth + 1)?);
        pos = end;
    }
    if pos != bytes.len() {
        return Err(Error::invalid(
            ty,
            format!("{} bytes after the {dimension} elements", bytes.len() - pos),
        ));
    }
    Ok(Value::Vector(items))
}

#[cfg(test)]
mod tests {
    use crate::codec::{deserialize, serialize, split_vector, stores_verbatim};
    use crate::compare::compare;
    use crate::{CqlType, Value};
    use std::cmp::Ordering;

    fn vector(t: CqlType, n: usize) -> CqlType {
        CqlType::Vector(Box::new(t), n)
    }

    fn floats(xs: &[f32]) -> Value {
        Value::Vector(xs.iter().map(|&x| Value::Float(x)).collect())
    }

    fn texts(xs: &[&str]) -> Value {
        Value::Vector(xs.iter().map(|&x| Value::Text(x.into())).collect())
    }

    #[test]
    fn fixed_width_elements_have_no_prefix() {
        let ty = vector(CqlType::Float, 3);
        let v = floats(&[1.0, 2.0, 3.0]);
        let bytes = serialize(&v);
        assert_eq!(
            bytes,
            [0x3f, 0x80, 0, 0, 0x40, 0, 0, 0, 0x40, 0x40, 0, 0],
            "Cassandra's FloatType elements, 4 bytes each"
        );
        assert_eq!(deserialize(&ty, &bytes), Ok(v));
        assert!(stores_verbatim(&ty));
        assert!(!stores_verbatim(&vector(CqlType::Boolean, 2)));
        assert!(!stores_verbatim(&vector(CqlType::Text, 2)));
    }

    #[test]
    fn variable_width_elements_carry_a_vint_length() {
        let ty = vector(CqlType::Text, 2);
        let v = texts(&["a", "bc"]);
        let bytes = serialize(&v);
        assert_eq!(bytes, [1, b'a', 2, b'b', b'c']);
        assert_eq!(deserialize(&ty, &bytes), Ok(v));
        // smallint and date are not fixed-width in Cassandra's vectors.
        let small = Value::Vector(vec![Value::SmallInt(1), Value::SmallInt(-2)]);
        assert_eq!(serialize(&small), [2, 0, 1, 2, 0xff, 0xfe]);
        let long = texts(&[&"x".repeat(200)]);
        let bytes = serialize(&long);
        assert_eq!(&bytes[..2], [0x80, 200], "a two-byte vint");
        assert_eq!(deserialize(&vector(CqlType::Text, 1), &bytes), Ok(long));
    }

    #[test]
    fn nested_vectors_of_fixed_elements_are_fixed() {
        let inner = vector(CqlType::Int, 2);
        let ty = vector(inner.clone(), 2);
        assert_eq!(ty.vector_element_width(), Some(16));
        let v = Value::Vector(vec![
            Value::Vector(vec![Value::Int(1), Value::Int(2)]),
            Value::Vector(vec![Value::Int(3), Value::Int(4)]),
        ]);
        let bytes = serialize(&v);
        assert_eq!(bytes.len(), 16);
        assert_eq!(deserialize(&ty, &bytes), Ok(v));
        let of_lists = vector(CqlType::List(Box::new(CqlType::Int)), 1);
        let v = Value::Vector(vec![Value::List(vec![Value::Int(7)])]);
        let bytes = serialize(&v);
        assert_eq!(bytes[0], 12, "vint length of a 12-byte list");
        assert_eq!(deserialize(&of_lists, &bytes), Ok(v));
    }

    #[test]
    fn wrong_sizes_are_clear_errors() {
        let ty = vector(CqlType::Float, 3);
        let err = deserialize(&ty, &serialize(&floats(&[1.0, 2.0]))).unwrap_err();
        assert!(err.to_string().contains("expected 12 bytes"), "{err}");
        let err = deserialize(&ty, &serialize(&floats(&[1.0; 4]))).unwrap_err();
        assert!(err.to_string().contains("got 16"), "{err}");
        let huge = vector(CqlType::Double, usize::MAX / 2);
        assert!(deserialize(&huge, &[0; 8]).is_err());

        let ty = vector(CqlType::Text, 2);
        let err = deserialize(&ty, &[1, b'a']).unwrap_err();
        assert!(
            err.to_string().contains("element 1 of 2 is missing"),
            "{err}"
        );
        let err = deserialize(&ty, &[1, b'a', 5, b'b']).unwrap_err();
        assert!(err.to_string().contains("runs past the end"), "{err}");
        let err = deserialize(&ty, &[1, b'a', 1, b'b', 0]).unwrap_err();
        assert!(
            err.to_string().contains("1 bytes after the 2 elements"),
            "{err}"
        );
        let err = deserialize(&ty, &[1, b'a', 0xff]).unwrap_err();
        assert!(
            err.to_string().contains("missing"),
            "a truncated vint: {err}"
        );
        let err = deserialize(&vector(CqlType::Int, 1), &[0, 0, 1]).unwrap_err();
        assert!(err.to_string().contains("expected 4 bytes"), "{err}");
        // An element that is not a valid value of its type.
        let err = deserialize(&vector(CqlType::SmallInt, 1), &[1, 0]).unwrap_err();
        assert!(err.to_string().contains("smallint"), "{err}");
        let hostile = vector(CqlType::Text, usize::MAX);
        assert!(deserialize(&hostile, &[0, 0, 0]).is_err());
    }

    #[test]
    fn split_finds_the_elements_or_refuses() {
        let bytes = serialize(&texts(&["a", "", "bc"]));
        let parts = split_vector(&CqlType::Text, 3, &bytes).unwrap();
        assert_eq!(parts, [&b"a"[..], b"", b"bc"]);
        assert_eq!(split_vector(&CqlType::Text, 2, &bytes), None);
        assert_eq!(split_vector(&CqlType::Text, 4, &bytes), None);
        assert_eq!(split_vector(&CqlType::Int, 2, &[0; 7]), None);
    }

    #[test]
    fn vectors_compare_element_by_element() {
        let ty = vector(CqlType::Float, 2);
        let cmp =
            |a: &[f32], b: &[f32]| compare(&ty, &serialize(&floats(a)), &serialize(&floats(b)));
        // Bytewise, -1.0 would sort after 1.0; as floats it comes first.
        assert_eq!(cmp(&[-1.0, 2.0], &[1.0, -2.0]), Ordering::Less);
        assert_eq!(cmp(&[1.0, -2.0], &[1.0, 2.0]), Ordering::Less);
        assert_eq!(cmp(&[0.5, 100.0], &[1.0, -2.0]), Ordering::Less);
        assert_eq!(cmp(&[1.0, 2.0], &[1.0, 2.0]), Ordering::Equal);
        let ty = vector(CqlType::Text, 2);
        let cmp =
            |a: &[&str], b: &[&str]| compare(&ty, &serialize(&texts(a)), &serialize(&texts(b)));
        // The length prefix does not count: 'ab' sorts after 'a' + 'zzz'.
        assert_eq!(cmp(&["a", "zzz"], &["ab", "a"]), Ordering::Less);
        assert_eq!(cmp(&["", ""], &["a", "zzz"]), Ordering::Less);
    }
}
