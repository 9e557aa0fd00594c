//! READ: a coordinator asks a replica for one partition
//! (docs/format/internode.md, section 6).
//!
//! Request: table id u128; token i64; key `bytes`; `kind` u8 (0 data, 1
//! digest); `flags` u8 (`0x01` reversed); now_seconds i32; row_limit
//! varint (0: none); slices. Response (data): `kind` u8; `encoding` u8;
//! `present` u8; `stopped` u8; the partition when present.
//!
//! A data response holds the partition as the replica stores it,
//! restricted to the slices, tombstones included and not resolved: the
//! coordinator merges the answers of several replicas before it resolves
//! them, so a deletion on one replica shadows older data on another. With
//! a row limit the replica covers the slices only up to its `row_limit`-th
//! live row in the read's direction and says so with `stopped` 1
//! (`Engine::read_stored_limited`); the coordinator then trusts the merge
//! only that far (short read protection, coordinator/read.rs). A digest
//! response (`kind` 1, then 16 bytes) is the MD5 of what the data
//! response's bytes after `kind` would have been, so equal digests mean
//! equal data, cut at the same row.

use std::sync::Arc;

use bytes::Bytes;
use varve_storage::encoding::PARTITION_ENCODING_VERSION;
use varve_types::data::{ClusteringComparator, Partition, PartitionKey, Slice};

use super::codec::{
    put_key, put_partition, put_slices, put_table, read_encoding, read_key, read_partition,
    read_slices, read_table, Comparators, PayloadError,
};
use crate::net::wire::{put_varint, Reader};

/// `kind` of a data read.
pub const KIND_DATA: u8 = 0;
/// `kind` of a digest read.
pub const KIND_DIGEST: u8 = 1;

/// What a replica is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadKind {
    Data,
    Digest,
}
/// `flags` bit: the last rows of the slices first.
pub const FLAG_REVERSED: u8 = 0x01;

/// What a coordinator asks of a replica.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadRequest {
    pub table: u128,
    pub key: PartitionKey,
    pub slices: Vec<Slice>,
    pub reversed: bool,
    pub now_seconds: i32,
    /// At most this many live rows (`usize::MAX`: no limit).
    pub row_limit: usize,
    pub kind: ReadKind,
}

/// What a replica is asked to read.
#[derive(Debug, Clone, Copy)]
pub struct ReadOf<'a> {
    pub table: u128,
    pub key: &'a PartitionKey,
    pub slices: &'a [Slice],
    pub reversed: bool,
    pub now_seconds: i32,
    pub row_limit: usize,
}

/// Encodes a read of `r.key` restricted to `r.slices`.
pub fn encode_request(r: &ReadOf<'_>, kind: ReadKind) -> Bytes {
    let ReadOf {
        table,
        key,
        slices,
        reversed,
        now_seconds,
        row_limit,
    } = *r;
    let mut out = Vec::with_capacity(64 + key.key.len());
    put_table(&mut out, table);
    put_key(&mut out, key);
    out.push(match kind {
        ReadKind::Data => KIND_DATA,
        ReadKind::Digest => KIND_DIGEST,
    });
    out.push(if reversed { FLAG_REVERSED } else { 0 });
    out.extend_from_slice(&now_seconds.to_be_bytes());
    put_varint(&mut out, wire_limit(row_limit));
    put_slices(&mut out, slices);
    Bytes::from(out)
}

