//! Whole-sstable streaming, the sending side (docs/design/topology.md,
//! section 4): which live sstables a stream may send as files, holding
//! them while they are sent, reading their bytes chunk by chunk, and the
//! reads of the partition-by-partition pages that leave out the sstables
//! already sent whole.
//!
//! - [`Engine::flush_for_streaming`] first writes the memtable out, so
//!   that what a range holds is in sstables.
//! - [`Engine::sstable_spans`] lists the live sstables with their token
//!   span (first to last partition token), size and generation; the
//!   caller picks those whose span lies inside a range it sends.
//! - [`Engine::hold_sstables`] holds the picked ones ([`HeldSstable`]): it
//!   takes them under the table's state lock, while they are live, and
//!   keeps their open file. A compaction that replaces one meanwhile
//!   removes its name, not its bytes: the held file stays readable (as on
//!   POSIX, and as the simulated file system keeps an open file) until
//!   the hold is dropped.
//! - [`HeldSstable::read_chunk`] reads `[offset, offset + n)` of the file;
//!   [`HeldSstable::file_crc`] is the CRC32 of the whole file as its own
//!   section checksums say it must be (computed from the footer, nothing
//!   read), which the receiver compares with the CRC of what it got.
//! - [`Engine::scan_keys_skipping`] and [`Engine::read_partition_skipping`]
//!   read as [`Engine::scan_keys`] and [`Engine::read_partition`] do,
//!   without the sstables of the given generations.
//!
//! Nothing here waits on the disk inside a [`crate::io_mode::NonBlocking`]
//! scope unless the file system never waits (one in memory): it answers
//! `WouldBlock` first, having changed nothing.

use crate::clustering::Slice;
use crate::engine::{Engine, PartitionKey, TableId, TokenBound};
use crate::engine_compact::generation_of;
use crate::error::{Error, Result};
use crate::memtable::{key_in_range, Memtable};
use crate::partition::Partition;
use crate::read_stats::ReadCost;
use crate::sstable::Sstable;
use std::collections::BTreeSet;
use std::sync::Arc;

/// A table's sources for a read: memtables, then sstables.
type Sources = (Vec<Arc<Memtable>>, Vec<Arc<Sstable>>);

/// A live sstable as a stream sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SstableSpan {
    pub generation: u64,
    /// The token of its first and of its last partition.
    pub first_token: i64,
    pub last_token: i64,
    pub size_bytes: u64,
    pub partitions: u64,
}

impl SstableSpan {
    /// The span of `s`, when it holds a partition and has a generation.
    pub fn of(s: &Sstable) -> Option<SstableSpan> {
        let stats = s.stats();
        Some(SstableSpan {
            generation: generation_of(s)?,
            first_token: stats.first_key.as_ref()?.token,
            last_token: stats.last_key.as_ref()?.token,
            size_bytes: s.size_on_disk(),
            partitions: stats.partition_count,
        })
    }

    /// Whether every token of the span lies in the ring range `(start,
    /// end]` (the whole ring when `start == end`; past the ring's end and
    /// on from its start when `start > end`).
    pub fn inside(&self, start: i64, end: i64) -> bool {
        let (f, l) = (self.first_token, self.last_token);
        match start.cmp(&end) {
            std::cmp::Ordering::Equal => true,
            std::cmp::Ordering::Less => start < f && l <= end,
            std::cmp::Ordering::Greater => start < f || l <= end,
        }
    }
}

/// One live sstable held for sending: its bytes stay readable until this
/// is dropped, whatever compaction does meanwhile.
pub struct HeldSstable {
    sstable: Arc<Sstable>,
    span: SstableSpan,
}

impl HeldSstable {
    pub fn span(&self) -> &SstableSpan {
        &self.span
    }

    /// The CRC32 of the whole file (see the module doc).
    pub fn file_crc(&self) -> u32 {
        self.sstable.whole_file_crc()
    }

    /// The bytes `[offset, offset + max_bytes)` of the file, fewer at its
    /// end. `WouldBlock` in a non-blocking scope when they are not in
    /// memory; refused past the end.
    pub fn read_chunk(&self, offset: u64, max_bytes: usize) -> Result<Vec<u8>> {
        let size = self.span.size_bytes;
        if offset > size {
            return Err(Error::Refused(format!(
                "offset {offset} is past the end of {} ({size} bytes)",
                self.sstable.path().display()
            )));
        }
        let len = (size - offset).min(max_bytes as u64) as usize;
        let mut buf = vec![0u8; len];
        let file = self.sstable.raw_file();
        let path = self.sstable.path();
        if crate::io_mode::may_block() {
            file.read_exact_at_uncached(offset, &mut buf)
                .map_err(|e| Error::io_at(path, offset, len, e))?;
            return Ok(buf);
        }
        match file.read_exact_at_nowait(offset, &mut buf) {
            Ok(true) => Ok(buf),
            Ok(false) => Err(Error::WouldBlock {
                what: "a chunk of an sstable being streamed",
            }),
            Err(e) => Err(Error::io_at(path, offset, len, e)),
        }
    }
}

