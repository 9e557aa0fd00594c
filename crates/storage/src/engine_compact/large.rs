//! Compacting one large partition (one that an input holds with a row
//! index past `LARGE_ENTRY_BYTES`) window by window, in bounded memory:
//! the windows follow the row index blocks of the largest input; in each,
//! every input's rows and range tombstones are merged, shadowed data is
//! dropped and tombstones purged with the same code as a whole partition,
//! and the result goes straight to the output (`SstableWriter::write_window`).
//! The partition deletion and the static row are merged first, once.

use super::output::Outputs;
use crate::clustering::Slice;
use crate::compaction::purge::{compact_partition, PurgeRule};
use crate::compaction::shadow::{drop_shadowed, ShadowMode};
use crate::encoding::v3::{bases_of, min_bases, Header};
use crate::engine::PartitionKey;
use crate::error::Result;
use crate::partition::Partition;
use crate::sstable::partition_reader::next_edge;
use crate::sstable::{IndexedPartition, ScanEntry, Sstable, StoredPartition};
use std::sync::Arc;

/// Row index blocks of each input per window at most (about 1 MiB).
pub const COMPACTION_WINDOW_BLOCKS: usize = 64;

/// What a large partition's compaction needs besides its inputs.
pub(super) struct LargeJob<'a> {
    pub rule: PurgeRule,
    pub shadow_mode: ShadowMode,
    /// What the sstables outside the compaction hold of the partition
    /// within some slices (when `shadow_mode` asks for it).
    pub shadow: &'a dyn Fn(&[Slice]) -> Result<Option<Partition>>,
    /// Fails once the node stops compactions.
    pub check_stopped: &'a dyn Fn() -> Result<()>,
}

/// Compacts the partition `key`, which the inputs hold as `entries` (by
/// input number), into `outputs`.
pub(super) fn compact_large(
    sources: &[Arc<Sstable>],
    key: &PartitionKey,
    entries: Vec<(usize, ScanEntry)>,
    job: &LargeJob<'_>,
    outputs: &mut Outputs<'_>,
) -> Result<()> {
    let mut whole: Vec<Partition> = Vec::new();
    let mut large: Vec<IndexedPartition<'_>> = Vec::new();
    for (i, e) in entries {
        match e {
            ScanEntry::Whole(p) => whole.push(p),
            ScanEntry::Large { position, len } => {
                match sources[i].partition_at(key, (position, len))? {
                    StoredPartition::Whole(p) => whole.push(p),
                    StoredPartition::Indexed(ip) => large.push(ip),
                }
            }
        }
    }
    let Some(cmp) = sources.first().map(|s| s.comparator().clone()) else {
        return Ok(());
    };
    let mut head = Partition::default();
    for p in &whole {
        head.merge(Partition {
            deletion: p.deletion,
            static_row: p.static_row.clone(),
            ..Partition::default()
        });
    }
    for ip in &large {
        head.merge(Partition {
            deletion: ip.header.deletion,
            static_row: ip.header.static_row.clone(),
            ..Partition::default()
        });
    }
    let bases = min_bases(
        whole
            .iter()
            .map(bases_of)
            .chain(large.iter().map(|ip| ip.header.bases)),
    );
    let kept = compact_partition(&head, &job.rule);
    let header = Header {
        bases,
        deletion: kept.deletion,
        static_row: kept.static_row,
        row_index: true,
    };
    let all = Slice::all(&cmp);
    outputs.begin_partition(key, &header)?;
    let mut start = all.start.clone();
    loop {
        (job.check_stopped)()?;
        // The next edge: where some input has passed COMPACTION_WINDOW_BLOCKS
        // of its blocks (see `next_edge`), or the end.
        let next =
            next_edge(&large, &start, COMPACTION_WINDOW_BLOCKS, false)?.filter(|e| *e < all.end);
        let last = next.is_none();
        let end = next.unwrap_or_else(|| all.end.clone());
        let slice = [Slice {
            start: start.clone(),
            end: end.clone(),
        }];
        let mut window = Partition {
            deletion: head.deletion,
            ..Partition::default()
        };
        for p in &whole {
            window.merge(p.slice(&slice).without_static());
        }
        for ip in &large {
            window.merge(ip.read_slices(&slice)?);
        }
        window.clip_range_tombstones(&start, &end);
        if job.shadow_mode != ShadowMode::None {
            if let Some(shadow) = (job.shadow)(&slice)? {
                window = drop_shadowed(&window, &shadow, job.shadow_mode);
            }
        }
        let out = compact_partition(&window, &job.rule);
        outputs.write_window(&start, (!last).then_some(&end), &out)?;
        if last {
            break;
        }
        start = end;
    }
    outputs.end_partition()
}
