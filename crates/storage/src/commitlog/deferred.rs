//! Deferring periodic-mode commitlog writes to the end of a burst of
//! requests.
//!
//! In periodic mode an append normally writes its entry to the segment file
//! itself before it returns (invariant 2), one `write(2)` per append. A
//! connection that runs a burst of requests one after another on one thread
//! answers them all at once at the end, so their entries may as well reach
//! the kernel together: between [`DeferredWrites::begin`] and
//! [`DeferredWrites::finish`] on a thread, periodic appends of a healthy log
//! only queue their entry and return; `finish` writes the queue (one round
//! for the whole burst, and for whatever other threads queued meanwhile)
//! and reports whether every deferred entry reached the kernel.
//!
//! The caller must not acknowledge any write of the burst before `finish`
//! returns `Ok`; on an error it must not acknowledge them at all. So the
//! guarantee is unchanged: nothing acknowledged is missing from the
//! segment files after a process crash. Outside such a scope (and in batch
//! and group modes, which wait for an fsync anyway) appends behave as
//! before. Dropping a scope without `finish` writes the queue and logs a
//! failure.

use super::files::{self, SyncKind};
use super::segment::segment_file_name;
use super::writer::{Shared, Ticket};
use crate::error::{Error, Result};
use std::cell::RefCell;
use std::io;
use std::marker::PhantomData;
use std::sync::Arc;

/// An entry queued under a scope: its log, the ticket its round completes,
/// and its segment (for the error).
struct Deferred {
    shared: Arc<Shared>,
    ticket: Arc<Ticket>,
    segment: u64,
}

thread_local! {
    /// `Some` while a scope is open on this thread.
    static DEFERRED: RefCell<Option<Vec<Deferred>>> = const { RefCell::new(None) };
}

/// A scope in which this thread's periodic appends are written at the end
/// (see the module doc). Not `Send`: it belongs to the thread that opened it.
pub struct DeferredWrites {
    /// False for a scope opened inside another: the outer one finishes.
    owner: bool,
    _thread: PhantomData<*const ()>,
}

impl DeferredWrites {
    /// Opens a scope on this thread (inside an open one, a no-op scope).
    pub fn begin() -> DeferredWrites {
        let owner = DEFERRED.with(|d| {
            let mut d = d.borrow_mut();
            if d.is_some() {
                return false;
            }
            *d = Some(Vec::new());
            true
        });
        DeferredWrites {
            owner,
            _thread: PhantomData,
        }
    }

    /// Writes every entry deferred in this scope and closes it: `Ok` once
    /// all of them are with the kernel, else the first failure.
    pub fn finish(mut self) -> Result<()> {
        self.write_out()
    }

    /// Closes the scope without writing: its entries stay queued for the
    /// next round of their log, which a sync request runs at once. For a
    /// caller that requests a sync of every log it appended to before it
    /// acknowledges anything (a Paxos step, which answers only once its
    /// state is durable): the sync's round writes the entries and syncs
    /// them in one go, where `finish` would write them first, one
    /// `write(2)` more. Entries of a step that failed and requests no sync
    /// are written by the next round anyone runs; nothing acknowledged
    /// waits on them. Inside an outer scope, the outer one still writes.
    pub fn leave_to_sync(mut self) {
        if self.owner {
            self.owner = false;
            DEFERRED.with(|d| d.borrow_mut().take());
        }
    }

    fn write_out(&mut self) -> Result<()> {
        if !self.owner {
            return Ok(());
        }
        self.owner = false;
        let deferred = DEFERRED.with(|d| d.borrow_mut().take()).unwrap_or_default();
        let mut first_error = None;
        for d in &deferred {
            // Whoever takes the queue completes its tickets before letting
            // go of the files lock: a ticket not done once we hold it is
            // still queued, and our round writes it.
            if !d.ticket.is_done() {
                let guard = d.shared.files.lock();
                if !d.ticket.is_done() {
                    let _ = files::round(&d.shared, guard, SyncKind::None, false);
                }
            }
            if let Err(e) = d.ticket.wait() {
                if first_error.is_none() {
                    let path = d.shared.dir.join(segment_file_name(d.segment));
                    first_error = Some(Error::io(path, io::Error::new(e.0, e.1)));
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for DeferredWrites {
    fn drop(&mut self) {
        if let Err(e) = self.write_out() {
            tracing::error!("deferred commitlog writes failed: {e}");
        }
    }
}

/// Called by a periodic append of a healthy log after queuing its entry:
/// true when a scope is open on this thread, which then owns writing it.
pub(super) fn defer(shared: &Arc<Shared>, ticket: &Arc<Ticket>, segment: u64) -> bool {
    DEFERRED.with(|d| match d.borrow_mut().as_mut() {
        Some(list) => {
            list.push(Deferred {
                shared: Arc::clone(shared),
                ticket: Arc::clone(ticket),
                segment,
            });
            true
        }
        None => false,
    })
}
