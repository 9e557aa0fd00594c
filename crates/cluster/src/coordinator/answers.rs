//! Waiting for the first of several replicas' answers, without a task per
//! request: the coordinator keeps its requests in a list and takes each
//! answer as it comes.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;

use crate::net::{RequestError, Response, ResponseFuture};

/// Requests still waiting for an answer, each with its replica's index.
#[derive(Default)]
pub struct Pending {
    waiting: Vec<(usize, ResponseFuture)>,
}

impl Pending {
    pub fn push(&mut self, index: usize, answer: ResponseFuture) {
        self.waiting.push((index, answer));
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// The next answer (or failure, or timeout) and its replica's index;
    /// `None` when nothing waits.
    pub fn next_answer(
        &mut self,
    ) -> impl Future<Output = Option<(usize, Result<Response, RequestError>)>> + '_ {
        poll_fn(move |cx| {
            if self.waiting.is_empty() {
                return Poll::Ready(None);
            }
            for k in 0..self.waiting.len() {
                if let Poll::Ready(answer) = Pin::new(&mut self.waiting[k].1).poll(cx) {
                    let (index, _) = self.waiting.swap_remove(k);
                    return Poll::Ready(Some((index, answer)));
                }
            }
            Poll::Pending
        })
    }
}

/// A request's deadline, counted from when the coordinator took it. Its
/// timer is made only the first time something waits on it: a write that
/// this node alone acknowledges at once never registers one.
pub struct Deadline {
    clock: std::sync::Arc<dyn crate::env::Clock>,
    at: tokio::time::Instant,
    timer: Option<crate::env::BoxFuture<'static, ()>>,
}

impl Deadline {
    pub fn after(
        clock: &std::sync::Arc<dyn crate::env::Clock>,
        timeout: std::time::Duration,
    ) -> Deadline {
        Deadline {
            at: clock.now() + timeout,
            clock: std::sync::Arc::clone(clock),
            timer: None,
        }
    }

    /// Resolves when the deadline passes.
    pub async fn passed(&mut self) {
        let (clock, at) = (&self.clock, self.at);
        let timer = self
            .timer
            .get_or_insert_with(|| clock.sleep(at.saturating_duration_since(clock.now())));
        timer.await
    }
}
