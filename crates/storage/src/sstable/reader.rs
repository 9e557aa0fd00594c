//! An open sstable: the footer, summary, bloom filter and statistics in
//! memory; index blocks and data chunks read on demand with positional
//! reads, so one [`Sstable`] serves any number of threads.
//!
//! Open checks the footer, the header and the CRCs of the chunk offset
//! table, summary, bloom filter and statistics. Index blocks are checked
//! whenever read; data chunks with probability `crc_check_chance`.

use crate::clustering::ClusteringComparator;
use crate::encoding::{decode_partition_v, v3, Reader};
use crate::engine::{PartitionKey, TokenBound};
use crate::error::{Error, Result};
use crate::fs::{Fs, ReadFile, ReadKind};
use crate::fs_direct_read::DirectReader;
use crate::io_mode;
use crate::partition::Partition;
use crate::sstable::block_cache::{BlockCache, BlockTable, CachedBlock};
use crate::sstable::bloom::{key_hash, BloomFilter};
use crate::sstable::chunks::{ChunkCache, ChunkReader};
use crate::sstable::format::{
    check_header, get_key, Footer, Section, FOOTER_LEN, HEADER_LEN, MAX_INDEX_BLOCK_LEN,
};
use crate::sstable::index::{decode_span, decode_summary, find_in_span, IndexEntry};
use crate::sstable::index_search::{with_search_table, Searchable};
use crate::sstable::key_cache::{KeyCache, KeyCacheBudget, DEFAULT_KEY_CACHE_BYTES};
use crate::sstable::point_index::{read_head, PointIndex};
use crate::sstable::row_index::{Trailer, TRAILER_LEN};
use crate::sstable::stats::{decode_stats, SstableStats};
use crate::sstable::summary::Summary;
use crate::sstable::NodeCaches;
use crate::striped::StripedCounter;
use arc_swap::ArcSwap;
use bytes::Bytes;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// An open, immutable sstable.
pub struct Sstable {
    path: PathBuf,
    file: Arc<dyn ReadFile>,
    cmp: Arc<ClusteringComparator>,
    footer: Footer,
    size_on_disk: u64,
    chunks: ChunkReader,
    /// The summary and its spans' slots in the chunk cache, swapped whole
    /// when the engine resamples the summary (scans keep the one they
    /// started with). Loaded without a lock or a shared write.
    index: ArcSwap<IndexView>,
    bloom: BloomFilter,
    stats: SstableStats,
    bloom_true_positives: StripedCounter,
    bloom_false_positives: StripedCounter,
    /// Where recently read partitions start: (stream position, length).
    /// Saves the index-block read of repeated point reads (Cassandra's key
    /// cache, under the node-wide budget: see `key_cache`).
    key_cache: KeyCache,
    /// Per index block, the trust epoch of its last good CRC check (0:
    /// none); see [`crate::sstable::chunks::ChunkTrust`]. Used while the summary is kept whole (a
    /// span is then one block).
    index_verified: Vec<AtomicU32>,
    /// When the file was written (seconds), for
    /// `tombstone_compaction_interval`; [`CREATED_UNKNOWN`] until the engine
    /// stamps it.
    created_at_seconds: std::sync::atomic::AtomicI64,
    /// The node's chunk cache, for index spans (unless the index is
    /// mapped).
    index_cache: Option<Arc<BlockCache>>,
    /// Entries up to this long are read whole (see
    /// [`crate::sstable::partition_reader::WHOLE_ENTRY_MAX_BYTES`]).
    whole_entry_max_bytes: AtomicU64,
    /// Entries at least this long are large for a compaction's scan (see
    /// [`LARGE_ENTRY_BYTES`]).
    large_entry_bytes: AtomicU64,
}

/// An sstable's index section up to this long is prefetched into the page
/// cache when the sstable opens.
pub const PREFETCH_INDEX_MAX_BYTES: u64 = 256 << 20;

/// `created_at_seconds` not known yet.
const CREATED_UNKNOWN: i64 = i64::MIN;

