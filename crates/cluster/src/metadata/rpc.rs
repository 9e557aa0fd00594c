//! METADATA_PROPOSE payloads (docs/format/metadata-log.md, section 5):
//! a node asks another for its cluster status, to add it to the cluster,
//! or to apply a command as the leader.
//!
//! The receiver never forwards: a node that is not the leader answers
//! `NotLeader` with the leader's address if it knows it, and the asking
//! node tries again there. So a request crosses one hop, and the retry
//! loop (and its deadline) stays with the node that began it.

use std::net::SocketAddr;

use super::codec::{encode_command, put_node, read_command, read_node, read_string};
use super::limits::MAX_MESSAGE_BYTES;
use super::state::{Command, NodeRecord};
use crate::net::handshake::{ClusterId, HostId};
use crate::net::wire::{put_address, put_bytes, read_address, truncate_utf8, Reader, WireError};

/// The layout version of METADATA_PROPOSE payloads.
pub const PROPOSE_PAYLOAD_VERSION: u8 = 1;

const STATUS: u8 = 1;
const JOIN: u8 = 2;
const PROPOSE: u8 = 3;

/// A METADATA_PROPOSE request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadataRequest {
    /// Does the receiver belong to a cluster?
    Status,
    /// Add this node as a learner (answered once it has caught up), or,
    /// once its record is listed, as a voter while there are fewer than
    /// the maximum. The node proposes its `Join` itself, in between.
    Join(NodeRecord),
    /// Apply this command (the receiver must be the leader).
    Propose(Command),
}

/// What a node says of itself in answer to `Status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub host_id: HostId,
    /// Zero if it has no cluster yet.
    pub cluster_id: ClusterId,
    pub epoch: u64,
    /// The leader's address, if the node knows it.
    pub leader: Option<SocketAddr>,
}

/// A METADATA_PROPOSE_RSP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadataResponse {
    Status(Status),
    /// Applied at this epoch.
    Applied(u64),
    Stale(u64),
    Rejected(String),
    NotLeader(Option<SocketAddr>),
    Failed(String),
}

pub fn encode_request(request: &MetadataRequest) -> Vec<u8> {
    let mut out = vec![PROPOSE_PAYLOAD_VERSION];
    match request {
        MetadataRequest::Status => out.push(STATUS),
        MetadataRequest::Join(node) => {
            out.push(JOIN);
            put_node(&mut out, node);
        }
        MetadataRequest::Propose(command) => {
            out.push(PROPOSE);
            out.extend_from_slice(&encode_command(command));
        }
    }
    out
}

