//! Unit tests of the commitlog on the simulated file system: round trips,
//! limits, segment release, damage on disk, a full disk.

use super::*;
use crate::cell::Cell;
use crate::clustering::ClusteringKey;
use crate::fs_sim::SimFs;
use crate::row::Row;
use bytes::Bytes;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use varve_types::CqlType;

pub(super) fn comparator() -> Arc<ClusteringComparator> {
    ClusteringComparator::new(vec![(CqlType::Int, false)])
}

/// Tables 1 to 9 exist; others were dropped.
pub(super) fn known(table: TableId) -> Option<Arc<ClusteringComparator>> {
    (1..10).contains(&table).then(comparator)
}

pub(super) fn dir() -> PathBuf {
    PathBuf::from("/commitlog")
}

/// A partition with `rows` rows whose cells hold `value`.
pub(super) fn partition(rows: i32, value: &[u8]) -> Partition {
    let cmp = comparator();
    let mut p = Partition::default();
    for i in 0..rows {
        let mut row = Row::default();
        row.cells.insert(
            (1, None),
            Cell::live(1000 + i as i64, Bytes::copy_from_slice(value)),
        );
        p.rows.insert(
            ClusteringKey::row(vec![Bytes::copy_from_slice(&i.to_be_bytes())], &cmp),
            row,
        );
    }
    p
}

pub(super) fn key(k: &[u8]) -> PartitionKey {
    PartitionKey::new(Bytes::copy_from_slice(k))
}

pub(super) fn config(sync: SyncMode, segment_size_bytes: u64) -> CommitLogConfig {
    CommitLogConfig {
        sync,
        segment_size_bytes,
        strict_replay: false,
        min_segment_id: 0,
        preallocate: false,
    }
}

pub(super) fn open(fs: &SimFs, config: CommitLogConfig) -> Result<(CommitLog, Replay)> {
    CommitLog::open(Arc::new(fs.clone()), &dir(), config, &known)
}

pub(super) type Written = Vec<(TableId, PartitionKey, Partition)>;

pub(super) fn replayed(replay: Replay) -> (Written, Vec<Position>) {
    let mut out = Vec::new();
    let mut positions = Vec::new();
    for e in replay {
        positions.push(e.position);
        out.push((e.table, e.key, e.partition));
    }
    (out, positions)
}

#[test]
fn thousands_of_random_appends_replay_after_a_clean_shutdown() {
    let seed = 7;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let fs = SimFs::new();
    let (log, replay) = open(
        &fs,
        config(
            SyncMode::Periodic {
                period: DEFAULT_SYNC_PERIOD,
            },
            64 << 10,
        ),
    )
    .unwrap();
    assert_eq!(replay.count(), 0);
    let mut written = Vec::new();
    let mut last = Position::ZERO;
    for _ in 0..3000 {
        let table = rng.gen_range(1..4u128);
        let k = key(&rng.gen::<[u8; 4]>());
        let value: Vec<u8> = (0..rng.gen_range(0..300)).map(|_| rng.gen()).collect();
        let p = partition(rng.gen_range(0..4), &value);
        let pos = log.append(table, &k, &p).unwrap();
        assert!(pos > last, "seed {seed}");
        last = pos;
        written.push((table, k, p));
    }
    assert!(log.segments_count() > 5);
    log.shutdown().unwrap();
    assert!(log.append(1, &key(b"x"), &partition(1, b"v")).is_err());
    drop(log);
    let (log, replay) = open(&fs.power_loss(), CommitLogConfig::default()).unwrap();
    assert_eq!(replay.warnings(), &[]);
    let (got, positions) = replayed(replay);
    assert!(got == written, "seed {seed}: replay differs");
    assert!(positions.windows(2).all(|w| w[0] < w[1]));
    assert!(log.current_position() > last);
}

#[test]
fn entries_of_dropped_tables_are_skipped_and_counted() {
    let fs = SimFs::new();
    let (log, _) = open(&fs, config(SyncMode::Batch, 64 << 10)).unwrap();
    log.append(1, &key(b"a"), &partition(1, b"v")).unwrap();
    log.append(77, &key(b"b"), &partition(1, b"v")).unwrap();
    log.append(2, &key(b"c"), &partition(1, b"v")).unwrap();
    drop(log);
    let (_, replay) = open(&fs.power_loss(), config(SyncMode::Batch, 64 << 10)).unwrap();
    assert_eq!(replay.skipped_unknown_tables(), 1);
    let (got, _) = replayed(replay);
    assert_eq!(got.iter().map(|e| e.0).collect::<Vec<_>>(), vec![1, 2]);
}

