//! What one partition read cost, for the per-table read histograms
//! (`SSTablesPerReadHistogram` in Cassandra). Storage stays free of any
//! metrics library: a read adds to a caller-owned [`ReadCost`], and the
//! query layer records the totals into its histograms.
//!
//! An sstable counts when its data was read for the key: after the bloom
//! filter said "maybe" and after the max-timestamp check could not rule it
//! out (the sstables Cassandra "iterates"). Memtables never count.

/// What reads touched, summed over every read given the same `ReadCost`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadCost {
    /// SSTables whose data was read.
    pub sstables: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::{Cell, LivenessInfo};
    use crate::clustering::Slice;
    use crate::clustering::{ClusteringComparator, ClusteringKey};
    use crate::commitlog::{CommitLogConfig, SyncMode};
    use crate::compaction::{CommonOptions, CompactionConfig};
    use crate::engine::{PartitionKey, TableId};
    use crate::engine::{Storage, StorageOptions, TableDescriptor};
    use crate::partition::Partition;
    use crate::row::Row;
    use bytes::Bytes;
    use std::sync::Arc;

    const TABLE: TableId = 7;

    fn open() -> Storage {
        let desc = TableDescriptor {
            id: TABLE,
            keyspace: "ks".into(),
            name: "t".into(),
            comparator: ClusteringComparator::new(vec![(varve_types::CqlType::Int, false)]),
            params: Default::default(),
            durable_writes: true,
            gc_grace_seconds: 5,
            compaction: CompactionConfig {
                common: CommonOptions {
                    enabled: false,
                    ..CommonOptions::default()
                },
                ..CompactionConfig::default()
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
            sstable_writes: Default::default(),
            fs: Arc::new(crate::fs_sim::SimFs::new()),
            clock: crate::engine::Clock::system(),
        };
        Storage::open(options, vec![desc]).expect("open")
    }

    fn write(s: &Storage, key: &PartitionKey, ts: i64) {
        let cmp = s.comparator(TABLE).expect("table");
        let mut p = Partition::default();
        let row = Row {
            liveness: Some(LivenessInfo::new(ts, 0, 0)),
            cells: [((0, None), Cell::live(ts, Bytes::from_static(b"v")))].into(),
            ..Row::default()
        };
        p.rows.insert(
            ClusteringKey::row(vec![Bytes::from_static(&[0, 0, 0, 1])], &cmp),
            row,
        );
        s.apply(TABLE, key, p).expect("apply");
    }

    #[test]
    fn counts_sstables_read_not_memtables() {
        let s = open();
        let cmp = s.comparator(TABLE).expect("table");
        let all = [Slice::all(&cmp)];
        let key = PartitionKey::new(Bytes::from_static(b"k"));
        let read = |cost: &mut ReadCost| {
            s.read_live_costed(TABLE, &key, &all, false, 0, 10, cost)
                .expect("read")
        };
        write(&s, &key, 1);
        let mut cost = ReadCost::default();
        assert!(read(&mut cost).is_some());
        assert_eq!(cost.sstables, 0, "memtable only");
        s.flush(TABLE).expect("flush");
        write(&s, &key, 2);
        s.flush(TABLE).expect("flush");
        let mut cost = ReadCost::default();
        assert!(read(&mut cost).is_some());
        assert_eq!(cost.sstables, 2);
        // Sums over reads given the same cost.
        read(&mut cost);
        assert_eq!(cost.sstables, 4);
        // Unknown table: an error, nothing counted.
        let mut cost = ReadCost::default();
        assert!(s
            .read_live_costed(42, &key, &all, false, 0, 10, &mut cost)
            .is_err());
        assert_eq!(cost, ReadCost::default());
    }
}
