//! openraft's `RaftLogStorage` (v2 API) over our files: entries in the
//! [`LogFile`], the vote and the last committed log id in state files.
//! Every write is fsynced before openraft hears it is done.
// openraft's traits return its `StorageError` (240 bytes); the helpers
// that build it return it too.
#![allow(clippy::result_large_err)]

use std::fmt::Debug;
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{AnyError, LogState, OptionalSend, RaftLogReader, StorageIOError};
use parking_lot::Mutex;

use super::codec::{
    decode, decode_entry, encode_entry, put_log_id, put_vote, read_log_id, read_vote,
};
use super::{Entry, LogId, StorageError, TypeConfig, Vote};
use crate::metadata::store::log_file::LogFile;
use crate::metadata::store::state_file::{self, COMMITTED_MAGIC, VOTE_MAGIC};
use crate::metadata::store::{StoreError, StoreResult};

pub const VOTE_FILE_NAME: &str = "vote";
pub const COMMITTED_FILE_NAME: &str = "committed";

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    log: LogFile,
    last_purged: Option<LogId>,
}

/// The log, shared by the storage and its readers.
#[derive(Debug, Clone)]
pub struct LogStore {
    inner: Arc<Mutex<Inner>>,
}

fn io_error(e: impl std::error::Error + 'static) -> StorageError {
    StorageIOError::read_logs(AnyError::new(&e)).into()
}

fn write_error(e: impl std::error::Error + 'static) -> StorageError {
    StorageIOError::write_logs(AnyError::new(&e)).into()
}

impl LogStore {
    /// Opens the log in `dir` (cutting a torn tail), and checks the vote
    /// and committed files.
    pub fn open(dir: &Path) -> StoreResult<LogStore> {
        let log = LogFile::open(dir)?;
        let last_purged = match log.purged() {
            [] => None,
            bytes => Some(decode(bytes, read_log_id).map_err(|e| {
                StoreError::corruption(&dir.join("log"), 5, format!("purged log id: {e}"))
            })?),
        };
        read_vote_file(dir)?;
        read_committed_file(dir)?;
        Ok(LogStore {
            inner: Arc::new(Mutex::new(Inner {
                dir: dir.to_path_buf(),
                log,
                last_purged,
            })),
        })
    }

    /// Whether nothing was ever stored: no vote, no entry, nothing purged.
    pub fn is_empty(&self) -> StoreResult<bool> {
        let inner = self.inner.lock();
        Ok(inner.log.last_index().is_none()
            && inner.last_purged.is_none()
            && read_vote_file(&inner.dir)?.is_none())
    }

    fn entries(&self, range: impl RangeBounds<u64>) -> Result<Vec<Entry>, StorageError> {
        let records = self.inner.lock().log.read(range).map_err(io_error)?;
        records
            .iter()
            .map(|(_, bytes)| decode_entry(bytes).map_err(io_error))
            .collect()
    }
}

fn read_vote_file(dir: &Path) -> StoreResult<Option<Vote>> {
    read_state(dir, VOTE_FILE_NAME, VOTE_MAGIC, read_vote)
}

pub fn read_committed_file(dir: &Path) -> StoreResult<Option<LogId>> {
    read_state(dir, COMMITTED_FILE_NAME, COMMITTED_MAGIC, read_log_id)
}

fn read_state<T>(
    dir: &Path,
    name: &str,
    magic: [u8; 4],
    read: impl FnOnce(&mut crate::net::wire::Reader<'_>) -> Result<T, crate::net::wire::WireError>,
) -> StoreResult<Option<T>> {
    let Some(payload) = state_file::read(dir, name, magic)? else {
        return Ok(None);
    };
    decode(&payload, read)
        .map(Some)
        .map_err(|e| StoreError::corruption(&dir.join(name), 9, e.to_string()))
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        self.entries(range)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<openraft::LogState<TypeConfig>, StorageError> {
        let (last_index, last_purged) = {
            let inner = self.inner.lock();
            (inner.log.last_index(), inner.last_purged)
        };
        let last_log_id = match last_index {
            Some(index) => self.entries(index..=index)?.pop().map(|e| e.log_id),
            None => last_purged,
        };
        Ok(LogState {
            last_purged_log_id: last_purged,
            last_log_id,
        })
    }

    async fn get_log_reader(&mut self) -> LogStore {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), StorageError> {
        let mut payload = vec![super::codec::RAFT_PAYLOAD_VERSION];
        put_vote(&mut payload, vote);
        let dir = self.inner.lock().dir.clone();
        state_file::write(&dir, VOTE_FILE_NAME, VOTE_MAGIC, &payload)
            .map_err(|e| StorageIOError::write_vote(AnyError::new(&e)).into())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, StorageError> {
        let dir = self.inner.lock().dir.clone();
        read_vote_file(&dir).map_err(|e| StorageIOError::read_vote(AnyError::new(&e)).into())
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        let Some(committed) = committed else {
            return Ok(());
        };
        let mut payload = vec![super::codec::RAFT_PAYLOAD_VERSION];
        put_log_id(&mut payload, &committed);
        let dir = self.inner.lock().dir.clone();
        state_file::write(&dir, COMMITTED_FILE_NAME, COMMITTED_MAGIC, &payload).map_err(write_error)
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        let dir = self.inner.lock().dir.clone();
        read_committed_file(&dir).map_err(io_error)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let records: Vec<(u64, Vec<u8>)> = entries
            .into_iter()
            .map(|e| (e.log_id.index, encode_entry(&e)))
            .collect();
        let result = self.inner.lock().log.append(&records);
        match result {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                callback.log_io_completed(Err(std::io::Error::other(e.to_string())));
                Err(write_error(e))
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.inner
            .lock()
            .log
            .truncate(log_id.index)
            .map_err(write_error)
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let mut purged = vec![super::codec::RAFT_PAYLOAD_VERSION];
        put_log_id(&mut purged, &log_id);
        let mut inner = self.inner.lock();
        inner
            .log
            .purge(log_id.index, &purged)
            .map_err(write_error)?;
        inner.last_purged = Some(log_id);
        Ok(())
    }
}
