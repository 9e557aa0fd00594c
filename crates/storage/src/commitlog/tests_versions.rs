//! Partition encoding versions in the commitlog: segments whose header
//! names encoding 1 (written by earlier releases; built here with the
//! version 1 encoder) still replay, side by side with segments of the
//! current encoding; an unknown encoding is refused, never guessed.

use super::segment::encode_header;
use super::tests::{comparator, config, dir, key, open, partition};
use super::*;
use crate::cell::{Cell, DeletionTime, LivenessInfo};
use crate::clustering::ClusteringKey;
use crate::encoding::{put_varint, v1, PARTITION_ENCODING_VERSION};
use crate::fs_sim::SimFs;
use crate::row::Row;
use bytes::Bytes;

/// A segment header naming partition encoding `version`.
fn header_with_encoding(id: u64, version: u8) -> Vec<u8> {
    let mut h = encode_header(id);
    h[6] = version;
    let crc = crc32fast::hash(&h[..16]);
    h[16..20].copy_from_slice(&crc.to_be_bytes());
    h
}

/// A framed entry whose partition is in encoding version 1.
fn entry_v1(table: TableId, k: &PartitionKey, p: &Partition) -> Vec<u8> {
    let mut payload = table.to_be_bytes().to_vec();
    payload.extend_from_slice(&k.token.to_be_bytes());
    put_varint(&mut payload, k.key.len() as u64);
    payload.extend_from_slice(&k.key);
    v1::encode_partition(&mut payload, p);
    let len = (payload.len() as u32).to_be_bytes();
    let mut out = len.to_vec();
    out.extend_from_slice(&crc32fast::hash(&len).to_be_bytes());
    out.extend_from_slice(&payload);
    out.extend_from_slice(&crc32fast::hash(&payload).to_be_bytes());
    out
}

/// A partition with every kind of deletion and an expiring row.
fn rich_partition() -> Partition {
    let cmp = comparator();
    let mut row = Row {
        liveness: Some(LivenessInfo::new(1_000, 60, 1_700_000_000)),
        deletion: Some(DeletionTime::new(900, 1_699_999_000)),
        ..Row::default()
    };
    row.cells.insert(
        (1, None),
        Cell::expiring(1_000, 60, 1_700_000_000, Bytes::from_static(b"v")),
    );
    row.cells.insert(
        (2, Some(Bytes::from_static(b"k"))),
        Cell::tombstone(1_001, 1_700_000_001),
    );
    row.complex_deletions
        .insert(2, DeletionTime::new(999, 1_699_999_999));
    let mut p = Partition {
        deletion: DeletionTime::new(5, 1_600_000_000),
        ..Partition::default()
    };
    p.rows.insert(
        ClusteringKey::row(vec![Bytes::copy_from_slice(&7i32.to_be_bytes())], &cmp),
        row,
    );
    p
}

type Written = Vec<(TableId, PartitionKey, Partition)>;

fn write_segment(fs: &SimFs, id: u64, bytes: &[u8]) {
    fs.create_dir_all(&dir()).unwrap();
    let mut f = fs.create(&dir().join(segment_file_name(id))).unwrap();
    f.write_all(bytes).unwrap();
    f.sync().unwrap();
    fs.sync_dir(&dir()).unwrap();
}

/// A segment `id` of encoding 1 holding `entries`.
fn v1_segment(fs: &SimFs, id: u64, entries: &Written) {
    let mut image = header_with_encoding(id, 1);
    for (t, k, p) in entries {
        image.extend(entry_v1(*t, k, p));
    }
    write_segment(fs, id, &image);
}

fn replayed(replay: Replay) -> Written {
    replay.map(|e| (e.table, e.key, e.partition)).collect()
}

#[test]
fn a_segment_of_encoding_1_still_replays() {
    let fs = SimFs::new();
    let old: Written = vec![
        (1, key(b"a"), partition(3, b"old value")),
        (2, key(b"b"), rich_partition()),
        (1, key(b"c"), Partition::default()),
    ];
    v1_segment(&fs, 5, &old);
    let (log, replay) = open(&fs, config(SyncMode::Batch, 1 << 20)).unwrap();
    assert!(replay.warnings().is_empty(), "{:?}", replay.warnings());
    assert_eq!(replayed(replay), old);
    // New entries go to a new segment, in the current encoding; the old
    // segment stays until its tables flush, and both replay.
    let new = (3, key(b"d"), rich_partition());
    log.append(new.0, &new.1, &new.2).unwrap();
    let paths = log.segment_paths();
    log.shutdown().unwrap();
    drop(log);
    assert_eq!(paths.len(), 2);
    let encodings: Vec<u8> = paths.iter().map(|p| fs.read_all(p).unwrap()[6]).collect();
    assert_eq!(encodings, vec![1, PARTITION_ENCODING_VERSION]);
    let (_, replay) = open(&fs, config(SyncMode::Batch, 1 << 20)).unwrap();
    assert!(replay.warnings().is_empty(), "{:?}", replay.warnings());
    let mut all = old.clone();
    all.push(new);
    assert_eq!(replayed(replay), all);
}

