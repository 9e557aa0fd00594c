//! Writes one sstable front to back: the header, the data chunks as
//! partitions arrive, then (in [`SstableWriter::finish`]) the chunk offset
//! table, index, summary, bloom filter, statistics and footer, and an
//! fsync. Renaming the file into place is the caller's job.
//!
//! Memory: the index and summary sections and 16 bytes of hash per key
//! (for the bloom filter, sized once the key count is known) are kept
//! until `finish`; the data is streamed one chunk at a time.

use crate::clustering::ClusteringComparator;
use crate::encoding::{encode_partition, put_varint, PARTITION_ENCODING_VERSION};
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
}

fn invalid(path: &Path, what: String) -> Error {
    Error::io(
        path,
        std::io::Error::new(std::io::ErrorKind::InvalidInput, what),
    )
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
        _cmp: Arc<ClusteringComparator>,
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
        })
    }

    /// Appends a partition; keys must be strictly ascending and non-empty.
    pub fn add(&mut self, key: &PartitionKey, partition: &Partition) -> Result<()> {
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
        self.scratch.clear();
        encode_partition(&mut self.scratch, partition);
        let mut head = Vec::with_capacity(key.key.len() + 20);
        put_key(&mut head, key.token, &key.key);
        put_varint(&mut head, self.scratch.len() as u64);
        let entry_len = (head.len() + self.scratch.len()) as u64;
        let position = self.chunks.position();
        self.chunks.write(self.file.as_mut(), &self.path, &head)?;
        self.chunks
            .write(self.file.as_mut(), &self.path, &self.scratch)?;
        self.index.add(key, position, entry_len);
        self.stats.add(key, partition, entry_len);
        self.hashes.push(key_hash(&key.key));
        self.last_key = Some(key.clone());
        Ok(())
    }

    /// Writes every remaining section and the footer, then fsyncs.
    /// Uncompressed bytes of partition data written so far (to split
    /// compaction outputs by size).
    pub fn bytes_written(&self) -> u64 {
        self.chunks.position()
    }

    pub fn finish(mut self) -> Result<SstableStats> {
        let path = self.path.clone();
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
