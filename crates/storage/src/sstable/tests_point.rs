//! Reads through the point index (format 4) against the partition they
//! read: random partitions with rows, range tombstones, static rows and
//! partition deletions, written with small point blocks (and the row index
//! beside it for the longer entries), read with random slices through
//! [`Sstable::open_partition_for`] and through the index whole. What a
//! read returns must be what the partition holds within the slices.

use super::test_util::{arb_partitions_sized, comparator, open};
use crate::clustering::{ClusteringKey, Slice};
use crate::engine::PartitionKey;
use crate::partition::Partition;
use crate::row::Row;
use crate::sstable::fs_mem::MemFs;
use crate::sstable::point_index::PointIndexParams;
use crate::sstable::{Compression, Sstable, SstableParams, SstableWriter, StoredPartition};
use bytes::Bytes;
use proptest::prelude::*;
use std::path::Path;

/// Point blocks of this many bytes in these tests, so that partitions of a
/// few rows have several.
const TEST_POINT_BLOCK_BYTES: u64 = 64;

fn write_with(parts: &[(PartitionKey, Partition)], point: PointIndexParams) -> Sstable {
    let fs = MemFs::new();
    let path = Path::new("t/point.db");
    let params = SstableParams {
        chunk_length: 256,
        compression: Compression::Lz4,
        min_index_interval: 2,
        ..SstableParams::default()
    };
    let mut w = SstableWriter::create(fs.clone(), path, params, comparator()).unwrap();
    w.set_row_index_block_bytes(96);
    w.set_point_index(point);
    for (k, p) in parts {
        w.add(k, p).unwrap();
    }
    w.finish().unwrap();
    let table = open(&fs, path, 1.0).unwrap();
    // Every entry goes through its index, whatever its length.
    table.set_whole_entry_max_bytes(0);
    table
}

/// What `slices` of `p` read through `table` give, by the read path's
/// entry point for slices.
fn read_for(table: &Sstable, key: &PartitionKey, slices: &[Slice]) -> Partition {
    match table.open_partition_for(key, slices).unwrap().unwrap() {
        StoredPartition::Whole(p) => p,
        StoredPartition::Indexed(ip) => ip.read_stored(slices).unwrap(),
    }
}

/// `got` holds what `want` holds within `slices`: the same rows, deletion
/// and static row, and the same rows survive their deletions (a range
/// tombstone read through an index ends at a block edge).
fn same_within(got: &Partition, want: &Partition, slices: &[Slice]) -> Result<(), TestCaseError> {
    let (got, want) = (got.slice(slices), want.slice(slices));
    prop_assert_eq!(&got.rows, &want.rows);
    prop_assert_eq!(got.deletion, want.deletion);
    prop_assert_eq!(&got.static_row, &want.static_row);
    for now in [0, 1_000_000, i32::MAX - 1] {
        prop_assert_eq!(got.resolve(now).0, want.resolve(now).0);
    }
    Ok(())
}

