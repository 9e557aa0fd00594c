//! Every metric name the workspace records into, as constants, so the
//! server, query and storage crates use the same strings; plus [`CATALOG`],
//! which gives each its kind, labels, HELP text and the Cassandra metric it
//! mirrors. `docs/design/metrics.md` carries the same table for readers (a
//! test checks every name here appears there).
//!
//! Names are given without the `varve_` prefix and without the suffix the
//! kind adds (`_total` for counters and meters, `_seconds` for latencies).

use crate::registry::Kind;

// ---- Labels and their values ----
pub const LABEL_OPERATION: &str = "operation";
pub const LABEL_KEYSPACE: &str = "keyspace";
pub const LABEL_TABLE: &str = "table";
pub const LABEL_LEVEL: &str = "level";
pub const LABEL_OPCODE: &str = "opcode";
/// `operation` values, one per Cassandra ClientRequest scope.
pub const OP_READ: &str = "read";
pub const OP_WRITE: &str = "write";
pub const OP_CAS_READ: &str = "cas_read";
pub const OP_CAS_WRITE: &str = "cas_write";
pub const OP_RANGE_SLICE: &str = "range_slice";

// ---- Client requests (coordinator), label `operation` ----
pub const CLIENT_REQUEST_LATENCY: &str = "client_request_latency";
pub const CLIENT_REQUEST_TIMEOUTS: &str = "client_request_timeouts";
pub const CLIENT_REQUEST_UNAVAILABLES: &str = "client_request_unavailables";
pub const CLIENT_REQUEST_FAILURES: &str = "client_request_failures";

// ---- Lightweight transactions, label `operation` (cas_read / cas_write) ----
pub const CAS_CONTENTION: &str = "cas_contention";
pub const CAS_UNFINISHED_COMMITS: &str = "cas_unfinished_commits";
pub const CAS_CONDITION_NOT_MET: &str = "cas_condition_not_met";
pub const CAS_UNKNOWN_RESULTS: &str = "cas_unknown_results";
pub const CAS_BACKOFF: &str = "cas_backoff";
pub const PAXOS_PHASE_LATENCY: &str = "paxos_phase_latency";
pub const PAXOS_ROUND_STATEMENTS: &str = "paxos_round_statements";
pub const CAS_FORWARDED: &str = "cas_forwarded";
pub const CAS_FORWARDS_SERVED: &str = "cas_forwards_served";
pub const CAS_FORWARDS_REFUSED: &str = "cas_forwards_refused";
pub const CAS_TWO_ROUND: &str = "cas_two_round";
pub const LABEL_OUTCOME: &str = "outcome";
pub const OUTCOME_APPLIED: &str = "applied";
pub const OUTCOME_CHECKED: &str = "checked";
pub const OUTCOME_FALLBACK: &str = "fallback";
pub const OUTCOME_UNKNOWN: &str = "unknown";
pub const CAS_CHECK_REFUSALS: &str = "cas_check_refusals";
pub const LABEL_REASON: &str = "reason";
pub const LABEL_PHASE: &str = "phase";
pub const PHASE_PREPARE: &str = "prepare";
pub const PHASE_PROPOSE: &str = "propose";
pub const PHASE_COMMIT: &str = "commit";

// ---- Compaction (node-wide) ----
pub const COMPACTION_PENDING_TASKS: &str = "compaction_pending_tasks";
pub const COMPACTION_COMPLETED_TASKS: &str = "compaction_completed_tasks";
pub const COMPACTION_BYTES_COMPACTED: &str = "compaction_bytes_compacted";
pub const COMPACTIONS_COMPLETED: &str = "compactions_completed";
pub const COMMITLOG_BYTES_WRITTEN: &str = "commitlog_bytes_written";
pub const COMMITLOG_SEGMENTS_PREALLOCATED: &str = "commitlog_segments_preallocated";
pub const COMMITLOG_SEGMENTS_NOT_PREALLOCATED: &str = "commitlog_segments_not_preallocated";
pub const RUNTIME_STALLS: &str = "runtime_stalls";
pub const RUNTIME_STALL_MICROS: &str = "runtime_stall_micros";

