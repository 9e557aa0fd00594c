//! MUTATION: a coordinator asks a replica to store partition updates
//! (docs/format/internode.md, section 6).
//!
//! Payload: `encoding` u8; `count` varint (1 ..= `MAX_ENTRIES_PER_MESSAGE`);
//! `count` × (`len` varint, table update of `len` bytes), a table update
//! being what a commitlog entry holds: table id, token, key, partition.
//! Every update of one message has the same key. The response is empty.

use bytes::Bytes;
use varve_storage::encoding::PARTITION_ENCODING_VERSION;
use varve_types::data::{Partition, PartitionKey};

use super::codec::{
    count, put_key, put_partition, put_table, read_encoding, read_key, read_partition, read_table,
    Comparators, PayloadError,
};
use crate::net::limits::{MAX_ENTRIES_PER_MESSAGE, MAX_FRAME_PAYLOAD_BYTES};
use crate::net::wire::{put_varint, Reader};

/// One table's update of a partition.
#[derive(Debug, Clone, PartialEq)]
pub struct TableUpdate {
    pub table: u128,
    pub key: PartitionKey,
    pub update: Partition,
}

/// Encodes updates of one partition key (one or more tables).
pub fn encode(updates: &[TableUpdate]) -> Bytes {
    let mut out = Vec::with_capacity(64);
    out.push(PARTITION_ENCODING_VERSION);
    put_varint(&mut out, updates.len() as u64);
    let mut one = Vec::with_capacity(64);
    for u in updates {
        one.clear();
        put_table(&mut one, u.table);
        put_key(&mut one, &u.key);
        put_partition(&mut one, &u.update);
        put_varint(&mut out, one.len() as u64);
        out.extend_from_slice(&one);
    }
    Bytes::from(out)
}

/// Decodes a MUTATION payload.
pub fn decode(payload: &Bytes, tables: &dyn Comparators) -> Result<Vec<TableUpdate>, PayloadError> {
    let mut r = Reader::new(payload);
    let version = read_encoding(&mut r)?;
    let n = count(&mut r, "table updates", MAX_ENTRIES_PER_MESSAGE)?;
    if n == 0 {
        return Err(PayloadError::Malformed("a mutation without updates".into()));
    }
    let mut out: Vec<TableUpdate> = Vec::with_capacity(n.min(r.remaining()));
    for _ in 0..n {
        let len = count(&mut r, "update bytes", MAX_FRAME_PAYLOAD_BYTES)?;
        let at = payload.len() - r.remaining();
        let one = payload.slice(at..at + len.min(r.remaining()));
        r.take(len)?;
        let update = decode_update(&one, version, tables)?;
        if let Some(first) = out.first() {
            if first.key != update.key {
                return Err(PayloadError::Malformed(
                    "the updates of one mutation have different keys".into(),
                ));
            }
        }
        out.push(update);
    }
    r.finish()?;
    Ok(out)
}

/// One table update (table id, key, partition) of `version`'s encoding.
pub(crate) fn decode_update(
    one: &Bytes,
    version: u8,
    tables: &dyn Comparators,
) -> Result<TableUpdate, PayloadError> {
    let mut r = Reader::new(one);
    let table = read_table(&mut r)?;
    let key = read_key(&mut r, one)?;
    let cmp = tables
        .comparator(table)
        .ok_or(PayloadError::UnknownTable(table))?;
    let update = read_partition(&mut r, one, version, &cmp)?;
    r.finish()?;
    Ok(TableUpdate { table, key, update })
}

/// A HINT's bytes after its header (`created_micros` i64, [`HINT_HEADER_BYTES`]):
/// the MUTATION payload it carries.
pub fn hint_body(payload: &Bytes) -> Result<Bytes, PayloadError> {
    if payload.len() < HINT_HEADER_BYTES {
        return Err(PayloadError::Malformed(
            "a hint shorter than its header".into(),
        ));
    }
    Ok(payload.slice(HINT_HEADER_BYTES..))
}

/// A HINT's header: its creation time in microseconds.
pub const HINT_HEADER_BYTES: usize = 8;
