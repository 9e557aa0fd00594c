//! Writes one sstable front to back: the header, the data chunks as
//! partitions arrive, then (in [`SstableWriter::finish`]) the chunk offset
//! table, index, summary, bloom filter, statistics and footer, and an
//! fsync. Renaming the file into place is the caller's job.
//!
//! Memory: the index and summary sections and 16 bytes of hash per key
//! (for the bloom filter, sized once the key count is known) are kept
//! until `finish`; the data is streamed one chunk at a time.

use crate::cell::DeletionTime;
use crate::clustering::{ClusteringComparator, ClusteringKey};
use crate::encoding::{put_varint, v3, PARTITION_ENCODING_VERSION};
use crate::engine::PartitionKey;
use crate::error::{Error, Result};
use crate::fs::{Fs, PageCache, WriteFile};
use crate::partition::Partition;
use crate::sstable::bloom::{key_hash, BloomFilter};
use crate::sstable::chunks::ChunkWriter;
use crate::sstable::format::{
    encode_header, put_key, Footer, Section, FORMAT_VERSION, HEADER_LEN, MAX_CHUNK_LENGTH,
    MAX_INDEX_INTERVAL, MAX_KEY_LEN, MIN_CHUNK_LENGTH,
};
use crate::sstable::index::IndexWriter;
use crate::sstable::point_index::PointIndexParams;
use crate::sstable::row_index::{RowIndexBuilder, ROW_INDEX_BLOCK_BYTES};
use crate::sstable::stats::{encode_stats, SstableStats, StatsCollector};
use crate::sstable::SstableParams;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Builds an sstable from partitions given in ascending key order.
pub struct SstableWriter {
    file: Box<dyn WriteFile>,
    path: PathBuf,
    params: SstableParams,
    chunks: ChunkWriter,
    index: IndexWriter,
    stats: StatsCollector,
    hashes: Vec<(u64, u64)>,
    last_key: Option<PartitionKey>,
    scratch: Vec<u8>,
    /// Item bytes per row index block (see [`crate::sstable::row_index`]).
    row_index_block_bytes: u64,
    /// Which entries get a point index (see [`crate::sstable::point_index`]).
    point_index: PointIndexParams,
    /// The partition being written piece by piece, if any.
    streaming: Option<Streaming>,
    comparator: Arc<ClusteringComparator>,
}

/// The state of a partition written piece by piece.
struct Streaming {
    key: PartitionKey,
    /// Where its entry starts in the stream.
    position: u64,
    /// Bytes of its entry written so far.
    written: u64,
    bases: crate::encoding::v2::Bases,
    blocks: RowIndexBuilder,
    /// The range tombstone deletion open after the last item.
    open: DeletionTime,
    last: Option<ClusteringKey>,
    buf: Vec<u8>,
}

fn invalid(path: &Path, what: String) -> Error {
    Error::io(
        path,
        std::io::Error::new(std::io::ErrorKind::InvalidInput, what),
    )
}

/// Partitions of more rows than this are written item by item (see
/// [`SstableWriter::begin_partition`]) rather than encoded whole first.
pub const STREAM_ROWS_MIN: usize = 4096;

/// Encodes a partition's whole data entry into `out` (cleared first) in
/// format 4: the key, a point index when `point` applies to it (see
/// [`crate::sstable::point_index`]), the partition (encoding 3), and, when
/// it has no point index and its items take `row_index_block_bytes` or
/// more, a row index and its trailer after the items.
pub fn encode_entry(
    out: &mut Vec<u8>,
    key: &PartitionKey,
    partition: &Partition,
    row_index_block_bytes: u64,
    point: PointIndexParams,
) {
    out.clear();
    put_key(out, key.token, &key.key);
    let head_at = out.len();
    put_varint(out, 0);
    let header_at = out.len();
    let h = v3::Header::of(partition, false);
    v3::put_partition_header(out, &h);
    let items_start = out.len();
    let mut points = RowIndexBuilder::new(point.block_bytes);
    let last = v3::put_items(out, &h.bases, partition, |out, first, open| {
        points.before_item(&h.bases, (out.len() - items_start) as u64, first, open)
    });
    let items_end = out.len() - 1;
    let items_len = (items_end - items_start) as u64;
    if point.applies(items_len, out.len() as u64) && points.len() >= 2 && !points.too_large() {
        let mut head = Vec::with_capacity(points.finished_len() as usize);
        points.finish(&mut head, &h.bases, items_len, last.as_ref());
        let body = out.split_off(header_at);
        out.truncate(head_at);
        put_varint(out, head.len() as u64);
        out.extend_from_slice(&head);
        out.extend_from_slice(&body);
        return;
    }
    if items_len < row_index_block_bytes {
        return;
    }
    // Large: encode the items again, noting where the blocks start (the
    // common small partition pays for no index at all).
    let mut blocks = RowIndexBuilder::new(row_index_block_bytes);
    out.truncate(items_start);
    v3::put_items(out, &h.bases, partition, |out, first, open| {
        blocks.before_item(&h.bases, out.len() as u64, first, open)
    });
    if blocks.too_large() {
        return;
    }
    out[header_at] |= v3::PARTITION_HAS_ROW_INDEX;
    blocks.finish(out, &h.bases, items_end as u64, last.as_ref());
}

