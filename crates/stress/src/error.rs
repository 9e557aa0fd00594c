//! The crate's one error type. Errors of single operations during a run are
//! not errors of the run: they are counted by kind (see [`crate::errors`]).
//! A `StressError` stops the run: bad flags, no connection, schema failures,
//! output files that cannot be written.

use std::path::PathBuf;

/// Why a stress run (or its setup) failed.
#[derive(Debug, thiserror::Error)]
pub enum StressError {
    /// A flag value that does not parse or is out of range.
    #[error("invalid {what}: {message}")]
    Config { what: &'static str, message: String },
    /// Could not connect to any host.
    #[error("connecting to {hosts}: {message}")]
    Connect { hosts: String, message: String },
    /// Schema creation, TRUNCATE or statement preparation failed.
    #[error("{context}: {message}")]
    Setup { context: String, message: String },
    /// Writing the run directory failed.
    #[error("writing {path}: {source}")]
    Output {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A summary could not be encoded.
    #[error("encoding the summary: {0}")]
    Json(#[from] serde_json::Error),
}

impl StressError {
    /// A configuration error about `what`.
    pub fn config(what: &'static str, message: impl Into<String>) -> Self {
        StressError::Config {
            what,
            message: message.into(),
        }
    }

    /// A setup error: `context` says what was being done.
    pub fn setup(context: impl Into<String>, message: impl std::fmt::Display) -> Self {
        StressError::Setup {
            context: context.into(),
            message: message.to_string(),
        }
    }
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, StressError>;
