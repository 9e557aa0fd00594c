//! Who may compact what, and how many at once.
//!
//! - A [`Claim`] marks sstables as the inputs of one running compaction
//!   (`TableStore::compacting`); the strategies see them as `compacting` and
//!   never choose them, major compactions and garbagecollect wait for them.
//!   So an sstable is never the input of two compactions, and two running
//!   compactions always have disjoint inputs.
//! - The background compaction manager runs `concurrent_compactors` workers
//!   (cassandra.yaml's name). Each asks every table's strategy for a task;
//!   choosing and claiming happen under the table's strategy lock.
//!
//! Default `concurrent_compactors`: Cassandra uses min(#disks, #cores)
//! bounded to 2..8. Varve does not count disks, so it takes the number of
//! cores bounded to 1..8 (a one-core machine gets one compactor).

use crate::engine::{Engine, TableId, TableStore};
use crate::error::{Error, Result};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Upper bound of the default `concurrent_compactors`.
pub const DEFAULT_CONCURRENT_COMPACTORS_MAX: usize = 8;
/// How often the compaction manager asks the strategies for work.
const COMPACTION_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);
/// Tasks one worker runs for one table before it moves to the next.
const MAX_TASKS_PER_ROUND: u32 = 16;

/// `concurrent_compactors` as configured (0: the default for this machine).
pub fn resolve_concurrent_compactors(configured: usize) -> usize {
    if configured > 0 {
        return configured;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores.clamp(1, DEFAULT_CONCURRENT_COMPACTORS_MAX)
}

/// Sstables claimed by one compaction; released (and waiters woken) on drop.
pub(crate) struct Claim {
    table: Arc<TableStore>,
    generations: Vec<u64>,
}

impl Claim {
    /// Takes over generations the caller has already inserted into
    /// `table.compacting`.
    pub(crate) fn adopt(table: &Arc<TableStore>, generations: Vec<u64>) -> Claim {
        Claim {
            table: table.clone(),
            generations,
        }
    }

    /// Claims `generations`, waiting while another compaction holds any.
    pub(crate) fn wait(table: &Arc<TableStore>, generations: &[u64]) -> Claim {
        let mut compacting = table.compacting.lock();
        while generations.iter().any(|g| compacting.contains(g)) {
            table.compacting_freed.wait(&mut compacting);
        }
        compacting.extend(generations.iter().copied());
        Claim::adopt(table, generations.to_vec())
    }

    /// Claims `generation` if it is still live once no compaction holds it;
    /// `None` when it was compacted away meanwhile.
    pub(crate) fn wait_live(table: &Arc<TableStore>, generation: u64) -> Option<Claim> {
        let mut compacting = table.compacting.lock();
        while compacting.contains(&generation) {
            table.compacting_freed.wait(&mut compacting);
        }
        if !table.state.read().manifest.live.contains(&generation) {
            return None;
        }
        compacting.insert(generation);
        Some(Claim::adopt(table, vec![generation]))
    }

    /// Claims every live sstable, once none is held by another compaction.
    pub(crate) fn all_live(table: &Arc<TableStore>) -> Claim {
        let mut compacting = table.compacting.lock();
        loop {
            let live: Vec<u64> = table.state.read().manifest.live.clone();
            if live.iter().all(|g| !compacting.contains(g)) {
                compacting.extend(live.iter().copied());
                return Claim::adopt(table, live);
            }
            table.compacting_freed.wait(&mut compacting);
        }
    }

    pub(crate) fn generations(&self) -> &[u64] {
        &self.generations
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut compacting = self.table.compacting.lock();
        for g in &self.generations {
            compacting.remove(g);
        }
        drop(compacting);
        self.table.compacting_freed.notify_all();
    }
}

impl Engine {
    /// concurrent_compactors: how many background compactions run at once.
    pub fn concurrent_compactors(&self) -> usize {
        self.concurrent_compactors
    }

    /// Background compactions: `concurrent_compactors` workers, each asking
    /// every table's strategy for work until none has any, then sleeping.
    pub(crate) fn run_compaction_manager(&self) {
        std::thread::scope(|scope| {
            for i in 1..self.concurrent_compactors {
                let spawned = std::thread::Builder::new()
                    .name(format!("compaction-{i}"))
                    .spawn_scoped(scope, || self.compaction_worker());
                if let Err(e) = spawned {
                    tracing::error!("starting compaction worker {i} failed: {e}");
                }
            }
            self.compaction_worker();
        });
    }

    fn shutting_down(&self) -> bool {
        self.flusher_signal.0.lock().1
    }

    /// Stops compactions for good, as Cassandra does when it shuts down: a
    /// running one ends at its next partition (or wakes from its throttle
    /// pause) with an `Interrupted` I/O error, its outputs deleted and its
    /// inputs left live; no compaction starts after. The server calls it
    /// when it stops, before its drain, and dropping `Storage` does too.
    pub fn stop_compactions(&self) {
        self.compactions_stopped.store(true, Ordering::Relaxed);
        let _signal = self.flusher_signal.0.lock();
        self.flusher_signal.1.notify_all();
    }

    /// The error of a compaction that [`Engine::stop_compactions`] ended,
    /// once it is asked to stop.
    pub(crate) fn check_compactions_stopped(&self, dir: &std::path::Path) -> Result<()> {
        if self.compactions_stopped.load(Ordering::Relaxed) {
            return Err(Error::io(
                dir,
                std::io::Error::new(
                    std::io::ErrorKind::Interrupted,
                    "compaction stopped: the node is shutting down",
                ),
            ));
        }
        Ok(())
    }

    /// Sleeps for `pause` (a compaction's throttle), or less if
    /// compactions are stopped meanwhile.
    pub(crate) fn compaction_pause(&self, pause: std::time::Duration) {
        let deadline = std::time::Instant::now() + pause;
        let mut signal = self.flusher_signal.0.lock();
        while !self.compactions_stopped.load(Ordering::Relaxed) {
            let now = std::time::Instant::now();
            if now >= deadline {
                return;
            }
            self.flusher_signal.1.wait_for(&mut signal, deadline - now);
        }
    }

    fn compaction_worker(&self) {
        loop {
            {
                let mut signal = self.flusher_signal.0.lock();
                if signal.1 {
                    return;
                }
                self.flusher_signal
                    .1
                    .wait_for(&mut signal, COMPACTION_CHECK_INTERVAL);
                if signal.1 {
                    return;
                }
            }
            let ids: Vec<TableId> = self.tables.read().keys().copied().collect();
            for id in ids {
                let now = self.now_seconds();
                let mut rounds = 0;
                loop {
                    match self.compact_once(id, now) {
                        Ok(true) if rounds < MAX_TASKS_PER_ROUND => rounds += 1,
                        Ok(_) => break,
                        Err(Error::UnknownTable(_)) => break,
                        Err(_) if self.compactions_stopped.load(Ordering::Relaxed) => return,
                        Err(e) => {
                            tracing::error!("compaction of table {id:032x} failed: {e}");
                            break;
                        }
                    }
                    if self.shutting_down() {
                        return;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_concurrent_compactors_is_bounded() {
        assert_eq!(resolve_concurrent_compactors(3), 3);
        let d = resolve_concurrent_compactors(0);
        assert!((1..=DEFAULT_CONCURRENT_COMPACTORS_MAX).contains(&d));
    }
}
