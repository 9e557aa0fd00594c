//! `garbage_collect` and `provide_overlapping_tombstones` on crafted sstables:
//! what a newer sstable deletes (ROW) or overwrites (CELL) disappears from an
//! older one's rewrite, tombstones stay while they are not purgeable, reads
//! return the same before and after, and sstables go oldest first.

mod common;

use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use varve_storage::compaction::ShadowMode;
use varve_storage::*;
use varve_types::CqlType;

const TABLE: TableId = 11;
const PARTITIONS: i32 = 10;
const ROWS_PER_PARTITION: i32 = 100;
const VALUE_BYTES: usize = 1024;
/// Local deletion time of every tombstone written here; with gc_grace 5 s
/// nothing is purgeable at `NOW`.
const NOW: i32 = 1_000;

fn cmp() -> Arc<ClusteringComparator> {
    ClusteringComparator::new(vec![(CqlType::Int, false)])
}

fn ck(c: i32) -> ClusteringKey {
    ClusteringKey::row(vec![Bytes::copy_from_slice(&c.to_be_bytes())], &cmp())
}

fn key(k: i32) -> PartitionKey {
    PartitionKey::new(Bytes::from(format!("p{k}")))
}

/// gc_grace 5 s; no background compaction (from `common::table`): only
/// what a test asks for runs.
fn desc(shadow: ShadowMode) -> TableDescriptor {
    let mut d = TableDescriptor {
        gc_grace_seconds: 5,
        ..common::table(TABLE, cmp())
    };
    d.compaction.common.provide_overlapping_tombstones = shadow;
    d
}

fn open(shadow: ShadowMode) -> Storage {
    let options = StorageOptions {
        concurrent_compactors: 2,
        ..common::options(Clock::system())
    };
    Storage::open(options, vec![desc(shadow)]).unwrap()
}

/// Every row of every partition with one random 1 KiB cell at `ts`.
fn write_all(s: &Storage, ts: i64, rng: &mut StdRng) {
    for k in 0..PARTITIONS {
        let mut p = Partition::default();
        for c in 0..ROWS_PER_PARTITION {
            let mut row = Row {
                liveness: Some(LivenessInfo::new(ts, 0, NOW)),
                ..Row::default()
            };
            let value: Vec<u8> = (0..VALUE_BYTES).map(|_| rng.gen()).collect();
            row.cells
                .insert((0, None), Cell::live(ts, Bytes::from(value)));
            p.rows.insert(ck(c), row);
        }
        s.apply(TABLE, &key(k), p).unwrap();
    }
    s.flush(TABLE).unwrap();
}

/// Row deletions (at `ts`) of every row whose clustering is not a multiple of 20.
fn delete_most(s: &Storage, ts: i64) {
    for k in 0..PARTITIONS {
        let mut p = Partition::default();
        for c in (0..ROWS_PER_PARTITION).filter(|c| c % 20 != 0) {
            let row = Row {
                deletion: Some(DeletionTime::new(ts, NOW)),
                ..Row::default()
            };
            p.rows.insert(ck(c), row);
        }
        s.apply(TABLE, &key(k), p).unwrap();
    }
    s.flush(TABLE).unwrap();
}

/// Every row (cells and marker) overwritten at `ts` with a 1-byte value.
fn overwrite_all(s: &Storage, ts: i64) {
    for k in 0..PARTITIONS {
        let mut p = Partition::default();
        for c in 0..ROWS_PER_PARTITION {
            let mut row = Row {
                liveness: Some(LivenessInfo::new(ts, 0, NOW)),
                ..Row::default()
            };
            row.cells
                .insert((0, None), Cell::live(ts, Bytes::from_static(b"x")));
            p.rows.insert(ck(c), row);
        }
        s.apply(TABLE, &key(k), p).unwrap();
    }
    s.flush(TABLE).unwrap();
}

fn contents(s: &Storage) -> Vec<Option<Partition>> {
    (0..PARTITIONS)
        .map(|k| {
            s.read_live(
                TABLE,
                &key(k),
                &[Slice::all(&cmp())],
                false,
                NOW,
                usize::MAX,
            )
            .unwrap()
            .map(|(p, _, _)| p)
        })
        .collect()
}

/// Size of the live sstable with the smallest max timestamp (the old data).
fn oldest_size(s: &Storage) -> u64 {
    let views = s.sstable_views(TABLE, NOW).unwrap();
    views
        .iter()
        .min_by_key(|v| v.max_timestamp)
        .map_or(0, |v| v.size_bytes)
}

