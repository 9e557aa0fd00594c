//! PAXOS_FORWARD's payloads (docs/format/internode.md, section 6.10): a
//! conditional statement handed by a coordinator to its partition's home
//! replica (docs/design/paxos.md, section 7.1), and the answer: the
//! transaction's outcome, the error it ended with, or "declined" (the home
//! could not take it and ran nothing: the sender runs it itself).
//!
//! The statement's decision is query's business: it travels as opaque
//! bytes ([`Forward::decider`]) that the home's query layer rebuilds.

use std::sync::Arc;

use bytes::Bytes;
use varve_storage::encoding::PARTITION_ENCODING_VERSION;
use varve_types::consistency::{Consistency, Unavailable};
use varve_types::data::{ClusteringComparator, Partition, PartitionKey};
use varve_types::data_error::{DataError, ReadTimeout, WriteTimeout, WriteType};

use crate::net::limits::MAX_FAILURE_MESSAGE_BYTES;
use crate::net::wire::{lossy_utf8, put_bytes, truncate_utf8, Reader};
use crate::verbs::codec::{
    put_key, put_partition, put_table, read_encoding, read_key, read_partition, read_table,
    Comparators, PayloadError,
};

/// The longest decider a PAXOS_FORWARD carries (a conditional batch's
/// updates are bounded by the mutation limit, which this equals).
pub const MAX_FORWARDED_DECIDER_BYTES: usize = crate::net::limits::MAX_FRAME_PAYLOAD_BYTES / 2;

/// A conditional statement for the home replica to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Forward {
    pub table: u128,
    pub key: PartitionKey,
    /// SERIAL or LOCAL_SERIAL.
    pub serial: Consistency,
    /// The statement's level, for the commit.
    pub commit: Consistency,
    pub now_seconds: i32,
    /// The statement's conditions and update, in query's encoding.
    pub decider: Bytes,
}

/// What the home answers.
#[derive(Debug, Clone, PartialEq)]
pub enum ForwardAnswer {
    /// The transaction ran: what it found, and whether it applied.
    Done {
        current: Partition,
        applied: bool,
        contention: u64,
    },
    /// It ran and failed (or its outcome is unknown).
    Failed(DataError),
    /// Nothing ran (the home does not know the table, or cannot rebuild
    /// the statement): the sender runs it itself.
    Declined(String),
}

const DONE: u8 = 0;
const FAILED: u8 = 1;
const DECLINED: u8 = 2;

pub fn encode_forward(f: &Forward) -> Bytes {
    let mut out = Vec::with_capacity(48 + f.key.key.len() + f.decider.len());
    put_table(&mut out, f.table);
    put_key(&mut out, &f.key);
    out.extend_from_slice(&f.serial.code().to_be_bytes());
    out.extend_from_slice(&f.commit.code().to_be_bytes());
    out.extend_from_slice(&f.now_seconds.to_be_bytes());
    put_bytes(&mut out, &f.decider);
    Bytes::from(out)
}

pub fn decode_forward(payload: &Bytes) -> Result<Forward, PayloadError> {
    let mut r = Reader::new(payload);
    let table = read_table(&mut r)?;
    let key = read_key(&mut r, payload)?;
    let serial = read_level(&mut r)?;
    if !serial.is_serial() {
        return Err(PayloadError::Malformed(format!(
            "serial level {}",
            serial.name()
        )));
    }
    let commit = read_level(&mut r)?;
    let now_seconds = i32::from_be_bytes(r.array()?);
    let decider = r.bytes("decider", MAX_FORWARDED_DECIDER_BYTES)?;
    let decider = payload.slice_ref(decider);
    r.finish()?;
    Ok(Forward {
        table,
        key,
        serial,
        commit,
        now_seconds,
        decider,
    })
}

fn read_level(r: &mut Reader<'_>) -> Result<Consistency, PayloadError> {
    let code = r.u16()?;
    Consistency::from_code(code)
        .ok_or_else(|| PayloadError::Malformed(format!("consistency {code:#06x}")))
}

