//! Round trips of every openraft message and entry kind, the limits at
//! N and N+1, and arbitrary bytes decoded without a panic.

use std::net::SocketAddr;

use bytes::Bytes;
use openraft::error::SnapshotMismatch;
use proptest::prelude::*;

use super::*;
use crate::metadata::state::tests::node;
use crate::metadata::state::Command;
use crate::net::handshake::HostId;

fn host(n: u8) -> HostId {
    HostId([n; 16])
}

/// A request for host 9 as the receiver reads it.
fn request<T>(
    bytes: Vec<u8>,
    read: impl FnOnce(&mut Reader<'_>) -> Result<T, WireError>,
) -> Result<T, WireError> {
    let addressed = decode_request(&bytes, read)?;
    assert_eq!(addressed.to, Some(host(9)));
    Ok(addressed.rpc)
}

fn log_id(term: u64, n: u8, index: u64) -> LogId {
    LogId::new(CommittedLeaderId::new(term, host(n)), index)
}

fn membership() -> Membership {
    let addr = |n: u8| Peer {
        addr: SocketAddr::from(([127, 0, 0, n], 7000)),
    };
    let nodes = BTreeMap::from([(host(1), addr(1)), (host(2), addr(2)), (host(3), addr(3))]);
    Membership::new(vec![BTreeSet::from([host(1), host(2)])], nodes)
}

fn entries() -> Vec<Entry> {
    vec![
        Entry {
            log_id: log_id(1, 1, 1),
            payload: EntryPayload::Blank,
        },
        Entry {
            log_id: log_id(1, 1, 2),
            payload: EntryPayload::Normal(Command::Join {
                node: node(2, &[3]),
                expected_epoch: 1,
            }),
        },
        Entry {
            log_id: log_id(2, 2, 3),
            payload: EntryPayload::Membership(membership()),
        },
    ]
}

#[test]
fn entries_round_trip() {
    for entry in entries() {
        let back = decode_entry(&encode_entry(&entry)).unwrap();
        assert_eq!(back, entry);
    }
}

#[test]
fn votes_round_trip() {
    let mut vote = Vote::new(7, host(3));
    vote.committed = true;
    let req = VoteRequest::new(vote, Some(log_id(6, 2, 40)));
    let back = request(encode_vote_request(host(9), &req), read_vote_request).unwrap();
    assert_eq!(back, req);
    let resp = VoteResponse {
        vote,
        vote_granted: true,
        last_log_id: None,
    };
    let back = decode(&encode_vote_response(&resp), read_vote_response).unwrap();
    assert_eq!(back, resp);
}

#[test]
fn appends_round_trip() {
    let req = AppendEntriesRequest::<TypeConfig> {
        vote: Vote::new_committed(2, host(1)),
        prev_log_id: Some(log_id(1, 1, 0)),
        entries: entries(),
        leader_commit: None,
    };
    let back = request(encode_append_request(host(9), &req), read_append_request).unwrap();
    assert_eq!(back.vote, req.vote);
    assert_eq!(back.prev_log_id, req.prev_log_id);
    assert_eq!(back.leader_commit, req.leader_commit);
    assert_eq!(back.entries, req.entries);
    let responses = [
        AppendEntriesResponse::Success,
        AppendEntriesResponse::PartialSuccess(Some(log_id(1, 1, 2))),
        AppendEntriesResponse::PartialSuccess(None),
        AppendEntriesResponse::Conflict,
        AppendEntriesResponse::HigherVote(Vote::new(9, host(2))),
    ];
    for resp in responses {
        let back = decode(&encode_append_response(&resp), read_append_response).unwrap();
        assert_eq!(back, resp);
    }
}

#[test]
fn snapshots_round_trip() {
    let meta = SnapshotMeta {
        last_log_id: Some(log_id(2, 2, 30)),
        last_membership: StoredMembership::new(Some(log_id(2, 2, 3)), membership()),
        snapshot_id: "2-30-1".to_string(),
    };
    let req = InstallSnapshotRequest::<TypeConfig> {
        vote: Vote::new_committed(2, host(2)),
        meta: meta.clone(),
        offset: 4,
        data: vec![1, 2, 3],
        done: true,
    };
    let back = request(
        encode_snapshot_request(host(9), &req),
        read_snapshot_request,
    )
    .unwrap();
    assert_eq!(back.meta, meta);
    assert_eq!(
        (back.offset, back.data, back.done),
        (4, vec![1, 2, 3], true)
    );
    let answers: [SnapshotAnswer; 2] = [
        Ok(InstallSnapshotResponse {
            vote: Vote::new(3, host(1)),
        }),
        Err(SnapshotMismatch {
            expect: SnapshotSegmentId {
                id: "a".to_string(),
                offset: 0,
            },
            got: SnapshotSegmentId {
                id: "b".to_string(),
                offset: 9,
            },
        }
        .into()),
    ];
    for answer in answers {
        let back = decode(&encode_snapshot_answer(&answer), read_snapshot_answer).unwrap();
        assert_eq!(back, answer);
    }
}

#[test]
fn a_voter_without_an_address_is_refused() {
    let mut out = Vec::new();
    let voters_only = Membership::new(vec![BTreeSet::from([host(1)])], ());
    put_membership(&mut out, &voters_only);
    // openraft filled in a default address; strip the nodes to none.
    let mut bytes = Vec::new();
    put_varint(&mut bytes, 1);
    put_varint(&mut bytes, 1);
    bytes.extend_from_slice(&host(1).0);
    put_varint(&mut bytes, 0);
    assert!(read_membership(&mut Reader::new(&bytes)).is_err());
}

#[test]
fn entries_out_of_sequence_are_refused() {
    let append = |prev: Option<LogId>, entries: Vec<Entry>| AppendEntriesRequest::<TypeConfig> {
        vote: Vote::new_committed(2, host(1)),
        prev_log_id: prev,
        entries,
        leader_commit: None,
    };
    let decodes = |req: &AppendEntriesRequest<TypeConfig>| {
        request(encode_append_request(host(9), req), read_append_request).is_ok()
    };
    let all = entries();
    assert!(decodes(&append(Some(log_id(1, 1, 0)), all.clone())));
    // Not after the previous entry.
    assert!(!decodes(&append(Some(log_id(1, 1, 1)), all.clone())));
    assert!(!decodes(&append(None, all.clone())));
    // A gap.
    let gap = vec![all[0].clone(), all[2].clone()];
    assert!(!decodes(&append(Some(log_id(1, 1, 0)), gap)));
    // A term going back.
    let mut back = all.clone();
    back[2].log_id = log_id(0, 1, 3);
    assert!(!decodes(&append(Some(log_id(1, 1, 0)), back)));
}

#[test]
fn entries_per_append_at_the_limit_and_over() {
    let blank = |i: u64| Entry {
        log_id: log_id(1, 1, i),
        payload: EntryPayload::Blank,
    };
    let mut req = AppendEntriesRequest::<TypeConfig> {
        vote: Vote::new_committed(1, host(1)),
        prev_log_id: None,
        entries: (0..MAX_ENTRIES_PER_APPEND as u64).map(blank).collect(),
        leader_commit: None,
    };
    assert!(request(encode_append_request(host(9), &req), read_append_request).is_ok());
    req.entries.push(blank(MAX_ENTRIES_PER_APPEND as u64));
    assert!(request(encode_append_request(host(9), &req), read_append_request).is_err());
}

#[test]
fn payload_size_at_the_limit_and_over() {
    assert!(payload_fits(MAX_RAFT_PAYLOAD_BYTES));
    assert!(!payload_fits(MAX_RAFT_PAYLOAD_BYTES + 1));
}

#[test]
fn another_version_is_refused() {
    let mut bytes = encode_entry(&entries()[0]);
    bytes[0] = RAFT_PAYLOAD_VERSION + 1;
    assert!(decode_entry(&bytes).is_err());
    let schema = Command::SchemaChange {
        schema: Bytes::from_static(b"x"),
        expected_epoch: 0,
    };
    let entry = Entry {
        log_id: log_id(1, 1, 1),
        payload: EntryPayload::Normal(schema),
    };
    let mut bytes = encode_entry(&entry);
    bytes.push(0);
    assert!(decode_entry(&bytes).is_err());
}

#[test]
fn a_request_names_its_receiver_and_one_without_a_name_is_still_read() {
    let req = VoteRequest::new(Vote::new(7, host(3)), Some(log_id(6, 2, 40)));
    let bytes = encode_vote_request(host(4), &req);
    assert_eq!(bytes[0], RAFT_REQUEST_VERSION);
    let read = decode_request(&bytes, read_vote_request).unwrap();
    assert_eq!((read.to, read.rpc), (Some(host(4)), req.clone()));
    // Version 1, from a node of an earlier build: the same request, no name.
    let mut old = vec![RAFT_PAYLOAD_VERSION];
    old.extend_from_slice(&bytes[17..]);
    let read = decode_request(&old, read_vote_request).unwrap();
    assert_eq!((read.to, read.rpc), (None, req));
    let mut other = bytes.clone();
    other[0] = RAFT_REQUEST_VERSION + 1;
    assert!(decode_request(&other, read_vote_request).is_err());
    // Cut inside the host id.
    assert!(decode_request(&bytes[..10], read_vote_request).is_err());
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = decode_entry(&bytes);
        let _ = decode_request(&bytes, read_append_request);
        let _ = decode(&bytes, read_append_response);
        let _ = decode_request(&bytes, read_vote_request);
        let _ = decode(&bytes, read_vote_response);
        let _ = decode_request(&bytes, read_snapshot_request);
        let _ = decode(&bytes, read_snapshot_answer);
    }
}