/// Sorted, disjoint slices from pairs of clustering values (0..40).
fn slices_of(bounds: &[(u8, u8, bool, bool)]) -> Vec<Slice> {
    let cmp = comparator();
    let value = |v: u8| vec![Bytes::copy_from_slice(&(v as i32).to_be_bytes())];
    let mut out: Vec<Slice> = Vec::new();
    let mut sorted: Vec<_> = bounds.to_vec();
    sorted.sort();
    for (a, b, open_start, open_end) in sorted {
        let (a, b) = (a.min(b), a.max(b));
        let start = if open_start {
            ClusteringKey::after(value(a), &cmp)
        } else {
            ClusteringKey::before(value(a), &cmp)
        };
        let end = if open_end {
            ClusteringKey::before(value(b), &cmp)
        } else {
            ClusteringKey::after(value(b), &cmp)
        };
        let s = Slice { start, end };
        if s.is_empty() || out.last().is_some_and(|l| l.end > s.start) {
            continue;
        }
        out.push(s);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn slices_read_through_a_point_index_hold_what_the_partition_holds(
        parts in arb_partitions_sized(1..6, 40),
        bounds in proptest::collection::vec((0u8..40, 0u8..40, any::<bool>(), any::<bool>()), 0..4),
        entry_max in prop_oneof![Just(u64::MAX), 200u64..2_000],
    ) {
        let point = PointIndexParams { block_bytes: TEST_POINT_BLOCK_BYTES, entry_max_bytes: entry_max };
        let table = write_with(&parts, point);
        let several = slices_of(&bounds);
        let mut slices = vec![Slice::all(&comparator())];
        slices.extend(several.iter().cloned());
        for (k, p) in &parts {
            for one in &slices {
                let s = std::slice::from_ref(one);
                same_within(&read_for(&table, k, s), p, s)?;
            }
            same_within(&read_for(&table, k, &several), p, &several)?;
            // Each row alone, as a point read asks for it.
            for row in p.rows.keys() {
                let s = [Slice {
                    start: ClusteringKey::before(row.values.clone(), &comparator()),
                    end: ClusteringKey::after(row.values.clone(), &comparator()),
                }];
                same_within(&read_for(&table, k, &s), p, &s)?;
            }
        }
    }
}

#[test]
fn the_largest_partitions_keep_the_row_index_and_mid_size_ones_get_a_point_index() {
    let cmp = comparator();
    let part = |rows: i32| {
        let mut p = Partition::default();
        for i in 0..rows {
            let mut row = Row::default();
            row.cells.insert(
                (1, None),
                crate::cell::Cell::live(1, Bytes::from(vec![7u8; 40])),
            );
            let values = vec![Bytes::copy_from_slice(&i.to_be_bytes()), Bytes::new()];
            p.rows.insert(ClusteringKey::row(values, &cmp), row);
        }
        p
    };
    let parts = vec![
        (PartitionKey::new(Bytes::from_static(b"a")), part(1)),
        (PartitionKey::new(Bytes::from_static(b"b")), part(10)),
        (PartitionKey::new(Bytes::from_static(b"c")), part(100)),
    ];
    let mut parts = parts;
    parts.sort_by(|a, b| a.0.cmp(&b.0));
    let point = PointIndexParams {
        block_bytes: TEST_POINT_BLOCK_BYTES,
        entry_max_bytes: 2_000,
    };
    let table = write_with(&parts, point);
    let mut kinds = Vec::new();
    for (k, p) in &parts {
        let kind = match table.open_partition(k).unwrap().unwrap() {
            StoredPartition::Whole(got) => {
                assert_eq!(&got, p);
                "none"
            }
            StoredPartition::Indexed(ip) if ip.has_point_index() => "point",
            StoredPartition::Indexed(_) => "row",
        };
        kinds.push((p.rows.len(), kind));
    }
    kinds.sort();
    assert_eq!(kinds, vec![(1, "none"), (10, "point"), (100, "row")]);
}

/// A header longer than the first probe (a large static row) is read by
/// probes that double until it decodes, whatever error a cut value gives.
#[test]
fn a_static_row_longer_than_the_probe_reads() {
    let mut p = Partition::default();
    let mut row = Row::default();
    row.cells.insert(
        (9, None),
        crate::cell::Cell::live(1, Bytes::from(vec![5u8; 20 << 10])),
    );
    p.static_row = Some(row);
    let parts = vec![(PartitionKey::new(Bytes::from_static(b"s")), p.clone())];
    let table = write_with(&parts, PointIndexParams::default());
    let all = [Slice::all(&comparator())];
    assert_eq!(read_for(&table, &parts[0].0, &all), p);
}

#[test]
fn a_single_row_longer_than_two_blocks_reads_whole() {
    let mut p = Partition::default();
    let mut row = Row::default();
    row.cells.insert(
        (1, None),
        crate::cell::Cell::live(1, Bytes::from(vec![3u8; 32 << 10])),
    );
    p.rows.insert(
        ClusteringKey::row(
            vec![Bytes::from_static(&[0, 0, 0, 1]), Bytes::new()],
            &comparator(),
        ),
        row,
    );
    let parts = vec![(PartitionKey::new(Bytes::from_static(b"k")), p.clone())];
    let table = write_with(&parts, PointIndexParams::default());
    table.set_whole_entry_max_bytes(crate::sstable::partition_reader::WHOLE_ENTRY_MAX_BYTES);
    let all = [Slice::all(&comparator())];
    assert_eq!(read_for(&table, &parts[0].0, &all), p);
    assert_eq!(table.read_partition(&parts[0].0).unwrap(), Some(p));
}

/// A read of some slices looks for a point index in an entry past two
/// blocks, except in a table without clustering columns, whose partitions
/// hold one row and never have one: those are read whole up to the usual
/// limit, without a first probe.
#[test]
fn only_clustered_tables_probe_mid_size_entries_for_a_point_index() {
    let fs = MemFs::new();
    let path = Path::new("t/empty.db");
    super::test_util::write(&fs, path, SstableParams::default(), &[]);
    let all = [Slice::all(&comparator())];
    let mid = crate::sstable::point_index::POINT_READ_MIN_ENTRY_BYTES + 1;
    let clustered = open(&fs, path, 1.0).unwrap();
    assert!(clustered.reads_whole(mid - 1, Some(&all)));
    assert!(!clustered.reads_whole(mid, Some(&all)));
    assert!(
        clustered.reads_whole(mid, None),
        "scans read mid-size entries whole"
    );
    let flat = crate::clustering::ClusteringComparator::new(vec![]);
    let flat = Sstable::open(fs.clone(), path, flat, 1.0).unwrap();
    assert!(flat.reads_whole(mid, Some(&all)));
    let whole_max = crate::sstable::partition_reader::WHOLE_ENTRY_MAX_BYTES;
    assert!(flat.reads_whole(whole_max, Some(&all)));
    assert!(!flat.reads_whole(whole_max + 1, Some(&all)));
}