/// A partition whose entry is exactly `target` bytes.
fn partition_of_entry_size(target: u64) -> Partition {
    let k = key(b"k");
    let mut value_len = target as usize;
    loop {
        let p = partition(1, &vec![7u8; value_len]);
        let size = super::segment::encode_entry(1, &k, &p).len() as u64;
        match size.cmp(&target) {
            std::cmp::Ordering::Equal => return p,
            std::cmp::Ordering::Greater => value_len -= (size - target) as usize,
            std::cmp::Ordering::Less => value_len += (target - size) as usize,
        }
    }
}

#[test]
fn the_mutation_size_limit_holds_at_n_and_fails_at_n_plus_one() {
    let fs = SimFs::new();
    let (log, _) = open(
        &fs,
        config(
            SyncMode::Periodic {
                period: DEFAULT_SYNC_PERIOD,
            },
            DEFAULT_SEGMENT_SIZE_BYTES,
        ),
    )
    .unwrap();
    assert_eq!(
        CommitLogConfig::default().max_mutation_bytes(),
        MAX_MUTATION_BYTES
    );
    // The check a Paxos coordinator makes first agrees with append.
    let segments = log.segments_count();
    log.check_size(1, &key(b"k"), &partition_of_entry_size(MAX_MUTATION_BYTES))
        .unwrap();
    let checked = log
        .check_size(
            1,
            &key(b"k"),
            &partition_of_entry_size(MAX_MUTATION_BYTES + 1),
        )
        .unwrap_err();
    assert!(
        checked.to_string().contains("larger than the maximum"),
        "{checked}"
    );
    assert_eq!(log.segments_count(), segments, "a check writes nothing");
    log.append(1, &key(b"k"), &partition_of_entry_size(MAX_MUTATION_BYTES))
        .unwrap();
    let err = log
        .append(
            1,
            &key(b"k"),
            &partition_of_entry_size(MAX_MUTATION_BYTES + 1),
        )
        .unwrap_err();
    assert!(
        matches!(err, Error::Io { ref source, .. } if source.kind() == std::io::ErrorKind::InvalidInput)
    );
    // A second entry of the maximum size does not fit: it starts a segment.
    let pos = log
        .append(1, &key(b"k"), &partition_of_entry_size(MAX_MUTATION_BYTES))
        .unwrap();
    assert_eq!(pos.offset, SEGMENT_HEADER_BYTES);
    assert_eq!(log.segments_count(), 2);
}

#[test]
fn invalid_configurations_are_refused() {
    let fs = SimFs::new();
    assert!(open(&fs, config(SyncMode::Batch, MIN_SEGMENT_SIZE_BYTES - 1)).is_err());
    assert!(open(&fs, config(SyncMode::Batch, MAX_SEGMENT_SIZE_BYTES + 1)).is_err());
    assert!(open(
        &fs,
        config(
            SyncMode::Periodic {
                period: Duration::ZERO
            },
            1 << 20
        )
    )
    .is_err());
}

#[test]
fn segments_are_released_once_every_table_is_flushed() {
    let fs = SimFs::new();
    let (log, _) = open(&fs, config(SyncMode::Batch, 4096)).unwrap();
    let value = [1u8; 500];
    for i in 0..20 {
        log.append(1 + (i % 2), &key(b"k"), &partition(1, &value))
            .unwrap();
    }
    let n = log.segments_count();
    assert!(n >= 3, "{n}");
    assert!(log.total_bytes() > 20 * 500);
    let mid = log.current_position();
    log.mark_flushed(1, mid).unwrap();
    assert_eq!(log.segments_count(), n, "table 2 still holds every segment");
    log.mark_flushed(2, mid).unwrap();
    assert_eq!(log.segments_count(), 1, "the active segment stays");
    // Newer writes keep their segment; a dropped table is forgotten.
    log.append(3, &key(b"k"), &partition(1, &value)).unwrap();
    for _ in 0..10 {
        log.append(1, &key(b"k"), &partition(1, &value)).unwrap();
    }
    log.mark_flushed(1, Position::MAX).unwrap();
    assert!(log.segments_count() >= 2);
    log.mark_flushed(3, Position::MAX).unwrap();
    assert_eq!(log.segments_count(), 1);
    let files = fs.list(&dir()).unwrap();
    assert_eq!(files, log.segment_paths());
    // total_bytes (kept without the lock) matches the files once written.
    log.sync().unwrap();
    let on_disk: u64 = files
        .iter()
        .map(|p| fs.read_all(p).unwrap().len() as u64)
        .sum();
    assert_eq!(log.total_bytes(), on_disk);
}

