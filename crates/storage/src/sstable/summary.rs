//! The in-memory partition summary of an open sstable, and its
//! downsampling.
//!
//! On disk the summary has one entry per index block, and a block holds
//! `min_index_interval` partitions. When the summaries of all open
//! sstables together pass the node's `index_summary_capacity`, the engine
//! keeps only every `step`-th entry of each (Cassandra lowers its sampling
//! level the same way): a lookup then reads the `step` consecutive blocks
//! between two kept entries (one "span") instead of one block. `step` is
//! bounded by `max_index_interval / min_index_interval`, so at most
//! `max_index_interval` partitions are ever scanned for one lookup, and
//! by [`MAX_SUMMARY_STEP`]. The file is never rewritten: going back to a
//! finer step re-reads the summary section.

use crate::engine::PartitionKey;
use crate::sstable::index::SummaryEntry;

/// The coarsest downsampling: one summary entry kept per this many index
/// blocks, whatever the table's `max_index_interval` allows (it bounds the
/// bytes a single lookup reads).
pub const MAX_SUMMARY_STEP: usize = 128;

/// The coarsest step a table's options allow:
/// `max_index_interval / min_index_interval`, within 1..=[`MAX_SUMMARY_STEP`].
pub fn max_step(min_index_interval: usize, max_index_interval: usize) -> usize {
    (max_index_interval / min_index_interval.max(1)).clamp(1, MAX_SUMMARY_STEP)
}

/// Memory one summary entry takes: the entry, its key's heap bytes
/// (rounded to the allocator's 16-byte classes) and its token's copy in
/// the search array.
pub fn entry_bytes(e: &SummaryEntry) -> usize {
    std::mem::size_of::<SummaryEntry>()
        + e.first.key.len().next_multiple_of(16)
        + std::mem::size_of::<i64>()
}

/// Summary entries kept in memory: every `step`-th of the file's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    entries: Vec<SummaryEntry>,
    /// The first token of each kept entry: a lookup binary-searches these
    /// 8-byte values (a few cache lines) before it compares whole keys.
    tokens: Vec<i64>,
    step: usize,
    /// Length of the index section (the end of the last span).
    index_len: u64,
    /// Entries in the file's summary, and their memory at step 1.
    full_len: usize,
    full_bytes: usize,
}

impl Summary {
    /// Keeps every `step`-th entry of `full` (the file's summary, which
    /// tiles an index section of `index_len` bytes), starting with the
    /// first. `step` is clamped to 1..=[`MAX_SUMMARY_STEP`].
    pub fn new(full: Vec<SummaryEntry>, index_len: u64, step: usize) -> Self {
        let step = step.clamp(1, MAX_SUMMARY_STEP);
        let full_len = full.len();
        let full_bytes = full.iter().map(entry_bytes).sum();
        let entries = if step == 1 {
            full
        } else {
            full.into_iter().step_by(step).collect()
        };
        Summary {
            tokens: entries.iter().map(|e| e.first.token).collect(),
            entries,
            step,
            index_len,
            full_len,
            full_bytes,
        }
    }

    pub fn step(&self) -> usize {
        self.step
    }

