//! The commitlog: every write is appended here before it is applied to a
//! memtable, so that a process crash loses nothing acknowledged (any mode),
//! and a power loss nothing acknowledged in batch and group modes, at most
//! the sync window in periodic mode.
//!
//! Layout (docs/format/commitlog.md): segment files
//! `CommitLog-<version>-<id>.log`, each a checksummed header followed by
//! entries `[u32 length][u32 CRC32(length)][payload][u32 CRC32(payload)]`.
//! Design and the exact guarantees: docs/design/durability.md.
//!
//! Invariants:
//! 1. Entries are written in the order [`CommitLog::append`] handed out
//!    their [`Position`]s; positions (and segment ids) only grow.
//! 2. In batch and group mode, `append` returns `Ok` only once the entry,
//!    its segment's header and the segment's directory entry are synced.
//!    In periodic mode, `append` returns `Ok` only once the entry is
//!    written to its segment file (handed to the kernel, not synced), or,
//!    inside a [`DeferredWrites`] scope, once it is queued; the scope's
//!    `finish` then returns `Ok` only once it is written.
//! 3. A segment is fully synced before the next one is written, so after a
//!    power loss the log on disk is a prefix of what was appended (plus at
//!    most a torn entry at the end of the segment being written).
//! 4. A segment is deleted only when it is no longer written to and no
//!    table has unflushed data in it ([`CommitLog::mark_flushed`]).
//! 5. Bytes read back are never trusted: every failure is a
//!    [`ReplayWarning`] or an error, never a panic.

mod deferred;
mod files;
mod position;
mod replay;
mod segment;
mod spare;
mod sync_thread;
mod writer;

#[cfg(test)]
mod crash_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_deferred;
#[cfg(test)]
mod tests_periodic;
#[cfg(test)]
mod tests_prealloc;
#[cfg(test)]
mod tests_versions;
#[cfg(test)]
mod throughput;

pub use deferred::DeferredWrites;
pub use position::Position;
pub use replay::{fuzz_replay, Replay, ReplayEntry, ReplayWarning, WarningKind};
pub use segment::{
    parse_segment_file_name, segment_file_name, COMMITLOG_FORMAT_VERSION, ENTRY_OVERHEAD_BYTES,
    SEGMENT_HEADER_BYTES,
};
pub use writer::SyncWait;

use crate::clustering::ClusteringComparator;
use crate::engine::{PartitionKey, TableId};
use crate::error::{Error, Result};
use crate::fs::Fs;
use crate::partition::Partition;
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Cassandra's `commitlog_sync_period` default (periodic mode).
pub const DEFAULT_SYNC_PERIOD: Duration = Duration::from_secs(10);
/// Our default `commitlog_sync_group_window`. Cassandra has no usable
/// default (its value must be set when choosing group mode; the example in
/// cassandra.yaml is 1000 ms): 15 ms keeps the added latency small.
pub const DEFAULT_GROUP_WINDOW: Duration = Duration::from_millis(15);
/// Cassandra's `commitlog_segment_size` default.
pub const DEFAULT_SEGMENT_SIZE_BYTES: u64 = 32 << 20;
/// Largest entry (framing included) with the default segment size: like
/// Cassandra's `max_mutation_size`, half a segment. With another segment
/// size the limit is [`CommitLogConfig::max_mutation_bytes`].
pub const MAX_MUTATION_BYTES: u64 = DEFAULT_SEGMENT_SIZE_BYTES / 2;
/// Smallest segment size accepted (tests use small segments).
pub const MIN_SEGMENT_SIZE_BYTES: u64 = 4 << 10;
/// Largest segment size accepted (offsets of a segment fit in a u32).
pub const MAX_SEGMENT_SIZE_BYTES: u64 = 1 << 30;
/// Periodic mode blocks appends once the last sync is this many tenths of
/// a period old (Cassandra's `periodic_commitlog_sync_lag_block`, 1.5x).
pub const SYNC_LAG_BLOCK_TENTHS: u32 = 15;

/// When `append` returns relative to the fsync of its bytes
/// (Cassandra's `commitlog_sync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    /// Returns once the appending thread has written the entry to the
    /// segment file (a process crash loses nothing acknowledged); a
    /// background thread fsyncs every `period` (a power loss may lose up
    /// to a period). Appends block while the last sync is more than 1.5
    /// periods old.
    Periodic { period: Duration },
    /// Returns once the entry is fsynced; concurrent appends share fsyncs.
    Batch,
    /// Like batch, but fsyncs at most once per `window`, gathering every
    /// append that arrives meanwhile.
    Group { window: Duration },
}

