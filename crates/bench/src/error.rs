//! The one error type of `varve-bench`, with its [`Result`] alias.

use std::path::PathBuf;

/// Everything that can stop a benchmark.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A flag or a plan value is out of range.
    #[error("invalid {what}: {detail}")]
    Config { what: &'static str, detail: String },
    /// A file or directory of the run could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The embedded node did not start, or misbehaved.
    #[error("embedded node: {0}")]
    Node(String),
    /// An HTTP exchange with the admin endpoint failed.
    #[error("admin endpoint {url}: {detail}")]
    Http { url: String, detail: String },
    /// A file written by an earlier step is not what it should be.
    #[error("{}: {detail}", path.display())]
    Invalid { path: PathBuf, detail: String },
    /// The load generator failed.
    #[error(transparent)]
    Stress(#[from] varve_stress::StressError),
    /// The report could not be rendered.
    #[error("report: {0}")]
    Report(#[from] varve_report::Error),
}

impl BenchError {
    /// A [`BenchError::Config`].
    pub fn config(what: &'static str, detail: impl Into<String>) -> BenchError {
        BenchError::Config {
            what,
            detail: detail.into(),
        }
    }

    /// A [`BenchError::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> BenchError {
        BenchError::Io {
            path: path.into(),
            source,
        }
    }
}

/// `Result` with [`BenchError`].
pub type Result<T> = std::result::Result<T, BenchError>;
