//! The pieces the data verbs' payloads share (docs/format/internode.md,
//! section 6): partition keys, table updates, slices and token bounds.
//!
//! Partitions travel in storage's partition encoding, written by storage's
//! own code; decoding one needs the table's clustering comparator, which
//! the receiver looks up by table id ([`Comparators`]). Every length is
//! checked against what is left before anything is allocated, and a key
//! whose token is not the key's own is refused: a replica would otherwise
//! store it where no read looks.

use std::sync::Arc;

use bytes::Bytes;
use varve_storage::encoding::{
    decode_partition_v, encode_partition, Reader as PartitionReader, READABLE_PARTITION_ENCODINGS,
};
use varve_types::data::{
    ClusteringComparator, ClusteringKey, Partition, PartitionKey, Slice, TokenBound,
};

use crate::net::limits::MAX_SLICES_PER_READ;
use crate::net::wire::{put_bytes, put_varint, Reader, WireError};
use crate::net::{Failure, FailureReason};

/// Longest partition key (CQL's limit: a key's length is an unsigned
/// short).
pub const MAX_KEY_BYTES: usize = u16::MAX as usize;

/// Most values in one clustering bound.
pub const MAX_BOUND_VALUES: usize = varve_storage::encoding::MAX_CLUSTERING_COMPONENTS;

/// Longest clustering value in a bound (a frame's limit bounds it too).
pub const MAX_BOUND_VALUE_BYTES: usize = crate::net::limits::MAX_FRAME_PAYLOAD_BYTES;

/// Why a payload was refused; becomes the request's failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    #[error("malformed payload: {0}")]
    Malformed(String),
    /// The table is not in this node's schema.
    #[error("unknown table {0:032x}")]
    UnknownTable(u128),
}

impl From<WireError> for PayloadError {
    fn from(e: WireError) -> Self {
        PayloadError::Malformed(e.to_string())
    }
}

impl PayloadError {
    /// The failure a request that carried it gets.
    pub fn failure(&self) -> Failure {
        let reason = match self {
            PayloadError::Malformed(_) => FailureReason::MALFORMED_PAYLOAD,
            PayloadError::UnknownTable(_) => FailureReason::INCOMPATIBLE_SCHEMA,
        };
        Failure::new(reason, self.to_string())
    }
}

/// Where the receiver finds a table's clustering comparator.
pub trait Comparators {
    fn comparator(&self, table: u128) -> Option<Arc<ClusteringComparator>>;
}

impl Comparators for varve_storage::Engine {
    fn comparator(&self, table: u128) -> Option<Arc<ClusteringComparator>> {
        varve_storage::Engine::comparator(self, table).ok()
    }
}

/// Appends a table id.
pub fn put_table(out: &mut Vec<u8>, table: u128) {
    out.extend_from_slice(&table.to_be_bytes());
}

pub fn read_table(r: &mut Reader<'_>) -> Result<u128, PayloadError> {
    Ok(u128::from_be_bytes(r.array()?))
}

/// Appends a partition key: its token, then the key as `bytes`.
pub fn put_key(out: &mut Vec<u8>, key: &PartitionKey) {
    out.extend_from_slice(&key.token.to_be_bytes());
    put_bytes(out, &key.key);
}

/// Reads a key written by [`put_key`]; its bytes are a slice of
/// `payload` (which `r` reads).
pub fn read_key(r: &mut Reader<'_>, payload: &Bytes) -> Result<PartitionKey, PayloadError> {
    let token = r.i64()?;
    let raw = r.bytes("partition key", MAX_KEY_BYTES)?;
    let key = PartitionKey::new(payload.slice_ref(raw));
    if key.token != token {
        return Err(PayloadError::Malformed(format!(
            "token {token} is not the key's ({})",
            key.token
        )));
    }
    Ok(key)
}

/// Appends a partition in the current encoding (the version is the
/// payload's `encoding` byte, written by the caller).
pub fn put_partition(out: &mut Vec<u8>, p: &Partition) {
    encode_partition(out, p);
}

