//! What `nodetool info` shows about the node, from the query layer's side:
//! identity, placement, load (live sstable bytes), uptime, pending
//! compactions. The server adds the transport's facts and formats it.

use std::time::Duration;

use crate::processor::Processor;

/// The node's facts for `nodetool info`.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeStatus {
    /// Host id, 8-4-4-4-12 text.
    pub host_id: String,
    /// Live sstable bytes of every table (Cassandra's "Load").
    pub load_bytes: u64,
    pub uptime: Duration,
    pub data_center: String,
    pub rack: String,
    pub token_count: usize,
    pub pending_compactions: u64,
    pub chunk_cache: varve_storage::sstable::BlockCacheStats,
    /// Memtable bytes now, and the limit past which writes wait (None:
    /// an in-memory engine).
    pub memtables: (u64, Option<u64>),
    /// Key cache bytes held and its capacity.
    pub key_cache: (u64, u64),
    /// Partition summaries' bytes and their budget.
    pub index_summaries: (u64, u64),
}

/// The 8-4-4-4-12 text of a UUID.
pub fn uuid_text(id: &[u8; 16]) -> String {
    let mut out = String::with_capacity(36);
    for (i, b) in id.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// A size as Cassandra's nodetool prints it: bytes below 1 KiB, else two
/// decimals in the largest binary unit that keeps the number at least 1.
pub fn file_size_text(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.2} {}", UNITS[unit])
}

impl Processor {
    /// The node's facts for `nodetool info`.
    pub fn node_status(&self) -> NodeStatus {
        let schema = self.schema();
        let load_bytes = schema
            .keyspaces
            .values()
            .filter(|k| !k.is_system)
            .flat_map(|k| k.tables.values())
            .filter_map(|t| self.storage.table_stats(t.id).ok())
            .map(|s| s.space_used_bytes)
            .sum();
        NodeStatus {
            host_id: uuid_text(&self.node.host_id),
            load_bytes,
            uptime: self.metrics.started.elapsed(),
            data_center: self.node.data_center.clone(),
            rack: self.node.rack.clone(),
            token_count: self.tokens().len(),
            pending_compactions: self.storage.compaction_stats().pending_tasks,
            chunk_cache: self.storage.block_cache_stats(),
            memtables: (
                self.storage.memtable_bytes() as u64,
                self.storage.memtable_hard_limit().map(|l| l as u64),
            ),
            key_cache: self.storage.key_cache_usage(),
            index_summaries: (
                self.storage.index_summary_usage().memory_bytes,
                self.storage.index_summary_capacity(),
            ),
        }
    }
}

/// `used / budget` as nodetool prints sizes (budget `None`: unbounded).
pub fn usage_text(used: u64, budget: Option<u64>) -> String {
    match budget {
        Some(b) => format!("{} of {}", file_size_text(used), file_size_text(b)),
        None => file_size_text(used),
    }
}

/// The `Chunk Cache` line of `nodetool info`, in Cassandra's words.
pub fn chunk_cache_text(s: &varve_storage::sstable::BlockCacheStats) -> String {
    let requests = s.hits + s.misses;
    let rate = if requests == 0 {
        "NaN".to_string()
    } else {
        format!("{:.3}", s.hit_rate())
    };
    format!(
        "entries {}, size {}, capacity {}, {} misses, {} requests, {rate} recent hit rate",
        s.entries,
        file_size_text(s.bytes),
        file_size_text(s.capacity_bytes),
        s.misses,
        requests,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_like_nodetool() {
        assert_eq!(file_size_text(0), "0 bytes");
        assert_eq!(file_size_text(1023), "1023 bytes");
        assert_eq!(file_size_text(1024), "1.00 KiB");
        assert_eq!(file_size_text(1536 * 1024), "1.50 MiB");
        assert_eq!(file_size_text(u64::MAX), "16384.00 PiB");
    }

    #[test]
    fn the_chunk_cache_line_reads_like_cassandras() {
        let mut s = varve_storage::sstable::BlockCacheStats {
            capacity_bytes: 512 << 20,
            ..Default::default()
        };
        assert_eq!(
            chunk_cache_text(&s),
            "entries 0, size 0 bytes, capacity 512.00 MiB, 0 misses, 0 requests, NaN recent hit rate"
        );
        s.entries = 3;
        s.bytes = 3 * 16512;
        s.hits = 3;
        s.misses = 1;
        assert_eq!(
            chunk_cache_text(&s),
            "entries 3, size 48.38 KiB, capacity 512.00 MiB, 1 misses, 4 requests, 0.750 recent hit rate"
        );
    }

    #[test]
    fn uuids_print_in_groups() {
        let id = [0x2f, 0x9b, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0xff];
        assert_eq!(uuid_text(&id), "2f9b0001-0203-0405-0607-08090a0b0cff");
    }
}
