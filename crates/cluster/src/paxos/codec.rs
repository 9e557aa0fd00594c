//! The Paxos verbs' payloads (docs/format/internode.md, section 6.9):
//! PAXOS_PREPARE carries the read, its response the promise with the
//! unfinished proposal, the latest commit and the data; PAXOS_PROPOSE and
//! PAXOS_COMMIT carry a ballot and an update. Partitions travel in
//! storage's partition encoding, as in MUTATION, and are decoded with the
//! table's comparator.

use std::sync::Arc;

use bytes::Bytes;
use varve_storage::encoding::PARTITION_ENCODING_VERSION;
use varve_types::data::{ClusteringComparator, Partition, PartitionKey, Slice};

use super::ballot::Ballot;
use super::state::{PrepareAnswer, Proposal};
use crate::net::wire::Reader;
use crate::verbs::codec::{
    put_key, put_partition, put_slices, put_table, read_encoding, read_key, read_partition,
    read_slices, read_table, Comparators, PayloadError,
};

/// A prepare: the ballot, and the read that comes with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepare {
    pub ballot: Ballot,
    pub table: u128,
    pub key: PartitionKey,
    pub now_seconds: i32,
    pub slices: Vec<Slice>,
}

/// A promise's or rejection's payload, with the data of a promise.
#[derive(Debug, Clone, PartialEq)]
pub struct PrepareResponse {
    pub answer: PrepareAnswer,
    /// The partition as stored under the slices (a promise only).
    pub data: Option<Partition>,
}

/// A PAXOS_PROPOSE or PAXOS_COMMIT payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Carry {
    pub table: u128,
    pub key: PartitionKey,
    pub proposal: Proposal,
}

const PROMISE: u8 = 0;
const REJECT: u8 = 1;
const HAS_ACCEPTED: u8 = 0x01;
const HAS_COMMITTED: u8 = 0x02;
const HAS_DATA: u8 = 0x04;
const ACCEPTED: u8 = 0;
const REFUSED: u8 = 1;

pub(super) fn put_ballot(out: &mut Vec<u8>, b: &Ballot) {
    out.extend_from_slice(&b.0);
}

pub(super) fn read_ballot(r: &mut Reader<'_>) -> Result<Ballot, PayloadError> {
    Ok(Ballot(r.array()?))
}

pub fn encode_prepare(p: &Prepare) -> Bytes {
    let mut out = Vec::with_capacity(64 + p.key.key.len());
    put_prepare(&mut out, p);
    Bytes::from(out)
}

/// Appends a prepare's fields (a checked proposal starts with them too).
pub(super) fn put_prepare(out: &mut Vec<u8>, p: &Prepare) {
    put_ballot(out, &p.ballot);
    put_table(out, p.table);
    put_key(out, &p.key);
    out.extend_from_slice(&p.now_seconds.to_be_bytes());
    put_slices(out, &p.slices);
}

pub fn decode_prepare(payload: &Bytes, tables: &dyn Comparators) -> Result<Prepare, PayloadError> {
    let mut r = Reader::new(payload);
    let (prepare, _) = read_prepare(&mut r, payload, tables)?;
    r.finish()?;
    Ok(prepare)
}

/// Reads what [`put_prepare`] wrote, and the table's comparator.
pub(super) fn read_prepare(
    r: &mut Reader<'_>,
    payload: &Bytes,
    tables: &dyn Comparators,
) -> Result<(Prepare, Arc<ClusteringComparator>), PayloadError> {
    let ballot = read_ballot(r)?;
    let table = read_table(r)?;
    let key = read_key(r, payload)?;
    let now_seconds = i32::from_be_bytes(r.array()?);
    let cmp = tables
        .comparator(table)
        .ok_or(PayloadError::UnknownTable(table))?;
    let slices = read_slices(r, payload, &cmp)?;
    let prepare = Prepare {
        ballot,
        table,
        key,
        now_seconds,
        slices,
    };
    Ok((prepare, cmp))
}

