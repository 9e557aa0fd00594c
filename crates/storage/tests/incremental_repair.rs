//! Incremental repair's part in storage (`engine_repair`): preparing a
//! session splits the unrepaired data of its ranges off into pending
//! sstables without changing what any read returns, the session's view
//! reads exactly those, finalizing marks them repaired (or unrepaired
//! again), compaction keeps repaired and unrepaired apart, and a restart
//! forgets sessions that had not ended.

mod common;

use bytes::Bytes;
use std::sync::Arc;
use varve_storage::engine_repair::RepairMark;
use varve_storage::fs_sim::SimFs;
use varve_storage::*;
use varve_types::data::TokenBound;

const TABLE: TableId = 0x72;
const NOW: i32 = 1_700_000_000;
const SESSION: u128 = 0x5e55_1011;

use common::{int_comparator as cmp, int_row as row};

fn open(fs: &Arc<SimFs>) -> Storage {
    let options = common::options_on(fs.clone(), Clock::system());
    Storage::open(options, vec![common::table(TABLE, cmp())]).unwrap()
}

/// Writes keys `from..to` and flushes them into one sstable.
fn write_sstable(engine: &Engine, from: u32, to: u32) -> Vec<PartitionKey> {
    let keys: Vec<PartitionKey> = (from..to)
        .map(|i| PartitionKey::new(Bytes::from(format!("k{i}"))))
        .collect();
    for (i, k) in (from..to).zip(&keys) {
        engine.apply(TABLE, k, row(i)).unwrap();
    }
    engine.flush(TABLE).unwrap();
    keys
}

fn pending_keys(engine: &Engine, session: u128) -> Vec<PartitionKey> {
    let view = engine.pending_view(TABLE, session).unwrap();
    view.scan_keys(&TokenBound::Unbounded, &TokenBound::Unbounded, 10_000)
        .unwrap()
}

fn readable(engine: &Engine, keys: &[PartitionKey]) -> usize {
    let all = [Slice::all(&cmp())];
    keys.iter()
        .filter(|k| engine.read_partition(TABLE, k, &all).unwrap().is_some())
        .count()
}

#[test]
fn preparing_splits_the_ranges_off_and_every_read_answers_as_before() {
    let fs = Arc::new(SimFs::new());
    let storage = open(&fs);
    let engine = storage.engine();
    let mut keys = write_sstable(&engine, 0, 200);
    keys.extend(write_sstable(&engine, 200, 400));
    // The upper half of the ring, and a range that wraps.
    let ranges = [(0, i64::MAX / 2), (i64::MAX - 1000, i64::MIN + 1000)];
    let inside = |k: &PartitionKey| varve_storage::engine_repair::token_in_ranges(&ranges, k.token);
    let done = engine
        .prepare_incremental(TABLE, &ranges, SESSION, NOW)
        .unwrap();
    assert_eq!(done.split, 2, "{done:?}");
    assert_eq!(readable(&engine, &keys), 400, "a read lost a key");
    let mut want: Vec<PartitionKey> = keys.iter().filter(|k| inside(k)).cloned().collect();
    want.sort();
    assert!(want.len() > 50 && want.len() < 350, "{} inside", want.len());
    assert_eq!(pending_keys(&engine, SESSION), want);
    let marks = engine.repair_marks(TABLE).unwrap();
    assert_eq!(
        marks.values().collect::<Vec<_>>(),
        vec![&RepairMark::Pending { session: SESSION }; done.pending.len()]
    );
    // A second session finds nothing unrepaired in those ranges.
    let again = engine.prepare_incremental(TABLE, &ranges, 7, NOW).unwrap();
    assert!(again.pending.is_empty(), "{again:?}");

    let held = engine
        .finalize_incremental(TABLE, SESSION, Some(1_700_000_000_123))
        .unwrap();
    assert_eq!(held, done.pending.len());
    let marks = engine.repair_marks(TABLE).unwrap();
    assert!(marks.values().all(|m| *m
        == RepairMark::Repaired {
            at_ms: 1_700_000_000_123
        }));
    assert!(pending_keys(&engine, SESSION).is_empty());
    assert_eq!(readable(&engine, &keys), 400);
}

#[test]
fn an_sstable_inside_the_ranges_is_marked_without_a_rewrite_and_a_failed_session_gives_it_back() {
    let fs = Arc::new(SimFs::new());
    let storage = open(&fs);
    let engine = storage.engine();
    let keys = write_sstable(&engine, 0, 50);
    let before = engine.table_generations(TABLE).unwrap();
    let whole_ring = [(0, 0)];
    let done = engine
        .prepare_incremental(TABLE, &whole_ring, SESSION, NOW)
        .unwrap();
    assert_eq!((done.split, done.pending.clone()), (0, before.clone()));
    assert_eq!(pending_keys(&engine, SESSION).len(), keys.len());
    // Data written after the session began is not part of it.
    write_sstable(&engine, 50, 60);
    assert_eq!(pending_keys(&engine, SESSION).len(), keys.len());
    assert_eq!(
        engine.finalize_incremental(TABLE, SESSION, None).unwrap(),
        1
    );
    assert!(engine.repair_marks(TABLE).unwrap().is_empty());
}

