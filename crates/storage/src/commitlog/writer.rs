//! Appending: callers serialize their entry, reserve a position under one
//! short lock, and queue the bytes. Then:
//! - periodic mode, healthy log: the appender takes the files lock and
//!   writes the whole queue itself (its entry and those queued behind it,
//!   see [`super::files`]), so its bytes are with the kernel before
//!   `append` returns; a process crash loses nothing acknowledged. The
//!   writer thread only fsyncs, once per period.
//! - batch and group modes, or periodic mode while the disk is failing:
//!   the single background thread writes the queue, fsyncs it according to
//!   the [`SyncMode`], then completes the tickets of the waiting appends.
//!
//! Concurrent appends therefore share one write (and one fsync in batch and
//! group modes: "group commit").
//!
//! When a write or fsync fails (a full disk), the segment being written is
//! abandoned: every append queued for it fails, and the next append starts
//! a new segment. Nothing synced before is touched, so nothing acknowledged
//! is lost; what was partly written stays as a torn tail of that segment.

use super::files::{self, Files, SyncKind};
use super::position::Position;
use super::replay::ScannedSegment;
use super::segment::{encode_entry, encode_header, segment_file_name, SEGMENT_HEADER_BYTES};
use super::{CommitLogConfig, SyncMode, SYNC_LAG_BLOCK_TENTHS};
use crate::engine::{PartitionKey, TableId};
use crate::error::{Error, Result};
use crate::fs::Fs;
use crate::partition::Partition;
use parking_lot::{Condvar, Mutex};
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// An error that can be handed to many waiters.
pub(super) type SharedError = (io::ErrorKind, String);

fn to_io(e: &SharedError) -> io::Error {
    io::Error::new(e.0, e.1.clone())
}

/// What one waiting append (or sync request) learns when its round ends.
pub(super) struct Ticket {
    done: Mutex<Option<std::result::Result<(), SharedError>>>,
    cv: Condvar,
    /// A task awaiting the ticket ([`SyncWait`]), woken with the threads.
    waker: Mutex<Option<std::task::Waker>>,
}

impl Ticket {
    fn new() -> Arc<Ticket> {
        Arc::new(Ticket {
            done: Mutex::new(None),
            cv: Condvar::new(),
            waker: Mutex::new(None),
        })
    }

    pub(super) fn complete(&self, r: std::result::Result<(), SharedError>) {
        *self.done.lock() = Some(r);
        self.cv.notify_all();
        if let Some(w) = self.waker.lock().take() {
            w.wake();
        }
    }

    /// Whether the round that took this ticket's bytes has ended.
    pub(super) fn is_done(&self) -> bool {
        self.done.lock().is_some()
    }

    pub(super) fn wait(&self) -> std::result::Result<(), SharedError> {
        let mut done = self.done.lock();
        loop {
            if let Some(r) = done.as_ref() {
                return r.clone();
            }
            self.cv.wait(&mut done);
        }
    }
}

/// Bytes queued for one segment, and who waits for them: one ticket per
/// append in batch and group modes (completed after the fsync), one ticket
/// shared by every append of the chunk in periodic mode (completed once
/// the bytes are written).
pub(super) struct Chunk {
    pub segment: u64,
    pub bytes: Vec<u8>,
    pub tickets: Vec<Arc<Ticket>>,
}

/// What the log knows of one segment file.
pub(super) struct SegmentState {
    pub path: PathBuf,
    /// Tables with unflushed data here, and the position of their last entry.
    pub dirty: HashMap<TableId, Position>,
    /// Bytes written or queued.
    pub bytes: u64,
    /// No longer written to (synced and left behind, abandoned, or found at
    /// open): it may be deleted once clean.
    pub closed: bool,
}