/// Checks the parameters against the format's limits.
pub fn check_params(path: &Path, p: &SstableParams) -> Result<()> {
    if !(MIN_CHUNK_LENGTH..=MAX_CHUNK_LENGTH).contains(&p.chunk_length) {
        return Err(invalid(
            path,
            format!("chunk length {} out of range", p.chunk_length),
        ));
    }
    if !(p.bloom_fp_chance > 0.0 && p.bloom_fp_chance <= 1.0) {
        return Err(invalid(
            path,
            format!("bloom_filter_fp_chance {} out of range", p.bloom_fp_chance),
        ));
    }
    if !(1..=MAX_INDEX_INTERVAL).contains(&p.min_index_interval) {
        return Err(invalid(
            path,
            format!("min_index_interval {} out of range", p.min_index_interval),
        ));
    }
    if !(0.0..=1.0).contains(&p.crc_check_chance) {
        return Err(invalid(
            path,
            format!("crc_check_chance {} out of range", p.crc_check_chance),
        ));
    }
    Ok(())
}

impl SstableWriter {
    /// Creates (or truncates) `path` and writes the header; the file's
    /// bytes stay in the page cache.
    pub fn create(
        fs: Arc<dyn Fs>,
        path: &Path,
        params: SstableParams,
        cmp: Arc<ClusteringComparator>,
    ) -> Result<Self> {
        SstableWriter::create_with_cache(fs, path, params, cmp, PageCache::Keep)
    }

    /// [`SstableWriter::create`], with the page cache hint for its bytes.
    pub fn create_with_cache(
        fs: Arc<dyn Fs>,
        path: &Path,
        params: SstableParams,
        cmp: Arc<ClusteringComparator>,
        cache: PageCache,
    ) -> Result<Self> {
        check_params(path, &params)?;
        let mut file = fs
            .create_sequential(path, cache)
            .map_err(|e| Error::io(path, e))?;
        file.write_all(&encode_header())
            .map_err(|e| Error::io(path, e))?;
        Ok(SstableWriter {
            file,
            path: path.to_path_buf(),
            chunks: ChunkWriter::new(params.compression, params.chunk_length, HEADER_LEN),
            index: IndexWriter::new(params.min_index_interval),
            params,
            stats: StatsCollector::default(),
            hashes: Vec::new(),
            last_key: None,
            scratch: Vec::new(),
            row_index_block_bytes: ROW_INDEX_BLOCK_BYTES,
            point_index: PointIndexParams::default(),
            streaming: None,
            comparator: cmp,
        })
    }

    /// Checks a new partition's key: non-empty, within the limit, after
    /// the last one.
    fn check_key(&self, key: &PartitionKey) -> Result<()> {
        if key.key.is_empty() || key.key.len() > MAX_KEY_LEN {
            return Err(invalid(
                &self.path,
                format!("partition key of {} bytes", key.key.len()),
            ));
        }
        if self.last_key.as_ref().is_some_and(|last| last >= key) {
            return Err(invalid(
                &self.path,
                "partition keys out of order".to_string(),
            ));
        }
        Ok(())
    }

    /// Appends a partition; keys must be strictly ascending and non-empty.
    pub fn add(&mut self, key: &PartitionKey, partition: &Partition) -> Result<()> {
        self.check_key(key)?;
        if self.streaming.is_some() {
            return Err(invalid(&self.path, "a partition is still open".into()));
        }
        if partition.rows.len() > STREAM_ROWS_MIN {
            // A large partition goes out item by item, never whole in a
            // buffer (a flush of a wide memtable partition).
            let header = v3::Header::of(partition, true);
            let start = crate::clustering::Slice::all(&self.comparator).start;
            self.begin_partition(key, &header)?;
            self.write_window(&start, None, partition)?;
            return self.end_partition();
        }
        encode_entry(
            &mut self.scratch,
            key,
            partition,
            self.row_index_block_bytes,
            self.point_index,
        );
        let entry_len = self.scratch.len() as u64;
        let position = self.chunks.position();
        self.chunks
            .write(self.file.as_mut(), &self.path, &self.scratch)?;
        self.index.add(key, position, entry_len);
        self.stats.add(key, partition, entry_len);
        self.hashes.push(key_hash(&key.key));
        self.last_key = Some(key.clone());
        Ok(())
    }