pub fn encode_answer(a: &ForwardAnswer) -> Bytes {
    let mut out = Vec::with_capacity(64);
    match a {
        ForwardAnswer::Done {
            current,
            applied,
            contention,
        } => {
            out.push(DONE);
            out.push(u8::from(*applied));
            out.extend_from_slice(&contention.to_be_bytes());
            out.push(PARTITION_ENCODING_VERSION);
            put_partition(&mut out, current);
        }
        ForwardAnswer::Failed(e) => {
            out.push(FAILED);
            put_error(&mut out, e);
        }
        ForwardAnswer::Declined(why) => {
            out.push(DECLINED);
            put_text(&mut out, why);
        }
    }
    Bytes::from(out)
}

pub fn decode_answer(
    payload: &Bytes,
    table: u128,
    tables: &dyn Comparators,
) -> Result<ForwardAnswer, PayloadError> {
    let mut r = Reader::new(payload);
    let answer = match r.u8()? {
        DONE => {
            let applied = read_bool(&mut r)?;
            let contention = r.u64()?;
            let version = read_encoding(&mut r)?;
            let cmp = tables
                .comparator(table)
                .ok_or(PayloadError::UnknownTable(table))?;
            let current = read_partition(&mut r, payload, version, &cmp)?;
            ForwardAnswer::Done {
                current,
                applied,
                contention,
            }
        }
        FAILED => ForwardAnswer::Failed(read_error(&mut r)?),
        DECLINED => ForwardAnswer::Declined(read_text(&mut r)?),
        k => return Err(PayloadError::Malformed(format!("forward answer {k}"))),
    };
    r.finish()?;
    Ok(answer)
}

fn read_bool(r: &mut Reader<'_>) -> Result<bool, PayloadError> {
    match r.u8()? {
        0 => Ok(false),
        1 => Ok(true),
        b => Err(PayloadError::Malformed(format!("boolean {b}"))),
    }
}

fn put_text(out: &mut Vec<u8>, s: &str) {
    put_bytes(out, truncate_utf8(s, MAX_FAILURE_MESSAGE_BYTES).as_bytes());
}

fn read_text(r: &mut Reader<'_>) -> Result<String, PayloadError> {
    let b = r.bytes("message", MAX_FAILURE_MESSAGE_BYTES)?;
    Ok(lossy_utf8(b, MAX_FAILURE_MESSAGE_BYTES))
}

// Error kinds on the wire.
const UNAVAILABLE: u8 = 0;
const WRITE_TIMEOUT: u8 = 1;
const CAS_WRITE_UNKNOWN: u8 = 2;
const READ_TIMEOUT: u8 = 3;
const READ_FAILURE: u8 = 4;
const WRITE_FAILURE: u8 = 5;
const OVERLOADED: u8 = 6;
const CONFLICT: u8 = 7;
const UNKNOWN_TABLE: u8 = 8;
const SERVER: u8 = 9;

const WRITE_TYPES: [WriteType; 5] = [
    WriteType::Simple,
    WriteType::Batch,
    WriteType::UnloggedBatch,
    WriteType::BatchLog,
    WriteType::Cas,
];

fn put_error(out: &mut Vec<u8>, e: &DataError) {
    let put_u32 = |out: &mut Vec<u8>, v: u32| out.extend_from_slice(&v.to_be_bytes());
    let put_write_timeout = |out: &mut Vec<u8>, t: &WriteTimeout| {
        out.extend_from_slice(&t.consistency.code().to_be_bytes());
        put_u32(out, t.received);
        put_u32(out, t.block_for);
        let kind = WRITE_TYPES.iter().position(|w| *w == t.write_type);
        out.push(kind.unwrap_or(0) as u8);
    };
    match e {
        DataError::Unavailable(u) => {
            out.push(UNAVAILABLE);
            out.extend_from_slice(&u.consistency.code().to_be_bytes());
            put_u32(out, u.required);
            put_u32(out, u.alive);
            put_text(out, u.dc.as_deref().unwrap_or(""));
        }
        DataError::WriteTimeout(t) => {
            out.push(WRITE_TIMEOUT);
            put_write_timeout(out, t);
        }
        DataError::CasWriteUnknown(t) => {
            out.push(CAS_WRITE_UNKNOWN);
            put_write_timeout(out, t);
        }
        DataError::ReadTimeout(t) => {
            out.push(READ_TIMEOUT);
            out.extend_from_slice(&t.consistency.code().to_be_bytes());
            put_u32(out, t.received);
            put_u32(out, t.block_for);
            out.push(u8::from(t.data_present));
        }
        DataError::ReadFailure(s) => text_error(out, READ_FAILURE, s),
        DataError::WriteFailure(s) => text_error(out, WRITE_FAILURE, s),
        DataError::Overloaded(s) => text_error(out, OVERLOADED, s),
        DataError::Conflict(s) => text_error(out, CONFLICT, s),
        DataError::UnknownTable(s) => text_error(out, UNKNOWN_TABLE, s),
        // Never leaves a node (it is run again where it may block).
        DataError::WouldBlock(s) | DataError::Server(s) => text_error(out, SERVER, s),
    }
}

