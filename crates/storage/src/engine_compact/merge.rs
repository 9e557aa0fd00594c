//! The k-way merge of a compaction's inputs: every input sstable is scanned
//! in key order, and each step yields the next key with the partitions of
//! every input holding it merged into one. The first read error ends the
//! merge.

use crate::engine::PartitionKey;
use crate::error::Result;
use crate::partition::Partition;
use crate::sstable::{ScanEntry, Sstable, SstableIter};
use std::sync::Arc;

/// One step of the merge.
pub(super) enum Merged {
    /// A key whose partitions were all small: merged into one.
    Whole(PartitionKey, Partition),
    /// A key one of whose inputs holds a large partition: what each input
    /// holding the key has (by input number), to merge window by window.
    Large(PartitionKey, Vec<(usize, ScanEntry)>),
}

/// Scans the inputs together, smallest key first.
pub(super) struct KWayMerge<'a> {
    iters: Vec<SstableIter<'a>>,
    /// The next item of each input, read ahead.
    heads: Vec<Option<(PartitionKey, ScanEntry)>>,
    /// Progress: each consumed partition counts as its share of its input.
    share: Vec<f64>,
    done_estimate: f64,
}

impl<'a> KWayMerge<'a> {
    /// `direct`: scan the inputs around the page cache where possible.
    pub(super) fn new(sources: &'a [Arc<Sstable>], direct: bool) -> Result<Self> {
        let share = sources
            .iter()
            .map(|s| s.size_on_disk() as f64 / s.stats().partition_count.max(1) as f64)
            .collect();
        let mut iters = Vec::with_capacity(sources.len());
        for s in sources {
            let iter = if direct { s.iter_direct()? } else { s.iter()? };
            iters.push(iter.large_as_places());
        }
        let mut merge = KWayMerge {
            heads: (0..iters.len()).map(|_| None).collect(),
            iters,
            share,
            done_estimate: 0.0,
        };
        for i in 0..merge.iters.len() {
            merge.advance(i)?;
        }
        Ok(merge)
    }

    /// Reads input `i`'s next item into its head.
    fn advance(&mut self, i: usize) -> Result<()> {
        self.heads[i] = match self.iters[i].next_scan() {
            None => None,
            Some(item) => Some(item?),
        };
        Ok(())
    }

    /// Input bytes consumed so far (an estimate, for progress).
    pub(super) fn done_estimate(&self) -> u64 {
        self.done_estimate as u64
    }

    /// The next key and what the inputs hold for it; `None` once every
    /// input is exhausted.
    pub(super) fn next_partition(&mut self) -> Result<Option<Merged>> {
        let Some(key) = self.heads.iter().flatten().map(|(k, _)| k).min().cloned() else {
            return Ok(None);
        };
        let mut entries = Vec::new();
        for i in 0..self.heads.len() {
            if self.heads[i].as_ref().is_some_and(|(k, _)| *k == key) {
                if let Some((_, e)) = self.heads[i].take() {
                    entries.push((i, e));
                    self.done_estimate += self.share[i];
                }
                self.advance(i)?;
            }
        }
        if entries
            .iter()
            .any(|(_, e)| matches!(e, ScanEntry::Large { .. }))
        {
            return Ok(Some(Merged::Large(key, entries)));
        }
        let mut merged = Partition::default();
        for (_, e) in entries {
            if let ScanEntry::Whole(p) = e {
                merged.merge(p);
            }
        }
        Ok(Some(Merged::Whole(key, merged)))
    }
}
