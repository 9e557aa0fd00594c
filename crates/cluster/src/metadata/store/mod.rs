//! The metadata log's files (docs/format/metadata-log.md, section 1):
//! [`log_file`], the append-only file of CRC'd entries, and
//! [`state_file`], the small files replaced whole (the vote, the last
//! committed log id, the snapshot).
//!
//! Nothing here knows openraft: entries are (index, bytes) and the files'
//! payloads are bytes; `raft_glue` encodes openraft's types into them.
//! Every write is fsynced before it returns, and a renamed file's
//! directory too. I/O is blocking `std::fs`: the files are small and
//! written only when the metadata changes (a later `Env::fs` replaces
//! it, section 4.5 of the design).

pub mod log_file;
pub mod state_file;

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// Why a metadata file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path} is corrupt at offset {offset}: {reason}")]
    Corruption {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
}

impl StoreError {
    pub fn io(path: &Path, source: io::Error) -> StoreError {
        StoreError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub fn corruption(path: &Path, offset: u64, reason: impl Into<String>) -> StoreError {
        StoreError::Corruption {
            path: path.to_path_buf(),
            offset,
            reason: reason.into(),
        }
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// Fsyncs a directory, so a file created or renamed in it survives a
/// crash.
pub fn sync_dir(dir: &Path) -> StoreResult<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StoreError::io(dir, e))
}

/// Writes `bytes` to `dir/name` in place of what was there: a temporary
/// file, fsynced, renamed over it, and the directory fsynced.
pub fn replace_file(dir: &Path, name: &str, bytes: &[u8]) -> StoreResult<()> {
    use std::io::Write;
    let tmp = dir.join(format!("{name}.tmp"));
    let path = dir.join(name);
    let mut file = File::create(&tmp).map_err(|e| StoreError::io(&tmp, e))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| StoreError::io(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| StoreError::io(&path, e))?;
    sync_dir(dir)
}
