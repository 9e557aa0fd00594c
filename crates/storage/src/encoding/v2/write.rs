//! The version 2 encoder: finds a partition's bases, then writes each row
//! and cell with the flags that let it leave out what the row implies.

use super::*;
use crate::cell::{Cell, DeletionTime, LivenessInfo, NO_DELETION_TIME};
use crate::encoding::{put_bound, put_bytes, put_values, put_varint, put_zigzag};
use crate::partition::Partition;
use crate::row::Row;
use bytes::Bytes;

/// Finds the bases: visits every timestamp and deletion time the encoder
/// writes as a delta. Must stay in step with the `put_*` functions.
#[derive(Default)]
pub(in crate::encoding) struct BaseFinder {
    timestamp: Option<i64>,
    ldt: Option<i32>,
}

impl BaseFinder {
    pub(in crate::encoding) fn timestamp(&mut self, t: i64) {
        if t != i64::MIN {
            self.timestamp = Some(self.timestamp.map_or(t, |m| m.min(t)));
        }
    }

    pub(in crate::encoding) fn ldt(&mut self, l: i32) {
        if l != NO_DELETION_TIME {
            self.ldt = Some(self.ldt.map_or(l, |m| m.min(l)));
        }
    }

    pub(in crate::encoding) fn deletion(&mut self, d: &DeletionTime) {
        self.timestamp(d.marked_for_delete_at);
        self.ldt(d.local_deletion_time);
    }

    pub(in crate::encoding) fn row(&mut self, row: &Row) {
        if let Some(l) = &row.liveness {
            self.timestamp(l.timestamp);
            self.ldt(l.local_expiration_time);
        }
        if let Some(d) = &row.deletion {
            self.deletion(d);
        }
        for cell in row.cells.values() {
            self.timestamp(cell.timestamp);
            self.ldt(cell.local_deletion_time);
        }
        for d in row.complex_deletions.values() {
            self.deletion(d);
        }
    }

    /// Whether every value visited lies at or above `b`'s bases.
    pub(in crate::encoding) fn fits(&self, b: &Bases) -> bool {
        self.timestamp.is_none_or(|t| t >= b.timestamp)
            && self.ldt.is_none_or(|l| b.has_ldt && l >= b.ldt)
    }

    pub(in crate::encoding) fn bases(&self) -> Bases {
        Bases {
            timestamp: self.timestamp.unwrap_or(0),
            ldt: self.ldt.unwrap_or(0),
            has_ldt: self.ldt.is_some(),
        }
    }
}

/// Header flags byte (with `extra` flags), then the bases.
pub(in crate::encoding) fn put_header(out: &mut Vec<u8>, b: &Bases, extra: u8) {
    let flags = extra | if b.has_ldt { PARTITION_HAS_LDT_BASE } else { 0 };
    out.push(flags);
    put_zigzag(out, b.timestamp);
    if b.has_ldt {
        put_zigzag(out, b.ldt as i64);
    }
}

fn put_timestamp(out: &mut Vec<u8>, b: &Bases, t: i64) {
    if t == i64::MIN {
        out.push(0);
        return;
    }
    // The base is the minimum of all non-sentinel timestamps, so t >= base
    // and base > i64::MIN: the delta + 1 fits in a u64.
    debug_assert!(t >= b.timestamp && b.timestamp != i64::MIN);
    put_varint(out, (t.wrapping_sub(b.timestamp) as u64).wrapping_add(1));
}

fn put_ldt(out: &mut Vec<u8>, b: &Bases, l: i32) {
    if l == NO_DELETION_TIME {
        out.push(0);
        return;
    }
    debug_assert!(b.has_ldt && l >= b.ldt);
    put_varint(out, (l as i64 - b.ldt as i64) as u64 + 1);
}

fn put_ttl(out: &mut Vec<u8>, ttl: i32) {
    put_varint(out, ttl as u32 as u64);
}

pub(in crate::encoding) fn put_deletion(out: &mut Vec<u8>, b: &Bases, d: &DeletionTime) {
    put_timestamp(out, b, d.marked_for_delete_at);
    put_ldt(out, b, d.local_deletion_time);
}

/// True when a liveness is not the plain (ttl 0, no expiry) kind.
fn liveness_expires(l: &LivenessInfo) -> bool {
    (l.ttl, l.local_expiration_time) != (0, NO_DELETION_TIME)
}

