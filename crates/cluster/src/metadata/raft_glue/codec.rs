//! openraft's entries and messages in bytes (docs/format/metadata-log.md,
//! sections 3 and 4): log ids, votes, memberships, entries, and the
//! RAFT_VOTE, RAFT_APPEND and RAFT_SNAPSHOT requests and responses.
//!
//! Every RAFT_* payload starts with [`RAFT_PAYLOAD_VERSION`]; a payload
//! of another version, a bad field or trailing bytes is refused. Written
//! by hand over [`crate::net::wire`] rather than derived, so the bytes
//! are ours and do not change with openraft's serde representation.

use std::collections::{BTreeMap, BTreeSet};

use openraft::error::{InstallSnapshotError, SnapshotMismatch};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{CommittedLeaderId, EntryPayload, SnapshotSegmentId};

use super::{Entry, LogId, Membership, Peer, SnapshotMeta, StoredMembership, TypeConfig, Vote};
use crate::metadata::codec::{encode_command, read_command, read_count, read_host, read_string};
use crate::metadata::limits::{
    MAX_ENTRIES_PER_APPEND, MAX_MESSAGE_BYTES, MAX_NODES, MAX_RAFT_PAYLOAD_BYTES,
    SNAPSHOT_CHUNK_BYTES,
};
use crate::net::handshake::HostId;
use crate::net::wire::{put_address, put_bytes, put_varint, read_address, Reader, WireError};

/// The layout version of RAFT_* responses and log records.
pub const RAFT_PAYLOAD_VERSION: u8 = 1;

/// The layout version of RAFT_* requests: version 2 names the node the
/// request is meant for, so that a node now at a dead node's address
/// does not answer in its place (docs/format/metadata-log.md, section 4).
/// Version 1 requests (no addressee) are still read.
pub const RAFT_REQUEST_VERSION: u8 = 2;

/// Configurations of one membership: one, or two during a joint change.
pub const MAX_MEMBERSHIP_CONFIGS: usize = 2;

const BLANK: u8 = 0;
const NORMAL: u8 = 1;
const MEMBERSHIP: u8 = 2;

pub fn put_log_id(out: &mut Vec<u8>, id: &LogId) {
    out.extend_from_slice(&id.leader_id.term.to_be_bytes());
    out.extend_from_slice(&id.leader_id.node_id.0);
    out.extend_from_slice(&id.index.to_be_bytes());
}

pub fn read_log_id(r: &mut Reader<'_>) -> Result<LogId, WireError> {
    let term = r.u64()?;
    let node_id = read_host(r)?;
    let index = r.u64()?;
    Ok(LogId::new(CommittedLeaderId::new(term, node_id), index))
}

pub fn put_opt_log_id(out: &mut Vec<u8>, id: &Option<LogId>) {
    match id {
        Some(id) => {
            out.push(1);
            put_log_id(out, id);
        }
        None => out.push(0),
    }
}

pub fn read_opt_log_id(r: &mut Reader<'_>) -> Result<Option<LogId>, WireError> {
    match r.u8()? {
        0 => Ok(None),
        1 => Ok(Some(read_log_id(r)?)),
        _ => Err(WireError::BadValue("log id flag")),
    }
}

pub fn put_vote(out: &mut Vec<u8>, vote: &Vote) {
    out.extend_from_slice(&vote.leader_id.term.to_be_bytes());
    out.extend_from_slice(&vote.leader_id.node_id.0);
    out.push(u8::from(vote.committed));
}

pub fn read_vote(r: &mut Reader<'_>) -> Result<Vote, WireError> {
    let term = r.u64()?;
    let node_id = read_host(r)?;
    let committed = read_bool(r, "vote committed flag")?;
    let mut vote = Vote::new(term, node_id);
    vote.committed = committed;
    Ok(vote)
}

fn read_bool(r: &mut Reader<'_>, what: &'static str) -> Result<bool, WireError> {
    match r.u8()? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(WireError::BadValue(what)),
    }
}

pub fn put_membership(out: &mut Vec<u8>, m: &Membership) {
    let configs = m.get_joint_config();
    put_varint(out, configs.len() as u64);
    for config in configs {
        put_varint(out, config.len() as u64);
        for id in config {
            out.extend_from_slice(&id.0);
        }
    }
    let nodes: Vec<_> = m.nodes().collect();
    put_varint(out, nodes.len() as u64);
    for (id, peer) in nodes {
        out.extend_from_slice(&id.0);
        put_address(out, peer.addr);
    }
}

