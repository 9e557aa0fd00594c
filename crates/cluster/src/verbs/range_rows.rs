//! RANGE_READ of rows: a coordinator asks a replica for the partitions it
//! holds in a token range, each as stored and cut at a row limit, as a
//! READ's data response has it (docs/format/internode.md, section 6).
//!
//! Request: table id u128; `kind` u8 (1: rows); start and end token
//! bounds; `flags` u8 (`0x01` reversed); now_seconds i32; row_limit
//! varint (per partition, 0: none); total_rows varint (live rows over all
//! partitions, 0: none); partition_limit varint (1 ..=
//! [`MAX_PARTITIONS_PER_RANGE_READ`]); slices. Response: `kind` u8;
//! `count` varint; `count` × (key, then a READ data response's bytes
//! after its `kind`: encoding, present, stopped, the partition); `more`
//! u8 (1: the replica stopped at a limit and covers the range only up to
//! its last key).
//!
//! A replica sends every key it holds in the range in token order, each
//! partition restricted to the slices, unresolved (tombstones included),
//! until one of the limits: `partition_limit` partitions, `total_rows`
//! live rows, or about [`RANGE_READ_RESPONSE_BYTES`] of encoded answer.
//! It always sends at least one partition when it has one.

use std::sync::Arc;

use bytes::Bytes;
use varve_types::data::{ClusteringComparator, Partition, PartitionKey, Slice, TokenBound};

use super::codec::{
    count, put_key, put_slices, put_table, put_token_bound, read_key, read_slices, read_table,
    read_token_bound, Comparators, PayloadError,
};
use super::read::{put_data, read_data, FLAG_REVERSED};
use crate::net::wire::{put_varint, Reader};

/// `kind` of a range read of rows.
pub const KIND_ROWS: u8 = 1;

/// Most partitions one range read of rows asks for (and one answer
/// carries).
pub const MAX_PARTITIONS_PER_RANGE_READ: usize = 10_000;

/// A replica stops adding partitions to its answer once it holds this
/// many bytes (so an answer stays far below the frame limit unless one
/// partition alone is larger).
pub const RANGE_READ_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// A range read of rows as a replica receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct RowScanRequest {
    pub table: u128,
    pub start: TokenBound,
    pub end: TokenBound,
    pub slices: Vec<Slice>,
    pub reversed: bool,
    pub now_seconds: i32,
    /// Live rows per partition (`usize::MAX`: no limit).
    pub row_limit: usize,
    /// Live rows over the whole answer (`usize::MAX`: no limit).
    pub total_rows: usize,
    /// Partitions in the answer, at least 1.
    pub partition_limit: usize,
}

/// One partition of an answer: as stored (none: nothing under the slices)
/// and whether the replica stopped at the row limit.
#[derive(Debug, Clone, PartialEq)]
pub struct ScannedPartition {
    pub key: PartitionKey,
    pub partition: Option<Partition>,
    pub stopped: bool,
}

/// A replica's answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RowScanAnswer {
    pub partitions: Vec<ScannedPartition>,
    /// The replica stopped at a limit: it covers the range only up to its
    /// last partition.
    pub more: bool,
}

/// A limit as the request carries it: 0 for none.
fn wire_limit(limit: usize) -> u64 {
    if limit == usize::MAX {
        0
    } else {
        limit as u64
    }
}

fn from_wire(v: u64) -> usize {
    match v {
        0 => usize::MAX,
        n => usize::try_from(n).unwrap_or(usize::MAX),
    }
}

pub fn encode_request(req: &RowScanRequest) -> Bytes {
    let mut out = Vec::with_capacity(96);
    put_table(&mut out, req.table);
    out.push(KIND_ROWS);
    put_token_bound(&mut out, &req.start);
    put_token_bound(&mut out, &req.end);
    out.push(if req.reversed { FLAG_REVERSED } else { 0 });
    out.extend_from_slice(&req.now_seconds.to_be_bytes());
    put_varint(&mut out, wire_limit(req.row_limit));
    put_varint(&mut out, wire_limit(req.total_rows));
    put_varint(
        &mut out,
        req.partition_limit.clamp(1, MAX_PARTITIONS_PER_RANGE_READ) as u64,
    );
    put_slices(&mut out, &req.slices);
    Bytes::from(out)
}

/// Whether a RANGE_READ payload asks for rows (else it asks for keys).
pub fn asks_rows(payload: &[u8]) -> bool {
    payload.get(16) == Some(&KIND_ROWS)
}

