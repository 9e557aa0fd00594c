//! The outputs of one compaction: partitions go to `<generation>.sst.tmp`,
//! a new output starts once the current one passes `max_output_bytes`, the
//! writes stay under `compaction_throughput`, and a finished output is
//! fsynced and renamed into place (live only once the manifest says so).
//! If the compaction fails, [`Outputs::abandon`] removes what it wrote.

use crate::clustering::{ClusteringComparator, ClusteringKey};
use crate::encoding::v3::Header;
use crate::engine::{sstable_path, Engine, PartitionKey, TableStore};
use crate::error::{Error, Result};
use crate::partition::Partition;
use crate::sstable::{SstableParams, SstableWriter};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Bytes a compaction writes between two looks at compaction_throughput.
pub(super) const THROTTLE_CHECK_BYTES: u64 = 256 * 1024;

/// The sequence of output sstables of one compaction.
pub(super) struct Outputs<'a> {
    engine: &'a Engine,
    table: &'a TableStore,
    dir: PathBuf,
    /// The table's parameters when the compaction started.
    params: SstableParams,
    comparator: Arc<ClusteringComparator>,
    /// Start a new output past this many bytes (0: one output).
    max_output_bytes: u64,
    current: Option<(u64, SstableWriter)>,
    /// Outputs fsynced and renamed into place, in order.
    finished: Vec<u64>,
    /// Bytes of the finished outputs.
    done_bytes: u64,
    next_check: u64,
    /// Bytes written and when, at the last throttle check.
    last_check: (u64, Instant),
    /// Bytes read outside the inputs (a garbagecollect's shadow lookups),
    /// paced by the throttle with what is written.
    read_elsewhere: u64,
    /// Whether this compaction must keep up with the flushes (a strategy's
    /// choice; garbagecollect and major compactions give way instead).
    keeps_up: bool,
}

impl<'a> Outputs<'a> {
    pub(super) fn new(
        engine: &'a Engine,
        table: &'a TableStore,
        dir: &Path,
        (params, comparator): (SstableParams, Arc<ClusteringComparator>),
        max_output_bytes: u64,
        keeps_up: bool,
    ) -> Self {
        Outputs {
            keeps_up,
            read_elsewhere: 0,
            engine,
            table,
            dir: dir.to_path_buf(),
            params,
            comparator,
            max_output_bytes,
            current: None,
            finished: Vec::new(),
            done_bytes: 0,
            next_check: THROTTLE_CHECK_BYTES,
            last_check: (0, Instant::now()),
        }
    }

    /// Appends a partition (keys ascending), starting an output if none is
    /// open and finishing it once it is full.
    pub(super) fn add(&mut self, key: &PartitionKey, partition: &Partition) -> Result<()> {
        self.writer()?.add(key, partition)?;
        self.throttle();
        self.finish_if_full()
    }

    /// Opens an output if none is open.
    fn writer(&mut self) -> Result<&mut SstableWriter> {
        if self.current.is_none() {
            let generation = self.engine.next_generation(self.table);
            let mut writer = SstableWriter::create_with_cache(
                self.engine.fs.clone(),
                &tmp_path(&self.dir, generation),
                self.params,
                self.comparator.clone(),
                self.engine.sstable_writes().compaction,
            )?;
            writer.set_row_index_block_bytes(self.engine.row_index_block_bytes());
            writer.set_point_index(self.engine.point_index());
            self.current = Some((generation, writer));
        }
        match self.current.as_mut() {
            Some((_, w)) => Ok(w),
            None => unreachable!("an output was just opened"),
        }
    }

    /// Counts `bytes` read from sstables outside the compaction (shadow
    /// lookups: random reads, each as costly to the client as a write) into
    /// what the throttle paces.
    pub(super) fn charge_read(&mut self, bytes: u64) {
        self.read_elsewhere += bytes;
    }

    /// What the throttle paces: bytes written (finished outputs and the
    /// open one) and bytes read outside the inputs.
    fn paced_bytes(&self) -> u64 {
        let open = self.current.as_ref().map_or(0, |(_, w)| w.bytes_written());
        self.done_bytes + open + self.read_elsewhere
    }

    /// Pauses to stay under compaction_throughput, times the share the
    /// node leaves compactions now (both read again at every check: they
    /// change while a compaction runs, and apply to what it writes next).
    fn throttle(&mut self) {
        if self.current.is_none() {
            return;
        }
        let written = self.paced_bytes();
        if written >= self.next_check {
            self.next_check = written + THROTTLE_CHECK_BYTES;
            let (checked_bytes, checked_at) = self.last_check;
            let pause = crate::compaction::throttle::pause_for(
                self.engine.compaction_rate_bytes(self.keeps_up),
                written.saturating_sub(checked_bytes),
                checked_at.elapsed(),
            );
            if !pause.is_zero() {
                self.engine.compaction_pause(pause);
            }
            self.last_check = (written, Instant::now());
        }
    }