pub fn read_membership(r: &mut Reader<'_>) -> Result<Membership, WireError> {
    let count = read_count(r, "membership configs", MAX_MEMBERSHIP_CONFIGS)?;
    if count == 0 {
        return Err(WireError::BadValue("membership without a config"));
    }
    let mut configs = Vec::with_capacity(count);
    for _ in 0..count {
        let voters = read_count(r, "membership voters", MAX_NODES)?;
        if voters == 0 {
            return Err(WireError::BadValue("membership config without a voter"));
        }
        let mut config = BTreeSet::new();
        for _ in 0..voters {
            config.insert(read_host(r)?);
        }
        configs.push(config);
    }
    let count = read_count(r, "membership nodes", MAX_NODES)?;
    let mut nodes = BTreeMap::new();
    for _ in 0..count {
        let id = read_host(r)?;
        nodes.insert(
            id,
            Peer {
                addr: read_address(r)?,
            },
        );
    }
    // openraft fills in voters missing from `nodes`; a voter must have
    // an address, so refuse that here.
    if configs.iter().flatten().any(|id| !nodes.contains_key(id)) {
        return Err(WireError::BadValue("membership voter without an address"));
    }
    Ok(Membership::new(configs, nodes))
}

pub fn put_entry(out: &mut Vec<u8>, entry: &Entry) {
    put_log_id(out, &entry.log_id);
    match &entry.payload {
        EntryPayload::Blank => out.push(BLANK),
        EntryPayload::Normal(command) => {
            out.push(NORMAL);
            put_bytes(out, &encode_command(command));
        }
        EntryPayload::Membership(m) => {
            out.push(MEMBERSHIP);
            put_membership(out, m);
        }
    }
}

pub fn read_entry(r: &mut Reader<'_>) -> Result<Entry, WireError> {
    let log_id = read_log_id(r)?;
    let payload = match r.u8()? {
        BLANK => EntryPayload::Blank,
        NORMAL => {
            let bytes = r.bytes("command", MAX_RAFT_PAYLOAD_BYTES)?;
            let mut inner = Reader::new(bytes);
            let command = read_command(&mut inner)?;
            inner.finish()?;
            EntryPayload::Normal(command)
        }
        MEMBERSHIP => EntryPayload::Membership(read_membership(r)?),
        _ => return Err(WireError::BadValue("entry payload kind")),
    };
    Ok(Entry { log_id, payload })
}

/// An entry as a log record's payload: the version, then the entry.
pub fn encode_entry(entry: &Entry) -> Vec<u8> {
    let mut out = vec![RAFT_PAYLOAD_VERSION];
    put_entry(&mut out, entry);
    out
}

pub fn decode_entry(bytes: &[u8]) -> Result<Entry, WireError> {
    decode(bytes, read_entry)
}

