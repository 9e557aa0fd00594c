//! Checked proposals (docs/design/paxos-two-rounds.md): a coordinator
//! that is a replica promises locally, decides on what its own replica
//! holds, and sends the proposal to the other replicas with what the
//! decision was based on (the latest commit's id and a digest of the data
//! read). A replica accepts only if its own state shows the same: the
//! rule here is a pure function on its state, so it is tested without
//! storage or network. PAXOS_PROPOSE_CHECKED's payloads are here too
//! (docs/format/internode.md, section 6).

use bytes::Bytes;
use md5::{Digest, Md5};
use varve_storage::encoding::{encode_partition, PARTITION_ENCODING_VERSION};
use varve_types::data::{Partition, Slice};

use super::ballot::Ballot;
use super::codec::{put_ballot, put_prepare, read_ballot, read_prepare, Prepare};
use super::state::PaxosState;
use crate::net::wire::Reader;
use crate::verbs::codec::{
    put_partition, read_encoding, read_partition, Comparators, PayloadError,
};

/// A proposal sent with what its decision was based on; without an update,
/// a check that writes nothing (a condition not met).
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// The ballot and the read: the coordinator's local prepare.
    pub read: Prepare,
    /// The id of the latest commit the decision saw.
    pub based_on: Option<Ballot>,
    /// [`data_digest`] of the data the decision read.
    pub digest: [u8; 16],
    pub update: Option<Partition>,
}

/// Why a replica refused a checked proposal: the first check that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// It promised a newer ballot.
    Promise(Ballot),
    /// It accepted a proposal newer than its latest commit.
    Unfinished,
    /// Its latest commit is another (its id, or none).
    Commit(Option<Ballot>),
    /// Its data under the slices differs.
    Data,
}

impl Refusal {
    /// The index of the reason in the coordinator's refusal counters
    /// (promise, unfinished, commit, data).
    pub fn index(self) -> usize {
        match self {
            Refusal::Promise(_) => 0,
            Refusal::Unfinished => 1,
            Refusal::Commit(_) => 2,
            Refusal::Data => 3,
        }
    }
}

/// A replica's answer: accepted (or, for a check, passed), or refused.
pub type CheckAnswer = Result<(), Refusal>;

/// The checks of docs/design/paxos-two-rounds.md, section 2, step 4, on a
/// replica's state and the digest of its data under the slices.
pub fn check(state: &PaxosState, c: &Checked, digest: &[u8; 16]) -> CheckAnswer {
    if let Some(promised) = state.promised {
        if promised > c.read.ballot {
            return Err(Refusal::Promise(promised));
        }
    }
    let committed = state.committed.as_ref().map(|p| p.ballot);
    let unfinished = state
        .accepted
        .as_ref()
        .is_some_and(|a| committed.is_none_or(|c| a.ballot > c));
    if unfinished {
        return Err(Refusal::Unfinished);
    }
    if committed != c.based_on {
        return Err(Refusal::Commit(committed));
    }
    if *digest != c.digest {
        return Err(Refusal::Data);
    }
    Ok(())
}

/// The digest of a replica's data under `slices`: MD5 of storage's
/// partition encoding of the live rows, resolved at `now_seconds`, all
/// rows in order. Tombstones and file layout do not change it; a newer
/// cell, a missing one, or a deletion that hides one does.
pub fn data_digest(raw: Option<&Partition>, slices: &[Slice], now_seconds: i32) -> [u8; 16] {
    let live = raw.map_or_else(Partition::default, |p| {
        p.resolve_slices(slices, false, now_seconds, usize::MAX).0
    });
    let mut bytes = Vec::with_capacity(64);
    encode_partition(&mut bytes, &live);
    Md5::digest(&bytes).into()
}

const ABSENT: u8 = 0;
const PRESENT: u8 = 1;
const ACCEPTED: u8 = 0;
const REFUSED_PROMISE: u8 = 1;
const REFUSED_UNFINISHED: u8 = 2;
const REFUSED_COMMIT: u8 = 3;
const REFUSED_DATA: u8 = 4;

