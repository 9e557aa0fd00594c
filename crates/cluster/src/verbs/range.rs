//! RANGE_READ of keys: a coordinator asks a node for the partition keys
//! it holds in a token range (docs/format/internode.md, section 6).
//!
//! Request: table id u128; `kind` u8 (0: keys); start and end token
//! bounds; limit varint (1 ..= [`MAX_KEYS_PER_RESPONSE`]). Response:
//! `kind` u8; `count` varint; `count` × key (token i64, key `bytes`);
//! `more` u8 (1: the node stopped at the limit, there may be more).
//!
//! Keys come in token order. Whole partitions over ranges (kind 1) come
//! with range scans (plan step 15).

use bytes::Bytes;
use varve_types::data::{PartitionKey, TokenBound};

use super::codec::{
    count, put_key, put_table, put_token_bound, read_key, read_table, read_token_bound,
    PayloadError,
};
use crate::net::wire::{put_varint, Reader};

/// `kind` of a key scan.
pub const KIND_KEYS: u8 = 0;

/// Most keys one response carries: a coordinator that wants more asks
/// again after the last one.
pub const MAX_KEYS_PER_RESPONSE: usize = 10_000;

/// A key scan as a node receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyScanRequest {
    pub table: u128,
    pub start: TokenBound,
    pub end: TokenBound,
    pub limit: usize,
}

pub fn encode_request(table: u128, start: &TokenBound, end: &TokenBound, limit: usize) -> Bytes {
    let mut out = Vec::with_capacity(64);
    put_table(&mut out, table);
    out.push(KIND_KEYS);
    put_token_bound(&mut out, start);
    put_token_bound(&mut out, end);
    put_varint(&mut out, limit.clamp(1, MAX_KEYS_PER_RESPONSE) as u64);
    Bytes::from(out)
}

pub fn decode_request(payload: &Bytes) -> Result<KeyScanRequest, PayloadError> {
    let mut r = Reader::new(payload);
    let table = read_table(&mut r)?;
    let kind = r.u8()?;
    if kind != KIND_KEYS {
        return Err(PayloadError::Malformed(format!("range read kind {kind}")));
    }
    let start = read_token_bound(&mut r, payload)?;
    let end = read_token_bound(&mut r, payload)?;
    let limit = count(&mut r, "keys", MAX_KEYS_PER_RESPONSE)?;
    if limit == 0 {
        return Err(PayloadError::Malformed("a key scan of no keys".into()));
    }
    r.finish()?;
    Ok(KeyScanRequest {
        table,
        start,
        end,
        limit,
    })
}

/// Encodes the keys found and whether the node stopped at the limit.
pub fn encode_response(keys: &[PartitionKey], more: bool) -> Bytes {
    let mut out = Vec::with_capacity(16 + keys.len() * 24);
    out.push(KIND_KEYS);
    put_varint(&mut out, keys.len() as u64);
    for k in keys {
        put_key(&mut out, k);
    }
    out.push(u8::from(more));
    Bytes::from(out)
}

/// The keys of a response and its `more` flag.
pub fn decode_response(payload: &Bytes) -> Result<(Vec<PartitionKey>, bool), PayloadError> {
    let mut r = Reader::new(payload);
    let kind = r.u8()?;
    if kind != KIND_KEYS {
        return Err(PayloadError::Malformed(format!(
            "range response kind {kind}"
        )));
    }
    let n = count(&mut r, "keys", MAX_KEYS_PER_RESPONSE)?;
    let mut keys = Vec::with_capacity(n.min(r.remaining() / 9));
    for _ in 0..n {
        keys.push(read_key(&mut r, payload)?);
    }
    let more = match r.u8()? {
        0 => false,
        1 => true,
        v => return Err(PayloadError::Malformed(format!("more {v}"))),
    };
    r.finish()?;
    Ok((keys, more))
}