pub(super) struct Inner {
    /// Bytes of every segment in `segments` (mirrored in
    /// [`Shared::total_bytes`] for readers that must not take the lock).
    pub total: u64,
    /// The segment appends go to, and its length including queued bytes.
    pub active: Option<(u64, u64)>,
    next_id: u64,
    /// Start a new segment at the next append (the active one failed).
    pub force_roll: bool,
    pub pending: Vec<Chunk>,
    pub sync_tickets: Vec<Arc<Ticket>>,
    pub segments: BTreeMap<u64, SegmentState>,
    /// Periodic mode: when the last sync succeeded, and a counter bumped by
    /// every sync attempt (blocked appends wait for it to move).
    pub last_sync: Instant,
    pub sync_attempts: u64,
    /// Periodic mode: the last write failed; appends wait for the writer
    /// thread to write them.
    pub failing: bool,
    /// The queue holds appends that wait for the writer thread (periodic
    /// mode while failing); cleared by whoever takes the queue.
    pub needs_writer: bool,
    /// Periodic mode: appenders wrote `files::WRITE_BEHIND_BYTES` unsynced
    /// bytes; the writer thread fsyncs early.
    pub early_sync: bool,
    /// A failure lost appends already acknowledged (periodic mode: written
    /// but not synced): the next [`sync_now`] reports it.
    pub unreported_error: Option<SharedError>,
    pub shutdown: bool,
    pub final_error: Option<SharedError>,
}

impl Inner {
    pub fn current_position(&self) -> Position {
        match self.active {
            Some((id, len)) => Position::new(id, len),
            None => Position::new(self.next_id, SEGMENT_HEADER_BYTES),
        }
    }

    /// Reserves `size` bytes, starting a new segment when they do not fit.
    fn allocate(&mut self, size: u64, config: &CommitLogConfig, dir: &std::path::Path) -> Position {
        let fits = |len: u64| len + size <= config.segment_size_bytes;
        match self.active {
            Some((id, len)) if !self.force_roll && fits(len) => {
                self.active = Some((id, len + size));
                Position::new(id, len)
            }
            _ => {
                self.force_roll = false;
                let id = self.next_id;
                self.next_id += 1;
                self.active = Some((id, SEGMENT_HEADER_BYTES + size));
                self.total += SEGMENT_HEADER_BYTES;
                self.segments.insert(
                    id,
                    SegmentState {
                        path: dir.join(segment_file_name(id)),
                        dirty: HashMap::new(),
                        bytes: SEGMENT_HEADER_BYTES,
                        closed: false,
                    },
                );
                let header = encode_header(id);
                self.pending.push(Chunk {
                    segment: id,
                    bytes: header,
                    tickets: Vec::new(),
                });
                Position::new(id, SEGMENT_HEADER_BYTES)
            }
        }
    }

    /// Queues `bytes` and returns the ticket that tells when they are
    /// written (and synced, in batch and group modes). With `share`, every
    /// append of a chunk gets the same ticket.
    fn enqueue(&mut self, segment: u64, bytes: Vec<u8>, share: bool) -> Arc<Ticket> {
        match self.pending.last_mut() {
            Some(c) if c.segment == segment => c.bytes.extend_from_slice(&bytes),
            _ => self.pending.push(Chunk {
                segment,
                bytes,
                tickets: Vec::new(),
            }),
        }
        let Some(chunk) = self.pending.last_mut() else {
            return Ticket::new(); // unreachable: a chunk was just pushed
        };
        match chunk.tickets.first() {
            Some(t) if share => t.clone(),
            _ => {
                let t = Ticket::new();
                chunk.tickets.push(t.clone());
                t
            }
        }
    }

    /// Removes the segments that are closed and clean; returns their paths.
    pub fn take_releasable(&mut self) -> Vec<PathBuf> {
        let active = self.active.map(|(id, _)| id);
        let ids: Vec<u64> = self
            .segments
            .iter()
            .filter(|(id, s)| s.closed && s.dirty.is_empty() && Some(**id) != active)
            .map(|(id, _)| *id)
            .collect();
        let removed: Vec<SegmentState> = ids
            .into_iter()
            .filter_map(|id| self.segments.remove(&id))
            .collect();
        self.total -= removed.iter().map(|s| s.bytes).sum::<u64>();
        removed.into_iter().map(|s| s.path).collect()
    }
}

