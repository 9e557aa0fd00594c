//! Disk faults under the durable engine: a full disk fails writes and
//! flushes with a clear error, keeps everything acknowledged, and the engine
//! recovers once space returns.

mod common;

use bytes::Bytes;
use std::sync::Arc;
use varve_storage::commitlog::SyncMode;
use varve_storage::compaction::CompactionConfig;
use varve_storage::fs_sim::SimFs;
use varve_storage::*;
use varve_types::CqlType;

const TABLE: TableId = 3;

/// gc_grace 5 s, and background compaction on (SizeTiered defaults), so
/// faults may also meet a compaction.
fn desc() -> TableDescriptor {
    TableDescriptor {
        gc_grace_seconds: 5,
        compaction: CompactionConfig::default(),
        ..common::table(
            TABLE,
            ClusteringComparator::new(vec![(CqlType::Int, false)]),
        )
    }
}

/// Small commitlog segments (a full disk meets a segment switch soon) and
/// two compactors.
fn options(fs: Arc<SimFs>) -> StorageOptions {
    let mut o = common::options_on(fs, Clock::system());
    o.commitlog.segment_size_bytes = 64 * 1024;
    o.concurrent_compactors = 2;
    o
}

fn update(v: u8) -> Partition {
    let cmp = ClusteringComparator::new(vec![(CqlType::Int, false)]);
    let mut p = Partition::default();
    let mut row = Row::default();
    row.cells
        .insert((0, None), Cell::live(v as i64 + 1, Bytes::from(vec![v; 8])));
    p.rows.insert(
        ClusteringKey::row(vec![Bytes::copy_from_slice(&1i32.to_be_bytes())], &cmp),
        row,
    );
    p
}

fn read(s: &Storage, k: &PartitionKey) -> Option<u8> {
    let cmp = ClusteringComparator::new(vec![(CqlType::Int, false)]);
    s.read_live(TABLE, k, &[Slice::all(&cmp)], false, 0, 10)
        .unwrap()
        .and_then(|(p, _, _)| {
            p.rows
                .values()
                .next()
                .and_then(|r| r.cells.values().next())
                .map(|c| c.value[0])
        })
}

#[test]
fn full_disk_fails_writes_and_flushes_and_loses_nothing() {
    let fs = Arc::new(SimFs::new());
    let s = Storage::open(options(fs.clone()), vec![desc()]).unwrap();
    let keys: Vec<PartitionKey> = (0..20)
        .map(|i| PartitionKey::new(Bytes::from(format!("k{i}"))))
        .collect();
    for (i, k) in keys.iter().enumerate().take(10) {
        s.apply(TABLE, k, update(i as u8)).unwrap();
    }
    fs.set_disk_full(true);
    let err = s.apply(TABLE, &keys[10], update(10)).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
    assert!(
        err.to_string().contains("commitlog") || err.to_string().to_lowercase().contains("space"),
        "{err}"
    );
    let err = s.flush(TABLE).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
    // Everything acknowledged is still readable while the disk is full.
    for (i, k) in keys.iter().enumerate().take(10) {
        assert_eq!(read(&s, k), Some(i as u8));
    }
    fs.set_disk_full(false);
    for (i, k) in keys.iter().enumerate().skip(10) {
        s.apply(TABLE, k, update(i as u8)).unwrap();
    }
    s.flush(TABLE).unwrap();
    // A power loss now keeps every acknowledged write (batch mode).
    let fs = Arc::new(fs.power_loss());
    drop(s);
    let s = Storage::open(options(fs), vec![desc()]).unwrap();
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(read(&s, k), Some(i as u8), "key {i}");
    }
}

/// The server runs writes on its event loop only when they cannot wait on
/// an fsync: batch and group appends do, periodic ones do not.
#[test]
fn writes_wait_for_sync_follows_the_commitlog_mode() {
    let modes = [
        (SyncMode::Batch, true),
        (
            SyncMode::Group {
                window: std::time::Duration::from_millis(5),
            },
            true,
        ),
        (
            SyncMode::Periodic {
                period: std::time::Duration::from_secs(10),
            },
            false,
        ),
    ];
    for (mode, waits) in modes {
        let mut o = options(Arc::new(SimFs::new()));
        o.commitlog.sync = mode;
        let s = Storage::open(o, vec![desc()]).unwrap();
        assert_eq!(s.writes_wait_for_sync(), waits, "{mode:?}");
    }
    assert!(
        !Storage::new().writes_wait_for_sync(),
        "memory only: no fsync"
    );
}

/// `apply_synced` (Paxos state) is on disk when it returns even in
/// periodic mode, where a plain write after it is not.
#[test]
fn apply_synced_survives_a_power_loss_in_periodic_mode() {
    let fs = Arc::new(SimFs::new());
    let mut o = options(fs.clone());
    o.commitlog.sync = SyncMode::Periodic {
        period: std::time::Duration::from_secs(3600),
    };
    let s = Storage::open(o.clone(), vec![desc()]).unwrap();
    let synced = PartitionKey::new(Bytes::from_static(b"synced"));
    let plain = PartitionKey::new(Bytes::from_static(b"plain"));
    s.engine().apply_synced(TABLE, &synced, update(1)).unwrap();
    s.apply(TABLE, &plain, update(2)).unwrap();
    let fs = Arc::new(fs.power_loss());
    drop(s);
    o.fs = fs;
    let s = Storage::open(o, vec![desc()]).unwrap();
    assert_eq!(read(&s, &synced), Some(1));
    assert_eq!(read(&s, &plain), None, "periodic mode had not synced it");
}