impl Sstable {
    pub fn open(
        fs: Arc<dyn Fs>,
        path: &Path,
        cmp: Arc<ClusteringComparator>,
        crc_check_chance: f64,
    ) -> Result<Self> {
        let file: Arc<dyn ReadFile> =
            Arc::from(fs.open_read(path).map_err(|e| Error::io(path, e))?);
        let size = file.len();
        let corrupt = |offset: u64, reason: &str| Error::corruption(path, offset, reason);
        let Some(footer_at) = size.checked_sub(FOOTER_LEN).filter(|at| *at >= HEADER_LEN) else {
            return Err(corrupt(0, "file too short for an sstable"));
        };
        let footer_bytes = read_at(&*file, path, footer_at, FOOTER_LEN)?;
        let footer = Footer::decode(&footer_bytes).map_err(|r| corrupt(footer_at, r))?;
        footer
            .validate_layout(size)
            .map_err(|r| corrupt(footer_at, r))?;
        let header = read_at(&*file, path, 0, HEADER_LEN)?;
        check_header(&header, footer.version).map_err(|r| corrupt(0, r))?;

        let table = read_section(&*file, path, &footer.chunk_offsets)?;
        let chunks = ChunkReader::new(
            file.clone(),
            path,
            footer.compression,
            footer.chunk_length as u64,
            footer.uncompressed_len,
            footer.data,
            &table,
            crc_check_chance,
        )
        .map_err(|r| corrupt(footer.chunk_offsets.offset, r))?;
        let summary = Summary::new(read_summary(&*file, path, &footer)?, footer.index.len, 1);
        let bloom_bytes = read_section(&*file, path, &footer.bloom)?;
        let bloom =
            BloomFilter::decode(&bloom_bytes).map_err(|r| corrupt(footer.bloom.offset, r))?;
        let stats_bytes = read_section(&*file, path, &footer.stats)?;
        let stats =
            decode_stats(&stats_bytes, &cmp).map_err(|r| corrupt(footer.stats.offset, r))?;
        if stats.partition_count != footer.partition_count
            || stats.uncompressed_len != footer.uncompressed_len
            || stats.compressed_len != footer.data.len
            || (footer.partition_count == 0) != summary.is_empty()
        {
            return Err(corrupt(
                footer.stats.offset,
                "statistics disagree with the footer",
            ));
        }
        // Flushes and compactions write around the page cache, so a new
        // sstable's index would be read from the disk by every first lookup;
        // it is small (about 2% of the data): fetch it in the background.
        if footer.index.len <= PREFETCH_INDEX_MAX_BYTES {
            file.prefetch(footer.index.offset, footer.index.len);
        }
        let index_verified = (0..summary.full_len()).map(|_| AtomicU32::new(0)).collect();
        Ok(Sstable {
            path: path.to_path_buf(),
            file,
            cmp,
            footer,
            size_on_disk: size,
            chunks,
            index: ArcSwap::from_pointee(IndexView {
                summary: Arc::new(summary),
                spans: None,
            }),
            bloom,
            stats,
            bloom_true_positives: StripedCounter::default(),
            bloom_false_positives: StripedCounter::default(),
            key_cache: KeyCache::new(Arc::new(KeyCacheBudget::new(DEFAULT_KEY_CACHE_BYTES))),
            index_verified,
            created_at_seconds: std::sync::atomic::AtomicI64::new(CREATED_UNKNOWN),
            index_cache: None,
            whole_entry_max_bytes: AtomicU64::new(
                crate::sstable::partition_reader::WHOLE_ENTRY_MAX_BYTES,
            ),
            large_entry_bytes: AtomicU64::new(LARGE_ENTRY_BYTES),
        })
    }

    /// When the file was written (seconds since the epoch), once known.
    pub fn created_at_seconds(&self) -> Option<i64> {
        let s = self.created_at_seconds.load(Ordering::Relaxed);
        (s != CREATED_UNKNOWN).then_some(s)
    }

    /// Records when the file was written.
    pub fn set_created_at_seconds(&self, seconds: i64) {
        self.created_at_seconds.store(seconds, Ordering::Relaxed);
    }

    /// Keys the key cache holds now.
    pub fn key_cache_len(&self) -> usize {
        self.key_cache.len()
    }

    /// Point reads served by the key cache.
    pub fn key_cache_hits(&self) -> u64 {
        self.key_cache.hits()
    }

    pub fn stats(&self) -> &SstableStats {
        &self.stats
    }

    /// The probability with which reads verify a data chunk's CRC.
    pub fn crc_check_chance(&self) -> f64 {
        self.chunks.crc_check_chance()
    }

    /// Changes it for the reads from now on (ALTER TABLE ... WITH
    /// crc_check_chance applies to the sstables already open).
    pub fn set_crc_check_chance(&self, chance: f64) {
        self.chunks.set_crc_check_chance(chance);
    }

