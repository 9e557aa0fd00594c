//! REPAIR_VALIDATE: a repair asks each replica of a range for its Merkle
//! leaves (docs/format/internode.md, section 6).
//!
//! Request: table id u128; start i64; end i64 (the range `(start, end]`);
//! depth u8 (0 ..= [`MAX_MERKLE_DEPTH`]); then, for an incremental repair
//! only, its session id u128 (absent: a full repair, over everything the
//! replica holds). Response: `count` varint (`2^depth`); `count` × 16
//! bytes (the leaves); partitions varint. The replica scans the range's
//! keys in token order and hashes each partition whole (its key, then
//! storage's encoding of it, tombstones included) into its leaf; in an
//! incremental repair, only the partitions of the sstables the session
//! holds (`varve_storage::engine_repair`). `system.paxos` is hashed by
//! what its rows mean, not by their cells ([`crate::paxos::PaxosReplica::
//! repair_digest`]): each replica writes its Paxos rows with timestamps
//! and expiry of its own.

use std::sync::Arc;

use bytes::Bytes;
use varve_storage::Engine;
use varve_storage::{Partition, PartitionKey};
use varve_types::data::{Slice, TokenBound};

use super::merkle::{LeafHasher, Leaves, MAX_MERKLE_DEPTH};
use crate::net::wire::{put_varint, Reader};
use crate::net::{Failure, FailureReason, Messaging, Request, Verb};
use crate::paxos::PaxosReplica;
use crate::streaming::pull::bounds;
use crate::verbs::codec::{count, put_key, put_partition, put_table, read_table, PayloadError};

/// Keys read per scan of a validation.
const KEYS_PER_SCAN: usize = 1000;

/// A validation as a replica receives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValidateRequest {
    pub table: u128,
    pub start: i64,
    pub end: i64,
    pub depth: u8,
    /// The incremental repair session whose sstables are compared
    /// ([`FULL_REPAIR`]: every sstable and the memtables).
    pub session: u128,
}

/// The session of a full repair.
pub const FULL_REPAIR: u128 = 0;

pub fn encode_request(req: &ValidateRequest) -> Bytes {
    let mut out = Vec::with_capacity(56);
    put_table(&mut out, req.table);
    out.extend_from_slice(&req.start.to_be_bytes());
    out.extend_from_slice(&req.end.to_be_bytes());
    out.push(req.depth);
    if req.session != FULL_REPAIR {
        out.extend_from_slice(&req.session.to_be_bytes());
    }
    Bytes::from(out)
}

pub fn decode_request(payload: &Bytes) -> Result<ValidateRequest, PayloadError> {
    let mut r = Reader::new(payload);
    let table = read_table(&mut r)?;
    let start = r.i64()?;
    let end = r.i64()?;
    let depth = r.u8()?;
    if depth > MAX_MERKLE_DEPTH {
        return Err(PayloadError::Malformed(format!("merkle depth {depth}")));
    }
    let session = match r.remaining() {
        0 => FULL_REPAIR,
        _ => match u128::from_be_bytes(r.array()?) {
            FULL_REPAIR => return Err(PayloadError::Malformed("session 0 sent".into())),
            session => session,
        },
    };
    r.finish()?;
    Ok(ValidateRequest {
        table,
        start,
        end,
        depth,
        session,
    })
}

pub fn encode_leaves(leaves: &Leaves) -> Bytes {
    let mut out = Vec::with_capacity(leaves.hashes.len() * 16 + 16);
    put_varint(&mut out, leaves.hashes.len() as u64);
    for h in &leaves.hashes {
        out.extend_from_slice(h);
    }
    put_varint(&mut out, leaves.partitions);
    Bytes::from(out)
}

/// Decodes the leaves of a validation of `depth`.
pub fn decode_leaves(payload: &Bytes, depth: u8) -> Result<Leaves, PayloadError> {
    let mut r = Reader::new(payload);
    let n = count(&mut r, "leaves", 1 << MAX_MERKLE_DEPTH)?;
    if n != 1 << depth {
        return Err(PayloadError::Malformed(format!(
            "{n} leaves for depth {depth}"
        )));
    }
    let mut hashes = Vec::with_capacity(n);
    for _ in 0..n {
        hashes.push(r.array::<16>()?);
    }
    let partitions = r.varint()?;
    r.finish()?;
    Ok(Leaves { hashes, partitions })
}

/// This node's leaves of `req`'s range, read from `engine` (from the
/// session's sstables only in an incremental repair); `paxos` hashes
/// `system.paxos` by meaning.
pub fn validate(
    engine: &Engine,
    paxos: Option<&PaxosReplica>,
    req: &ValidateRequest,
) -> Result<Leaves, varve_storage::Error> {
    let digest = |key: &PartitionKey, p: &Partition, out: &mut Vec<u8>| {
        put_key(out, key);
        match paxos.filter(|x| x.table() == req.table) {
            Some(paxos) => paxos.repair_digest(p, out),
            None => {
                put_partition(out, p);
                Ok(())
            }
        }
    };
    if req.session != FULL_REPAIR {
        let view = engine.pending_view(req.table, req.session)?;
        return hash_range(
            req,
            |from, to| view.scan_keys(from, to, KEYS_PER_SCAN),
            |key| view.read_partition(key),
            digest,
        );
    }
    let all = [Slice::all(&engine.comparator(req.table)?)];
    hash_range(
        req,
        |from, to| engine.scan_keys(req.table, from, to, KEYS_PER_SCAN),
        |key| engine.read_partition(req.table, key, &all),
        digest,
    )
}

