//! BATCH_STORE and BATCH_REMOVE (docs/format/internode.md, section 6): a
//! logged batch's coordinator asks two other nodes to keep the batch
//! before it writes it, and tells them to forget it afterwards.
//!
//! BATCH_STORE: batch id (16 bytes); created_micros i64; `count` varint
//! (1 ..= `MAX_ENTRIES_PER_MESSAGE`); `count` × (`len` varint, MUTATION
//! payload of `len` bytes). Its response is empty. BATCH_REMOVE (one-way):
//! the batch id.

use bytes::Bytes;

use super::codec::{count, PayloadError};
use crate::net::limits::{MAX_ENTRIES_PER_MESSAGE, MAX_FRAME_PAYLOAD_BYTES};
use crate::net::wire::{put_varint, Reader};

/// A batch's id: unique per coordinator and time.
pub type BatchId = [u8; 16];

/// A stored batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBatch {
    pub id: BatchId,
    pub created_micros: i64,
    /// MUTATION payloads, one per partition.
    pub mutations: Vec<Bytes>,
}

/// Encodes a BATCH_STORE payload.
pub fn encode_store(batch: &StoredBatch) -> Bytes {
    let size: usize = batch.mutations.iter().map(|m| m.len() + 5).sum();
    let mut out = Vec::with_capacity(32 + size);
    out.extend_from_slice(&batch.id);
    out.extend_from_slice(&batch.created_micros.to_be_bytes());
    put_varint(&mut out, batch.mutations.len() as u64);
    for m in &batch.mutations {
        put_varint(&mut out, m.len() as u64);
        out.extend_from_slice(m);
    }
    Bytes::from(out)
}

/// Decodes a BATCH_STORE payload (the mutations stay undecoded: the
/// holder keeps bytes and decodes them only to replay).
pub fn decode_store(payload: &Bytes) -> Result<StoredBatch, PayloadError> {
    let mut r = Reader::new(payload);
    let id = r.array::<16>()?;
    let created_micros = r.i64()?;
    let n = count(&mut r, "batch mutations", MAX_ENTRIES_PER_MESSAGE)?;
    if n == 0 {
        return Err(PayloadError::Malformed("a batch without mutations".into()));
    }
    let mut mutations = Vec::with_capacity(n.min(r.remaining()));
    for _ in 0..n {
        let len = count(&mut r, "mutation bytes", MAX_FRAME_PAYLOAD_BYTES)?;
        let at = payload.len() - r.remaining();
        r.take(len)?;
        mutations.push(payload.slice(at..at + len));
    }
    r.finish()?;
    Ok(StoredBatch {
        id,
        created_micros,
        mutations,
    })
}

/// Decodes a BATCH_REMOVE payload.
pub fn decode_remove(payload: &[u8]) -> Result<BatchId, PayloadError> {
    let mut r = Reader::new(payload);
    let id = r.array::<16>()?;
    r.finish()?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_round_trips_and_every_cut_is_refused() {
        let b = StoredBatch {
            id: [9; 16],
            created_micros: 1234,
            mutations: vec![Bytes::from_static(b"m1"), Bytes::from_static(b"second")],
        };
        let bytes = encode_store(&b);
        assert_eq!(decode_store(&bytes).unwrap(), b);
        for n in 0..bytes.len() {
            assert!(decode_store(&bytes.slice(..n)).is_err(), "cut at {n}");
        }
        assert_eq!(decode_remove(&[3; 16]).unwrap(), [3; 16]);
        assert!(decode_remove(&[3; 17]).is_err());
        let empty = StoredBatch {
            mutations: vec![],
            ..b
        };
        assert!(decode_store(&encode_store(&empty)).is_err());
    }
}