#[test]
fn row_gc_drops_rows_deleted_in_a_newer_sstable() {
    let mut rng = StdRng::seed_from_u64(1);
    let s = open(ShadowMode::None);
    write_all(&s, 10, &mut rng);
    delete_most(&s, 20);
    let old = oldest_size(&s);
    let before = contents(&s);
    let gens = s.table_generations(TABLE).unwrap();
    let r = s.garbage_collect(TABLE, Granularity::Row, 1, NOW).unwrap();
    assert_eq!(
        r.rewritten, gens,
        "oldest first: the data, then the deletions"
    );
    let shrunk = oldest_size(&s);
    assert!(
        shrunk * 10 < old,
        "{old} -> {shrunk}: 95% of the rows are deleted elsewhere"
    );
    assert_eq!(contents(&s), before, "reads are unchanged");
    // The row tombstones are not purgeable (gc_grace): they stay.
    let tombstones: u64 = s
        .sstable_views(TABLE, NOW)
        .unwrap()
        .iter()
        .map(|v| v.max_timestamp)
        .filter(|ts| *ts == 20)
        .count() as u64;
    assert_eq!(
        tombstones, 1,
        "the sstable of deletions survives its own GC"
    );
    let stats = s.table_stats(TABLE).unwrap();
    assert_eq!(stats.live_sstables, 2);
}

#[test]
fn cell_overwrites_only_count_under_cell() {
    let mut rng = StdRng::seed_from_u64(2);
    let s = open(ShadowMode::None);
    write_all(&s, 10, &mut rng);
    overwrite_all(&s, 20);
    let old = oldest_size(&s);
    let before = contents(&s);
    s.garbage_collect(TABLE, Granularity::Row, 1, NOW).unwrap();
    let after_row = oldest_size(&s);
    assert!(
        after_row * 10 > old * 9,
        "ROW keeps overwritten cells: {old} -> {after_row}"
    );
    assert_eq!(contents(&s), before);
    s.garbage_collect(TABLE, Granularity::Cell, 0, NOW).unwrap();
    let views = s.sstable_views(TABLE, NOW).unwrap();
    assert_eq!(
        views.len(),
        1,
        "every old version was beaten: the old sstable is gone"
    );
    assert!(views[0].size_bytes * 10 < old);
    assert_eq!(contents(&s), before);
}

#[test]
fn provide_overlapping_tombstones_applies_to_compactions() {
    for (mode, shrinks) in [
        (ShadowMode::None, false),
        (ShadowMode::Row, true),
        (ShadowMode::Cell, true),
    ] {
        let mut rng = StdRng::seed_from_u64(3);
        let s = open(mode);
        write_all(&s, 10, &mut rng);
        delete_most(&s, 20);
        let before = contents(&s);
        let old = oldest_size(&s);
        let oldest = s
            .sstable_views(TABLE, NOW)
            .unwrap()
            .into_iter()
            .min_by_key(|v| v.max_timestamp)
            .unwrap()
            .id;
        // A compaction of the old sstable alone: the deletions are outside it.
        s.compact(TABLE, &[oldest], 0, NOW).unwrap();
        let after = oldest_size(&s);
        assert_eq!(after * 10 < old, shrinks, "{mode:?}: {old} -> {after}");
        assert_eq!(contents(&s), before, "{mode:?}");
    }
}

#[test]
fn gc_goes_oldest_max_timestamp_first_and_in_parallel() {
    let mut rng = StdRng::seed_from_u64(4);
    let s = open(ShadowMode::None);
    // Generations 1, 2, 3 hold decreasing timestamps.
    write_all(&s, 300, &mut rng);
    write_all(&s, 200, &mut rng);
    write_all(&s, 100, &mut rng);
    let gens = s.table_generations(TABLE).unwrap();
    let before = contents(&s);
    let r = s.garbage_collect(TABLE, Granularity::Cell, 1, NOW).unwrap();
    let mut reversed = gens.clone();
    reversed.reverse();
    assert_eq!(r.rewritten, reversed);
    assert_eq!(contents(&s), before);
    assert_eq!(
        s.table_generations(TABLE).unwrap().len(),
        1,
        "the two older copies were beaten by the newest"
    );
    let r = s.garbage_collect(TABLE, Granularity::Row, 4, NOW).unwrap();
    assert_eq!(r.rewritten.len(), 1);
    assert_eq!(contents(&s), before);
    let stats = s.compaction_stats();
    assert!(stats.completed_tasks >= 4);
    assert!(stats.running.is_empty());
    let t = s.table_compaction_stats(TABLE, NOW).unwrap();
    assert_eq!(t.live_sstables, 1);
    assert_eq!(t.sstables_per_level, vec![1]);
    assert!(t.write_amplification > 1.0);
}

