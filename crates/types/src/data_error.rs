//! What can go wrong on the data path (reading and writing partitions on
//! one node or across replicas), in terms every layer understands: the
//! query layer turns each into its CQL error, and whoever implements the
//! data path (the local engine, later the cluster's coordinator) produces
//! them without knowing CQL.

use crate::consistency::{Consistency, Unavailable};

/// A data path failure. Every variant says whether the operation changed
/// anything where it matters to the client: none of them is an
/// acknowledgement.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DataError {
    /// Too few replicas are up for the level; nothing was sent.
    #[error("{0}")]
    Unavailable(Unavailable),
    /// Too few replicas acknowledged a write in time. The write may have
    /// been applied on some of them: it is not acknowledged, not undone.
    #[error("{0}")]
    WriteTimeout(WriteTimeout),
    /// A lightweight transaction whose proposal some replicas accepted
    /// but whose outcome the coordinator cannot know (it may still be
    /// committed by a later round): CAS_WRITE_UNKNOWN on protocol v5, a
    /// WriteTimeout with write type CAS before it.
    #[error("CAS operation result is unknown - proposal accepted by {} but not a quorum.", .0.received)]
    CasWriteUnknown(WriteTimeout),
    /// Too few replicas answered a read in time.
    #[error("{0}")]
    ReadTimeout(ReadTimeout),
    /// A read failed on a replica (a damaged file, too many tombstones).
    #[error("{0}")]
    ReadFailure(String),
    /// A write could not be stored (a full or failing disk); it was not
    /// acknowledged.
    #[error("{0}")]
    WriteFailure(String),
    /// The node cannot take the operation now (memtables full); the
    /// client may retry.
    #[error("{0}")]
    Overloaded(String),
    /// The operation needs the disk (or memtable memory) and ran where it
    /// may not wait; it changed nothing and is to be run again where it
    /// may block. Never reaches a client.
    #[error("{0}")]
    WouldBlock(String),
    /// Another change came first (a schema change prepared on a schema
    /// that is no longer current): nothing changed; analysed again, the
    /// statement may succeed.
    #[error("{0}")]
    Conflict(String),
    /// The table is not (or no longer) there.
    #[error("{0}")]
    UnknownTable(String),
    /// Anything else: an I/O error on a read, a bug.
    #[error("{0}")]
    Server(String),
}

impl DataError {
    /// Whether this is [`DataError::WouldBlock`].
    pub fn would_block(&self) -> bool {
        matches!(self, DataError::WouldBlock(_))
    }
}

/// How a write was issued, as WriteTimeout and WriteFailure report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteType {
    /// One INSERT, UPDATE or DELETE.
    Simple,
    /// A logged batch's mutations.
    Batch,
    /// An unlogged batch's mutations.
    UnloggedBatch,
    /// A logged batch's write to the batchlog.
    BatchLog,
    /// The commit of a lightweight transaction.
    Cas,
}

impl WriteType {
    /// The name the native protocol sends.
    pub fn name(self) -> &'static str {
        match self {
            WriteType::Simple => "SIMPLE",
            WriteType::Batch => "BATCH",
            WriteType::UnloggedBatch => "UNLOGGED_BATCH",
            WriteType::BatchLog => "BATCH_LOG",
            WriteType::Cas => "CAS",
        }
    }
}

/// A write that too few replicas acknowledged before the timeout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Operation timed out - received only {received} responses.")]
pub struct WriteTimeout {
    pub consistency: Consistency,
    pub received: u32,
    pub block_for: u32,
    pub write_type: WriteType,
}

/// A read that too few replicas answered before the timeout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Operation timed out - received only {received} responses.")]
pub struct ReadTimeout {
    pub consistency: Consistency,
    pub received: u32,
    pub block_for: u32,
    /// Whether the replica asked for the data answered.
    pub data_present: bool,
}
