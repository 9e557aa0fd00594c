//! An sstable's statistics: what the read path and compaction learn about
//! a file without reading its data. Collected by the writer while it adds
//! partitions ([`StatsCollector`]) and stored in the stats section.
//!
//! Timestamps and local deletion times follow Cassandra's metadata
//! collector: every timestamp counts (cells, row markers, and the four
//! kinds of deletion); every local deletion time counts, a live
//! non-expiring value counting as [`NO_DELETION_TIME`] (so an sstable
//! holding live data never looks fully expired). When nothing was
//! recorded, the timestamps are `(i64::MIN, i64::MAX)` (cover everything,
//! so nothing is skipped by mistake) and the deletion times are
//! `(NO_DELETION_TIME, NO_DELETION_TIME)`.

use crate::cell::{DeletionTime, NO_DELETION_TIME};
use crate::clustering::{ClusteringComparator, ClusteringKey};
use crate::encoding::{put_varint, Reader, MAX_CLUSTERING_COMPONENTS};
use crate::engine::PartitionKey;
use crate::partition::Partition;
use crate::row::Row;
use crate::sstable::format::{get_key, put_key};
use crate::sstable::histogram::{size_bucket_bounds, DropTimeHistogram, SizeHistogram};
use bytes::Bytes;
use std::sync::Arc;

/// What a reader knows about an sstable without reading its data.
#[derive(Debug, Clone, PartialEq)]
pub struct SstableStats {
    pub partition_count: u64,
    pub row_count: u64,
    pub cell_count: u64,
    /// Partition, row, range, collection and cell tombstones.
    pub tombstone_count: u64,
    /// Expiring cells and row markers.
    pub expiring_count: u64,
    pub min_timestamp: i64,
    pub max_timestamp: i64,
    pub min_local_deletion_time: i32,
    pub max_local_deletion_time: i32,
    /// Smallest and largest TTL seen (0 when none).
    pub min_ttl: i32,
    pub max_ttl: i32,
    /// Bytes of the partition stream before compression.
    pub uncompressed_len: u64,
    /// Bytes of the data section on disk (chunks and their CRCs).
    pub compressed_len: u64,
    pub first_key: Option<PartitionKey>,
    pub last_key: Option<PartitionKey>,
    /// Smallest and largest clustering of any row or range tombstone
    /// bound; `None` when the sstable has neither. Static rows and
    /// partition deletions are outside these bounds.
    pub min_clustering: Option<ClusteringKey>,
    pub max_clustering: Option<ClusteringKey>,
    pub partition_sizes: SizeHistogram,
    pub drop_times: DropTimeHistogram,
    /// Partitions with a partition deletion, and partitions with a static
    /// row (format 2; `None` in a format 1 file). Zero of both lets a read
    /// that asks for rows outside the clustering bounds skip the sstable.
    pub partition_deletions: Option<u64>,
    pub static_rows: Option<u64>,
}

impl SstableStats {
    fn empty() -> Self {
        SstableStats {
            partition_count: 0,
            row_count: 0,
            cell_count: 0,
            tombstone_count: 0,
            expiring_count: 0,
            min_timestamp: i64::MAX,
            max_timestamp: i64::MIN,
            min_local_deletion_time: i32::MAX,
            max_local_deletion_time: i32::MIN,
            min_ttl: i32::MAX,
            max_ttl: i32::MIN,
            uncompressed_len: 0,
            compressed_len: 0,
            first_key: None,
            last_key: None,
            min_clustering: None,
            max_clustering: None,
            partition_sizes: SizeHistogram::default(),
            drop_times: DropTimeHistogram::default(),
            partition_deletions: Some(0),
            static_rows: Some(0),
        }
    }

    /// Estimated tombstones and expiring values droppable at `gc_before`.
    pub fn droppable_tombstones(&self, gc_before: i32) -> f64 {
        self.drop_times.sum(gc_before as i64)
    }
}

/// Gathers [`SstableStats`] as partitions are written.
pub struct StatsCollector {
    stats: SstableStats,
    size_bounds: Vec<u64>,
}