/// How the commitlog behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitLogConfig {
    pub sync: SyncMode,
    /// `commitlog_segment_size`: a new segment starts when an entry would
    /// not fit in the current one.
    pub segment_size_bytes: u64,
    /// Fail [`CommitLog::open`] with [`Error::Corruption`] on corruption in
    /// the middle of a segment (Cassandra's default: it refuses to start).
    /// When false, the segment's replay stops there and a warning is
    /// returned (see docs/design/durability.md).
    pub strict_replay: bool,
    /// The lowest id a new segment may take. Ids come from the clock, but a
    /// restart within the same milliseconds after every old segment was
    /// released could reuse an id that tables already recorded as flushed;
    /// the engine passes the highest id its manifests know, plus one.
    pub min_segment_id: u64,
    /// New segments begin as a preallocated file of zeros, made ahead by a
    /// background thread (`spare.rs`): their fsyncs then write no file
    /// size. The server turns it on (`commitlog_preallocate_segments`).
    pub preallocate: bool,
}

impl Default for CommitLogConfig {
    fn default() -> Self {
        CommitLogConfig {
            sync: SyncMode::Periodic {
                period: DEFAULT_SYNC_PERIOD,
            },
            segment_size_bytes: DEFAULT_SEGMENT_SIZE_BYTES,
            strict_replay: false,
            min_segment_id: 0,
            preallocate: false,
        }
    }
}

impl CommitLogConfig {
    /// The largest entry accepted, framing included: half a segment.
    pub fn max_mutation_bytes(&self) -> u64 {
        self.segment_size_bytes / 2
    }

    fn validate(&self, dir: &Path) -> Result<()> {
        let invalid = |what: String| {
            Error::io(
                dir,
                std::io::Error::new(std::io::ErrorKind::InvalidInput, what),
            )
        };
        if !(MIN_SEGMENT_SIZE_BYTES..=MAX_SEGMENT_SIZE_BYTES).contains(&self.segment_size_bytes) {
            return Err(invalid(format!(
                "commitlog segment size {} outside {MIN_SEGMENT_SIZE_BYTES}..={MAX_SEGMENT_SIZE_BYTES}",
                self.segment_size_bytes
            )));
        }
        match self.sync {
            SyncMode::Periodic { period } if period.is_zero() => {
                Err(invalid("commitlog_sync_period must be positive".into()))
            }
            _ => Ok(()),
        }
    }
}

/// The node's commitlog. Thread-safe: share it behind an `Arc`.
pub struct CommitLog {
    shared: Arc<writer::Shared>,
    writer: Mutex<Option<JoinHandle<()>>>,
    spare_maker: Mutex<Option<JoinHandle<()>>>,
}

impl CommitLog {
    /// Opens the commitlog in `dir` (created if missing) and returns the
    /// entries of the segments already there, oldest first. `comparators`
    /// gives each table's clustering comparator; entries of tables it does
    /// not know (dropped) are skipped and counted. New entries go to new
    /// segments; old ones are deleted once every table they hold data for
    /// is flushed ([`CommitLog::mark_flushed`]).
    pub fn open(
        fs: Arc<dyn Fs>,
        dir: &Path,
        config: CommitLogConfig,
        comparators: &dyn Fn(TableId) -> Option<Arc<ClusteringComparator>>,
    ) -> Result<(CommitLog, Replay)> {
        config.validate(dir)?;
        fs.create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let (scanned, replay) =
            replay::scan_directory(&fs, dir, comparators, config.strict_replay)?;
        spare::remove_leftovers(fs.as_ref(), dir).map_err(|e| Error::io(dir, e))?;
        let preallocate = config.preallocate;
        let size = config.segment_size_bytes;
        let shared = Arc::new(writer::Shared::new(fs, dir.to_path_buf(), config, scanned));
        let thread_shared = shared.clone();
        let handle = std::thread::Builder::new()
            .name("commitlog-writer".into())
            .spawn(move || sync_thread::run(thread_shared))
            .map_err(|e| Error::io(dir, e))?;
        let spare_maker = if preallocate {
            let (spares, fs, dir) = (shared.spares.clone(), shared.fs.clone(), shared.dir.clone());
            // The first segment's spare is made right away.
            spares.request();
            let thread = std::thread::Builder::new()
                .name("commitlog-spare".into())
                .spawn(move || spare::run(spares, fs, dir, size));
            Some(thread.map_err(|e| Error::io(&shared.dir, e))?)
        } else {
            None
        };
        Ok((
            CommitLog {
                shared,
                writer: Mutex::new(Some(handle)),
                spare_maker: Mutex::new(spare_maker),
            },
            replay,
        ))
    }