/// Decodes a READ payload.
pub fn decode_request(
    payload: &Bytes,
    tables: &dyn Comparators,
) -> Result<ReadRequest, PayloadError> {
    let mut r = Reader::new(payload);
    let table = read_table(&mut r)?;
    let key = read_key(&mut r, payload)?;
    let kind = match r.u8()? {
        KIND_DATA => ReadKind::Data,
        KIND_DIGEST => ReadKind::Digest,
        k => return Err(PayloadError::Malformed(format!("read kind {k}"))),
    };
    let flags = r.u8()?;
    if flags & !FLAG_REVERSED != 0 {
        return Err(PayloadError::Malformed(format!("read flags {flags:#04x}")));
    }
    let now_seconds = i32::from_be_bytes(r.array()?);
    let row_limit = match r.varint()? {
        0 => usize::MAX,
        n => usize::try_from(n).unwrap_or(usize::MAX),
    };
    let cmp = tables
        .comparator(table)
        .ok_or(PayloadError::UnknownTable(table))?;
    let slices = read_slices(&mut r, payload, &cmp)?;
    r.finish()?;
    Ok(ReadRequest {
        table,
        key,
        slices,
        reversed: flags & FLAG_REVERSED != 0,
        now_seconds,
        row_limit,
        kind,
    })
}

/// A row limit as the request carries it: 0 for none.
fn wire_limit(row_limit: usize) -> u64 {
    if row_limit == usize::MAX {
        0
    } else {
        row_limit as u64
    }
}

/// Encodes a data response: the partition as stored, if any, and whether
/// the replica stopped at the row limit.
pub fn encode_response(partition: Option<&Partition>, stopped: bool) -> Bytes {
    let mut out = Vec::with_capacity(64);
    out.push(KIND_DATA);
    put_data(&mut out, partition, stopped);
    Bytes::from(out)
}

/// The data response's bytes after its `kind` (a RANGE_READ of rows
/// carries the same for each partition).
pub(super) fn put_data(out: &mut Vec<u8>, partition: Option<&Partition>, stopped: bool) {
    out.push(PARTITION_ENCODING_VERSION);
    out.push(u8::from(partition.is_some()));
    out.push(u8::from(stopped));
    if let Some(p) = partition {
        put_partition(out, p);
    }
}

/// The digest of a data response holding `partition`.
pub fn digest(partition: Option<&Partition>, stopped: bool) -> [u8; 16] {
    use md5::{Digest, Md5};
    let mut data = Vec::with_capacity(64);
    put_data(&mut data, partition, stopped);
    Md5::digest(&data).into()
}

/// Encodes a digest response.
pub fn encode_digest_response(partition: Option<&Partition>, stopped: bool) -> Bytes {
    let mut out = Vec::with_capacity(17);
    out.push(KIND_DIGEST);
    out.extend_from_slice(&digest(partition, stopped));
    Bytes::from(out)
}

/// A decoded READ_RSP.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadResponse {
    /// The partition as stored (none: nothing under the key), and whether
    /// the replica stopped at the row limit.
    Data(Option<Partition>, bool),
    Digest([u8; 16]),
}

/// Decodes a READ_RSP payload.
pub fn decode_response(
    payload: &Bytes,
    cmp: &Arc<ClusteringComparator>,
) -> Result<ReadResponse, PayloadError> {
    let mut r = Reader::new(payload);
    let kind = r.u8()?;
    if kind == KIND_DIGEST {
        let d = r.array::<16>()?;
        r.finish()?;
        return Ok(ReadResponse::Digest(d));
    }
    if kind != KIND_DATA {
        return Err(PayloadError::Malformed(format!(
            "read response kind {kind}"
        )));
    }
    let (p, stopped) = read_data(&mut r, payload, cmp)?;
    r.finish()?;
    Ok(ReadResponse::Data(p, stopped))
}

/// Reads what [`put_data`] wrote: the partition, if present, and
/// whether the replica stopped at the row limit.
pub(super) fn read_data(
    r: &mut Reader<'_>,
    payload: &Bytes,
    cmp: &Arc<ClusteringComparator>,
) -> Result<(Option<Partition>, bool), PayloadError> {
    let version = read_encoding(r)?;
    let present = r.u8()?;
    let stopped = match r.u8()? {
        0 => false,
        1 => true,
        v => return Err(PayloadError::Malformed(format!("stopped {v}"))),
    };
    let p = match present {
        0 => None,
        1 => Some(read_partition(r, payload, version, cmp)?),
        v => return Err(PayloadError::Malformed(format!("present {v}"))),
    };
    Ok((p, stopped))
}
