//! The checked-in fixtures: sstables written by this code from fixed
//! partitions, one per (format version, partition encoding version) pair
//! that was ever written. The tests read every fixture back (old files stay
//! readable) and check that the writer still produces the bytes of the
//! newest one (the format did not drift without a version bump). Write the
//! newest, only together with a version change, with
//! `VARVE_BLESS=1 cargo test -p varve-storage sstable_v4_enc3_fixture`.

use super::test_util::{comparator, open, write};
use crate::cell::{Cell, DeletionTime, LivenessInfo};
use crate::clustering::{ClusteringKey, Slice};
use crate::encoding::PARTITION_ENCODING_VERSION;
use crate::engine::{PartitionKey, TokenBound};
use crate::partition::{Partition, RangeTombstone};
use crate::row::Row;
use crate::sstable::format::{Footer, FOOTER_LEN};
use crate::sstable::fs_mem::MemFs;
use crate::sstable::point_index::PointIndexParams;
use crate::sstable::{Compression, SstableParams};
use bytes::Bytes;
use std::path::Path;

/// Format 1, partition encoding 1.
const FIXTURE_V1: &str = "src/sstable/fixtures/v1-none-64.db";
/// Format 2, partition encoding 1.
const FIXTURE_V2: &str = "src/sstable/fixtures/v2-none-64.db";
/// Format 2, partition encoding 2.
const FIXTURE_V2_ENC2: &str = "src/sstable/fixtures/v2-enc2-none-64.db";
/// Format 3, partition encoding 3, row index blocks of 32 bytes so that
/// the larger partitions carry a row index.
const FIXTURE_V3_ENC3: &str = "src/sstable/fixtures/v3-enc3-none-64.db";
/// Format 4, partition encoding 3, point index blocks of 32 bytes for
/// entries up to [`FIXTURE_POINT_ENTRY_MAX_BYTES`] and row index blocks of
/// 32 bytes for longer ones, so that the larger partitions carry one or the
/// other (the newest: the writer's bytes).
const FIXTURE_V4_ENC3: &str = "src/sstable/fixtures/v4-enc3-none-64.db";
/// The row index block size the v3 and v4 fixtures were written with.
const FIXTURE_ROW_INDEX_BLOCK_BYTES: u64 = 32;
/// The point index's block size and longest entry in the v4 fixture.
const FIXTURE_POINT: PointIndexParams = PointIndexParams {
    block_bytes: 32,
    entry_max_bytes: FIXTURE_POINT_ENTRY_MAX_BYTES,
};
const FIXTURE_POINT_ENTRY_MAX_BYTES: u64 = 250;

fn ck(i: i32, s: &'static str) -> Vec<Bytes> {
    vec![
        Bytes::copy_from_slice(&i.to_be_bytes()),
        Bytes::from_static(s.as_bytes()),
    ]
}