    /// Starts a large partition written window by window (see
    /// [`SstableWriter::begin_partition`]).
    pub(super) fn begin_partition(&mut self, key: &PartitionKey, header: &Header) -> Result<()> {
        self.writer()?.begin_partition(key, header)
    }

    /// One window of the large partition begun last.
    pub(super) fn write_window(
        &mut self,
        start: &ClusteringKey,
        end: Option<&ClusteringKey>,
        window: &Partition,
    ) -> Result<()> {
        self.writer()?.write_window(start, end, window)?;
        self.throttle();
        Ok(())
    }

    /// Ends the large partition; the output is finished if full.
    pub(super) fn end_partition(&mut self) -> Result<()> {
        self.writer()?.end_partition()?;
        self.finish_if_full()
    }

    fn finish_if_full(&mut self) -> Result<()> {
        let full = self.max_output_bytes > 0
            && self
                .current
                .as_ref()
                .is_some_and(|(_, w)| w.bytes_written() >= self.max_output_bytes);
        if full {
            self.finish_current()?;
        }
        Ok(())
    }

    /// The generations of the outputs finished so far, in order.
    pub(super) fn finished(&self) -> &[u64] {
        &self.finished
    }

    /// Finishes the open output, if any.
    pub(super) fn finish_current(&mut self) -> Result<()> {
        if let Some((g, w)) = self.current.take() {
            self.done_bytes += w.bytes_written();
            self.finished.push(g);
            finish_output(self.engine, &self.dir, g, w)?;
        }
        Ok(())
    }

    /// Removes every file written: none is live, so they are leftovers
    /// either way (removed now, or at the next start).
    pub(super) fn abandon(self) {
        let fs = &self.engine.fs;
        for g in &self.finished {
            let _ = fs.remove(&sstable_path(&self.dir, *g));
        }
        if let Some((g, w)) = self.current {
            drop(w);
            let _ = fs.remove(&tmp_path(&self.dir, g));
        }
    }
}

fn tmp_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("{generation}.sst.tmp"))
}

/// Fsyncs an output and renames it into place (not yet live).
fn finish_output(engine: &Engine, dir: &Path, generation: u64, w: SstableWriter) -> Result<()> {
    w.finish()?;
    let path = sstable_path(dir, generation);
    engine
        .fs
        .rename(&tmp_path(dir, generation), &path)
        .map_err(|e| Error::io(&path, e))?;
    engine.fs.sync_dir(dir).map_err(|e| Error::io(dir, e))
}

impl Engine {
    /// Allocates an sstable generation (kept in the manifest on its next write).
    fn next_generation(&self, table: &TableStore) -> u64 {
        let mut state = table.state.write();
        let g = state.manifest.next_generation.max(1);
        state.manifest.next_generation = g + 1;
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::Cell;
    use crate::commitlog::CommitLogConfig;
    use crate::engine::{Clock, Storage, StorageOptions, TableDescriptor};
    use crate::fs_sim::SimFs;
    use crate::row::Row;
    use bytes::Bytes;

    fn open() -> (Storage, TableDescriptor) {
        let desc = TableDescriptor {
            id: 9,
            keyspace: "ks".into(),
            name: "t".into(),
            comparator: ClusteringComparator::new(Vec::new()),
            params: Default::default(),
            durable_writes: false,
            gc_grace_seconds: 864_000,
            compaction: Default::default(),
        };
        let options = StorageOptions {
            data_dir: "/data".into(),
            commitlog_dir: "/commitlog".into(),
            commitlog: CommitLogConfig::default(),
            memtable_space_bytes: 1 << 30,
            commitlog_total_space_bytes: 1 << 30,
            compaction_throughput_mib_per_sec: 0,
            concurrent_compactors: 1,
            sstable_writes: Default::default(),
            fs: Arc::new(SimFs::new()),
            clock: Clock::system(),
        };
        let s = Storage::open(options, vec![desc.clone()]).expect("open");
        (s, desc)
    }

    /// A garbagecollect's shadow lookups count with what it writes, so a
    /// lowered share slows its reads of other sstables too.
    #[test]
    fn reads_outside_the_inputs_are_paced_with_the_writes() {
        let (s, desc) = open();
        let table = s.table(desc.id).expect("table");
        let dir = PathBuf::from(format!("/data/ks/t-{:032x}", desc.id));
        let mut out = Outputs::new(
            &s,
            &table,
            &dir,
            (desc.params, desc.comparator.clone()),
            0,
            false,
        );
        assert_eq!(out.paced_bytes(), 0);
        out.charge_read(5000);
        assert_eq!(out.paced_bytes(), 5000, "a read alone is paced");
        let mut row = Row::default();
        row.cells
            .insert((0, None), Cell::live(1, Bytes::from(vec![7u8; 100])));
        let p = Partition {
            static_row: Some(row),
            ..Partition::default()
        };
        out.add(&PartitionKey::new(Bytes::from_static(b"k")), &p)
            .expect("add");
        let written = out.current.as_ref().map_or(0, |(_, w)| w.bytes_written());
        assert_eq!(out.paced_bytes(), 5000 + written);
        out.abandon();
    }
}
