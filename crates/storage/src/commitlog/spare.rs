//! Preallocated segments. A background thread keeps one file of the
//! segment size ready in the commitlog directory, every byte written as
//! zero and synced. A new segment takes it (a rename) and is then written
//! over from its first byte ([`crate::fs::Fs::open_overwrite`]).
//!
//! Why: an fsync of a file that grows must also write its new size and
//! block map (on ext4, a journal commit); an fsync of bytes written over
//! blocks the file already has writes only them. With one write in
//! flight, a 4 KiB `O_DSYNC` append took 280-340 µs on this project's
//! machines and the same write over a written file 130-140 µs
//! (docs/design/durability.md). Paxos state and batch-mode writes wait for
//! those fsyncs. The price is a second write of every commitlog byte (the
//! zeros), done ahead of time by this thread.
//!
//! A spare is a file named `CommitLog-spare-<n>.tmp`, which replay ignores;
//! spares left by an earlier process are deleted at open. The rest of a
//! segment past its last entry reads as zeros, which replay takes as its
//! end (docs/format/commitlog.md).

use crate::fs::Fs;
use parking_lot::{Condvar, Mutex};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The name of spare files: `CommitLog-spare-<n>.tmp`.
pub const SPARE_PREFIX: &str = "CommitLog-spare-";
const SPARE_SUFFIX: &str = ".tmp";
/// Zeros are written in writes of this size.
const ZERO_WRITE_BYTES: usize = 1 << 20;

#[derive(Default)]
struct State {
    /// A spare file, whole and synced.
    ready: Option<PathBuf>,
    /// The thread should make a spare (one was taken, or none is ready).
    wanted: bool,
    /// Spares cannot be used on this file system (no overwrite).
    disabled: bool,
    shutdown: bool,
    next: u64,
}

/// The spare segment and the thread's instructions.
pub(super) struct Spares {
    enabled: bool,
    state: Mutex<State>,
    wake: Condvar,
    /// Segments that began as a spare (counted by the writer once it
    /// could write over it).
    pub used: AtomicU64,
    /// Segments created without one (none was ready).
    pub missed: AtomicU64,
    /// Spares that could not be made (a full disk).
    pub failed: AtomicU64,
}

impl Spares {
    pub fn new(enabled: bool) -> Spares {
        Spares {
            enabled,
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            used: AtomicU64::new(0),
            missed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        }
    }

    /// Takes the ready spare, if any, and asks for the next one.
    pub fn take(&self) -> Option<PathBuf> {
        if !self.enabled {
            return None;
        }
        let mut s = self.state.lock();
        if s.disabled {
            return None;
        }
        s.wanted = true;
        self.wake.notify_all();
        let spare = s.ready.take();
        if spare.is_none() {
            self.missed.fetch_add(1, Ordering::Relaxed);
        }
        spare
    }

    /// Asks for a spare without taking one (at open).
    pub fn request(&self) {
        self.state.lock().wanted = true;
        self.wake.notify_all();
    }

    /// No more spares: the file system cannot overwrite files. A spare
    /// made meanwhile is deleted.
    pub fn disable(&self, fs: &dyn Fs) {
        let ready = {
            let mut s = self.state.lock();
            s.disabled = true;
            s.ready.take()
        };
        if let Some(path) = ready {
            let _ = fs.remove(&path);
        }
    }

    pub fn shutdown(&self) {
        self.state.lock().shutdown = true;
        self.wake.notify_all();
    }

    /// Whether a spare is ready now (tests).
    #[cfg(test)]
    pub fn is_ready(&self) -> bool {
        self.state.lock().ready.is_some()
    }
}

/// Whether `name` is a spare's file name.
pub fn is_spare_name(name: &str) -> bool {
    name.starts_with(SPARE_PREFIX) && name.ends_with(SPARE_SUFFIX)
}

/// Deletes the spares an earlier process left in `dir` (whether they were
/// whole is not known).
pub(super) fn remove_leftovers(fs: &dyn Fs, dir: &Path) -> io::Result<()> {
    for path in fs.list(dir)? {
        let spare = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(is_spare_name);
        if spare {
            fs.remove(&path)?;
        }
    }
    Ok(())
}

/// Writes `path` as `size` zero bytes and syncs it.
fn make_spare(fs: &dyn Fs, path: &Path, size: u64) -> io::Result<()> {
    let mut file = fs.create(path)?;
    let zeros = vec![0u8; ZERO_WRITE_BYTES];
    let mut left = size;
    while left > 0 {
        let n = left.min(ZERO_WRITE_BYTES as u64) as usize;
        file.write_all(&zeros[..n])?;
        left -= n as u64;
    }
    file.sync()
}

/// The thread: makes a spare whenever one is wanted and none is ready,
/// until shutdown; then deletes the one left.
pub(super) fn run(spares: Arc<Spares>, fs: Arc<dyn Fs>, dir: PathBuf, size: u64) {
    loop {
        let n = {
            let mut s = spares.state.lock();
            while !s.shutdown && (s.ready.is_some() || !s.wanted || s.disabled) {
                spares.wake.wait(&mut s);
            }
            if s.shutdown {
                if let Some(path) = s.ready.take() {
                    let _ = fs.remove(&path);
                }
                return;
            }
            s.next += 1;
            s.next
        };
        let path = dir.join(format!("{SPARE_PREFIX}{n}{SPARE_SUFFIX}"));
        let made = make_spare(fs.as_ref(), &path, size);
        let mut s = spares.state.lock();
        match made {
            Ok(()) if s.disabled => {
                drop(s);
                let _ = fs.remove(&path);
            }
            Ok(()) => {
                s.ready = Some(path);
                s.wanted = false;
            }
            Err(e) => {
                // Retried when the next segment is started.
                tracing::warn!("could not preallocate a commitlog segment: {e}");
                spares.failed.fetch_add(1, Ordering::Relaxed);
                s.wanted = false;
                drop(s);
                let _ = fs.remove(&path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spare_names_are_recognised_and_are_not_segments() {
        let name = format!("{SPARE_PREFIX}7{SPARE_SUFFIX}");
        assert!(is_spare_name(&name));
        assert!(super::super::segment::parse_segment_file_name(&name).is_none());
        assert!(!is_spare_name("CommitLog-1-7.log"));
        assert!(!is_spare_name("CommitLog-spare-7.log"));
    }
}
