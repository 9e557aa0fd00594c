//! A throughput measurement, ignored by default: writes and reads a 50 MB
//! sstable of cassandra-stress-like rows (10-byte key, five 34-byte
//! values) on the real file system. Run with
//! `cargo test -p varve-storage sstable_throughput -- --ignored --nocapture`.

use super::test_util::comparator;
use crate::cell::Cell;
use crate::clustering::ClusteringKey;
use crate::engine::PartitionKey;
use crate::fs::{Fs, RealFs};
use crate::partition::Partition;
use crate::row::Row;
use crate::sstable::{Compression, Sstable, SstableParams, SstableWriter};
use bytes::Bytes;
use std::sync::Arc;
use std::time::Instant;

const TARGET_BYTES: u64 = 50 << 20;

fn stress_row(i: u64) -> (PartitionKey, Partition) {
    let cmp = comparator();
    let mut row = Row::default();
    for c in 0..5u32 {
        let mut v = vec![0u8; 34];
        for (j, b) in v.iter_mut().enumerate() {
            *b = (i
                .wrapping_mul(2654435761)
                .wrapping_add(j as u64 * 31 + c as u64)
                % 251) as u8;
        }
        row.cells.insert(
            (c, None),
            Cell::live(1_700_000_000_000_000 + i as i64, Bytes::from(v)),
        );
    }
    let mut p = Partition::default();
    p.rows.insert(ClusteringKey::row(vec![], &cmp), row);
    (PartitionKey::new(Bytes::from(format!("{i:010}"))), p)
}

#[test]
#[ignore]
fn sstable_throughput() {
    let dir = std::env::temp_dir().join(format!("varve-sst-bench-{}", std::process::id()));
    let fs: Arc<dyn Fs> = Arc::new(RealFs::default());
    fs.create_dir_all(&dir).unwrap();
    for compression in [Compression::Lz4, Compression::None] {
        let path = dir.join(format!("{compression:?}.db"));
        let mut parts: Vec<_> = (0..TARGET_BYTES / 230).map(stress_row).collect();
        parts.sort_by(|a, b| a.0.cmp(&b.0));
        let start = Instant::now();
        let params = SstableParams {
            compression,
            ..SstableParams::default()
        };
        let mut w = SstableWriter::create(fs.clone(), &path, params, comparator()).unwrap();
        for (k, p) in &parts {
            w.add(k, p).unwrap();
        }
        let stats = w.finish().unwrap();
        let write_s = start.elapsed().as_secs_f64();
        let mb = stats.uncompressed_len as f64 / (1 << 20) as f64;
        let start = Instant::now();
        let table = Sstable::open(fs.clone(), &path, comparator(), 1.0).unwrap();
        let open_s = start.elapsed().as_secs_f64();
        let start = Instant::now();
        let mut n = 0;
        for item in table.iter().unwrap() {
            item.unwrap();
            n += 1;
        }
        let scan_s = start.elapsed().as_secs_f64();
        assert_eq!(n, parts.len());
        let start = Instant::now();
        let reads = 20_000;
        for (k, _) in parts.iter().step_by(parts.len() / reads).take(reads) {
            assert!(table.read_partition(k).unwrap().is_some());
        }
        let point_s = start.elapsed().as_secs_f64();
        println!(
            "{compression:?}: {} partitions, {mb:.1} MB stream, {:.1} MB on disk; write {:.1} MB/s, open {:.1} ms, \
             scan {:.1} MB/s, point reads {:.0}/s",
            parts.len(),
            table.size_on_disk() as f64 / (1 << 20) as f64,
            mb / write_s,
            open_s * 1000.0,
            mb / scan_s,
            reads as f64 / point_s,
        );
        fs.remove(&path).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
