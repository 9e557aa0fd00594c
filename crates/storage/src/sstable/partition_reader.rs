//! Reading part of one stored partition: the whole of a small one, or the
//! header, row index and only the blocks a slice needs of a large one
//! (format 3, see [`crate::sstable::row_index`]).

use crate::cell::DeletionTime;
use crate::clustering::{ClusteringComparator, ClusteringKey, Slice};
use crate::encoding::v3::{self, Header, Item, MarkerFolder};
use crate::encoding::{DecodeError, Reader};
use crate::engine::PartitionKey;
use crate::error::{Error, Result};
use crate::partition::Partition;
use crate::sstable::format::get_key;
use crate::sstable::point_index::{read_head, PointIndex, POINT_READ_MIN_ENTRY_BYTES};
use crate::sstable::row_index::{EntryMemo, ReadEntry, RowIndexView, Trailer, TRAILER_LEN};
use crate::sstable::Sstable;
use bytes::Bytes;
use std::sync::Arc;

/// Entries up to this long are read whole, row index or not: one or a few
/// chunks, fewer reads than the header, the index and a block.
pub const WHOLE_ENTRY_MAX_BYTES: u64 = 64 << 10;

/// Bytes of an entry read first to find its header (doubled until the
/// header fits: a large static row makes it longer).
const HEADER_PROBE_BYTES: u64 = 1 << 10;

/// A partition as stored in one sstable, ready for a read of part of it.
pub enum StoredPartition<'a> {
    /// Small, or written in a format without a row index: all of it.
    Whole(Partition),
    /// Large: its header, and its blocks on demand.
    Indexed(IndexedPartition<'a>),
}

/// A large partition of one sstable: where its entry lies, its header and
/// its row index's trailer.
pub struct IndexedPartition<'a> {
    source: &'a dyn EntryBytes,
    /// Row index entries decoded by this read (see `EntryMemo`).
    memo: EntryMemo,
    /// The entry's place in the stream.
    position: u64,
    len: u64,
    pub header: Header,
    trailer: Trailer,
    /// Where the offsets the index gives count from, in the entry: 0 for
    /// format 3's row index, the first item for a point index.
    items_base: u64,
    /// A point index, held in memory (read with the header).
    point: Option<PointIndex>,
}

