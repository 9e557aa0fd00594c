//! The storage API the query layer uses: tables, writes, point reads and
//! token-ordered scans, over memtables, a commitlog and sstables.
//!
//! Write path: a write of a table whose keyspace has durable_writes goes to
//! the commitlog first (durable per the sync mode when `apply` returns),
//! then into the table's memtable. Flush: the memtable is swapped for an
//! empty one under the table's state lock, written to a new sstable,
//! fsynced, renamed into place and recorded in the table's manifest; then
//! the commitlog learns that the table's entries up to the swap are safe.
//! Read path: the requested slices of the memtable(s) and of every sstable
//! whose bloom filter may hold the key are merged with Cassandra's
//! reconciliation, then resolved at `now`.

use crate::clustering::ClusteringComparator;
use crate::commitlog::{CommitLog, CommitLogConfig, Position};
use crate::error::{Error, Result};
use crate::fs::{Fs, RealFs, SstableWrites};
use crate::manifest::Manifest;
use crate::memtable::Memtable;
use crate::partition::Partition;
use crate::sstable::{Sstable, SstableParams, SstableWriter};
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

mod partition_sizes;
#[cfg(test)]
mod tests_flush;

/// A table's id (its schema UUID as a number).
pub type TableId = u128;

// The partition key and the bounds of a scan belong to the data model,
// which lives in `varve_types::data`; re-exported at their old path.
pub use varve_types::data::{PartitionKey, TokenBound};

/// What storage needs to know about a table.
#[derive(Clone)]
pub struct TableDescriptor {
    pub id: TableId,
    pub keyspace: String,
    pub name: String,
    pub comparator: Arc<ClusteringComparator>,
    pub params: SstableParams,
    /// False for keyspaces created with durable_writes = false.
    pub durable_writes: bool,
    /// gc_grace_seconds: how long tombstones are kept before compaction may
    /// purge them.
    pub gc_grace_seconds: i32,
    /// The table's compaction strategy and options.
    pub compaction: crate::compaction::CompactionConfig,
}

/// Where and how the node stores data.
#[derive(Clone)]
pub struct StorageOptions {
    pub data_dir: PathBuf,
    pub commitlog_dir: PathBuf,
    pub commitlog: CommitLogConfig,
    /// Memory all memtables may use before the largest is flushed
    /// (memtable_heap_space).
    pub memtable_space_bytes: usize,
    /// Commitlog size past which the tables holding its oldest segments are
    /// flushed (commitlog_total_space).
    pub commitlog_total_space_bytes: u64,
    /// compaction_throughput in MiB/s (0: unlimited).
    pub compaction_throughput_mib_per_sec: u64,
    /// concurrent_compactors: background compactions run at once (0: the
    /// default, see `compaction::DEFAULT_CONCURRENT_COMPACTORS_MAX`).
    pub concurrent_compactors: usize,
    /// Whether flushes and compactions write their sstables around the
    /// page cache (a hint to `fs`).
    pub sstable_writes: SstableWrites,
    pub fs: Arc<dyn Fs>,
    /// The clock background work reads (seconds since the epoch): the
    /// compaction manager's purge horizon and garbagecollect's. Tests that
    /// move time by hand give their own; a node uses [`Clock::system`].
    pub clock: Clock,
}

/// Seconds since the epoch, as background work sees them.
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> i32 + Send + Sync>);

impl Clock {
    /// The wall clock.
    pub fn system() -> Self {
        Clock(Arc::new(|| varve_types::time::now_seconds() as i32))
    }

    /// A clock that reads `f`.
    pub fn from_fn(f: impl Fn() -> i32 + Send + Sync + 'static) -> Self {
        Clock(Arc::new(f))
    }

    pub fn now_seconds(&self) -> i32 {
        (self.0)()
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::system()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Clock({})", self.now_seconds())
    }
}

/// Counters that tablestats shows.
#[derive(Debug, Clone, Default)]
pub struct TableStats {
    pub live_sstables: usize,
    pub space_used_bytes: u64,
    pub memtable_bytes: usize,
    pub memtable_partitions: usize,
    /// Operations in the memtable (see [`crate::memtable::operation_count`]).
    pub memtable_operations: usize,
    pub sstable_partitions: u64,
    /// Bytes of the sstables' partitions before compression
    /// (`system.size_estimates`' mean partition size).
    pub sstable_uncompressed_bytes: u64,
    pub bloom_filter_false_positives: u64,
    pub bloom_filter_true_positives: u64,
    /// Memory of the sstables' partition summaries as sampled now.
    pub index_summary_bytes: u64,
    /// Bytes of the sstables an incremental repair marked repaired.
    pub repaired_bytes: u64,
}

