//! The point index of a mid-size partition (sstable format 4; its bytes
//! are in docs/format/sstable.md, "Point index", and the why in
//! docs/design/point-reads.md).
//!
//! A format 4 entry has, right after its key, the length of a *head*
//! (varint; 0: none) and the head itself, before the partition's header:
//!
//! ```text
//! | key | head_len | entries ... | offsets: count x u32 | items_end u64 | count u32 | index_len u32 | header | items ... | END |
//! ```
//!
//! The head is format 3's row index (entries, offsets table, trailer),
//! moved in front of the items and with every offset counted from the
//! first item instead of the entry's start, so that the writer knows the
//! offsets before it places the items. It indexes blocks of
//! [`POINT_BLOCK_BYTES`] of items. A read of one row then reads the
//! entry's first bytes (key, head, header: one chunk) and the block that
//! holds the row, where a partition read whole would read every chunk of
//! the entry. Entries longer than [`POINT_INDEX_ENTRY_MAX_BYTES`], and
//! those written item by item, keep format 3's row index after their items
//! instead.

use crate::encoding::{DecodeError, Reader};
use crate::sstable::row_index::{Trailer, TRAILER_LEN};
use bytes::Bytes;

/// Item bytes per point index block: a quarter of a default chunk, so a
/// row's block lies in one chunk about three reads in four.
pub const POINT_BLOCK_BYTES: u64 = 4 << 10;

/// Entries up to this long get a point index (at 4 KiB blocks, at most
/// 256 entries, a few KiB of head read with the header); longer ones keep
/// format 3's row index after the items.
pub const POINT_INDEX_ENTRY_MAX_BYTES: u64 = 1 << 20;

/// Entries up to this long are read whole even in format 4: they hold too
/// few items for a point index (two blocks at least).
pub const POINT_READ_MIN_ENTRY_BYTES: u64 = 2 * POINT_BLOCK_BYTES;

/// Which entries a writer gives a point index, and its block size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PointIndexParams {
    pub block_bytes: u64,
    pub entry_max_bytes: u64,
}

impl Default for PointIndexParams {
    fn default() -> Self {
        PointIndexParams {
            block_bytes: POINT_BLOCK_BYTES,
            entry_max_bytes: POINT_INDEX_ENTRY_MAX_BYTES,
        }
    }
}

impl PointIndexParams {
    /// Whether an entry of `entry_len` bytes (before its point index)
    /// whose items take `items_len` bytes gets a point index: two blocks of
    /// items at least, and not longer than the limit.
    pub fn applies(&self, items_len: u64, entry_len: u64) -> bool {
        self.block_bytes > 0
            && items_len >= self.block_bytes.saturating_mul(2)
            && entry_len <= self.entry_max_bytes
    }
}

/// A point index read from an entry's head.
#[derive(Debug, Clone)]
pub struct PointIndex {
    /// As format 3's trailer, offsets counted from the first item.
    pub trailer: Trailer,
    /// The entries and the offsets table.
    pub index: Bytes,
}

/// Reads a format 4 entry's `head_len` and head from `r`, a reader over
/// `bytes` placed just after the key: the head's bytes, `None` when it is
/// empty. Leaves `r` at the partition's header.
pub fn read_head(r: &mut Reader, bytes: &Bytes) -> Result<Option<Bytes>, DecodeError> {
    let len = r.varint()?;
    let at = r.position();
    let len = usize::try_from(len).map_err(|_| DecodeError {
        what: "point index truncated",
        offset: at,
    })?;
    r.take(len)?;
    Ok((len > 0).then(|| bytes.slice(at..at + len)))
}

