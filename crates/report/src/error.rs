//! Errors of the report crate. Every error names the file it came from, and
//! the line for CSV and JSON input, so a user can fix a broken run directory.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A CSV file is malformed (1-based line number).
    #[error("{}:{line}: {message}", file.display())]
    Csv {
        file: PathBuf,
        line: usize,
        message: String,
    },
    /// `summary.json` is not valid JSON or does not have the expected shape.
    #[error("{}:{line}:{column}: {message}", file.display())]
    Json {
        file: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// The file parsed but its content is not acceptable (format version,
    /// phase bounds, size limit, encoding).
    #[error("{}: {message}", file.display())]
    Invalid { file: PathBuf, message: String },
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn invalid(file: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Error::Invalid {
            file: file.into(),
            message: message.into(),
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// The file the error is about.
    pub fn file(&self) -> &std::path::Path {
        match self {
            Error::Io { path, .. } => path,
            Error::Csv { file, .. } | Error::Json { file, .. } | Error::Invalid { file, .. } => {
                file
            }
        }
    }
}
