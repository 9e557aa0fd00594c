//! Periodic mode: an append's bytes are with the kernel ("written, not yet
//! synced") before `append` returns, written by the appending threads
//! themselves (the writer thread is not woken), so a process crash loses
//! nothing acknowledged while a power loss may lose the unsynced tail. A
//! failed write fails the append that hit it, and the log recovers.

use super::segment::encode_entry;
use super::tests::{config, dir, key, open, partition, replayed};
use super::*;
use crate::fs::RealFs;
use crate::fs_sim::SimFs;
use bytes::Bytes;
use std::sync::atomic::Ordering;

const THREADS: usize = 4;
const PER_THREAD: usize = 300;
/// Longer than any test: the timed sync never runs.
const NEVER: Duration = Duration::from_secs(3600);

fn periodic(period: Duration, segment_size_bytes: u64) -> CommitLogConfig {
    config(SyncMode::Periodic { period }, segment_size_bytes)
}

/// The entry thread `t` appends as its `i`-th write.
fn entry(t: usize, i: usize) -> (PartitionKey, Partition) {
    let value = vec![t as u8; 10 + (i * 7 + t * 13) % 90];
    (
        key(&[t as u8, (i >> 8) as u8, i as u8]),
        partition(1, &value),
    )
}

/// Appends from `THREADS` threads; after each append, `seen(position,
/// entry length)` must find the entry in the file. Returns every
/// acknowledged (position, key), in position order.
fn append_concurrently(
    log: &Arc<CommitLog>,
    seen: impl Fn(Position, u64) -> bool + Send + Sync + 'static,
) -> Vec<(Position, PartitionKey)> {
    let seen = Arc::new(seen);
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (log, seen) = (log.clone(), seen.clone());
            std::thread::spawn(move || {
                let mut acked = Vec::new();
                for i in 0..PER_THREAD {
                    let (k, p) = entry(t, i);
                    let len = encode_entry(1, &k, &p).len() as u64;
                    let pos = log.append(1, &k, &p).unwrap();
                    assert!(
                        seen(pos, len),
                        "thread {t}: entry {i} at {pos} not in the file"
                    );
                    acked.push((pos, k));
                }
                acked
            })
        })
        .collect();
    let mut all: Vec<(Position, PartitionKey)> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    all.sort_by_key(|(pos, _)| *pos);
    all
}

#[test]
fn periodic_appends_are_in_the_file_when_they_return_and_survive_a_kill() {
    let fs = SimFs::new();
    // Small segments: appenders also cross into new segments.
    let (log, _) = open(&fs, periodic(NEVER, 64 << 10)).unwrap();
    let log = Arc::new(log);
    let files = fs.clone();
    let acked = append_concurrently(&log, move |pos, len| {
        let path = dir().join(segment_file_name(pos.segment_id));
        files
            .lengths(&path)
            .is_some_and(|(now, _)| now >= pos.offset + len)
    });
    assert!(log.segments_count() > 2);
    // The writer thread never ran: the appenders wrote everything.
    assert_eq!(log.shared.writer_rounds.load(Ordering::Relaxed), 0);
    // The active segment's bytes are written, not synced.
    let active = log.segment_paths().pop().unwrap();
    let (now, durable) = fs.lengths(&active).unwrap();
    assert!(durable < now, "{durable} {now}");

    // A process crash keeps every acknowledged entry, in position order.
    let killed = fs.kill();
    let (reopened, replay) = open(&killed, periodic(NEVER, 64 << 10)).unwrap();
    assert_eq!(replay.warnings(), &[]);
    let (got, positions) = replayed(replay);
    assert_eq!(positions, acked.iter().map(|a| a.0).collect::<Vec<_>>());
    let keys: Vec<&PartitionKey> = got.iter().map(|e| &e.1).collect();
    assert_eq!(keys, acked.iter().map(|a| &a.1).collect::<Vec<_>>());
    drop(reopened);
    drop(log);

    // A power loss drops the unsynced tail: a strict prefix remains.
    let (_, replay) = open(&killed.power_loss(), periodic(NEVER, 64 << 10)).unwrap();
    let (_, positions) = replayed(replay);
    assert!(positions.len() < acked.len());
    assert!(positions.iter().zip(&acked).all(|(p, a)| *p == a.0));
}