pub fn encode_prepare_response(response: &PrepareResponse) -> Bytes {
    let mut out = Vec::with_capacity(64);
    match &response.answer {
        PrepareAnswer::Reject { promised } => {
            out.push(REJECT);
            put_ballot(&mut out, promised);
        }
        PrepareAnswer::Promise {
            accepted,
            committed,
        } => {
            out.push(PROMISE);
            out.push(PARTITION_ENCODING_VERSION);
            let flag = |present: bool, bit: u8| if present { bit } else { 0 };
            let flags = flag(accepted.is_some(), HAS_ACCEPTED)
                | flag(committed.is_some(), HAS_COMMITTED)
                | flag(response.data.is_some(), HAS_DATA);
            out.push(flags);
            for p in [accepted, committed].into_iter().flatten() {
                put_ballot(&mut out, &p.ballot);
                put_partition(&mut out, &p.update);
            }
            if let Some(data) = &response.data {
                put_partition(&mut out, data);
            }
        }
    }
    Bytes::from(out)
}

pub fn decode_prepare_response(
    payload: &Bytes,
    cmp: &Arc<ClusteringComparator>,
) -> Result<PrepareResponse, PayloadError> {
    let mut r = Reader::new(payload);
    let response = match r.u8()? {
        REJECT => PrepareResponse {
            answer: PrepareAnswer::Reject {
                promised: read_ballot(&mut r)?,
            },
            data: None,
        },
        PROMISE => {
            let version = read_encoding(&mut r)?;
            let flags = r.u8()?;
            if flags & !(HAS_ACCEPTED | HAS_COMMITTED | HAS_DATA) != 0 {
                return Err(PayloadError::Malformed(format!(
                    "promise flags {flags:#04x}"
                )));
            }
            let mut proposal = |present: bool| -> Result<Option<Proposal>, PayloadError> {
                if !present {
                    return Ok(None);
                }
                let ballot = read_ballot(&mut r)?;
                let update = read_partition(&mut r, payload, version, cmp)?;
                Ok(Some(Proposal { ballot, update }))
            };
            let accepted = proposal(flags & HAS_ACCEPTED != 0)?;
            let committed = proposal(flags & HAS_COMMITTED != 0)?;
            let data = if flags & HAS_DATA != 0 {
                Some(read_partition(&mut r, payload, version, cmp)?)
            } else {
                None
            };
            PrepareResponse {
                answer: PrepareAnswer::Promise {
                    accepted,
                    committed,
                },
                data,
            }
        }
        k => return Err(PayloadError::Malformed(format!("prepare answer {k}"))),
    };
    r.finish()?;
    Ok(response)
}

/// A PAXOS_PROPOSE or PAXOS_COMMIT payload.
pub fn encode_carry(c: &Carry) -> Bytes {
    let mut out = Vec::with_capacity(64 + c.key.key.len());
    put_ballot(&mut out, &c.proposal.ballot);
    put_table(&mut out, c.table);
    put_key(&mut out, &c.key);
    out.push(PARTITION_ENCODING_VERSION);
    put_partition(&mut out, &c.proposal.update);
    Bytes::from(out)
}

pub fn decode_carry(payload: &Bytes, tables: &dyn Comparators) -> Result<Carry, PayloadError> {
    let mut r = Reader::new(payload);
    let ballot = read_ballot(&mut r)?;
    let table = read_table(&mut r)?;
    let key = read_key(&mut r, payload)?;
    let version = read_encoding(&mut r)?;
    let cmp = tables
        .comparator(table)
        .ok_or(PayloadError::UnknownTable(table))?;
    let update = read_partition(&mut r, payload, version, &cmp)?;
    r.finish()?;
    Ok(Carry {
        table,
        key,
        proposal: Proposal { ballot, update },
    })
}

/// A PAXOS_PROPOSE response: accepted, or refused for a newer promise.
pub fn encode_propose_response(answer: Result<(), Ballot>) -> Bytes {
    let mut out = Vec::with_capacity(17);
    match answer {
        Ok(()) => out.push(ACCEPTED),
        Err(promised) => {
            out.push(REFUSED);
            put_ballot(&mut out, &promised);
        }
    }
    Bytes::from(out)
}

pub fn decode_propose_response(payload: &Bytes) -> Result<Result<(), Ballot>, PayloadError> {
    let mut r = Reader::new(payload);
    let answer = match r.u8()? {
        ACCEPTED => Ok(()),
        REFUSED => Err(read_ballot(&mut r)?),
        k => return Err(PayloadError::Malformed(format!("propose answer {k}"))),
    };
    r.finish()?;
    Ok(answer)
}