pub(crate) struct TableState {
    pub(crate) memtable: Arc<Memtable>,
    /// Memtables being written out; still read until their sstable is live.
    pub(crate) flushing: Vec<Arc<Memtable>>,
    pub(crate) sstables: Vec<Arc<Sstable>>,
    pub(crate) manifest: Manifest,
}

pub(crate) struct TableStore {
    pub(crate) desc: RwLock<TableDescriptor>,
    /// None for a table kept only in memory.
    pub(crate) dir: Option<PathBuf>,
    pub(crate) state: RwLock<TableState>,
    /// One flush of this table at a time.
    pub(crate) flush_lock: Mutex<()>,
    /// One major compaction of this table at a time.
    pub(crate) compaction_lock: Mutex<()>,
    /// Generations that are the inputs of a running compaction: no other
    /// compaction (background, major or garbagecollect) may take them.
    pub(crate) compacting: Mutex<BTreeSet<u64>>,
    /// Signalled whenever `compacting` loses members.
    pub(crate) compacting_freed: Condvar,
    /// The strategy choosing this table's compactions (rebuilt when ALTER
    /// TABLE changes the options).
    pub(crate) strategy: Mutex<Box<dyn crate::compaction::Strategy + Send>>,
}

/// The engine's state and operations; [`Storage`] owns one and runs its
/// background flusher.
pub struct Engine {
    pub(crate) fs: Arc<dyn Fs>,
    pub(crate) options: Option<StorageOptions>,
    pub(crate) commitlog: Option<CommitLog>,
    pub(crate) tables: RwLock<HashMap<TableId, Arc<TableStore>>>,
    pub(crate) memtable_bytes: AtomicUsize,
    flushes_completed: AtomicU64,
    /// Wakes the flusher: (work may be due, shutting down).
    pub(crate) flusher_signal: (Mutex<(bool, bool)>, Condvar),
    /// Signalled when a flush frees memtable memory; writers past the
    /// hard limit wait on it (see [`crate::engine_memory`]).
    pub(crate) memory_freed: (Mutex<()>, Condvar),
    /// Writers waiting for memtable memory right now.
    pub(crate) writers_waiting: AtomicUsize,
    /// Set when the node shuts down: running compactions stop (see
    /// [`Engine::stop_compactions`]).
    pub(crate) compactions_stopped: std::sync::atomic::AtomicBool,
    /// compaction_throughput in MiB/s (0: unlimited), changeable at runtime.
    pub(crate) compaction_throughput: AtomicU64,
    /// The share of `compaction_throughput` compactions may use now (f64
    /// bits, in `MIN_COMPACTION_RATE_FACTOR..=1`): the node lowers it while
    /// client reads wait on the disk (see [`Engine::set_compaction_rate_factor`]).
    compaction_rate_factor: AtomicU64,
    /// Bytes flushed lately: compactions keep up with them whatever the
    /// adaptive share (`compaction::throttle::rate_with_floor`).
    flush_rate: Mutex<crate::compaction::throttle::FlushRate>,
    /// Running compactions and compaction counters.
    pub(crate) compactions: crate::compaction::stats::Registry,
    /// Background compaction threads (concurrent_compactors, resolved).
    pub(crate) concurrent_compactors: usize,
    /// index_summary_capacity in bytes (see [`crate::engine_summary`]).
    pub(crate) index_summary_capacity: AtomicU64,
    /// What every sstable this engine opens shares: the chunk cache
    /// (`file_cache_size`), the key cache budget (`key_cache_size`) and
    /// the chunk trust. Per engine, never process-wide.
    pub(crate) caches: crate::sstable::NodeCaches,
    /// Partitions past these sizes are read through their row index, and
    /// compacted window by window; the row index block size (tests lower
    /// them); see [`Engine::set_large_partition_bytes`].
    large_partition_bytes: parking_lot::Mutex<(u64, u64, u64)>,
    /// Which entries sstables written from now on give a point index; see
    /// [`Engine::set_point_index`].
    point_index: parking_lot::Mutex<crate::sstable::point_index::PointIndexParams>,
    /// Snapshots: auto_snapshot, the tables' CQL, one snapshot at a time
    /// (see [`crate::engine_snapshot`]).
    pub(crate) snapshots: crate::engine_snapshot::SnapshotState,
}

/// The node's storage engine: the [`Engine`] plus the thread that flushes
/// memtables in the background when memory or the commitlog fills, so
/// writes continue during a flush.
pub struct Storage {
    engine: Arc<Engine>,
    flusher: Option<std::thread::JoinHandle<()>>,
    compactor: Option<std::thread::JoinHandle<()>>,
}

impl Default for Storage {
    fn default() -> Self {
        Storage::new()
    }
}

impl std::ops::Deref for Storage {
    type Target = Engine;

    fn deref(&self) -> &Engine {
        &self.engine
    }
}

impl Storage {
    /// A storage engine kept entirely in memory (virtual tables, tests).
    pub fn new() -> Self {
        Storage {
            engine: Arc::new(Engine::new()),
            flusher: None,
            compactor: None,
        }
    }

