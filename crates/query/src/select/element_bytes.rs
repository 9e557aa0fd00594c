//! Elements and slices of a serialized map or set (the native protocol's
//! collection encoding: an `i32` count, then each element, or each key and
//! value, as an `i32` length and its bytes), whether the collection came
//! from one frozen cell or was assembled from a non-frozen column's cells.
//!
//! Keys are compared with their type's comparator, so `m[1]` of a
//! `map<varint, ...>` finds the key however its bytes were written. Bytes
//! that do not parse are an error naming the type, never a panic.

use crate::error::{QueryError, Result};
use bytes::{BufMut, Bytes, BytesMut};
use std::cmp::Ordering;
use varve_types::{compare, CqlType};

/// The entries of a serialized map or set, in their stored order: `(key,
/// value)`, the value being the key again for a set.
pub fn entries<'a>(coll: &CqlType, bytes: &'a [u8]) -> Result<Vec<(&'a [u8], &'a [u8])>> {
    let map = match coll.unfrozen() {
        CqlType::Map(..) => true,
        CqlType::Set(_) => false,
        other => {
            return Err(QueryError::Server(format!(
                "element selection on a value of type {other}"
            )))
        }
    };
    let mut reader = Reader {
        bytes,
        pos: 0,
        ty: coll,
    };
    let count = reader.int()?;
    let count = usize::try_from(count).map_err(|_| reader.malformed("a negative count"))?;
    // Every element takes at least four bytes: a larger count is corrupt
    // and must not size an allocation.
    if count > bytes.len() / 4 {
        return Err(reader.malformed("a count larger than its bytes"));
    }
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let key = reader.value()?;
        let value = if map { reader.value()? } else { key };
        out.push((key, value));
    }
    Ok(out)
}

/// The value of `key` in a map, or `key` itself if a set holds it; `None`
/// when it is not there.
pub fn element(coll: &CqlType, bytes: &[u8], key: &[u8]) -> Result<Option<Bytes>> {
    let key_ty = key_type(coll);
    Ok(entries(coll, bytes)?
        .into_iter()
        .find(|(k, _)| compare::compare(&key_ty, k, key) == Ordering::Equal)
        .map(|(_, v)| Bytes::copy_from_slice(v)))
}

/// The entries whose keys lie between `from` and `to` (both included, an
/// open bound for `None`), serialized as a collection of the same type.
/// Nothing in the slice is null for a non-frozen collection (it has no
/// empty value) and the empty collection for a frozen one, as Cassandra
/// answers.
pub fn slice(
    coll: &CqlType,
    bytes: &[u8],
    from: Option<&[u8]>,
    to: Option<&[u8]>,
) -> Result<Option<Bytes>> {
    let map = matches!(coll.unfrozen(), CqlType::Map(..));
    let kept: Vec<(&[u8], &[u8])> = entries(coll, bytes)?
        .into_iter()
        .filter(|(k, _)| in_slice(coll, k, from, to))
        .collect();
    if kept.is_empty() && coll.is_multi_cell() {
        return Ok(None);
    }
    let mut out = BytesMut::new();
    out.put_i32(kept.len() as i32);
    for (k, v) in kept {
        put(&mut out, k);
        if map {
            put(&mut out, v);
        }
    }
    Ok(Some(out.freeze()))
}

/// Whether `key` (of `coll`'s key type) lies between the bounds.
pub fn in_slice(coll: &CqlType, key: &[u8], from: Option<&[u8]>, to: Option<&[u8]>) -> bool {
    let key_ty = key_type(coll);
    let above = from.is_none_or(|f| compare::compare(&key_ty, key, f) != Ordering::Less);
    let below = to.is_none_or(|t| compare::compare(&key_ty, key, t) != Ordering::Greater);
    above && below
}

/// The type of a map's keys or a set's elements (what `c[x]` takes).
pub fn key_type(coll: &CqlType) -> CqlType {
    match coll.unfrozen() {
        CqlType::Map(k, _) => (**k).clone(),
        CqlType::Set(e) | CqlType::List(e) => (**e).clone(),
        other => other.clone(),
    }
}

/// The type of what `c[x]` gives: a map's values, a set's elements.
pub fn value_type(coll: &CqlType) -> CqlType {
    match coll.unfrozen() {
        CqlType::Map(_, v) => (**v).clone(),
        other => key_type(other),
    }
}

fn put(out: &mut BytesMut, b: &[u8]) {
    out.put_i32(b.len() as i32);
    out.put_slice(b);
}

struct Reader<'a, 't> {
    bytes: &'a [u8],
    pos: usize,
    ty: &'t CqlType,
}