impl Default for StatsCollector {
    fn default() -> Self {
        StatsCollector {
            stats: SstableStats::empty(),
            size_bounds: size_bucket_bounds(),
        }
    }
}

impl StatsCollector {
    fn timestamp(&mut self, ts: i64) {
        self.stats.min_timestamp = self.stats.min_timestamp.min(ts);
        self.stats.max_timestamp = self.stats.max_timestamp.max(ts);
    }

    fn deletion_time(&mut self, ldt: i32) {
        self.stats.min_local_deletion_time = self.stats.min_local_deletion_time.min(ldt);
        self.stats.max_local_deletion_time = self.stats.max_local_deletion_time.max(ldt);
        if ldt != NO_DELETION_TIME {
            self.stats.drop_times.add(ldt);
        }
    }

    fn ttl(&mut self, ttl: i32) {
        self.stats.min_ttl = self.stats.min_ttl.min(ttl);
        self.stats.max_ttl = self.stats.max_ttl.max(ttl);
    }

    fn deletion(&mut self, d: &DeletionTime) {
        if !d.is_live() {
            self.stats.tombstone_count += 1;
            self.timestamp(d.marked_for_delete_at);
            self.deletion_time(d.local_deletion_time);
        }
    }

    fn row(&mut self, row: &Row) {
        if let Some(l) = &row.liveness {
            self.timestamp(l.timestamp);
            self.ttl(l.ttl);
            self.deletion_time(l.local_expiration_time);
            if l.ttl > 0 {
                self.stats.expiring_count += 1;
            }
        }
        if let Some(d) = &row.deletion {
            self.deletion(d);
        }
        for d in row.complex_deletions.values() {
            self.deletion(d);
        }
        for cell in row.cells.values() {
            self.stats.cell_count += 1;
            self.timestamp(cell.timestamp);
            self.ttl(cell.ttl);
            self.deletion_time(cell.local_deletion_time);
            if cell.is_tombstone() {
                self.stats.tombstone_count += 1;
            } else if cell.is_expiring() {
                self.stats.expiring_count += 1;
            }
        }
    }

    fn clustering(&mut self, k: &ClusteringKey) {
        if self.stats.min_clustering.as_ref().is_none_or(|m| k < m) {
            self.stats.min_clustering = Some(k.clone());
        }
        if self.stats.max_clustering.as_ref().is_none_or(|m| k > m) {
            self.stats.max_clustering = Some(k.clone());
        }
    }

    /// Records one partition whose stored entry takes `entry_len` bytes.
    pub fn add(&mut self, key: &PartitionKey, p: &Partition, entry_len: u64) {
        let s = &mut self.stats;
        s.partition_count += 1;
        s.row_count += p.rows.len() as u64;
        if s.first_key.is_none() {
            s.first_key = Some(key.clone());
        }
        s.last_key = Some(key.clone());
        s.partition_sizes.add(&self.size_bounds, entry_len);
        self.deletion(&p.deletion);
        if !p.deletion.is_live() {
            *s_count(&mut self.stats.partition_deletions) += 1;
        }
        if let Some(r) = &p.static_row {
            *s_count(&mut self.stats.static_rows) += 1;
            self.row(r);
        }
        for r in p.rows.values() {
            self.row(r);
        }
        if let (Some((first, _)), Some((last, _))) =
            (p.rows.first_key_value(), p.rows.last_key_value())
        {
            self.clustering(first);
            self.clustering(last);
        }
        for rt in &p.range_tombstones {
            self.deletion(&rt.deletion);
            self.clustering(&rt.slice.start);
            self.clustering(&rt.slice.end);
        }
    }

    /// Starts a partition written piece by piece ([`StatsCollector::add`]'s
    /// work, spread over `stream_*` calls and [`StatsCollector::end_partition`]).
    pub fn begin_partition(
        &mut self,
        key: &PartitionKey,
        deletion: &DeletionTime,
        static_row: Option<&Row>,
    ) {
        let s = &mut self.stats;
        s.partition_count += 1;
        if s.first_key.is_none() {
            s.first_key = Some(key.clone());
        }
        s.last_key = Some(key.clone());
        self.deletion(deletion);
        if !deletion.is_live() {
            *s_count(&mut self.stats.partition_deletions) += 1;
        }
        if let Some(r) = static_row {
            *s_count(&mut self.stats.static_rows) += 1;
            self.row(r);
        }
    }