// ---- Per table, labels `keyspace`, `table` (and `level`) ----
pub const TABLE_LIVE_SSTABLES: &str = "table_live_sstables";
pub const TABLE_SSTABLES_PER_LEVEL: &str = "table_sstables_per_level";
pub const TABLE_SSTABLE_BYTES_PER_LEVEL: &str = "table_sstable_bytes_per_level";
pub const TABLE_LIVE_DISK_SPACE_USED_BYTES: &str = "table_live_disk_space_used_bytes";
pub const TABLE_PENDING_COMPACTIONS: &str = "table_pending_compactions";
pub const TABLE_TOMBSTONES_SCANNED: &str = "table_tombstones_scanned";
pub const TABLE_SSTABLES_PER_READ: &str = "table_sstables_per_read";
pub const TABLE_BLOOM_FILTER_FALSE_POSITIVE_RATIO: &str = "table_bloom_filter_false_positive_ratio";
pub const TABLE_DROPPABLE_TOMBSTONE_RATIO: &str = "table_droppable_tombstone_ratio";

// ---- Native transport (today's crates/server/src/metrics.rs names) ----
pub const CONNECTIONS_OPEN: &str = "connections_open";
pub const CONNECTIONS: &str = "connections";
pub const CONNECTIONS_REJECTED: &str = "connections_rejected";
pub const REQUESTS: &str = "requests";
pub const ERROR_RESPONSES: &str = "error_responses";
pub const OVERLOADED_RESPONSES: &str = "overloaded_responses";
pub const PROTOCOL_ERRORS: &str = "protocol_errors";

// ---- The read stage and the chunk cache ----
pub const READ_STAGE_ACTIVE: &str = "read_stage_active";
pub const COMPACTION_THROUGHPUT_SHARE: &str = "compaction_throughput_share";
pub const READ_STAGE_PENDING: &str = "read_stage_pending";
pub const READ_STAGE_COMPLETED: &str = "read_stage_completed";
pub const READ_STAGE_CANCELLED: &str = "read_stage_cancelled";
pub const READ_STAGE_DIRECT: &str = "read_stage_direct";
pub const CHUNK_CACHE_HITS: &str = "chunk_cache_hits";
pub const CHUNK_CACHE_MISSES: &str = "chunk_cache_misses";
pub const CHUNK_CACHE_BYTES: &str = "chunk_cache_bytes";
pub const CHUNK_CACHE_CAPACITY_BYTES: &str = "chunk_cache_capacity_bytes";
pub const CHUNK_CACHE_ENTRIES: &str = "chunk_cache_entries";
pub const CHUNK_CACHE_SLOT_BYTES: &str = "chunk_cache_slot_bytes";

// ---- The cluster's coordinator (node-wide) ----
pub const LABEL_PLACEMENT: &str = "placement";
/// `placement` values: the coordinator held a replica of the key, or not.
pub const PLACEMENT_REPLICA: &str = "replica";
pub const PLACEMENT_NOT_REPLICA: &str = "not_replica";
pub const COORDINATOR_REQUESTS: &str = "coordinator_requests";
pub const SPECULATIVE_RETRIES: &str = "speculative_retries";
pub const READ_DIGEST_MISMATCHES: &str = "read_digest_mismatches";
pub const READ_REPAIRS_BLOCKING: &str = "read_repairs_blocking";
pub const SHORT_READ_ROUNDS: &str = "short_read_protection_requests";
pub const HINTS_CREATED: &str = "hints_created";
pub const HINTS_REPLAYED: &str = "hints_replayed";
pub const HINTS_DROPPED: &str = "hints_dropped";
pub const STREAMING_BYTES: &str = "streaming_bytes";
pub const STREAMING_FILES: &str = "streaming_files";
pub const STREAMS_ACTIVE: &str = "streams_active";
pub const REPAIR_RANGES_OUT_OF_SYNC: &str = "repair_ranges_out_of_sync";
pub const REPAIR_BYTES: &str = "repair_bytes";
/// `direction` of streamed bytes.
pub const LABEL_DIRECTION: &str = "direction";
pub const DIRECTION_IN: &str = "in";
pub const DIRECTION_OUT: &str = "out";
/// `operation` of a stream in flight.
pub const LABEL_STREAM_OPERATION: &str = "stream_operation";

// ---- The library itself ----
pub const METRICS_REGISTRATION_CONFLICTS: &str = "metrics_registration_conflicts_total";

/// One metric: what it is, and what it mirrors in Cassandra.
#[derive(Debug, Clone, Copy)]
pub struct MetricDef {
    pub name: &'static str,
    pub kind: Kind,
    pub labels: &'static [&'static str],
    pub help: &'static str,
    /// The Cassandra metric (JMX `type=…,name=…` or tool output) mirrored.
    pub cassandra: &'static str,
}

const OP: &[&str] = &[LABEL_OPERATION];
const TABLE: &[&str] = &[LABEL_KEYSPACE, LABEL_TABLE];
const LEVEL: &[&str] = &[LABEL_KEYSPACE, LABEL_TABLE, LABEL_LEVEL];

