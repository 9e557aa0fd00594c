//! Preallocated segments (`spare.rs`): segments begin as a spare of
//! zeros, replay ends at the zeros, a crash between the rename and the
//! header is an empty segment, spares of an earlier process are deleted,
//! and a file system that cannot overwrite falls back to plain files.

use super::segment::encode_header;
use super::spare::SPARE_PREFIX;
use super::tests::{config, dir, key, known, open, partition, replayed};
use super::*;
use crate::fs::WriteFile;
use crate::fs_sim::SimFs;
use std::time::Instant;

const SEGMENT: u64 = 16 << 10;

fn prealloc(sync: SyncMode) -> CommitLogConfig {
    CommitLogConfig {
        preallocate: true,
        ..config(sync, SEGMENT)
    }
}

/// Waits (a few seconds at most) until the spare thread has a spare ready.
fn await_spare(log: &CommitLog) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !log.shared.spares.is_ready() {
        assert!(Instant::now() < deadline, "no spare was made");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn spares_in(fs: &SimFs) -> Vec<PathBuf> {
    fs.list(&dir())
        .unwrap()
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(SPARE_PREFIX))
        .collect()
}

#[test]
fn segments_begin_as_spares_of_the_segment_size_and_replay_to_their_last_entry() {
    let fs = SimFs::new();
    let (log, _) = open(&fs, prealloc(SyncMode::Batch)).unwrap();
    let mut written = Vec::new();
    for i in 0..40u32 {
        if i % 10 == 0 {
            await_spare(&log);
        }
        let p = partition(1, &[i as u8; 900]);
        log.append(1, &key(&i.to_be_bytes()), &p).unwrap();
        written.push((1, key(&i.to_be_bytes()), p));
    }
    let (used, _, failed) = log.preallocation_counts();
    assert!(used >= 3, "{used} segments began as a spare");
    assert_eq!(failed, 0);
    let paths = log.segment_paths();
    assert!(paths.len() >= 3);
    for p in &paths {
        let (now, durable) = fs.lengths(p).unwrap();
        assert_eq!((now, durable), (SEGMENT, SEGMENT), "{}", p.display());
    }
    drop(log);
    assert!(
        spares_in(&fs).is_empty(),
        "the spare is deleted at shutdown"
    );
    // Power loss after a clean shutdown: every entry back, no warning for
    // the zeros after the last entry of each segment.
    let (_, replay) = open(&fs.power_loss(), prealloc(SyncMode::Batch)).unwrap();
    assert_eq!(replay.warnings(), &[]);
    let (got, _) = replayed(replay);
    assert!(got == written, "replay differs");
}

#[test]
fn a_segment_renamed_but_never_written_is_an_empty_torn_segment_not_corruption() {
    let fs = SimFs::new();
    fs.create_dir_all(&dir()).unwrap();
    // A spare renamed to a segment name, synced, whose header was never
    // written: what a power loss right after the rename leaves.
    let path = dir().join(segment_file_name(5));
    let mut f = fs.create(&path).unwrap();
    f.write_all(&vec![0u8; SEGMENT as usize]).unwrap();
    f.sync().unwrap();
    fs.sync_dir(&dir()).unwrap();
    let strict = CommitLogConfig {
        strict_replay: true,
        ..prealloc(SyncMode::Batch)
    };
    let (_, replay) = open(&fs, strict).unwrap();
    let w = replay.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].kind, WarningKind::TornTail, "{w:?}");
}

#[test]
fn a_torn_entry_over_zeros_is_a_torn_tail_and_an_entry_after_zeros_is_corruption() {
    let fs = SimFs::new();
    fs.create_dir_all(&dir()).unwrap();
    let whole = super::segment::encode_entry(1, &key(b"a"), &partition(1, b"v"));
    let write = |id: u64, parts: &[&[u8]]| {
        let path = dir().join(segment_file_name(id));
        let mut bytes = Vec::new();
        for p in parts {
            bytes.extend_from_slice(p);
        }
        bytes.resize(SEGMENT as usize, 0);
        let mut f = fs.create(&path).unwrap();
        f.write_all(&bytes).unwrap();
        f.sync().unwrap();
    };
    let zeros = vec![0u8; 3000];
    // Segment 1: one entry, then half of one, then zeros.
    write(1, &[&encode_header(1), &whole, &whole[..whole.len() / 2]]);
    // Segment 2: one entry, zeros, then an intact entry far past them.
    write(2, &[&encode_header(2), &whole, &zeros, &whole]);
    fs.sync_dir(&dir()).unwrap();
    let (_, replay) = open(&fs, prealloc(SyncMode::Batch)).unwrap();
    let kinds: Vec<_> = replay.warnings().iter().map(|w| w.kind).collect();
    assert_eq!(
        kinds,
        vec![WarningKind::TornTail, WarningKind::Corruption],
        "{:?}",
        replay.warnings()
    );
    let (got, _) = replayed(replay);
    assert_eq!(got.len(), 2, "the first entry of each segment");
}

#[test]
fn spares_left_by_an_earlier_process_are_deleted_at_open() {
    let fs = SimFs::new();
    fs.create_dir_all(&dir()).unwrap();
    let leftover = dir().join(format!("{SPARE_PREFIX}3.tmp"));
    fs.create(&leftover).unwrap().write_all(&[0; 100]).unwrap();
    let (log, _) = open(&fs, config(SyncMode::Batch, SEGMENT)).unwrap();
    assert!(!fs.exists(&leftover));
    drop(log);
    let (log, _) = open(&fs, prealloc(SyncMode::Batch)).unwrap();
    await_spare(&log);
    assert_eq!(spares_in(&fs).len(), 1);
}

/// A file system without `open_overwrite` (the trait's default).
struct NoOverwrite(SimFs);

impl Fs for NoOverwrite {
    fn create(&self, path: &Path) -> std::io::Result<Box<dyn WriteFile>> {
        self.0.create(path)
    }
    fn open_read(&self, path: &Path) -> std::io::Result<Box<dyn crate::fs::ReadFile>> {
        self.0.open_read(path)
    }
    fn read_all(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        self.0.read_all(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        self.0.rename(from, to)
    }
    fn remove(&self, path: &Path) -> std::io::Result<()> {
        self.0.remove(path)
    }
    fn list(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        self.0.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
        self.0.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        self.0.sync_dir(dir)
    }
    fn exists(&self, path: &Path) -> bool {
        self.0.exists(path)
    }
}

#[test]
fn without_overwrite_segments_are_plain_files_and_no_more_spares_are_made() {
    let sim = SimFs::new();
    let fs: Arc<dyn Fs> = Arc::new(NoOverwrite(sim.clone()));
    let (log, _) = CommitLog::open(fs, &dir(), prealloc(SyncMode::Batch), &known).unwrap();
    await_spare(&log);
    let mut n = 0u32;
    while log.segments_count() < 3 {
        log.append(1, &key(&n.to_be_bytes()), &partition(1, &[1; 900]))
            .unwrap();
        n += 1;
    }
    // The first segment took the spare, could not write over it, and made
    // a plain file; no spare is asked for after that.
    std::thread::sleep(Duration::from_millis(20));
    assert!(spares_in(&sim).is_empty());
    let (used, missed, _) = log.preallocation_counts();
    assert_eq!((used, missed), (0, 0));
    drop(log);
    let (_, replay) = open(&sim.power_loss(), config(SyncMode::Batch, SEGMENT)).unwrap();
    assert_eq!(replay.warnings(), &[]);
    assert_eq!(replayed(replay).0.len(), n as usize);
}
