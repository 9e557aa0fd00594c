//! The open segment file, shared by the appenders and the writer thread
//! behind [`Shared::files`], and one round of work on it: take the whole
//! queue, write it in order, fsync when asked, complete the tickets.
//!
//! Whoever holds the files lock takes the *whole* queue from
//! `Inner::pending` and writes it. Positions are reserved under `inner` in
//! queue order, so entries reach each segment in the order their positions
//! were handed out (invariant 1), and in periodic mode an appender writes
//! the entries of everyone queued behind it ("combining").
//!
//! Lock order: `files`, then `inner`; `inner` is never held across I/O.
//! Tickets of the chunks a round took are completed before the files lock
//! is released, so an appender holding the lock whose ticket is not done
//! knows its chunk is still queued.
//!
//! Periodic mode's timed fsync ([`SyncKind::Released`]) goes through a
//! second handle of the file after the lock is released: appenders keep
//! writing while the kernel flushes a period's worth of data.

use super::segment::segment_file_name;
use super::writer::{remove_segments, Chunk, Inner, Shared, SharedError};
use super::SyncMode;
use crate::fs::WriteFile;
use parking_lot::MutexGuard;
use std::collections::HashSet;
use std::io;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Unsynced bytes in the open segment past which periodic mode fsyncs
/// before the period is up (in the writer thread, outside the files lock).
pub const WRITE_BEHIND_BYTES: u64 = 4 << 20;

/// The segment being written.
pub(super) struct Files {
    open: Option<(u64, Box<dyn WriteFile>)>,
    /// A segment was created since the last directory sync.
    dir_dirty: bool,
    /// Bytes were written since the last fsync (started).
    unsynced: bool,
    /// How many (periodic mode asks for an early fsync past
    /// [`WRITE_BEHIND_BYTES`]).
    unsynced_bytes: u64,
    /// An fsync of the open file failed: a later one proves nothing (the
    /// kernel reports a writeback error once).
    sync_failed: bool,
}

/// When a round fsyncs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SyncKind {
    /// Write only: a periodic append, or the writer thread writing for
    /// appends that wait on it.
    None,
    /// Fsync with the files lock held (batch and group modes, shutdown).
    Held,
    /// Fsync through a second handle once the lock is released (periodic
    /// mode's timer and `sync_now`); with the lock held when the file
    /// system cannot clone handles.
    Released,
}

/// An fsync to finish without the files lock.
struct Detached {
    segment: u64,
    file: Box<dyn WriteFile>,
    dir: bool,
}

impl Files {
    pub fn new() -> Files {
        Files {
            open: None,
            dir_dirty: false,
            unsynced: false,
            unsynced_bytes: 0,
            sync_failed: false,
        }
    }

    /// Writes the chunks in order; returns the segments left behind (each
    /// synced before the next one is written, invariant 3: in periodic
    /// mode this fsync runs on the appender that crosses into a new
    /// segment, once per segment).
    fn write(&mut self, shared: &Shared, chunks: &[Chunk]) -> io::Result<Vec<u64>> {
        let mut closed = Vec::new();
        for chunk in chunks {
            if let Some((id, file)) = self.open.as_mut() {
                if *id != chunk.segment {
                    // Even when `unsynced` is false: a detached fsync of
                    // this file may still be running.
                    if let Err(e) = file.sync() {
                        self.sync_failed = true;
                        return Err(e);
                    }
                    closed.push(*id);
                    self.open = None;
                    self.unsynced = false;
                    self.unsynced_bytes = 0;
                }
            }
            if self.open.is_none() {
                let path = shared.dir.join(segment_file_name(chunk.segment));
                let file = open_segment(shared, &path)?;
                self.dir_dirty = true;
                self.open = Some((chunk.segment, file));
            }
            if let Some((_, file)) = self.open.as_mut() {
                self.unsynced = true;
                self.unsynced_bytes += chunk.bytes.len() as u64;
                file.write_all(&chunk.bytes)?;
                shared
                    .bytes_written
                    .fetch_add(chunk.bytes.len() as u64, Ordering::Relaxed);
            }
        }
        Ok(closed)
    }

    fn sync(&mut self, shared: &Shared) -> io::Result<()> {
        if self.unsynced {
            if let Some((_, file)) = self.open.as_mut() {
                if let Err(e) = file.sync() {
                    self.sync_failed = true;
                    return Err(e);
                }
            }
            self.unsynced = false;
            self.unsynced_bytes = 0;
        }
        if self.dir_dirty {
            shared.fs.sync_dir(&shared.dir)?;
            self.dir_dirty = false;
        }
        Ok(())
    }

