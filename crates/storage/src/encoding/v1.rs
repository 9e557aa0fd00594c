//! Partition encoding version 1 (docs/format/partition-encoding.md,
//! "Version 1"): every timestamp a fixed i64, every TTL and deletion time a
//! fixed i32, on every cell and row. Readers decode it for as long as
//! sstables or commitlog segments of this version may exist; the encoder
//! is kept only for tests and fixtures (writers write version 2).

use super::{DecodeError, Reader};
use crate::cell::{Cell, DeletionTime, LivenessInfo};
use crate::clustering::{ClusteringComparator, ClusteringKey, Slice};
use crate::partition::{Partition, RangeTombstone};
use crate::row::Row;
use std::sync::Arc;

const PARTITION_HAS_STATIC: u8 = 0x01;
const ROW_HAS_LIVENESS: u8 = 0x01;
const ROW_HAS_DELETION: u8 = 0x02;
const CELL_HAS_PATH: u8 = 0x01;

// ---- writing (tests and fixtures only) ----

#[cfg(test)]
fn put_deletion(out: &mut Vec<u8>, d: &DeletionTime) {
    out.extend_from_slice(&d.marked_for_delete_at.to_be_bytes());
    out.extend_from_slice(&d.local_deletion_time.to_be_bytes());
}

/// Appends the version 1 encoding of one row's body.
#[cfg(test)]
pub fn encode_row(out: &mut Vec<u8>, row: &Row) {
    use super::{put_bytes, put_varint};
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

/// Appends the version 1 encoding of a whole partition.
#[cfg(test)]
pub fn encode_partition(out: &mut Vec<u8>, p: &Partition) {
    use super::{put_bound, put_values, put_varint};
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
        put_bound(out, &rt.slice.start);
        put_bound(out, &rt.slice.end);
        put_deletion(out, &rt.deletion);
    }
}

// ---- reading ----

fn deletion(r: &mut Reader) -> Result<DeletionTime, DecodeError> {
    Ok(DeletionTime::new(r.i64()?, r.i32()?))
}

/// Decodes one version 1 row body.
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
        row.deletion = Some(deletion(r)?);
    }
    let cells = r.count()?;
    for _ in 0..cells {
        let column = r.column()?;
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
        let column = r.column()?;
        row.complex_deletions.insert(column, deletion(r)?);
    }
    Ok(row)
}

/// Decodes a whole version 1 partition; `cmp` orders its rows.
pub fn decode_partition(
    r: &mut Reader,
    cmp: &Arc<ClusteringComparator>,
) -> Result<Partition, DecodeError> {
    let mut p = Partition {
        deletion: deletion(r)?,
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
        let start = r.bound(cmp)?;
        let end = r.bound(cmp)?;
        p.range_tombstones.push(RangeTombstone {
            slice: Slice { start, end },
            deletion: deletion(r)?,
        });
    }
    Ok(p)
}