/// The leaves of `req`'s range over the keys `scan` finds (up to
/// [`KEYS_PER_SCAN`] at a time) and the partitions `read` returns, each
/// hashed as `digest` writes it.
fn hash_range(
    req: &ValidateRequest,
    scan: impl Fn(&TokenBound, &TokenBound) -> Result<Vec<PartitionKey>, varve_storage::Error>,
    read: impl Fn(&PartitionKey) -> Result<Option<Partition>, varve_storage::Error>,
    digest: impl Fn(&PartitionKey, &Partition, &mut Vec<u8>) -> Result<(), varve_storage::Error>,
) -> Result<Leaves, varve_storage::Error> {
    let mut hasher = LeafHasher::new(req.start, req.end, req.depth);
    let mut bytes = Vec::new();
    for (mut from, to) in bounds(req.start, req.end) {
        loop {
            let keys = scan(&from, &to)?;
            for key in &keys {
                if let Some(p) = read(key)? {
                    bytes.clear();
                    digest(key, &p, &mut bytes)?;
                    hasher.add(key.token, &bytes);
                }
            }
            match keys.last() {
                Some(last) if keys.len() == KEYS_PER_SCAN => {
                    from = TokenBound::AfterKey(last.clone())
                }
                _ => break,
            }
        }
    }
    Ok(hasher.finish())
}

/// Answers REPAIR_VALIDATE from `engine` ([`validate_here`]); `paxos`
/// hashes `system.paxos` by meaning.
pub fn serve(messaging: &Messaging, engine: Arc<Engine>, paxos: Option<Arc<PaxosReplica>>) {
    messaging.register(Verb::REPAIR_VALIDATE, move |req: Request| {
        let (engine, paxos) = (Arc::clone(&engine), paxos.clone());
        async move {
            let request = match decode_request(&req.payload) {
                Ok(r) => r,
                Err(e) => return Some(Err(e.failure())),
            };
            Some(match validate_here(engine, paxos, request).await {
                Ok(Ok(leaves)) => Ok(encode_leaves(&leaves)),
                Ok(Err(e)) => Err(crate::verbs::replica::failure(&e)),
                Err(e) => Err(Failure::new(FailureReason::UNKNOWN, e)),
            })
        }
    });
}

/// [`validate`] in memory first (data in memtables and caches), on the
/// blocking pool if it would wait on the disk; the error: the pool's task
/// failed. (Always on the pool, the simulation's runs of a seed that
/// repairs differed.)
pub async fn validate_here(
    engine: Arc<Engine>,
    paxos: Option<Arc<PaxosReplica>>,
    req: ValidateRequest,
) -> Result<Result<Leaves, varve_storage::Error>, String> {
    crate::verbs::replica::first_in_memory(move || validate(&engine, paxos.as_deref(), &req)).await
}

/// For the internode fuzz target: what decodes encodes back to itself.
pub fn fuzz_decode(payload: &[u8]) {
    let bytes = Bytes::copy_from_slice(payload);
    if let Ok(req) = decode_request(&bytes) {
        assert_eq!(decode_request(&encode_request(&req)), Ok(req));
    }
    for depth in [0, 1, MERKLE_FUZZ_DEPTH] {
        if let Ok(leaves) = decode_leaves(&bytes, depth) {
            assert_eq!(decode_leaves(&encode_leaves(&leaves), depth), Ok(leaves));
        }
    }
}

/// A depth the fuzz target tries besides 0 and 1.
const MERKLE_FUZZ_DEPTH: u8 = 2;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_leaves_round_trip_and_limits_hold() {
        let req = ValidateRequest {
            table: 3,
            start: -9,
            end: 9,
            depth: MAX_MERKLE_DEPTH,
            session: FULL_REPAIR,
        };
        assert_eq!(decode_request(&encode_request(&req)), Ok(req));
        let incremental = ValidateRequest { session: 77, ..req };
        let bytes = encode_request(&incremental);
        assert_eq!(decode_request(&bytes), Ok(incremental));
        for cut in 1..16 {
            let short = bytes.slice(..bytes.len() - cut);
            assert!(decode_request(&short).is_err(), "a session cut by {cut}");
        }
        let mut zero = encode_request(&req).to_vec();
        zero.extend_from_slice(&[0; 16]);
        assert!(
            decode_request(&Bytes::from(zero)).is_err(),
            "session 0 is sent as none"
        );
        let over = ValidateRequest {
            depth: MAX_MERKLE_DEPTH + 1,
            ..req
        };
        assert!(decode_request(&encode_request(&over)).is_err());
        let leaves = Leaves {
            hashes: vec![[1; 16], [2; 16]],
            partitions: 5,
        };
        let bytes = encode_leaves(&leaves);
        assert_eq!(decode_leaves(&bytes, 1), Ok(leaves));
        assert!(
            decode_leaves(&bytes, 2).is_err(),
            "a count that is not the depth's"
        );
        for cut in 0..bytes.len() {
            assert!(decode_leaves(&bytes.slice(..cut), 1).is_err());
        }
    }

    #[test]
    fn a_validation_in_memory_needs_no_blocking_pool() {
        use crate::verbs::replica::tests::{
            engine_with_table, sample_update, while_the_blocking_pool_is_busy,
        };
        let update = sample_update(b"k");
        let (_storage, engine) = engine_with_table(update.table);
        engine
            .apply(update.table, &update.key, update.update.clone())
            .unwrap();
        let req = ValidateRequest {
            table: update.table,
            start: 0,
            end: 0,
            depth: 4,
            session: FULL_REPAIR,
        };
        let leaves = while_the_blocking_pool_is_busy(validate_here(engine, None, req))
            .expect("the validation waited for the blocking pool");
        assert_eq!(leaves.unwrap().unwrap().partitions, 1);
    }
}
