//! Append throughput on the real file system, per sync mode. Ignored by
//! default (it measures, it does not check); run it with
//! `cargo test -p varve-storage commitlog::throughput -- --ignored --nocapture`.

use super::tests::{key, partition};
use super::*;
use crate::fs::RealFs;
use std::time::Instant;

/// About the cassandra-stress default row: five 34-byte cells.
const VALUE_BYTES: usize = 34;

fn measure(sync: SyncMode, threads: usize, per_thread: usize, preallocate: bool) -> f64 {
    let dir = std::env::temp_dir().join(format!("varve-clog-bench-{}", std::process::id()));
    let config = CommitLogConfig {
        sync,
        preallocate,
        ..CommitLogConfig::default()
    };
    let (log, _) =
        CommitLog::open(Arc::new(RealFs::default()), &dir, config, &|_| None).expect("open");
    // The first segment too begins as a spare, and the next spare is made
    // before the clock starts, as on a node that has run for a moment.
    let spare_ready = |log: &CommitLog| {
        while preallocate && !log.shared.spares.is_ready() {
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    spare_ready(&log);
    log.append(1, &key(b"first"), &partition(1, b"v"))
        .expect("append");
    spare_ready(&log);
    let log = Arc::new(log);
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                let p = partition(5, &[t as u8; VALUE_BYTES]);
                for i in 0..per_thread {
                    log.append(1, &key(&(i as u64).to_be_bytes()), &p)
                        .expect("append");
                }
            })
        })
        .collect();
    for t in handles {
        t.join().expect("appender");
    }
    log.shutdown().expect("shutdown");
    let rate = (threads * per_thread) as f64 / start.elapsed().as_secs_f64();
    drop(log);
    let _ = std::fs::remove_dir_all(&dir);
    rate
}

#[test]
#[ignore]
fn append_throughput_per_sync_mode() {
    let group = SyncMode::Group {
        window: DEFAULT_GROUP_WINDOW,
    };
    let periodic = SyncMode::Periodic {
        period: DEFAULT_SYNC_PERIOD,
    };
    let runs = [
        (SyncMode::Batch, 8, 1500),
        (SyncMode::Batch, 64, 300),
        (group, 8, 200),
        (group, 64, 100),
        (periodic, 8, 20_000),
        (periodic, 64, 2_500),
    ];
    for (sync, threads, per_thread) in runs {
        for preallocate in [false, true] {
            let rate = measure(sync, threads, per_thread, preallocate);
            println!(
                "{sync:?}: {threads} threads, preallocated {preallocate}: {rate:.0} appends/s"
            );
        }
    }
}