fn text_error(out: &mut Vec<u8>, kind: u8, s: &str) {
    out.push(kind);
    put_text(out, s);
}

fn read_error(r: &mut Reader<'_>) -> Result<DataError, PayloadError> {
    let kind = r.u8()?;
    let write_timeout = |r: &mut Reader<'_>| -> Result<WriteTimeout, PayloadError> {
        let consistency = read_level(r)?;
        let received = r.u32()?;
        let block_for = r.u32()?;
        let kind = r.u8()?;
        let write_type = *WRITE_TYPES
            .get(usize::from(kind))
            .ok_or_else(|| PayloadError::Malformed(format!("write type {kind}")))?;
        Ok(WriteTimeout {
            consistency,
            received,
            block_for,
            write_type,
        })
    };
    Ok(match kind {
        UNAVAILABLE => {
            let consistency = read_level(r)?;
            let required = r.u32()?;
            let alive = r.u32()?;
            let dc = read_text(r)?;
            DataError::Unavailable(Unavailable {
                consistency,
                required,
                alive,
                dc: (!dc.is_empty()).then_some(dc),
            })
        }
        WRITE_TIMEOUT => DataError::WriteTimeout(write_timeout(r)?),
        CAS_WRITE_UNKNOWN => DataError::CasWriteUnknown(write_timeout(r)?),
        READ_TIMEOUT => {
            let consistency = read_level(r)?;
            let received = r.u32()?;
            let block_for = r.u32()?;
            let data_present = read_bool(r)?;
            DataError::ReadTimeout(ReadTimeout {
                consistency,
                received,
                block_for,
                data_present,
            })
        }
        READ_FAILURE => DataError::ReadFailure(read_text(r)?),
        WRITE_FAILURE => DataError::WriteFailure(read_text(r)?),
        OVERLOADED => DataError::Overloaded(read_text(r)?),
        CONFLICT => DataError::Conflict(read_text(r)?),
        UNKNOWN_TABLE => DataError::UnknownTable(read_text(r)?),
        SERVER => DataError::Server(read_text(r)?),
        k => return Err(PayloadError::Malformed(format!("error kind {k}"))),
    })
}

/// Decodes any payload as the forward verb's request and answer, for the
/// fuzzer: nothing may panic, and what decodes encodes back to itself.
pub fn fuzz_decode(payload: &[u8]) {
    struct AnyTable(Arc<ClusteringComparator>);
    impl Comparators for AnyTable {
        fn comparator(&self, _table: u128) -> Option<Arc<ClusteringComparator>> {
            Some(Arc::clone(&self.0))
        }
    }
    let tables = AnyTable(ClusteringComparator::new(vec![(
        varve_types::CqlType::Int,
        false,
    )]));
    let payload = Bytes::copy_from_slice(payload);
    if let Ok(f) = decode_forward(&payload) {
        assert_eq!(decode_forward(&encode_forward(&f)).ok(), Some(f));
    }
    if let Ok(a) = decode_answer(&payload, 1, &tables) {
        assert_eq!(decode_answer(&encode_answer(&a), 1, &tables).ok(), Some(a));
    }
}

#[cfg(test)]
mod tests;
