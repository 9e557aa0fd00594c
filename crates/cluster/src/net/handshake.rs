//! The handshake (docs/format/internode.md, section 4): the connecting
//! node sends HELLO, the accepting node answers HELLO_ACK or HELLO_REJECT
//! and closes. These three payloads never change layout, so any two Varve
//! versions can tell each other why they cannot talk.
//!
//! Pure: payload codecs and the acceptor's decision ([`accept_hello`]);
//! the connection code does the I/O. Nothing from a peer is processed
//! before its handshake succeeded.

use std::fmt;
use std::net::SocketAddr;

use super::frame::{FrameHeader, MAX_VERSION, MIN_VERSION};
use super::limits::MAX_FAILURE_MESSAGE_BYTES;
use super::verb::Verb;
use super::wire::truncate_utf8;

/// A node's host id (a UUID's 16 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct HostId(pub [u8; 16]);

impl fmt::Display for HostId {
    /// The UUID form, `8-4-4-4-12` lowercase hex digits, as Cassandra
    /// shows host ids.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, byte) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

/// The cluster id of the metadata log; all zero while a node has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ClusterId(pub [u8; 16]);

impl ClusterId {
    pub fn is_zero(&self) -> bool {
        self.0 == [0; 16]
    }
}

/// Which of a peer's two connections this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConnectionKind {
    /// Payloads of at most `BULK_THRESHOLD_BYTES`; urgent and normal queues.
    Small = 0,
    /// Larger payloads, and background replay.
    Bulk = 1,
}

/// The connecting node's HELLO.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    pub min_version: u8,
    pub max_version: u8,
    pub kind: ConnectionKind,
    pub cluster_name: String,
    pub cluster_id: ClusterId,
    pub host_id: HostId,
    /// The sender's gossip generation.
    pub generation: i64,
    /// Where the sender listens: responses and its own requests go there.
    pub address: SocketAddr,
    /// For logs, e.g. `varve 0.1.0`.
    pub release: String,
}

/// The accepting node's HELLO_ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HelloAck {
    /// The highest version both speak; every later frame uses it.
    pub version: u8,
    pub host_id: HostId,
    pub cluster_id: ClusterId,
    pub generation: i64,
}

/// Why a HELLO was refused, by its wire code (unknown codes are kept).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RejectReason(pub u8);

impl RejectReason {
    pub const NO_COMMON_VERSION: RejectReason = RejectReason(1);
    pub const CLUSTER_NAME_DIFFERS: RejectReason = RejectReason(2);
    pub const CLUSTER_ID_DIFFERS: RejectReason = RejectReason(3);
    pub const SAME_HOST_ID: RejectReason = RejectReason(4);
    pub const MALFORMED_HELLO: RejectReason = RejectReason(5);
    pub const SHUTTING_DOWN: RejectReason = RejectReason(6);
    /// A clear-text connection from a peer this node may only talk to in
    /// TLS (`internode_encryption: dc` or `rack`).
    pub const ENCRYPTION_REQUIRED: RejectReason = RejectReason(7);

    /// Labels of reasons 1 to 7, for counters (index = code - 1).
    pub const LABELS: [&'static str; 7] = [
        "no_common_version",
        "cluster_name_differs",
        "cluster_id_differs",
        "same_host_id",
        "malformed_hello",
        "shutting_down",
        "encryption_required",
    ];

    /// The label of a defined reason.
    pub fn label(self) -> Option<&'static str> {
        let i = usize::from(self.0).checked_sub(1)?;
        RejectReason::LABELS.get(i).copied()
    }
}

impl fmt::Debug for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.label() {
            Some(label) => f.write_str(label),
            None => write!(f, "RejectReason({})", self.0),
        }
    }
}

/// The accepting node's HELLO_REJECT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelloReject {
    pub reason: RejectReason,
    /// For logs; at most [`MAX_FAILURE_MESSAGE_BYTES`].
    pub message: String,
}

impl HelloReject {
    pub fn new(reason: RejectReason, message: impl Into<String>) -> HelloReject {
        let mut message = message.into();
        let keep = truncate_utf8(&message, MAX_FAILURE_MESSAGE_BYTES).len();
        message.truncate(keep);
        HelloReject { reason, message }
    }
}

/// What a node says about itself in the handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalIdentity {
    pub cluster_name: String,
    pub cluster_id: ClusterId,
    pub host_id: HostId,
    pub generation: i64,
    /// The address this node listens on.
    pub address: SocketAddr,
    pub release: String,
    pub min_version: u8,
    pub max_version: u8,
}