#[test]
fn periodic_appends_are_in_the_real_file_when_they_return() {
    let base = std::env::temp_dir().join(format!("varve-clog-periodic-{}", std::process::id()));
    let (live, copy) = (base.join("live"), base.join("copy"));
    let _ = std::fs::remove_dir_all(&base);
    let (log, _) = CommitLog::open(
        Arc::new(RealFs::default()),
        &live,
        periodic(NEVER, 256 << 10),
        &super::tests::known,
    )
    .unwrap();
    let log = Arc::new(log);
    let segments = live.clone();
    let acked = append_concurrently(&log, move |pos, len| {
        let path = segments.join(segment_file_name(pos.segment_id));
        std::fs::metadata(path).is_ok_and(|m| m.len() >= pos.offset + len)
    });
    assert_eq!(log.shared.writer_rounds.load(Ordering::Relaxed), 0);
    // Another process's view, before any fsync: copy the files and replay.
    std::fs::create_dir_all(&copy).unwrap();
    for path in log.segment_paths() {
        std::fs::copy(&path, copy.join(path.file_name().unwrap())).unwrap();
    }
    let (_, replay) = CommitLog::open(
        Arc::new(RealFs::default()),
        &copy,
        periodic(NEVER, 256 << 10),
        &super::tests::known,
    )
    .unwrap();
    assert_eq!(replay.warnings(), &[]);
    let (got, positions) = replayed(replay);
    assert_eq!(positions, acked.iter().map(|a| a.0).collect::<Vec<_>>());
    assert!(got.iter().zip(&acked).all(|(g, a)| g.1 == a.1));
    drop(log);
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn the_periodic_sync_makes_written_appends_durable() {
    let fs = SimFs::new();
    let (log, _) = open(&fs, periodic(Duration::from_millis(5), 1 << 20)).unwrap();
    let pos = log.append(1, &key(b"a"), &partition(1, b"v")).unwrap();
    let path = log.segment_paths()[0].clone();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while fs
        .lengths(&path)
        .is_none_or(|(now, durable)| durable < now || durable <= pos.offset)
    {
        assert!(std::time::Instant::now() < deadline, "never synced");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn is_storage_full(r: Result<Position>) -> bool {
    matches!(r, Err(Error::Io { ref source, .. }) if source.kind() == std::io::ErrorKind::StorageFull)
}

#[test]
fn a_full_disk_fails_the_periodic_append_that_hits_it_then_recovers() {
    for partial in [false, true] {
        let fs = SimFs::new();
        let (log, _) = open(&fs, periodic(NEVER, 1 << 20)).unwrap();
        let a = log.append(1, &key(b"a"), &partition(1, b"v")).unwrap();
        if partial {
            fs.fail_writes_after(30);
        } else {
            fs.set_disk_full(true);
        }
        // The appender's own write fails: the append is not acknowledged.
        assert!(is_storage_full(log.append(
            1,
            &key(b"b"),
            &partition(1, &[2; 50])
        )));
        // Nothing acknowledged was lost ("a" is synced when its segment is
        // abandoned).
        log.sync().unwrap();
        // While failing, appends wait for the writer thread.
        assert!(is_storage_full(log.append(
            1,
            &key(b"c"),
            &partition(1, b"v")
        )));
        fs.set_disk_full(false);
        let d = log.append(1, &key(b"d"), &partition(1, b"v")).unwrap();
        // Healthy again: the appender writes, the writer thread sleeps.
        let rounds = log.shared.writer_rounds.load(Ordering::Relaxed);
        let e = log.append(1, &key(b"e"), &partition(1, b"v")).unwrap();
        assert_eq!(log.shared.writer_rounds.load(Ordering::Relaxed), rounds);
        let (_, replay) = open(&fs.kill(), periodic(NEVER, 1 << 20)).unwrap();
        // Failed writes leave torn tails (and an empty segment), nothing worse.
        assert!(replay
            .warnings()
            .iter()
            .all(|w| w.kind == WarningKind::TornTail));
        assert!(!partial || !replay.warnings().is_empty());
        let (got, positions) = replayed(replay);
        assert_eq!(positions, vec![a, d, e], "partial {partial}");
        let keys: Vec<Bytes> = got.into_iter().map(|g| g.1.key).collect();
        assert_eq!(keys, [&b"a"[..], b"d", b"e"], "partial {partial}");
    }
}

#[test]
fn acknowledged_bytes_that_cannot_be_synced_are_reported_by_sync() {
    // The timed or requested fsync fails.
    let fs = SimFs::new();
    let (log, _) = open(&fs, periodic(NEVER, 1 << 20)).unwrap();
    log.append(1, &key(b"a"), &partition(1, b"v")).unwrap();
    let _restarted = fs.kill(); // every call through `fs` now fails
    assert!(log.sync().is_err());
    assert!(log.append(1, &key(b"b"), &partition(1, b"v")).is_err());

    // A write fails and the bytes before it cannot be synced either: the
    // failed append reports itself, the next sync reports the lost ones.
    let fs = SimFs::new();
    let (log, _) = open(&fs, periodic(NEVER, 1 << 20)).unwrap();
    log.append(1, &key(b"a"), &partition(1, b"v")).unwrap();
    let _restarted = fs.kill();
    assert!(log.append(1, &key(b"b"), &partition(1, b"v")).is_err());
    assert!(log.sync().is_err());
}

#[test]
fn periodic_mode_syncs_early_once_appends_pile_up_write_behind_bytes() {
    use super::files::WRITE_BEHIND_BYTES;
    let fs = SimFs::new();
    let (log, _) = open(&fs, periodic(NEVER, 64 << 20)).unwrap();
    let value = vec![7u8; 4096];
    let entry_len = encode_entry(1, &key(&0u64.to_be_bytes()), &partition(1, &value)).len() as u64;
    let append = |i: u64| {
        let k = key(&i.to_be_bytes());
        log.append(1, &k, &partition(1, &value)).unwrap()
    };
    // Just under the threshold: the writer thread stays asleep.
    let below = (WRITE_BEHIND_BYTES - SEGMENT_HEADER_BYTES) / entry_len - 1;
    for i in 0..below {
        append(i);
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(log.shared.writer_rounds.load(Ordering::Relaxed), 0);
    let path = log.segment_paths().pop().unwrap();
    assert_eq!(fs.lengths(&path).unwrap().1, 0, "nothing synced yet");
    // Past it: the writer thread fsyncs without waiting for the period.
    let last = append(below);
    let more = append(below + 1);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while fs.lengths(&path).unwrap().1 < last.offset {
        assert!(std::time::Instant::now() < deadline, "no early sync");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(log.shared.writer_rounds.load(Ordering::Relaxed), 1);
    assert!(more.offset > last.offset);
}

/// Runs `f` to completion on this thread (a waker that unparks it).
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(out) => return out,
            std::task::Poll::Pending => std::thread::park(),
        }
    }
}

/// A sync awaited by a task: pending until the writer thread's round,
/// then ready with everything appended before the request durable.
#[test]
fn a_sync_awaited_by_a_task_is_ready_once_the_appends_before_it_are_durable() {
    let fs = SimFs::new();
    let (log, _) = open(&fs, periodic(NEVER, 1 << 20)).unwrap();
    log.append(1, &key(b"a"), &partition(1, b"v")).unwrap();
    log.append(1, &key(b"b"), &partition(1, b"v")).unwrap();
    let path = log.segment_paths().pop().unwrap();
    let (written, durable) = fs.lengths(&path).unwrap();
    assert!(durable < written, "nothing synced yet");
    block_on(log.sync_later().unwrap()).unwrap();
    let (written_after, durable_after) = fs.lengths(&path).unwrap();
    assert_eq!(durable_after, written_after);
    assert_eq!(written_after, written);
    // A power loss keeps both.
    let (_, replay) = open(&fs.power_loss(), periodic(NEVER, 1 << 20)).unwrap();
    assert_eq!(replayed(replay).1.len(), 2);
}

/// A sync that cannot be done is reported to the task that awaits it.
#[test]
fn a_sync_awaited_by_a_task_reports_a_failing_disk() {
    let fs = SimFs::new();
    let (log, _) = open(&fs, periodic(NEVER, 1 << 20)).unwrap();
    log.append(1, &key(b"a"), &partition(1, b"v")).unwrap();
    let _restarted = fs.kill(); // every call through `fs` now fails
    assert!(block_on(log.sync_later().unwrap()).is_err());
    log.shutdown().unwrap_or(());
    assert!(log.sync_later().is_err(), "after shutdown");
}