    /// Spans (kept entries).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn entries(&self) -> &[SummaryEntry] {
        &self.entries
    }

    /// Index blocks in the file.
    pub fn full_len(&self) -> usize {
        self.full_len
    }

    /// Memory the summary would take at step 1.
    pub fn full_bytes(&self) -> usize {
        self.full_bytes
    }

    /// Memory the kept entries take.
    pub fn memory_bytes(&self) -> usize {
        self.entries.iter().map(entry_bytes).sum()
    }

    /// Where span `i` lies in the index section: (offset, length). It runs
    /// from its entry's block to the next kept entry's (or the section end).
    pub fn span(&self, i: usize) -> Option<(u64, u64)> {
        let start = self.entries.get(i)?.offset;
        let end = self.entries.get(i + 1).map_or(self.index_len, |e| e.offset);
        Some((start, end.checked_sub(start)?))
    }

    /// The span that would hold `key`: the last whose first key is at or
    /// before it. `None` when `key` sorts before every partition.
    pub fn find(&self, key: &PartitionKey) -> Option<usize> {
        // Entries sort by token, then key: those of a lower token all come
        // at or before `key`, those of a higher one after it; only entries
        // of the same token need their keys compared.
        let same_token = self.tokens.partition_point(|t| *t < key.token);
        let higher = self.tokens.partition_point(|t| *t <= key.token);
        let within = self.entries[same_token..higher].partition_point(|e| e.first <= *key);
        (same_token + within).checked_sub(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn entries(n: u64) -> Vec<SummaryEntry> {
        (0..n)
            .map(|i| SummaryEntry {
                first: PartitionKey {
                    token: i as i64 * 10,
                    key: Bytes::from(format!("k{i}")),
                },
                offset: i * 100,
                len: 100,
            })
            .collect()
    }

    fn key(token: i64) -> PartitionKey {
        PartitionKey {
            token,
            key: Bytes::from_static(b"x"),
        }
    }

    #[test]
    fn step_one_keeps_every_block() {
        let s = Summary::new(entries(5), 500, 1);
        assert_eq!(s.len(), 5);
        assert_eq!(s.span(4), Some((400, 100)));
        assert_eq!(s.memory_bytes(), s.full_bytes());
    }

    #[test]
    fn downsampling_keeps_every_step_th_and_spans_tile_the_index() {
        let s = Summary::new(entries(10), 1000, 4);
        assert_eq!(s.len(), 3);
        assert_eq!(s.full_len(), 10);
        let spans: Vec<_> = (0..s.len()).filter_map(|i| s.span(i)).collect();
        assert_eq!(spans, vec![(0, 400), (400, 400), (800, 200)]);
        assert_eq!(s.span(3), None);
        assert!(s.memory_bytes() * 3 <= s.full_bytes() + 3 * 64);
    }

    #[test]
    fn find_picks_the_span_whose_range_holds_the_key() {
        let s = Summary::new(entries(10), 1000, 4);
        assert_eq!(s.find(&key(-1)), None);
        assert_eq!(s.find(&key(0)), Some(0));
        assert_eq!(s.find(&key(39)), Some(0));
        assert_eq!(s.find(&key(40)), Some(1));
        assert_eq!(s.find(&key(1000)), Some(2));
    }

    #[test]
    fn step_is_bounded_by_the_options_and_the_cap_at_n_and_n_plus_one() {
        assert_eq!(max_step(128, 2048), 16);
        assert_eq!(max_step(128, 128), 1);
        assert_eq!(max_step(128, 200), 1);
        assert_eq!(max_step(1, MAX_SUMMARY_STEP), MAX_SUMMARY_STEP);
        assert_eq!(max_step(1, MAX_SUMMARY_STEP + 1), MAX_SUMMARY_STEP);
        let s = Summary::new(entries(300), 30_000, MAX_SUMMARY_STEP);
        assert_eq!(s.step(), MAX_SUMMARY_STEP);
        let s = Summary::new(entries(300), 30_000, MAX_SUMMARY_STEP + 1);
        assert_eq!(s.step(), MAX_SUMMARY_STEP);
        assert_eq!(s.len(), 3);
    }

    proptest::proptest! {
        #[test]
        fn find_by_token_first_agrees_with_comparing_whole_keys(
            mut firsts in proptest::collection::vec((-4i64..4, 0u8..4), 1..40),
            step in 1usize..4,
            probe in (-5i64..5, 0u8..5),
        ) {
            firsts.sort();
            firsts.dedup();
            let full: Vec<SummaryEntry> = firsts
                .iter()
                .enumerate()
                .map(|(i, (t, k))| SummaryEntry {
                    first: PartitionKey { token: *t, key: Bytes::from(vec![*k]) },
                    offset: i as u64 * 10,
                    len: 10,
                })
                .collect();
            let s = Summary::new(full, firsts.len() as u64 * 10, step);
            let key = PartitionKey { token: probe.0, key: Bytes::from(vec![probe.1]) };
            let whole = s.entries().partition_point(|e| e.first <= key).checked_sub(1);
            proptest::prop_assert_eq!(s.find(&key), whole);
        }
    }
}