impl LocalIdentity {
    /// An identity speaking every version this build speaks.
    pub fn new(cluster_name: &str, host_id: HostId, address: SocketAddr) -> LocalIdentity {
        LocalIdentity {
            cluster_name: cluster_name.to_string(),
            cluster_id: ClusterId::default(),
            host_id,
            generation: 0,
            address,
            release: format!("varve {}", env!("CARGO_PKG_VERSION")),
            min_version: MIN_VERSION,
            max_version: MAX_VERSION,
        }
    }

    /// The HELLO this node sends on a connection of `kind`.
    pub fn hello(&self, kind: ConnectionKind) -> Hello {
        Hello {
            min_version: self.min_version,
            max_version: self.max_version,
            kind,
            cluster_name: self.cluster_name.clone(),
            cluster_id: self.cluster_id,
            host_id: self.host_id,
            generation: self.generation,
            address: self.address,
            release: self.release.clone(),
        }
    }
}

/// The acceptor's decision on the first frame of a connection: a
/// HELLO_ACK and the HELLO it accepts, or the HELLO_REJECT to send.
pub fn accept_hello(
    local: &LocalIdentity,
    header: &FrameHeader,
    payload: &[u8],
    shutting_down: bool,
) -> Result<(HelloAck, Hello), HelloReject> {
    if header.verb != Verb::HELLO || *header != FrameHeader::handshake(Verb::HELLO) {
        return Err(HelloReject::new(
            RejectReason::MALFORMED_HELLO,
            format!("expected a HELLO frame, got {}", header.verb),
        ));
    }
    let hello = Hello::decode(payload).map_err(|e| {
        HelloReject::new(
            RejectReason::MALFORMED_HELLO,
            format!("malformed HELLO: {e}"),
        )
    })?;
    if shutting_down {
        return Err(HelloReject::new(
            RejectReason::SHUTTING_DOWN,
            "the node is shutting down",
        ));
    }
    decide(local, &hello).map(|ack| (ack, hello))
}

/// The acceptor's decision on a well-formed HELLO.
pub fn decide(local: &LocalIdentity, hello: &Hello) -> Result<HelloAck, HelloReject> {
    let low = local.min_version.max(hello.min_version);
    let high = local.max_version.min(hello.max_version);
    if low > high {
        return Err(HelloReject::new(
            RejectReason::NO_COMMON_VERSION,
            format!(
                "versions {}..={} and {}..={} have none in common",
                hello.min_version, hello.max_version, local.min_version, local.max_version
            ),
        ));
    }
    if hello.cluster_name != local.cluster_name {
        return Err(HelloReject::new(
            RejectReason::CLUSTER_NAME_DIFFERS,
            format!(
                "cluster name {:?} is not {:?}",
                hello.cluster_name, local.cluster_name
            ),
        ));
    }
    if !hello.cluster_id.is_zero()
        && !local.cluster_id.is_zero()
        && hello.cluster_id != local.cluster_id
    {
        return Err(HelloReject::new(
            RejectReason::CLUSTER_ID_DIFFERS,
            "same cluster name, different cluster id",
        ));
    }
    if hello.host_id == local.host_id {
        return Err(HelloReject::new(
            RejectReason::SAME_HOST_ID,
            "the peer has this node's host id (a copied data directory?)",
        ));
    }
    Ok(HelloAck {
        version: high,
        host_id: local.host_id,
        cluster_id: local.cluster_id,
        generation: local.generation,
    })
}

/// Why the connecting node gives up on an answer to its HELLO.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    #[error("rejected ({:?}): {}", .0.reason, .0.message)]
    Rejected(HelloReject),
    #[error("malformed answer to HELLO: {0}")]
    Malformed(String),
}

/// The connecting node's reading of the acceptor's answer: the version
/// to speak from now on.
pub fn check_answer(
    local: &LocalIdentity,
    header: &FrameHeader,
    payload: &[u8],
) -> Result<HelloAck, AnswerError> {
    let malformed = |what: String| AnswerError::Malformed(what);
    if *header != FrameHeader::handshake(header.verb) {
        return Err(malformed(format!("bad {} header", header.verb)));
    }
    match header.verb {
        Verb::HELLO_ACK => {
            let ack = HelloAck::decode(payload).map_err(|e| malformed(e.to_string()))?;
            if ack.version < local.min_version || ack.version > local.max_version {
                return Err(malformed(format!("version {} not offered", ack.version)));
            }
            Ok(ack)
        }
        Verb::HELLO_REJECT => match HelloReject::decode(payload) {
            Ok(reject) => Err(AnswerError::Rejected(reject)),
            Err(e) => Err(malformed(e.to_string())),
        },
        other => Err(malformed(format!("{other} instead of HELLO_ACK"))),
    }
}

mod codec;

#[cfg(test)]
mod tests;