/// Reads a partition in encoding `version` from the rest of `r`'s input,
/// `payload` being that whole input; `r` moves past it.
pub fn read_partition(
    r: &mut Reader<'_>,
    payload: &Bytes,
    version: u8,
    cmp: &Arc<ClusteringComparator>,
) -> Result<Partition, PayloadError> {
    let start = payload.len() - r.remaining();
    let rest = payload.slice(start..);
    let mut pr = PartitionReader::shared(&rest);
    let p = decode_partition_v(&mut pr, cmp, version)
        .map_err(|e| PayloadError::Malformed(format!("partition: {e}")))?;
    r.take(pr.position())?;
    Ok(p)
}

/// Checks a payload's `encoding` byte.
pub fn read_encoding(r: &mut Reader<'_>) -> Result<u8, PayloadError> {
    let v = r.u8()?;
    if !READABLE_PARTITION_ENCODINGS.contains(&v) {
        return Err(PayloadError::Malformed(format!(
            "partition encoding {v} is not one this node reads"
        )));
    }
    Ok(v)
}

/// Appends slices: a count, then each slice's start and end bound.
pub fn put_slices(out: &mut Vec<u8>, slices: &[Slice]) {
    put_varint(out, slices.len() as u64);
    for s in slices {
        put_bound(out, &s.start);
        put_bound(out, &s.end);
    }
}

fn put_bound(out: &mut Vec<u8>, b: &ClusteringKey) {
    out.push(b.weight as u8);
    put_varint(out, b.values.len() as u64);
    for v in &b.values {
        put_bytes(out, v);
    }
}

/// Reads slices written by [`put_slices`] (at most
/// [`MAX_SLICES_PER_READ`]).
pub fn read_slices(
    r: &mut Reader<'_>,
    payload: &Bytes,
    cmp: &Arc<ClusteringComparator>,
) -> Result<Vec<Slice>, PayloadError> {
    let n = count(r, "slices", MAX_SLICES_PER_READ)?;
    let mut out = Vec::with_capacity(n.min(r.remaining() / 4));
    for _ in 0..n {
        let start = read_bound(r, payload, cmp)?;
        let end = read_bound(r, payload, cmp)?;
        out.push(Slice { start, end });
    }
    Ok(out)
}

fn read_bound(
    r: &mut Reader<'_>,
    payload: &Bytes,
    cmp: &Arc<ClusteringComparator>,
) -> Result<ClusteringKey, PayloadError> {
    let weight = r.u8()? as i8;
    let n = count(r, "bound values", MAX_BOUND_VALUES)?;
    let mut values = Vec::with_capacity(n.min(r.remaining()));
    for _ in 0..n {
        let v = r.bytes("clustering value", MAX_BOUND_VALUE_BYTES)?;
        values.push(payload.slice_ref(v));
    }
    match weight {
        -1 => Ok(ClusteringKey::before(values, cmp)),
        0 => Ok(ClusteringKey::row(values, cmp)),
        1 => Ok(ClusteringKey::after(values, cmp)),
        w => Err(PayloadError::Malformed(format!("bound weight {w}"))),
    }
}

/// Appends a token bound: tag 0 unbounded, 1 inclusive + token, 2
/// exclusive + token, 3 after a key.
pub fn put_token_bound(out: &mut Vec<u8>, b: &TokenBound) {
    match b {
        TokenBound::Unbounded => out.push(0),
        TokenBound::TokenInclusive(t) => {
            out.push(1);
            out.extend_from_slice(&t.to_be_bytes());
        }
        TokenBound::TokenExclusive(t) => {
            out.push(2);
            out.extend_from_slice(&t.to_be_bytes());
        }
        TokenBound::AfterKey(k) => {
            out.push(3);
            put_key(out, k);
        }
    }
}

pub fn read_token_bound(r: &mut Reader<'_>, payload: &Bytes) -> Result<TokenBound, PayloadError> {
    Ok(match r.u8()? {
        0 => TokenBound::Unbounded,
        1 => TokenBound::TokenInclusive(r.i64()?),
        2 => TokenBound::TokenExclusive(r.i64()?),
        3 => TokenBound::AfterKey(read_key(r, payload)?),
        t => return Err(PayloadError::Malformed(format!("token bound tag {t}"))),
    })
}

/// A count of at most `max` items.
pub fn count(r: &mut Reader<'_>, what: &'static str, max: usize) -> Result<usize, PayloadError> {
    let n = r.varint()?;
    match usize::try_from(n) {
        Ok(n) if n <= max => Ok(n),
        _ => Err(PayloadError::Malformed(format!(
            "{n} {what}, more than {max}"
        ))),
    }
}