    /// The CRC32 of the whole file, from its footer (see
    /// [`crate::sstable::format::Footer::whole_file_crc`]).
    pub fn whole_file_crc(&self) -> u32 {
        self.footer.whole_file_crc()
    }

    /// The open file, for reading its raw bytes (whole-sstable streaming):
    /// it stays readable while this sstable is held, even once compaction
    /// has removed its name.
    pub(crate) fn raw_file(&self) -> &Arc<dyn ReadFile> {
        &self.file
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn size_on_disk(&self) -> u64 {
        self.size_on_disk
    }

    /// Bytes of the bloom filter's bit array (for tablestats).
    pub fn bloom_filter_size(&self) -> usize {
        self.bloom.size_bytes()
    }

    /// Reads whose bloom check passed and found the key.
    pub fn bloom_true_positives(&self) -> u64 {
        self.bloom_true_positives.get()
    }

    /// Reads whose bloom check passed but did not find the key.
    pub fn bloom_false_positives(&self) -> u64 {
        self.bloom_false_positives.get()
    }

    /// False only when the key is certainly absent (bloom filter).
    pub fn may_contain(&self, key: &PartitionKey) -> bool {
        self.bloom.may_contain(key_hash(&key.key))
    }

    fn corrupt(&self, offset: u64, reason: impl Into<String>) -> Error {
        Error::corruption(&self.path, offset, reason)
    }

    /// The summary in use now.
    pub fn summary(&self) -> Arc<Summary> {
        self.index.load().summary.clone()
    }

    /// A view of `summary` whose spans go through the chunk cache when the
    /// index is not mapped.
    fn view_of(&self, summary: Arc<Summary>) -> IndexView {
        let spans = self
            .index_cache
            .as_ref()
            .map(|cache| BlockTable::new(cache, summary.len()));
        IndexView { summary, spans }
    }

    /// Keeps every `step`-th entry of the file's summary (1: all of them);
    /// re-reads the summary section when the step changes.
    pub fn resample_summary(&self, step: usize) -> Result<()> {
        let current = self.summary();
        if current.step() == step.clamp(1, crate::sstable::summary::MAX_SUMMARY_STEP) {
            return Ok(());
        }
        let full = read_summary(&*self.file, &self.path, &self.footer)?;
        let summary = Summary::new(full, self.footer.index.len, step);
        let view = self.view_of(Arc::new(summary));
        self.index.store(Arc::new(view));
        Ok(())
    }

    /// Joins the node's caches (see [`NodeCaches`]): its chunk cache, its
    /// key cache budget and its chunk trust, in place of this sstable's own.
    pub fn with_node_caches(mut self, caches: &NodeCaches) -> Self {
        self.key_cache = KeyCache::new(caches.keys.clone());
        self.chunks.set_trust(caches.trust.clone());
        for v in &self.index_verified {
            v.store(0, Ordering::Relaxed);
        }
        self.with_block_cache(caches.blocks.clone())
    }

    /// Serves point reads' data chunks and index blocks through the node's
    /// chunk cache (what is mapped is read from the map instead).
    pub fn with_block_cache(mut self, cache: Arc<BlockCache>) -> Self {
        if self.file.mapped(ReadKind::Index).is_none() {
            self.index_cache = Some(cache.clone());
            self.index = ArcSwap::from_pointee(self.view_of(self.summary()));
        }
        self.chunks.set_cache(&cache);
        self
    }

    /// The index blocks of span `i` of `view`'s summary. `Span::Cached`
    /// when they came from the chunk cache, whose blocks were CRC-checked
    /// when they entered it.
    fn read_span<'a>(&'a self, view: &'a IndexView, i: usize) -> Result<Span<'a>> {
        let summary = &*view.summary;
        let Some((offset, len)) = summary.span(i) else {
            return Err(self.corrupt(self.footer.index.offset, "index block does not exist"));
        };
        let max = MAX_INDEX_BLOCK_LEN * summary.step() as u64;
        if len > max {
            return Err(self.corrupt(self.footer.index.offset + offset, "index span too long"));
        }
        let at = self.footer.index.offset + offset;
        if let Some(map) = self.file.mapped(ReadKind::Index) {
            let end = at.checked_add(len).filter(|end| *end <= map.len() as u64);
            let Some(end) = end else {
                return Err(self.corrupt(at, "index span past the end of the file"));
            };
            if !io_mode::may_block() && !self.file.resident(ReadKind::Index, at, len) {
                return Err(Error::WouldBlock {
                    what: "an index block",
                });
            }
            return Ok(Span::Mapped(&map[at as usize..end as usize]));
        }
        let Some(cache) = view.spans.as_ref().filter(|c| c.enabled()) else {
            return self.pread_index(at, len).map(Span::Read);
        };
        if let Some(span) = cache.get(i) {
            return Ok(Span::Cached(span));
        }
        let span = self.pread_index(at, len)?;
        let entries = decode_span(&span, at).map_err(|(o, r)| self.corrupt(o, r))?;
        if io_mode::background() {
            drop(entries);
            return Ok(Span::Checked(Bytes::from(span)));
        }
        let searchable = Bytes::from(with_search_table(&span, &entries));
        cache.insert(i, searchable.clone());
        Ok(Span::Searchable(searchable))
    }

    /// Index bytes `[at, at + len)` read with `pread`; on a thread that may
    /// not block, only from the page cache.
    fn pread_index(&self, at: u64, len: u64) -> Result<Vec<u8>> {
        if io_mode::background() {
            let mut buf = vec![0u8; len as usize];
            self.file
                .read_exact_at_uncached(at, &mut buf)
                .map_err(|e| Error::io_at(&self.path, at, len as usize, e))?;
            return Ok(buf);
        }
        if io_mode::may_block() {
            return read_at(&*self.file, &self.path, at, len);
        }
        let mut buf = vec![0u8; len as usize];
        match self.file.read_exact_at_nowait(at, &mut buf) {
            Ok(true) => Ok(buf),
            Ok(false) => Err(Error::WouldBlock {
                what: "an index block",
            }),
            Err(e) => Err(Error::io_at(&self.path, at, len as usize, e)),
        }
    }

    fn span_entries<'a>(
        &self,
        summary: &Summary,
        i: usize,
        span: &'a [u8],
    ) -> Result<Vec<IndexEntry<'a>>> {
        let base = self.footer.index.offset + summary.span(i).map_or(0, |s| s.0);
        decode_span(span, base).map_err(|(at, r)| self.corrupt(at, r))
    }

    /// Where the partition's entry lies in the stream, from the index.
    fn locate(&self, key: &PartitionKey) -> Result<Option<(u64, u64)>> {
        let view = self.index.load();
        let summary = &*view.summary;
        let Some(i) = summary.find(key) else {
            return Ok(None);
        };
        let span = self.read_span(&view, i)?;
        let base = self.footer.index.offset + summary.span(i).map_or(0, |s| s.0);
        if let Span::Searchable(_) | Span::Cached(_) = span {
            let table = span.search_table();
            let table = table.ok_or_else(|| self.corrupt(base, "index span without its table"))?;
            return table.find(key).map_err(|r| self.corrupt(base, r));
        }
        // A whole summary makes the span one block, which is trusted like
        // a data chunk once its CRC matched (see `ChunkTrust`). A span just
        // read and decoded (a compaction's) was checked then.
        let one_block = summary.step() == 1;
        let verified = one_block.then(|| self.index_verified.get(i)).flatten();
        let trust = self.chunks.trust();
        let trusted = matches!(span, Span::Checked(_))
            || verified.is_some_and(|v| trust.trusts(v.load(Ordering::Relaxed)));
        let found = find_in_span(&span, base, one_block, !trusted, key)
            .map_err(|(at, r)| self.corrupt(at, r))?;
        if let (Some(v), false) = (verified, trusted) {
            v.store(trust.admit(span.len() as u64), Ordering::Relaxed);
        }
        Ok(found)
    }

    /// Entries up to this long are read whole by [`Sstable::open_partition`]
    /// even when they carry a row index; tests lower it to read small
    /// partitions through their index.
    pub fn set_whole_entry_max_bytes(&self, bytes: u64) {
        self.whole_entry_max_bytes.store(bytes, Ordering::Relaxed);
    }

    /// Entries at least this long are merged window by window by
    /// compactions (tests lower it).
    pub fn set_large_entry_bytes(&self, bytes: u64) {
        self.large_entry_bytes.store(bytes, Ordering::Relaxed);
    }

    pub(crate) fn whole_entry_max_bytes(&self) -> u64 {
        self.whole_entry_max_bytes.load(Ordering::Relaxed)
    }

    /// The format version of the file.
    pub fn format_version(&self) -> u16 {
        self.footer.version
    }

    pub fn comparator(&self) -> &Arc<ClusteringComparator> {
        &self.cmp
    }

    /// Stream bytes `[pos, pos + len)`, through the chunk cache.
    pub(crate) fn read_stream(&self, pos: u64, len: u64) -> Result<bytes::Bytes> {
        self.chunks.read_range(pos, len)
    }

    /// A corruption in the entry at stream position `position`.
    pub(crate) fn entry_corrupt(&self, position: u64, what: &str) -> Error {
        self.corrupt(
            self.entry_offset(position),
            format!("{what} in the partition at stream position {position}"),
        )
    }

    /// Where the key cache says `key`'s entry starts (to be checked).
    pub(crate) fn key_cache_get(&self, key: &PartitionKey) -> Option<(u64, u64)> {
        self.key_cache.get(key.token)
    }

    /// A read served by the key cache.
    pub(crate) fn key_cache_hit(&self) {
        self.key_cache.hit();
        self.bloom_true_positives.inc();
    }

    pub(crate) fn key_cache_insert(&self, key: &PartitionKey, at: (u64, u64)) {
        self.key_cache.insert(key.token, at);
    }

    /// [`Sstable::locate`], counting a bloom filter false positive when
    /// the index does not hold the key. A true positive is counted by
    /// [`Sstable::count_true_positive`] once the partition is read: a read
    /// that finds its data chunk on the disk gives up (`WouldBlock`) and
    /// runs again on the read stage, and was counted twice.
    pub(crate) fn locate_counted(&self, key: &PartitionKey) -> Result<Option<(u64, u64)>> {
        let found = self.locate(key)?;
        if found.is_none() {
            self.bloom_false_positives.inc();
        }
        Ok(found)
    }

    /// A bloom filter true positive: the partition was found and read.
    pub(crate) fn count_true_positive(&self) {
        self.bloom_true_positives.inc();
    }

    /// The partition at `at` (see [`Sstable::read_at`]).
    pub(crate) fn read_entry_at(
        &self,
        key: &PartitionKey,
        at: (u64, u64),
        from_cache: bool,
    ) -> Result<Option<Partition>> {
        self.read_at(key, at, from_cache)
    }

    /// The stored partition, or `None` when the sstable does not hold it.
    pub fn read_partition(&self, key: &PartitionKey) -> Result<Option<Partition>> {
        if !self.may_contain(key) {
            return Ok(None);
        }
        // A cached place is the token's: when another key with the same
        // token was cached there, its partition decodes, and the index
        // decides.
        if let Some(at) = self.key_cache.get(key.token) {
            if let Some(partition) = self.read_at(key, at, true)? {
                self.key_cache.hit();
                self.bloom_true_positives.inc();
                return Ok(Some(partition));
            }
        }
        let Some(at) = self.locate_counted(key)? else {
            return Ok(None);
        };
        let partition = self.read_at(key, at, false)?;
        self.count_true_positive();
        self.key_cache.insert(key.token, at);
        Ok(partition)
    }

    /// The partition stored at `(position, len)`, which must be `key`'s:
    /// another key there is `None` for a place from the key cache, and
    /// corruption for one from the index.
    fn read_at(
        &self,
        key: &PartitionKey,
        (position, len): (u64, u64),
        from_cache: bool,
    ) -> Result<Option<Partition>> {
        let bytes = self.chunks.read_range(position, len)?;
        let (got, partition) = self.decode_entry(position, &bytes)?;
        if got == *key {
            return Ok(Some(partition));
        }
        if from_cache {
            return Ok(None);
        }
        Err(self.corrupt(
            self.entry_offset(position),
            "index points at another partition",
        ))
    }

    /// The file offset of the chunk holding stream position `pos`.
    fn entry_offset(&self, pos: u64) -> u64 {
        self.chunks.chunk_offset(self.chunks.chunk_of(pos))
    }

    /// Decodes the entry read at `position` (key and partition); its values
    /// share `bytes`.
    fn decode_entry(
        &self,
        position: u64,
        bytes: &bytes::Bytes,
    ) -> Result<(PartitionKey, Partition)> {
        let bad = |what: &str| {
            self.corrupt(
                self.entry_offset(position),
                format!("{what} in the partition at stream position {position}"),
            )
        };
        let mut r = Reader::shared(bytes);
        let (token, key) = get_key(&mut r).map_err(|e| bad(e.what))?;
        let key = PartitionKey {
            token,
            key: bytes::Bytes::copy_from_slice(key),
        };
        if self.footer.version >= 3 {
            let partition = self.decode_v3_body(&mut r, bytes, &bad)?;
            return Ok((key, partition));
        }
        let body_len = r.varint().map_err(|e| bad(e.what))?;
        if body_len != (bytes.len() - r.position()) as u64 {
            return Err(bad("entry length disagrees with the index"));
        }
        let version = self.footer.partition_encoding_version;
        let partition = decode_partition_v(&mut r, &self.cmp, version).map_err(|e| bad(e.what))?;
        if !r.is_empty() {
            return Err(bad("trailing bytes"));
        }
        Ok((key, partition))
    }

    /// A format 3 or 4 entry after its key: in format 4 a point index
    /// (its head, see [`crate::sstable::point_index`]), then the partition
    /// (encoding 3), then, when the header says so, a row index whose
    /// trailer must describe exactly the bytes that follow the items. An
    /// entry has one index at most.
    fn decode_v3_body(
        &self,
        r: &mut Reader,
        bytes: &bytes::Bytes,
        bad: &dyn Fn(&str) -> Error,
    ) -> Result<Partition> {
        let head = if self.footer.version >= 4 {
            read_head(r, bytes).map_err(|e| bad(e.what))?
        } else {
            None
        };
        let header_at = r.position();
        let h = v3::read_partition_header(r).map_err(|e| bad(e.what))?;
        let items_start = r.position() as u64;
        let mut partition = Partition {
            deletion: h.deletion,
            static_row: h.static_row,
            ..Partition::default()
        };
        let folder = v3::MarkerFolder::new(None, crate::cell::DeletionTime::LIVE);
        v3::read_items_into(r, &h.bases, &self.cmp, &mut partition, folder, None)
            .map_err(|e| bad(e.what))?;
        let items_end = r.position() as u64 - 1;
        if let Some(head) = head {
            if h.row_index {
                return Err(bad("a partition with both a point index and a row index"));
            }
            let items_len = bytes.len() as u64 - items_start;
            PointIndex::decode(head, items_len).map_err(bad)?;
        }
        if !h.row_index {
            if !r.is_empty() {
                return Err(bad("trailing bytes"));
            }
            return Ok(partition);
        }
        let entry_len = bytes.len() as u64;
        let tail = entry_len
            .checked_sub(TRAILER_LEN)
            .map(|at| &bytes[at as usize..])
            .ok_or_else(|| bad("row index trailer truncated"))?;
        let trailer = Trailer::decode(tail, entry_len, header_at as u64).map_err(bad)?;
        if trailer.items_end != items_end {
            return Err(bad("row index trailer disagrees with the items"));
        }
        Ok(partition)
    }

    /// Up to `limit` partition keys between `start` and `end`, in order.
    pub fn keys(
        &self,
        start: &TokenBound,
        end: &TokenBound,
        limit: usize,
    ) -> Result<Vec<PartitionKey>> {
        let mut out = Vec::new();
        let view = self.index.load_full();
        let summary = &*view.summary;
        let first = summary
            .entries()
            .partition_point(|e| !after_start(start, e.first.token, &e.first.key));
        for i in first.saturating_sub(1)..summary.len() {
            let span = self.read_span(&view, i)?;
            for e in self.span_entries(summary, i, &span)? {
                if out.len() >= limit || !before_end(end, e.token, e.key) {
                    return Ok(out);
                }
                if after_start(start, e.token, e.key) {
                    out.push(e.partition_key());
                }
            }
        }
        Ok(out)
    }

    /// Checks the whole file: the data and index sections against their
    /// CRCs in the footer, then every chunk, index block and partition
    /// (whatever `crc_check_chance`). For `nodetool verify`-like checks.
    pub fn verify(&self) -> Result<()> {
        self.verify_each(|_, _| Ok(()))
    }

    /// [`Sstable::verify`], handing each partition to `check` as it is
    /// read (an import checks that the partitions fit its table).
    pub fn verify_each(
        &self,
        mut check: impl FnMut(&PartitionKey, &Partition) -> Result<()>,
    ) -> Result<()> {
        for section in [&self.footer.data, &self.footer.index] {
            let mut crc = crc32fast::Hasher::new();
            let mut at = section.offset;
            while at < section.end() {
                let n = (section.end() - at).min(VERIFY_READ_LEN);
                crc.update(&read_at(&*self.file, &self.path, at, n)?);
                at += n;
            }
            if crc.finalize() != section.crc {
                return Err(self.corrupt(section.offset, "section checksum mismatch"));
            }
        }
        for item in self.iter()? {
            let (key, partition) = item?;
            check(&key, &partition)?;
        }
        Ok(())
    }

    /// Every partition in key order (for compaction and verification).
    pub fn iter(&self) -> Result<SstableIter<'_>> {
        Ok(SstableIter {
            sstable: self,
            view: self.index.load_full(),
            block: 0,
            pending: Vec::new(),
            cache: None,
            direct: None,
            next_position: 0,
            seen: 0,
            failed: false,
            large_as_places: false,
        })
    }

    /// [`Sstable::iter`] reading the data around the page cache where the
    /// file system allows (a compaction's scan: see
    /// [`crate::fs_direct_read`]).
    pub fn iter_direct(&self) -> Result<SstableIter<'_>> {
        let mut iter = self.iter()?;
        iter.direct = self.chunks.direct_reader();
        Ok(iter)
    }
}