impl Sstable {
    /// The partition of `key`, whole if it is small, else its header and
    /// row index; `None` when this sstable does not hold it. Uses the key
    /// cache and the bloom filter as [`Sstable::read_partition`] does.
    pub fn open_partition(&self, key: &PartitionKey) -> Result<Option<StoredPartition<'_>>> {
        self.open_partition_in(key, None)
    }

    /// [`Sstable::open_partition`] for a read of `slices` only: a partition
    /// with a point index comes back [`StoredPartition::Whole`] with the
    /// rows and range tombstones of the blocks that hold the slices (and
    /// its deletion and static row), read without the rest of its entry.
    pub fn open_partition_for(
        &self,
        key: &PartitionKey,
        slices: &[Slice],
    ) -> Result<Option<StoredPartition<'_>>> {
        self.open_partition_in(key, Some(slices))
    }

    fn open_partition_in(
        &self,
        key: &PartitionKey,
        slices: Option<&[Slice]>,
    ) -> Result<Option<StoredPartition<'_>>> {
        if !self.may_contain(key) {
            return Ok(None);
        }
        if let Some(at) = self.key_cache_get(key) {
            if let Some(p) = self.open_at(key, at, true, slices)? {
                self.key_cache_hit();
                return Ok(Some(p));
            }
        }
        let Some(at) = self.locate_counted(key)? else {
            return Ok(None);
        };
        let p = self.open_at(key, at, false, slices)?;
        self.count_true_positive();
        self.key_cache_insert(key, at);
        Ok(p)
    }

    /// The partition `key` at `(position, len)` (a scan's place): whole,
    /// or its header and row index.
    pub fn partition_at(&self, key: &PartitionKey, at: (u64, u64)) -> Result<StoredPartition<'_>> {
        self.open_at(key, at, false, None)?
            .ok_or_else(|| self.entry_corrupt(at.0, "index points at another partition"))
    }

    /// Whether the entry of `len` bytes is read whole, without looking at
    /// an index: formats 1 and 2 have none; small entries are cheaper
    /// whole; in format 4 a read of some slices looks for a point index in
    /// any entry long enough to have one, unless the table has no
    /// clustering columns (one row per partition: never two blocks).
    pub(crate) fn reads_whole(&self, len: u64, slices: Option<&[Slice]>) -> bool {
        let version = self.format_version();
        let whole_max = self.whole_entry_max_bytes();
        let clustered = !self.comparator().columns.is_empty();
        match (version, slices) {
            (..=2, _) => true,
            (4.., Some(_)) if clustered => len <= whole_max.min(POINT_READ_MIN_ENTRY_BYTES),
            _ => len <= whole_max,
        }
    }

    /// The entry at `(position, len)`, which must be `key`'s: another key
    /// there is `None` for a place from the key cache, and corruption for
    /// one from the index.
    fn open_at(
        &self,
        key: &PartitionKey,
        (position, len): (u64, u64),
        from_cache: bool,
        slices: Option<&[Slice]>,
    ) -> Result<Option<StoredPartition<'_>>> {
        if self.reads_whole(len, slices) {
            let p = self.read_entry_at(key, (position, len), from_cache)?;
            return Ok(p.map(StoredPartition::Whole));
        }
        let has_head = self.format_version() >= 4;
        match (
            IndexedPartition::open(self, Some(key), position, len, has_head)?,
            slices,
        ) {
            (Opened::OtherKey, _) if from_cache => Ok(None),
            (Opened::OtherKey, _) => {
                Err(self.entry_corrupt(position, "index points at another partition"))
            }
            (Opened::Indexed(ip), Some(slices)) if ip.has_point_index() => {
                Ok(Some(StoredPartition::Whole(ip.read_stored(slices)?)))
            }
            (Opened::Indexed(ip), _) if len > self.whole_entry_max_bytes() => {
                Ok(Some(StoredPartition::Indexed(*ip)))
            }
            (Opened::NoIndex | Opened::Indexed(_), _) => {
                let p = self.read_entry_at(key, (position, len), from_cache)?;
                Ok(p.map(StoredPartition::Whole))
            }
        }
    }
}

/// Where an indexed partition's bytes come from: an sstable's stream, or
/// (for the fuzz target) a buffer.
pub(crate) trait EntryBytes {
    /// Stream bytes `[pos, pos + len)`.
    fn read(&self, pos: u64, len: u64) -> Result<Bytes>;
    fn comparator(&self) -> &Arc<ClusteringComparator>;
    /// A corruption in the entry at stream position `position`.
    fn corrupt(&self, position: u64, what: &str) -> Error;
}

impl EntryBytes for Sstable {
    fn read(&self, pos: u64, len: u64) -> Result<Bytes> {
        self.read_stream(pos, len)
    }
    fn comparator(&self) -> &Arc<ClusteringComparator> {
        Sstable::comparator(self)
    }
    fn corrupt(&self, position: u64, what: &str) -> Error {
        self.entry_corrupt(position, what)
    }
}

/// What [`IndexedPartition::open`] found.
enum Opened<'a> {
    /// The entry holds another key.
    OtherKey,
    /// The entry has no row index: read it whole.
    NoIndex,
    Indexed(Box<IndexedPartition<'a>>),
}

/// What the first bytes of an entry say: its key, its point index's head
/// (format 4), its header and where its items start.
struct EntryStart {
    token: i64,
    key: Bytes,
    head: Option<Bytes>,
    header: Header,
    items_start: u64,
}

/// Decodes the start of an entry from `bytes`, a prefix of it.
fn entry_start(bytes: &Bytes, has_head: bool) -> std::result::Result<EntryStart, DecodeError> {
    let mut r = Reader::shared(bytes);
    let (token, key) = get_key(&mut r)?;
    let key = bytes.slice_ref(key);
    let head = if has_head {
        read_head(&mut r, bytes)?
    } else {
        None
    };
    let header = v3::read_partition_header(&mut r)?;
    Ok(EntryStart {
        token,
        key,
        head,
        header,
        items_start: r.position() as u64,
    })
}