const fn def(
    name: &'static str,
    kind: Kind,
    labels: &'static [&'static str],
    help: &'static str,
    cassandra: &'static str,
) -> MetricDef {
    MetricDef {
        name,
        kind,
        labels,
        help,
        cassandra,
    }
}

/// Every metric of [`names`](self), in the order of the design doc.
#[rustfmt::skip]
pub const CATALOG: &[MetricDef] = &[
    def(CLIENT_REQUEST_LATENCY, Kind::Latency, OP,
        "Coordinator latency of client requests, by operation.",
        "ClientRequest Latency (scopes Read, Write, CASRead, CASWrite, RangeSlice)"),
    def(CLIENT_REQUEST_TIMEOUTS, Kind::Counter, OP,
        "Client requests that timed out waiting for replicas.",
        "ClientRequest Timeouts"),
    def(CLIENT_REQUEST_UNAVAILABLES, Kind::Counter, OP,
        "Client requests refused: not enough live replicas.",
        "ClientRequest Unavailables"),
    def(CLIENT_REQUEST_FAILURES, Kind::Counter, OP,
        "Client requests that failed on replicas.",
        "ClientRequest Failures"),
    def(CAS_CONTENTION, Kind::Histogram, OP,
        "Paxos attempts lost to contention per LWT request.",
        "ClientRequest ContentionHistogram (CASRead, CASWrite)"),
    def(CAS_UNFINISHED_COMMITS, Kind::Counter, OP,
        "LWTs that found an in-progress Paxos round and finished it.",
        "ClientRequest UnfinishedCommit"),
    def(CAS_CONDITION_NOT_MET, Kind::Counter, OP,
        "Conditional writes whose IF condition was false.",
        "ClientRequest ConditionNotMet (CASWrite)"),
    def(CAS_UNKNOWN_RESULTS, Kind::Counter, OP,
        "LWTs whose outcome the coordinator could not know (a proposal accepted by too few).",
        "ClientRequest UnknownResult (CASWrite)"),
    def(CAS_BACKOFF, Kind::Latency, OP,
        "Time an LWT waited after losing a Paxos round, per wait.",
        ""),
    def(PAXOS_ROUND_STATEMENTS, Kind::Histogram, &[],
        "Conditional statements one Paxos round decided (a partition's queue on its coordinator).",
        ""),
    def(CAS_FORWARDED, Kind::Counter, &[],
        "Conditional statements of a contended partition this node handed to the partition's home replica.",
        ""),
    def(CAS_FORWARDS_SERVED, Kind::Counter, &[],
        "Conditional statements other coordinators handed to this node as their partition's home replica.",
        ""),
    def(CAS_FORWARDS_REFUSED, Kind::Counter, &[],
        "Conditional statements whose partition's home refused them before running them (it could not rebuild the statement, or does not know the verb): this node ran them itself.",
        ""),
    def(CAS_TWO_ROUND, Kind::Counter, &[LABEL_OUTCOME],
        "Conditional statements that tried the two-round path (a local promise and checked proposals): applied, checked (nothing to write), fallback (to a full round, nothing stored) or unknown.",
        ""),
    def(CAS_CHECK_REFUSALS, Kind::Counter, &[LABEL_REASON],
        "Checked proposals other replicas refused, by the check that failed (promise, unfinished, commit, data).",
        ""),
    def(PAXOS_PHASE_LATENCY, Kind::Latency, &[LABEL_PHASE],
        "Paxos rounds' phases as the coordinator waited for them (prepare with its read, propose, commit).",
        ""),
    def(COMPACTION_PENDING_TASKS, Kind::Gauge, &[],
        "Compactions waiting to run, estimated.",
        "Compaction PendingTasks"),
    def(COMPACTION_COMPLETED_TASKS, Kind::Counter, &[],
        "Compaction tasks finished.",
        "Compaction CompletedTasks"),
    def(COMPACTION_BYTES_COMPACTED, Kind::Counter, &[],
        "Bytes read by compactions.",
        "Compaction BytesCompacted"),
    def(RUNTIME_STALLS, Kind::Counter, &[],
        "Times the node's runtime woke a 10 ms timer more than 10 ms late: every worker busy or blocked (the pause analogue of a JVM's GC count).",
        ""),
    def(RUNTIME_STALL_MICROS, Kind::Counter, &[],
        "Microseconds those wake-ups were late, summed (the analogue of GC pause time).",
        ""),
    def(COMMITLOG_BYTES_WRITTEN, Kind::Counter, &[],
        "Bytes the commitlog wrote to its segment files (its disk throughput, as a rate).",
        ""),
    def(COMPACTIONS_COMPLETED, Kind::Meter, &[],
        "Compactions completed (a meter: rates in system_views).",
        "Compaction TotalCompactionsCompleted"),
    def(TABLE_LIVE_SSTABLES, Kind::Gauge, TABLE,
        "SSTables in use by the table.",
        "Table LiveSSTableCount"),
    def(TABLE_SSTABLES_PER_LEVEL, Kind::Gauge, LEVEL,
        "SSTables per level (level 0 holds the unleveled ones).",
        "Table SSTablesPerLevel (one array; here one series per level)"),
    def(TABLE_SSTABLE_BYTES_PER_LEVEL, Kind::Gauge, LEVEL,
        "SSTable bytes per level.",
        "nodetool tablestats per-level bytes"),
    def(TABLE_LIVE_DISK_SPACE_USED_BYTES, Kind::Gauge, TABLE,
        "Disk space used by live sstables, in bytes.",
        "Table LiveDiskSpaceUsed"),
    def(TABLE_PENDING_COMPACTIONS, Kind::Gauge, TABLE,
        "Compactions the table's strategy still wants to run.",
        "Table PendingCompactions"),
    def(TABLE_TOMBSTONES_SCANNED, Kind::Histogram, TABLE,
        "Tombstones read per query.",
        "Table TombstoneScannedHistogram"),
    def(TABLE_SSTABLES_PER_READ, Kind::Histogram, TABLE,
        "SSTables touched per read.",
        "Table SSTablesPerReadHistogram"),
    def(TABLE_BLOOM_FILTER_FALSE_POSITIVE_RATIO, Kind::Gauge, TABLE,
        "Bloom filter false positives over positive answers.",
        "Table BloomFilterFalsePositiveRatio"),
    def(TABLE_DROPPABLE_TOMBSTONE_RATIO, Kind::Gauge, TABLE,
        "Estimated share of tombstones past gc_grace_seconds.",
        "nodetool tablestats droppable tombstone ratio"),
    def(CONNECTIONS_OPEN, Kind::Gauge, &[],
        "CQL connections open now.",
        "Client connectedNativeClients"),
    def(CONNECTIONS, Kind::Counter, &[],
        "CQL connections accepted.",
        "(none: Cassandra reports only the open count)"),
    def(CONNECTIONS_REJECTED, Kind::Counter, &[],
        "CQL connections refused past the connection limit.",
        "(none; closest: native_transport_max_concurrent_connections refusals)"),
    def(REQUESTS, Kind::Counter, &[LABEL_OPCODE],
        "CQL requests received, by opcode.",
        "Client / CQL metrics per request type"),
    def(ERROR_RESPONSES, Kind::Counter, &[],
        "ERROR responses sent.",
        "(none)"),
    def(OVERLOADED_RESPONSES, Kind::Counter, &[],
        "Overloaded errors sent (connection or in-flight limit).",
        "Client RequestDiscarded / overload rejections"),
    def(PROTOCOL_ERRORS, Kind::Counter, &[],
        "Malformed or unexpected frames.",
        "Client ProtocolException"),
    def(COMPACTION_THROUGHPUT_SHARE, Kind::Gauge, &[],
        "Share of compaction_throughput compactions may use now (the adaptive throttle).",
        "(none: Cassandra's throughput is fixed)"),
    def(READ_STAGE_ACTIVE, Kind::Gauge, &[],
        "Statements running on the read stage (they needed the disk).",
        "ThreadPools ReadStage ActiveTasks"),
    def(READ_STAGE_PENDING, Kind::Gauge, &[],
        "Statements waiting for a read-stage slot.",
        "ThreadPools ReadStage PendingTasks"),
    def(READ_STAGE_COMPLETED, Kind::Counter, &[],
        "Statements the read stage ran.",
        "ThreadPools ReadStage CompletedTasks"),
    def(READ_STAGE_CANCELLED, Kind::Counter, &[],
        "Read-stage statements dropped unrun: their connection had closed.",
        "(none)"),
    def(READ_STAGE_DIRECT, Kind::Counter, &[],
        "Statements sent to the read stage without a first run on the event loop (their recent runs needed the disk).",
        "(none: Cassandra runs every read on its read stage)"),
    def(CHUNK_CACHE_HITS, Kind::Counter, &[],
        "Chunk and index block lookups served by the chunk cache.",
        "Cache ChunkCache Hits"),
    def(CHUNK_CACHE_MISSES, Kind::Counter, &[],
        "Chunk and index block lookups the chunk cache did not hold.",
        "Cache ChunkCache Misses"),
    def(CHUNK_CACHE_BYTES, Kind::Gauge, &[],
        "Bytes held by the chunk cache (entries and their overheads).",
        "Cache ChunkCache Size"),
    def(CHUNK_CACHE_CAPACITY_BYTES, Kind::Gauge, &[],
        "The chunk cache's budget (file_cache_size).",
        "Cache ChunkCache Capacity"),
    def(CHUNK_CACHE_ENTRIES, Kind::Gauge, &[],
        "Chunks and index blocks in the chunk cache.",
        "Cache ChunkCache Entries"),
    def(CHUNK_CACHE_SLOT_BYTES, Kind::Gauge, &[],
        "Memory of the chunk cache's slot tables (a slot per chunk and index span of open sstables), outside its budget.",
        "(none)"),
    def(COORDINATOR_REQUESTS, Kind::Counter, &[LABEL_PLACEMENT],
        "Single-partition reads and writes this node coordinated, by whether it was a replica of the key.",
        "(none: a token-aware driver makes not_replica stay at zero)"),
    def(SPECULATIVE_RETRIES, Kind::Counter, &[],
        "Reads that asked one more replica after the table's speculative_retry wait.",
        "Table SpeculativeRetries (summed over tables)"),
    def(READ_DIGEST_MISMATCHES, Kind::Counter, &[],
        "Reads whose replicas' digests disagreed, so full data was read from each.",
        "ReadRepair ReconcileRead"),
    def(SHORT_READ_ROUNDS, Kind::Counter, &[],
        "Reads that read on past where a replica stopped at the row limit, because deletions on other replicas left too few rows.",
        "Table ShortReadProtectionRequests (summed over tables)"),
    def(READ_REPAIRS_BLOCKING, Kind::Counter, &[],
        "Reads that wrote the merged data back to stale replicas before answering.",
        "ReadRepair RepairedBlocking"),
    def(HINTS_CREATED, Kind::Counter, &[],
        "Hints stored for replicas that missed a write.",
        "Storage TotalHints"),
    def(HINTS_REPLAYED, Kind::Counter, &[],
        "Hints delivered to their replica and acknowledged.",
        "HintsService HintsSucceeded"),
    def(HINTS_DROPPED, Kind::Counter, &[],
        "Hints not stored: over max_hints_size_per_host or hints_space_total, or the disk failed.",
        "HintedHandOffManager Hints_not_stored"),
    def(STREAMING_BYTES, Kind::Counter, &[LABEL_DIRECTION],
        "Bytes streamed in (pages pulled or pushed to this node, whole sstables received) and out.",
        "Streaming TotalIncomingBytes / TotalOutgoingBytes"),
    def(STREAMING_FILES, Kind::Counter, &[LABEL_DIRECTION],
        "Whole sstables streamed in (received, checked and installed) and out (sent to their last byte); their bytes count in streaming_bytes too.",
        "Streaming TotalIncomingFiles / TotalOutgoingFiles (entire-sstable streaming)"),
    def(STREAMS_ACTIVE, Kind::Gauge, &[LABEL_STREAM_OPERATION],
        "Streaming operations in flight (bootstrap, decommission, removenode, repair).",
        "Streaming ActiveInboundStreams / ActiveOutboundStreams"),
    def(REPAIR_RANGES_OUT_OF_SYNC, Kind::Counter, &[],
        "Ranges a repair found different among their replicas.",
        "Repair RangesOutOfSync (nodetool repair output)"),
    def(REPAIR_BYTES, Kind::Counter, &[],
        "Bytes a repair streamed to bring replicas together.",
        "Repair BytesRepaired"),
];

/// The HELP text of `name`, if it is in the catalog.
pub fn help(name: &str) -> Option<&'static str> {
    CATALOG.iter().find(|d| d.name == name).map(|d| d.help)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::sanitize_metric_name;

    #[test]
    fn names_are_unique_and_valid() {
        let mut seen = std::collections::BTreeSet::new();
        for d in CATALOG {
            assert!(seen.insert(d.name), "duplicate {}", d.name);
            assert_eq!(sanitize_metric_name(d.name), d.name);
            assert!(
                !d.name.ends_with("_total"),
                "{}: the kind adds suffixes",
                d.name
            );
        }
    }

    #[test]
    fn design_doc_lists_every_name() {
        let doc = include_str!("../../../docs/design/metrics.md");
        for d in CATALOG {
            let exposed = crate::registry::exposed_name(d.name, d.kind);
            assert!(
                doc.contains(&format!("`{exposed}`")),
                "{exposed} not in metrics.md"
            );
        }
    }
}
