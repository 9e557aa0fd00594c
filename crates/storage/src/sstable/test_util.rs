//! Shared helpers of the sstable tests: random keyed partitions of every
//! shape (the partition generator of [`crate::encoding::tests_gen`] at its
//! ordinary reach) and a writer shortcut.

pub use crate::encoding::tests_gen::comparator;
use crate::encoding::tests_gen::{arb_partition, Reach};
use crate::encoding::v3;
use crate::engine::PartitionKey;
use crate::partition::Partition;
use crate::sstable::fs_mem::MemFs;
use crate::sstable::{Sstable, SstableParams, SstableStats, SstableWriter};
use bytes::Bytes;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use std::path::Path;
use std::sync::Arc;

/// Random keyed partitions (`count` of them, each with fewer than
/// `max_rows` rows), sorted by key, keys distinct. Their range tombstones
/// are normalized (disjoint, the strongest deletion between each two
/// bounds), as an sstable of format 3 gives them back; the encoding tests
/// cover the normalization itself.
pub fn arb_partitions_sized(
    count: std::ops::Range<usize>,
    max_rows: usize,
) -> impl Strategy<Value = Vec<(PartitionKey, Partition)>> {
    proptest::collection::btree_map(
        proptest::collection::vec(any::<u8>(), 1..12)
            .prop_map(|k| PartitionKey::new(Bytes::from(k))),
        arb_partition(Reach::Ordinary, max_rows).prop_map(v3::with_normalized_tombstones),
        count,
    )
    .prop_map(|m| m.into_iter().collect())
}

/// Up to `max` random partitions of up to 30 rows.
pub fn arb_partitions(max: usize) -> impl Strategy<Value = Vec<(PartitionKey, Partition)>> {
    arb_partitions_sized(0..max, 30)
}

/// A deterministic sample (seed fixed by proptest) of `count` small
/// partitions.
pub fn sample_partitions(count: usize) -> Vec<(PartitionKey, Partition)> {
    let mut runner = TestRunner::deterministic();
    arb_partitions_sized(count..count + 1, 4)
        .new_tree(&mut runner)
        .map(|t| t.current())
        .unwrap_or_default()
}

/// Writes `parts` to `path` in `fs` and returns the writer's statistics.
pub fn write(
    fs: &Arc<MemFs>,
    path: &Path,
    params: SstableParams,
    parts: &[(PartitionKey, Partition)],
) -> SstableStats {
    let mut w = SstableWriter::create(fs.clone(), path, params, comparator()).unwrap();
    for (k, p) in parts {
        w.add(k, p).unwrap();
    }
    w.finish().unwrap()
}

pub fn open(fs: &Arc<MemFs>, path: &Path, crc_check_chance: f64) -> crate::Result<Sstable> {
    Sstable::open(fs.clone(), path, comparator(), crc_check_chance)
}
