//! What the storage integration tests share: a table descriptor and engine
//! options on the simulated file system, varied only where a test needs.

#![allow(dead_code)] // each test binary uses its own subset

use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use varve_storage::commitlog::{CommitLogConfig, SyncMode};
use varve_storage::compaction::{CommonOptions, CompactionConfig};
use varve_storage::fs_sim::SimFs;
use varve_storage::sstable::SstableParams;
use varve_storage::*;

/// Table `id` in keyspace `ks`: default sstable parameters, gc_grace
/// 10 days, and SizeTiered compaction (background compaction off unless
/// the test turns it on).
pub fn table(id: TableId, comparator: Arc<ClusteringComparator>) -> TableDescriptor {
    TableDescriptor {
        id,
        keyspace: "ks".into(),
        name: "t".into(),
        comparator,
        params: SstableParams::default(),
        durable_writes: true,
        gc_grace_seconds: 864_000,
        compaction: CompactionConfig {
            common: CommonOptions {
                enabled: false,
                ..CommonOptions::default()
            },
            ..CompactionConfig::default()
        },
    }
}

/// A node on a fresh simulated file system: batch commitlog, memtables
/// and commitlog large enough never to flush by themselves, one
/// compactor, no compaction throughput limit.
pub fn options(clock: Clock) -> StorageOptions {
    options_on(Arc::new(SimFs::new()), clock)
}

/// [`options`] on a given simulated file system, for tests that keep a
/// handle on it (to fill the disk or cut the power).
pub fn options_on(fs: Arc<SimFs>, clock: Clock) -> StorageOptions {
    StorageOptions {
        data_dir: PathBuf::from("/data"),
        commitlog_dir: PathBuf::from("/commitlog"),
        commitlog: CommitLogConfig {
            sync: SyncMode::Batch,
            ..CommitLogConfig::default()
        },
        memtable_space_bytes: 1 << 30,
        commitlog_total_space_bytes: 1 << 30,
        compaction_throughput_mib_per_sec: 0,
        concurrent_compactors: 1,
        sstable_writes: Default::default(),
        fs,
        clock,
    }
}

/// A clock that reads `now`, which the test moves by hand.
pub fn manual_clock(now: &Arc<AtomicI32>) -> Clock {
    let now = now.clone();
    Clock::from_fn(move || now.load(Ordering::Relaxed))
}

/// The clustering comparator of one `int` clustering column.
pub fn int_comparator() -> Arc<ClusteringComparator> {
    ClusteringComparator::new(vec![(varve_types::CqlType::Int, false)])
}

/// A partition of one row, clustering `i`, whose first cell holds `i`
/// (written at timestamp 1), under [`int_comparator`].
pub fn int_row(i: u32) -> Partition {
    let mut p = Partition::default();
    let mut r = Row::default();
    r.cells.insert(
        (0, None),
        Cell::live(1, bytes::Bytes::from(i.to_be_bytes().to_vec())),
    );
    p.rows.insert(
        ClusteringKey::row(
            vec![bytes::Bytes::copy_from_slice(&(i as i32).to_be_bytes())],
            &int_comparator(),
        ),
        r,
    );
    p
}
