//! The read stage: where statements that need the disk run.
//!
//! Statements run on the event loop inside a non-blocking scope
//! ([`varve_query::NonBlocking`]). One that needs a chunk in neither the
//! chunk cache nor the page cache (or memtable memory past the hard
//! limit) fails with `WouldBlock` before it changed anything, and comes
//! here: it waits for one of `concurrent_reads` slots (as a future, with no
//! thread), then runs again on the blocking pool, where its reads may wait,
//! and its answer goes to its connection like any other. So the event loop
//! never waits on the disk, and the disk sees up to `concurrent_reads`
//! reads at once (docs/design/read-path-io.md).
//!
//! A statement whose connection closed while it waited for a slot is
//! dropped unrun, and its slot goes to the next.

use std::sync::Arc;

use tokio::sync::Semaphore;
use varve_metrics::{names, Counter, Gauge, Registry};

use crate::read_route::ReadRoute;

/// The read stage's slots and instruments.
pub struct ReadStage {
    slots: Arc<Semaphore>,
    size: usize,
    active: Arc<Gauge>,
    pending: Arc<Gauge>,
    completed: Arc<Counter>,
    cancelled: Arc<Counter>,
    /// Statements sent here without a first run on the event loop.
    direct: Arc<Counter>,
    route: ReadRoute,
    /// Statements run and their total time (µs) since the last
    /// [`ReadStage::take_window`]: what the compaction throttle watches.
    window: parking_lot::Mutex<(u64, u64)>,
}

impl std::fmt::Debug for ReadStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadStage")
            .field("size", &self.size)
            .field("free", &self.slots.available_permits())
            .finish()
    }
}

/// Counts what a gauge counts while alive.
struct Held(Arc<Gauge>);

impl Held {
    fn new(gauge: &Arc<Gauge>) -> Self {
        gauge.add(1.0);
        Held(gauge.clone())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.0.add(-1.0);
    }
}

