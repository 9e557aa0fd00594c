//! The row index of a large partition (sstable format 3; its bytes are in
//! docs/format/sstable.md, "Row index").
//!
//! A partition's entry whose items pass [`ROW_INDEX_BLOCK_BYTES`] carries,
//! after its end byte, one index entry per block of about that many bytes
//! of items (the block's first clustering, where it starts, the range
//! tombstone deletion open there), then a table of where each index entry
//! starts, then a fixed trailer:
//!
//! ```text
//! | header | items ... | END | entries ... | offsets: count x u32 | items_end u64 | count u32 | index_len u32 |
//! ```
//!
//! `index_len` counts the entries and the offsets table. A reader finds
//! the trailer at the end of the entry (the partition index gives the
//! entry's length), binary-searches the entries through the offsets table,
//! and reads only the blocks a slice needs, forwards or backwards. Block
//! `i` runs from its entry's offset to the next entry's offset (the last
//! one to `items_end`, where the end byte is).

use crate::cell::DeletionTime;
use crate::clustering::{ClusteringComparator, ClusteringKey};
use crate::encoding::v2::Bases;
use crate::encoding::v3::{put_index_entry, read_index_entry, IndexEntry};
use crate::encoding::{DecodeError, Reader};
use std::sync::Arc;

/// Item bytes per block (Cassandra's `column_index_size`): one default
/// chunk, since a read fetches whole chunks, a finer index saves no I/O.
pub const ROW_INDEX_BLOCK_BYTES: u64 = 16 << 10;

/// Bytes of the trailer: items_end u64, count u32, index_len u32.
pub const TRAILER_LEN: u64 = 16;

/// Most entries one row index may hold (its offsets are u32s).
pub const MAX_ROW_INDEX_ENTRIES: u64 = u32::MAX as u64;

/// Builds a partition's row index as its items are written.
#[derive(Debug)]
pub struct RowIndexBuilder {
    block_bytes: u64,
    entries: Vec<u8>,
    offsets: Vec<u32>,
    /// Where the current block started (from the entry's start).
    block_start: Option<u64>,
    /// Set when the index outgrew what u32 offsets can address.
    too_large: bool,
}

impl RowIndexBuilder {
    pub fn new(block_bytes: u64) -> Self {
        RowIndexBuilder {
            block_bytes: block_bytes.max(1),
            entries: Vec::new(),
            offsets: Vec::new(),
            block_start: None,
            too_large: false,
        }
    }

    /// Before each item, at `offset` from the entry's start: starts a block
    /// there when none is open or the open one holds `block_bytes` or more.
    pub fn before_item(
        &mut self,
        b: &Bases,
        offset: u64,
        first: &ClusteringKey,
        open: &DeletionTime,
    ) {
        if self
            .block_start
            .is_some_and(|start| offset - start < self.block_bytes)
        {
            return;
        }
        let Ok(at) = u32::try_from(self.entries.len()) else {
            self.too_large = true;
            return;
        };
        self.offsets.push(at);
        put_index_entry(&mut self.entries, b, first, offset, open);
        self.block_start = Some(offset);
    }

    /// Blocks so far.
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// Whether the index could not be built (over 4 GiB of entries).
    pub fn too_large(&self) -> bool {
        self.too_large
    }

    /// Appends the entries (then, after the blocks' entries, one for the
    /// last item: its clustering, at `items_end`), the offsets table and the
    /// trailer; `items_end` is where the end byte sits, from the entry's
    /// start.
    pub fn finish(
        mut self,
        out: &mut Vec<u8>,
        b: &Bases,
        items_end: u64,
        last: Option<&ClusteringKey>,
    ) {
        if let (Some(last), false) = (last, self.offsets.is_empty()) {
            if let Ok(at) = u32::try_from(self.entries.len()) {
                self.offsets.push(at);
                put_index_entry(&mut self.entries, b, last, items_end, &DeletionTime::LIVE);
            }
        }
        out.extend_from_slice(&self.entries);
        for o in &self.offsets {
            out.extend_from_slice(&o.to_be_bytes());
        }
        let index_len = self.entries.len() + 4 * self.offsets.len();
        out.extend_from_slice(&items_end.to_be_bytes());
        out.extend_from_slice(&(self.offsets.len() as u32).to_be_bytes());
        out.extend_from_slice(&(index_len as u32).to_be_bytes());
    }

    /// Bytes [`RowIndexBuilder::finish`] will append.
    pub fn finished_len(&self) -> u64 {
        (self.entries.len() + 4 * self.offsets.len()) as u64 + TRAILER_LEN
    }
}

