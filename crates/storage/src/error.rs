//! Errors of the storage engine.

use crate::engine::TableId;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The table does not exist (dropped concurrently, or never created).
    #[error("unknown table id {0:032x}")]
    UnknownTable(TableId),
}

pub type Result<T> = std::result::Result<T, Error>;