    /// Opens the durable engine (see [`Engine::open`]) and starts its
    /// background flusher.
    pub fn open(options: StorageOptions, tables: Vec<TableDescriptor>) -> Result<Storage> {
        let engine = Arc::new(Engine::open(options, tables)?);
        let worker = engine.clone();
        let flusher = std::thread::Builder::new()
            .name("memtable-flusher".into())
            .spawn(move || worker.run_flusher())
            .map_err(|e| Error::io("memtable-flusher", e))?;
        let worker = engine.clone();
        let compactor = std::thread::Builder::new()
            .name("compaction-manager".into())
            .spawn(move || worker.run_compaction_manager())
            .map_err(|e| Error::io("compaction-manager", e))?;
        Ok(Storage {
            engine,
            flusher: Some(flusher),
            compactor: Some(compactor),
        })
    }

    /// The engine, shared: for a data path that outlives a borrow of the
    /// storage (its background threads still belong to this `Storage`).
    pub fn engine(&self) -> Arc<Engine> {
        Arc::clone(&self.engine)
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        // Running compactions give up instead of finishing (a large one
        // held a shutdown for a minute): their inputs stay live.
        self.engine.stop_compactions();
        {
            let mut signal = self.engine.flusher_signal.0.lock();
            signal.1 = true;
        }
        self.engine.flusher_signal.1.notify_all();
        if let Some(handle) = self.flusher.take() {
            let _ = handle.join();
        }
        if let Some(handle) = self.compactor.take() {
            let _ = handle.join();
        }
    }
}

fn table_dir(data_dir: &Path, desc: &TableDescriptor) -> PathBuf {
    data_dir
        .join(&desc.keyspace)
        .join(format!("{}-{:032x}", desc.name, desc.id))
}

pub(crate) fn sstable_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("{generation}.sst"))
}

impl Engine {
    /// An engine kept entirely in memory.
    fn new() -> Self {
        Engine {
            fs: Arc::new(RealFs::default()),
            options: None,
            commitlog: None,
            tables: RwLock::new(HashMap::new()),
            memtable_bytes: AtomicUsize::new(0),
            flushes_completed: AtomicU64::new(0),
            flusher_signal: (Mutex::new((false, false)), Condvar::new()),
            memory_freed: (Mutex::new(()), Condvar::new()),
            writers_waiting: AtomicUsize::new(0),
            compactions_stopped: Default::default(),
            compaction_rate_factor: AtomicU64::new(1.0f64.to_bits()),
            flush_rate: Default::default(),
            compaction_throughput: AtomicU64::new(
                crate::compaction::throttle::DEFAULT_COMPACTION_THROUGHPUT_MIB_PER_SEC,
            ),
            compactions: Default::default(),
            concurrent_compactors: crate::engine_concurrency::resolve_concurrent_compactors(0),
            index_summary_capacity: AtomicU64::new(
                crate::engine_summary::DEFAULT_INDEX_SUMMARY_CAPACITY_BYTES,
            ),
            caches: Default::default(),
            large_partition_bytes: parking_lot::Mutex::new((
                crate::sstable::partition_reader::WHOLE_ENTRY_MAX_BYTES,
                crate::sstable::LARGE_ENTRY_BYTES,
                crate::sstable::row_index::ROW_INDEX_BLOCK_BYTES,
            )),
            point_index: Default::default(),
            snapshots: Default::default(),
        }
    }

