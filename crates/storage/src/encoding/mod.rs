//! The byte encoding of partitions, shared by commitlog entries and sstable
//! data blocks. It is specified in docs/format/partition-encoding.md; the
//! code of each version mirrors its tables:
//!
//! - [`v1`]: fixed-width timestamps, TTLs and deletion times on every cell.
//!   Still decoded (old sstables and commitlog segments hold it); its
//!   encoder only serves tests and fixtures.
//! - [`v2`] (current): a per-partition base timestamp and base local
//!   deletion time, flags per row and per cell, and only the fields the
//!   flags do not imply, as varint deltas from the bases.
//!
//! The version is not in the bytes: the container (sstable footer,
//! commitlog segment header) stores it, and readers pass it to
//! [`decode_partition_v`]. Writers always write [`PARTITION_ENCODING_VERSION`].
//!
//! Decoding never panics: any malformed input yields [`DecodeError`],
//! which callers turn into a corruption error naming the file and offset.

use crate::clustering::{ClusteringComparator, ClusteringKey};
use crate::partition::Partition;
use crate::row::Row;
use bytes::Bytes;
use std::sync::Arc;

pub mod v1;
pub mod v2;
pub mod v3;

#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod tests_gen;

/// The version writers write; stored in sstable footers and commitlog
/// segment headers.
pub const PARTITION_ENCODING_VERSION: u8 = 3;

/// Every version readers decode.
pub const READABLE_PARTITION_ENCODINGS: &[u8] = &[1, 2, 3];

/// Most clustering components a key may have (CQL allows far fewer).
pub const MAX_CLUSTERING_COMPONENTS: usize = 1024;

/// Malformed bytes: what was wrong and at which offset of the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} at offset {offset}")]
pub struct DecodeError {
    pub what: &'static str,
    pub offset: usize,
}

// ---- the current version ----

/// Appends the encoding of a whole partition in the current version.
pub fn encode_partition(out: &mut Vec<u8>, p: &Partition) {
    v3::encode_partition(out, p);
}

/// Appends the encoding of one row, standing alone (with the base values
/// its deltas need), in the current version (version 3 rows are version
/// 2's).
pub fn encode_row(out: &mut Vec<u8>, row: &Row) {
    v2::encode_row(out, row);
}

/// Decodes a partition written in the current version.
pub fn decode_partition(
    r: &mut Reader,
    cmp: &Arc<ClusteringComparator>,
) -> Result<Partition, DecodeError> {
    decode_partition_v(r, cmp, PARTITION_ENCODING_VERSION)
}

/// Decodes a row written by [`encode_row`].
pub fn decode_row(r: &mut Reader) -> Result<Row, DecodeError> {
    decode_row_v(r, PARTITION_ENCODING_VERSION)
}

// ---- any readable version ----

/// Decodes a partition written in encoding `version` (from the container's
/// header); a version not in [`READABLE_PARTITION_ENCODINGS`] is an error.
pub fn decode_partition_v(
    r: &mut Reader,
    cmp: &Arc<ClusteringComparator>,
    version: u8,
) -> Result<Partition, DecodeError> {
    match version {
        1 => v1::decode_partition(r, cmp),
        2 => v2::decode_partition(r, cmp),
        3 => v3::decode_partition(r, cmp),
        _ => Err(r.err("unsupported partition encoding version")),
    }
}

/// Decodes a standalone row written in encoding `version`.
pub fn decode_row_v(r: &mut Reader, version: u8) -> Result<Row, DecodeError> {
    match version {
        1 => v1::decode_row(r),
        2 | 3 => v2::decode_row(r),
        _ => Err(r.err("unsupported partition encoding version")),
    }
}

/// Decodes arbitrary bytes as a partition and as a row, in the version the
/// first byte picks, and discards the results: a fuzz entry point. Must
/// never panic.
pub fn fuzz_decode(bytes: &[u8], cmp: &Arc<ClusteringComparator>) {
    let Some((first, rest)) = bytes.split_first() else {
        return;
    };
    let version =
        READABLE_PARTITION_ENCODINGS[*first as usize % READABLE_PARTITION_ENCODINGS.len()];
    let _ = decode_partition_v(&mut Reader::new(rest), cmp, version);
    let _ = decode_row_v(&mut Reader::new(rest), version);
}

// ---- writing primitives ----