#[test]
fn a_segment_of_an_unknown_encoding_is_refused() {
    let mut image = header_with_encoding(5, PARTITION_ENCODING_VERSION + 1);
    image.extend(entry_v1(1, &key(b"a"), &partition(1, b"x")));
    let fs = SimFs::new();
    write_segment(&fs, 5, &image);
    let strict = CommitLogConfig {
        strict_replay: true,
        ..config(SyncMode::Batch, 1 << 20)
    };
    match open(&fs, strict) {
        Err(e) => assert!(e
            .to_string()
            .contains("unsupported partition encoding version")),
        Ok(_) => panic!("a strict open accepted an unknown encoding"),
    }
    let fs = SimFs::new();
    write_segment(&fs, 5, &image);
    let (_, replay) = open(&fs, config(SyncMode::Batch, 1 << 20)).unwrap();
    let w = replay.warnings().to_vec();
    assert_eq!(w.len(), 1);
    assert_eq!((w[0].kind, w[0].offset), (WarningKind::Corruption, 0));
    let want = format!(
        "unsupported partition encoding version {}",
        PARTITION_ENCODING_VERSION + 1
    );
    assert_eq!(w[0].reason, want);
    assert!(replayed(replay).is_empty());
}

#[test]
fn version_1_entries_decode_only_as_version_1() {
    // The same bytes under a header naming encoding 2 do not replay as the
    // partition they hold: the header's version is what selects the decoder.
    let fs = SimFs::new();
    let p = rich_partition();
    let mut image = header_with_encoding(5, 2);
    image.extend(entry_v1(1, &key(b"a"), &p));
    write_segment(&fs, 5, &image);
    let (_, replay) = open(&fs, config(SyncMode::Batch, 1 << 20)).unwrap();
    let got = replayed(replay);
    assert!(got.iter().all(|(_, _, q)| *q != p));
}

/// The fuzz seeds of the commitlog target: a segment of each encoding,
/// and a raw payload whose first byte (1) picks encoding 2 for
/// `fuzz_replay`'s direct decode. Checked here to replay cleanly; written
/// to fuzz/corpus/commitlog_replay with `VARVE_BLESS=1`.
#[test]
fn fuzz_seeds_of_both_encodings_replay() {
    let entries: Written = vec![
        (1, key(b"a"), partition(2, b"seed")),
        (2, key(b"b"), rich_partition()),
    ];
    let mut enc1 = header_with_encoding(7, 1);
    let mut enc2 = encode_header(7);
    for (t, k, p) in &entries {
        enc1.extend(entry_v1(*t, k, p));
        enc2.extend(super::segment::encode_entry(*t, k, p));
    }
    for image in [&enc1, &enc2] {
        let fs = SimFs::new();
        write_segment(&fs, 7, image);
        let (_, replay) = open(&fs, config(SyncMode::Batch, 1 << 20)).unwrap();
        assert!(replay.warnings().is_empty());
        assert_eq!(replayed(replay), entries);
    }
    let (t, k, p) = &entries[1];
    let mut raw = vec![1u8];
    raw.extend_from_slice(&super::segment::encode_entry(*t, k, p)[8..]);
    raw.truncate(raw.len() - 4);
    let (_, _, mut r) = super::segment::decode_payload_head(&raw[1..]).unwrap();
    let back = crate::encoding::decode_partition(&mut r, &comparator()).unwrap();
    assert_eq!(&back, p);
    if std::env::var_os("VARVE_BLESS").is_some() {
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus/commitlog_replay");
        std::fs::create_dir_all(&corpus).unwrap();
        std::fs::write(corpus.join("segment-enc1"), &enc1).unwrap();
        std::fs::write(corpus.join("segment-enc2"), &enc2).unwrap();
        std::fs::write(corpus.join("payload-enc2"), &raw).unwrap();
    }
}