/// A summary and, when index spans go through the chunk cache, a slot per
/// span of it.
struct IndexView {
    summary: Arc<Summary>,
    spans: Option<BlockTable>,
}

/// The bytes of an index span, wherever they came from.
enum Span<'a> {
    /// Straight from the file's map (not yet checked).
    Mapped(&'a [u8]),
    /// Read with `pread` for this lookup (not yet checked).
    Read(Vec<u8>),
    /// Read for this lookup and checked.
    Checked(Bytes),
    /// Read for this lookup, checked, with its search table (see
    /// `index_search`), as it went into the chunk cache.
    Searchable(Bytes),
    /// From the chunk cache (checked when it entered it), with its search
    /// table.
    Cached(CachedBlock<'a>),
}

impl Span<'_> {
    /// The search table, for a span that has one.
    fn search_table(&self) -> Option<Searchable<'_>> {
        match self {
            Span::Searchable(b) => Searchable::parse(b),
            Span::Cached(b) => Searchable::parse(b),
            _ => None,
        }
    }
}

impl std::ops::Deref for Span<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Span::Mapped(b) => b,
            Span::Read(v) => v,
            Span::Checked(b) => b,
            Span::Searchable(_) | Span::Cached(_) => {
                self.search_table().map_or(&[][..], |t| t.span())
            }
        }
    }
}