/// Chunk and index lookups (cache hits and misses) of one garbagecollect at
/// `granularity`, after `newer` wrote a second sstable over `write_all`'s.
fn shadow_lookups(newer: impl Fn(&Storage), granularity: Granularity) -> u64 {
    let mut rng = StdRng::seed_from_u64(5);
    let s = open(ShadowMode::None);
    write_all(&s, 10, &mut rng);
    newer(&s);
    let requests = |s: &Storage| {
        let st = s.block_cache_stats();
        st.hits + st.misses
    };
    let before = requests(&s);
    s.garbage_collect(TABLE, granularity, 1, NOW).unwrap();
    requests(&s) - before
}

#[test]
fn row_gc_does_not_read_an_sstable_without_tombstones_for_shadows() {
    // Overwrites delete nothing: at ROW granularity the newer sstable cannot
    // shadow the older one's rows, so it is not read for each of them (the
    // few lookups left are the rewrites' own, not one per partition).
    let partitions = PARTITIONS as u64;
    let unread = shadow_lookups(|s| overwrite_all(s, 20), Granularity::Row);
    assert!(unread < partitions, "{unread} lookups");
    // At CELL granularity its newer versions count, and it is read for every
    // partition; at ROW, so is a newer sstable of deletions.
    let cell = shadow_lookups(|s| overwrite_all(s, 20), Granularity::Cell);
    assert!(cell >= unread + partitions, "{cell} lookups at CELL");
    let deletions = shadow_lookups(|s| delete_most(s, 20), Granularity::Row);
    assert!(
        deletions >= unread + partitions,
        "{deletions} lookups at ROW"
    );
}

/// Rows `cs` of every partition, each with a random 1 KiB cell at `ts`, or
/// a row deletion at `ts` for those in `deleted`.
fn write_rows(s: &Storage, ts: i64, cs: &[i32], deleted: &[i32], rng: &mut StdRng) {
    for k in 0..PARTITIONS {
        let mut p = Partition::default();
        for &c in cs {
            let row = if deleted.contains(&c) {
                Row {
                    deletion: Some(DeletionTime::new(ts, NOW)),
                    ..Row::default()
                }
            } else {
                let mut row = Row {
                    liveness: Some(LivenessInfo::new(ts, 0, NOW)),
                    ..Row::default()
                };
                let value: Vec<u8> = (0..VALUE_BYTES).map(|_| rng.gen()).collect();
                row.cells
                    .insert((0, None), Cell::live(ts, Bytes::from(value)));
                row
            };
            p.rows.insert(ck(c), row);
        }
        s.apply(TABLE, &key(k), p).unwrap();
    }
    s.flush(TABLE).unwrap();
}

/// The shadow lookup of a partition that holds a few rows reads, from a
/// newer sstable whose partition has a point index, only the blocks of
/// those rows: rows deleted there go, rows only overwritten stay (ROW).
#[test]
fn row_gc_reads_the_rows_it_holds_through_a_point_index() {
    let mut rng = StdRng::seed_from_u64(6);
    let s = open(ShadowMode::None);
    write_rows(&s, 10, &[5, 50, 95], &[], &mut rng);
    let all: Vec<i32> = (0..ROWS_PER_PARTITION).collect();
    write_rows(&s, 20, &all, &[5, 95], &mut rng);
    let blocks = s.row_index_blocks(TABLE, &key(0)).unwrap();
    assert!(
        blocks.iter().any(|b| *b > 10),
        "the newer partition has a point index of many blocks: {blocks:?}"
    );
    let before = contents(&s);
    let old = oldest_size(&s);
    s.garbage_collect(TABLE, Granularity::Row, 1, NOW).unwrap();
    let after = oldest_size(&s);
    assert!(
        after * 2 < old,
        "{old} -> {after}: two of the three old rows are deleted in the newer sstable"
    );
    assert_eq!(contents(&s), before, "reads are unchanged");
    let kept = s
        .read_live(
            TABLE,
            &key(3),
            &[Slice::all(&cmp())],
            false,
            NOW,
            usize::MAX,
        )
        .unwrap()
        .map(|(p, _, _)| p.rows.len());
    assert_eq!(kept, Some(98));
}