    /// Starts a partition written piece by piece (a large one, merged by a
    /// compaction window by window): its key (ascending, as for
    /// [`SstableWriter::add`]) and header, whose bases must lie at or below
    /// every value that follows. Then [`SstableWriter::write_window`] for
    /// each window in order, then [`SstableWriter::end_partition`]. The
    /// entry always gets a row index; only the current block is in memory.
    pub fn begin_partition(&mut self, key: &PartitionKey, header: &v3::Header) -> Result<()> {
        self.check_key(key)?;
        if self.streaming.is_some() {
            return Err(invalid(&self.path, "a partition is already open".into()));
        }
        let mut buf = Vec::new();
        put_key(&mut buf, key.token, &key.key);
        // No point index: its row index follows the items.
        put_varint(&mut buf, 0);
        let header = v3::Header {
            row_index: true,
            ..header.clone()
        };
        v3::put_partition_header(&mut buf, &header);
        let position = self.chunks.position();
        self.chunks.write(self.file.as_mut(), &self.path, &buf)?;
        self.stats
            .begin_partition(key, &header.deletion, header.static_row.as_ref());
        self.streaming = Some(Streaming {
            key: key.clone(),
            position,
            written: buf.len() as u64,
            bases: header.bases,
            blocks: RowIndexBuilder::new(self.row_index_block_bytes),
            open: DeletionTime::LIVE,
            last: None,
            buf,
        });
        Ok(())
    }

    /// Writes the rows and range tombstones of one window `[start, end)`
    /// of the open partition (`end` `None`: the last window). Range
    /// tombstones must lie within the window; one reaching `end` stays open
    /// into the next window.
    pub fn write_window(
        &mut self,
        start: &ClusteringKey,
        end: Option<&ClusteringKey>,
        window: &Partition,
    ) -> Result<()> {
        let Some(mut st) = self.streaming.take() else {
            return Err(invalid(&self.path, "no partition is open".into()));
        };
        let result = self.write_window_to(&mut st, start, end, window);
        self.streaming = Some(st);
        result
    }

    fn write_window_to(
        &mut self,
        st: &mut Streaming,
        start: &ClusteringKey,
        end: Option<&ClusteringKey>,
        window: &Partition,
    ) -> Result<()> {
        let marks = v3::markers(&window.range_tombstones);
        // The deletion open where the window starts, then its changes
        // inside the window (one at its end carries into the next).
        let at_start = marks
            .first()
            .filter(|(b, _)| b == start)
            .map_or(DeletionTime::LIVE, |(_, d)| *d);
        let mut inside = std::iter::once((start, at_start))
            .chain(
                marks
                    .iter()
                    .filter(|(b, _)| b > start && end.is_none_or(|e| b < e))
                    .map(|(b, d)| (b, *d)),
            )
            .peekable();
        let mut rows = window.rows.iter().peekable();
        // Rows and markers merged in clustering order (both come sorted).
        let items = std::iter::from_fn(|| {
            let marker_first = match (inside.peek(), rows.peek()) {
                (Some((b, _)), Some((k, _))) => *b < *k,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => return None,
            };
            if marker_first {
                inside.next().map(|(b, d)| (b, None, d))
            } else {
                rows.next().map(|(k, r)| (k, Some(r), DeletionTime::LIVE))
            }
        });
        for (k, row, d) in items {
            if row.is_none() && d == st.open {
                continue;
            }
            if k < start || end.is_some_and(|e| k >= e) || st.last.as_ref().is_some_and(|l| l >= k)
            {
                return Err(invalid(&self.path, "partition items out of order".into()));
            }
            st.buf.clear();
            st.blocks.before_item(&st.bases, st.written, k, &st.open);
            match row {
                Some(r) => {
                    if !v3::row_fits(&st.bases, r) {
                        return Err(invalid(
                            &self.path,
                            "a row below its partition's bases".into(),
                        ));
                    }
                    v3::put_row_item(&mut st.buf, &st.bases, k, r);
                    self.stats.stream_row(k, r);
                }
                None => {
                    if !v3::deletion_fits(&st.bases, &d) {
                        return Err(invalid(
                            &self.path,
                            "a deletion below its partition's bases".into(),
                        ));
                    }
                    v3::put_marker_item(&mut st.buf, &st.bases, k, &d);
                    self.stats.stream_marker(k, &d);
                    st.open = d;
                }
            }
            st.last = Some(k.clone());
            self.chunks.write(self.file.as_mut(), &self.path, &st.buf)?;
            st.written += st.buf.len() as u64;
        }
        Ok(())
    }