    /// Appends one partition update of `table`; returns where it starts.
    /// When it returns depends on the [`SyncMode`]. Fails with
    /// [`Error::Io`] when the entry is larger than
    /// [`CommitLogConfig::max_mutation_bytes`] (kind `InvalidInput`), when
    /// the disk is full or failing (nothing acknowledged before is lost,
    /// and later appends work once the disk recovers), or after
    /// [`CommitLog::shutdown`].
    pub fn append(
        &self,
        table: TableId,
        key: &PartitionKey,
        partition: &Partition,
    ) -> Result<Position> {
        writer::append(&self.shared, table, key, partition)
    }

    /// Whether [`CommitLog::append`] would take this entry's size: the
    /// error it would give when not, and nothing written either way.
    pub fn check_size(
        &self,
        table: TableId,
        key: &PartitionKey,
        partition: &Partition,
    ) -> Result<()> {
        writer::check_size(&self.shared, &segment::encode_entry(table, key, partition))
    }

    /// Makes everything appended so far durable now (periodic mode's
    /// answer to a drain).
    pub fn sync(&self) -> Result<()> {
        writer::sync_now(&self.shared)
    }

    /// [`CommitLog::sync`] awaited by a task: the request is made now,
    /// the future is ready once everything appended before it is durable.
    pub fn sync_later(&self) -> Result<SyncWait> {
        writer::sync_later(&self.shared)
    }

    /// The position the next append will at least have: a memtable that
    /// switches now holds exactly the writes before it.
    pub fn current_position(&self) -> Position {
        self.shared.inner.lock().current_position()
    }

    /// Every write of `table` before `up_to` is now in an sstable: segments
    /// no table still needs are deleted.
    pub fn mark_flushed(&self, table: TableId, up_to: Position) -> Result<()> {
        writer::mark_flushed(&self.shared, table, up_to)
    }

    /// The largest entry an append takes.
    pub fn max_mutation_bytes(&self) -> u64 {
        self.shared.config.max_mutation_bytes()
    }

    /// Segments on disk (the one being written included).
    pub fn segments_count(&self) -> usize {
        self.shared.inner.lock().segments.len()
    }

    /// Bytes of every segment on disk, or about to be.
    pub fn total_bytes(&self) -> u64 {
        self.shared
            .total_bytes
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Bytes written to segment files since the log opened.
    pub fn bytes_written(&self) -> u64 {
        self.shared
            .bytes_written
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Segments that began as a preallocated spare, segments created
    /// without one (none was ready), and spares that could not be made.
    pub fn preallocation_counts(&self) -> (u64, u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let s = &self.shared.spares;
        (
            s.used.load(Relaxed),
            s.missed.load(Relaxed),
            s.failed.load(Relaxed),
        )
    }

    /// The directory of the segments.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// Syncs everything appended and stops the background thread; later
    /// appends fail. Idempotent.
    pub fn shutdown(&self) -> Result<()> {
        self.shared.inner.lock().shutdown = true;
        self.shared.work.notify_all();
        if let Some(handle) = self.writer.lock().take() {
            let _ = handle.join();
        }
        self.shared.spares.shutdown();
        if let Some(handle) = self.spare_maker.lock().take() {
            let _ = handle.join();
        }
        match self.shared.inner.lock().final_error.take() {
            Some((kind, msg)) => Err(Error::io(
                self.shared.dir.clone(),
                std::io::Error::new(kind, msg),
            )),
            None => Ok(()),
        }
    }

    /// The paths of the segments on disk, oldest first.
    pub fn segment_paths(&self) -> Vec<PathBuf> {
        self.shared
            .inner
            .lock()
            .segments
            .values()
            .map(|s| s.path.clone())
            .collect()
    }
}

impl Drop for CommitLog {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}
