//! [`SeededRuntime`]: openraft's `AsyncRuntime` on tokio, with the node's
//! [`SeededRng`] in place of the thread-local generator openraft draws
//! its election timeouts from (docs/design/cluster.md, section 3).
//!
//! openraft calls the runtime through static functions, so the node's
//! generator travels in a tokio task-local: `Raft::new` runs inside
//! [`with_node_rng`], and every task openraft spawns through this runtime
//! inherits the generator of the task that spawned it. A draw outside any
//! node (there should be none) uses a fixed seed, never the thread's.
//!
//! Time is tokio's, as `Env`'s clocks are (`SystemClock`, and the
//! simulation's paused time): openraft's timers need plain futures, so
//! this is the one place the crate calls tokio's sleep and timeout
//! directly.
#![allow(clippy::disallowed_methods)]

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use openraft::async_runtime::TokioOneShotSender;
use openraft::{AsyncRuntime, OptionalSend, TokioInstant};
use rand::RngCore;

use crate::env::SeededRng;

tokio::task_local! {
    static NODE_RNG: Arc<SeededRng>;
}

/// Runs `fut` (and every task openraft spawns from it) with `rng` as
/// openraft's random generator.
pub async fn with_node_rng<F: Future>(rng: Arc<SeededRng>, fut: F) -> F::Output {
    NODE_RNG.scope(rng, fut).await
}

/// The generator of the current node, or the fixed fallback.
#[derive(Debug, Clone)]
pub struct NodeRng(Arc<SeededRng>);

fn fallback() -> Arc<SeededRng> {
    static FALLBACK: OnceLock<Arc<SeededRng>> = OnceLock::new();
    FALLBACK.get_or_init(|| Arc::new(SeededRng::new(0))).clone()
}

impl RngCore for NodeRng {
    fn next_u32(&mut self) -> u32 {
        (self.0.next_u64() >> 32) as u32
    }

    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for chunk in dest.chunks_mut(8) {
            let bytes = self.0.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

/// tokio, with the node's seeded generator.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct SeededRuntime;

impl AsyncRuntime for SeededRuntime {
    type JoinError = tokio::task::JoinError;
    type JoinHandle<T: OptionalSend + 'static> = tokio::task::JoinHandle<T>;
    type Sleep = tokio::time::Sleep;
    type Instant = TokioInstant;
    type TimeoutError = tokio::time::error::Elapsed;
    type Timeout<R, T: Future<Output = R> + OptionalSend> = tokio::time::Timeout<T>;
    type ThreadLocalRng = NodeRng;
    type OneshotSender<T: OptionalSend> = TokioOneShotSender<T>;
    type OneshotReceiver<T: OptionalSend> = tokio::sync::oneshot::Receiver<T>;
    type OneshotReceiverError = tokio::sync::oneshot::error::RecvError;

    fn spawn<T>(future: T) -> Self::JoinHandle<T::Output>
    where
        T: Future + OptionalSend + 'static,
        T::Output: OptionalSend + 'static,
    {
        match NODE_RNG.try_with(Arc::clone) {
            Ok(rng) => tokio::spawn(NODE_RNG.scope(rng, future)),
            Err(_) => tokio::spawn(future),
        }
    }

    fn sleep(duration: Duration) -> Self::Sleep {
        tokio::time::sleep(duration)
    }

    fn sleep_until(deadline: Self::Instant) -> Self::Sleep {
        tokio::time::sleep_until(deadline)
    }

    fn timeout<R, F: Future<Output = R> + OptionalSend>(
        duration: Duration,
        future: F,
    ) -> Self::Timeout<R, F> {
        tokio::time::timeout(duration, future)
    }

    fn timeout_at<R, F: Future<Output = R> + OptionalSend>(
        deadline: Self::Instant,
        future: F,
    ) -> Self::Timeout<R, F> {
        tokio::time::timeout_at(deadline, future)
    }

    fn is_panic(join_error: &Self::JoinError) -> bool {
        join_error.is_panic()
    }

    fn thread_rng() -> Self::ThreadLocalRng {
        NodeRng(NODE_RNG.try_with(Arc::clone).unwrap_or_else(|_| fallback()))
    }

    fn oneshot<T>() -> (Self::OneshotSender<T>, Self::OneshotReceiver<T>)
    where
        T: OptionalSend,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        (TokioOneShotSender(tx), rx)
    }
}

#[cfg(test)]
mod tests {
    use rand::Rng;

    use super::*;

    #[tokio::test]
    async fn spawned_tasks_draw_from_the_node_generator() {
        let draw = || async {
            let task = SeededRuntime::spawn(async { SeededRuntime::thread_rng().gen::<u64>() });
            task.await.expect("task")
        };
        let a = with_node_rng(Arc::new(SeededRng::new(5)), draw()).await;
        let b = with_node_rng(Arc::new(SeededRng::new(5)), draw()).await;
        let c = with_node_rng(Arc::new(SeededRng::new(6)), draw()).await;
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a, SeededRng::new(5).next_u64());
    }
}