/// A partition's trailer, checked against its entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trailer {
    /// Where the end byte sits, from the entry's start.
    pub items_end: u64,
    pub count: u64,
    /// Bytes of the entries and the offsets table.
    pub index_len: u64,
}

impl Trailer {
    /// Parses the last [`TRAILER_LEN`] bytes of an entry of `entry_len`
    /// bytes whose items start at `items_start`; checks that the parts fit.
    pub fn decode(bytes: &[u8], entry_len: u64, items_start: u64) -> Result<Trailer, &'static str> {
        let [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p] = bytes else {
            return Err("row index trailer truncated");
        };
        let items_end = u64::from_be_bytes([*a, *b, *c, *d, *e, *f, *g, *h]);
        let count = u32::from_be_bytes([*i, *j, *k, *l]) as u64;
        let index_len = u32::from_be_bytes([*m, *n, *o, *p]) as u64;
        let t = Trailer {
            items_end,
            count,
            index_len,
        };
        // items_start <= items_end, END (1 byte), the index, the trailer:
        // exactly the entry.
        let laid_out = items_end
            .checked_add(1)
            .and_then(|x| x.checked_add(index_len))
            .and_then(|x| x.checked_add(TRAILER_LEN));
        if items_end < items_start || laid_out != Some(entry_len) {
            return Err("row index trailer does not fit the partition");
        }
        // Each entry takes at least 4 bytes of offset and 4 of entry.
        if count.saturating_mul(8) > index_len {
            return Err("row index count larger than the index");
        }
        Ok(t)
    }

    /// Where the index (its first entry) starts, from the entry's start.
    pub fn index_start(&self) -> u64 {
        self.items_end + 1
    }

    /// Where the offsets table starts, from the entry's start.
    pub fn offsets_start(&self) -> u64 {
        self.index_start() + self.index_len - 4 * self.count
    }

    /// Bytes of the entries (before the offsets table).
    pub fn entries_len(&self) -> u64 {
        self.index_len - 4 * self.count
    }
}

/// Reads a row index through `read(offset_in_entry, len)`: each lookup
/// reads the few bytes it needs (chunks come from the chunk cache).
/// The reader of an entry's bytes: (offset from the entry's start, length).
pub type ReadEntry<'a> = dyn Fn(u64, u64) -> crate::Result<bytes::Bytes> + 'a;

/// Entries decoded so far, by number (one partition's, during one read).
pub type EntryMemo = std::cell::RefCell<std::collections::HashMap<u64, Arc<IndexEntry>>>;

pub struct RowIndexView<'a> {
    pub trailer: Trailer,
    bases: Bases,
    cmp: Arc<ClusteringComparator>,
    /// Entries already decoded: the searches of one read share their first
    /// probes.
    memo: Option<&'a EntryMemo>,
    read: &'a ReadEntry<'a>,
    /// For errors: where a bad entry was found.
    corrupt: &'a dyn Fn(&str) -> crate::Error,
}

impl<'a> RowIndexView<'a> {
    pub fn new(
        trailer: Trailer,
        bases: Bases,
        cmp: Arc<ClusteringComparator>,
        read: &'a ReadEntry<'a>,
        corrupt: &'a dyn Fn(&str) -> crate::Error,
    ) -> Self {
        RowIndexView {
            trailer,
            bases,
            cmp,
            memo: None,
            read,
            corrupt,
        }
    }

    /// The same view, remembering the entries it decodes in `memo`.
    pub fn with_memo(mut self, memo: &'a EntryMemo) -> Self {
        self.memo = Some(memo);
        self
    }