    /// Starts an fsync to finish without the lock. `Ok(None)`: nothing to
    /// sync, or it was done here (the file cannot be cloned).
    fn detach_sync(&mut self, shared: &Shared) -> io::Result<Option<Detached>> {
        let clone = match self.open.as_ref() {
            Some((id, file)) if self.unsynced => file.try_clone().ok().map(|f| (*id, f)),
            _ => None,
        };
        match clone {
            Some((segment, file)) => {
                self.unsynced = false;
                self.unsynced_bytes = 0;
                Ok(Some(Detached {
                    segment,
                    file,
                    dir: std::mem::take(&mut self.dir_dirty),
                }))
            }
            None => self.sync(shared).map(|()| None),
        }
    }

    /// After a failed write: tries to make what earlier rounds wrote to the
    /// open file durable (acknowledged in periodic mode). False when it may
    /// be lost.
    fn salvage(&mut self) -> bool {
        if self.sync_failed {
            return false;
        }
        match self.open.as_mut() {
            Some((_, file)) => file.sync().is_ok(),
            None => true,
        }
    }
}

/// A new segment file: the preallocated spare renamed, when one is ready
/// (written over from its start), else a new empty file.
fn open_segment(shared: &Shared, path: &Path) -> io::Result<Box<dyn WriteFile>> {
    if let Some(spare) = shared.spares.take() {
        match shared.fs.rename(&spare, path) {
            Ok(()) => match shared.fs.open_overwrite(path) {
                Ok(file) => {
                    shared.spares.used.fetch_add(1, Ordering::Relaxed);
                    return Ok(file);
                }
                Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                    shared.spares.disable(shared.fs.as_ref())
                }
                Err(e) => tracing::warn!("could not open a preallocated commitlog segment: {e}"),
            },
            Err(e) => {
                tracing::warn!("could not rename a preallocated commitlog segment: {e}");
                let _ = shared.fs.remove(&spare);
            }
        }
    }
    shared.fs.create(path)
}

fn shared_error(e: &io::Error) -> SharedError {
    (e.kind(), e.to_string())
}

/// One round, holding `files`: takes the whole queue (and, when it syncs,
/// the pending sync requests), writes it, fsyncs as `sync` asks, completes
/// the tickets, and deletes segments no longer needed. On shutdown
/// (`exit`, which needs [`SyncKind::Held`]) the file is closed. Returns
/// the round's outcome.
pub(super) fn round(
    shared: &Shared,
    mut files: MutexGuard<'_, Files>,
    sync: SyncKind,
    exit: bool,
) -> Result<(), SharedError> {
    let (chunks, sync_tickets) = {
        let mut inner = shared.inner.lock();
        inner.needs_writer = false;
        let tickets = match sync {
            SyncKind::None => Vec::new(),
            _ => std::mem::take(&mut inner.sync_tickets),
        };
        (std::mem::take(&mut inner.pending), tickets)
    };
    let (mut outcome, releasable, detached) = write_and_settle(shared, &mut files, &chunks, sync);
    if exit {
        files.open = None;
    }
    drop(files);
    if let Some(d) = detached {
        outcome = finish_detached(shared, d);
    }
    let mut inner = shared.inner.lock();
    if exit {
        inner.final_error = outcome.clone().err();
    }
    let sync_outcome = match (&outcome, sync_tickets.is_empty()) {
        (_, true) => Ok(()),
        (Ok(()), false) => inner.unreported_error.take().map_or(Ok(()), Err),
        // The failure is reported to these syncs now: a later sync must
        // not report it again once the disk has recovered.
        (Err(_), false) => {
            inner.unreported_error = None;
            outcome.clone()
        }
    };
    drop(inner);
    for t in &sync_tickets {
        t.complete(sync_outcome.clone());
    }
    // A failed delete leaves a segment that replays flushed data: harmless.
    let _ = remove_segments(shared, &releasable);
    outcome
}

type Settled = (
    Result<(), SharedError>,
    Vec<std::path::PathBuf>,
    Option<Detached>,
);