    /// A row of a partition written piece by piece.
    pub fn stream_row(&mut self, key: &ClusteringKey, row: &Row) {
        self.stats.row_count += 1;
        self.row(row);
        self.clustering(key);
    }

    /// A range tombstone marker of a partition written piece by piece:
    /// each deletion a marker opens counts as one tombstone.
    pub fn stream_marker(&mut self, bound: &ClusteringKey, deletion: &DeletionTime) {
        self.deletion(deletion);
        self.clustering(bound);
    }

    /// Ends a partition written piece by piece, of `entry_len` bytes.
    pub fn end_partition(&mut self, entry_len: u64) {
        self.stats.partition_sizes.add(&self.size_bounds, entry_len);
    }

    pub fn finish(mut self, uncompressed_len: u64, compressed_len: u64) -> SstableStats {
        let s = &mut self.stats;
        s.uncompressed_len = uncompressed_len;
        s.compressed_len = compressed_len;
        if s.min_timestamp > s.max_timestamp {
            (s.min_timestamp, s.max_timestamp) = (i64::MIN, i64::MAX);
        }
        if s.min_local_deletion_time > s.max_local_deletion_time {
            s.min_local_deletion_time = NO_DELETION_TIME;
            s.max_local_deletion_time = NO_DELETION_TIME;
        }
        if s.min_ttl > s.max_ttl {
            (s.min_ttl, s.max_ttl) = (0, 0);
        }
        self.stats
    }
}

fn put_opt_key(out: &mut Vec<u8>, k: &Option<PartitionKey>) {
    match k {
        None => out.push(0),
        Some(k) => {
            out.push(1);
            put_key(out, k.token, &k.key);
        }
    }
}

fn get_opt_key(r: &mut Reader) -> Result<Option<PartitionKey>, &'static str> {
    match r.u8().map_err(|_| "truncated statistics")? {
        0 => Ok(None),
        1 => {
            let (token, key) = get_key(r).map_err(|_| "truncated statistics")?;
            Ok(Some(PartitionKey {
                token,
                key: Bytes::copy_from_slice(key),
            }))
        }
        _ => Err("bad key flag in statistics"),
    }
}

fn put_opt_clustering(out: &mut Vec<u8>, k: &Option<ClusteringKey>) {
    match k {
        None => out.push(0),
        Some(k) => {
            out.push(1);
            out.push(k.weight as u8);
            put_varint(out, k.values.len() as u64);
            for v in &k.values {
                put_varint(out, v.len() as u64);
                out.extend_from_slice(v);
            }
        }
    }
}

fn get_opt_clustering(
    r: &mut Reader,
    cmp: &Arc<ClusteringComparator>,
) -> Result<Option<ClusteringKey>, &'static str> {
    let bad = |_| "truncated statistics";
    match r.u8().map_err(bad)? {
        0 => return Ok(None),
        1 => {}
        _ => return Err("bad clustering flag in statistics"),
    }
    let weight = r.u8().map_err(bad)? as i8;
    let n = r.varint().map_err(bad)?;
    if n > MAX_CLUSTERING_COMPONENTS as u64 {
        return Err("too many clustering components in statistics");
    }
    let mut values = Vec::with_capacity(n as usize);
    for _ in 0..n {
        values.push(r.bytes().map_err(bad)?);
    }
    Ok(Some(match weight {
        0 => ClusteringKey::row(values, cmp),
        -1 => ClusteringKey::before(values, cmp),
        1 => ClusteringKey::after(values, cmp),
        _ => return Err("bad clustering weight in statistics"),
    }))
}

