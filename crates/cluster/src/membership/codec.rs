//! The GOSSIP payload (docs/format/internode.md, section 6): the three
//! messages of one gossip exchange, as pure bytes in and out.
//!
//! ```text
//! payload    = kind u8, then by kind:
//!   1 SYN      count varint, count × digest
//!   2 SYN_ACK  count varint, count × digest (the versions asked for),
//!              count varint, count × node delta
//!   3 ACK      count varint, count × node delta
//! digest     = host id [16], generation i64, max_version u64       (32 bytes)
//! node delta = host id [16], generation i64, address, from_version u64,
//!              count varint, count × entry
//! entry      = key u8, version u64, value bytes (UTF-8)
//! ```
//!
//! Integers are big-endian, `bytes` is a varint length then the bytes, an
//! address is as in HELLO. A node delta holds every entry of that node
//! whose version is above `from_version` up to its last entry, in strictly
//! increasing version order; the decoder checks this, so the state code
//! can rely on it. Limits: the payload ([`MAX_GOSSIP_PAYLOAD_BYTES`]),
//! digests and deltas per message ([`MAX_GOSSIP_NODES`]), entries per
//! node ([`MAX_GOSSIP_ENTRIES_PER_NODE`]) and a value's length
//! ([`MAX_GOSSIP_VALUE_BYTES`]); past any of them the payload is refused
//! whole. Nothing is reserved from a count read off the wire.

use std::net::SocketAddr;

use super::keys::GossipKey;
use crate::net::handshake::HostId;
use crate::net::limits::{
    MAX_GOSSIP_ENTRIES_PER_NODE, MAX_GOSSIP_NODES, MAX_GOSSIP_PAYLOAD_BYTES, MAX_GOSSIP_VALUE_BYTES,
};
use crate::net::wire::{
    address_len, put_address, put_bytes, put_varint, read_address, varint_len, Reader, WireError,
};

const KIND_SYN: u8 = 1;
const KIND_SYN_ACK: u8 = 2;
const KIND_ACK: u8 = 3;

/// Bytes of one encoded [`Digest`].
pub const DIGEST_BYTES: usize = 16 + 8 + 8;

/// The most a message spends outside its digests and deltas: the kind
/// and two counts of at most [`MAX_GOSSIP_NODES`].
pub const MESSAGE_OVERHEAD_BYTES: usize = 1 + 2 * 2;
const _: () = assert!(MAX_GOSSIP_NODES < 1 << 14, "a count fits two varint bytes");

/// What a node knows of another: its generation and the highest version
/// it holds of that generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest {
    pub host: HostId,
    pub generation: i64,
    pub max_version: u64,
}

/// One key of a node, at the version it was set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: GossipKey,
    pub version: u64,
    pub value: String,
}

/// The entries of one node above `from_version`, in version order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeDelta {
    pub host: HostId,
    pub generation: i64,
    /// Where the node listens for internode messages.
    pub address: SocketAddr,
    /// The receiver is known to hold every version up to this one (0: it
    /// holds nothing of this generation).
    pub from_version: u64,
    pub entries: Vec<Entry>,
}

/// One GOSSIP payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GossipMessage {
    /// Opens an exchange: what the sender knows.
    Syn { digests: Vec<Digest> },
    /// The answer: what the answering node wants (`requests`, as digests
    /// of what it holds) and what it has that the opener lacks.
    SynAck {
        requests: Vec<Digest>,
        deltas: Vec<NodeDelta>,
    },
    /// Closes the exchange with what was asked for; also sent unasked by
    /// a node announcing its shutdown.
    Ack { deltas: Vec<NodeDelta> },
}

/// Bytes of a node delta before its entries.
pub fn delta_header_bytes(address: SocketAddr) -> usize {
    16 + 8 + address_len(address) + 8 + varint_len(MAX_GOSSIP_ENTRIES_PER_NODE as u64)
}

/// Bytes of one entry whose value is `value_len` bytes long.
pub fn entry_bytes(value_len: usize) -> usize {
    1 + 8 + varint_len(value_len as u64) + value_len
}