impl<'a> IndexedPartition<'a> {
    /// Reads the key, the point index (format 4: `has_head`) and the
    /// header at the start of the entry at `position` (a prefix, doubled
    /// until they decode), checks the key when given, then takes the point
    /// index, or the trailer when the header announces a row index.
    fn open(
        source: &'a dyn EntryBytes,
        key: Option<&PartitionKey>,
        position: u64,
        len: u64,
        has_head: bool,
    ) -> Result<Opened<'a>> {
        let mut probe = HEADER_PROBE_BYTES.min(len);
        let start = loop {
            let bytes = source.read(position, probe)?;
            match entry_start(&bytes, has_head) {
                Ok(s) => break s,
                // A prefix cut inside a value fails as that value's decoder
                // says ("truncated", "length past the end", ...): only the
                // whole entry's failure is corruption.
                Err(_) if probe < len => probe = (probe * 2).min(len),
                Err(e) => return Err(source.corrupt(position, e.what)),
            }
        };
        if key.is_some_and(|key| start.token != key.token || start.key != key.key) {
            return Ok(Opened::OtherKey);
        }
        let EntryStart {
            head,
            header,
            items_start,
            ..
        } = start;
        let (trailer, items_base, point) = match (head, header.row_index) {
            (Some(_), true) => {
                return Err(source.corrupt(
                    position,
                    "a partition with both a point index and a row index",
                ))
            }
            (Some(head), false) => {
                let point = PointIndex::decode(head, len - items_start)
                    .map_err(|w| source.corrupt(position, w))?;
                (point.trailer, items_start, Some(point))
            }
            (None, false) => return Ok(Opened::NoIndex),
            (None, true) => {
                let Some(at) = len.checked_sub(TRAILER_LEN) else {
                    return Err(source.corrupt(position, "row index trailer truncated"));
                };
                let tail = source.read(position + at, TRAILER_LEN)?;
                let trailer = Trailer::decode(&tail, len, items_start)
                    .map_err(|w| source.corrupt(position, w))?;
                (trailer, 0, None)
            }
        };
        Ok(Opened::Indexed(Box::new(IndexedPartition {
            source,
            memo: EntryMemo::default(),
            position,
            len,
            header,
            trailer,
            items_base,
            point,
        })))
    }
}

/// The bound where a block starts: just before its first row, or its
/// first marker's bound.
fn block_start_bound(first: &ClusteringKey) -> ClusteringKey {
    if first.weight == 0 {
        ClusteringKey::before(first.values.clone(), first.comparator())
    } else {
        first.clone()
    }
}

