//! The version 2 decoder. Every field is checked: unknown or contradictory
//! flags, truncation and deltas that overflow their type are
//! [`DecodeError`]s.

use super::*;
use crate::cell::{Cell, DeletionTime, LivenessInfo, NO_DELETION_TIME};
use crate::clustering::{ClusteringComparator, ClusteringKey, Slice};
use crate::encoding::{DecodeError, Reader};
use crate::partition::{Partition, RangeTombstone};
use crate::row::Row;
use bytes::Bytes;
use std::sync::Arc;

/// The header flags and the bases.
pub(in crate::encoding) fn read_header(
    r: &mut Reader,
    allowed: u8,
) -> Result<(u8, Bases), DecodeError> {
    let flags = r.u8()?;
    if flags & !allowed != 0 {
        return Err(r.err("unknown partition flags"));
    }
    let timestamp = r.zigzag()?;
    let has_ldt = flags & PARTITION_HAS_LDT_BASE != 0;
    let ldt = if has_ldt {
        let v = r.zigzag()?;
        i32::try_from(v).map_err(|_| r.err("base local deletion time out of range"))?
    } else {
        0
    };
    Ok((
        flags,
        Bases {
            timestamp,
            ldt,
            has_ldt,
        },
    ))
}

fn read_timestamp(r: &mut Reader, b: &Bases) -> Result<i64, DecodeError> {
    match r.varint()? {
        0 => Ok(i64::MIN),
        v => b
            .timestamp
            .checked_add_unsigned(v - 1)
            .ok_or_else(|| r.err("timestamp delta overflows")),
    }
}

fn read_ldt(r: &mut Reader, b: &Bases) -> Result<i32, DecodeError> {
    match r.varint()? {
        0 => Ok(NO_DELETION_TIME),
        v => i32::try_from(b.ldt as i128 + (v - 1) as i128)
            .map_err(|_| r.err("local deletion time delta overflows")),
    }
}

fn read_ttl(r: &mut Reader) -> Result<i32, DecodeError> {
    let v = r.varint()?;
    Ok(u32::try_from(v).map_err(|_| r.err("ttl too large"))? as i32)
}

pub(in crate::encoding) fn read_deletion(
    r: &mut Reader,
    b: &Bases,
) -> Result<DeletionTime, DecodeError> {
    Ok(DeletionTime::new(read_timestamp(r, b)?, read_ldt(r, b)?))
}

/// The row liveness a cell's USE_ROW_* flag refers to.
fn row_liveness<'l>(
    r: &Reader,
    liveness: Option<&'l LivenessInfo>,
) -> Result<&'l LivenessInfo, DecodeError> {
    liveness.ok_or_else(|| r.err("cell refers to a row liveness the row lacks"))
}

fn read_cell(
    r: &mut Reader,
    b: &Bases,
    liveness: Option<&LivenessInfo>,
    prev: u32,
) -> Result<((u32, Option<Bytes>), Cell), DecodeError> {
    let flags = r.u8()?;
    if flags & !CELL_FLAGS != 0 {
        return Err(r.err("unknown cell flags"));
    }
    let has_path = flags & CELL_HAS_PATH != 0;
    let delta = if flags & CELL_IMPLICIT_COLUMN != 0 {
        u32::from(!has_path)
    } else {
        r.column()?
    };
    let column = prev
        .checked_add(delta)
        .ok_or_else(|| r.err("column id too large"))?;
    let path = if has_path { Some(r.bytes()?) } else { None };
    let timestamp = if flags & CELL_USE_ROW_TIMESTAMP != 0 {
        row_liveness(r, liveness)?.timestamp
    } else {
        read_timestamp(r, b)?
    };
    let (ttl, local_deletion_time) = match flags & CELL_KIND {
        0 => (0, NO_DELETION_TIME),
        CELL_IS_DELETED => (0, read_ldt(r, b)?),
        CELL_IS_EXPIRING => (read_ttl(r)?, read_ldt(r, b)?),
        k if k == CELL_IS_EXPIRING | CELL_USE_ROW_TTL => {
            let l = row_liveness(r, liveness)?;
            (l.ttl, l.local_expiration_time)
        }
        _ => return Err(r.err("contradictory cell flags")),
    };
    let value = if flags & CELL_HAS_EMPTY_VALUE != 0 {
        Bytes::new()
    } else {
        r.bytes()?
    };
    let cell = Cell {
        timestamp,
        ttl,
        local_deletion_time,
        value,
    };
    Ok(((column, path), cell))
}

/// A row body against the bases `b`.
pub(in crate::encoding) fn read_row(r: &mut Reader, b: &Bases) -> Result<Row, DecodeError> {
    let flags = r.u8()?;
    if flags & !ROW_FLAGS != 0 {
        return Err(r.err("unknown row flags"));
    }
    let mut row = Row::default();
    if flags & ROW_HAS_LIVENESS != 0 {
        let timestamp = read_timestamp(r, b)?;
        let (ttl, local_expiration_time) = if flags & ROW_LIVENESS_EXPIRING != 0 {
            (read_ttl(r)?, read_ldt(r, b)?)
        } else {
            (0, NO_DELETION_TIME)
        };
        row.liveness = Some(LivenessInfo {
            timestamp,
            ttl,
            local_expiration_time,
        });
    } else if flags & ROW_LIVENESS_EXPIRING != 0 {
        return Err(r.err("expiring liveness flag without a liveness"));
    }
    if flags & ROW_HAS_DELETION != 0 {
        row.deletion = Some(read_deletion(r, b)?);
    }
    let cells = r.count()?;
    let mut prev = 0;
    for _ in 0..cells {
        let (path, cell) = read_cell(r, b, row.liveness.as_ref(), prev)?;
        prev = path.0;
        row.cells.insert(path, cell);
    }
    if flags & ROW_HAS_COMPLEX_DELETIONS != 0 {
        let n = r.count()?;
        for _ in 0..n {
            let column = r.column()?;
            row.complex_deletions.insert(column, read_deletion(r, b)?);
        }
    }
    Ok(row)
}

/// Decodes a whole version 2 partition; `cmp` orders its rows.
pub fn decode_partition(
    r: &mut Reader,
    cmp: &Arc<ClusteringComparator>,
) -> Result<Partition, DecodeError> {
    let (flags, b) = read_header(r, PARTITION_FLAGS)?;
    let mut p = Partition::default();
    if flags & PARTITION_HAS_DELETION != 0 {
        p.deletion = read_deletion(r, &b)?;
    }
    if flags & PARTITION_HAS_STATIC != 0 {
        p.static_row = Some(read_row(r, &b)?);
    }
    let rows = r.count()?;
    for _ in 0..rows {
        let key = ClusteringKey::row(r.values()?, cmp);
        let row = read_row(r, &b)?;
        p.rows.insert(key, row);
    }
    if flags & PARTITION_HAS_RANGE_TOMBSTONES != 0 {
        let n = r.count()?;
        for _ in 0..n {
            let start = r.bound(cmp)?;
            let end = r.bound(cmp)?;
            p.range_tombstones.push(RangeTombstone {
                slice: Slice { start, end },
                deletion: read_deletion(r, &b)?,
            });
        }
    }
    Ok(p)
}

/// Decodes what [`encode_row`] wrote.
pub fn decode_row(r: &mut Reader) -> Result<Row, DecodeError> {
    let (_, b) = read_header(r, STANDALONE_ROW_FLAGS)?;
    read_row(r, &b)
}