pub(super) struct Shared {
    pub fs: Arc<dyn Fs>,
    pub dir: PathBuf,
    pub config: CommitLogConfig,
    pub inner: Mutex<Inner>,
    /// The open segment file. Lock order: `files`, then `inner`.
    pub files: Mutex<Files>,
    /// Rounds run by the writer thread (tests check that periodic appends
    /// do not wake it).
    pub writer_rounds: AtomicU64,
    /// `Inner::total`, readable without the lock (the write path asks for
    /// it on every write).
    pub total_bytes: AtomicU64,
    /// Bytes written to segment files since the log opened (what a disk
    /// throughput chart of the commitlog shows).
    pub bytes_written: AtomicU64,
    /// Wakes the writer thread.
    pub work: Condvar,
    /// Wakes appends blocked on a lagging periodic sync.
    pub synced: Condvar,
    /// The preallocated segment new segments begin as.
    pub spares: Arc<super::spare::Spares>,
}

impl Shared {
    pub fn new(
        fs: Arc<dyn Fs>,
        dir: PathBuf,
        config: CommitLogConfig,
        scanned: Vec<ScannedSegment>,
    ) -> Self {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let max_old = scanned.iter().map(|s| s.id).max().unwrap_or(0);
        let segments = scanned
            .into_iter()
            .map(|s| {
                (
                    s.id,
                    SegmentState {
                        path: s.path,
                        dirty: s.tables,
                        bytes: s.bytes,
                        closed: true,
                    },
                )
            })
            .collect::<BTreeMap<u64, SegmentState>>();
        let preallocate = config.preallocate;
        let inner = Inner {
            total: segments.values().map(|s| s.bytes).sum(),
            active: None,
            next_id: now_ms.max(max_old + 1).max(config.min_segment_id),
            force_roll: false,
            pending: Vec::new(),
            sync_tickets: Vec::new(),
            segments,
            last_sync: Instant::now(),
            sync_attempts: 0,
            failing: false,
            needs_writer: false,
            early_sync: false,
            unreported_error: None,
            shutdown: false,
            final_error: None,
        };
        Shared {
            fs,
            dir,
            config,
            total_bytes: AtomicU64::new(inner.total),
            bytes_written: AtomicU64::new(0),
            inner: Mutex::new(inner),
            files: Mutex::new(Files::new()),
            writer_rounds: AtomicU64::new(0),
            work: Condvar::new(),
            synced: Condvar::new(),
            spares: Arc::new(super::spare::Spares::new(preallocate)),
        }
    }

    fn closed_error(&self) -> Error {
        Error::io(
            self.dir.clone(),
            io::Error::new(io::ErrorKind::BrokenPipe, "the commitlog is shut down"),
        )
    }
}

/// The error an entry larger than the log's maximum mutation gets.
pub(super) fn check_size(shared: &Shared, entry: &[u8]) -> Result<()> {
    let size = entry.len() as u64;
    let max = shared.config.max_mutation_bytes();
    if size > max {
        let msg = format!(
            "mutation of {size} bytes is larger than the maximum {max} (half a commitlog segment)"
        );
        return Err(Error::io(
            shared.dir.clone(),
            io::Error::new(io::ErrorKind::InvalidInput, msg),
        ));
    }
    Ok(())
}

