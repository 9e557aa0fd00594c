//! Shared helpers of the sstable tests: random partitions of every shape
//! (rows, static rows, cells live, expiring and deleted, collection
//! elements, the four kinds of deletion) and a writer shortcut.

use crate::cell::{Cell, DeletionTime, LivenessInfo};
use crate::clustering::{ClusteringComparator, ClusteringKey, Slice};
use crate::engine::PartitionKey;
use crate::partition::{Partition, RangeTombstone};
use crate::row::Row;
use crate::sstable::fs_mem::MemFs;
use crate::sstable::{Sstable, SstableParams, SstableStats, SstableWriter};
use bytes::Bytes;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use std::path::Path;
use std::sync::Arc;
use varve_types::CqlType;

pub fn comparator() -> Arc<ClusteringComparator> {
    ClusteringComparator::new(vec![(CqlType::Int, false), (CqlType::Text, true)])
}

fn arb_deletion() -> impl Strategy<Value = DeletionTime> {
    (-1000i64..1000, 0i32..100_000).prop_map(|(ts, ldt)| DeletionTime::new(ts, ldt))
}

fn arb_cell() -> impl Strategy<Value = Cell> {
    let value = proptest::collection::vec(any::<u8>(), 0..40).prop_map(Bytes::from);
    prop_oneof![
        (-1000i64..1000, value.clone()).prop_map(|(ts, v)| Cell::live(ts, v)),
        (-1000i64..1000, 1i32..10_000, 0i32..100_000, value)
            .prop_map(|(ts, ttl, now, v)| Cell::expiring(ts, ttl, now, v)),
        (-1000i64..1000, 0i32..100_000).prop_map(|(ts, now)| Cell::tombstone(ts, now)),
    ]
}

fn arb_row() -> impl Strategy<Value = Row> {
    let path =
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..6).prop_map(Bytes::from));
    (
        proptest::option::of((-1000i64..1000, 0i32..100, 0i32..100_000)),
        proptest::option::of(arb_deletion()),
        proptest::collection::btree_map((0u32..8, path), arb_cell(), 0..6),
        proptest::collection::btree_map(0u32..8, arb_deletion(), 0..2),
    )
        .prop_map(|(liveness, deletion, cells, complex_deletions)| Row {
            liveness: liveness.map(|(ts, ttl, now)| LivenessInfo::new(ts, ttl, now)),
            deletion,
            cells: cells.into_iter().collect(),
            complex_deletions,
        })
}

fn clustering_values() -> impl Strategy<Value = Vec<Bytes>> {
    (any::<i32>(), "[a-z]{0,4}")
        .prop_map(|(i, s)| vec![Bytes::copy_from_slice(&i.to_be_bytes()), Bytes::from(s)])
}

fn arb_range_tombstone() -> impl Strategy<Value = (Vec<Bytes>, bool, Vec<Bytes>, bool, DeletionTime)>
{
    (
        0usize..3,
        clustering_values(),
        any::<bool>(),
        0usize..3,
        clustering_values(),
        any::<bool>(),
        arb_deletion(),
    )
        .prop_map(|(n1, mut a, inc_a, n2, mut b, inc_b, d)| {
            a.truncate(n1);
            b.truncate(n2);
            (a, inc_a, b, inc_b, d)
        })
}

/// A random partition, from empty to `max_rows - 1` rows.
pub fn arb_partition(max_rows: usize) -> impl Strategy<Value = Partition> {
    (
        proptest::option::of(arb_deletion()),
        proptest::option::of(arb_row()),
        proptest::collection::vec((clustering_values(), arb_row()), 0..max_rows),
        proptest::collection::vec(arb_range_tombstone(), 0..3),
    )
        .prop_map(|(deletion, static_row, rows, rts)| {
            let cmp = comparator();
            let mut p = Partition {
                deletion: deletion.unwrap_or(DeletionTime::LIVE),
                static_row,
                ..Partition::default()
            };
            for (values, row) in rows {
                p.rows.insert(ClusteringKey::row(values, &cmp), row);
            }
            for (a, inc_a, b, inc_b, deletion) in rts {
                let start = if inc_a {
                    ClusteringKey::before(a, &cmp)
                } else {
                    ClusteringKey::after(a, &cmp)
                };
                let end = if inc_b {
                    ClusteringKey::after(b, &cmp)
                } else {
                    ClusteringKey::before(b, &cmp)
                };
                p.range_tombstones.push(RangeTombstone {
                    slice: Slice { start, end },
                    deletion,
                });
            }
            p
        })
}

/// Random keyed partitions (`count` of them, each with fewer than
/// `max_rows` rows), sorted by key, keys distinct.
pub fn arb_partitions_sized(
    count: std::ops::Range<usize>,
    max_rows: usize,
) -> impl Strategy<Value = Vec<(PartitionKey, Partition)>> {
    proptest::collection::btree_map(
        proptest::collection::vec(any::<u8>(), 1..12)
            .prop_map(|k| PartitionKey::new(Bytes::from(k))),
        arb_partition(max_rows),
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