    /// Opens the durable engine: every table's live sstables, then the
    /// commitlog, whose entries not yet in sstables are replayed into
    /// memtables.
    fn open(options: StorageOptions, tables: Vec<TableDescriptor>) -> Result<Engine> {
        let fs = options.fs.clone();
        let mut storage = Engine {
            fs: fs.clone(),
            options: Some(options.clone()),
            commitlog: None,
            tables: RwLock::new(HashMap::new()),
            memtable_bytes: AtomicUsize::new(0),
            flushes_completed: AtomicU64::new(0),
            flusher_signal: (Mutex::new((false, false)), Condvar::new()),
            memory_freed: (Mutex::new(()), Condvar::new()),
            writers_waiting: AtomicUsize::new(0),
            compactions_stopped: Default::default(),
            compaction_throughput: AtomicU64::new(options.compaction_throughput_mib_per_sec),
            compaction_rate_factor: AtomicU64::new(1.0f64.to_bits()),
            flush_rate: Default::default(),
            compactions: Default::default(),
            concurrent_compactors: crate::engine_concurrency::resolve_concurrent_compactors(
                options.concurrent_compactors,
            ),
            index_summary_capacity: AtomicU64::new(
                crate::engine_summary::DEFAULT_INDEX_SUMMARY_CAPACITY_BYTES,
            ),
            caches: Default::default(),
            large_partition_bytes: parking_lot::Mutex::new((
                crate::sstable::partition_reader::WHOLE_ENTRY_MAX_BYTES,
                crate::sstable::LARGE_ENTRY_BYTES,
                crate::sstable::row_index::ROW_INDEX_BLOCK_BYTES,
            )),
            point_index: Default::default(),
            snapshots: Default::default(),
        };
        for desc in tables {
            storage.open_table(desc)?;
        }
        let comparators: HashMap<TableId, Arc<ClusteringComparator>> = storage
            .tables
            .read()
            .iter()
            .map(|(id, t)| (*id, t.desc.read().comparator.clone()))
            .collect();
        let lookup = |id: TableId| comparators.get(&id).cloned();
        // New segments must sort after every position a manifest recorded.
        let floor = storage
            .tables
            .read()
            .values()
            .filter_map(|t| t.state.read().manifest.replayed_up_to)
            .map(|(segment, _)| segment.saturating_add(1))
            .max()
            .unwrap_or(0);
        let mut config = options.commitlog.clone();
        config.min_segment_id = config.min_segment_id.max(floor);
        let (commitlog, mut replay) = CommitLog::open(fs, &options.commitlog_dir, config, &lookup)?;
        let mut replayed = 0u64;
        for entry in replay.by_ref() {
            let Some(table) = storage.tables.read().get(&entry.table).cloned() else {
                continue;
            };
            let state = table.state.read();
            if let Some(done) = state.manifest.replayed_up_to {
                // Entries before the last flush's switch point are in sstables.
                if (entry.position.segment_id, entry.position.offset) < done {
                    continue;
                }
            }
            let size = crate::memtable::estimate_bytes(&entry.partition);
            state.memtable.apply(&entry.key, entry.partition, size);
            storage.memtable_bytes.fetch_add(size, Ordering::Relaxed);
            replayed += 1;
        }
        for w in replay.warnings() {
            tracing::warn!(
                "commitlog replay skipped data in {} at offset {}: {:?}: {}",
                w.file.display(),
                w.offset,
                w.kind,
                w.reason
            );
        }
        if replayed > 0 {
            tracing::info!("replayed {replayed} commitlog entries");
        }
        // What the manifests say is already in sstables no segment needs to
        // keep (found by the durability tests: without this, segments found
        // at start were never released).
        for (id, table) in storage.tables.read().iter() {
            if let Some((segment, offset)) = table.state.read().manifest.replayed_up_to {
                commitlog.mark_flushed(*id, Position::new(segment, offset))?;
            }
        }
        storage.commitlog = Some(commitlog);
        Ok(storage)
    }

    /// Registers a table (idempotent). With a data directory, its live
    /// sstables are opened and leftovers of interrupted writes removed.
    pub fn create_table(&self, desc: TableDescriptor) -> Result<()> {
        if self.tables.read().contains_key(&desc.id) {
            return Ok(());
        }
        self.open_table(desc)
    }

    fn open_table(&self, desc: TableDescriptor) -> Result<()> {
        let (dir, manifest, sstables) = match &self.options {
            None => (None, Manifest::default(), Vec::new()),
            Some(o) => {
                let dir = table_dir(&o.data_dir, &desc);
                self.fs
                    .create_dir_all(&dir)
                    .map_err(|e| Error::io(&dir, e))?;
                let mut manifest = Manifest::load(self.fs.as_ref(), &dir)?;
                crate::engine_repair::forget_sessions(&mut manifest);
                let mut sstables = Vec::new();
                for g in &manifest.live {
                    let path = sstable_path(&dir, *g);
                    let sstable = self.open_sstable(&path, &desc)?;
                    // Found at start: written when the file was last
                    // modified (as Cassandra reads it), else now.
                    let created = self.fs.modified_seconds(&path);
                    sstable.set_created_at_seconds(
                        created.unwrap_or_else(|| i64::from(self.now_seconds())),
                    );
                    sstables.push(Arc::new(sstable));
                }
                self.remove_leftovers(&dir, &manifest)?;
                (Some(dir), manifest, sstables)
            }
        };
        let store = TableStore {
            desc: RwLock::new(desc.clone()),
            dir,
            state: RwLock::new(TableState {
                memtable: Arc::new(Memtable::new()),
                flushing: Vec::new(),
                sstables,
                manifest,
            }),
            flush_lock: Mutex::new(()),
            compaction_lock: Mutex::new(()),
            compacting: Mutex::new(BTreeSet::new()),
            compacting_freed: Condvar::new(),
            strategy: Mutex::new(desc.compaction.new_strategy()),
        };
        self.tables.write().insert(desc.id, Arc::new(store));
        Ok(())
    }

