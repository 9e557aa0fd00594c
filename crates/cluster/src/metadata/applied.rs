//! [`AppliedState`]: the last applied metadata, published to readers
//! (lock-free, through `ArcSwap`), to the owner's listener, and to the
//! tasks waiting for an epoch, in that order.

use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio::sync::Notify;

use super::{ClusterMetadata, MetadataError, MetadataListener};
use crate::env::StopSignal;

pub struct AppliedState {
    current: ArcSwap<ClusterMetadata>,
    changed: Notify,
    listener: Option<Arc<dyn MetadataListener>>,
    /// Set when the log shuts down: waits end with `Shutdown`.
    pub stop: StopSignal,
}

impl AppliedState {
    pub fn new(listener: Option<Arc<dyn MetadataListener>>) -> AppliedState {
        AppliedState {
            current: ArcSwap::from_pointee(ClusterMetadata::default()),
            changed: Notify::new(),
            listener,
            stop: StopSignal::new(),
        }
    }

    pub fn current(&self) -> Arc<ClusterMetadata> {
        self.current.load_full()
    }

    /// Tells the listener, then readers, then waiters.
    pub fn publish(&self, metadata: Arc<ClusterMetadata>) {
        if let Some(listener) = &self.listener {
            listener.applied(&metadata);
        }
        self.current.store(metadata);
        self.changed.notify_waiters();
    }

    /// Returns once `epoch` is applied, or `Shutdown` once stopped.
    pub async fn wait(&self, epoch: u64) -> Result<(), MetadataError> {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.current.load().epoch >= epoch {
                return Ok(());
            }
            if self.stop.is_stopped() {
                return Err(MetadataError::Shutdown);
            }
            tokio::select! {
                biased;
                () = self.stop.wait() => return Err(MetadataError::Shutdown),
                () = changed => {}
            }
        }
    }
}

impl std::fmt::Debug for AppliedState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppliedState")
            .field("epoch", &self.current.load().epoch)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    #[tokio::test]
    async fn waiters_wake_at_their_epoch_and_the_listener_hears_first() {
        let heard = Arc::new(AtomicU64::new(0));
        let seen = heard.clone();
        let listener = move |m: &Arc<ClusterMetadata>| seen.store(m.epoch, Ordering::SeqCst);
        let state = Arc::new(AppliedState::new(Some(Arc::new(listener))));
        let waiter = {
            let state = state.clone();
            tokio::spawn(async move { state.wait(2).await })
        };
        for epoch in 1..=2 {
            tokio::task::yield_now().await;
            assert!(!waiter.is_finished());
            let m = ClusterMetadata {
                epoch,
                ..ClusterMetadata::default()
            };
            state.publish(Arc::new(m));
            assert_eq!(heard.load(Ordering::SeqCst), epoch);
        }
        assert_eq!(waiter.await.unwrap(), Ok(()));
        assert_eq!(state.current().epoch, 2);
        state.stop.stop();
        assert_eq!(state.wait(3).await, Err(MetadataError::Shutdown));
    }
}
