//! The storage engine: partitions in token order, rows in clustering order,
//! cells with timestamps and TTLs, and Cassandra's four kinds of deletion
//! (cell, row, range and partition tombstones).
//!
//! The unit of writing is a [`Partition`] used as an *update*: applying it
//! merges it into what is stored with Cassandra's reconciliation rules
//! ([`cell::reconcile`]). Reading returns the merged, still-unresolved
//! partition (tombstones included) restricted to the requested slices;
//! [`Partition::resolve`] then removes what is shadowed or expired at a
//! given `now`, which the caller passes in (the clock never lives here, so
//! tests can move it).
//!
//! Invariants:
//! 1. Merging is commutative and associative: the order in which updates
//!    arrive does not change what a read returns.
//! 2. A partition key sorts by (token, key bytes); the empty key is never
//!    stored (the query layer rejects it), so it can serve as the lowest
//!    position within a token.
//!
//! 3. An acknowledged write of a durable table is in the commitlog (as
//!    durable as the sync mode promises) before it is in a memtable; a
//!    table's live sstables are exactly those its manifest lists.
//!
//! The data model itself (partitions, rows, cells, clustering keys, the
//! partition key, the value slab) lives in `varve_types::data`, so that the
//! query layer and the cluster can share it without storage; it is
//! re-exported here at its old paths (`crate::partition`, `crate::row`, ...).
//!
//! This crate knows nothing of CQL text, the network, or replicas. The
//! [`Storage`] API sits over memtables, the commitlog ([`commitlog`]),
//! sstables ([`sstable`]) and compaction ([`compaction`] chooses,
//! [`engine_compact`] runs, [`engine_concurrency`] schedules, [`engine_gc`]
//! runs `nodetool garbagecollect`, [`engine_snapshot`] takes, lists and
//! clears snapshots, [`engine_import`] loads sstables into a live table,
//! [`engine_stream_files`] and [`engine_stream_receive`] send and receive
//! whole sstables for streaming); docs/design/storage-model.md walks
//! through it.

pub mod commitlog;
pub mod compaction;
pub mod encoding;
pub mod engine;
pub mod engine_cleanup;
pub mod engine_compact;
pub mod engine_concurrency;
pub mod engine_gc;
pub mod engine_import;
pub mod engine_memory;
pub mod engine_read;
pub mod engine_repair;
pub mod engine_snapshot;
pub mod engine_stream_files;
pub mod engine_stream_receive;
pub mod engine_summary;
pub mod error;
pub mod fs;
pub mod fs_direct;
mod fs_direct_point;
pub mod fs_direct_read;
mod fs_map;
pub mod fs_nowait;
pub mod fs_seq;
pub mod fs_sim;
pub mod io_mode;
pub mod manifest;
pub mod memtable;
pub mod read_stats;
pub mod snapshot_manifest;
pub mod sstable;
pub mod striped;
pub mod thread_priority;

pub use varve_types::data::{cell, cell_map, clustering, partition, row, row_map, value_slab};

pub use cell::{Cell, DeletionTime, LivenessInfo, NO_DELETION_TIME};
pub use cell_map::CellMap;
pub use clustering::{ClusteringComparator, ClusteringKey, Slice};
pub use engine::{
    Clock, Engine, PartitionKey, Storage, StorageOptions, TableDescriptor, TableId, TableStats,
    TokenBound,
};
pub use engine_gc::{GcResult, Granularity};
pub use engine_import::{ImportOptions, ImportResult};
pub use engine_snapshot::SnapshotInfo;
pub use engine_stream_files::{HeldSstable, SstableSpan};
pub use engine_stream_receive::{IncomingSstable, ReceivedSstable};
pub use error::{Error, Result};
pub use partition::{Partition, RangeTombstone};
pub use read_stats::ReadCost;
pub use row::{CellPath, ReadStats, Row};
pub use row_map::RowMap;
