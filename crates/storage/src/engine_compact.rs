//! Running a compaction: merge some sstables of a table into new ones,
//! dropping shadowed data and purgeable tombstones, then swap inputs for
//! outputs in one manifest write, so a crash at any point leaves either the
//! inputs or the outputs live (never both, never neither). Leftover files
//! of an interrupted compaction are removed when the table opens.

use crate::compaction::purge::{compact_partition, PurgeRule};
use crate::compaction::{SstableView, Task};
use crate::engine::{sstable_path, Engine, PartitionKey, TableId};
use crate::error::{Error, Result};
use crate::partition::Partition;
use crate::sstable::{Sstable, SstableWriter};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How often the compaction manager asks the strategies for work.
const COMPACTION_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);
/// Bytes a compaction writes between two looks at compaction_throughput.
const THROTTLE_CHECK_BYTES: u64 = 256 * 1024;
/// Tasks run for one table before the manager moves to the next.
const MAX_TASKS_PER_ROUND: u32 = 16;

/// Bytes written by compactions since start (a metric).
pub static BYTES_COMPACTED: AtomicU64 = AtomicU64::new(0);

/// The generation number of an sstable, from its file name.
pub fn generation_of(s: &Sstable) -> Option<u64> {
    s.path().file_stem()?.to_str()?.parse().ok()
}

/// What one compaction did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactionResult {
    pub inputs: Vec<u64>,
    pub outputs: Vec<u64>,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub partitions_written: u64,
}

impl Engine {
    /// The generations of the table's live sstables.
    pub fn table_generations(&self, id: TableId) -> Result<Vec<u64>> {
        Ok(self
            .table(id)?
            .state
            .read()
            .sstables
            .iter()
            .filter_map(|s| generation_of(s))
            .collect())
    }

    /// Merges every live sstable of the table into one (`nodetool compact`).
    pub fn major_compact(&self, id: TableId, now_seconds: i32) -> Result<CompactionResult> {
        let table = self.table(id)?;
        let inputs: Vec<u64> = table
            .state
            .read()
            .sstables
            .iter()
            .filter_map(|s| generation_of(s))
            .collect();
        if inputs.len() < 2 && !self.has_purgeable(id, now_seconds)? {
            return Ok(CompactionResult {
                inputs: inputs.clone(),
                outputs: inputs,
                ..Default::default()
            });
        }
        self.compact(id, &inputs, 0, now_seconds)
    }

    fn has_purgeable(&self, id: TableId, now_seconds: i32) -> Result<bool> {
        let table = self.table(id)?;
        let gc_before = now_seconds.saturating_sub(table.desc.read().gc_grace_seconds);
        let state = table.state.read();
        Ok(state.sstables.iter().any(|s| {
            s.stats().min_local_deletion_time < gc_before
                && s.stats().tombstone_count + s.stats().expiring_count > 0
        }))
    }

    /// Compacts the sstables with these generations into new sstables of at
    /// most `max_output_bytes` each (0: one output).
    pub fn compact(
        &self,
        id: TableId,
        inputs: &[u64],
        max_output_bytes: u64,
        now_seconds: i32,
    ) -> Result<CompactionResult> {
        self.compact_to_level(id, inputs, max_output_bytes, 0, now_seconds)
    }

    /// The view of a table's live sstables its strategy decides from.
    pub fn sstable_views(&self, id: TableId, now_seconds: i32) -> Result<Vec<SstableView>> {
        let table = self.table(id)?;
        let gc_before = now_seconds.saturating_sub(table.desc.read().gc_grace_seconds);
        let state = table.state.read();
        Ok(state
            .sstables
            .iter()
            .filter_map(|s| {
                let g = generation_of(s)?;
                let st = s.stats();
                let values = (st.cell_count + st.tombstone_count).max(1) as f64;
                Some(SstableView {
                    id: g,
                    size_bytes: s.size_on_disk(),
                    level: state.manifest.levels.get(&g).copied().unwrap_or(0),
                    min_timestamp: st.min_timestamp,
                    max_timestamp: st.max_timestamp,
                    max_local_deletion_time: st.max_local_deletion_time,
                    first_token: st.first_key.as_ref().map_or(i64::MIN, |k| k.token),
                    last_token: st.last_key.as_ref().map_or(i64::MAX, |k| k.token),
                    created_at_seconds: i64::from(now_seconds),
                    droppable_tombstone_ratio: st.droppable_tombstones(gc_before) / values,
                    reads_per_key: 0.0,
                    compacting: false,
                })
            })
            .collect())
    }

