//! The types the server exchanges with the query processor.

use bytes::Bytes;
use std::net::IpAddr;
use varve_types::CqlType;

/// A value bound to a marker, as the protocol carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoundValue {
    Null,
    /// v4+: leave the column untouched.
    Unset,
    Value(Bytes),
}

/// Per-request options decoded from QUERY / EXECUTE / BATCH.
#[derive(Debug, Clone)]
pub struct QueryOptions {
    pub values: Vec<BoundValue>,
    /// Names for named values, when the client sent them.
    pub names: Option<Vec<String>>,
    /// Rows per page; `None` or non-positive: no paging.
    pub page_size: Option<i32>,
    pub paging_state: Option<Bytes>,
    /// Client-supplied default timestamp (microseconds).
    pub timestamp: Option<i64>,
    /// v5 per-query keyspace.
    pub keyspace: Option<String>,
    /// v5 "now" override in seconds (for TTL computations).
    pub now_in_seconds: Option<i32>,
    /// The consistency code the client asked for (protocol value).
    pub consistency: u16,
    pub serial_consistency: Option<u16>,
    /// When the request was first run: a request run again on a thread
    /// that may block (after [`crate::QueryError::WouldBlock`]) keeps the
    /// first run's instant, so the wait counts in its latency. `None`: now.
    pub started: Option<std::time::Instant>,
}

impl Default for QueryOptions {
    /// No values, no paging, at ONE (the drivers' usual level; code 0 would
    /// be ANY, which no read accepts).
    fn default() -> Self {
        QueryOptions {
            values: Vec::new(),
            names: None,
            page_size: None,
            paging_state: None,
            timestamp: None,
            keyspace: None,
            now_in_seconds: None,
            consistency: varve_types::Consistency::One.code(),
            serial_consistency: None,
            started: None,
        }
    }
}

/// What a connection carries between requests.
#[derive(Debug, Clone, Default)]
pub struct ClientState {
    /// Set by USE.
    pub keyspace: Option<String>,
    /// The role logged in (PasswordAuthenticator), `None` for anonymous.
    pub user: Option<String>,
    /// The client's address (`system_traces.sessions.client`), when the
    /// connection has one.
    pub address: Option<IpAddr>,
    /// The client asked at STARTUP for ScyllaDB's `SCYLLA_LWT_ADD_METADATA_MARK`
    /// protocol extension: PREPARED marks conditional statements, so that a
    /// driver sends each partition's to one replica (docs/design/paxos.md).
    pub lwt_metadata_mark: bool,
}

/// One column of a result or of a prepared statement's bind variables.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ColumnSpec {
    pub keyspace: String,
    pub table: String,
    pub name: String,
    pub ty: CqlType,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ResultRows {
    /// Shared with the compiled SELECT that made them: no copy per request.
    pub columns: std::sync::Arc<[ColumnSpec]>,
    /// Values already serialized in the protocol's encoding.
    pub rows: Vec<Vec<Option<Bytes>>>,
    /// Set when more pages follow.
    pub paging_state: Option<Bytes>,
    /// A digest of `columns` (v5 result metadata id).
    pub metadata_id: Bytes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaChangeKind {
    Created,
    Updated,
    Dropped,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaChangeTarget {
    Keyspace(String),
    /// (keyspace, table)
    Table(String, String),
    /// (keyspace, user type)
    Type(String, String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaChange {
    pub kind: SchemaChangeKind,
    pub target: SchemaChangeTarget,
}

#[derive(Debug, Clone, PartialEq)]
pub enum QueryResult {
    Void,
    Rows(ResultRows),
    SetKeyspace(String),
    /// The server also sends this as an EVENT to registered connections.
    SchemaChange(SchemaChange),
}

/// The result of one request plus the warnings for the client.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub result: QueryResult,
    pub warnings: Vec<String>,
}

/// What PREPARE returns.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedInfo {
    pub id: Bytes,
    /// Digest of the result columns (v5).
    pub result_metadata_id: Bytes,
    /// One spec per bind marker, in order.
    pub bind: Vec<ColumnSpec>,
    /// Indices into `bind` of the partition key columns, in key order,
    /// when every partition key column is bound by `=` to a marker.
    pub pk_indices: Vec<u16>,
    /// Result columns of a SELECT; empty otherwise.
    pub result: Vec<ColumnSpec>,
    /// A conditional statement (IF ..., or a batch with one): a
    /// lightweight transaction.
    pub is_lwt: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchType {
    Logged,
    Unlogged,
    Counter,
}

/// One statement of a BATCH request.
#[derive(Debug, Clone)]
pub enum BatchItem {
    Query {
        text: String,
        values: Vec<BoundValue>,
    },
    Prepared {
        id: Bytes,
        values: Vec<BoundValue>,
    },
}

/// Facts about this node that system.local / system.peers show.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    pub cluster_name: String,
    pub listen_address: IpAddr,
    /// The internode port (`storage_port`).
    pub listen_port: u16,
    pub rpc_address: IpAddr,
    pub native_port: u16,
    pub data_center: String,
    pub rack: String,
    pub tokens: Vec<i64>,
    pub host_id: [u8; 16],
    /// The Cassandra release we present (drivers pick features by it).
    pub release_version: String,
    pub cql_version: String,
    pub native_protocol_version: String,
}

impl NodeInfo {
    /// One node on 127.0.0.1 as drivers expect a default Cassandra 5.0.4
    /// to describe itself ("Test Cluster", datacenter1, rack1, token 0):
    /// the node of the in-process tests of this crate and the server's.
    pub fn single_local() -> Self {
        NodeInfo {
            cluster_name: "Test Cluster".into(),
            listen_address: IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            listen_port: 7000,
            rpc_address: IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            native_port: 9042,
            data_center: "datacenter1".into(),
            rack: "rack1".into(),
            tokens: vec![0],
            host_id: [7; 16],
            release_version: "5.0.4".into(),
            cql_version: "3.4.7".into(),
            native_protocol_version: "5".into(),
        }
    }
}