/// One partition of each shape, keyed "p0".."p5".
pub(super) fn fixed_partitions() -> Vec<(PartitionKey, Partition)> {
    let cmp = comparator();
    let mut out = Vec::new();
    for i in 0..6i32 {
        let mut p = Partition::default();
        let mut row = Row {
            liveness: Some(LivenessInfo::new(100 + i as i64, 0, 0)),
            ..Row::default()
        };
        row.cells.insert(
            (1, None),
            Cell::live(100, Bytes::from(format!("value {i}"))),
        );
        row.cells.insert(
            (2, None),
            Cell::expiring(101, 3600, 1_000_000, Bytes::from_static(b"ttl")),
        );
        row.cells.insert(
            (3, Some(Bytes::from_static(b"elem"))),
            Cell::tombstone(102, 1_000_100),
        );
        row.complex_deletions
            .insert(3, DeletionTime::new(99, 1_000_050));
        match i {
            0 => p.deletion = DeletionTime::new(50, 999_000),
            1 => {
                let mut s = Row::default();
                s.cells
                    .insert((9, None), Cell::live(7, Bytes::from_static(b"static")));
                p.static_row = Some(s);
            }
            2 => row.deletion = Some(DeletionTime::new(98, 1_000_200)),
            3 => p.range_tombstones.push(RangeTombstone {
                slice: Slice {
                    start: ClusteringKey::before(vec![], &cmp),
                    end: ClusteringKey::after(ck(5, "")[..1].to_vec(), &cmp),
                },
                deletion: DeletionTime::new(97, 1_000_300),
            }),
            _ => {}
        }
        for j in 0..(i + 1) {
            p.rows
                .insert(ClusteringKey::row(ck(j, "x"), &cmp), row.clone());
        }
        out.push((PartitionKey::new(Bytes::from(format!("p{i}"))), p));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Writes the fixed partitions as the current writer does.
fn written_now() -> (Vec<(PartitionKey, Partition)>, Vec<u8>) {
    let parts = fixed_partitions();
    let fs = MemFs::new();
    let path = Path::new("f/new.db");
    let params = SstableParams {
        chunk_length: 64,
        compression: Compression::None,
        min_index_interval: 2,
        ..SstableParams::default()
    };
    let mut w =
        crate::sstable::SstableWriter::create(fs.clone(), path, params, comparator()).unwrap();
    w.set_row_index_block_bytes(FIXTURE_ROW_INDEX_BLOCK_BYTES);
    w.set_point_index(FIXTURE_POINT);
    for (k, p) in &parts {
        w.add(k, p).unwrap();
    }
    w.finish().unwrap();
    let _ = write;
    (parts, fs.get(path).unwrap())
}

/// Opens the checked-in fixture `name`, checks that its footer names
/// `encoding` and that it holds the fixed partitions; returns its bytes and
/// its statistics.
fn read_fixture(
    name: &str,
    encoding: u8,
    parts: &[(PartitionKey, Partition)],
) -> (Vec<u8>, crate::sstable::SstableStats) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    let stored = std::fs::read(&fixture).unwrap();
    let footer = &stored[stored.len() - FOOTER_LEN as usize..];
    let footer = Footer::decode(footer).unwrap();
    assert_eq!(footer.partition_encoding_version, encoding, "{name}");
    let fs = MemFs::new();
    let old = Path::new("f/old.db");
    fs.insert(old, stored.clone());
    let table = open(&fs, old, 1.0).unwrap();
    let all: Vec<_> = table.iter().unwrap().collect::<crate::Result<_>>().unwrap();
    assert_eq!(all, parts);
    let keys = table
        .keys(&TokenBound::Unbounded, &TokenBound::Unbounded, 100)
        .unwrap();
    assert_eq!(keys.len(), 6);
    (stored, table.stats().clone())
}

#[test]
fn sstable_v1_fixture_still_reads() {
    let (parts, _) = written_now();
    let (_, stats) = read_fixture(FIXTURE_V1, 1, &parts);
    // Format 1 does not know these: reads never skip such a file by
    // clustering bounds.
    assert_eq!((stats.partition_deletions, stats.static_rows), (None, None));
}

#[test]
fn sstable_v2_enc1_fixture_still_reads() {
    let (parts, _) = written_now();
    let (_, stats) = read_fixture(FIXTURE_V2, 1, &parts);
    assert!(stats.partition_deletions.is_some() && stats.static_rows.is_some());
}

#[test]
fn sstable_v2_enc2_fixture_still_reads() {
    let (parts, _) = written_now();
    let (_, stats) = read_fixture(FIXTURE_V2_ENC2, 2, &parts);
    assert!(stats.partition_deletions.is_some() && stats.static_rows.is_some());
}

#[test]
fn sstable_v3_enc3_fixture_still_reads_through_its_row_index() {
    let (parts, _) = written_now();
    let (stored, stats) = read_fixture(FIXTURE_V3_ENC3, PARTITION_ENCODING_VERSION, &parts);
    assert!(stats.partition_deletions.is_some() && stats.static_rows.is_some());
    let (row_indexed, point_indexed) = read_through_indexes(stored, &parts);
    assert!(
        row_indexed >= 2,
        "{row_indexed} partitions with a row index"
    );
    assert_eq!(point_indexed, 0, "format 3 has no point index");
}

#[test]
fn sstable_v4_enc3_fixture() {
    let (parts, written) = written_now();
    if std::env::var_os("VARVE_BLESS").is_some() {
        bless(&parts, &written);
    }
    let (stored, stats) = read_fixture(FIXTURE_V4_ENC3, PARTITION_ENCODING_VERSION, &parts);
    assert!(stats.partition_deletions.is_some() && stats.static_rows.is_some());
    assert!(
        written == stored,
        "the writer's bytes changed: a format change needs a new version"
    );
    let (row_indexed, point_indexed) = read_through_indexes(stored, &parts);
    assert!(
        row_indexed >= 1,
        "{row_indexed} partitions with a row index"
    );
    assert!(
        point_indexed >= 2,
        "{point_indexed} partitions with a point index"
    );
}

/// Writes the v4 fixture and the fuzz seeds made from it.
fn bless(parts: &[(PartitionKey, Partition)], written: &[u8]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::write(root.join(FIXTURE_V4_ENC3), written).unwrap();
    // Fuzz seeds: the file, and a raw partition (first byte 2 picks
    // encoding 3 for `fuzz_open`'s direct decode).
    let corpus = root.join("../../fuzz/corpus/sstable_reader");
    std::fs::write(corpus.join("v4-enc3-none-64.db"), written).unwrap();
    let mut raw = vec![2u8];
    crate::encoding::encode_partition(&mut raw, &parts[3].1);
    std::fs::write(corpus.join("partition-enc3"), &raw).unwrap();
    // Row index seeds: the larger partitions' entries with their point
    // index or row index.
    let rows = root.join("../../fuzz/corpus/row_index");
    std::fs::create_dir_all(&rows).unwrap();
    for (i, (k, p)) in parts.iter().enumerate().skip(3) {
        for (name, point) in [
            ("entry", PointIndexParams::default()),
            ("point", FIXTURE_POINT),
        ] {
            let mut entry = Vec::new();
            crate::sstable::writer::encode_entry(&mut entry, k, p, 8, point);
            std::fs::write(rows.join(format!("{name}-{i}")), &entry).unwrap();
        }
    }
}

/// Reads every fixed partition of the sstable `stored` through its index
/// (every entry past 0 bytes goes through it): whole, and one row at a
/// time. Returns how many partitions have a row index of several blocks,
/// and how many a point index.
fn read_through_indexes(stored: Vec<u8>, parts: &[(PartitionKey, Partition)]) -> (usize, usize) {
    let fs = MemFs::new();
    let path = Path::new("f/indexed.db");
    fs.insert(path, stored);
    let table = open(&fs, path, 1.0).unwrap();
    table.set_whole_entry_max_bytes(0);
    let (mut row_indexed, mut point_indexed) = (0, 0);
    for (k, p) in parts {
        match table.open_partition(k).unwrap().unwrap() {
            crate::sstable::StoredPartition::Whole(got) => assert_eq!(&got, p),
            crate::sstable::StoredPartition::Indexed(ip) => {
                if ip.has_point_index() {
                    point_indexed += 1;
                } else {
                    row_indexed += usize::from(ip.block_count() > 1);
                }
                let got = ip.read_stored(&[Slice::all(&comparator())]).unwrap();
                assert_eq!(&got, p);
            }
        }
        for row in p.rows.keys() {
            let slice = Slice {
                start: ClusteringKey::before(row.values.clone(), &comparator()),
                end: ClusteringKey::after(row.values.clone(), &comparator()),
            };
            let got = match table.open_partition_for(k, std::slice::from_ref(&slice)) {
                Ok(Some(crate::sstable::StoredPartition::Whole(got))) => got,
                Ok(Some(crate::sstable::StoredPartition::Indexed(ip))) => {
                    let got = ip.read_stored(std::slice::from_ref(&slice)).unwrap();
                    got
                }
                other => panic!("{k:?}: {:?}", other.err()),
            };
            // Range tombstones read through an index end at a block edge:
            // the rows, and what the deletions leave of them, are the same.
            let (got, want) = (got.slice(std::slice::from_ref(&slice)), p.slice(&[slice]));
            assert_eq!(got.rows, want.rows);
            assert_eq!(
                (got.deletion, &got.static_row),
                (want.deletion, &want.static_row)
            );
            assert_eq!(got.resolve(1_000_000).0, want.resolve(1_000_000).0);
        }
    }
    (row_indexed, point_indexed)
}
