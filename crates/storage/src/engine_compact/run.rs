//! Running one claimed compaction: gather the inputs, the other sstables
//! and the memtables (for the purge rule and shadow sources), merge the
//! inputs ([`super::merge`]) into the outputs ([`super::output`]), then swap
//! inputs for outputs in one manifest write and delete the inputs.

use super::large::{compact_large, LargeJob};
use super::merge::{KWayMerge, Merged};
use super::output::Outputs;
use super::shadow_read::{may_shadow, row_slices, shadow_in, stored_within};
use super::views::may_hold;
use super::{generation_of, CompactionResult, Job};
use crate::compaction::purge::{compact_partition, is_settled, PurgeRule};
use crate::compaction::shadow::{drop_shadowed, ShadowMode};
use crate::engine::{sstable_path, Engine, PartitionKey, TableStore};
use crate::error::{Error, Result};
use crate::partition::Partition;
use crate::sstable::Sstable;
use std::collections::HashSet;
use std::sync::Arc;

impl Engine {
    /// Runs `job`, whose inputs the caller has claimed.
    pub(crate) fn run_claimed(&self, table: &TableStore, job: &Job) -> Result<CompactionResult> {
        let Some(dir) = table.dir.clone() else {
            return Ok(CompactionResult::default());
        };
        // Below the client's work for the CPU and the disk (restored when
        // this compaction ends: the thread may serve other work after).
        let _background = crate::thread_priority::Background::enter();
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
        // With the bytes read, which the throttle paces like those written.
        // Only the rows the compaction holds matter: a partition with a
        // point or row index is read only where they are.
        let shadow_of =
            |key: &PartitionKey, merged_here: &Partition| -> Result<(Option<Partition>, u64)> {
                let min_timestamp = merged_here.min_timestamp();
                let slices = row_slices(merged_here);
                let mut merged: Option<Partition> = None;
                let mut bytes = 0u64;
                for s in &others {
                    if s.stats().max_timestamp < min_timestamp
                        || !may_shadow(s, shadow_mode)
                        || !may_hold(s, key)
                    {
                        continue;
                    }
                    if let Some(p) = stored_within(s, key, &slices)? {
                        bytes += crate::memtable::estimate_bytes(&p) as u64;
                        match &mut merged {
                            Some(m) => m.merge(p),
                            None => merged = Some(p),
                        }
                    }
                }
                Ok((merged, bytes))
            };

        let bytes_total: u64 = sources.iter().map(|s| s.size_on_disk()).sum();
        let running = self
            .compactions
            .start(&desc.keyspace, &desc.name, job.kind, bytes_total);
        // `compaction_write_disk_access_mode: direct` reads the inputs
        // around the page cache too (see `fs_direct_read`).
        let direct = self.sstable_writes().compaction == crate::fs::PageCache::Bypass;
        let mut merge = KWayMerge::new(&sources, direct)?;
        let mut result = CompactionResult {
            inputs: job.inputs.to_vec(),
            bytes_read: bytes_total,
            ..Default::default()
        };
        let mut outputs = Outputs::new(
            self,
            table,
            &dir,
            (desc.params, desc.comparator.clone()),
            job.max_output_bytes,
            job.kind.keeps_up_with_flushes(),
        );
        let outcome = (|| -> Result<()> {
            while let Some(next) = merge.next_partition()? {
                self.check_compactions_stopped(&dir)?;
                running.progress.set_done(merge.done_estimate());
                let token = match &next {
                    Merged::Whole(key, _) | Merged::Large(key, _) => key.token,
                };
                if job.keep.is_some_and(|keep| !keep(token)) {
                    result.partitions_left_out += 1;
                    continue;
                }
                let (key, mut merged) = match next {
                    Merged::Whole(key, merged) => (key, merged),
                    Merged::Large(key, entries) => {
                        let shadow = |slices: &[crate::clustering::Slice]| {
                            shadow_in(&others, shadow_mode, &key, slices)
                        };
                        let check_stopped = || self.check_compactions_stopped(&dir);
                        let job = LargeJob {
                            rule: PurgeRule {
                                now_seconds,
                                gc_before,
                                max_purgeable: max_purgeable(&key)?,
                            },
                            shadow_mode,
                            shadow: &shadow,
                            check_stopped: &check_stopped,
                        };
                        compact_large(&sources, &key, entries, &job, &mut outputs)?;
                        result.partitions_written += 1;
                        continue;
                    }
                };
                if shadow_mode != ShadowMode::None {
                    let (shadow, bytes) = shadow_of(&key, &merged)?;
                    outputs.charge_read(bytes);
                    if let Some(shadow) = shadow {
                        merged = drop_shadowed(&merged, &shadow, shadow_mode);
                    }
                }
                let out = if is_settled(&merged, now_seconds) {
                    merged
                } else {
                    let rule = PurgeRule {
                        now_seconds,
                        gc_before,
                        max_purgeable: max_purgeable(&key)?,
                    };
                    compact_partition(&merged, &rule)
                };
                if out.is_empty() {
                    continue;
                }
                outputs.add(&key, &out)?;
                result.partitions_written += 1;
            }
            outputs.finish_current()
        })();
        if let Err(e) = outcome {
            outputs.abandon();
            return Err(e);
        }
        let finished = outputs.finished().to_vec();
        drop(merge);
        running.progress.set_done(bytes_total);
        let mut opened = Vec::new();
        for g in &finished {
            let sstable = self.open_sstable(&sstable_path(&dir, *g), &desc)?;
            sstable.set_created_at_seconds(i64::from(self.now_seconds()));
            opened.push(Arc::new(sstable));
        }
        result.bytes_written = opened.iter().map(|s| s.size_on_disk()).sum();
        result.outputs = finished;
        self.swap(table, &dir, &wanted, opened, job)?;
        if job.keep_inputs {
            return Ok(result);
        }
        for s in sources {
            let path = s.path().to_path_buf();
            drop(s);
            self.fs.remove(&path).map_err(|e| Error::io(&path, e))?;
        }
        self.compactions.completed(desc.id, result.bytes_written);
        Ok(result)
    }

    /// One manifest write makes the outputs live and the inputs dead
    /// (unless the job keeps them), with the job's level and repair mark.
    fn swap(
        &self,
        table: &TableStore,
        dir: &std::path::Path,
        inputs: &HashSet<u64>,
        outputs: Vec<Arc<Sstable>>,
        job: &Job,
    ) -> Result<()> {
        let output_level = job.output_level;
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
        let mark = job
            .mark
            .or_else(|| crate::engine_repair::inherited_mark(&state.manifest.repair, inputs));
        let removed: HashSet<u64> = match job.keep_inputs {
            true => HashSet::new(),
            false => inputs.clone(),
        };
        state.manifest.live.retain(|g| !removed.contains(g));
        state.manifest.live.extend(finished.iter().copied());
        for g in &removed {
            state.manifest.levels.remove(g);
            state.manifest.repair.remove(g);
        }
        for g in &finished {
            if output_level > 0 {
                state.manifest.levels.insert(*g, output_level);
            }
            if let Some(mark) = mark {
                state.manifest.repair.insert(*g, mark);
            }
        }
        state.manifest.store(self.fs.as_ref(), dir)?;
        state
            .sstables
            .retain(|s| generation_of(s).is_none_or(|g| !removed.contains(&g)));
        // An ALTER of crc_check_chance during the compaction reached only
        // the sstables live then (see `update_table`).
        let chance = table.desc.read().params.crc_check_chance;
        for s in &outputs {
            s.set_crc_check_chance(chance);
        }
        state.sstables.extend(outputs);
        Ok(())
    }
}
