//! Shared vocabulary of Varve: CQL types and values, their native-protocol
//! byte encoding, their orderings, Murmur3 tokens, consistency levels, time
//! helpers, and the data model ([`data`]: partitions, rows, cells,
//! clustering, the partition key) that storage, the query layer and the
//! cluster share.
//!
//! Invariants: a [`Value`] always serializes to bytes that
//! [`codec::deserialize`] accepts for its [`CqlType`]; the ordering in
//! [`compare`] is Cassandra's ordering of serialized values of that type.
//! This crate depends on nothing else in the workspace.

pub mod codec;
pub mod compare;
pub mod composite;
pub mod consistency;
pub mod cql_type;
pub mod data;
pub mod data_error;
pub mod error;
pub mod literal;
pub mod marshal;
pub mod time;
pub mod token;
pub mod trace;
pub mod user_type;
pub mod value;

pub use consistency::Consistency;
pub use cql_type::CqlType;
pub use error::{Error, Result};
pub use user_type::{UserType, UserTypeRef};
pub use value::Value;

#[cfg(test)]
mod proptests;