    /// Deletes files of the table directory the manifest does not list
    /// (sstables of an interrupted flush, temporary files).
    fn remove_leftovers(&self, dir: &Path, manifest: &Manifest) -> Result<()> {
        let live: BTreeSet<PathBuf> = manifest
            .live
            .iter()
            .map(|g| sstable_path(dir, *g))
            .collect();
        for path in self.fs.list(dir).map_err(|e| Error::io(dir, e))? {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let ours = name.ends_with(".sst") || name.ends_with(".tmp");
            if ours && !live.contains(&path) {
                self.fs.remove(&path).map_err(|e| Error::io(&path, e))?;
            }
        }
        Ok(())
    }

    /// Changes the sstable parameters used by the next flushes (ALTER
    /// TABLE); a new `crc_check_chance` also applies to the sstables
    /// already open, as in Cassandra.
    pub fn update_table(&self, desc: TableDescriptor) -> Result<()> {
        let table = self.table(desc.id)?;
        let changed = table.desc.read().compaction != desc.compaction;
        if changed {
            // A strategy switch (ALTER TABLE ... WITH compaction) takes
            // effect at once: the new strategy sees the live sstables.
            *table.strategy.lock() = desc.compaction.new_strategy();
        }
        let chance = desc.params.crc_check_chance;
        *table.desc.write() = desc;
        // After the descriptor: a flush or compaction that makes its output
        // live meanwhile sets the new chance on it, under the state lock,
        // or its output is in the list below.
        for sstable in &table.state.read().sstables {
            sstable.set_crc_check_chance(chance);
        }
        Ok(())
    }

    /// Forgets a table and deletes its files, after its auto_snapshot
    /// (`dropped-<millis>-<table>`, unless auto_snapshot is off). Its
    /// snapshots stay: the directory `snapshots/` is never deleted here.
    /// A failed auto_snapshot keeps every file of the table (the drop
    /// itself is done: the schema no longer has the table).
    pub fn drop_table(&self, id: TableId) -> Result<()> {
        if !self.tables.read().contains_key(&id) {
            return Ok(());
        }
        let keep_files = !self.auto_snapshot_before_drop(id);
        let Some(table) = self.tables.write().remove(&id) else {
            return Ok(());
        };
        let _flush = table.flush_lock.lock();
        let state = table.state.read();
        self.memtable_bytes.fetch_sub(
            state
                .memtable
                .bytes()
                .min(self.memtable_bytes.load(Ordering::Relaxed)),
            Ordering::Relaxed,
        );
        if let (Some(dir), false) = (&table.dir, keep_files) {
            self.remove_table_files(dir)?;
        }
        if let Some(cl) = &self.commitlog {
            cl.mark_flushed(id, Position::MAX)?;
        }
        Ok(())
    }

    /// Removes every partition of the table, after its auto_snapshot
    /// (`truncated-<millis>-<table>`, unless auto_snapshot is off; if it
    /// fails, nothing is removed).
    pub fn truncate(&self, id: TableId) -> Result<()> {
        let table = self.table(id)?;
        self.auto_snapshot_before(id, crate::snapshot_manifest::TRUNCATED_PREFIX)?;
        let _flush = table.flush_lock.lock();
        let mut state = table.state.write();
        let old = std::mem::replace(&mut state.memtable, Arc::new(Memtable::new()));
        self.release_memory(old.bytes());
        let removed = std::mem::take(&mut state.sstables);
        state.flushing.clear();
        if let Some(dir) = &table.dir {
            let position = self.commitlog.as_ref().map(|c| c.current_position());
            state.manifest.live.clear();
            if let Some(p) = position {
                state.manifest.replayed_up_to = Some((p.segment_id, p.offset));
            }
            state.manifest.store(self.fs.as_ref(), dir)?;
            for s in removed {
                let path = s.path().to_path_buf();
                drop(s);
                self.fs.remove(&path).map_err(|e| Error::io(&path, e))?;
            }
            if let (Some(cl), Some(p)) = (&self.commitlog, position) {
                cl.mark_flushed(id, p)?;
            }
        }
        Ok(())
    }

    pub fn comparator(&self, id: TableId) -> Result<Arc<ClusteringComparator>> {
        Ok(self.table(id)?.desc.read().comparator.clone())
    }

    pub(crate) fn table(&self, id: TableId) -> Result<Arc<TableStore>> {
        self.tables
            .read()
            .get(&id)
            .cloned()
            .ok_or(Error::UnknownTable(id))
    }