/// Bytes per read when verifying a whole section.
const VERIFY_READ_LEN: u64 = 1 << 20;

/// True when a key at (token, key) lies at or after a scan's start.
fn after_start(b: &TokenBound, token: i64, key: &[u8]) -> bool {
    match b {
        TokenBound::Unbounded => true,
        TokenBound::TokenInclusive(t) => token >= *t,
        TokenBound::TokenExclusive(t) => token > *t,
        TokenBound::AfterKey(k) => (token, key) > (k.token, &k.key[..]),
    }
}

/// True when a key at (token, key) lies before a scan's end.
fn before_end(b: &TokenBound, token: i64, key: &[u8]) -> bool {
    match b {
        TokenBound::Unbounded => true,
        TokenBound::TokenInclusive(t) => token <= *t,
        TokenBound::TokenExclusive(t) => token < *t,
        TokenBound::AfterKey(k) => (token, key) < (k.token, &k.key[..]),
    }
}

fn read_at(file: &dyn ReadFile, path: &Path, offset: u64, len: u64) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; len as usize];
    file.read_exact_at(offset, &mut buf)
        .map_err(|e| Error::io_at(path, offset, buf.len(), e))?;
    Ok(buf)
}

/// The file's whole summary, CRC-checked and validated.
fn read_summary(
    file: &dyn ReadFile,
    path: &Path,
    footer: &Footer,
) -> Result<Vec<crate::sstable::index::SummaryEntry>> {
    let bytes = read_section(file, path, &footer.summary)?;
    decode_summary(&bytes, footer.index.len)
        .map_err(|r| Error::corruption(path, footer.summary.offset, r))
}

