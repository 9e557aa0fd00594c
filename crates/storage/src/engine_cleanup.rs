//! `nodetool cleanup`: a table's data without the partitions this node no
//! longer replicates (after a node joined and took ranges over). The
//! memtable is flushed first, then each live sstable is rewritten alone,
//! one after the other, leaving out every partition whose token `keep`
//! refuses; nothing else changes (no purge beyond what any compaction of
//! one sstable does). Storage never sees the ring: the caller says which
//! tokens stay.

use crate::compaction::stats::CompactionKind;
use crate::engine::{Engine, TableId};
use crate::engine_compact::{generation_of, Job};
use crate::engine_concurrency::Claim;
use crate::error::Result;

/// What a cleanup did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanupResult {
    /// The generations rewritten.
    pub rewritten: Vec<u64>,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

impl Engine {
    /// Rewrites table `id` without the partitions whose token `keep`
    /// refuses.
    pub fn cleanup(
        &self,
        id: TableId,
        keep: &(dyn Fn(i64) -> bool + Sync),
        now_seconds: i32,
    ) -> Result<CleanupResult> {
        self.flush(id)?;
        let table = self.table(id)?;
        let generations: Vec<(u64, u64)> = table
            .state
            .read()
            .sstables
            .iter()
            .filter_map(|s| Some((generation_of(s)?, s.size_on_disk())))
            .collect();
        let mut result = CleanupResult::default();
        for (g, size) in generations {
            // Compacted away meanwhile: its data went into a newer sstable
            // the flush or compaction made, which the next cleanup sees.
            let Some(_claim) = Claim::wait_live(&table, g) else {
                continue;
            };
            let level = table.state.read().manifest.levels.get(&g).copied();
            let job = Job {
                inputs: &[g],
                max_output_bytes: 0,
                output_level: level.unwrap_or(0),
                now_seconds,
                kind: CompactionKind::Cleanup,
                shadow: None,
                keep: Some(keep),
                keep_inputs: false,
                mark: None,
            };
            let done = self.run_claimed(&table, &job)?;
            result.rewritten.push(g);
            result.bytes_before += size;
            result.bytes_after += done.bytes_written;
        }
        Ok(result)
    }
}
