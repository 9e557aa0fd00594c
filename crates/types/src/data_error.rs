//! What can go wrong on the data path (reading and writing partitions on
//! one node or across replicas), in terms every layer understands: the
//! query layer turns each into its CQL error, and whoever implements the
//! data path (the local engine, later the cluster's coordinator) produces
//! them without knowing CQL.

use crate::consistency::Unavailable;

/// A data path failure. Every variant says whether the operation changed
/// anything where it matters to the client: none of them is an
/// acknowledgement.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DataError {
    /// Too few replicas are up for the level; nothing was sent.
    #[error("{0}")]
    Unavailable(Unavailable),
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