impl GossipMessage {
    /// The payload. Builders keep within the limits (see
    /// `state::DeltaBuilder`); a message past them encodes, but its
    /// receiver refuses it, so the sender checks the length first.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        match self {
            GossipMessage::Syn { digests } => {
                out.push(KIND_SYN);
                put_digests(&mut out, digests);
            }
            GossipMessage::SynAck { requests, deltas } => {
                out.push(KIND_SYN_ACK);
                put_digests(&mut out, requests);
                put_deltas(&mut out, deltas);
            }
            GossipMessage::Ack { deltas } => {
                out.push(KIND_ACK);
                put_deltas(&mut out, deltas);
            }
        }
        out
    }

    pub fn decode(payload: &[u8]) -> Result<GossipMessage, WireError> {
        if payload.len() > MAX_GOSSIP_PAYLOAD_BYTES {
            return Err(WireError::TooLong {
                what: "gossip payload",
                len: payload.len() as u64,
                max: MAX_GOSSIP_PAYLOAD_BYTES,
            });
        }
        let mut r = Reader::new(payload);
        let message = match r.u8()? {
            KIND_SYN => GossipMessage::Syn {
                digests: read_digests(&mut r)?,
            },
            KIND_SYN_ACK => GossipMessage::SynAck {
                requests: read_digests(&mut r)?,
                deltas: read_deltas(&mut r)?,
            },
            KIND_ACK => GossipMessage::Ack {
                deltas: read_deltas(&mut r)?,
            },
            _ => return Err(WireError::BadValue("gossip message kind")),
        };
        r.finish()?;
        Ok(message)
    }
}

fn put_digests(out: &mut Vec<u8>, digests: &[Digest]) {
    put_varint(out, digests.len() as u64);
    for d in digests {
        out.extend_from_slice(&d.host.0);
        out.extend_from_slice(&d.generation.to_be_bytes());
        out.extend_from_slice(&d.max_version.to_be_bytes());
    }
}

fn put_deltas(out: &mut Vec<u8>, deltas: &[NodeDelta]) {
    put_varint(out, deltas.len() as u64);
    for d in deltas {
        out.extend_from_slice(&d.host.0);
        out.extend_from_slice(&d.generation.to_be_bytes());
        put_address(out, d.address);
        out.extend_from_slice(&d.from_version.to_be_bytes());
        put_varint(out, d.entries.len() as u64);
        for e in &d.entries {
            out.push(e.key.0);
            out.extend_from_slice(&e.version.to_be_bytes());
            put_bytes(out, e.value.as_bytes());
        }
    }
}

/// A count of at most `max`.
fn read_count(r: &mut Reader<'_>, what: &'static str, max: usize) -> Result<usize, WireError> {
    let n = r.varint()?;
    match usize::try_from(n) {
        Ok(n) if n <= max => Ok(n),
        _ => Err(WireError::TooLong { what, len: n, max }),
    }
}

fn read_digests(r: &mut Reader<'_>) -> Result<Vec<Digest>, WireError> {
    let n = read_count(r, "gossip digests", MAX_GOSSIP_NODES)?;
    let mut digests = Vec::new();
    for _ in 0..n {
        digests.push(Digest {
            host: HostId(r.array()?),
            generation: r.i64()?,
            max_version: r.u64()?,
        });
    }
    Ok(digests)
}

fn read_deltas(r: &mut Reader<'_>) -> Result<Vec<NodeDelta>, WireError> {
    let n = read_count(r, "gossip node deltas", MAX_GOSSIP_NODES)?;
    let mut deltas = Vec::new();
    for _ in 0..n {
        deltas.push(read_delta(r)?);
    }
    Ok(deltas)
}

fn read_delta(r: &mut Reader<'_>) -> Result<NodeDelta, WireError> {
    let host = HostId(r.array()?);
    let generation = r.i64()?;
    let address = read_address(r)?;
    let from_version = r.u64()?;
    let n = read_count(r, "gossip entries", MAX_GOSSIP_ENTRIES_PER_NODE)?;
    let mut entries: Vec<Entry> = Vec::new();
    let mut last = from_version;
    for _ in 0..n {
        let key = GossipKey(r.u8()?);
        let version = r.u64()?;
        if version <= last {
            return Err(WireError::BadValue("gossip entry versions"));
        }
        last = version;
        if entries.iter().any(|e| e.key == key) {
            return Err(WireError::BadValue("gossip key repeated"));
        }
        let value = r.bytes("gossip value", MAX_GOSSIP_VALUE_BYTES)?;
        let value = std::str::from_utf8(value)
            .map_err(|_| WireError::BadValue("gossip value"))?
            .to_string();
        entries.push(Entry {
            key,
            version,
            value,
        });
    }
    Ok(NodeDelta {
        host,
        generation,
        address,
        from_version,
        entries,
    })
}

#[cfg(test)]
mod tests;