/// Reads a whole versioned payload with `read`.
pub fn decode<T>(
    bytes: &[u8],
    read: impl FnOnce(&mut Reader<'_>) -> Result<T, WireError>,
) -> Result<T, WireError> {
    let mut r = Reader::new(bytes);
    if r.u8()? != RAFT_PAYLOAD_VERSION {
        return Err(WireError::BadValue("raft payload version"));
    }
    let value = read(&mut r)?;
    r.finish()?;
    Ok(value)
}

/// A RAFT_* request as read: the node it is meant for (none in a
/// version 1 request) and the request.
#[derive(Debug)]
pub struct Addressed<T> {
    pub to: Option<HostId>,
    pub rpc: T,
}

/// Reads a whole RAFT_* request with `read`: version 2 (the addressee,
/// then the request) or version 1 (the request alone).
pub fn decode_request<T>(
    bytes: &[u8],
    read: impl FnOnce(&mut Reader<'_>) -> Result<T, WireError>,
) -> Result<Addressed<T>, WireError> {
    let mut r = Reader::new(bytes);
    let to = match r.u8()? {
        RAFT_REQUEST_VERSION => Some(read_host(&mut r)?),
        RAFT_PAYLOAD_VERSION => None,
        _ => return Err(WireError::BadValue("raft request version")),
    };
    let rpc = read(&mut r)?;
    r.finish()?;
    Ok(Addressed { to, rpc })
}

/// Whether a RAFT_* payload of `len` bytes may be sent.
pub fn payload_fits(len: usize) -> bool {
    len <= MAX_RAFT_PAYLOAD_BYTES
}

/// Starts a versioned payload.
fn start() -> Vec<u8> {
    vec![RAFT_PAYLOAD_VERSION]
}

/// Starts a request meant for `to`.
fn start_request(to: HostId) -> Vec<u8> {
    let mut out = vec![RAFT_REQUEST_VERSION];
    out.extend_from_slice(&to.0);
    out
}

/// The request for `to`.
pub fn encode_vote_request(to: HostId, req: &VoteRequest<crate::net::HostId>) -> Vec<u8> {
    let mut out = start_request(to);
    put_vote(&mut out, &req.vote);
    put_opt_log_id(&mut out, &req.last_log_id);
    out
}

pub fn read_vote_request(r: &mut Reader<'_>) -> Result<VoteRequest<crate::net::HostId>, WireError> {
    let vote = read_vote(r)?;
    Ok(VoteRequest::new(vote, read_opt_log_id(r)?))
}

pub fn encode_vote_response(resp: &VoteResponse<crate::net::HostId>) -> Vec<u8> {
    let mut out = start();
    put_vote(&mut out, &resp.vote);
    out.push(u8::from(resp.vote_granted));
    put_opt_log_id(&mut out, &resp.last_log_id);
    out
}

pub fn read_vote_response(
    r: &mut Reader<'_>,
) -> Result<VoteResponse<crate::net::HostId>, WireError> {
    let vote = read_vote(r)?;
    let vote_granted = read_bool(r, "vote granted flag")?;
    let last_log_id = read_opt_log_id(r)?;
    Ok(VoteResponse {
        vote,
        vote_granted,
        last_log_id,
    })
}

/// The request for `to`.
pub fn encode_append_request(to: HostId, req: &AppendEntriesRequest<TypeConfig>) -> Vec<u8> {
    let mut out = start_request(to);
    put_vote(&mut out, &req.vote);
    put_opt_log_id(&mut out, &req.prev_log_id);
    put_opt_log_id(&mut out, &req.leader_commit);
    put_varint(&mut out, req.entries.len() as u64);
    for entry in &req.entries {
        put_entry(&mut out, entry);
    }
    out
}

pub fn read_append_request(
    r: &mut Reader<'_>,
) -> Result<AppendEntriesRequest<TypeConfig>, WireError> {
    let vote = read_vote(r)?;
    let prev_log_id = read_opt_log_id(r)?;
    let leader_commit = read_opt_log_id(r)?;
    let count = read_count(r, "entries", MAX_ENTRIES_PER_APPEND)?;
    let mut entries: Vec<Entry> = Vec::with_capacity(count);
    let mut next = prev_log_id.map_or(0, |id| id.index.saturating_add(1));
    for _ in 0..count {
        let entry = read_entry(r)?;
        // openraft trusts the leader's entries to follow each other; a
        // peer's bytes are checked here instead.
        let term_ok = entries
            .last()
            .is_none_or(|e| e.log_id.leader_id <= entry.log_id.leader_id);
        if entry.log_id.index != next || !term_ok {
            return Err(WireError::BadValue("entries out of sequence"));
        }
        next = entry.log_id.index.saturating_add(1);
        entries.push(entry);
    }
    Ok(AppendEntriesRequest {
        vote,
        prev_log_id,
        entries,
        leader_commit,
    })
}

pub fn encode_append_response(resp: &AppendEntriesResponse<crate::net::HostId>) -> Vec<u8> {
    let mut out = start();
    match resp {
        AppendEntriesResponse::Success => out.push(0),
        AppendEntriesResponse::PartialSuccess(id) => {
            out.push(1);
            put_opt_log_id(&mut out, id);
        }
        AppendEntriesResponse::Conflict => out.push(2),
        AppendEntriesResponse::HigherVote(vote) => {
            out.push(3);
            put_vote(&mut out, vote);
        }
    }
    out
}

pub fn read_append_response(
    r: &mut Reader<'_>,
) -> Result<AppendEntriesResponse<crate::net::HostId>, WireError> {
    Ok(match r.u8()? {
        0 => AppendEntriesResponse::Success,
        1 => AppendEntriesResponse::PartialSuccess(read_opt_log_id(r)?),
        2 => AppendEntriesResponse::Conflict,
        3 => AppendEntriesResponse::HigherVote(read_vote(r)?),
        _ => return Err(WireError::BadValue("append response kind")),
    })
}

pub fn put_snapshot_meta(out: &mut Vec<u8>, meta: &SnapshotMeta) {
    put_opt_log_id(out, &meta.last_log_id);
    put_opt_log_id(out, meta.last_membership.log_id());
    put_membership(out, meta.last_membership.membership());
    put_bytes(out, meta.snapshot_id.as_bytes());
}

pub fn read_snapshot_meta(r: &mut Reader<'_>) -> Result<SnapshotMeta, WireError> {
    let last_log_id = read_opt_log_id(r)?;
    let membership_log_id = read_opt_log_id(r)?;
    let membership = read_membership(r)?;
    let snapshot_id = read_string(r, "snapshot id", MAX_MESSAGE_BYTES)?;
    Ok(SnapshotMeta {
        last_log_id,
        last_membership: StoredMembership::new(membership_log_id, membership),
        snapshot_id,
    })
}

/// The request for `to`.
pub fn encode_snapshot_request(to: HostId, req: &InstallSnapshotRequest<TypeConfig>) -> Vec<u8> {
    let mut out = start_request(to);
    put_vote(&mut out, &req.vote);
    put_snapshot_meta(&mut out, &req.meta);
    out.extend_from_slice(&req.offset.to_be_bytes());
    put_bytes(&mut out, &req.data);
    out.push(u8::from(req.done));
    out
}

pub fn read_snapshot_request(
    r: &mut Reader<'_>,
) -> Result<InstallSnapshotRequest<TypeConfig>, WireError> {
    let vote = read_vote(r)?;
    let meta = read_snapshot_meta(r)?;
    let offset = r.u64()?;
    let data = r.bytes("snapshot chunk", SNAPSHOT_CHUNK_BYTES)?.to_vec();
    let done = read_bool(r, "snapshot done flag")?;
    Ok(InstallSnapshotRequest {
        vote,
        meta,
        offset,
        data,
        done,
    })
}

/// RAFT_SNAPSHOT_RSP: the receiver's vote, or the chunk it expected.
pub type SnapshotAnswer = Result<InstallSnapshotResponse<crate::net::HostId>, InstallSnapshotError>;

fn put_segment(out: &mut Vec<u8>, segment: &SnapshotSegmentId) {
    put_bytes(out, segment.id.as_bytes());
    out.extend_from_slice(&segment.offset.to_be_bytes());
}

fn read_segment(r: &mut Reader<'_>) -> Result<SnapshotSegmentId, WireError> {
    let id = read_string(r, "snapshot id", MAX_MESSAGE_BYTES)?;
    Ok(SnapshotSegmentId {
        id,
        offset: r.u64()?,
    })
}

pub fn encode_snapshot_answer(answer: &SnapshotAnswer) -> Vec<u8> {
    let mut out = start();
    match answer {
        Ok(resp) => {
            out.push(0);
            put_vote(&mut out, &resp.vote);
        }
        Err(InstallSnapshotError::SnapshotMismatch(m)) => {
            out.push(1);
            put_segment(&mut out, &m.expect);
            put_segment(&mut out, &m.got);
        }
    }
    out
}

pub fn read_snapshot_answer(r: &mut Reader<'_>) -> Result<SnapshotAnswer, WireError> {
    match r.u8()? {
        0 => Ok(Ok(InstallSnapshotResponse {
            vote: read_vote(r)?,
        })),
        1 => {
            let expect = read_segment(r)?;
            let got = read_segment(r)?;
            Ok(Err(SnapshotMismatch { expect, got }.into()))
        }
        _ => Err(WireError::BadValue("snapshot answer kind")),
    }
}

/// Decodes `payload` as every RAFT_* payload and log record; whatever
/// is accepted must encode to bytes that decode and encode the same.
/// Panics only on a codec bug (the fuzz target's check).
pub fn fuzz_round_trips(payload: &[u8]) {
    fn check<T>(
        payload: &[u8],
        read: impl Fn(&mut Reader<'_>) -> Result<T, WireError>,
        encode: impl Fn(&T) -> Vec<u8>,
    ) {
        if let Ok(value) = decode(payload, &read) {
            let once = encode(&value);
            let again = decode(&once, &read).expect("a re-encoded payload decodes");
            assert_eq!(encode(&again), once, "encoding is not stable");
        }
    }
    // A request re-encodes at version 2, for its addressee (or any node).
    fn check_request<T>(
        payload: &[u8],
        read: impl Fn(&mut Reader<'_>) -> Result<T, WireError>,
        encode: impl Fn(HostId, &T) -> Vec<u8>,
    ) {
        if let Ok(value) = decode_request(payload, &read) {
            let to = value.to.unwrap_or(HostId([0; 16]));
            let once = encode(to, &value.rpc);
            let again = decode_request(&once, &read).expect("a re-encoded request decodes");
            assert_eq!(again.to, Some(to), "the addressee changed");
            assert_eq!(encode(to, &again.rpc), once, "encoding is not stable");
        }
    }
    check(payload, read_entry, encode_entry);
    check_request(payload, read_vote_request, encode_vote_request);
    check(payload, read_vote_response, encode_vote_response);
    check_request(payload, read_append_request, encode_append_request);
    check(payload, read_append_response, encode_append_response);
    check_request(payload, read_snapshot_request, encode_snapshot_request);
    check(payload, read_snapshot_answer, encode_snapshot_answer);
}

#[cfg(test)]
#[path = "codec_tests.rs"]
mod tests;
