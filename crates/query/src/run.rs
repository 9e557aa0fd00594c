//! Driving a statement's future: once, inline, on the fast path, or to the
//! end on a thread that may wait.
//!
//! Statements are `async` because a cluster's data path waits for other
//! nodes; on one node every data path answer is ready at once, so a
//! statement finishes on its first poll. The server polls it once inline
//! ([`poll_once`]) and moves it into a task only when it is still pending.
//! [`block_on`] runs one to the end on the calling thread, for callers
//! outside any runtime (tests, tools).

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

/// Polls `f` once with a waker that does nothing: for a future whose
/// owner polls it again by other means if it is pending (the server moves
/// it into a task, whose waker then takes over).
pub fn poll_once<F: Future + ?Sized>(f: Pin<&mut F>) -> Poll<F::Output> {
    let mut cx = Context::from_waker(Waker::noop());
    f.poll(&mut cx)
}

/// Wakes a parked thread.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs `f` to the end on this thread, parking it while `f` is pending.
/// Not for a runtime's worker thread (it would stop the worker).
pub fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        thread::park();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ready_future_is_done_on_the_first_poll() {
        let mut f = pin!(async { 7 });
        assert_eq!(poll_once(f.as_mut()), Poll::Ready(7));
    }

    #[test]
    fn block_on_waits_for_a_wake_from_another_thread() {
        let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
        let sender = thread::spawn(move || {
            thread::sleep(std::time::Duration::from_millis(20));
            tx.send(5).expect("receiver alive");
        });
        let mut pending = pin!(rx);
        assert!(poll_once(pending.as_mut()).is_pending());
        assert_eq!(block_on(pending), Ok(5));
        sender.join().expect("sender thread");
    }
}