pub(super) fn append(
    shared: &Arc<Shared>,
    table: TableId,
    key: &PartitionKey,
    partition: &Partition,
) -> Result<Position> {
    let entry = encode_entry(table, key, partition);
    check_size(shared, &entry)?;
    let size = entry.len() as u64;
    let periodic = matches!(shared.config.sync, SyncMode::Periodic { .. });
    let mut inner = shared.inner.lock();
    if inner.shutdown {
        return Err(shared.closed_error());
    }
    let pos = inner.allocate(size, &shared.config, &shared.dir);
    let ticket = inner.enqueue(pos.segment_id, entry, periodic);
    if let Some(seg) = inner.segments.get_mut(&pos.segment_id) {
        seg.bytes += size;
        let last = seg.dirty.entry(table).or_insert(pos);
        *last = (*last).max(pos);
        inner.total += size;
    }
    shared.total_bytes.store(inner.total, Ordering::Relaxed);
    // Periodic mode on a healthy log: this thread writes its own entry.
    let direct = periodic && !inner.failing;
    if !direct {
        inner.needs_writer = true;
        shared.work.notify_one();
    }
    if let (SyncMode::Periodic { period }, true) = (shared.config.sync, direct) {
        let lag_block = period * SYNC_LAG_BLOCK_TENTHS / 10;
        if inner.last_sync.elapsed() > lag_block {
            let attempts = inner.sync_attempts;
            while inner.sync_attempts == attempts && !inner.shutdown {
                shared.synced.wait(&mut inner);
            }
        }
    }
    drop(inner);
    // Inside a burst's scope the scope writes it (super::deferred).
    if direct && super::deferred::defer(shared, &ticket, pos.segment_id) {
        return Ok(pos);
    }
    // Another appender (or the writer thread) may have written it already;
    // whoever takes the queue completes its tickets before releasing the
    // files lock, so once we hold it, a ticket not done is still queued.
    if direct && !ticket.is_done() {
        let files = shared.files.lock();
        if !ticket.is_done() {
            let _ = files::round(shared, files, SyncKind::None, false);
        }
    }
    ticket.wait().map(|()| pos).map_err(|e| {
        let path = shared.dir.join(segment_file_name(pos.segment_id));
        Error::io(path, to_io(&e))
    })
}

/// Queues a sync request for the writer thread and wakes it: the ticket
/// completes once everything appended before it is durable.
fn request_sync(shared: &Shared) -> Result<Arc<Ticket>> {
    let ticket = Ticket::new();
    {
        let mut inner = shared.inner.lock();
        if inner.shutdown {
            return Err(shared.closed_error());
        }
        inner.sync_tickets.push(ticket.clone());
    }
    shared.work.notify_one();
    Ok(ticket)
}

pub(super) fn sync_now(shared: &Shared) -> Result<()> {
    request_sync(shared)?
        .wait()
        .map_err(|e| Error::io(shared.dir.clone(), to_io(&e)))
}

/// A sync request awaited by a task instead of a thread: ready once a
/// round synced everything appended before the request.
pub struct SyncWait {
    ticket: Arc<Ticket>,
    dir: PathBuf,
}

impl std::future::Future for SyncWait {
    type Output = Result<()>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<()>> {
        // The waker is set before `done` is looked at: a completion in
        // between finds it and wakes this task.
        *self.ticket.waker.lock() = Some(cx.waker().clone());
        match self.ticket.done.lock().as_ref() {
            Some(r) => std::task::Poll::Ready(
                r.clone()
                    .map_err(|e| Error::io(self.dir.clone(), to_io(&e))),
            ),
            None => std::task::Poll::Pending,
        }
    }
}

/// Asks the writer thread for a sync of everything appended so far; the
/// answer is awaited ([`SyncWait`]), not waited for.
pub(super) fn sync_later(shared: &Shared) -> Result<SyncWait> {
    Ok(SyncWait {
        ticket: request_sync(shared)?,
        dir: shared.dir.clone(),
    })
}

pub(super) fn mark_flushed(shared: &Shared, table: TableId, up_to: Position) -> Result<()> {
    let paths = {
        let mut inner = shared.inner.lock();
        for seg in inner.segments.values_mut() {
            if seg.dirty.get(&table).is_some_and(|last| *last < up_to) {
                seg.dirty.remove(&table);
            }
        }
        let released = inner.take_releasable();
        shared.total_bytes.store(inner.total, Ordering::Relaxed);
        released
    };
    remove_segments(shared, &paths)
}

pub(super) fn remove_segments(shared: &Shared, paths: &[PathBuf]) -> Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    for p in paths {
        shared.fs.remove(p).map_err(|e| Error::io(p.clone(), e))?;
    }
    shared
        .fs
        .sync_dir(&shared.dir)
        .map_err(|e| Error::io(shared.dir.clone(), e))
}
