//! The writer thread: takes the queue of entries, writes it to the
//! segment files in order, fsyncs as the [`SyncMode`] asks (batch: every
//! round; group: at most once per window; periodic: every period, while
//! writes go to the OS as soon as they are queued), then completes the
//! tickets of the appends that wait.

use super::segment::segment_file_name;
use super::writer::{remove_segments, Chunk, Inner, Shared, SharedError, Ticket};
use super::SyncMode;
use crate::fs::WriteFile;
use std::collections::HashSet;
use std::io;
use std::sync::Arc;
use std::time::Instant;

/// The writer thread's files: the segment being written.
struct Files {
    open: Option<(u64, Box<dyn WriteFile>)>,
    /// A segment was created since the last directory sync.
    dir_dirty: bool,
    /// Bytes were written since the last fsync.
    unsynced: bool,
}

impl Files {
    /// Writes the chunks in order; returns the segments left behind (each
    /// synced before the next one is written, invariant 3).
    fn write(&mut self, shared: &Shared, chunks: &[Chunk]) -> io::Result<Vec<u64>> {
        let mut closed = Vec::new();
        for chunk in chunks {
            if self.open.as_ref().map(|(id, _)| *id) != Some(chunk.segment) {
                if let Some((id, mut file)) = self.open.take() {
                    file.sync()?;
                    closed.push(id);
                }
                let path = shared.dir.join(segment_file_name(chunk.segment));
                let file = shared.fs.create(&path)?;
                self.dir_dirty = true;
                self.open = Some((chunk.segment, file));
            }
            if let Some((_, file)) = self.open.as_mut() {
                self.unsynced = true;
                file.write_all(&chunk.bytes)?;
            }
        }
        Ok(closed)
    }

    fn sync(&mut self, shared: &Shared) -> io::Result<()> {
        if self.unsynced {
            if let Some((_, file)) = self.open.as_mut() {
                file.sync()?;
            }
            self.unsynced = false;
        }
        if self.dir_dirty {
            shared.fs.sync_dir(&shared.dir)?;
            self.dir_dirty = false;
        }
        Ok(())
    }
}

/// One unit of work taken from the queue.
struct Round {
    chunks: Vec<Chunk>,
    sync_tickets: Vec<Arc<Ticket>>,
    sync: bool,
    exit: bool,
}

/// Waits until there is something to do, following the sync mode.
fn next_round(shared: &Shared, last_round: &mut Option<Instant>, last_tick: &mut Instant) -> Round {
    let mut inner = shared.inner.lock();
    loop {
        let now = Instant::now();
        let has_work = !inner.pending.is_empty() || !inner.sync_tickets.is_empty();
        let (ready, sync, wake_at): (bool, bool, Option<Instant>) = match shared.config.sync {
            SyncMode::Batch => (has_work, true, None),
            SyncMode::Group { window } => {
                let due = last_round.map_or(now, |t| t + window);
                (has_work && now >= due, true, has_work.then_some(due))
            }
            SyncMode::Periodic { period } => {
                let tick = *last_tick + period;
                let sync = now >= tick || !inner.sync_tickets.is_empty();
                (has_work || sync, sync, Some(tick))
            }
        };
        if ready || inner.shutdown {
            if sync || inner.shutdown {
                *last_tick = now;
            }
            *last_round = Some(now);
            return Round {
                chunks: std::mem::take(&mut inner.pending),
                sync_tickets: std::mem::take(&mut inner.sync_tickets),
                sync: sync || inner.shutdown,
                exit: inner.shutdown,
            };
        }
        match wake_at {
            Some(t) => {
                shared.work.wait_until(&mut inner, t);
            }
            None => shared.work.wait(&mut inner),
        }
    }
}

/// The writer thread: runs until shutdown, then syncs and returns.
pub(super) fn run(shared: Arc<Shared>) {
    let mut files = Files {
        open: None,
        dir_dirty: false,
        unsynced: false,
    };
    let mut last_round = None;
    let mut last_tick = Instant::now();
    loop {
        let round = next_round(&shared, &mut last_round, &mut last_tick);
        let result = files.write(&shared, &round.chunks).and_then(|closed| {
            if round.sync {
                files.sync(&shared).map(|()| closed)
            } else {
                Ok(closed)
            }
        });
        let outcome = result
            .as_ref()
            .map(|_| ())
            .map_err(|e| (e.kind(), e.to_string()));
        let mut inner = shared.inner.lock();
        let releasable = match result {
            Ok(closed) => {
                for id in closed {
                    if let Some(s) = inner.segments.get_mut(&id) {
                        s.closed = true;
                    }
                }
                if !round.chunks.is_empty() {
                    inner.failing = false;
                }
                if round.sync {
                    inner.last_sync = Instant::now();
                }
                let released = inner.take_releasable();
                shared
                    .total_bytes
                    .store(inner.total, std::sync::atomic::Ordering::Relaxed);
                released
            }
            Err(_) => {
                abandon(&mut inner, &mut files, &round.chunks, &outcome);
                Vec::new()
            }
        };
        if round.sync || outcome.is_err() {
            inner.sync_attempts += 1;
            shared.synced.notify_all();
        }
        if round.exit {
            inner.final_error = outcome.clone().err();
        }
        let sync_outcome = match (&outcome, round.sync_tickets.is_empty()) {
            (Ok(()), false) => inner.unreported_error.take().map_or(Ok(()), Err),
            // The failure is reported to these syncs now: a later sync must
            // not report it again once the disk has recovered.
            (Err(_), false) => {
                inner.unreported_error = None;
                outcome.clone()
            }
            _ => outcome.clone(),
        };
        drop(inner);
        for t in round.chunks.iter().flat_map(|c| c.tickets.iter()) {
            t.complete(outcome.clone());
        }
        for t in &round.sync_tickets {
            t.complete(sync_outcome.clone());
        }
        // A failed delete leaves a segment that replays flushed data: harmless.
        let _ = remove_segments(&shared, &releasable);
        if round.exit && shared.inner.lock().pending.is_empty() {
            return;
        }
    }
}

/// After a failed write or fsync: the segments of the round are left as
/// they are, every append still queued for them fails, and the next append
/// starts a new segment.
fn abandon(
    inner: &mut Inner,
    files: &mut Files,
    chunks: &[Chunk],
    error: &std::result::Result<(), SharedError>,
) {
    let mut dead: HashSet<u64> = chunks.iter().map(|c| c.segment).collect();
    if let Some((id, _)) = files.open.take() {
        dead.insert(id);
    }
    files.unsynced = false;
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
    let lost_acknowledged = chunks.iter().chain(&failed).any(|c| c.acknowledged);
    if let (true, Err(e)) = (lost_acknowledged, error) {
        inner.unreported_error = Some(e.clone());
    }
}