impl SstableStats {
    /// Whether a read of `slices` may find anything here for a partition:
    /// false only when the file has no partition deletion and no static
    /// row (both known, format 2) and no row or range tombstone bound of
    /// it falls inside a slice. Then the read skips it unopened (Cassandra
    /// does the same with its min/max clustering values).
    pub fn may_hold(&self, slices: &[crate::clustering::Slice]) -> bool {
        if self.partition_deletions != Some(0) || self.static_rows != Some(0) {
            return true;
        }
        let (Some(min), Some(max)) = (&self.min_clustering, &self.max_clustering) else {
            return false;
        };
        slices.iter().any(|s| s.start <= *max && *min <= s.end)
    }
}

/// The count behind an optional statistic (a writer always knows it).
fn s_count(c: &mut Option<u64>) -> &mut u64 {
    c.get_or_insert(0)
}

/// The stats section's bytes (see docs/format/sstable.md).
pub fn encode_stats(s: &SstableStats) -> Vec<u8> {
    let mut out = Vec::new();
    for v in [
        s.partition_count,
        s.row_count,
        s.cell_count,
        s.tombstone_count,
        s.expiring_count,
    ] {
        out.extend_from_slice(&v.to_be_bytes());
    }
    out.extend_from_slice(&s.min_timestamp.to_be_bytes());
    out.extend_from_slice(&s.max_timestamp.to_be_bytes());
    for v in [
        s.min_local_deletion_time,
        s.max_local_deletion_time,
        s.min_ttl,
        s.max_ttl,
    ] {
        out.extend_from_slice(&v.to_be_bytes());
    }
    out.extend_from_slice(&s.uncompressed_len.to_be_bytes());
    out.extend_from_slice(&s.compressed_len.to_be_bytes());
    put_opt_key(&mut out, &s.first_key);
    put_opt_key(&mut out, &s.last_key);
    put_opt_clustering(&mut out, &s.min_clustering);
    put_opt_clustering(&mut out, &s.max_clustering);
    s.partition_sizes.encode(&mut out);
    s.drop_times.encode(&mut out);
    // Format 2: written whenever known (always, by this writer).
    if let (Some(d), Some(st)) = (s.partition_deletions, s.static_rows) {
        out.extend_from_slice(&d.to_be_bytes());
        out.extend_from_slice(&st.to_be_bytes());
    }
    out
}

/// Parses the stats section; every byte must be used.
pub fn decode_stats(
    bytes: &[u8],
    cmp: &Arc<ClusteringComparator>,
) -> Result<SstableStats, &'static str> {
    let mut r = Reader::new(bytes);
    let bad = |_| "truncated statistics";
    let mut counts = [0u64; 5];
    for c in &mut counts {
        *c = r.i64().map_err(bad)? as u64;
    }
    let min_timestamp = r.i64().map_err(bad)?;
    let max_timestamp = r.i64().map_err(bad)?;
    let mut times = [0i32; 4];
    for t in &mut times {
        *t = r.i32().map_err(bad)?;
    }
    let uncompressed_len = r.i64().map_err(bad)? as u64;
    let compressed_len = r.i64().map_err(bad)? as u64;
    let stats = SstableStats {
        partition_count: counts[0],
        row_count: counts[1],
        cell_count: counts[2],
        tombstone_count: counts[3],
        expiring_count: counts[4],
        min_timestamp,
        max_timestamp,
        min_local_deletion_time: times[0],
        max_local_deletion_time: times[1],
        min_ttl: times[2],
        max_ttl: times[3],
        uncompressed_len,
        compressed_len,
        first_key: get_opt_key(&mut r)?,
        last_key: get_opt_key(&mut r)?,
        min_clustering: get_opt_clustering(&mut r, cmp)?,
        max_clustering: get_opt_clustering(&mut r, cmp)?,
        partition_sizes: SizeHistogram::decode(&mut r)?,
        drop_times: DropTimeHistogram::decode(&mut r)?,
        partition_deletions: None,
        static_rows: None,
    };
    let mut stats = stats;
    if !r.is_empty() {
        stats.partition_deletions = Some(r.i64().map_err(bad)? as u64);
        stats.static_rows = Some(r.i64().map_err(bad)? as u64);
    }
    if !r.is_empty() {
        return Err("trailing bytes after statistics");
    }
    Ok(stats)
}