#[test]
fn compaction_keeps_repaired_and_unrepaired_sstables_apart() {
    let fs = Arc::new(SimFs::new());
    let storage = open(&fs);
    let engine = storage.engine();
    for round in 0..4u32 {
        write_sstable(&engine, round * 10, round * 10 + 10);
        let session = u128::from(round) + 1;
        engine
            .prepare_incremental(TABLE, &[(0, 0)], session, NOW)
            .unwrap();
        engine
            .finalize_incremental(TABLE, session, Some(1000 + i64::from(round)))
            .unwrap();
    }
    for round in 4..8u32 {
        write_sstable(&engine, round * 10, round * 10 + 10);
    }
    assert_eq!(engine.table_generations(TABLE).unwrap().len(), 8);
    let mut desc = common::table(TABLE, cmp());
    desc.compaction.common.enabled = true;
    engine.update_table(desc).unwrap();
    // Background compaction may take some of the tasks: wait for the
    // strategy to have nothing left (two sstables if the groups stay
    // apart, one if they were mixed).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while engine.compact_once(TABLE, NOW).unwrap()
        || engine.table_generations(TABLE).unwrap().len() > 2
            && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let live = engine.table_generations(TABLE).unwrap();
    let marks = engine.repair_marks(TABLE).unwrap();
    assert_eq!(
        live.len(),
        2,
        "one repaired and one unrepaired sstable: {marks:?}"
    );
    assert_eq!(
        marks.values().collect::<Vec<_>>(),
        vec![&RepairMark::Repaired { at_ms: 1000 }],
        "the repaired output keeps the oldest repair time"
    );
}

#[test]
fn a_restart_forgets_sessions_that_had_not_ended_and_keeps_repaired_marks() {
    let fs = Arc::new(SimFs::new());
    {
        let storage = open(&fs);
        let engine = storage.engine();
        write_sstable(&engine, 0, 20);
        engine
            .prepare_incremental(TABLE, &[(0, 0)], 1, NOW)
            .unwrap();
        engine.finalize_incremental(TABLE, 1, Some(5)).unwrap();
        write_sstable(&engine, 20, 40);
        engine
            .prepare_incremental(TABLE, &[(0, 0)], 2, NOW)
            .unwrap();
        assert_eq!(engine.repair_marks(TABLE).unwrap().len(), 2);
        engine.drain().unwrap();
        drop(engine);
        drop(storage);
    }
    let storage = open(&fs);
    let engine = storage.engine();
    let marks = engine.repair_marks(TABLE).unwrap();
    assert_eq!(
        marks.values().collect::<Vec<_>>(),
        vec![&RepairMark::Repaired { at_ms: 5 }]
    );
    assert!(pending_keys(&engine, 2).is_empty());
}

#[test]
fn an_sstable_over_adjacent_ranges_is_marked_whole_without_a_rewrite() {
    let fs = Arc::new(SimFs::new());
    let storage = open(&fs);
    let engine = storage.engine();
    let keys = write_sstable(&engine, 0, 300);
    let before = engine.table_generations(TABLE).unwrap();
    // A node that replicates every range of a three-node ring at RF 3:
    // its ranges, taken together, are the whole ring.
    let third = i64::MAX / 3;
    let ranges = [
        (-third, third),
        (third, i64::MIN + 5),
        (i64::MIN + 5, -third),
    ];
    let done = engine
        .prepare_incremental(TABLE, &ranges, SESSION, NOW)
        .unwrap();
    assert_eq!((done.split, done.pending), (0, before.clone()));
    assert_eq!(
        engine.table_generations(TABLE).unwrap(),
        before,
        "rewritten"
    );
    assert_eq!(pending_keys(&engine, SESSION).len(), keys.len());
}

#[test]
fn on_a_real_disk_preparing_and_finalizing_wait_only_where_they_may() {
    use varve_storage::io_mode::NonBlocking;
    let dir = std::env::temp_dir().join(format!(
        "varve-incremental-repair-{}-{}",
        std::process::id(),
        varve_types::time::now_micros()
    ));
    let mut o = common::options(Clock::system());
    o.fs = Arc::new(varve_storage::fs::RealFs::default());
    o.data_dir = dir.join("data");
    o.commitlog_dir = dir.join("commitlog");
    let storage = Storage::open(o, vec![common::table(TABLE, cmp())]).unwrap();
    let engine = storage.engine();
    write_sstable(&engine, 0, 20);
    let whole_ring = [(0, 0)];
    {
        let _scope = NonBlocking::enter();
        let err = engine
            .prepare_incremental(TABLE, &whole_ring, SESSION, NOW)
            .unwrap_err();
        assert!(matches!(err, Error::WouldBlock { .. }), "{err}");
        assert!(engine.repair_marks(TABLE).unwrap().is_empty(), "changed");
        // Nothing held: nothing to write, so nothing to wait for.
        assert_eq!(
            engine.finalize_incremental(TABLE, SESSION, None).unwrap(),
            0
        );
    }
    let done = engine
        .prepare_incremental(TABLE, &whole_ring, SESSION, NOW)
        .unwrap();
    assert_eq!(done.pending.len(), 1);
    {
        let _scope = NonBlocking::enter();
        let err = engine
            .finalize_incremental(TABLE, SESSION, Some(5))
            .unwrap_err();
        assert!(matches!(err, Error::WouldBlock { .. }), "{err}");
    }
    assert_eq!(
        engine
            .finalize_incremental(TABLE, SESSION, Some(5))
            .unwrap(),
        1
    );
    drop(engine);
    drop(storage);
    let _ = std::fs::remove_dir_all(&dir);
}
