//! SSTables (format version 4, see `format::FORMAT_VERSION`): immutable files of partitions in token
//! order. The byte layout is specified in docs/format/sstable.md; the
//! constants in [`format`] mirror it.
//!
//! ```text
//! header | data chunks | chunk offsets | index blocks | summary | bloom | stats | footer
//! ```
//!
//! Invariants (checked by the writer as it writes and by the reader when
//! it reads):
//! 1. Partitions are in strictly ascending (token, key) order, keys are
//!    1..=65535 bytes.
//! 2. Every byte of the file is covered by a CRC32: chunks and index blocks
//!    each carry their own, the other sections' are in the footer, and the
//!    footer has its own. Corrupt bytes give [`Error::Corruption`] naming
//!    the file and an offset, never a panic and never wrong data (when the
//!    chunk CRC is checked).
//! 3. The sections tile the file exactly, so a truncated file fails open.
//!
//! A file is written to a temporary name by [`SstableWriter`], fsynced by
//! [`SstableWriter::finish`], and renamed into place by the caller.
//!
//! [`Error::Corruption`]: crate::Error::Corruption

pub mod block_cache;
mod bloom;
mod chunks;
pub mod format;
pub mod fs_mem;
pub mod histogram;
mod index;
mod index_search;
pub mod key_cache;
mod node_caches;
pub mod partition_reader;
pub mod point_index;
mod reader;
pub mod row_index;
mod stats;
pub mod summary;
pub(crate) mod writer;

#[cfg(test)]
mod test_util;
#[cfg(test)]
mod tests_bench;
#[cfg(test)]
mod tests_corruption;
#[cfg(test)]
mod tests_fixture;
#[cfg(test)]
mod tests_io;
#[cfg(test)]
mod tests_point;
#[cfg(test)]
mod tests_roundtrip;

pub use block_cache::{BlockCache, BlockCacheStats, DEFAULT_FILE_CACHE_BYTES};
pub use format::Compression;
pub use key_cache::{KeyCacheBudget, DEFAULT_KEY_CACHE_BYTES};
pub use node_caches::NodeCaches;
pub use partition_reader::{IndexedPartition, StoredPartition};
pub use reader::{ScanEntry, Sstable, SstableIter, LARGE_ENTRY_BYTES};
pub use stats::SstableStats;
pub use writer::SstableWriter;

use crate::clustering::ClusteringComparator;
use crate::engine::{PartitionKey, TokenBound};
use std::path::Path;

/// The table options that shape an sstable (from the schema's
/// `compression`, `bloom_filter_fp_chance` and `min_index_interval`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SstableParams {
    /// Uncompressed bytes per chunk (`chunk_length_in_kb * 1024`).
    pub chunk_length: usize,
    pub compression: Compression,
    /// In (0, 1]; 1.0 writes no filter.
    pub bloom_fp_chance: f64,
    /// Partitions per index block (and per summary entry).
    pub min_index_interval: usize,
    /// The sparsest the in-memory summary may become when the node's
    /// `index_summary_capacity` is short: at most this many partitions
    /// scanned per lookup (see [`summary`]).
    pub max_index_interval: usize,
    /// Chance that a chunk read verifies its CRC, in [0, 1].
    pub crc_check_chance: f64,
}

impl Default for SstableParams {
    /// Cassandra's table defaults: 16 KiB LZ4 chunks, 1% bloom filter
    /// false positives, index interval 128 (2048 at most when downsampled),
    /// always check CRCs.
    fn default() -> Self {
        SstableParams {
            chunk_length: 16 * 1024,
            compression: Compression::Lz4,
            bloom_fp_chance: 0.01,
            min_index_interval: 128,
            max_index_interval: 2048,
            crc_check_chance: 1.0,
        }
    }
}

/// Opens an sstable image held in memory and reads everything, discarding
/// the results: the entry point of the sstable fuzz target. It must never
/// panic, whatever the bytes.
pub fn fuzz_open(bytes: &[u8]) {
    let fs = fs_mem::MemFs::new();
    let path = Path::new("fuzz/sstable.db");
    fs.insert(path, bytes.to_vec());
    let cmp = ClusteringComparator::new(vec![(varve_types::CqlType::Blob, false)]);
    // The partition decoders on raw input (the first byte picks the
    // version), since checksums keep most fuzzed bytes away from them.
    crate::encoding::fuzz_decode(bytes, &cmp);
    let Ok(table) = Sstable::open(fs, path, cmp, 1.0) else {
        return;
    };
    let keys = table
        .keys(&TokenBound::Unbounded, &TokenBound::Unbounded, usize::MAX)
        .unwrap_or_default();
    for k in keys.iter().take(1000) {
        let _ = table.read_partition(k);
    }
    let _ = table.read_partition(&PartitionKey::new(bytes::Bytes::from_static(b"absent")));
    if let Ok(iter) = table.iter() {
        for item in iter.take(100_000) {
            if item.is_err() {
                break;
            }
        }
    }
    let _ = table.stats().droppable_tombstones(i32::MAX);
    let _ = table.stats().partition_sizes.quantile(0.99);
}
