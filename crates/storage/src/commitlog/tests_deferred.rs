//! [`DeferredWrites`]: inside a scope, periodic appends only queue their
//! entries and `finish` writes them all; nested scopes leave the writing to
//! the outer one; a failed write fails `finish`; outside a scope and in
//! batch mode nothing changes.

use super::tests::{config, dir, key, open, partition, replayed};
use super::*;
use crate::fs_sim::SimFs;

/// Longer than any test: the timed sync never runs.
const NEVER: Duration = Duration::from_secs(3600);

fn periodic() -> CommitLogConfig {
    config(SyncMode::Periodic { period: NEVER }, 1 << 20)
}

/// Bytes of segment `id` written so far (synced or not).
fn written(fs: &SimFs, id: u64) -> u64 {
    let path = dir().join(segment_file_name(id));
    fs.lengths(&path).map_or(0, |(now, _)| now)
}

/// A periodic log holding one written entry: the log, the entry's
/// position and the bytes of its segment so far.
fn log_with_one_entry(fs: &SimFs) -> (CommitLog, Position, u64) {
    let (log, _) = open(fs, periodic()).unwrap();
    let first = log.append(1, &key(b"a"), &partition(1, b"v")).unwrap();
    let before = written(fs, first.segment_id);
    (log, first, before)
}

#[test]
fn appends_in_a_scope_reach_the_file_at_finish() {
    let fs = SimFs::new();
    let (log, first, before) = log_with_one_entry(&fs);
    let scope = DeferredWrites::begin();
    let queued: Vec<Position> = (0..10u8)
        .map(|i| {
            log.append(1, &key(&[b'k', i]), &partition(1, b"v"))
                .unwrap()
        })
        .collect();
    // Queued, not written: the file did not grow.
    assert_eq!(written(&fs, first.segment_id), before);
    scope.finish().unwrap();
    let last = *queued.last().unwrap();
    assert!(written(&fs, first.segment_id) > last.offset);
    // A process crash now keeps all eleven, in order.
    let (_, replay) = open(&fs.kill(), periodic()).unwrap();
    let (_, positions) = replayed(replay);
    let mut expected = vec![first];
    expected.extend(queued);
    assert_eq!(positions, expected);
}

#[test]
fn a_nested_scope_leaves_writing_to_the_outer_one() {
    let fs = SimFs::new();
    let (log, first, before) = log_with_one_entry(&fs);
    let outer = DeferredWrites::begin();
    let inner = DeferredWrites::begin();
    log.append(1, &key(b"b"), &partition(1, b"v")).unwrap();
    inner.finish().unwrap();
    assert_eq!(written(&fs, first.segment_id), before);
    outer.finish().unwrap();
    assert!(written(&fs, first.segment_id) > before);
}

#[test]
fn dropping_a_scope_writes_what_it_queued() {
    let fs = SimFs::new();
    let (log, first, before) = log_with_one_entry(&fs);
    {
        let _scope = DeferredWrites::begin();
        log.append(1, &key(b"b"), &partition(1, b"v")).unwrap();
        assert_eq!(written(&fs, first.segment_id), before);
    }
    assert!(written(&fs, first.segment_id) > before);
    // And appends after the scope are written by the appender again.
    let after = written(&fs, first.segment_id);
    log.append(1, &key(b"c"), &partition(1, b"v")).unwrap();
    assert!(written(&fs, first.segment_id) > after);
}

#[test]
fn a_full_disk_fails_finish_and_the_entries_are_not_in_the_log() {
    let fs = SimFs::new();
    let (log, _) = open(&fs, periodic()).unwrap();
    let a = log.append(1, &key(b"a"), &partition(1, b"v")).unwrap();
    let scope = DeferredWrites::begin();
    log.append(1, &key(b"b"), &partition(1, &[2; 50])).unwrap();
    fs.set_disk_full(true);
    let err = scope.finish().unwrap_err();
    match err {
        Error::Io { source, .. } => {
            assert_eq!(source.kind(), std::io::ErrorKind::StorageFull)
        }
        other => panic!("expected an I/O error, got {other}"),
    }
    fs.set_disk_full(false);
    let c = log.append(1, &key(b"c"), &partition(1, b"v")).unwrap();
    let (_, replay) = open(&fs.kill(), periodic()).unwrap();
    let (got, positions) = replayed(replay);
    assert_eq!(positions, vec![a, c]);
    let keys: Vec<&[u8]> = got.iter().map(|g| &g.1.key[..]).collect();
    assert_eq!(keys, [&b"a"[..], b"c"]);
}

#[test]
fn batch_mode_appends_are_synced_even_inside_a_scope() {
    let fs = SimFs::new();
    let (log, _) = open(&fs, config(SyncMode::Batch, 1 << 20)).unwrap();
    let scope = DeferredWrites::begin();
    let pos = log.append(1, &key(b"a"), &partition(1, b"v")).unwrap();
    let path = dir().join(segment_file_name(pos.segment_id));
    let (_, durable) = fs.lengths(&path).unwrap();
    assert!(
        durable > pos.offset,
        "batch append returned before its sync"
    );
    scope.finish().unwrap();
}

#[test]
fn entries_left_to_a_sync_reach_the_file_with_it() {
    let fs = SimFs::new();
    let (log, first, before) = log_with_one_entry(&fs);
    let scope = DeferredWrites::begin();
    let left = log.append(1, &key(b"b"), &partition(1, b"v")).unwrap();
    scope.leave_to_sync();
    // Neither the scope nor the append wrote it.
    assert_eq!(written(&fs, first.segment_id), before);
    log.sync().unwrap();
    let path = dir().join(segment_file_name(left.segment_id));
    let (now, durable) = fs.lengths(&path).unwrap();
    assert!(now > left.offset && durable == now, "{now} {durable}");
    let (_, replay) = open(&fs.kill(), periodic()).unwrap();
    let (_, positions) = replayed(replay);
    assert_eq!(positions, vec![first, left]);
}

#[test]
fn a_nested_scope_left_to_a_sync_leaves_writing_to_the_outer_one() {
    let fs = SimFs::new();
    let (log, first, before) = log_with_one_entry(&fs);
    let outer = DeferredWrites::begin();
    let inner = DeferredWrites::begin();
    log.append(1, &key(b"b"), &partition(1, b"v")).unwrap();
    inner.leave_to_sync();
    assert_eq!(written(&fs, first.segment_id), before);
    outer.finish().unwrap();
    assert!(written(&fs, first.segment_id) > before);
}
