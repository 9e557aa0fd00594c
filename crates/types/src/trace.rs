//! Query tracing's recording side: the [`Session`] of a traced request
//! and [`event`], which any crate calls to record a step of the request
//! the thread runs (like Cassandra's static `Tracing.trace`). The query
//! layer writes sessions into `system_traces` (docs/design/tracing.md).
//!
//! The server runs a traced request's future inside [`run`], which makes
//! its session the thread's current one for each poll; [`event`] with no
//! current session returns after one relaxed load of a global counter of
//! live sessions (zero when nothing is traced), and never builds its text.

use std::cell::RefCell;
use std::future::Future;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// Sessions alive now, anywhere in the process: while it is zero,
/// [`event`] does not look at the thread's current session.
static LIVE_SESSIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The session of the request this thread is polling, if traced.
    static CURRENT: RefCell<Option<Arc<Session>>> = const { RefCell::new(None) };
}

/// Events one session keeps at most; later ones are dropped (a request
/// that reads thousands of partitions would otherwise grow without bound).
pub const MAX_EVENTS_PER_SESSION: usize = 1000;

/// One step of a traced request.
#[derive(Debug, Clone)]
pub struct Event {
    /// A version-1 uuid taken when the step happened (the clustering key).
    pub id: [u8; 16],
    /// Microseconds since the session began (`source_elapsed`).
    pub elapsed_micros: i32,
    pub activity: String,
    /// The thread's name, as Cassandra records its stage's thread.
    pub thread: String,
}

/// A traced request: its id, when it began, and the steps recorded so far.
#[derive(Debug)]
pub struct Session {
    /// A version-1 uuid: the tracing id the response carries.
    id: [u8; 16],
    started: Instant,
    started_at_millis: i64,
    client: Option<IpAddr>,
    events: Mutex<Vec<Event>>,
}

impl Session {
    /// Begins a session for a request from `client` that began at
    /// `started` (a request run a second time keeps its first instant).
    pub fn begin(client: Option<IpAddr>, started: Instant) -> Arc<Session> {
        LIVE_SESSIONS.fetch_add(1, Ordering::Relaxed);
        let since_start = started.elapsed().as_millis() as i64;
        Arc::new(Session {
            id: crate::time::new_timeuuid(),
            started,
            started_at_millis: crate::time::now_millis() - since_start,
            client,
            events: Mutex::new(Vec::new()),
        })
    }

    /// The tracing id (a timeuuid).
    pub fn id(&self) -> [u8; 16] {
        self.id
    }

    /// Microseconds since the request began, as an `int` column holds them.
    pub fn elapsed_micros(&self) -> i32 {
        i32::try_from(self.started.elapsed().as_micros()).unwrap_or(i32::MAX)
    }

    /// Records one step now.
    pub fn add(&self, activity: String) {
        let mut events = self.lock();
        if events.len() >= MAX_EVENTS_PER_SESSION {
            return;
        }
        let thread = std::thread::current();
        events.push(Event {
            id: crate::time::new_timeuuid(),
            elapsed_micros: self.elapsed_micros(),
            activity,
            thread: thread.name().unwrap_or("unnamed").to_string(),
        });
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Event>> {
        // A panic while pushing leaves a whole vector: keep using it.
        self.events.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// When the request began, in milliseconds since the epoch.
    pub fn started_at_millis(&self) -> i64 {
        self.started_at_millis
    }

    /// The client's address, when known.
    pub fn client(&self) -> Option<IpAddr> {
        self.client
    }

    /// The steps recorded so far, in order.
    pub fn events(&self) -> Vec<Event> {
        self.lock().clone()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        LIVE_SESSIONS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Records a step of the request this thread runs, if it is traced;
/// `activity` runs only then.
#[inline]
pub fn event(activity: impl FnOnce() -> String) {
    if LIVE_SESSIONS.load(Ordering::Relaxed) == 0 {
        return;
    }
    let session = CURRENT.with(|c| c.borrow().clone());
    if let Some(s) = session {
        s.add(activity());
    }
}

/// Whether the request this thread runs is traced (to skip work that
/// only feeds [`event`]).
pub fn is_tracing() -> bool {
    LIVE_SESSIONS.load(Ordering::Relaxed) != 0 && CURRENT.with(|c| c.borrow().is_some())
}

/// Makes `session` the thread's current one until the guard drops, which
/// puts back the one before.
struct Entered(Option<Arc<Session>>);

impl Entered {
    fn enter(session: &Arc<Session>) -> Entered {
        Entered(CURRENT.with(|c| c.replace(Some(Arc::clone(session)))))
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// Runs `fut` with `session` current on whichever thread polls it, so
/// every [`event`] it records lands in the session; without a session,
/// just `fut`.
pub async fn run<F: Future>(session: Option<&Arc<Session>>, fut: F) -> F::Output {
    let Some(session) = session else {
        return fut.await;
    };
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| {
        let _entered = Entered::enter(session);
        fut.as_mut().poll(cx)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<F: Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        loop {
            if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
        }
    }

    #[test]
    fn events_land_only_in_the_running_session() {
        let s = Session::begin(None, Instant::now());
        event(|| "outside".into());
        block_on(run(Some(&s), async {
            event(|| "first".into());
            event(|| "second".into());
        }));
        event(|| "after".into());
        let names: Vec<String> = s.events().into_iter().map(|e| e.activity).collect();
        assert_eq!(names, ["first", "second"]);
        assert!(!is_tracing());
    }

    #[test]
    fn untraced_requests_never_build_the_activity() {
        let _other = Session::begin(None, Instant::now());
        block_on(run(None, async {
            event(|| panic!("built an activity without a session"));
        }));
    }

    #[test]
    fn elapsed_times_increase_and_ids_order_events() {
        let s = Session::begin(None, Instant::now());
        block_on(run(Some(&s), async {
            for i in 0..5 {
                event(|| format!("step {i}"));
            }
        }));
        let events = s.events();
        for pair in events.windows(2) {
            assert!(pair[0].elapsed_micros <= pair[1].elapsed_micros);
            assert!(
                crate::time::timeuuid_ticks(&pair[0].id) < crate::time::timeuuid_ticks(&pair[1].id)
            );
        }
    }

    #[test]
    fn a_session_keeps_a_bounded_number_of_events() {
        let s = Session::begin(None, Instant::now());
        for i in 0..MAX_EVENTS_PER_SESSION + 5 {
            s.add(format!("{i}"));
        }
        assert_eq!(s.events().len(), MAX_EVENTS_PER_SESSION);
    }

    #[test]
    fn nested_sessions_restore_the_outer_one() {
        let outer = Session::begin(None, Instant::now());
        let inner = Session::begin(None, Instant::now());
        block_on(run(Some(&outer), async {
            block_on(run(Some(&inner), async { event(|| "inner".into()) }));
            event(|| "outer".into());
        }));
        assert_eq!(outer.events().len(), 1);
        assert_eq!(inner.events()[0].activity, "inner");
    }
}