/// A whole section, its CRC checked.
fn read_section(file: &dyn ReadFile, path: &Path, s: &Section) -> Result<Vec<u8>> {
    let bytes = read_at(file, path, s.offset, s.len)?;
    if crc32fast::hash(&bytes) != s.crc {
        return Err(Error::corruption(
            path,
            s.offset,
            "section checksum mismatch",
        ));
    }
    Ok(bytes)
}

/// Iterates the partitions of an sstable in order, one index block at a
/// time. Stops after the first error.
pub struct SstableIter<'a> {
    sstable: &'a Sstable,
    /// The summary when the scan started; `block` counts its spans.
    view: Arc<IndexView>,
    block: usize,
    pending: Vec<(u64, u64, PartitionKey)>,
    cache: ChunkCache,
    /// Reads the data around the page cache, when set.
    direct: Option<DirectReader>,
    /// Where the next entry must start: entries tile the stream.
    next_position: u64,
    seen: u64,
    failed: bool,
    /// Yield large partitions as their place (see [`SstableIter::next_scan`]).
    large_as_places: bool,
}

/// Entries of format 3 at least this long are yielded as their place by a
/// scan that asked for it, not decoded whole: a compaction merges them
/// window by window through their row index.
pub const LARGE_ENTRY_BYTES: u64 = 8 << 20;

