//! The k-way merge of a compaction's inputs: every input sstable is scanned
//! in key order, and each step yields the next key with the partitions of
//! every input holding it merged into one. The first read error ends the
//! merge.

use crate::engine::PartitionKey;
use crate::error::Result;
use crate::partition::Partition;
use crate::sstable::{Sstable, SstableIter};
use std::iter::Peekable;
use std::sync::Arc;

/// Scans the inputs together, smallest key first.
pub(super) struct KWayMerge<'a> {
    iters: Vec<Peekable<SstableIter<'a>>>,
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
            iters.push(iter.peekable());
        }
        Ok(KWayMerge {
            iters,
            share,
            done_estimate: 0.0,
        })
    }

    /// Input bytes consumed so far (an estimate, for progress).
    pub(super) fn done_estimate(&self) -> u64 {
        self.done_estimate as u64
    }

    /// The next key and its partitions merged; `None` once every input is
    /// exhausted.
    pub(super) fn next_partition(&mut self) -> Result<Option<(PartitionKey, Partition)>> {
        let mut next: Option<PartitionKey> = None;
        for it in self.iters.iter_mut() {
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
        let Some(key) = next else { return Ok(None) };
        let mut merged = Partition::default();
        for (i, it) in self.iters.iter_mut().enumerate() {
            if matches!(it.peek(), Some(Ok((k, _))) if *k == key) {
                if let Some(Ok((_, p))) = it.next() {
                    merged.merge(p);
                    self.done_estimate += self.share[i];
                }
            }
        }
        Ok(Some((key, merged)))
    }
}
