//! Query errors, one variant per CQL error code family.

use bytes::Bytes;

#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum QueryError {
    /// SyntaxException (0x2000)
    #[error("{0}")]
    Syntax(String),
    /// InvalidRequest (0x2200)
    #[error("{0}")]
    Invalid(String),
    /// ConfigurationException (0x2300)
    #[error("{0}")]
    Config(String),
    /// AlreadyExists (0x2400); `table` is empty for a keyspace.
    #[error("{message}")]
    AlreadyExists {
        keyspace: String,
        table: String,
        message: String,
    },
    /// Unauthorized (0x2100), e.g. changing a system keyspace.
    #[error("{0}")]
    Unauthorized(String),
    /// Unprepared (0x2500): the driver re-prepares and retries.
    #[error("Prepared query with ID {} not found (either the query was not prepared on this host (maybe the host has been restarted?) or you have prepared too many queries and it has been evicted from the internal cache)", hex(.id))]
    Unprepared { id: Bytes },
    /// ReadFailure (0x1300), e.g. too many tombstones scanned.
    #[error("{message}")]
    ReadFailure { message: String },
    /// WriteFailure (0x1500): the write could not be stored (a full or
    /// failing disk); it was not acknowledged.
    #[error("{message}")]
    WriteFailure { message: String },
    /// Unavailable (0x1000): too few live replicas for the level; nothing
    /// was sent or changed.
    #[error("{0}")]
    Unavailable(varve_types::consistency::Unavailable),
    /// WriteTimeout (0x1100): too few replicas acknowledged in time; the
    /// write may have been applied on some.
    #[error("{0}")]
    WriteTimeout(varve_types::data_error::WriteTimeout),
    /// CAS_WRITE_UNKNOWN (0x1700 on v5; a WriteTimeout CAS on v4): a
    /// lightweight transaction whose outcome cannot be known.
    #[error("CAS operation result is unknown - proposal accepted by {} but not a quorum.", .0.received)]
    CasWriteUnknown(varve_types::data_error::WriteTimeout),
    /// ReadTimeout (0x1200): too few replicas answered in time.
    #[error("{0}")]
    ReadTimeout(varve_types::data_error::ReadTimeout),
    /// Overloaded (0x1001)
    #[error("{0}")]
    Overloaded(String),
    /// FunctionFailure (0x1400): a function failed on its arguments (for
    /// example `fromJson()` given JSON that is not of the receiver's type).
    #[error("{message}")]
    FunctionFailure {
        keyspace: String,
        function: String,
        arg_types: Vec<String>,
        message: String,
    },
    /// ServerError (0x0000): a bug or an unexpected state.
    #[error("{0}")]
    Server(String),
    /// Not for clients: the statement needs the disk (or memtable memory)
    /// and ran where it may not wait (see `varve_storage::io_mode`). It
    /// changed nothing; the server runs it again where it may block. Never
    /// counted as a request, an error or a latency.
    #[error("{0}")]
    WouldBlock(String),
}

impl QueryError {
    /// Whether this is [`QueryError::WouldBlock`].
    pub fn would_block(&self) -> bool {
        matches!(self, QueryError::WouldBlock(_))
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub type Result<T> = std::result::Result<T, QueryError>;

impl From<varve_schema::Error> for QueryError {
    fn from(e: varve_schema::Error) -> Self {
        match e {
            varve_schema::Error::Invalid(m) => QueryError::Invalid(m),
            varve_schema::Error::Config(m) => QueryError::Config(m),
            varve_schema::Error::Syntax(m) => QueryError::Syntax(m),
        }
    }
}

impl From<varve_schema::options::OptionError> for QueryError {
    fn from(e: varve_schema::options::OptionError) -> Self {
        varve_schema::Error::from(e).into()
    }
}

impl From<varve_types::data_error::DataError> for QueryError {
    fn from(e: varve_types::data_error::DataError) -> Self {
        use varve_types::data_error::DataError as D;
        match e {
            D::Unavailable(u) => QueryError::Unavailable(u),
            D::WriteTimeout(t) => QueryError::WriteTimeout(t),
            D::CasWriteUnknown(t) => QueryError::CasWriteUnknown(t),
            D::ReadTimeout(t) => QueryError::ReadTimeout(t),
            D::ReadFailure(message) => QueryError::ReadFailure { message },
            D::WriteFailure(message) => QueryError::WriteFailure { message },
            D::Overloaded(m) => QueryError::Overloaded(m),
            D::WouldBlock(m) => QueryError::WouldBlock(m),
            D::UnknownTable(m) => QueryError::Invalid(m),
            D::Server(m) | D::Conflict(m) => QueryError::Server(m),
        }
    }
}

impl From<varve_storage::Error> for QueryError {
    /// A storage error met outside a write (see [`crate::local::on_read`]).
    fn from(e: varve_storage::Error) -> Self {
        crate::local::on_read(e).into()
    }
}

impl QueryError {
    /// A storage error met while storing a write: a failing or full disk
    /// is a WriteFailure, as Cassandra reports a replica that could not
    /// write; anything else as [`From`] says.
    pub fn on_write(e: varve_storage::Error) -> Self {
        crate::local::on_write(e).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// Each storage error becomes the CQL error a Cassandra user expects,
    /// on a read (`From`) and on a write (`on_write`).
    #[test]
    fn storage_errors_map_to_their_cql_errors() {
        let io = || varve_storage::Error::io("/d/f", std::io::Error::other("No space left"));
        let corrupt = || varve_storage::Error::corruption(PathBuf::from("/d/f"), 7, "bad crc");
        let full = || varve_storage::Error::MemtablesFull {
            bytes: 5,
            limit: 4,
            factor: 4,
            waited_ms: 2000,
        };
        assert!(matches!(QueryError::from(io()), QueryError::Server(_)));
        assert!(matches!(
            QueryError::on_write(io()),
            QueryError::WriteFailure { message } if message.contains("No space left")
        ));
        for on_write in [false, true] {
            let e = if on_write {
                QueryError::on_write(corrupt())
            } else {
                QueryError::from(corrupt())
            };
            assert!(matches!(e, QueryError::ReadFailure { .. }), "{e:?}");
            let e = if on_write {
                QueryError::on_write(full())
            } else {
                QueryError::from(full())
            };
            assert!(
                matches!(&e, QueryError::Overloaded(m) if m.contains("memtable_heap_space")),
                "{e:?}"
            );
        }
        assert!(matches!(
            QueryError::on_write(varve_storage::Error::UnknownTable(3)),
            QueryError::Invalid(_)
        ));
    }
}