impl Engine {
    /// Whether the engine's file system never waits on a device (one in
    /// memory, as the simulation's): streaming then does its file work at
    /// once instead of on a thread that may block.
    pub fn never_waits_on_disk(&self) -> bool {
        self.fs.never_waits()
    }

    /// Whether the table keeps sstables (it is not held in memory only),
    /// so that it may receive whole ones; false for an unknown table.
    pub fn keeps_sstables(&self, id: TableId) -> bool {
        self.table(id).is_ok_and(|t| t.dir.is_some())
    }

    /// `WouldBlock` naming `what` when this thread may not wait on the
    /// disk and the file system may make it wait.
    pub(crate) fn check_disk_wait(&self, what: &'static str) -> Result<()> {
        if self.fs.never_waits() {
            return Ok(());
        }
        crate::io_mode::check_may_block(what)
    }

    /// Writes the table's memtable to an sstable (nothing when it is
    /// empty), so that a stream finds the range's data in sstables.
    pub fn flush_for_streaming(&self, id: TableId) -> Result<()> {
        let table = self.table(id)?;
        if table.state.read().memtable.is_empty() {
            return Ok(());
        }
        self.check_disk_wait("a flush before a stream")?;
        self.flush(id)
    }

    /// The table's live sstables that hold a partition, oldest first.
    pub fn sstable_spans(&self, id: TableId) -> Result<Vec<SstableSpan>> {
        let table = self.table(id)?;
        let state = table.state.read();
        let mut spans: Vec<SstableSpan> = state
            .sstables
            .iter()
            .filter_map(|s| SstableSpan::of(s))
            .collect();
        spans.sort_by_key(|s| s.generation);
        Ok(spans)
    }

    /// Holds the live sstables whose span `pick` accepts, at most `limit`
    /// of them, oldest first; taken together under the table's state lock.
    pub fn hold_sstables(
        &self,
        id: TableId,
        pick: impl Fn(&SstableSpan) -> bool,
        limit: usize,
    ) -> Result<Vec<HeldSstable>> {
        let table = self.table(id)?;
        let state = table.state.read();
        let mut held: Vec<HeldSstable> = state
            .sstables
            .iter()
            .filter_map(|s| {
                let span = SstableSpan::of(s)?;
                pick(&span).then(|| HeldSstable {
                    sstable: Arc::clone(s),
                    span,
                })
            })
            .collect();
        drop(state);
        held.sort_by_key(|h| h.span.generation);
        held.truncate(limit);
        Ok(held)
    }

    /// The memtables and the sstables of the table but those of `skip`.
    fn sources_skipping(&self, id: TableId, skip: &BTreeSet<u64>) -> Result<Sources> {
        let table = self.table(id)?;
        let (memtables, mut sstables) = self.sources_of(&table);
        if !skip.is_empty() {
            sstables.retain(|s| generation_of(s).is_none_or(|g| !skip.contains(&g)));
        }
        Ok((memtables, sstables))
    }

    /// Up to `limit` partition keys in token order between `start` and
    /// `end`, from the memtables and every sstable but those of `skip`.
    pub fn scan_keys_skipping(
        &self,
        id: TableId,
        start: &TokenBound,
        end: &TokenBound,
        limit: usize,
        skip: &BTreeSet<u64>,
    ) -> Result<Vec<PartitionKey>> {
        let (memtables, sstables) = self.sources_skipping(id, skip)?;
        let mut keys: BTreeSet<PartitionKey> = BTreeSet::new();
        for m in &memtables {
            keys.extend(m.keys(start, end, limit));
        }
        for s in &sstables {
            keys.extend(s.keys(start, end, limit)?);
        }
        Ok(keys
            .into_iter()
            .filter(|k| key_in_range(k, start, end))
            .take(limit)
            .collect())
    }

    /// [`Engine::read_partition`] without the sstables of `skip`.
    pub fn read_partition_skipping(
        &self,
        id: TableId,
        key: &PartitionKey,
        slices: &[Slice],
        skip: &BTreeSet<u64>,
    ) -> Result<Option<Partition>> {
        let (memtables, sstables) = self.sources_skipping(id, skip)?;
        let mut cost = ReadCost::default();
        crate::engine_read::read_partition_in(&memtables, &sstables, key, slices, &mut cost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(first_token: i64, last_token: i64) -> SstableSpan {
        SstableSpan {
            generation: 1,
            first_token,
            last_token,
            size_bytes: 0,
            partitions: 1,
        }
    }

    #[test]
    fn a_span_is_inside_a_range_only_when_all_of_it_is() {
        assert!(span(5, 10).inside(4, 10));
        assert!(!span(5, 10).inside(5, 10), "the start is not in the range");
        assert!(!span(5, 11).inside(4, 10));
        assert!(span(i64::MIN, i64::MAX).inside(7, 7), "the whole ring");
        // A range that wraps: (100, MAX] and [MIN, -100].
        assert!(span(101, 200).inside(100, -100));
        assert!(span(i64::MIN, -100).inside(100, -100));
        assert!(!span(-200, 150).inside(100, -100), "across the gap");
        assert!(!span(0, 50).inside(100, -100));
    }
}