fn put_optional_ballot(out: &mut Vec<u8>, b: Option<&Ballot>) {
    match b {
        Some(b) => {
            out.push(PRESENT);
            put_ballot(out, b);
        }
        None => out.push(ABSENT),
    }
}

fn read_presence(r: &mut Reader<'_>, what: &str) -> Result<bool, PayloadError> {
    match r.u8()? {
        ABSENT => Ok(false),
        PRESENT => Ok(true),
        k => Err(PayloadError::Malformed(format!("{what} presence {k}"))),
    }
}

fn read_optional_ballot(r: &mut Reader<'_>, what: &str) -> Result<Option<Ballot>, PayloadError> {
    Ok(match read_presence(r, what)? {
        true => Some(read_ballot(r)?),
        false => None,
    })
}

/// A PAXOS_PROPOSE_CHECKED payload.
pub fn encode_checked(c: &Checked) -> Bytes {
    let mut out = Vec::with_capacity(96 + c.read.key.key.len());
    put_prepare(&mut out, &c.read);
    put_optional_ballot(&mut out, c.based_on.as_ref());
    out.extend_from_slice(&c.digest);
    match &c.update {
        Some(update) => {
            out.push(PRESENT);
            out.push(PARTITION_ENCODING_VERSION);
            put_partition(&mut out, update);
        }
        None => out.push(ABSENT),
    }
    Bytes::from(out)
}

pub fn decode_checked(payload: &Bytes, tables: &dyn Comparators) -> Result<Checked, PayloadError> {
    let mut r = Reader::new(payload);
    let (read, cmp) = read_prepare(&mut r, payload, tables)?;
    let based_on = read_optional_ballot(&mut r, "latest commit")?;
    let digest = r.array()?;
    let update = match read_presence(&mut r, "update")? {
        true => {
            let version = read_encoding(&mut r)?;
            Some(read_partition(&mut r, payload, version, &cmp)?)
        }
        false => None,
    };
    r.finish()?;
    Ok(Checked {
        read,
        based_on,
        digest,
        update,
    })
}

/// A PAXOS_PROPOSE_CHECKED_RSP payload.
pub fn encode_check_answer(answer: CheckAnswer) -> Bytes {
    let mut out = Vec::with_capacity(18);
    match answer {
        Ok(()) => out.push(ACCEPTED),
        Err(Refusal::Promise(b)) => {
            out.push(REFUSED_PROMISE);
            put_ballot(&mut out, &b);
        }
        Err(Refusal::Unfinished) => out.push(REFUSED_UNFINISHED),
        Err(Refusal::Commit(b)) => {
            out.push(REFUSED_COMMIT);
            put_optional_ballot(&mut out, b.as_ref());
        }
        Err(Refusal::Data) => out.push(REFUSED_DATA),
    }
    Bytes::from(out)
}

pub fn decode_check_answer(payload: &Bytes) -> Result<CheckAnswer, PayloadError> {
    let mut r = Reader::new(payload);
    let answer = match r.u8()? {
        ACCEPTED => Ok(()),
        REFUSED_PROMISE => Err(Refusal::Promise(read_ballot(&mut r)?)),
        REFUSED_UNFINISHED => Err(Refusal::Unfinished),
        REFUSED_COMMIT => Err(Refusal::Commit(read_optional_ballot(
            &mut r,
            "latest commit",
        )?)),
        REFUSED_DATA => Err(Refusal::Data),
        k => return Err(PayloadError::Malformed(format!("checked answer {k}"))),
    };
    r.finish()?;
    Ok(answer)
}

/// The fuzz entry of these payloads (called from the Paxos codec's): what
/// decodes, for a table of one `int` clustering column, encodes and
/// decodes again to the same value.
pub fn fuzz_decode(payload: &Bytes, tables: &dyn Comparators) {
    if let Ok(c) = decode_checked(payload, tables) {
        assert_eq!(decode_checked(&encode_checked(&c), tables).ok(), Some(c));
    }
    if let Ok(a) = decode_check_answer(payload) {
        assert_eq!(decode_check_answer(&encode_check_answer(a)).ok(), Some(a));
    }
}

#[cfg(test)]
mod tests;
