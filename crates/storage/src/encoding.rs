//! The byte encoding of partitions, shared by commitlog entries and sstable
//! data blocks. It is specified in docs/format/partition-encoding.md; this
//! code mirrors its tables.
//!
//! Decoding never panics: any malformed input yields
//! [`DecodeError`], which callers turn into a corruption error naming the
//! file and offset.

use crate::cell::{Cell, DeletionTime, LivenessInfo};
use crate::clustering::{ClusteringComparator, ClusteringKey, Slice};
use crate::partition::{Partition, RangeTombstone};
use crate::row::Row;
use bytes::Bytes;
use std::sync::Arc;

/// Version of this encoding; stored in sstable and commitlog headers.
pub const PARTITION_ENCODING_VERSION: u8 = 1;

/// Most clustering components a key may have (CQL allows far fewer).
pub const MAX_CLUSTERING_COMPONENTS: usize = 1024;

const PARTITION_HAS_STATIC: u8 = 0x01;
const ROW_HAS_LIVENESS: u8 = 0x01;
const ROW_HAS_DELETION: u8 = 0x02;
const CELL_HAS_PATH: u8 = 0x01;

/// Malformed bytes: what was wrong and at which offset of the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} at offset {offset}")]
pub struct DecodeError {
    pub what: &'static str,
    pub offset: usize,
}

// ---- writing ----

pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn put_deletion(out: &mut Vec<u8>, d: &DeletionTime) {
    out.extend_from_slice(&d.marked_for_delete_at.to_be_bytes());
    out.extend_from_slice(&d.local_deletion_time.to_be_bytes());
}

fn put_values(out: &mut Vec<u8>, values: &[Bytes]) {
    put_varint(out, values.len() as u64);
    for v in values {
        put_bytes(out, v);
    }
}

/// Appends the encoding of one row's body (everything but its clustering).
pub fn encode_row(out: &mut Vec<u8>, row: &Row) {
    let mut flags = 0;
    if row.liveness.is_some() {
        flags |= ROW_HAS_LIVENESS;
    }
    if row.deletion.is_some() {
        flags |= ROW_HAS_DELETION;
    }
    out.push(flags);
    if let Some(l) = &row.liveness {
        out.extend_from_slice(&l.timestamp.to_be_bytes());
        out.extend_from_slice(&l.ttl.to_be_bytes());
        out.extend_from_slice(&l.local_expiration_time.to_be_bytes());
    }
    if let Some(d) = &row.deletion {
        put_deletion(out, d);
    }
    put_varint(out, row.cells.len() as u64);
    for ((column, path), cell) in &row.cells {
        put_varint(out, *column as u64);
        match path {
            Some(p) => {
                out.push(CELL_HAS_PATH);
                put_bytes(out, p);
            }
            None => out.push(0),
        }
        out.extend_from_slice(&cell.timestamp.to_be_bytes());
        out.extend_from_slice(&cell.ttl.to_be_bytes());
        out.extend_from_slice(&cell.local_deletion_time.to_be_bytes());
        put_bytes(out, &cell.value);
    }
    put_varint(out, row.complex_deletions.len() as u64);
    for (column, d) in &row.complex_deletions {
        put_varint(out, *column as u64);
        put_deletion(out, d);
    }
}

/// Appends the encoding of a whole partition.
pub fn encode_partition(out: &mut Vec<u8>, p: &Partition) {
    put_deletion(out, &p.deletion);
    out.push(if p.static_row.is_some() {
        PARTITION_HAS_STATIC
    } else {
        0
    });
    if let Some(s) = &p.static_row {
        encode_row(out, s);
    }
    put_varint(out, p.rows.len() as u64);
    for (key, row) in &p.rows {
        put_values(out, &key.values);
        encode_row(out, row);
    }
    put_varint(out, p.range_tombstones.len() as u64);
    for rt in &p.range_tombstones {
        for bound in [&rt.slice.start, &rt.slice.end] {
            out.push(bound.weight as u8);
            put_values(out, &bound.values);
        }
        put_deletion(out, &rt.deletion);
    }
}

// ---- reading ----

/// A cursor over untrusted bytes.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
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

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.buf.len() - self.pos < n {
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

    pub fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.err("varint too long"))
    }

    /// A count that must fit in what is left (each item takes >= 1 byte).
    fn count(&mut self) -> Result<usize, DecodeError> {
        let n = self.varint()?;
        if n > (self.buf.len() - self.pos) as u64 {
            return Err(self.err("count larger than the remaining bytes"));
        }
        Ok(n as usize)
    }

    pub fn bytes(&mut self) -> Result<Bytes, DecodeError> {
        let n = self.varint()?;
        if n > (self.buf.len() - self.pos) as u64 {
            return Err(self.err("length past the end"));
        }
        Ok(Bytes::copy_from_slice(self.take(n as usize)?))
    }

    fn deletion(&mut self) -> Result<DeletionTime, DecodeError> {
        Ok(DeletionTime::new(self.i64()?, self.i32()?))
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
}