    /// Ends the open partition: closes a range tombstone still open, then
    /// writes the end byte, the row index and its trailer.
    pub fn end_partition(&mut self) -> Result<()> {
        let Some(mut st) = self.streaming.take() else {
            return Err(invalid(&self.path, "no partition is open".into()));
        };
        st.buf.clear();
        if !st.open.is_live() {
            let end = crate::clustering::Slice::all(&self.comparator).end;
            st.blocks.before_item(&st.bases, st.written, &end, &st.open);
            v3::put_marker_item(&mut st.buf, &st.bases, &end, &DeletionTime::LIVE);
            self.stats.stream_marker(&end, &DeletionTime::LIVE);
            st.last = Some(end);
        }
        let items_end = st.written + st.buf.len() as u64;
        v3::put_end(&mut st.buf);
        if st.blocks.too_large() {
            return Err(invalid(&self.path, "row index over 4 GiB".into()));
        }
        st.blocks
            .finish(&mut st.buf, &st.bases, items_end, st.last.as_ref());
        let entry_len = st.written + st.buf.len() as u64;
        self.chunks.write(self.file.as_mut(), &self.path, &st.buf)?;
        self.index.add(&st.key, st.position, entry_len);
        self.stats.end_partition(entry_len);
        self.hashes.push(key_hash(&st.key.key));
        self.last_key = Some(st.key);
        Ok(())
    }

    /// Sets how many item bytes a row index block holds (tests use small
    /// blocks to get many of them).
    pub fn set_row_index_block_bytes(&mut self, bytes: u64) {
        self.row_index_block_bytes = bytes.max(1);
    }

    /// Sets which entries get a point index and its block size (tests use
    /// small blocks; a block size of 0 writes none).
    pub fn set_point_index(&mut self, point: PointIndexParams) {
        self.point_index = point;
    }

    /// Writes every remaining section and the footer, then fsyncs.
    /// Uncompressed bytes of partition data written so far (to split
    /// compaction outputs by size).
    pub fn bytes_written(&self) -> u64 {
        self.chunks.position()
    }

    pub fn finish(mut self) -> Result<SstableStats> {
        let path = self.path.clone();
        if self.streaming.is_some() {
            return Err(invalid(&path, "a partition is still open".into()));
        }
        let (data, chunk_table, uncompressed_len) =
            self.chunks.finish(self.file.as_mut(), &path)?;
        let (index, summary) = self.index.finish();
        let mut bloom =
            BloomFilter::with_capacity(self.hashes.len() as u64, self.params.bloom_fp_chance);
        for h in &self.hashes {
            bloom.insert(*h);
        }
        let mut bloom_bytes = Vec::with_capacity(bloom.size_bytes() + 12);
        bloom.encode(&mut bloom_bytes);
        let stats = self.stats.finish(uncompressed_len, data.len);
        let stats_bytes = encode_stats(&stats);

        let mut at = data.end();
        let mut sections = Vec::with_capacity(5);
        for bytes in [&chunk_table, &index, &summary, &bloom_bytes, &stats_bytes] {
            self.file
                .write_all(bytes)
                .map_err(|e| Error::io(&path, e))?;
            sections.push(Section {
                offset: at,
                len: bytes.len() as u64,
                crc: crc32fast::hash(bytes),
            });
            at += bytes.len() as u64;
        }
        let [chunk_offsets, index, summary, bloom, stats_section] = sections[..] else {
            return Err(invalid(&path, "section table".to_string()));
        };
        let footer = Footer {
            version: FORMAT_VERSION,
            partition_encoding_version: PARTITION_ENCODING_VERSION,
            compression: self.params.compression,
            chunk_length: self.params.chunk_length as u32,
            uncompressed_len,
            partition_count: stats.partition_count,
            data,
            chunk_offsets,
            index,
            summary,
            bloom,
            stats: stats_section,
        };
        self.file
            .write_all(&footer.encode())
            .map_err(|e| Error::io(&path, e))?;
        self.file.sync().map_err(|e| Error::io(&path, e))?;
        Ok(stats)
    }
}