    fn release_memory(&self, bytes: usize) {
        let _ = self
            .memtable_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_sub(bytes))
            });
        self.memory_released();
    }

    /// Writes `update`: to the commitlog (when the table is durable), then
    /// to the memtable. Returns once the write is as durable as the sync
    /// mode promises.
    pub fn apply(&self, id: TableId, key: &PartitionKey, update: Partition) -> Result<()> {
        let table = self.table(id)?;
        self.wait_for_memtable_memory()?;
        let size = crate::memtable::estimate_bytes(&update);
        {
            // The read lock keeps a flush from swapping the memtable between
            // the commitlog append and the memtable insert.
            let state = table.state.read();
            if let (Some(cl), true) = (&self.commitlog, table.desc.read().durable_writes) {
                varve_types::trace::event(|| "Appending to commitlog".into());
                cl.append(id, key, &update)?;
            }
            state.memtable.apply(key, update, size);
        }
        varve_types::trace::event(|| format!("Adding to {} memtable", table.desc.read().name));
        let total = self.memtable_bytes.fetch_add(size, Ordering::Relaxed) + size;
        if let Some(o) = &self.options {
            let log_full = self
                .commitlog
                .as_ref()
                .is_some_and(|c| c.total_bytes() > o.commitlog_total_space_bytes);
            if total > o.memtable_space_bytes || log_full {
                self.wake_flusher();
            }
            // Back-pressure: past twice the budget the writer helps flush,
            // unless it runs where it may not block (the event loop): the
            // flusher is awake, and past the hard limit writes wait on a
            // thread that may.
            if total > o.memtable_space_bytes.saturating_mul(2) && crate::io_mode::may_block() {
                self.flush_largest()?;
            }
        }
        Ok(())
    }

    /// Whether [`Engine::apply`] of `update` to table `id` would pass the
    /// commitlog's size limit: its error when not. Writes nothing.
    pub fn check_mutation_size(
        &self,
        id: TableId,
        key: &PartitionKey,
        update: &Partition,
    ) -> Result<()> {
        let table = self.table(id)?;
        let durable = table.desc.read().durable_writes;
        match (&self.commitlog, durable) {
            (Some(cl), true) => cl.check_size(id, key, update),
            _ => Ok(()),
        }
    }

    /// The largest commitlog entry a write may make; `None` without a
    /// commitlog.
    pub fn max_mutation_bytes(&self) -> Option<u64> {
        self.commitlog.as_ref().map(|cl| cl.max_mutation_bytes())
    }

    /// [`Engine::apply`], then waits until the commitlog holds the write
    /// on disk whatever its sync mode (Paxos state: a replica must never
    /// forget a promise or an acceptance, docs/design/paxos.md, section 4).
    /// Concurrent callers share one fsync. Blocks: call it where waiting
    /// is allowed.
    pub fn apply_synced(&self, id: TableId, key: &PartitionKey, update: Partition) -> Result<()> {
        self.apply(id, key, update)?;
        self.sync()
    }

    /// Waits until everything applied so far is on disk, whatever the
    /// commitlog's sync mode. Blocks: call it where waiting is allowed.
    pub fn sync(&self) -> Result<()> {
        match &self.commitlog {
            Some(cl) if !self.writes_wait_for_sync() => cl.sync(),
            _ => Ok(()),
        }
    }

    /// Asks for everything applied so far to be made durable, whatever the
    /// commitlog's sync mode; `None` when it already is (no commitlog, or
    /// writes that wait for their fsync). The future is awaited without
    /// holding a thread ([`Engine::apply_synced`] split in two: apply
    /// under a lock, release it, then await this).
    pub fn sync_later(&self) -> Result<Option<crate::commitlog::SyncWait>> {
        match &self.commitlog {
            Some(cl) if !self.writes_wait_for_sync() => cl.sync_later().map(Some),
            _ => Ok(None),
        }
    }

    /// A table's `gc_grace_seconds`.
    pub fn gc_grace_seconds(&self, id: TableId) -> Result<i32> {
        Ok(self.table(id)?.desc.read().gc_grace_seconds)
    }

    /// Writes the table's memtable to a new sstable.
    pub fn flush(&self, id: TableId) -> Result<()> {
        let table = self.table(id)?;
        let Some(dir) = table.dir.clone() else {
            return Ok(());
        };
        let _flush = table.flush_lock.lock();
        let (memtable, position, generation) = {
            let mut state = table.state.write();
            if state.memtable.is_empty() {
                // Nothing to write, but the commitlog may drop this table's
                // claim on its segments (replayed data already in sstables).
                if state.flushing.is_empty() {
                    if let Some(cl) = &self.commitlog {
                        cl.mark_flushed(id, cl.current_position())?;
                    }
                }
                return Ok(());
            }
            let next = Arc::new(Memtable::sized_after(&state.memtable));
            let old = std::mem::replace(&mut state.memtable, next);
            state.flushing.push(old.clone());
            let generation = state.manifest.next_generation.max(1);
            state.manifest.next_generation = generation + 1;
            (
                old,
                self.commitlog.as_ref().map(|c| c.current_position()),
                generation,
            )
        };
        let desc = table.desc.read().clone();
        let path = sstable_path(&dir, generation);
        let tmp = dir.join(format!("{generation}.sst.tmp"));
        let result = (|| -> Result<Arc<Sstable>> {
            let mut w = SstableWriter::create_with_cache(
                self.fs.clone(),
                &tmp,
                desc.params,
                desc.comparator.clone(),
                self.sstable_writes().flush,
            )?;
            w.set_row_index_block_bytes(self.row_index_block_bytes());
            w.set_point_index(self.point_index());
            memtable.try_for_each(|key, partition| w.add(key, partition))?;
            w.finish()?;
            self.fs
                .rename(&tmp, &path)
                .map_err(|e| Error::io(&path, e))?;
            self.fs.sync_dir(&dir).map_err(|e| Error::io(&dir, e))?;
            let sstable = self.open_sstable(&path, &desc)?;
            sstable.set_created_at_seconds(i64::from(self.now_seconds()));
            Ok(Arc::new(sstable))
        })();
        let mut state = table.state.write();
        let sstable = match result {
            Ok(s) => s,
            Err(e) => {
                // The flush failed (a full disk, say): its data goes back into
                // the active memtable, so the next flush writes it and no
                // commitlog segment holding it is released before that.
                // Found by the full-disk test: leaving it aside lost it once
                // a later flush released the commitlog.
                let _ = self.fs.remove(&tmp);
                for (key, partition) in memtable.snapshot() {
                    let size = crate::memtable::estimate_bytes(&partition);
                    state.memtable.apply(&key, partition, size);
                }
                state.flushing.retain(|m| !Arc::ptr_eq(m, &memtable));
                return Err(e);
            }
        };
        state.manifest.live.push(generation);
        if let Some(p) = position {
            state.manifest.replayed_up_to = Some((p.segment_id, p.offset));
        }
        state.manifest.store(self.fs.as_ref(), &dir)?;
        self.compactions.flushed(id, sstable.size_on_disk());
        self.flush_rate
            .lock()
            .record(Instant::now(), sstable.size_on_disk());
        let flushed =
            crate::compaction::policy::SstableView::new(generation, sstable.size_on_disk());
        // An ALTER of crc_check_chance during the flush reached only the
        // sstables live then (see `update_table`).
        sstable.set_crc_check_chance(table.desc.read().params.crc_check_chance);
        state.sstables.push(sstable);
        state.flushing.retain(|m| !Arc::ptr_eq(m, &memtable));
        drop(state);
        // UCS learns the flush size from here (its base level width). Not
        // under the state lock: compaction takes the strategy lock first.
        table.strategy.lock().on_flush(&flushed);
        self.release_memory(memtable.bytes());
        if let (Some(cl), Some(p)) = (&self.commitlog, position) {
            cl.mark_flushed(id, p)?;
        }
        self.flushes_completed.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Flushes every table.
    pub fn flush_all(&self) -> Result<()> {
        let ids: Vec<TableId> = self.tables.read().keys().copied().collect();
        for id in ids {
            self.flush(id)?;
        }
        Ok(())
    }

    /// Flushes everything and syncs the commitlog: after drain, a restart
    /// replays nothing.
    pub fn drain(&self) -> Result<()> {
        self.flush_all()?;
        if let Some(cl) = &self.commitlog {
            cl.sync()?;
        }
        Ok(())
    }

    /// Opens one of a table's sstables, reading through the node's chunk
    /// cache.
    pub(crate) fn open_sstable(&self, path: &Path, desc: &TableDescriptor) -> Result<Sstable> {
        let sstable = Sstable::open(
            self.fs.clone(),
            path,
            desc.comparator.clone(),
            desc.params.crc_check_chance,
        )?;
        let (whole, large, _) = *self.large_partition_bytes.lock();
        sstable.set_whole_entry_max_bytes(whole);
        sstable.set_large_entry_bytes(large);
        Ok(sstable.with_node_caches(&self.caches))
    }

    /// The chunk cache's counters (`nodetool info`, metrics).
    pub fn block_cache_stats(&self) -> crate::sstable::BlockCacheStats {
        self.caches.blocks.stats()
    }

    /// Sets `file_cache_size`: the chunk cache's budget (0: off).
    pub fn set_file_cache_size(&self, bytes: u64) {
        self.caches.blocks.set_capacity(bytes);
    }

    /// Sets `key_cache_size`: the bytes all of this node's sstables' key
    /// caches may hold (0: off); entries already held stay until their
    /// sstables need room.
    pub fn set_key_cache_size(&self, bytes: u64) {
        self.caches.keys.set_capacity(bytes);
    }

    /// The key caches' (bytes used, budget) over all sstables.
    pub fn key_cache_usage(&self) -> (u64, u64) {
        (self.caches.keys.used(), self.caches.keys.capacity())
    }

    /// Up to `limit` partition keys in token order between `start` and
    /// `end`, from every source.
    pub fn scan_keys(
        &self,
        id: TableId,
        start: &TokenBound,
        end: &TokenBound,
        limit: usize,
    ) -> Result<Vec<PartitionKey>> {
        self.scan_keys_skipping(id, start, end, limit, &BTreeSet::new())
    }

    /// Number of partitions stored (an estimate: sources may overlap).
    pub fn partition_count(&self, id: TableId) -> Result<usize> {
        let stats = self.table_stats(id)?;
        Ok(stats.memtable_partitions + stats.sstable_partitions as usize)
    }

    pub fn table_stats(&self, id: TableId) -> Result<TableStats> {
        let table = self.table(id)?;
        let state = table.state.read();
        let mut s = TableStats {
            live_sstables: state.sstables.len(),
            memtable_bytes: state.memtable.bytes(),
            memtable_partitions: state.memtable.partition_count(),
            memtable_operations: state.memtable.operation_count(),
            ..TableStats::default()
        };
        for t in &state.sstables {
            s.space_used_bytes += t.size_on_disk();
            if crate::engine_compact::generation_of(t).is_some_and(|g| {
                matches!(
                    state.manifest.repair.get(&g),
                    Some(crate::manifest::RepairMark::Repaired { .. })
                )
            }) {
                s.repaired_bytes += t.size_on_disk();
            }
            s.sstable_partitions += t.stats().partition_count;
            s.sstable_uncompressed_bytes += t.stats().uncompressed_len;
            s.bloom_filter_false_positives += t.bloom_false_positives();
            s.bloom_filter_true_positives += t.bloom_true_positives();
            s.index_summary_bytes += t.summary().memory_bytes() as u64;
        }
        Ok(s)
    }

    /// Now, by the engine's [`Clock`] (the wall clock for an in-memory
    /// engine).
    pub fn now_seconds(&self) -> i32 {
        self.options.as_ref().map_or_else(
            || varve_types::time::now_seconds() as i32,
            |o| o.clock.now_seconds(),
        )
    }

    /// Whether a write may wait for an fsync before it returns (commitlog
    /// in batch or group mode). Callers on an event loop hand such writes
    /// to a thread that may block.
    pub fn writes_wait_for_sync(&self) -> bool {
        self.options.as_ref().is_some_and(|o| {
            !matches!(
                o.commitlog.sync,
                crate::commitlog::SyncMode::Periodic { .. }
            )
        })
    }

    /// How sstables are written (the node's options; the default for an
    /// engine opened without them).
    pub(crate) fn sstable_writes(&self) -> SstableWrites {
        self.options
            .as_ref()
            .map_or_else(SstableWrites::default, |o| o.sstable_writes)
    }

    /// compaction_throughput in MiB/s (0: unlimited).
    pub fn compaction_throughput(&self) -> u64 {
        self.compaction_throughput.load(Ordering::Relaxed)
    }

    /// The share of `compaction_throughput` compactions use now.
    pub fn compaction_rate_factor(&self) -> f64 {
        f64::from_bits(self.compaction_rate_factor.load(Ordering::Relaxed))
    }

    /// Sets that share (clamped to `MIN_COMPACTION_RATE_FACTOR..=1`), at once
    /// for running compactions: the node's controller lowers it while
    /// client reads wait on the disk and raises it back when they do not
    /// (`compaction::throttle`).
    pub fn set_compaction_rate_factor(&self, factor: f64) {
        let f = if factor.is_nan() { 1.0 } else { factor };
        let f = f.clamp(crate::compaction::throttle::MIN_COMPACTION_RATE_FACTOR, 1.0);
        self.compaction_rate_factor
            .store(f.to_bits(), Ordering::Relaxed);
    }

    /// Whether a compaction (garbagecollect included) runs now.
    pub fn compactions_running(&self) -> bool {
        self.compactions.any_running()
    }

    /// The rate a compaction may write at now, in bytes per second (`None`:
    /// unlimited): the adaptive share of `compaction_throughput`, but, for
    /// one that `keeps_up`, never less than it takes to keep up with the
    /// flushes.
    pub(crate) fn compaction_rate_bytes(&self, keeps_up: bool) -> Option<f64> {
        match self.compaction_throughput() {
            0 => None,
            mib => {
                let flushed = if keeps_up {
                    self.flush_rate.lock().bytes_per_sec(Instant::now())
                } else {
                    0.0
                };
                Some(crate::compaction::throttle::rate_with_floor(
                    mib as f64 * (1 << 20) as f64,
                    self.compaction_rate_factor(),
                    flushed,
                ))
            }
        }
    }

    /// Changes compaction_throughput for running and future compactions.
    pub fn set_compaction_throughput(&self, mib_per_sec: u64) {
        self.compaction_throughput
            .store(mib_per_sec, Ordering::Relaxed);
    }

    /// Flushes completed since start (a metric).
    pub fn flushes_completed(&self) -> u64 {
        self.flushes_completed.load(Ordering::Relaxed)
    }
}