/// Decodes one row body.
pub fn decode_row(r: &mut Reader) -> Result<Row, DecodeError> {
    let flags = r.u8()?;
    if flags & !(ROW_HAS_LIVENESS | ROW_HAS_DELETION) != 0 {
        return Err(r.err("unknown row flags"));
    }
    let mut row = Row::default();
    if flags & ROW_HAS_LIVENESS != 0 {
        row.liveness = Some(LivenessInfo {
            timestamp: r.i64()?,
            ttl: r.i32()?,
            local_expiration_time: r.i32()?,
        });
    }
    if flags & ROW_HAS_DELETION != 0 {
        row.deletion = Some(r.deletion()?);
    }
    let cells = r.count()?;
    for _ in 0..cells {
        let column = u32::try_from(r.varint()?).map_err(|_| r.err("column id too large"))?;
        let path = match r.u8()? {
            0 => None,
            CELL_HAS_PATH => Some(r.bytes()?),
            _ => return Err(r.err("unknown cell flags")),
        };
        let cell = Cell {
            timestamp: r.i64()?,
            ttl: r.i32()?,
            local_deletion_time: r.i32()?,
            value: r.bytes()?,
        };
        row.cells.insert((column, path), cell);
    }
    let complex = r.count()?;
    for _ in 0..complex {
        let column = u32::try_from(r.varint()?).map_err(|_| r.err("column id too large"))?;
        row.complex_deletions.insert(column, r.deletion()?);
    }
    Ok(row)
}

/// Decodes a whole partition; `cmp` orders its rows.
pub fn decode_partition(
    r: &mut Reader,
    cmp: &Arc<ClusteringComparator>,
) -> Result<Partition, DecodeError> {
    let mut p = Partition {
        deletion: r.deletion()?,
        ..Partition::default()
    };
    match r.u8()? {
        0 => {}
        PARTITION_HAS_STATIC => p.static_row = Some(decode_row(r)?),
        _ => return Err(r.err("unknown partition flags")),
    }
    let rows = r.count()?;
    for _ in 0..rows {
        let key = ClusteringKey::row(r.values()?, cmp);
        let row = decode_row(r)?;
        p.rows.insert(key, row);
    }
    let rts = r.count()?;
    for _ in 0..rts {
        let mut bounds = Vec::with_capacity(2);
        for _ in 0..2 {
            let weight = r.u8()? as i8;
            let values = r.values()?;
            bounds.push(match weight {
                -1 => ClusteringKey::before(values, cmp),
                1 => ClusteringKey::after(values, cmp),
                _ => return Err(r.err("range tombstone bound with a row weight")),
            });
        }
        let end = bounds.pop().ok_or_else(|| r.err("missing bound"))?;
        let start = bounds.pop().ok_or_else(|| r.err("missing bound"))?;
        p.range_tombstones.push(RangeTombstone {
            slice: Slice { start, end },
            deletion: r.deletion()?,
        });
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use varve_types::CqlType;

    fn sample() -> (Partition, Arc<ClusteringComparator>) {
        let cmp = ClusteringComparator::new(vec![(CqlType::Int, false), (CqlType::Text, true)]);
        let mut p = Partition {
            deletion: DeletionTime::new(5, 100),
            ..Partition::default()
        };
        let mut s = Row::default();
        s.cells
            .insert((3, None), Cell::live(9, Bytes::from_static(b"static")));
        p.static_row = Some(s);
        for i in 0..3 {
            let mut row = Row {
                liveness: Some(LivenessInfo::new(10 + i, 0, 0)),
                ..Row::default()
            };
            row.cells.insert(
                (4, None),
                Cell::expiring(11, 60, 1000, Bytes::from(vec![i as u8; 40])),
            );
            row.cells.insert(
                (5, Some(Bytes::from_static(b"k"))),
                Cell::tombstone(12, 2000),
            );
            row.complex_deletions.insert(5, DeletionTime::new(7, 3));
            if i == 1 {
                row.deletion = Some(DeletionTime::new(8, 4));
            }
            let key = ClusteringKey::row(
                vec![
                    Bytes::copy_from_slice(&(i as i32).to_be_bytes()),
                    Bytes::from_static(b"x"),
                ],
                &cmp,
            );
            p.rows.insert(key, row);
        }
        p.range_tombstones.push(RangeTombstone {
            slice: Slice {
                start: ClusteringKey::before(
                    vec![Bytes::copy_from_slice(&1i32.to_be_bytes())],
                    &cmp,
                ),
                end: ClusteringKey::after(vec![], &cmp),
            },
            deletion: DeletionTime::new(6, 50),
        });
        (p, cmp)
    }

    #[test]
    fn partition_round_trips() {
        let (p, cmp) = sample();
        let mut out = Vec::new();
        encode_partition(&mut out, &p);
        let mut r = Reader::new(&out);
        let back = decode_partition(&mut r, &cmp).unwrap();
        assert!(r.is_empty());
        assert_eq!(back, p);
    }

    #[test]
    fn every_truncation_and_flip_is_an_error_not_a_panic() {
        let (p, cmp) = sample();
        let mut out = Vec::new();
        encode_partition(&mut out, &p);
        for cut in 0..out.len() {
            assert!(
                decode_partition(&mut Reader::new(&out[..cut]), &cmp).is_err(),
                "cut at {cut}"
            );
        }
        for i in 0..out.len() {
            let mut bad = out.clone();
            bad[i] ^= 0xff;
            let _ = decode_partition(&mut Reader::new(&bad), &cmp);
        }
    }

    #[test]
    fn varints_round_trip() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(Reader::new(&out).varint().unwrap(), v);
        }
    }
}