/// The part of a round under the files lock: write, fsync unless
/// detached, update the shared state, complete the chunks' tickets.
fn write_and_settle(
    shared: &Shared,
    files: &mut Files,
    chunks: &[Chunk],
    sync: SyncKind,
) -> Settled {
    let periodic = matches!(shared.config.sync, SyncMode::Periodic { .. });
    // Written by earlier rounds, not synced: acknowledged in periodic mode.
    let acked_unsynced = periodic && files.unsynced;
    let result = files.write(shared, chunks).and_then(|closed| {
        let detached = match sync {
            SyncKind::None => None,
            SyncKind::Held => files.sync(shared).map(|()| None)?,
            SyncKind::Released => files.detach_sync(shared)?,
        };
        Ok((closed, detached))
    });
    let lost = result.is_err() && acked_unsynced && !files.salvage();
    let outcome = result.as_ref().map(|_| ()).map_err(shared_error);
    let mut inner = shared.inner.lock();
    let (releasable, detached) = match result {
        Ok((closed, detached)) => {
            for id in closed {
                if let Some(s) = inner.segments.get_mut(&id) {
                    s.closed = true;
                }
            }
            if !chunks.is_empty() {
                inner.failing = false;
            }
            if sync != SyncKind::None && detached.is_none() {
                inner.last_sync = Instant::now();
            }
            // Periodic appends that piled up this many unsynced bytes ask
            // the writer thread for an early fsync, so the fsync an
            // appender runs when it crosses into a new segment stays short.
            if periodic
                && sync == SyncKind::None
                && files.unsynced_bytes >= WRITE_BEHIND_BYTES
                && !inner.early_sync
            {
                inner.early_sync = true;
                shared.work.notify_one();
            }
            let released = inner.take_releasable();
            shared.total_bytes.store(inner.total, Ordering::Relaxed);
            (released, detached)
        }
        Err(_) => {
            let dead = chunks.iter().map(|c| c.segment).collect();
            abandon(&mut inner, files, dead, &outcome, lost);
            (Vec::new(), None)
        }
    };
    if (sync != SyncKind::None && detached.is_none()) || outcome.is_err() {
        inner.sync_attempts += 1;
        shared.synced.notify_all();
    }
    drop(inner);
    for t in chunks.iter().flat_map(|c| c.tickets.iter()) {
        t.complete(outcome.clone());
    }
    (outcome, releasable, detached)
}

/// Finishes a detached fsync. On failure the segment is abandoned and,
/// since its bytes were acknowledged, the loss is kept for `sync_now`.
fn finish_detached(shared: &Shared, mut d: Detached) -> Result<(), SharedError> {
    let result = d.file.sync().and_then(|()| {
        if d.dir {
            shared.fs.sync_dir(&shared.dir)
        } else {
            Ok(())
        }
    });
    let outcome = result.as_ref().map_err(shared_error).copied();
    if outcome.is_err() {
        let mut files = shared.files.lock();
        files.dir_dirty |= d.dir;
        let mut inner = shared.inner.lock();
        abandon(
            &mut inner,
            &mut files,
            HashSet::from([d.segment]),
            &outcome,
            true,
        );
        inner.sync_attempts += 1;
    } else {
        let mut inner = shared.inner.lock();
        inner.last_sync = Instant::now();
        inner.sync_attempts += 1;
    }
    shared.synced.notify_all();
    outcome
}

/// After a failed write or fsync: the `dead` segments (and the open one)
/// are left as they are, every append still queued for them fails, and the
/// next append starts a new segment. `lost_acknowledged`: acknowledged
/// bytes may not survive, which the next `sync_now` reports.
fn abandon(
    inner: &mut Inner,
    files: &mut Files,
    mut dead: HashSet<u64>,
    error: &Result<(), SharedError>,
    lost_acknowledged: bool,
) {
    if let Some((id, _)) = files.open.take() {
        dead.insert(id);
    }
    files.unsynced = false;
    files.unsynced_bytes = 0;
    files.sync_failed = false;
    for id in &dead {
        if let Some(s) = inner.segments.get_mut(id) {
            s.closed = true;
        }
    }
    if inner.active.is_some_and(|(id, _)| dead.contains(&id)) {
        inner.force_roll = true;
    }
    let (failed, kept): (Vec<Chunk>, Vec<Chunk>) = std::mem::take(&mut inner.pending)
        .into_iter()
        .partition(|c| dead.contains(&c.segment));
    inner.pending = kept;
    for t in failed.iter().flat_map(|c| c.tickets.iter()) {
        t.complete(error.clone());
    }
    inner.failing = true;
    if let (true, Err(e)) = (lost_acknowledged, error) {
        inner.unreported_error = Some(e.clone());
    }
}