impl<'a> Reader<'a, '_> {
    fn int(&mut self) -> Result<i32> {
        let end = self.pos + 4;
        let b = self
            .bytes
            .get(self.pos..end)
            .ok_or_else(|| self.malformed("bytes missing"))?;
        self.pos = end;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn value(&mut self) -> Result<&'a [u8]> {
        let len = self.int()?;
        let len = usize::try_from(len).map_err(|_| self.malformed("a null element"))?;
        let end = self.pos.saturating_add(len);
        let b = self
            .bytes
            .get(self.pos..end)
            .ok_or_else(|| self.malformed("bytes missing"))?;
        self.pos = end;
        Ok(b)
    }

    fn malformed(&self, what: &str) -> QueryError {
        QueryError::Server(format!(
            "malformed {} value: {what} at byte {}",
            self.ty, self.pos
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use varve_types::{codec, Value};

    fn text(s: &str) -> Value {
        Value::Text(s.into())
    }

    fn map_ty(frozen: bool) -> CqlType {
        let m = CqlType::Map(Box::new(CqlType::Text), Box::new(CqlType::Int));
        if frozen {
            CqlType::Frozen(Box::new(m))
        } else {
            m
        }
    }

    fn abc() -> Vec<u8> {
        codec::serialize(&Value::Map(vec![
            (text("a"), Value::Int(1)),
            (text("b"), Value::Int(2)),
            (text("c"), Value::Int(3)),
        ]))
    }

    fn key(s: &str) -> Vec<u8> {
        codec::serialize(&text(s))
    }

    fn keys_of(ty: &CqlType, bytes: Option<Bytes>) -> Option<Vec<String>> {
        let bytes = bytes?;
        Some(
            entries(ty, &bytes)
                .unwrap()
                .into_iter()
                .map(|(k, _)| String::from_utf8(k.to_vec()).unwrap())
                .collect(),
        )
    }

    #[test]
    fn an_element_is_the_value_of_its_key_or_none() {
        let ty = map_ty(false);
        let b = abc();
        assert_eq!(
            element(&ty, &b, &key("b")).unwrap(),
            Some(Bytes::from(codec::serialize(&Value::Int(2))))
        );
        assert_eq!(element(&ty, &b, &key("z")).unwrap(), None);
        let set = CqlType::Set(Box::new(CqlType::Int));
        let s = codec::serialize(&Value::Set(vec![Value::Int(1), Value::Int(5)]));
        let five = codec::serialize(&Value::Int(5));
        assert_eq!(element(&set, &s, &five).unwrap(), Some(Bytes::from(five)));
    }

    #[test]
    fn keys_compare_by_their_type_not_their_bytes() {
        // varint 1 written with a redundant leading zero byte is still 1.
        let ty = CqlType::Set(Box::new(CqlType::Varint));
        let mut s = BytesMut::new();
        s.put_i32(1);
        put(&mut s, &[0, 1]);
        assert!(element(&ty, &s, &[1]).unwrap().is_some());
    }

    #[test]
    fn slice_bounds_are_inclusive_and_may_be_open() {
        let ty = map_ty(false);
        let b = abc();
        let (a, b_, c) = (key("a"), key("b"), key("c"));
        let sl = |from: Option<&[u8]>, to: Option<&[u8]>| {
            keys_of(&ty, slice(&ty, &b, from, to).unwrap())
        };
        assert_eq!(sl(Some(&a), Some(&b_)), Some(vec!["a".into(), "b".into()]));
        assert_eq!(sl(Some(&b_), None), Some(vec!["b".into(), "c".into()]));
        assert_eq!(sl(None, Some(&a)), Some(vec!["a".into()]));
        assert_eq!(
            sl(None, None),
            Some(vec!["a".into(), "b".into(), "c".into()])
        );
        assert_eq!(sl(Some(&c), Some(&a)), None, "from after to: nothing");
        assert_eq!(sl(Some(&key("x")), None), None);
    }

    #[test]
    fn an_empty_slice_of_a_frozen_collection_is_the_empty_collection() {
        let ty = map_ty(true);
        let b = abc();
        let got = slice(&ty, &b, Some(&key("x")), Some(&key("z"))).unwrap();
        assert_eq!(got, Some(Bytes::from_static(&[0, 0, 0, 0])));
        let got = slice(&ty, &b, Some(&key("b")), Some(&key("b"))).unwrap();
        assert_eq!(keys_of(&ty, got), Some(vec!["b".into()]));
    }

    #[test]
    fn malformed_bytes_are_an_error_never_a_panic() {
        let ty = map_ty(true);
        let good = abc();
        for cut in 0..good.len() {
            let err = element(&ty, &good[..cut], &key("c"));
            assert!(err.is_err(), "truncated to {cut} bytes: {err:?}");
        }
        let huge = [0x7f, 0xff, 0xff, 0xff];
        let msg = element(&ty, &huge, &key("a")).unwrap_err().to_string();
        assert!(msg.contains("malformed"), "{msg}");
        let negative = [0xff, 0xff, 0xff, 0xff];
        assert!(slice(&ty, &negative, None, None).is_err());
        let mut null_elem = BytesMut::new();
        null_elem.put_i32(1);
        null_elem.put_i32(-1);
        assert!(element(&ty, &null_elem, &key("a")).is_err());
        let not_a_collection = element(&CqlType::Int, &[0, 0, 0, 1], &[0]);
        assert!(not_a_collection.is_err());
    }
}
