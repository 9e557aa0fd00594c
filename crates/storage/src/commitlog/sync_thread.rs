//! The writer thread. Batch and group modes: it writes the queue and
//! fsyncs every round (group: at most once per window), then completes the
//! tickets of the waiting appends. Periodic mode: appends write their own
//! bytes, so the thread only fsyncs, every period and on `sync_now` or
//! shutdown (writing whatever is still queued first), and early when
//! appends have left `files::WRITE_BEHIND_BYTES` unsynced, and writes the queue
//! for appends that wait on it while the disk is failing. A round itself
//! is [`files::round`].

use super::files::{self, SyncKind};
use super::writer::Shared;
use super::SyncMode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// What the next round does.
struct Plan {
    sync: SyncKind,
    exit: bool,
}

/// Waits until there is something to do, following the sync mode.
fn next_round(shared: &Shared, last_round: &mut Option<Instant>, last_tick: &mut Instant) -> Plan {
    let mut inner = shared.inner.lock();
    loop {
        if inner.shutdown {
            return Plan {
                sync: SyncKind::Held,
                exit: true,
            };
        }
        let now = Instant::now();
        let has_work = !inner.pending.is_empty() || !inner.sync_tickets.is_empty();
        let (ready, sync, wake_at): (bool, SyncKind, Option<Instant>) = match shared.config.sync {
            SyncMode::Batch => (has_work, SyncKind::Held, None),
            SyncMode::Group { window } => {
                let due = last_round.map_or(now, |t| t + window);
                (
                    has_work && now >= due,
                    SyncKind::Held,
                    has_work.then_some(due),
                )
            }
            SyncMode::Periodic { period } => {
                let tick = *last_tick + period;
                if now >= tick || !inner.sync_tickets.is_empty() || inner.early_sync {
                    inner.early_sync = false;
                    *last_tick = now;
                    (true, SyncKind::Released, None)
                } else {
                    // Queued bytes are written by their appenders, unless
                    // they wait on this thread (the disk is failing).
                    let write = inner.needs_writer && !inner.pending.is_empty();
                    (write, SyncKind::None, Some(tick))
                }
            }
        };
        if ready {
            *last_round = Some(now);
            return Plan { sync, exit: false };
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
    let mut last_round = None;
    let mut last_tick = Instant::now();
    loop {
        let plan = next_round(&shared, &mut last_round, &mut last_tick);
        shared.writer_rounds.fetch_add(1, Ordering::Relaxed);
        let _ = files::round(&shared, shared.files.lock(), plan.sync, plan.exit);
        if plan.exit && shared.inner.lock().pending.is_empty() {
            return;
        }
    }
}