fn put_cell(
    out: &mut Vec<u8>,
    b: &Bases,
    row: &Row,
    prev: u32,
    path: &Option<Bytes>,
    column: u32,
    cell: &Cell,
) {
    let mut flags = 0;
    // Cells are in column order, so column >= prev.
    let delta = column - prev;
    if delta == u32::from(path.is_none()) {
        flags |= CELL_IMPLICIT_COLUMN;
    }
    if path.is_some() {
        flags |= CELL_HAS_PATH;
    }
    let liveness = row.liveness.as_ref();
    if liveness.is_some_and(|l| l.timestamp == cell.timestamp) {
        flags |= CELL_USE_ROW_TIMESTAMP;
    }
    let (ttl, ldt) = (cell.ttl, cell.local_deletion_time);
    if ttl == 0 {
        if ldt != NO_DELETION_TIME {
            flags |= CELL_IS_DELETED;
        }
    } else if liveness.is_some_and(|l| (l.ttl, l.local_expiration_time) == (ttl, ldt)) {
        flags |= CELL_IS_EXPIRING | CELL_USE_ROW_TTL;
    } else {
        flags |= CELL_IS_EXPIRING;
    }
    if cell.value.is_empty() {
        flags |= CELL_HAS_EMPTY_VALUE;
    }
    out.push(flags);
    if flags & CELL_IMPLICIT_COLUMN == 0 {
        put_varint(out, delta as u64);
    }
    if let Some(p) = path {
        put_bytes(out, p);
    }
    if flags & CELL_USE_ROW_TIMESTAMP == 0 {
        put_timestamp(out, b, cell.timestamp);
    }
    match flags & CELL_KIND {
        CELL_IS_DELETED => put_ldt(out, b, ldt),
        CELL_IS_EXPIRING => {
            put_ttl(out, ttl);
            put_ldt(out, b, ldt);
        }
        _ => {}
    }
    if !cell.value.is_empty() {
        put_bytes(out, &cell.value);
    }
}

/// A row body (everything but its clustering) against the bases `b`.
pub(in crate::encoding) fn put_row(out: &mut Vec<u8>, b: &Bases, row: &Row) {
    let mut flags = 0;
    if let Some(l) = &row.liveness {
        flags |= ROW_HAS_LIVENESS;
        if liveness_expires(l) {
            flags |= ROW_LIVENESS_EXPIRING;
        }
    }
    if row.deletion.is_some() {
        flags |= ROW_HAS_DELETION;
    }
    if !row.complex_deletions.is_empty() {
        flags |= ROW_HAS_COMPLEX_DELETIONS;
    }
    out.push(flags);
    if let Some(l) = &row.liveness {
        put_timestamp(out, b, l.timestamp);
        if liveness_expires(l) {
            put_ttl(out, l.ttl);
            put_ldt(out, b, l.local_expiration_time);
        }
    }
    if let Some(d) = &row.deletion {
        put_deletion(out, b, d);
    }
    put_varint(out, row.cells.len() as u64);
    let mut prev = 0;
    for ((column, path), cell) in &row.cells {
        put_cell(out, b, row, prev, path, *column, cell);
        prev = *column;
    }
    if !row.complex_deletions.is_empty() {
        put_varint(out, row.complex_deletions.len() as u64);
        for (column, d) in &row.complex_deletions {
            put_varint(out, *column as u64);
            put_deletion(out, b, d);
        }
    }
}

/// Appends the version 2 encoding of a whole partition.
pub fn encode_partition(out: &mut Vec<u8>, p: &Partition) {
    let mut finder = BaseFinder::default();
    if p.deletion != DeletionTime::LIVE {
        finder.deletion(&p.deletion);
    }
    if let Some(s) = &p.static_row {
        finder.row(s);
    }
    for row in p.rows.values() {
        finder.row(row);
    }
    for rt in &p.range_tombstones {
        finder.deletion(&rt.deletion);
    }
    let b = finder.bases();
    let mut flags = 0;
    if p.deletion != DeletionTime::LIVE {
        flags |= PARTITION_HAS_DELETION;
    }
    if p.static_row.is_some() {
        flags |= PARTITION_HAS_STATIC;
    }
    if !p.range_tombstones.is_empty() {
        flags |= PARTITION_HAS_RANGE_TOMBSTONES;
    }
    put_header(out, &b, flags);
    if p.deletion != DeletionTime::LIVE {
        put_deletion(out, &b, &p.deletion);
    }
    if let Some(s) = &p.static_row {
        put_row(out, &b, s);
    }
    put_varint(out, p.rows.len() as u64);
    for (key, row) in &p.rows {
        put_values(out, &key.values);
        put_row(out, &b, row);
    }
    if !p.range_tombstones.is_empty() {
        put_varint(out, p.range_tombstones.len() as u64);
        for rt in &p.range_tombstones {
            put_bound(out, &rt.slice.start);
            put_bound(out, &rt.slice.end);
            put_deletion(out, &b, &rt.deletion);
        }
    }
}

/// Appends a standalone row: a header (flags, bases) and the row body.
pub fn encode_row(out: &mut Vec<u8>, row: &Row) {
    let mut finder = BaseFinder::default();
    finder.row(row);
    let b = finder.bases();
    put_header(out, &b, 0);
    put_row(out, &b, row);
}