#[test]
fn bytes_written_counts_what_reached_the_segment_files() {
    let fs = SimFs::new();
    let (log, _) = open(&fs, config(SyncMode::Batch, 4096)).unwrap();
    assert_eq!(log.bytes_written(), 0);
    let value = [1u8; 500];
    for _ in 0..12 {
        log.append(1, &key(b"k"), &partition(1, &value)).unwrap();
    }
    log.sync().unwrap();
    // Nothing released yet: the files hold exactly what was written.
    let on_disk: u64 = log
        .segment_paths()
        .iter()
        .map(|p| fs.read_all(p).unwrap().len() as u64)
        .sum();
    assert!(log.segments_count() >= 2);
    assert_eq!(log.bytes_written(), on_disk);
    // Released segments do not take back what was written.
    log.mark_flushed(1, Position::MAX).unwrap();
    assert_eq!(log.bytes_written(), on_disk);
}

#[test]
fn replayed_segments_are_kept_until_their_tables_flush() {
    let fs = SimFs::new();
    let (log, _) = open(&fs, config(SyncMode::Batch, 4096)).unwrap();
    for i in 0..12 {
        log.append(1 + (i % 2), &key(b"k"), &partition(1, &[0u8; 500]))
            .unwrap();
    }
    log.append(50, &key(b"k"), &partition(1, b"dropped table"))
        .unwrap();
    drop(log);
    let fs = fs.kill();
    let (log, replay) = open(&fs, config(SyncMode::Batch, 4096)).unwrap();
    let old = replay.segments_found();
    assert_eq!(replay.count(), 12);
    assert_eq!(log.segments_count(), old);
    let now = log.current_position();
    log.mark_flushed(1, now).unwrap();
    log.mark_flushed(2, now).unwrap();
    assert_eq!(log.segments_count(), 0);
    let (_, replay) = open(&fs.power_loss(), config(SyncMode::Batch, 4096)).unwrap();
    assert_eq!(replay.segments_found(), 0);
}

/// The bytes of the only segment after writing `n` entries, and where
/// each entry starts.
fn segment_image(n: usize) -> (Vec<u8>, Vec<u64>, PathBuf) {
    let fs = SimFs::new();
    let (log, _) = open(&fs, config(SyncMode::Batch, 1 << 20)).unwrap();
    let starts: Vec<u64> = (0..n)
        .map(|i| {
            log.append(1, &key(&[i as u8]), &partition(2, &[i as u8; 30]))
                .unwrap()
                .offset
        })
        .collect();
    let path = log.segment_paths()[0].clone();
    drop(log);
    (fs.read_all(&path).unwrap(), starts, path)
}

fn fs_with(path: &Path, bytes: &[u8]) -> SimFs {
    let fs = SimFs::new();
    fs.create_dir_all(&dir()).unwrap();
    let mut f = fs.create(path).unwrap();
    f.write_all(bytes).unwrap();
    f.sync().unwrap();
    fs.sync_dir(&dir()).unwrap();
    fs
}

#[test]
fn a_torn_tail_at_every_offset_replays_every_whole_entry() {
    let (image, starts, path) = segment_image(5);
    let last = *starts.last().unwrap() as usize;
    for cut in last..image.len() {
        let fs = fs_with(&path, &image[..cut]);
        let strict = CommitLogConfig {
            strict_replay: true,
            ..config(SyncMode::Batch, 1 << 20)
        };
        let (_, replay) = open(&fs, strict).unwrap();
        let warnings = replay.warnings().to_vec();
        let (got, _) = replayed(replay);
        assert_eq!(got.len(), 4, "cut at {cut}");
        // Zero bytes where an entry should start read as the unwritten
        // rest of a preallocated segment: a clean end.
        if image[last..cut].iter().all(|b| *b == 0) {
            assert!(warnings.is_empty(), "cut at {cut}: {warnings:?}");
        } else {
            assert_eq!(warnings.len(), 1, "cut at {cut}");
            assert_eq!(
                (warnings[0].kind, warnings[0].offset),
                (WarningKind::TornTail, last as u64)
            );
        }
    }
    // A segment cut inside its header holds nothing.
    let fs = fs_with(&path, &image[..7]);
    let (_, replay) = open(&fs, config(SyncMode::Batch, 1 << 20)).unwrap();
    assert_eq!(replay.warnings()[0].kind, WarningKind::TornTail);
}

