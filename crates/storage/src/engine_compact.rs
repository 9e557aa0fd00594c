//! Running a compaction: merge some sstables of a table into new ones,
//! dropping shadowed data and purgeable tombstones, then swap inputs for
//! outputs in one manifest write, so a crash at any point leaves either the
//! inputs or the outputs live (never both, never neither). Leftover files
//! of an interrupted compaction are removed when the table opens.
//!
//! Every compaction first *claims* its inputs (`engine_concurrency`): an
//! sstable is the input of at most one running compaction. With
//! `provide_overlapping_tombstones` (or garbagecollect), each merged
//! partition is also read from the live sstables outside the compaction and
//! what they shadow is left out (`compaction::shadow`).

use crate::compaction::purge::{compact_partition, PurgeRule};
use crate::compaction::shadow::{drop_shadowed, ShadowMode};
use crate::compaction::stats::CompactionKind;
use crate::compaction::{SstableView, Task};
use crate::engine::{sstable_path, Engine, PartitionKey, TableId, TableStore};
use crate::engine_concurrency::Claim;
use crate::error::{Error, Result};
use crate::partition::Partition;
use crate::sstable::{Sstable, SstableWriter};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes a compaction writes between two looks at compaction_throughput.
const THROTTLE_CHECK_BYTES: u64 = 256 * 1024;

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

