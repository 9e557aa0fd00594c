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
    /// The thread may not wait on the disk (a [`crate::io_mode::NonBlocking`]
    /// scope) and `what` is not in memory. Nothing was changed: the caller
    /// runs the operation again where it may block.
    #[error("{what} is not in memory and this thread may not wait for the disk")]
    WouldBlock { what: &'static str },
    /// An operator's request that storage will not do as asked (a bad
    /// snapshot tag, a tag already taken, an sstable that does not fit
    /// the table it is imported into). Nothing was changed.
    #[error("{0}")]
    Refused(String),
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

    /// An I/O error of a read of `len` bytes at `offset`: the offset goes
    /// into the message, the error's kind is kept.
    pub fn io_at(
        file: impl Into<PathBuf>,
        offset: u64,
        len: usize,
        source: std::io::Error,
    ) -> Self {
        let source = std::io::Error::new(
            source.kind(),
            format!("reading {len} bytes at offset {offset}: {source}"),
        );
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

impl Error {
    /// This error met while reading (or doing anything but a write), as
    /// the data path reports it: a damaged file is a ReadFailure, as
    /// Cassandra reports a corrupt sstable.
    pub fn on_read(self) -> varve_types::data_error::DataError {
        use varve_types::data_error::DataError as D;
        match self {
            Error::UnknownTable(_) => D::UnknownTable(format!("{self} (the table was dropped)")),
            Error::Corruption { .. } => D::ReadFailure(self.to_string()),
            Error::Refused(m) => D::Server(m),
            Error::Io { .. } => D::Server(self.to_string()),
            // Flushes are behind: nothing was applied; the client may retry.
            Error::MemtablesFull { .. } => D::Overloaded(self.to_string()),
            Error::WouldBlock { .. } => D::WouldBlock(self.to_string()),
        }
    }

    /// This error met while storing a write: a failing or full disk is a
    /// WriteFailure (the write was not acknowledged); anything else as
    /// [`Error::on_read`] says.
    pub fn on_write(self) -> varve_types::data_error::DataError {
        match self {
            Error::Io { .. } => varve_types::data_error::DataError::WriteFailure(self.to_string()),
            other => other.on_read(),
        }
    }
}
