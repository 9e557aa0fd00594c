//! EVENT bodies (spec section 4.2.6), pushed on stream -1 to connections
//! that REGISTERed for the event type.

use std::net::SocketAddr;

use crate::error::{ProtocolError, Result};
use crate::primitives::{put_inet, put_string, Reader};
use crate::schema_change::SchemaChange;

/// Event type names used by REGISTER and EVENT.
pub mod event_type {
    pub const TOPOLOGY_CHANGE: &str = "TOPOLOGY_CHANGE";
    pub const STATUS_CHANGE: &str = "STATUS_CHANGE";
    pub const SCHEMA_CHANGE: &str = "SCHEMA_CHANGE";
}

/// A topology change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopologyChangeType {
    NewNode,
    RemovedNode,
    MovedNode,
}

/// A status change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusChangeType {
    Up,
    Down,
}

/// A server-pushed event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    SchemaChange(SchemaChange),
    TopologyChange {
        change: TopologyChangeType,
        addr: SocketAddr,
    },
    StatusChange {
        change: StatusChangeType,
        addr: SocketAddr,
    },
}

impl Event {
    /// Appends the EVENT body for a client of `version`.
    pub fn encode(&self, version: u8, out: &mut Vec<u8>) {
        match self {
            Event::SchemaChange(sc) => {
                put_string(out, event_type::SCHEMA_CHANGE);
                sc.encode(version, out);
            }
            Event::TopologyChange { change, addr } => {
                put_string(out, event_type::TOPOLOGY_CHANGE);
                put_string(
                    out,
                    match change {
                        TopologyChangeType::NewNode => "NEW_NODE",
                        TopologyChangeType::RemovedNode => "REMOVED_NODE",
                        TopologyChangeType::MovedNode => "MOVED_NODE",
                    },
                );
                put_inet(out, addr);
            }
            Event::StatusChange { change, addr } => {
                put_string(out, event_type::STATUS_CHANGE);
                put_string(
                    out,
                    match change {
                        StatusChangeType::Up => "UP",
                        StatusChangeType::Down => "DOWN",
                    },
                );
                put_inet(out, addr);
            }
        }
    }

    /// Reads an EVENT body.
    pub fn decode(r: &mut Reader<'_>) -> Result<Event> {
        let kind = r.read_string()?;
        Ok(match kind.as_str() {
            event_type::SCHEMA_CHANGE => Event::SchemaChange(SchemaChange::decode(r)?),
            event_type::TOPOLOGY_CHANGE => {
                let change = match r.read_string()?.as_str() {
                    "NEW_NODE" => TopologyChangeType::NewNode,
                    "REMOVED_NODE" => TopologyChangeType::RemovedNode,
                    "MOVED_NODE" => TopologyChangeType::MovedNode,
                    other => {
                        return Err(ProtocolError::invalid(format!(
                            "unknown topology change {other:?}"
                        )))
                    }
                };
                Event::TopologyChange {
                    change,
                    addr: r.read_inet()?,
                }
            }
            event_type::STATUS_CHANGE => {
                let change = match r.read_string()?.as_str() {
                    "UP" => StatusChangeType::Up,
                    "DOWN" => StatusChangeType::Down,
                    other => {
                        return Err(ProtocolError::invalid(format!(
                            "unknown status change {other:?}"
                        )))
                    }
                };
                Event::StatusChange {
                    change,
                    addr: r.read_inet()?,
                }
            }
            other => {
                return Err(ProtocolError::invalid(format!(
                    "unknown event type {other:?}"
                )))
            }
        })
    }
}