/// What a scan yields for one partition.
pub enum ScanEntry {
    Whole(Partition),
    /// A large partition's entry: where it lies in the stream.
    Large {
        position: u64,
        len: u64,
    },
}

impl SstableIter<'_> {
    /// Whether this scan reads around the page cache.
    pub fn reads_direct(&self) -> bool {
        self.direct.is_some()
    }

    fn refill(&mut self) -> Result<()> {
        let s = self.sstable;
        let span = s.read_span(&self.view, self.block)?;
        let entries = s.span_entries(&self.view.summary, self.block, &span)?;
        self.pending = entries
            .iter()
            .rev()
            .map(|e| (e.position, e.len, e.partition_key()))
            .collect();
        self.block += 1;
        Ok(())
    }

    /// From now on, yields large partitions (see [`LARGE_ENTRY_BYTES`]) as
    /// [`ScanEntry::Large`] from [`SstableIter::next_scan`].
    pub fn large_as_places(mut self) -> Self {
        self.large_as_places = true;
        self
    }

    /// The next partition, whole or (see [`SstableIter::large_as_places`])
    /// as its place. Stops after the first error.
    pub fn next_scan(&mut self) -> Option<Result<(PartitionKey, ScanEntry)>> {
        if self.failed {
            return None;
        }
        let item = self.next_entry();
        if matches!(item, Some(Err(_))) {
            self.failed = true;
        }
        item
    }

    fn next_entry(&mut self) -> Option<Result<(PartitionKey, ScanEntry)>> {
        let s = self.sstable;
        if self.pending.is_empty() {
            if self.block >= self.view.summary.len() {
                if self.next_position != s.chunks.uncompressed_len()
                    || self.seen != s.footer.partition_count
                {
                    let at = s.footer.index.offset;
                    return Some(Err(s.corrupt(at, "index does not cover the data")));
                }
                return None;
            }
            if let Err(e) = self.refill() {
                return Some(Err(e));
            }
        }
        let (position, len, key) = self.pending.pop()?;
        if position != self.next_position {
            return Some(Err(s.corrupt(
                s.entry_offset(position),
                "index entries do not tile the data",
            )));
        }
        self.next_position = position.saturating_add(len);
        self.seen += 1;
        if self.large_as_places
            && s.footer.version >= 3
            && len >= s.large_entry_bytes.load(Ordering::Relaxed)
        {
            return Some(Ok((key, ScanEntry::Large { position, len })));
        }
        let entry = s
            .chunks
            .read_range_cached(&mut self.cache, self.direct.as_mut(), position, len)
            .and_then(|bytes| s.decode_entry(position, &bytes::Bytes::from(bytes)));
        Some(match entry {
            Ok((got, _)) if got != key => Err(s.corrupt(
                s.entry_offset(position),
                "index points at another partition",
            )),
            Ok((got, p)) => Ok((got, ScanEntry::Whole(p))),
            Err(e) => Err(e),
        })
    }
}

impl Iterator for SstableIter<'_> {
    type Item = Result<(PartitionKey, Partition)>;

    fn next(&mut self) -> Option<Self::Item> {
        let (key, entry) = match self.next_scan()? {
            Ok(item) => item,
            Err(e) => return Some(Err(e)),
        };
        Some(match entry {
            ScanEntry::Whole(p) => Ok((key, p)),
            // Only after `large_as_places`: read it whole all the same.
            ScanEntry::Large { position, len } => self
                .sstable
                .read_entry_at(&key, (position, len), false)
                .map(|p| (key, p.unwrap_or_default())),
        })
    }
}