fn versioned<T>(
    bytes: &[u8],
    read: impl FnOnce(&mut Reader<'_>) -> Result<T, WireError>,
) -> Result<T, WireError> {
    let mut r = Reader::new(bytes);
    if r.u8()? != PROPOSE_PAYLOAD_VERSION {
        return Err(WireError::BadValue("metadata payload version"));
    }
    let value = read(&mut r)?;
    r.finish()?;
    Ok(value)
}

pub fn decode_request(bytes: &[u8]) -> Result<MetadataRequest, WireError> {
    versioned(bytes, |r| {
        Ok(match r.u8()? {
            STATUS => MetadataRequest::Status,
            JOIN => MetadataRequest::Join(read_node(r)?),
            PROPOSE => MetadataRequest::Propose(read_command(r)?),
            _ => return Err(WireError::BadValue("metadata request kind")),
        })
    })
}

fn put_opt_address(out: &mut Vec<u8>, addr: Option<SocketAddr>) {
    match addr {
        Some(addr) => {
            out.push(1);
            put_address(out, addr);
        }
        None => out.push(0),
    }
}

fn read_opt_address(r: &mut Reader<'_>) -> Result<Option<SocketAddr>, WireError> {
    match r.u8()? {
        0 => Ok(None),
        1 => Ok(Some(read_address(r)?)),
        _ => Err(WireError::BadValue("address flag")),
    }
}

pub fn encode_response(response: &MetadataResponse) -> Vec<u8> {
    let mut out = vec![PROPOSE_PAYLOAD_VERSION];
    let text =
        |out: &mut Vec<u8>, s: &str| put_bytes(out, truncate_utf8(s, MAX_MESSAGE_BYTES).as_bytes());
    match response {
        MetadataResponse::Status(s) => {
            out.push(0);
            out.extend_from_slice(&s.host_id.0);
            out.extend_from_slice(&s.cluster_id.0);
            out.extend_from_slice(&s.epoch.to_be_bytes());
            put_opt_address(&mut out, s.leader);
        }
        MetadataResponse::Applied(epoch) => {
            out.push(1);
            out.extend_from_slice(&epoch.to_be_bytes());
        }
        MetadataResponse::Stale(epoch) => {
            out.push(2);
            out.extend_from_slice(&epoch.to_be_bytes());
        }
        MetadataResponse::Rejected(reason) => {
            out.push(3);
            text(&mut out, reason);
        }
        MetadataResponse::NotLeader(leader) => {
            out.push(4);
            put_opt_address(&mut out, *leader);
        }
        MetadataResponse::Failed(reason) => {
            out.push(5);
            text(&mut out, reason);
        }
    }
    out
}

pub fn decode_response(bytes: &[u8]) -> Result<MetadataResponse, WireError> {
    versioned(bytes, |r| {
        Ok(match r.u8()? {
            0 => MetadataResponse::Status(Status {
                host_id: HostId(r.array::<16>()?),
                cluster_id: ClusterId(r.array::<16>()?),
                epoch: r.u64()?,
                leader: read_opt_address(r)?,
            }),
            1 => MetadataResponse::Applied(r.u64()?),
            2 => MetadataResponse::Stale(r.u64()?),
            3 => MetadataResponse::Rejected(read_string(r, "reason", MAX_MESSAGE_BYTES)?),
            4 => MetadataResponse::NotLeader(read_opt_address(r)?),
            5 => MetadataResponse::Failed(read_string(r, "reason", MAX_MESSAGE_BYTES)?),
            _ => return Err(WireError::BadValue("metadata response kind")),
        })
    })
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::metadata::state::tests::node;

    #[test]
    fn requests_and_responses_round_trip() {
        let requests = [
            MetadataRequest::Status,
            MetadataRequest::Join(node(2, &[1, 2])),
            MetadataRequest::Propose(Command::SchemaChange {
                schema: Bytes::from_static(b"s"),
                expected_epoch: 4,
            }),
        ];
        for request in requests {
            assert_eq!(decode_request(&encode_request(&request)), Ok(request));
        }
        let responses = [
            MetadataResponse::Status(Status {
                host_id: HostId([1; 16]),
                cluster_id: ClusterId([2; 16]),
                epoch: 7,
                leader: Some(SocketAddr::from(([127, 0, 0, 1], 7000))),
            }),
            MetadataResponse::Applied(3),
            MetadataResponse::Stale(4),
            MetadataResponse::Rejected("no".to_string()),
            MetadataResponse::NotLeader(None),
            MetadataResponse::Failed("x".to_string()),
        ];
        for response in responses {
            assert_eq!(decode_response(&encode_response(&response)), Ok(response));
        }
    }

    #[test]
    fn messages_are_cut_to_the_limit() {
        let long = MetadataResponse::Rejected("é".repeat(MAX_MESSAGE_BYTES));
        let MetadataResponse::Rejected(cut) = decode_response(&encode_response(&long)).unwrap()
        else {
            panic!("not a rejection");
        };
        assert_eq!(cut.len(), MAX_MESSAGE_BYTES);
        let mut over = vec![PROPOSE_PAYLOAD_VERSION, 3];
        put_bytes(&mut over, "x".repeat(MAX_MESSAGE_BYTES + 1).as_bytes());
        assert!(decode_response(&over).is_err());
    }

    #[test]
    fn another_version_or_trailing_bytes_are_refused() {
        let mut bytes = encode_request(&MetadataRequest::Status);
        bytes[0] = 2;
        assert!(decode_request(&bytes).is_err());
        let mut bytes = encode_request(&MetadataRequest::Status);
        bytes.push(0);
        assert!(decode_request(&bytes).is_err());
    }
}