#[test]
fn a_flipped_byte_in_the_middle_is_reported_as_corruption() {
    let (image, starts, path) = segment_image(5);
    let victim = starts[2];
    for at in [victim, victim + 5, victim + 20, starts[3] - 1] {
        let mut bad = image.clone();
        bad[at as usize] ^= 0x10;
        let fs = fs_with(&path, &bad);
        let (_, replay) = open(&fs, config(SyncMode::Batch, 1 << 20)).unwrap();
        let warnings = replay.warnings().to_vec();
        assert_eq!(replayed(replay).0.len(), 2, "flip at {at}");
        assert_eq!(warnings.len(), 1);
        assert_eq!(
            (warnings[0].kind, warnings[0].offset),
            (WarningKind::Corruption, victim)
        );
        assert_eq!(warnings[0].file, path);
        let strict = CommitLogConfig {
            strict_replay: true,
            ..config(SyncMode::Batch, 1 << 20)
        };
        match open(&fs, strict) {
            Err(Error::Corruption { file, offset, .. }) => {
                assert_eq!((file, offset), (path.clone(), victim))
            }
            other => panic!("expected corruption, got {:?}", other.map(|_| ())),
        }
    }
    // A damaged header: the whole segment is reported.
    let mut bad = image.clone();
    bad[9] ^= 1;
    let fs = fs_with(&path, &bad);
    let (_, replay) = open(&fs, config(SyncMode::Batch, 1 << 20)).unwrap();
    assert_eq!(replay.warnings()[0].kind, WarningKind::Corruption);
    assert_eq!(replay.count(), 0);
}

#[test]
fn a_full_disk_fails_appends_and_loses_nothing_acknowledged() {
    for partial in [false, true] {
        for sync in [
            SyncMode::Batch,
            SyncMode::Group {
                window: Duration::from_millis(1),
            },
        ] {
            let fs = SimFs::new();
            let (log, _) = open(&fs, config(sync, 1 << 20)).unwrap();
            let mut acked = Vec::new();
            for i in 0..10u8 {
                acked.push(log.append(1, &key(&[i]), &partition(1, &[i; 20])).unwrap());
            }
            if partial {
                fs.fail_writes_after(30);
            } else {
                fs.set_disk_full(true);
            }
            let err = log
                .append(1, &key(b"full"), &partition(1, b"x"))
                .unwrap_err();
            assert!(
                matches!(err, Error::Io { ref source, .. } if source.kind() == std::io::ErrorKind::StorageFull)
            );
            assert!(log.append(1, &key(b"full"), &partition(1, b"x")).is_err());
            fs.set_disk_full(false);
            for i in 10..15u8 {
                acked.push(log.append(1, &key(&[i]), &partition(1, &[i; 20])).unwrap());
            }
            drop(log);
            let (_, replay) = open(&fs.power_loss(), config(sync, 1 << 20)).unwrap();
            // Failed writes leave torn tails (and empty segments), nothing worse.
            assert!(replay
                .warnings()
                .iter()
                .all(|w| w.kind == WarningKind::TornTail));
            assert!(!partial || !replay.warnings().is_empty());
            let positions: Vec<Position> = replay.map(|e| e.position).collect();
            assert_eq!(positions, acked, "partial {partial} {sync:?}");
        }
    }
}

#[test]
fn fuzz_replay_survives_damaged_images() {
    let (image, _, _) = segment_image(3);
    fuzz_replay(&image);
    fuzz_replay(&[]);
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    for _ in 0..300 {
        let mut bad = image.clone();
        for _ in 0..rng.gen_range(1..4) {
            let i = rng.gen_range(0..bad.len());
            bad[i] = rng.gen();
        }
        bad.truncate(rng.gen_range(0..=bad.len()));
        fuzz_replay(&bad);
    }
}

proptest! {
    #[test]
    fn entries_round_trip(table in 1u128..10, k in proptest::collection::vec(any::<u8>(), 0..40),
                          rows in 0i32..5, value in proptest::collection::vec(any::<u8>(), 0..200)) {
        let key = key(&k);
        let p = partition(rows, &value);
        let mut image = super::segment::encode_header(3);
        image.extend(super::segment::encode_entry(table, &key, &p));
        let mut pos = SEGMENT_HEADER_BYTES as usize;
        let (_, payload) = super::segment::next_entry(&image, &mut pos).unwrap().unwrap();
        let (t, back_key, mut r) = super::segment::decode_payload_head(payload).unwrap();
        let back = crate::encoding::decode_partition(&mut r, &comparator()).unwrap();
        prop_assert_eq!((t, back_key, back), (table, key, p));
        prop_assert!(super::segment::next_entry(&image, &mut pos).unwrap().is_none());
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        fuzz_replay(&bytes);
        let mut with_header = super::segment::encode_header(1);
        with_header.extend(bytes);
        fuzz_replay(&with_header);
    }
}