    /// Blocks: every entry but the last, which only names the last item.
    pub fn len(&self) -> usize {
        self.trailer.count.saturating_sub(1) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The clustering (or bound) of the partition's last item.
    pub fn last(&self) -> crate::Result<Option<ClusteringKey>> {
        if self.trailer.count == 0 {
            return Ok(None);
        }
        Ok(Some(self.entry(self.len())?.first.clone()))
    }

    /// Where entry `i` starts in the entries, from the offsets table.
    fn entry_at(&self, i: u64) -> crate::Result<u64> {
        if i >= self.trailer.count {
            return Ok(self.trailer.entries_len());
        }
        let b = (self.read)(self.trailer.offsets_start() + 4 * i, 4)?;
        let &[w, x, y, z] = &b[..] else {
            return Err((self.corrupt)("row index offset truncated"));
        };
        let at = u32::from_be_bytes([w, x, y, z]) as u64;
        if at >= self.trailer.entries_len() {
            return Err((self.corrupt)("row index offset past its entries"));
        }
        Ok(at)
    }

    /// Where entries `i` and `i + 1` start (the second: the end of the
    /// entries for the last one), in one read of the offsets table.
    fn entry_span(&self, i: u64) -> crate::Result<(u64, u64)> {
        if i + 1 >= self.trailer.count {
            return Ok((self.entry_at(i)?, self.trailer.entries_len()));
        }
        let b = (self.read)(self.trailer.offsets_start() + 4 * i, 8)?;
        let &[a0, a1, a2, a3, b0, b1, b2, b3] = &b[..] else {
            return Err((self.corrupt)("row index offset truncated"));
        };
        let (start, end) = (
            u32::from_be_bytes([a0, a1, a2, a3]) as u64,
            u32::from_be_bytes([b0, b1, b2, b3]) as u64,
        );
        if start >= self.trailer.entries_len() || end >= self.trailer.entries_len() {
            return Err((self.corrupt)("row index offset past its entries"));
        }
        Ok((start, end))
    }

    /// Entry `i`, decoded and checked (its offset lies among the items).
    pub fn entry(&self, i: usize) -> crate::Result<Arc<IndexEntry>> {
        if let Some(e) = self.memo.and_then(|m| m.borrow().get(&(i as u64)).cloned()) {
            return Ok(e);
        }
        let e = Arc::new(self.decode_entry(i as u64)?);
        if let Some(m) = self.memo {
            m.borrow_mut().insert(i as u64, e.clone());
        }
        Ok(e)
    }

    fn decode_entry(&self, i: u64) -> crate::Result<IndexEntry> {
        let (start, end) = self.entry_span(i)?;
        if end <= start {
            return Err((self.corrupt)("row index offsets out of order"));
        }
        let bytes = (self.read)(self.trailer.index_start() + start, end - start)?;
        let mut r = Reader::new(&bytes);
        let e = read_index_entry(&mut r, &self.bases, &self.cmp)
            .map_err(|e: DecodeError| (self.corrupt)(e.what))?;
        if !r.is_empty() {
            return Err((self.corrupt)("trailing bytes in a row index entry"));
        }
        let is_last = i + 1 == self.trailer.count;
        if (is_last && e.offset != self.trailer.items_end)
            || (!is_last && e.offset >= self.trailer.items_end)
        {
            return Err((self.corrupt)("row index block starts past the items"));
        }
        Ok(e)
    }

    /// The block holding `key`: the last whose first item sorts at or
    /// before it (0 when `key` sorts before every block).
    pub fn find(&self, key: &ClusteringKey) -> crate::Result<usize> {
        let (mut lo, mut hi) = (0usize, self.len());
        // Invariant: blocks before lo start at or before key; from hi on,
        // after it.
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.entry(mid)?.first <= *key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo.saturating_sub(1))
    }

    /// Where block `i` ends, from the entry's start: the next block's
    /// offset, or the end byte.
    pub fn block_end(&self, i: usize) -> crate::Result<u64> {
        if i + 1 >= self.len() {
            return Ok(self.trailer.items_end);
        }
        Ok(self.entry(i + 1)?.offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trailer_must_tile_the_entry() {
        let mut t = Vec::new();
        t.extend_from_slice(&100u64.to_be_bytes());
        t.extend_from_slice(&2u32.to_be_bytes());
        t.extend_from_slice(&40u32.to_be_bytes());
        // 100 + END + 40 + 16 = 157.
        let ok = Trailer::decode(&t, 157, 10).unwrap();
        assert_eq!((ok.items_end, ok.count, ok.index_len), (100, 2, 40));
        assert_eq!(ok.index_start(), 101);
        assert_eq!(ok.offsets_start(), 133);
        assert!(Trailer::decode(&t, 158, 10).is_err());
        assert!(
            Trailer::decode(&t, 157, 101).is_err(),
            "items before their start"
        );
        assert!(Trailer::decode(&t[..15], 157, 10).is_err());
        let mut many = t.clone();
        many[8..12].copy_from_slice(&6u32.to_be_bytes());
        assert!(
            Trailer::decode(&many, 157, 10).is_err(),
            "6 entries cannot fit 40 bytes"
        );
        let mut huge = t.clone();
        huge[..8].copy_from_slice(&u64::MAX.to_be_bytes());
        assert!(Trailer::decode(&huge, 157, 10).is_err());
    }
}
