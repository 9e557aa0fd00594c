//! Errors of the storage engine.

use crate::engine::TableId;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The table does not exist (dropped concurrently, or never created).
    #[error("unknown table id {0:032x}")]
    UnknownTable(TableId),
    /// Bytes on disk that are not what was written: a checksum mismatch,
    /// a truncated file, an impossible value. Names the file and offset.
    #[error("corrupt file {file}: {reason} at offset {offset}")]
    Corruption {
        file: PathBuf,
        offset: u64,
        reason: String,
    },
    /// The node's memtables stayed over their hard limit for as long as a
    /// write may wait: flushes are behind. The write was not applied.
    #[error(
        "memtables hold {bytes} bytes, over their limit of {limit} bytes \
         ({factor} x memtable_heap_space), for {waited_ms} ms: flushes are behind"
    )]
    MemtablesFull {
        bytes: usize,
        limit: usize,
        factor: usize,
        waited_ms: u64,
    },
    /// An I/O error from the file system (including a full disk).
    #[error("I/O error on {file}: {source}")]
    Io {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    pub fn io(file: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            file: file.into(),
            source,
        }
    }

    pub fn corruption(file: impl Into<PathBuf>, offset: u64, reason: impl Into<String>) -> Self {
        Error::Corruption {
            file: file.into(),
            offset,
            reason: reason.into(),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
