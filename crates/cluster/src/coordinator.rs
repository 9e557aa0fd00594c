//! The coordinator: what a node does with a client's read or write when
//! the data lives on several replicas (docs/design/cluster.md, section 8).
//!
//! [`Coordinator`] ([`service`]) holds the ring ([`topology`], from
//! gossip until the metadata log holds it) and what a request needs;
//! [`write`] stores a partition update on its replicas at a level,
//! [`read`] reads one partition from as many replicas as the level needs
//! (data from one, digests from the others, one more after the
//! [`speculate`] wait, measured by [`latency`]) and, when they disagree,
//! merges and repairs ([`read_repair`]), [`scan`] lists keys over a token range and
//! truncates tables on every node. [`write_acks`] counts answers at a
//! level (a pure state machine), [`answers`] waits for them.

pub mod answers;
pub mod batch;
pub mod batch_replay;
pub mod latency;
pub mod metrics;
pub mod paxos;
pub mod paxos_forward;
mod paxos_hints;
pub mod paxos_queue;
mod paxos_two_rounds;
pub mod range_scan;
pub mod read;
pub mod read_repair;
pub mod replication;
pub mod scan;
pub mod service;
mod short_read;
pub mod speculate;
pub mod topology;
pub mod write;
pub mod write_acks;

pub use batch::BatchWrite;
pub use metrics::CoordinatorMetrics;
pub use paxos::{Cas, CasPath, CasResult, DecideFn};
pub use paxos_forward::RebuildFn;
pub use range_scan::{RowScan, ScannedRows};
pub use read::{Read, ReadResult};
pub use replication::Replication;
pub use scan::KeyScan;
pub use service::{Coordinator, CoordinatorCounts, ReplicationLookup, Timeouts};
pub use speculate::Speculation;
pub use topology::{Host, RangeMove, Topology};
pub use write::Write;