    /// Runs at most one task the table's strategy chooses; returns whether
    /// it ran one.
    pub fn compact_once(&self, id: TableId, now_seconds: i32) -> Result<bool> {
        let table = self.table(id)?;
        if table.dir.is_none() {
            return Ok(false);
        }
        let gc_before = now_seconds.saturating_sub(table.desc.read().gc_grace_seconds);
        let views = self.sstable_views(id, now_seconds)?;
        let task = table
            .strategy
            .lock()
            .next_task(&views, i64::from(now_seconds), gc_before);
        let Some(task) = task else { return Ok(false) };
        match &task {
            Task::Compact {
                inputs,
                output_level,
                max_output_bytes,
                ..
            } => {
                self.compact_to_level(id, inputs, *max_output_bytes, *output_level, now_seconds)?;
            }
            // An expired sstable is rewritten by the purge rule to nothing;
            // going through compaction re-checks memtables and other
            // sstables, so nothing shadowed can come back.
            Task::DropExpired { inputs } => {
                self.compact_to_level(id, inputs, 0, 0, now_seconds)?;
            }
            Task::TombstoneCompaction { input } => {
                let level = views.iter().find(|v| v.id == *input).map_or(0, |v| v.level);
                self.compact_to_level(id, &[*input], 0, level, now_seconds)?;
            }
        }
        let outputs = self.sstable_views(id, now_seconds)?;
        table.strategy.lock().on_completed(&task, &outputs);
        Ok(true)
    }

    /// Background compactions: each table's strategy is asked for work
    /// until none has any, then the manager sleeps.
    pub(crate) fn run_compaction_manager(&self) {
        loop {
            {
                let mut signal = self.flusher_signal.0.lock();
                if signal.1 {
                    return;
                }
                self.flusher_signal
                    .1
                    .wait_for(&mut signal, COMPACTION_CHECK_INTERVAL);
                if signal.1 {
                    return;
                }
            }
            let ids: Vec<TableId> = self.tables.read().keys().copied().collect();
            for id in ids {
                let now = varve_types::time::now_seconds() as i32;
                let mut rounds = 0;
                loop {
                    match self.compact_once(id, now) {
                        Ok(true) if rounds < MAX_TASKS_PER_ROUND => rounds += 1,
                        Ok(_) => break,
                        Err(Error::UnknownTable(_)) => break,
                        Err(e) => {
                            tracing::error!("compaction of table {id:032x} failed: {e}");
                            break;
                        }
                    }
                    if self.flusher_signal.0.lock().1 {
                        return;
                    }
                }
            }
        }
    }

    fn compact_to_level(
        &self,
        id: TableId,
        inputs: &[u64],
        max_output_bytes: u64,
        output_level: u32,
        now_seconds: i32,
    ) -> Result<CompactionResult> {
        let table = self.table(id)?;
        let Some(dir) = table.dir.clone() else {
            return Ok(CompactionResult::default());
        };
        let _one_at_a_time = table.compaction_lock.lock();
        let desc = table.desc.read().clone();
        let wanted: HashSet<u64> = inputs.iter().copied().collect();
        let (sources, others, memtables) = {
            let state = table.state.read();
            let mut sources = Vec::new();
            let mut others = Vec::new();
            for s in &state.sstables {
                match generation_of(s) {
                    Some(g) if wanted.contains(&g) => sources.push(s.clone()),
                    _ => others.push(s.clone()),
                }
            }
            let mut memtables = vec![state.memtable.clone()];
            memtables.extend(state.flushing.iter().cloned());
            (sources, others, memtables)
        };
        if sources.len() != wanted.len() {
            return Err(Error::io(
                &dir,
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "an input sstable is no longer live",
                ),
            ));
        }
        let gc_before = now_seconds.saturating_sub(desc.gc_grace_seconds);
        let all = crate::clustering::Slice::all(&desc.comparator);
        // The smallest timestamp other sources may hold for a key.
        let max_purgeable = |key: &PartitionKey| -> Result<i64> {
            let mut min = i64::MAX;
            for s in &others {
                if s.stats().min_timestamp < min && s.may_contain(key) {
                    min = min.min(s.stats().min_timestamp);
                }
            }
            for m in &memtables {
                if let Some(p) = m.read(key, std::slice::from_ref(&all)) {
                    min = min.min(p.min_timestamp());
                }
            }
            Ok(min)
        };

