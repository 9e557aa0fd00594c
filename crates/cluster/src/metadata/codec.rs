//! Bytes of the metadata's own types: [`NodeRecord`], [`Command`] and
//! [`ClusterMetadata`] (docs/format/metadata-log.md, section 2). The
//! log's entries, the snapshot file and METADATA_PROPOSE all carry them.
//!
//! Built on [`crate::net::wire`]: big-endian integers, LEB128 varints,
//! length-prefixed byte strings, and a strict reader that never panics
//! and never reserves memory from a length it read. Every count and
//! length is checked against its limit in [`super::limits`].

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use super::limits::{MAX_LOCATION_NAME_BYTES, MAX_NODES, MAX_SCHEMA_BYTES, MAX_TOKENS_PER_NODE};
use super::state::{ClusterMetadata, Command, NodeRecord, NodeState, SchemaVersion};
use crate::net::handshake::{ClusterId, HostId};
use crate::net::limits::MAX_CLUSTER_NAME_BYTES;
use crate::net::wire::{put_address, put_bytes, put_varint, read_address, Reader, WireError};

/// The layout version of an encoded [`ClusterMetadata`].
pub const METADATA_FORMAT_VERSION: u8 = 1;

const CREATE_CLUSTER: u8 = 1;
const JOIN: u8 = 2;
const SCHEMA_CHANGE: u8 = 3;
const SET_VOTERS: u8 = 4;
const LEAVE: u8 = 5;

/// Reads a count written by `put_varint`, refusing one above `max`.
pub fn read_count(r: &mut Reader<'_>, what: &'static str, max: usize) -> Result<usize, WireError> {
    let len = r.varint()?;
    match usize::try_from(len) {
        Ok(n) if n <= max => Ok(n),
        _ => Err(WireError::TooLong { what, len, max }),
    }
}

/// A UTF-8 string of at most `max` bytes.
pub fn read_string(
    r: &mut Reader<'_>,
    what: &'static str,
    max: usize,
) -> Result<String, WireError> {
    let bytes = r.bytes(what, max)?;
    String::from_utf8(bytes.to_vec()).map_err(|_| WireError::BadValue(what))
}

pub fn read_host(r: &mut Reader<'_>) -> Result<HostId, WireError> {
    Ok(HostId(r.array::<16>()?))
}

pub fn put_hosts(out: &mut Vec<u8>, hosts: &BTreeSet<HostId>) {
    put_varint(out, hosts.len() as u64);
    for host in hosts {
        out.extend_from_slice(&host.0);
    }
}

/// A set of host ids; repeated ones are refused.
pub fn read_hosts(r: &mut Reader<'_>, what: &'static str) -> Result<BTreeSet<HostId>, WireError> {
    let count = read_count(r, what, MAX_NODES)?;
    let mut hosts = BTreeSet::new();
    for _ in 0..count {
        if !hosts.insert(read_host(r)?) {
            return Err(WireError::BadValue(what));
        }
    }
    Ok(hosts)
}

pub fn put_node(out: &mut Vec<u8>, node: &NodeRecord) {
    out.extend_from_slice(&node.host_id.0);
    put_address(out, node.storage_addr);
    match node.rpc_addr {
        Some(addr) => {
            out.push(1);
            put_address(out, addr);
        }
        None => out.push(0),
    }
    put_bytes(out, node.dc.as_bytes());
    put_bytes(out, node.rack.as_bytes());
    out.push(node.state.code());
    put_varint(out, node.tokens.len() as u64);
    for token in &node.tokens {
        out.extend_from_slice(&token.to_be_bytes());
    }
}

pub fn read_node(r: &mut Reader<'_>) -> Result<NodeRecord, WireError> {
    let host_id = read_host(r)?;
    let storage_addr = read_address(r)?;
    let rpc_addr = match r.u8()? {
        0 => None,
        1 => Some(read_address(r)?),
        _ => return Err(WireError::BadValue("rpc address flag")),
    };
    let dc = read_string(r, "data centre", MAX_LOCATION_NAME_BYTES)?;
    let rack = read_string(r, "rack", MAX_LOCATION_NAME_BYTES)?;
    let state = NodeState::from_code(r.u8()?).ok_or(WireError::BadValue("node state"))?;
    let count = read_count(r, "tokens", MAX_TOKENS_PER_NODE)?;
    let mut tokens = Vec::with_capacity(count);
    for _ in 0..count {
        tokens.push(r.i64()?);
    }
    Ok(NodeRecord {
        host_id,
        storage_addr,
        rpc_addr,
        dc,
        rack,
        tokens,
        state,
    })
}

