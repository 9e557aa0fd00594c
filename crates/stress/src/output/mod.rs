//! The run directory (docs/format/run-directory.md, format version 1):
//! `summary.json`, `intervals.csv`, `hdr/<op>.hlog`, and the human table
//! printed at the end of a run.

pub mod hlog;
pub mod intervals;
pub mod summary;
pub mod table;

use std::path::{Path, PathBuf};

use crate::error::{Result, StressError};

/// Version of the run directory format written here.
pub const RUN_DIRECTORY_FORMAT: u32 = 1;

/// Writes `bytes` to `dir/name`, creating parent directories.
pub fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf> {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| StressError::Output {
            path: parent.to_path_buf(),
            source,
        })?;
    }
    std::fs::write(&path, bytes).map_err(|source| StressError::Output {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}