        // A k-way merge of the inputs, in key order.
        let mut iters = Vec::with_capacity(sources.len());
        for s in &sources {
            iters.push(s.iter()?.peekable());
        }
        let mut result = CompactionResult {
            inputs: inputs.to_vec(),
            ..Default::default()
        };
        result.bytes_read = sources.iter().map(|s| s.size_on_disk()).sum();
        let mut writer: Option<(u64, SstableWriter)> = None;
        let started = std::time::Instant::now();
        let mut done_bytes = 0u64;
        let mut next_check = THROTTLE_CHECK_BYTES;
        let mut finished: Vec<u64> = Vec::new();
        loop {
            let mut next: Option<PartitionKey> = None;
            for it in iters.iter_mut() {
                match it.peek() {
                    Some(Ok((k, _))) if next.as_ref().is_none_or(|n| k < n) => {
                        next = Some(k.clone());
                    }
                    Some(Ok(_)) => {}
                    Some(Err(_)) => {
                        if let Some(Err(e)) = it.next() {
                            return Err(e);
                        }
                    }
                    None => {}
                }
            }
            let Some(key) = next else { break };
            let mut merged = Partition::default();
            for it in iters.iter_mut() {
                if matches!(it.peek(), Some(Ok((k, _))) if *k == key) {
                    if let Some(Ok((_, p))) = it.next() {
                        merged.merge(p);
                    }
                }
            }
            let rule = PurgeRule {
                now_seconds,
                gc_before,
                max_purgeable: max_purgeable(&key)?,
            };
            let out = compact_partition(&merged, &rule);
            if out.is_empty() {
                continue;
            }
            if writer.is_none() {
                let generation = self.next_generation(id)?;
                let tmp = dir.join(format!("{generation}.sst.tmp"));
                writer = Some((
                    generation,
                    SstableWriter::create(
                        self.fs.clone(),
                        &tmp,
                        desc.params,
                        desc.comparator.clone(),
                    )?,
                ));
            }
            if let Some((_, w)) = writer.as_mut() {
                w.add(&key, &out)?;
                // Stay under compaction_throughput (read again each time: it
                // can change while a compaction runs).
                let written = done_bytes + w.bytes_written();
                if written >= next_check {
                    next_check = written + THROTTLE_CHECK_BYTES;
                    let pause = crate::compaction::throttle::delay(
                        self.compaction_throughput(),
                        written,
                        started.elapsed(),
                    );
                    if !pause.is_zero() {
                        std::thread::sleep(pause);
                    }
                }
            }
            result.partitions_written += 1;
            let full = max_output_bytes > 0
                && writer
                    .as_ref()
                    .is_some_and(|(_, w)| w.bytes_written() >= max_output_bytes);
            if full {
                if let Some((g, w)) = writer.take() {
                    done_bytes += w.bytes_written();
                    self.finish_output(&dir, g, w)?;
                    finished.push(g);
                }
            }
        }
        if let Some((g, w)) = writer.take() {
            self.finish_output(&dir, g, w)?;
            finished.push(g);
        }
        let mut opened = Vec::new();
        for g in &finished {
            opened.push(Arc::new(Sstable::open(
                self.fs.clone(),
                &sstable_path(&dir, *g),
                desc.comparator.clone(),
                desc.params.crc_check_chance,
            )?));
        }
        result.bytes_written = opened.iter().map(|s| s.size_on_disk()).sum();
        result.outputs = finished.clone();
        // The swap: one manifest write makes the outputs live and the inputs dead.
        {
            let mut state = table.state.write();
            state.manifest.live.retain(|g| !wanted.contains(g));
            state.manifest.live.extend(finished.iter().copied());
            for g in &wanted {
                state.manifest.levels.remove(g);
            }
            for g in &finished {
                if output_level > 0 {
                    state.manifest.levels.insert(*g, output_level);
                }
            }
            state.manifest.store(self.fs.as_ref(), &dir)?;
            state
                .sstables
                .retain(|s| generation_of(s).is_none_or(|g| !wanted.contains(&g)));
            state.sstables.extend(opened);
        }
        for s in sources {
            let path = s.path().to_path_buf();
            drop(s);
            self.fs.remove(&path).map_err(|e| Error::io(&path, e))?;
        }
        BYTES_COMPACTED.fetch_add(result.bytes_written, Ordering::Relaxed);
        Ok(result)
    }

    /// Fsyncs an output and renames it into place (not yet live).
    fn finish_output(
        &self,
        dir: &std::path::Path,
        generation: u64,
        w: SstableWriter,
    ) -> Result<()> {
        w.finish()?;
        let tmp = dir.join(format!("{generation}.sst.tmp"));
        let path = sstable_path(dir, generation);
        self.fs
            .rename(&tmp, &path)
            .map_err(|e| Error::io(&path, e))?;
        self.fs.sync_dir(dir).map_err(|e| Error::io(dir, e))
    }

    /// Allocates an sstable generation (kept in the manifest on its next write).
    fn next_generation(&self, id: TableId) -> Result<u64> {
        let table = self.table(id)?;
        let mut state = table.state.write();
        let g = state.manifest.next_generation.max(1);
        state.manifest.next_generation = g + 1;
        Ok(g)
    }
}