/// One compaction to run, its inputs already claimed.
pub(crate) struct Job<'a> {
    pub(crate) inputs: &'a [u64],
    /// Start a new output past this many bytes (0: one output).
    pub(crate) max_output_bytes: u64,
    pub(crate) output_level: u32,
    pub(crate) now_seconds: i32,
    pub(crate) kind: CompactionKind,
    /// `None`: the table's `provide_overlapping_tombstones`.
    pub(crate) shadow: Option<ShadowMode>,
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

    /// Merges every live sstable of the table into one (`nodetool compact`),
    /// after waiting for the running compactions of the table to finish.
    pub fn major_compact(&self, id: TableId, now_seconds: i32) -> Result<CompactionResult> {
        let table = self.table(id)?;
        let _one_major = table.compaction_lock.lock();
        let claim = Claim::all_live(&table);
        let inputs = claim.generations().to_vec();
        if inputs.len() < 2 && !self.has_purgeable(id, now_seconds)? {
            return Ok(CompactionResult {
                inputs: inputs.clone(),
                outputs: inputs,
                ..Default::default()
            });
        }
        let job = Job {
            inputs: &inputs,
            max_output_bytes: 0,
            output_level: 0,
            now_seconds,
            kind: CompactionKind::Major,
            shadow: None,
        };
        self.run_claimed(&table, &job)
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
    /// most `max_output_bytes` each (0: one output), once no other
    /// compaction holds any of them.
    pub fn compact(
        &self,
        id: TableId,
        inputs: &[u64],
        max_output_bytes: u64,
        now_seconds: i32,
    ) -> Result<CompactionResult> {
        let table = self.table(id)?;
        let _claim = Claim::wait(&table, inputs);
        let job = Job {
            inputs,
            max_output_bytes,
            output_level: 0,
            now_seconds,
            kind: CompactionKind::Compaction,
            shadow: None,
        };
        self.run_claimed(&table, &job)
    }

    /// The view of a table's live sstables its strategy decides from.
    pub fn sstable_views(&self, id: TableId, now_seconds: i32) -> Result<Vec<SstableView>> {
        let table = self.table(id)?;
        let compacting = table.compacting.lock().clone();
        Ok(views_of(&table, now_seconds, &compacting))
    }

    /// Runs at most one task the table's strategy chooses; returns whether
    /// it ran one.
    pub fn compact_once(&self, id: TableId, now_seconds: i32) -> Result<bool> {
        let table = self.table(id)?;
        if table.dir.is_none() {
            return Ok(false);
        }
        let gc_before = now_seconds.saturating_sub(table.desc.read().gc_grace_seconds);
        // Choosing and claiming under the strategy lock: two workers never
        // pick the same sstable.
        let (task, views, _claim) = {
            let mut strategy = table.strategy.lock();
            let mut compacting = table.compacting.lock();
            let views = views_of(&table, now_seconds, &compacting);
            let Some(task) = strategy.next_task(&views, i64::from(now_seconds), gc_before) else {
                return Ok(false);
            };
            let task = match task {
                Task::DropExpired { inputs } => {
                    let inputs = purgeable_whole(&table, &views, inputs);
                    if inputs.is_empty() {
                        return Ok(false);
                    }
                    Task::DropExpired { inputs }
                }
                other => other,
            };
            let inputs = task.inputs();
            if inputs.iter().any(|g| compacting.contains(g)) {
                return Ok(false);
            }
            compacting.extend(inputs.iter().copied());
            drop(compacting);
            (task, views, Claim::adopt(&table, inputs))
        };
        let inputs = task.inputs();
        let mut job = Job {
            inputs: &inputs,
            max_output_bytes: 0,
            output_level: 0,
            now_seconds,
            kind: CompactionKind::Compaction,
            shadow: None,
        };
        match &task {
            Task::Compact {
                max_output_bytes,
                output_level,
                ..
            } => {
                job.max_output_bytes = *max_output_bytes;
                job.output_level = *output_level;
            }
            // An expired sstable is rewritten by the purge rule to nothing;
            // going through compaction re-checks memtables and other
            // sstables, so nothing shadowed can come back.
            Task::DropExpired { .. } => {}
            Task::TombstoneCompaction { input } => {
                job.output_level = views.iter().find(|v| v.id == *input).map_or(0, |v| v.level);
                job.kind = CompactionKind::Tombstone;
            }
        }
        self.run_claimed(&table, &job)?;
        let outputs = self.sstable_views(id, now_seconds)?;
        table.strategy.lock().on_completed(&task, &outputs);
        Ok(true)
    }

    /// Runs `job`, whose inputs the caller has claimed.
    pub(crate) fn run_claimed(&self, table: &TableStore, job: &Job) -> Result<CompactionResult> {
        let Some(dir) = table.dir.clone() else {
            return Ok(CompactionResult::default());
        };
        let desc = table.desc.read().clone();
        let shadow_mode = job
            .shadow
            .unwrap_or(desc.compaction.common.provide_overlapping_tombstones);
        let wanted: HashSet<u64> = job.inputs.iter().copied().collect();
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
        let now_seconds = job.now_seconds;
        let gc_before = now_seconds.saturating_sub(desc.gc_grace_seconds);
        let all = crate::clustering::Slice::all(&desc.comparator);
        // The smallest timestamp other sources may hold for a key.
        let max_purgeable = |key: &PartitionKey| -> Result<i64> {
            let mut min = i64::MAX;
            for s in &others {
                if s.stats().min_timestamp < min && may_hold(s, key) {
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
        // What the sstables outside the compaction say about a partition
        // (only those that may hold data old enough to be shadowed).
        let shadow_of = |key: &PartitionKey, min_timestamp: i64| -> Result<Option<Partition>> {
            let mut merged: Option<Partition> = None;
            for s in &others {
                if s.stats().max_timestamp < min_timestamp || !may_hold(s, key) {
                    continue;
                }
                if let Some(p) = s.read_partition(key)? {
                    match &mut merged {
                        Some(m) => m.merge(p),
                        None => merged = Some(p),
                    }
                }
            }
            Ok(merged)
        };

        let bytes_total: u64 = sources.iter().map(|s| s.size_on_disk()).sum();
        let running = self
            .compactions
            .start(&desc.keyspace, &desc.name, job.kind, bytes_total);
        // Progress: each consumed partition counts as its share of its input.
        let share: Vec<f64> = sources
            .iter()
            .map(|s| s.size_on_disk() as f64 / s.stats().partition_count.max(1) as f64)
            .collect();
        let mut done_estimate = 0f64;
        // A k-way merge of the inputs, in key order.
        let mut iters = Vec::with_capacity(sources.len());
        for s in &sources {
            iters.push(s.iter()?.peekable());
        }
        let mut result = CompactionResult {
            inputs: job.inputs.to_vec(),
            bytes_read: bytes_total,
            ..Default::default()
        };
        let mut writer: Option<(u64, SstableWriter)> = None;
        let started = std::time::Instant::now();
        let mut done_bytes = 0u64;
        let mut next_check = THROTTLE_CHECK_BYTES;
        let mut finished: Vec<u64> = Vec::new();
        let outcome = (|| -> Result<()> {
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
                for (i, it) in iters.iter_mut().enumerate() {
                    if matches!(it.peek(), Some(Ok((k, _))) if *k == key) {
                        if let Some(Ok((_, p))) = it.next() {
                            merged.merge(p);
                            done_estimate += share[i];
                        }
                    }
                }
                running.progress.set_done(done_estimate as u64);
                if shadow_mode != ShadowMode::None {
                    if let Some(shadow) = shadow_of(&key, merged.min_timestamp())? {
                        merged = drop_shadowed(&merged, &shadow, shadow_mode);
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
                    let generation = self.next_generation(table);
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
                    // Stay under compaction_throughput (read again each time:
                    // it can change while a compaction runs).
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
                let full = job.max_output_bytes > 0
                    && writer
                        .as_ref()
                        .is_some_and(|(_, w)| w.bytes_written() >= job.max_output_bytes);
                if full {
                    if let Some((g, w)) = writer.take() {
                        done_bytes += w.bytes_written();
                        finished.push(g);
                        self.finish_output(&dir, g, w)?;
                    }
                }
            }
            if let Some((g, w)) = writer.take() {
                finished.push(g);
                self.finish_output(&dir, g, w)?;
            }
            Ok(())
        })();
        if let Err(e) = outcome {
            // Not live: the files are leftovers either way, removed now (or
            // at the next start).
            for g in &finished {
                let _ = self.fs.remove(&sstable_path(&dir, *g));
            }
            if let Some((g, _)) = writer {
                let _ = self.fs.remove(&dir.join(format!("{g}.sst.tmp")));
            }
            return Err(e);
        }
        running.progress.set_done(bytes_total);
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
        self.swap(table, &dir, &wanted, opened, job.output_level)?;
        for s in sources {
            let path = s.path().to_path_buf();
            drop(s);
            self.fs.remove(&path).map_err(|e| Error::io(&path, e))?;
        }
        BYTES_COMPACTED.fetch_add(result.bytes_written, Ordering::Relaxed);
        self.compactions.completed(desc.id, result.bytes_written);
        Ok(result)
    }

    /// One manifest write makes the outputs live and the inputs dead.
    fn swap(
        &self,
        table: &TableStore,
        dir: &std::path::Path,
        inputs: &HashSet<u64>,
        outputs: Vec<Arc<Sstable>>,
        output_level: u32,
    ) -> Result<()> {
        let finished: Vec<u64> = outputs.iter().filter_map(|s| generation_of(s)).collect();
        let mut state = table.state.write();
        if !inputs.iter().all(|g| state.manifest.live.contains(g)) {
            // TRUNCATE removed the inputs meanwhile: the outputs must not
            // bring their data back.
            drop(state);
            for s in outputs {
                let path = s.path().to_path_buf();
                drop(s);
                let _ = self.fs.remove(&path);
            }
            return Err(Error::io(
                dir,
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "the table was truncated during the compaction",
                ),
            ));
        }
        state.manifest.live.retain(|g| !inputs.contains(g));
        state.manifest.live.extend(finished.iter().copied());
        for g in inputs {
            state.manifest.levels.remove(g);
        }
        for g in &finished {
            if output_level > 0 {
                state.manifest.levels.insert(*g, output_level);
            }
        }
        state.manifest.store(self.fs.as_ref(), dir)?;
        state
            .sstables
            .retain(|s| generation_of(s).is_none_or(|g| !inputs.contains(&g)));
        state.sstables.extend(outputs);
        Ok(())
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
    fn next_generation(&self, table: &TableStore) -> u64 {
        let mut state = table.state.write();
        let g = state.manifest.next_generation.max(1);
        state.manifest.next_generation = g + 1;
        g
    }
}

/// Whether `s` may hold `key`: inside its key range, and its bloom filter
/// says maybe. Found by the garbagecollect model test: with the bloom filter
/// alone, a false positive made the purge rule keep what the policy (which
/// looks at token ranges) had declared fully expired, and the same
/// `DropExpired` task was chosen again and again.
fn may_hold(s: &Sstable, key: &PartitionKey) -> bool {
    let st = s.stats();
    let inside = st.first_key.as_ref().is_none_or(|f| f <= key)
        && st.last_key.as_ref().is_none_or(|l| key <= l);
    inside && s.may_contain(key)
}

/// The members of a `DropExpired` task the purge rule will really rewrite to
/// nothing: those whose max timestamp is below the min timestamp of every
/// overlapping sstable outside the task (expired or not) and of the
/// memtables, which the policy cannot see. Found by the garbagecollect
/// model test: an expired sstable overlapping another expired one that the
/// policy kept (it shadowed a third) was rewritten unchanged, forever.
fn purgeable_whole(table: &TableStore, views: &[SstableView], mut inputs: Vec<u64>) -> Vec<u64> {
    let memtable_min = memtable_min_timestamp(table);
    loop {
        let before = inputs.len();
        let snapshot = inputs.clone();
        inputs.retain(|id| {
            let Some(c) = views.iter().find(|v| v.id == *id) else {
                return false;
            };
            let others_min = views
                .iter()
                .filter(|o| !snapshot.contains(&o.id) && o.overlaps(c))
                .map(|o| o.min_timestamp)
                .fold(memtable_min, i64::min);
            c.max_timestamp < others_min
        });
        if inputs.len() == before {
            return inputs;
        }
    }
}

/// The smallest timestamp any memtable of the table holds (`i64::MAX` when
/// they are empty).
fn memtable_min_timestamp(table: &TableStore) -> i64 {
    let memtables = {
        let state = table.state.read();
        let mut m = vec![state.memtable.clone()];
        m.extend(state.flushing.iter().cloned());
        m
    };
    let mut min = i64::MAX;
    for m in memtables {
        let _ = m.try_for_each(|_, p| -> Result<()> {
            min = min.min(p.min_timestamp());
            Ok(())
        });
    }
    min
}

/// Views of the table's live sstables, `compacting` marking the claimed ones.
fn views_of(
    table: &TableStore,
    now_seconds: i32,
    compacting: &std::collections::BTreeSet<u64>,
) -> Vec<SstableView> {
    let gc_before = now_seconds.saturating_sub(table.desc.read().gc_grace_seconds);
    let state = table.state.read();
    state
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
                compacting: compacting.contains(&g),
            })
        })
        .collect()
}