impl IndexedPartition<'_> {
    fn corrupt(&self, what: &str) -> Error {
        self.source.corrupt(self.position, what)
    }

    /// Bytes `[offset, offset + len)` as the index counts them (from the
    /// entry's start, or from the first item for a point index).
    fn read(&self, offset: u64, len: u64) -> Result<Bytes> {
        let at = self.items_base.checked_add(offset);
        match at.and_then(|at| Some((at, at.checked_add(len)?))) {
            Some((at, end)) if end <= self.len => self.source.read(self.position + at, len),
            _ => Err(self.corrupt("row index points past its partition")),
        }
    }

    /// Bytes of the index itself: from memory for a point index.
    fn read_index(&self, offset: u64, len: u64) -> Result<Bytes> {
        match &self.point {
            Some(p) => p
                .read(offset, len)
                .ok_or_else(|| self.corrupt("row index offset past its entries")),
            None => self.read(offset, len),
        }
    }

    /// Runs `f` with a view of the row index.
    fn with_index<T>(&self, f: impl FnOnce(&RowIndexView<'_>) -> Result<T>) -> Result<T> {
        let read = |offset: u64, len: u64| self.read_index(offset, len);
        let read: &ReadEntry<'_> = &read;
        let corrupt = |what: &str| self.corrupt(what);
        let view = RowIndexView::new(
            self.trailer,
            self.header.bases,
            self.source.comparator().clone(),
            read,
            &corrupt,
        )
        .with_memo(&self.memo);
        f(&view)
    }

    /// Whether the entry's index is a point index (format 4), read with
    /// its header, rather than a row index after its items.
    pub fn has_point_index(&self) -> bool {
        self.point.is_some()
    }

    /// Blocks in the row index.
    pub fn block_count(&self) -> usize {
        self.trailer.count.saturating_sub(1) as usize
    }

    /// The bound where block `i` starts (a window edge).
    pub fn block_start(&self, i: usize) -> Result<ClusteringKey> {
        self.with_index(|v| Ok(block_start_bound(&v.entry(i)?.first)))
    }

    /// Where the `blocks`-th block after the one holding `frontier` starts
    /// (forward), or the start of the block `blocks - 1` before it
    /// (backward): a window edge that keeps this source's share of a window
    /// to about `blocks` blocks. `None` past this partition's first or last
    /// block.
    pub fn edge_from(
        &self,
        frontier: &ClusteringKey,
        blocks: usize,
        backward: bool,
    ) -> Result<Option<ClusteringKey>> {
        let count = self.block_count();
        if count == 0 {
            return Ok(None);
        }
        self.with_index(|v| {
            let b = v.find(frontier)?;
            let target = if backward {
                (b + 1).checked_sub(blocks.max(1))
            } else {
                Some(b + blocks.max(1)).filter(|t| *t < count)
            };
            match target {
                Some(t) => Ok(Some(block_start_bound(&v.entry(t)?.first))),
                None => Ok(None),
            }
        })
    }

    /// The blocks `[from, to)` that hold every row and marker of `slice`
    /// (none when it ends before the first block).
    pub fn blocks_for(&self, slice: &Slice) -> Result<(usize, usize)> {
        if self.block_count() == 0 {
            return Ok((0, 0));
        }
        self.with_index(|v| {
            if v.last()?.is_some_and(|last| slice.start > last) {
                return Ok((0, 0));
            }
            let to = v.find(&slice.end)? + 1;
            if to == 1 && v.entry(0)?.first >= slice.end {
                return Ok((0, 0));
            }
            Ok((v.find(&slice.start)?.min(to), to))
        })
    }

    /// The rows and range tombstones of blocks `[from, to)` (tombstones open
    /// at the first block start there; one still open after the last is
    /// closed where the next block starts), with the header's deletion. No
    /// static row: the caller takes it from the header once.
    pub fn read_blocks(&self, from: usize, to: usize) -> Result<Partition> {
        let mut p = Partition {
            deletion: self.header.deletion,
            ..Partition::default()
        };
        let count = self.block_count();
        let to = to.min(count);
        if from >= to {
            return Ok(p);
        }
        let (first, end, end_bound) = self.with_index(|v| {
            let first = v.entry(from)?;
            let end = v.block_end(to - 1)?;
            let end_bound = if to < count {
                Some(block_start_bound(&v.entry(to)?.first))
            } else {
                None
            };
            Ok((first, end, end_bound))
        })?;
        if end < first.offset {
            return Err(self.corrupt("row index blocks out of order"));
        }
        let bytes = self.read(first.offset, end - first.offset)?;
        let cmp = self.source.comparator();
        let mut r = Reader::shared(&bytes);
        let mut folder = MarkerFolder::new(Some(block_start_bound(&first.first)), first.open);
        let mut last: Option<ClusteringKey> = None;
        while !r.is_empty() {
            let item =
                v3::read_item(&mut r, &self.header.bases, cmp).map_err(|e| self.corrupt(e.what))?;
            if let Some(k) = item.clustering() {
                if last.as_ref().is_some_and(|l| l >= k) {
                    return Err(self.corrupt("partition items out of order"));
                }
                last = Some(k.clone());
            }
            match item {
                Item::End => return Err(self.corrupt("end of partition inside a block")),
                Item::Row(k, row) => {
                    p.rows.insert(k, row);
                }
                Item::Marker(bound, d) => folder.marker(bound, d),
            }
        }
        p.range_tombstones = folder
            .finish(end_bound)
            .ok_or_else(|| self.corrupt("range tombstone left open at the end of the partition"))?;
        Ok(p)
    }

    /// The rows and range tombstones of `slices`, with the header's
    /// deletion (no static row), reading only the blocks they need.
    pub fn read_slices(&self, slices: &[Slice]) -> Result<Partition> {
        let mut out = Partition {
            deletion: self.header.deletion,
            ..Partition::default()
        };
        let mut done = 0;
        for s in slices.iter().filter(|s| !s.is_empty()) {
            let (from, to) = self.blocks_for(s)?;
            let from = from.max(done);
            if from >= to {
                continue;
            }
            out.merge(self.read_blocks(from, to)?);
            done = to;
        }
        Ok(out.slice(slices).without_static())
    }

    /// What the partition holds within `slices`, as a read of the whole
    /// partition would give it sliced: [`IndexedPartition::read_slices`]
    /// with the header's static row.
    pub fn read_stored(&self, slices: &[Slice]) -> Result<Partition> {
        let mut p = self.read_slices(slices)?;
        p.static_row = self.header.static_row.clone();
        Ok(p)
    }

    /// The deletion open where block `i` starts.
    pub fn open_at(&self, i: usize) -> Result<DeletionTime> {
        self.with_index(|v| Ok(v.entry(i)?.open))
    }
}