pub fn decode_request(
    payload: &Bytes,
    tables: &dyn Comparators,
) -> Result<RowScanRequest, PayloadError> {
    let mut r = Reader::new(payload);
    let table = read_table(&mut r)?;
    let kind = r.u8()?;
    if kind != KIND_ROWS {
        return Err(PayloadError::Malformed(format!("range read kind {kind}")));
    }
    let start = read_token_bound(&mut r, payload)?;
    let end = read_token_bound(&mut r, payload)?;
    let flags = r.u8()?;
    if flags & !FLAG_REVERSED != 0 {
        return Err(PayloadError::Malformed(format!(
            "range read flags {flags:#04x}"
        )));
    }
    let now_seconds = i32::from_be_bytes(r.array()?);
    let row_limit = from_wire(r.varint()?);
    let total_rows = from_wire(r.varint()?);
    let partition_limit = count(&mut r, "partitions", MAX_PARTITIONS_PER_RANGE_READ)?;
    if partition_limit == 0 {
        return Err(PayloadError::Malformed(
            "a range read of no partitions".into(),
        ));
    }
    let cmp = tables
        .comparator(table)
        .ok_or(PayloadError::UnknownTable(table))?;
    let slices = read_slices(&mut r, payload, &cmp)?;
    r.finish()?;
    Ok(RowScanRequest {
        table,
        start,
        end,
        slices,
        reversed: flags & FLAG_REVERSED != 0,
        now_seconds,
        row_limit,
        total_rows,
        partition_limit,
    })
}

/// Builds an answer partition by partition, minding the byte budget.
pub struct AnswerWriter {
    out: Vec<u8>,
    count: usize,
}

impl Default for AnswerWriter {
    fn default() -> Self {
        AnswerWriter {
            out: Vec::with_capacity(256),
            count: 0,
        }
    }
}

impl AnswerWriter {
    pub fn push(&mut self, key: &PartitionKey, partition: Option<&Partition>, stopped: bool) {
        put_key(&mut self.out, key);
        put_data(&mut self.out, partition, stopped);
        self.count += 1;
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// Bytes of partitions written so far.
    pub fn len(&self) -> usize {
        self.out.len()
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether the answer reached [`RANGE_READ_RESPONSE_BYTES`].
    pub fn is_full(&self) -> bool {
        self.len() >= RANGE_READ_RESPONSE_BYTES
    }

    pub fn finish(self, more: bool) -> Bytes {
        let mut out = Vec::with_capacity(self.out.len() + 12);
        out.push(KIND_ROWS);
        put_varint(&mut out, self.count as u64);
        out.extend_from_slice(&self.out);
        out.push(u8::from(more));
        Bytes::from(out)
    }
}

pub fn encode_response(answer: &RowScanAnswer) -> Bytes {
    let mut w = AnswerWriter::default();
    for p in &answer.partitions {
        w.push(&p.key, p.partition.as_ref(), p.stopped);
    }
    w.finish(answer.more)
}

/// Decodes an answer; its keys must come in token order, each once.
pub fn decode_response(
    payload: &Bytes,
    cmp: &Arc<ClusteringComparator>,
) -> Result<RowScanAnswer, PayloadError> {
    let mut r = Reader::new(payload);
    let kind = r.u8()?;
    if kind != KIND_ROWS {
        return Err(PayloadError::Malformed(format!(
            "range response kind {kind}"
        )));
    }
    let n = count(&mut r, "partitions", MAX_PARTITIONS_PER_RANGE_READ)?;
    let mut partitions: Vec<ScannedPartition> = Vec::with_capacity(n.min(r.remaining() / 12));
    for _ in 0..n {
        let key = read_key(&mut r, payload)?;
        if partitions.last().is_some_and(|p| p.key >= key) {
            return Err(PayloadError::Malformed(
                "range response keys out of order".into(),
            ));
        }
        let (partition, stopped) = read_data(&mut r, payload, cmp)?;
        partitions.push(ScannedPartition {
            key,
            partition,
            stopped,
        });
    }
    let more = match r.u8()? {
        0 => false,
        1 => true,
        v => return Err(PayloadError::Malformed(format!("more {v}"))),
    };
    if more && partitions.is_empty() {
        // It would say where to resume without a key to resume after.
        return Err(PayloadError::Malformed(
            "a range response that stopped before any partition".into(),
        ));
    }
    r.finish()?;
    Ok(RowScanAnswer { partitions, more })
}

/// Fuzzing: whatever decodes encodes and decodes again to the same
/// request or answer.
pub fn fuzz_decode(payload: &[u8]) {
    use super::codec::Comparators as _;
    let bytes = Bytes::copy_from_slice(payload);
    let tables = super::stream::AnyTable;
    if let Ok(req) = decode_request(&bytes, &tables) {
        let again = decode_request(&encode_request(&req), &tables);
        assert_eq!(again, Ok(req));
    }
    let cmp = tables.comparator(0).expect("every table");
    if let Ok(answer) = decode_response(&bytes, &cmp) {
        assert_eq!(decode_response(&encode_response(&answer), &cmp), Ok(answer));
    }
}