/// Unsigned LEB128.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A signed value as a zigzag varint (small magnitudes stay short).
pub fn put_zigzag(out: &mut Vec<u8>, v: i64) {
    put_varint(out, ((v << 1) ^ (v >> 63)) as u64);
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn put_values(out: &mut Vec<u8>, values: &[Bytes]) {
    put_varint(out, values.len() as u64);
    for v in values {
        put_bytes(out, v);
    }
}

/// A range tombstone bound: weight i8, then its prefix values.
fn put_bound(out: &mut Vec<u8>, bound: &ClusteringKey) {
    out.push(bound.weight as u8);
    put_values(out, &bound.values);
}

// ---- reading ----

/// Bytes of the longest varint a reader accepts (enough for a u64).
pub const VARINT_MAX_BYTES: usize = 10;

/// A cursor over untrusted bytes.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// `buf` as a shared buffer: values are then slices of it, not copies.
    shared: Option<&'a Bytes>,
}

impl<'a> Reader<'a> {
    /// A reader whose values are copied out of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader {
            buf,
            pos: 0,
            shared: None,
        }
    }

    /// A reader whose values share `buf` (each holds a reference to the
    /// whole buffer): for a buffer read for one query, whose values live
    /// no longer than its answer.
    pub fn shared(buf: &'a Bytes) -> Self {
        Reader {
            buf,
            pos: 0,
            shared: Some(buf),
        }
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn err(&self, what: &'static str) -> DecodeError {
        DecodeError {
            what,
            offset: self.pos,
        }
    }

    fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(self.err("truncated"));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    pub fn i32(&mut self) -> Result<i32, DecodeError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn i64(&mut self) -> Result<i64, DecodeError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    /// An unsigned LEB128 value of at most [`VARINT_MAX_BYTES`] bytes. One
    /// pass over the remaining slice, with no bounds check per byte: index
    /// lookups decode a few hundred of these each.
    pub fn varint(&mut self) -> Result<u64, DecodeError> {
        let rest = self.buf.get(self.pos..).unwrap_or(&[]);
        let mut v: u64 = 0;
        for (i, &b) in rest.iter().take(VARINT_MAX_BYTES).enumerate() {
            v |= ((b & 0x7f) as u64) << (7 * i);
            if b & 0x80 == 0 {
                self.pos += i + 1;
                return Ok(v);
            }
        }
        if rest.len() < VARINT_MAX_BYTES {
            self.pos += rest.len();
            return Err(self.err("truncated"));
        }
        self.pos += VARINT_MAX_BYTES;
        Err(self.err("varint too long"))
    }

    /// Moves past a varint without decoding it: what [`Reader::varint`]
    /// would do, errors included. A varint that ends within the next 8
    /// bytes is found with one word load and no branch per byte (an index
    /// lookup skips two per entry it passes).
    pub fn skip_varint(&mut self) -> Result<(), DecodeError> {
        if let Some(word) = self.buf.get(self.pos..self.pos + 8) {
            let mut a = [0u8; 8];
            a.copy_from_slice(word);
            // A byte without the continuation bit ends the varint.
            let ends = !u64::from_le_bytes(a) & 0x8080_8080_8080_8080;
            if ends != 0 {
                self.pos += (ends.trailing_zeros() / 8) as usize + 1;
                return Ok(());
            }
        }
        self.varint().map(|_| ())
    }

    /// What [`put_zigzag`] wrote.
    pub fn zigzag(&mut self) -> Result<i64, DecodeError> {
        let v = self.varint()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    /// A count that must fit in what is left (each item takes >= 1 byte).
    fn count(&mut self) -> Result<usize, DecodeError> {
        let n = self.varint()?;
        if n > self.remaining() as u64 {
            return Err(self.err("count larger than the remaining bytes"));
        }
        Ok(n as usize)
    }

    pub fn bytes(&mut self) -> Result<Bytes, DecodeError> {
        let n = self.varint()?;
        if n > self.remaining() as u64 {
            return Err(self.err("length past the end"));
        }
        let start = self.pos;
        let value = self.take(n as usize)?;
        Ok(match self.shared {
            Some(buf) => buf.slice(start..start + value.len()),
            None => Bytes::copy_from_slice(value),
        })
    }

    /// A column id: a varint that must fit in a u32.
    fn column(&mut self) -> Result<u32, DecodeError> {
        let v = self.varint()?;
        u32::try_from(v).map_err(|_| self.err("column id too large"))
    }

    fn values(&mut self) -> Result<Vec<Bytes>, DecodeError> {
        let n = self.count()?;
        if n > MAX_CLUSTERING_COMPONENTS {
            return Err(self.err("too many clustering components"));
        }
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.bytes()?);
        }
        Ok(v)
    }

    /// What [`put_bound`] wrote; a row weight (0) is an error.
    fn bound(&mut self, cmp: &Arc<ClusteringComparator>) -> Result<ClusteringKey, DecodeError> {
        let weight = self.u8()? as i8;
        let values = self.values()?;
        match weight {
            -1 => Ok(ClusteringKey::before(values, cmp)),
            1 => Ok(ClusteringKey::after(values, cmp)),
            _ => Err(self.err("range tombstone bound with a row weight")),
        }
    }
}