/// A partition's entry held in memory, as the fuzz target feeds it.
struct MemEntry {
    bytes: Bytes,
    cmp: Arc<ClusteringComparator>,
}

impl EntryBytes for MemEntry {
    fn read(&self, pos: u64, len: u64) -> Result<Bytes> {
        let end = pos
            .checked_add(len)
            .filter(|e| *e <= self.bytes.len() as u64);
        match end {
            Some(end) => Ok(self.bytes.slice(pos as usize..end as usize)),
            None => Err(self.corrupt(pos, "read past the entry")),
        }
    }
    fn comparator(&self) -> &Arc<ClusteringComparator> {
        &self.cmp
    }
    fn corrupt(&self, position: u64, what: &str) -> Error {
        Error::corruption("fuzz-entry", position, what.to_string())
    }
}

/// Reads `bytes` as one partition's entry, of format 3 (key, header,
/// items, row index, trailer) and of format 4 (key, point index, header,
/// items), through its index, every way a read does, and discards the
/// results: the entry point of the row index fuzz target (no checksum
/// stands in front of the decoder here). Must never panic.
pub fn fuzz_row_index(bytes: &[u8]) {
    let src = MemEntry {
        bytes: Bytes::copy_from_slice(bytes),
        cmp: ClusteringComparator::new(vec![(varve_types::CqlType::Int, false)]),
    };
    for has_head in [false, true] {
        let len = bytes.len() as u64;
        if let Ok(Opened::Indexed(ip)) = IndexedPartition::open(&src, None, 0, len, has_head) {
            fuzz_reads(&src, &ip);
        }
    }
}

/// Every read [`fuzz_row_index`] makes through an opened entry.
fn fuzz_reads(src: &MemEntry, ip: &IndexedPartition<'_>) {
    let count = ip.block_count().min(64);
    for i in 0..count {
        let _ = ip.block_start(i);
        let _ = ip.open_at(i);
        let _ = ip.read_blocks(i, i + 1);
    }
    let _ = ip.read_blocks(0, count);
    let cmp = src.cmp.clone();
    let probes = [0i32, 1, 7, 100, -3, i32::MAX];
    for (a, b) in probes.iter().zip(probes.iter().skip(1)) {
        let slice = Slice {
            start: ClusteringKey::before(vec![Bytes::copy_from_slice(&a.to_be_bytes())], &cmp),
            end: ClusteringKey::after(vec![Bytes::copy_from_slice(&b.to_be_bytes())], &cmp),
        };
        if let Ok((from, to)) = ip.blocks_for(&slice) {
            if to.saturating_sub(from) <= 64 {
                let _ = ip.read_slices(std::slice::from_ref(&slice));
            }
        }
    }
}

/// The next window edge from `frontier` over several large partitions:
/// forward, the nearest of their [`IndexedPartition::edge_from`] edges
/// after it (so that no source holds more than about `blocks` blocks in the
/// window); backward, the nearest before it. `None` when no source has a
/// block left that way.
pub fn next_edge(
    sources: &[IndexedPartition<'_>],
    frontier: &ClusteringKey,
    blocks: usize,
    backward: bool,
) -> Result<Option<ClusteringKey>> {
    let mut best: Option<ClusteringKey> = None;
    for ip in sources {
        let Some(edge) = ip.edge_from(frontier, blocks, backward)? else {
            continue;
        };
        let moves_on = if backward {
            edge < *frontier
        } else {
            edge > *frontier
        };
        if !moves_on {
            continue;
        }
        let nearer = best
            .as_ref()
            .is_none_or(|b| if backward { edge > *b } else { edge < *b });
        if nearer {
            best = Some(edge);
        }
    }
    Ok(best)
}