impl PointIndex {
    /// Parses `head` for an entry whose items, from the first to the end
    /// byte, take `items_len` bytes; checks that the head is exactly its
    /// index and trailer, and that the items end where the entry does.
    pub fn decode(head: Bytes, items_len: u64) -> Result<PointIndex, &'static str> {
        let head_len = head.len() as u64;
        let Some(at) = head_len.checked_sub(TRAILER_LEN) else {
            return Err("point index truncated");
        };
        // As if the index followed the items (format 3's layout from the
        // first item): items_end + 1 + index_len + 16 = items + head.
        let virtual_len = items_len
            .checked_add(head_len)
            .ok_or("point index does not fit the partition")?;
        let trailer = Trailer::decode(&head[at as usize..], virtual_len, 0)?;
        if trailer.index_len + TRAILER_LEN != head_len {
            return Err("point index does not fit its head");
        }
        if trailer.count < 2 {
            return Err("point index of fewer than two entries");
        }
        Ok(PointIndex {
            trailer,
            index: head.slice(..at as usize),
        })
    }

    /// Bytes `[offset, offset + len)` of the index, where `offset` counts
    /// as in format 3's layout (the index starting right after the end
    /// byte): what a [`crate::sstable::row_index::RowIndexView`] asks for.
    pub fn read(&self, offset: u64, len: u64) -> Option<Bytes> {
        let from = offset.checked_sub(self.trailer.index_start())?;
        let to = from.checked_add(len)?;
        (to <= self.index.len() as u64).then(|| self.index.slice(from as usize..to as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(items_end: u64, count: u32, index: &[u8]) -> Bytes {
        let mut h = index.to_vec();
        h.extend_from_slice(&items_end.to_be_bytes());
        h.extend_from_slice(&count.to_be_bytes());
        h.extend_from_slice(&(index.len() as u32).to_be_bytes());
        Bytes::from(h)
    }

    #[test]
    fn the_head_must_be_its_index_and_the_items_must_end_the_entry() {
        let index = [7u8; 40];
        let ok = PointIndex::decode(head(100, 2, &index), 101).unwrap();
        assert_eq!((ok.trailer.items_end, ok.trailer.count), (100, 2));
        assert_eq!(ok.index.len(), 40);
        assert!(PointIndex::decode(head(100, 2, &index), 102).is_err());
        assert!(PointIndex::decode(head(100, 2, &index), 100).is_err());
        assert!(PointIndex::decode(head(100, 1, &index), 101).is_err());
        assert!(PointIndex::decode(head(100, 6, &index), 101).is_err());
        assert!(PointIndex::decode(head(u64::MAX, 2, &index), 101).is_err());
        assert!(PointIndex::decode(Bytes::from_static(&[0; 15]), 101).is_err());
        let mut longer = head(100, 2, &index).to_vec();
        longer.insert(0, 1);
        assert!(PointIndex::decode(Bytes::from(longer), 101).is_err());
    }

    #[test]
    fn reads_map_format_3_offsets_into_the_index() {
        let index: Vec<u8> = (0..40).collect();
        let p = PointIndex::decode(head(100, 2, &index), 101).unwrap();
        assert_eq!(&p.read(101, 3).unwrap()[..], &[0, 1, 2]);
        assert_eq!(&p.read(138, 2).unwrap()[..], &[37, 38]);
        assert_eq!(&p.read(139, 1).unwrap()[..], &[38]);
        assert!(p.read(140, 2).is_none(), "past the index");
        assert!(p.read(100, 1).is_none(), "before the index");
    }

    #[test]
    fn params_apply_from_two_blocks_up_to_the_entry_limit() {
        let p = PointIndexParams::default();
        assert!(!p.applies(2 * POINT_BLOCK_BYTES - 1, 10_000));
        assert!(p.applies(2 * POINT_BLOCK_BYTES, 10_000));
        assert!(p.applies(10_000, POINT_INDEX_ENTRY_MAX_BYTES));
        assert!(!p.applies(10_000, POINT_INDEX_ENTRY_MAX_BYTES + 1));
        let off = PointIndexParams {
            block_bytes: 0,
            ..p
        };
        assert!(!off.applies(1 << 20, 1 << 20));
    }
}