/// The fuzz entry of these payloads (called from `crate::net::fuzz`):
/// whatever decodes, for a table of one `int` clustering column, encodes
/// and decodes again to the same value.
pub fn fuzz_decode(payload: &[u8]) {
    struct AnyTable(Arc<ClusteringComparator>);
    impl Comparators for AnyTable {
        fn comparator(&self, _table: u128) -> Option<Arc<ClusteringComparator>> {
            Some(Arc::clone(&self.0))
        }
    }
    let cmp = ClusteringComparator::new(vec![(varve_types::CqlType::Int, false)]);
    let tables = AnyTable(Arc::clone(&cmp));
    let payload = Bytes::copy_from_slice(payload);
    if let Ok(p) = decode_prepare(&payload, &tables) {
        assert_eq!(decode_prepare(&encode_prepare(&p), &tables).ok(), Some(p));
    }
    if let Ok(r) = decode_prepare_response(&payload, &cmp) {
        let again = decode_prepare_response(&encode_prepare_response(&r), &cmp);
        assert_eq!(again.ok(), Some(r));
    }
    if let Ok(c) = decode_carry(&payload, &tables) {
        assert_eq!(decode_carry(&encode_carry(&c), &tables).ok(), Some(c));
    }
    if let Ok(a) = decode_propose_response(&payload) {
        assert_eq!(
            decode_propose_response(&encode_propose_response(a)).ok(),
            Some(a)
        );
    }
    super::checked::fuzz_decode(&payload, &tables);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paxos::test_support::{cmp, key, row, OneTable};

    #[test]
    fn every_payload_round_trips_and_every_cut_is_refused() {
        let tables = OneTable(cmp());
        let prepare = Prepare {
            ballot: Ballot::new(77, 9),
            table: 7,
            key: key(),
            now_seconds: 1_700_000_000,
            slices: vec![Slice::all(&cmp())],
        };
        let bytes = encode_prepare(&prepare);
        assert_eq!(decode_prepare(&bytes, &tables).expect("decodes"), prepare);
        for cut in 0..bytes.len() {
            assert!(
                decode_prepare(&bytes.slice(..cut), &tables).is_err(),
                "cut at {cut}"
            );
        }
        let promise = PrepareResponse {
            answer: PrepareAnswer::Promise {
                accepted: Some(Proposal {
                    ballot: Ballot::new(5, 1),
                    update: row(1, 5),
                }),
                committed: Some(Proposal {
                    ballot: Ballot::new(4, 1),
                    update: row(2, 4),
                }),
            },
            data: Some(row(3, 3)),
        };
        let bytes = encode_prepare_response(&promise);
        assert_eq!(
            decode_prepare_response(&bytes, &cmp()).expect("decodes"),
            promise
        );
        for cut in 0..bytes.len() {
            assert!(
                decode_prepare_response(&bytes.slice(..cut), &cmp()).is_err(),
                "cut at {cut}"
            );
        }
        let reject = PrepareResponse {
            answer: PrepareAnswer::Reject {
                promised: Ballot::new(99, 2),
            },
            data: None,
        };
        let bytes = encode_prepare_response(&reject);
        assert_eq!(
            decode_prepare_response(&bytes, &cmp()).expect("decodes"),
            reject
        );
        let carry = Carry {
            table: 7,
            key: key(),
            proposal: Proposal {
                ballot: Ballot::new(100, 3),
                update: row(4, 100),
            },
        };
        let bytes = encode_carry(&carry);
        assert_eq!(decode_carry(&bytes, &tables).expect("decodes"), carry);
        for cut in 0..bytes.len() {
            assert!(
                decode_carry(&bytes.slice(..cut), &tables).is_err(),
                "cut at {cut}"
            );
        }
        for answer in [Ok(()), Err(Ballot::new(1, 1))] {
            let bytes = encode_propose_response(answer);
            assert_eq!(decode_propose_response(&bytes).expect("decodes"), answer);
        }
    }

    #[test]
    fn unknown_tables_kinds_and_flags_are_refused() {
        let tables = OneTable(cmp());
        let carry = Carry {
            table: 8,
            key: key(),
            proposal: Proposal {
                ballot: Ballot::new(1, 1),
                update: Partition::default(),
            },
        };
        assert!(matches!(
            decode_carry(&encode_carry(&carry), &tables),
            Err(PayloadError::UnknownTable(8))
        ));
        assert!(decode_prepare_response(&Bytes::from_static(&[9]), &cmp()).is_err());
        let bad_flags = Bytes::from(vec![PROMISE, PARTITION_ENCODING_VERSION, 0x80]);
        assert!(decode_prepare_response(&bad_flags, &cmp()).is_err());
        assert!(decode_propose_response(&Bytes::from_static(&[2])).is_err());
    }
}
