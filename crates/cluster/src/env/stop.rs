//! [`StopSignal`]: a one-way "stop now" flag that tasks wait on, waking
//! them in the order they began waiting.
//!
//! tokio's `watch` channel would do the job but does not replay: it
//! spreads its waiters over eight `Notify`s chosen by tokio's thread-local
//! random generator, which is seeded only under `--cfg tokio_unstable`, and
//! wakes them `Notify` by `Notify`. When a signal stops a node's
//! connections, the order they close in reaches the network, so a seed of
//! the simulation would not replay (found by its determinism check).
//! `crates/cluster/clippy.toml` therefore refuses `watch` in this crate
//! outside the `Membership::changes` API.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// Set once; every waiter, present and future, then returns.
#[derive(Debug, Default)]
pub struct StopSignal {
    stopped: AtomicBool,
    notify: Notify,
}

impl StopSignal {
    pub fn new() -> StopSignal {
        StopSignal::default()
    }

    /// Sets the signal and wakes every waiter.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Returns once the signal is set (at once if it already is).
    pub async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Registered before the check, so a stop in between is seen.
            notified.as_mut().enable();
            if self.is_stopped() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[tokio::test]
    async fn waiters_return_once_stopped_and_late_ones_at_once() {
        let signal = Arc::new(StopSignal::new());
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let signal = signal.clone();
                tokio::spawn(async move { signal.wait().await })
            })
            .collect();
        tokio::task::yield_now().await;
        assert!(waiters.iter().all(|w| !w.is_finished()));
        signal.stop();
        for waiter in waiters {
            waiter.await.expect("waiter");
        }
        signal.wait().await;
        assert!(signal.is_stopped());
    }
}