pub fn encode_command(command: &Command) -> Vec<u8> {
    let mut out = Vec::new();
    match command {
        Command::CreateCluster {
            cluster_name,
            cluster_id,
            node,
        } => {
            out.push(CREATE_CLUSTER);
            put_bytes(&mut out, cluster_name.as_bytes());
            out.extend_from_slice(&cluster_id.0);
            put_node(&mut out, node);
        }
        Command::Join {
            node,
            expected_epoch,
        } => {
            out.push(JOIN);
            out.extend_from_slice(&expected_epoch.to_be_bytes());
            put_node(&mut out, node);
        }
        Command::SchemaChange {
            schema,
            expected_epoch,
        } => {
            out.push(SCHEMA_CHANGE);
            out.extend_from_slice(&expected_epoch.to_be_bytes());
            put_bytes(&mut out, schema);
        }
        Command::SetVoters { voters } => {
            out.push(SET_VOTERS);
            put_hosts(&mut out, voters);
        }
        Command::Leave {
            host,
            expected_epoch,
        } => {
            out.push(LEAVE);
            out.extend_from_slice(&expected_epoch.to_be_bytes());
            out.extend_from_slice(&host.0);
        }
    }
    out
}

/// Reads a command from `r` (more fields may follow it).
pub fn read_command(r: &mut Reader<'_>) -> Result<Command, WireError> {
    Ok(match r.u8()? {
        CREATE_CLUSTER => Command::CreateCluster {
            cluster_name: read_string(r, "cluster name", MAX_CLUSTER_NAME_BYTES)?,
            cluster_id: ClusterId(r.array::<16>()?),
            node: read_node(r)?,
        },
        JOIN => {
            let expected_epoch = r.u64()?;
            Command::Join {
                node: read_node(r)?,
                expected_epoch,
            }
        }
        SCHEMA_CHANGE => {
            let expected_epoch = r.u64()?;
            let schema = Bytes::copy_from_slice(r.bytes("schema", MAX_SCHEMA_BYTES)?);
            Command::SchemaChange {
                schema,
                expected_epoch,
            }
        }
        SET_VOTERS => Command::SetVoters {
            voters: read_hosts(r, "voters")?,
        },
        LEAVE => {
            let expected_epoch = r.u64()?;
            Command::Leave {
                host: HostId(r.array::<16>()?),
                expected_epoch,
            }
        }
        _ => return Err(WireError::BadValue("command")),
    })
}

pub fn decode_command(bytes: &[u8]) -> Result<Command, WireError> {
    let mut r = Reader::new(bytes);
    let command = read_command(&mut r)?;
    r.finish()?;
    Ok(command)
}

pub fn encode_metadata(m: &ClusterMetadata) -> Vec<u8> {
    let mut out = Vec::with_capacity(m.schema.len() + 256);
    out.push(METADATA_FORMAT_VERSION);
    out.extend_from_slice(&m.epoch.to_be_bytes());
    put_bytes(&mut out, m.cluster_name.as_bytes());
    out.extend_from_slice(&m.cluster_id.0);
    put_varint(&mut out, m.nodes.len() as u64);
    for node in m.nodes.values() {
        put_node(&mut out, node);
    }
    put_hosts(&mut out, &m.voters);
    put_bytes(&mut out, &m.schema);
    out.extend_from_slice(&m.schema_version.0);
    out
}

/// Reads metadata written by [`encode_metadata`]; nodes must come in host
/// id order, once each, and the schema's digest must match its bytes.
pub fn decode_metadata(bytes: &[u8]) -> Result<ClusterMetadata, WireError> {
    let mut r = Reader::new(bytes);
    if r.u8()? != METADATA_FORMAT_VERSION {
        return Err(WireError::BadValue("metadata format version"));
    }
    let epoch = r.u64()?;
    let cluster_name = read_string(&mut r, "cluster name", MAX_CLUSTER_NAME_BYTES)?;
    let cluster_id = ClusterId(r.array::<16>()?);
    let count = read_count(&mut r, "nodes", MAX_NODES)?;
    let mut nodes = BTreeMap::new();
    for _ in 0..count {
        let node = read_node(&mut r)?;
        if nodes
            .keys()
            .next_back()
            .is_some_and(|last| *last >= node.host_id)
        {
            return Err(WireError::BadValue("node order"));
        }
        nodes.insert(node.host_id, node);
    }
    let voters = read_hosts(&mut r, "voters")?;
    let schema = Bytes::copy_from_slice(r.bytes("schema", MAX_SCHEMA_BYTES)?);
    let schema_version = SchemaVersion(r.array::<16>()?);
    r.finish()?;
    if schema_version != SchemaVersion::of(&schema) {
        return Err(WireError::BadValue("schema version"));
    }
    Ok(ClusterMetadata {
        epoch,
        cluster_name,
        cluster_id,
        nodes,
        voters,
        schema,
        schema_version,
    })
}

#[cfg(test)]
#[path = "codec_tests.rs"]
mod tests;
