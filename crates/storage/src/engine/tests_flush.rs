//! Engine-level tests of what a memtable flush tells the rest of the
//! engine: the compaction strategy hears of every flushed sstable
//! ([`crate::compaction::Strategy::on_flush`]), which UCS sizes its levels from.

use crate::cell::Cell;
use crate::clustering::ClusteringComparator;
use crate::commitlog::{CommitLogConfig, SyncMode};
use crate::compaction::{CommonOptions, CompactionConfig, StrategyOptions, UnifiedOptions};
use crate::engine::{Clock, PartitionKey, Storage, StorageOptions, TableDescriptor, TableId};
use crate::partition::Partition;
use crate::row::Row;
use bytes::Bytes;
use std::sync::Arc;

const TABLE: TableId = 5;
const MIB: u64 = 1 << 20;

/// A node on the simulated file system with one UCS table whose
/// background compaction is off (the sstables stay as flushed).
fn open_ucs() -> Storage {
    let desc = TableDescriptor {
        id: TABLE,
        keyspace: "ks".into(),
        name: "t".into(),
        comparator: ClusteringComparator::new(Vec::new()),
        params: Default::default(),
        durable_writes: true,
        gc_grace_seconds: 864_000,
        compaction: CompactionConfig {
            strategy: StrategyOptions::Unified(UnifiedOptions::default()),
            common: CommonOptions {
                enabled: false,
                ..CommonOptions::default()
            },
        },
    };
    let options = StorageOptions {
        data_dir: "/data".into(),
        commitlog_dir: "/commitlog".into(),
        commitlog: CommitLogConfig {
            sync: SyncMode::Batch,
            ..CommitLogConfig::default()
        },
        memtable_space_bytes: 1 << 30,
        commitlog_total_space_bytes: 1 << 30,
        compaction_throughput_mib_per_sec: 0,
        concurrent_compactors: 1,
        fs: Arc::new(crate::fs_sim::SimFs::new()),
        clock: Clock::system(),
    };
    Storage::open(options, vec![desc]).expect("open")
}

/// Writes `partitions` partitions of one `value_bytes` cell of
/// incompressible bytes (so the sstable is about as large as the data).
fn write(s: &Storage, first: u32, partitions: u32, value_bytes: usize) {
    let mut x = u64::from(first) | 1;
    for k in first..first + partitions {
        let value: Vec<u8> = (0..value_bytes)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 56) as u8
            })
            .collect();
        let mut row = Row::default();
        row.cells
            .insert((0, None), Cell::live(1, Bytes::from(value)));
        let p = Partition {
            static_row: Some(row),
            ..Partition::default()
        };
        let key = PartitionKey::new(Bytes::from(format!("k{k}")));
        s.apply(TABLE, &key, p).expect("apply");
    }
}

fn learned(s: &Storage) -> Option<u64> {
    let table = s.table(TABLE).expect("table");
    let strategy = table.strategy.lock();
    strategy.learned_flush_size_bytes()
}

fn space_used(s: &Storage) -> u64 {
    s.table_stats(TABLE).expect("stats").space_used_bytes
}

#[test]
fn a_flush_tells_the_strategy_its_size() {
    let s = open_ucs();
    assert_eq!(learned(&s), Some(0), "nothing flushed, nothing learned");

    // A small flush: UCS rounds it up to one whole MiB.
    write(&s, 0, 10, 100);
    s.flush(TABLE).expect("flush");
    let small = space_used(&s);
    assert!(small > 0 && small < MIB, "{small}");
    assert_eq!(learned(&s), Some(MIB));

    // A flush over 50% larger replaces what was learned, rounded up.
    write(&s, 100, 40, 64 << 10);
    s.flush(TABLE).expect("flush");
    let large = space_used(&s) - small;
    assert!(large > 2 * MIB, "{large}");
    assert_eq!(learned(&s), Some(large.div_ceil(MIB) * MIB));
}
