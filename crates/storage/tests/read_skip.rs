//! Reads skip sstables by clustering bounds when that is safe (issue 3):
//! an sstable whose rows all lie outside the queried slices is not read,
//! unless it holds a partition deletion or a static row, which matter to
//! every slice. Checked through [`ReadCost`] (sstables actually read) and
//! the merged result.

mod common;

use bytes::Bytes;
use varve_storage::*;
use varve_types::CqlType;

const TABLE: TableId = 3;

fn open() -> Storage {
    let desc = common::table(
        TABLE,
        ClusteringComparator::new(vec![(CqlType::Int, false)]),
    );
    Storage::open(common::options(Clock::system()), vec![desc]).expect("open")
}

fn ck(i: i32) -> Vec<Bytes> {
    vec![Bytes::copy_from_slice(&i.to_be_bytes())]
}

fn key() -> PartitionKey {
    PartitionKey::new(Bytes::from_static(b"k"))
}

/// Writes rows `range` of partition "k" and flushes them into one sstable.
fn flush_rows(s: &Storage, range: std::ops::Range<i32>, ts: i64) {
    let cmp = s.comparator(TABLE).expect("table");
    let mut p = Partition::default();
    for i in range {
        let row = Row {
            liveness: Some(LivenessInfo::new(ts, 0, 0)),
            cells: [((0, None), Cell::live(ts, Bytes::from_static(b"v")))].into(),
            ..Row::default()
        };
        p.rows.insert(ClusteringKey::row(ck(i), &cmp), row);
    }
    s.apply(TABLE, &key(), p).expect("apply");
    s.flush(TABLE).expect("flush");
}

/// Reads rows `lo..=hi`: (sstables read, clustering ints returned).
fn read(s: &Storage, lo: i32, hi: i32) -> (u32, Vec<i32>) {
    let cmp = s.comparator(TABLE).expect("table");
    let slice = Slice {
        start: ClusteringKey::before(ck(lo), &cmp),
        end: ClusteringKey::after(ck(hi), &cmp),
    };
    let mut cost = ReadCost::default();
    let got = s
        .read_live_costed(TABLE, &key(), &[slice], false, 1_000, 1_000, &mut cost)
        .expect("read");
    let rows = got.map_or_else(Vec::new, |(p, _, _)| {
        p.rows
            .keys()
            .map(|k| i32::from_be_bytes(k.values[0][..4].try_into().expect("int")))
            .collect()
    });
    (cost.sstables, rows)
}

#[test]
fn sstables_outside_the_slice_are_not_read() {
    let s = open();
    flush_rows(&s, 0..10, 1);
    flush_rows(&s, 100..110, 2);
    flush_rows(&s, 200..210, 3);
    assert_eq!(read(&s, 100, 104), (1, (100..=104).collect()));
    assert_eq!(read(&s, 5, 104).0, 2);
    assert_eq!(read(&s, 50, 60), (0, Vec::new()));
    let (n, rows) = read(&s, 0, 1_000);
    assert_eq!((n, rows.len()), (3, 30));
    // A bound equal to an sstable's first or last row still reads it.
    assert_eq!(read(&s, 9, 9), (1, vec![9]));
    assert_eq!(read(&s, 110, 200), (1, vec![200]));
}

#[test]
fn a_partition_deletion_or_static_row_is_never_skipped() {
    let s = open();
    flush_rows(&s, 0..10, 1);
    // Newer: a partition deletion at ts 5 (rows elsewhere) must hide the
    // old rows even though its own clustering bounds miss the slice.
    let cmp = s.comparator(TABLE).expect("table");
    let mut p = Partition {
        deletion: DeletionTime::new(5, 900),
        ..Partition::default()
    };
    p.rows.insert(
        ClusteringKey::row(ck(500), &cmp),
        Row {
            liveness: Some(LivenessInfo::new(6, 0, 0)),
            ..Row::default()
        },
    );
    s.apply(TABLE, &key(), p).expect("apply");
    s.flush(TABLE).expect("flush");
    assert_eq!(read(&s, 0, 9), (1, Vec::new()), "the deletion was read");

    // A static row elsewhere: its sstable is read for any slice.
    let s = open();
    flush_rows(&s, 0..10, 1);
    let p = Partition {
        static_row: Some(Row {
            cells: [((7, None), Cell::live(9, Bytes::from_static(b"s")))].into(),
            ..Row::default()
        }),
        ..Partition::default()
    };
    s.apply(TABLE, &key(), p).expect("apply");
    s.flush(TABLE).expect("flush");
    let (n, _) = read(&s, 0, 9);
    assert_eq!(n, 2, "the static row's sstable was read");
}