impl ReadStage {
    /// A stage of `size` slots (at least one), its instruments in
    /// `registry`.
    pub fn new(size: usize, registry: &Registry) -> Self {
        let size = size.max(1);
        ReadStage {
            slots: Arc::new(Semaphore::new(size)),
            size,
            active: registry.gauge(names::READ_STAGE_ACTIVE, &[]),
            pending: registry.gauge(names::READ_STAGE_PENDING, &[]),
            completed: registry.counter(names::READ_STAGE_COMPLETED, &[]),
            cancelled: registry.counter(names::READ_STAGE_CANCELLED, &[]),
            direct: registry.counter(names::READ_STAGE_DIRECT, &[]),
            route: ReadRoute::default(),
            window: parking_lot::Mutex::new((0, 0)),
        }
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// Slots free now.
    pub fn free(&self) -> usize {
        self.slots.available_permits()
    }

    pub fn completed(&self) -> u64 {
        self.completed.get()
    }

    pub fn cancelled(&self) -> u64 {
        self.cancelled.get()
    }

    /// Which prepared statements skip their first run on the event loop.
    pub fn route(&self) -> &ReadRoute {
        &self.route
    }

    /// Counts a statement sent here without a first run on the event loop.
    pub fn count_direct(&self) {
        self.direct.inc();
    }

    /// Statements waiting for a slot now.
    pub fn pending(&self) -> u64 {
        self.pending.get().max(0.0) as u64
    }

    /// The statements run since the last call and their total time in µs.
    pub fn take_window(&self) -> (u64, u64) {
        std::mem::take(&mut *self.window.lock())
    }

    /// Runs `work` on a slot once one is free, unless `cancelled()` says
    /// by then that nobody waits for its answer (it then never runs), and
    /// hands its result to `done`. `work` may block; `done` runs on the
    /// event loop. A panic in `work` reaches `done` as an error.
    pub fn spawn<T, W, C, D, F>(self: &Arc<Self>, work: W, cancelled: C, done: D)
    where
        T: Send + 'static,
        W: FnOnce() -> T + Send + 'static,
        C: FnOnce() -> bool + Send + 'static,
        D: FnOnce(Result<T, tokio::task::JoinError>) -> F + Send + 'static,
        F: std::future::Future<Output = ()> + Send,
    {
        let stage = Arc::clone(self);
        let waiting = Held::new(&stage.pending);
        tokio::spawn(async move {
            let Ok(slot) = stage.slots.clone().acquire_owned().await else {
                return; // closed: never happens, the stage owns it
            };
            drop(waiting);
            if cancelled() {
                stage.cancelled.inc();
                return;
            }
            let running = Held::new(&stage.active);
            let started = std::time::Instant::now();
            let result = tokio::task::spawn_blocking(work).await;
            let took_us = started.elapsed().as_micros() as u64;
            drop(running);
            drop(slot);
            stage.completed.inc();
            {
                let mut w = stage.window.lock();
                w.0 += 1;
                w.1 += took_us;
            }
            done(result).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::time::Duration;
    use tokio::sync::mpsc;

    /// Opens on drop too, so a failing test never leaves a blocking
    /// thread waiting for it.
    struct Gate(Arc<AtomicBool>);

    impl Drop for Gate {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    fn stage(size: usize) -> Arc<ReadStage> {
        Arc::new(ReadStage::new(size, &Registry::default()))
    }

    /// Many statements in flight finish in any order, each with its own
    /// result, and no more run at once than the stage has slots.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_in_flight_finish_in_any_order_each_with_its_result() {
        let stage = stage(4);
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let (tx, mut rx) = mpsc::channel(64);
        for i in 0..32u64 {
            let (running, most, tx) = (running.clone(), most.clone(), tx.clone());
            stage.spawn(
                move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    // Later ones finish first: the order is the disk's.
                    std::thread::sleep(Duration::from_millis(40 - i));
                    running.fetch_sub(1, Ordering::SeqCst);
                    i * i
                },
                || false,
                move |r| async move {
                    let _ = tx.send((i, r.unwrap())).await;
                },
            );
        }
        drop(tx);
        let mut got = Vec::new();
        while let Some(x) = rx.recv().await {
            got.push(x);
        }
        assert_eq!(got.len(), 32);
        assert!(got.iter().all(|(i, sq)| *sq == i * i), "{got:?}");
        let mut order: Vec<u64> = got.iter().map(|(i, _)| *i).collect();
        assert!(
            order.windows(2).any(|w| w[0] > w[1]),
            "finished in order: {order:?}"
        );
        order.sort();
        assert_eq!(order, (0..32).collect::<Vec<_>>());
        assert!(most.load(Ordering::SeqCst) <= 4, "more than 4 ran at once");
        assert_eq!(stage.completed(), 32);
        assert_eq!(stage.free(), 4);
        assert_eq!(stage.pending.get(), 0.0);
        assert_eq!(stage.active.get(), 0.0);
    }

    /// A statement cancelled while it waits for a slot never runs, and its
    /// slot goes to the next one.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cancelled_statement_never_runs_and_frees_its_slot() {
        let stage = stage(1);
        let gate = Gate(Arc::new(AtomicBool::new(false)));
        let ran = Arc::new(AtomicUsize::new(0));
        let (tx, mut rx) = mpsc::channel(4);
        // The first holds the only slot until the gate opens.
        let g = gate.0.clone();
        let t = tx.clone();
        stage.spawn(
            move || {
                // Bounded, so that a failed assertion below cannot leave
                // the runtime waiting on this thread forever.
                let until = std::time::Instant::now() + Duration::from_secs(30);
                while !g.load(Ordering::SeqCst) && std::time::Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(1));
                }
            },
            || false,
            move |_| async move {
                let _ = t.send("first").await;
            },
        );
        // The first holds the slot before the others come.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while stage.active.get() != 1.0 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(stage.active.get(), 1.0, "the first runs");
        // The second waits, and its connection closes meanwhile.
        let r = ran.clone();
        let t = tx.clone();
        stage.spawn(
            move || {
                r.fetch_add(1, Ordering::SeqCst);
            },
            || true,
            move |_| async move {
                let _ = t.send("cancelled").await;
            },
        );
        // The third still gets the slot.
        let t = tx.clone();
        stage.spawn(
            || 3,
            || false,
            move |r| async move {
                assert_eq!(r.unwrap(), 3);
                let _ = t.send("third").await;
            },
        );
        drop(tx);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(stage.pending.get(), 2.0, "both wait for the slot");
        gate.0.store(true, Ordering::SeqCst);
        let mut got = Vec::new();
        while let Some(x) = rx.recv().await {
            got.push(x);
        }
        assert_eq!(got, vec!["first", "third"]);
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        assert_eq!(stage.cancelled(), 1);
        assert_eq!(stage.completed(), 2);
        assert_eq!(stage.free(), 1);
    }

    #[tokio::test]
    async fn a_panic_reaches_done_as_an_error() {
        let stage = stage(2);
        let (tx, mut rx) = mpsc::channel(1);
        stage.spawn(
            || -> u32 { panic!("boom") },
            || false,
            move |r| async move {
                let _ = tx.send(r.is_err()).await;
            },
        );
        assert_eq!(rx.recv().await, Some(true));
        assert_eq!(stage.free(), 2);
    }

    #[test]
    fn a_stage_has_at_least_one_slot() {
        assert_eq!(ReadStage::new(0, &Registry::default()).size(), 1);
    }
}
