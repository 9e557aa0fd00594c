//! The metadata log's limits, each a named constant tested at N and N+1
//! by the codec that enforces it.

use std::time::Duration;

use crate::net::limits::MAX_FRAME_PAYLOAD_BYTES;

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;

/// At most this many nodes vote on the metadata log; the others are
/// learners (docs/design/cluster.md, section 6).
pub const METADATA_VOTERS_MAX: usize = 5;

/// How long a proposal waits for a leader and a quorum before it fails
/// with `NoQuorum` (Cassandra's `request_timeout` order of magnitude).
pub const METADATA_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The schema's bytes (the caller's canonical encoding).
pub const MAX_SCHEMA_BYTES: usize = 16 * MIB;

/// Nodes in one cluster's metadata.
pub const MAX_NODES: usize = 1024;

/// Tokens of one node (Cassandra's largest `num_tokens` in practice).
pub const MAX_TOKENS_PER_NODE: usize = 1536;

/// A data centre or rack name.
pub const MAX_LOCATION_NAME_BYTES: usize = 256;

/// A rejection's or an error's message carried in a response.
pub const MAX_MESSAGE_BYTES: usize = 1024;

/// One record of the log file (an encoded Raft entry): the schema plus
/// room for the entry's header.
pub const MAX_LOG_RECORD_BYTES: usize = MAX_SCHEMA_BYTES + 64 * KIB;

/// The vote file's and the snapshot file's payload.
pub const MAX_STATE_FILE_BYTES: usize = MAX_SCHEMA_BYTES + 4 * MIB;

/// A RAFT_* or METADATA_PROPOSE payload: what one internode frame carries.
pub const MAX_RAFT_PAYLOAD_BYTES: usize = MAX_FRAME_PAYLOAD_BYTES;

/// Entries in one RAFT_APPEND (openraft's `max_payload_entries`).
pub const MAX_ENTRIES_PER_APPEND: usize = 64;

/// One chunk of a snapshot sent by RAFT_SNAPSHOT.
pub const SNAPSHOT_CHUNK_BYTES: usize = 4 * MIB;

/// Entries applied since the last snapshot before a new one is built.
pub const SNAPSHOT_EVERY_ENTRIES: u64 = 1000;
