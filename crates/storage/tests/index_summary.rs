//! Partition summaries fit the node's `index_summary_capacity` (issue 3,
//! `min_index_interval` / `max_index_interval`): over budget they are
//! downsampled, never past the table's `max_index_interval`, and with room
//! again they go back to full; every key is found at every step.

mod common;

use bytes::Bytes;
use varve_storage::sstable::SstableParams;
use varve_storage::*;

const TABLE: TableId = 4;
const PARTITIONS: usize = 3_000;

/// A table whose summary holds one entry per 4 partitions and may thin
/// out to one per 32 (step 8).
fn open() -> Storage {
    let mut desc = common::table(TABLE, ClusteringComparator::new(Vec::new()));
    desc.params = SstableParams {
        min_index_interval: 4,
        max_index_interval: 32,
        ..SstableParams::default()
    };
    Storage::open(common::options(Clock::system()), vec![desc]).expect("open")
}

fn key(i: usize) -> PartitionKey {
    PartitionKey::new(Bytes::from(format!("key-{i}")))
}

fn write_and_flush(s: &Storage, range: std::ops::Range<usize>) {
    let cmp = s.comparator(TABLE).expect("table");
    for i in range {
        let mut p = Partition::default();
        let row = Row {
            liveness: Some(LivenessInfo::new(1, 0, 0)),
            cells: [((0, None), Cell::live(1, Bytes::from(i.to_string())))].into(),
            ..Row::default()
        };
        p.rows.insert(ClusteringKey::row(Vec::new(), &cmp), row);
        s.apply(TABLE, &key(i), p).expect("apply");
    }
    s.flush(TABLE).expect("flush");
}

/// Reads every 7th key from `first` (a different set per call: the
/// sstables' key caches would answer keys read before without the index).
fn all_keys_found(s: &Storage, first: usize) {
    let all = [Slice::all(&s.comparator(TABLE).expect("table"))];
    for i in (first..PARTITIONS).step_by(7) {
        let got = s.read_partition(TABLE, &key(i), &all).expect("read");
        let p = got.unwrap_or_else(|| panic!("key {i} lost"));
        let cell = p.rows.values().next().and_then(|r| r.cells.get(&(0, None)));
        assert_eq!(
            cell.map(|c| c.value.clone()),
            Some(Bytes::from(i.to_string()))
        );
    }
    let absent = PartitionKey::new(Bytes::from_static(b"absent"));
    assert_eq!(s.read_partition(TABLE, &absent, &all).expect("read"), None);
}

#[test]
fn summaries_shrink_to_the_budget_and_grow_back() {
    let s = open();
    write_and_flush(&s, 0..PARTITIONS / 2);
    write_and_flush(&s, PARTITIONS / 2..PARTITIONS);
    s.rebalance_index_summaries();
    let full = s.index_summary_usage();
    assert_eq!(full.sstables, 2);
    assert_eq!(full.memory_bytes, full.full_bytes, "room for everything");
    all_keys_found(&s, 0);

    // A third of the memory: step 3, within a few entries' rounding.
    s.set_index_summary_capacity(full.full_bytes / 3);
    s.rebalance_index_summaries();
    let third = s.index_summary_usage();
    assert!(
        third.memory_bytes <= full.full_bytes / 3 + 2 * 96,
        "{third:?}"
    );
    assert!(third.memory_bytes >= full.full_bytes / 4, "{third:?}");
    all_keys_found(&s, 1);

    // No room at all: max_index_interval / min_index_interval = step 8,
    // and no further.
    s.set_index_summary_capacity(0);
    s.rebalance_index_summaries();
    let tight = s.index_summary_usage();
    let per_sstable_blocks = (PARTITIONS / 2).div_ceil(4) as u64;
    let kept_per_sstable = per_sstable_blocks.div_ceil(8);
    let entry = full.full_bytes / (2 * per_sstable_blocks);
    assert_eq!(
        tight.memory_bytes,
        2 * kept_per_sstable * entry,
        "{tight:?}"
    );
    all_keys_found(&s, 2);

    // Room again: back to full.
    s.set_index_summary_capacity(u64::MAX);
    s.rebalance_index_summaries();
    assert_eq!(s.index_summary_usage(), full);
    all_keys_found(&s, 3);
}
