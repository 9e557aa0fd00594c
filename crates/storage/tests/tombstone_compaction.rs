//! Single-sstable tombstone compactions wait `tombstone_compaction_interval`
//! after the sstable was written, then run (issue 4). The wait counts from
//! when the sstable was written, by the engine's clock (before this test,
//! every sstable looked "written now", so the interval never passed).

mod common;

use bytes::Bytes;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use varve_storage::compaction::{CommonOptions, CompactionConfig};
use varve_storage::*;

const TABLE: TableId = 12;
const START: i32 = 1_000_000;
const INTERVAL: i64 = 60;

fn open(clock: &Arc<AtomicI32>) -> Storage {
    let mut desc = common::table(TABLE, ClusteringComparator::new(Vec::new()));
    desc.gc_grace_seconds = 0;
    desc.compaction = CompactionConfig {
        common: CommonOptions {
            tombstone_compaction_interval_seconds: INTERVAL,
            ..CommonOptions::default()
        },
        ..CompactionConfig::default()
    };
    let now = clock.clone();
    let options = common::options(Clock::from_fn(move || now.load(Ordering::Relaxed)));
    Storage::open(options, vec![desc]).expect("open")
}

const LIVE: usize = 100;

/// An sstable of LIVE live partitions and 500 partition deletions of keys
/// never written (droppable once gc_grace_seconds, 0, has passed). The live
/// data keeps it from being "fully expired", which is dropped whole at once.
fn flush_tombstones(s: &Storage) {
    let cmp = s.comparator(TABLE).expect("table");
    for i in 0..LIVE {
        let mut p = Partition::default();
        let row = Row {
            liveness: Some(LivenessInfo::new(1, 0, 0)),
            ..Row::default()
        };
        p.rows.insert(ClusteringKey::row(Vec::new(), &cmp), row);
        s.apply(
            TABLE,
            &PartitionKey::new(Bytes::from(format!("live-{i}"))),
            p,
        )
        .expect("apply");
    }
    for i in 0..500 {
        let p = Partition {
            deletion: DeletionTime::new(1, START),
            ..Partition::default()
        };
        s.apply(
            TABLE,
            &PartitionKey::new(Bytes::from(format!("gone-{i}"))),
            p,
        )
        .expect("apply");
    }
    s.flush(TABLE).expect("flush");
}

#[test]
fn a_tombstone_compaction_waits_for_the_interval_then_purges() {
    let clock = Arc::new(AtomicI32::new(START));
    let s = open(&clock);
    flush_tombstones(&s);
    assert_eq!(s.table_generations(TABLE).expect("table").len(), 1);

    // Within the interval: nothing to do, whatever the tombstone ratio.
    let before = START + INTERVAL as i32 - 1;
    clock.store(before, Ordering::Relaxed);
    assert!(!s.compact_once(TABLE, before).expect("compact"));
    assert_eq!(s.table_generations(TABLE).expect("table").len(), 1);

    // Past it: the sstable is compacted alone and its tombstones purged
    // (here or by the background manager, which reads the same clock).
    let after = START + INTERVAL as i32 + 1;
    clock.store(after, Ordering::Relaxed);
    let first = s.table_generations(TABLE).expect("table");
    let _ = s.compact_once(TABLE, after).expect("compact");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while s.table_generations(TABLE).expect("table") == first {
        assert!(std::time::Instant::now() < deadline, "never compacted");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let stats = s.table_stats(TABLE).expect("stats");
    assert_eq!(
        (stats.live_sstables, stats.sstable_partitions),
        (1, LIVE as u64)
    );
}
