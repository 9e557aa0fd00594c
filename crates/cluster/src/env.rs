//! `Env`: the one owner of a node's sockets, timers and randomness
//! (docs/design/cluster.md, section 4.5).
//!
//! Cluster code reaches the network only through [`Network`], time only
//! through [`Clock`] and chance only through [`SeededRng`], so the same
//! code runs over TCP here and over a simulated, seeded network in the
//! simulation (`sim/env.rs` implements them over turmoil). The traits are
//! object-safe: futures are boxed, streams are `Box<dyn Stream>`, one
//! allocation per connection. `crates/cluster/clippy.toml` forbids the
//! direct calls (`Instant::now`, `TcpStream::connect`, `tokio::time::sleep`
//! ...) everywhere but in the production implementations of
//! [`system`] (and turmoil's, test-only). Signals that tasks wait on are
//! [`StopSignal`]s, which wake their waiters in a fixed order.
//!
//! The file system of the design's `Env` joins it with the steps that
//! store cluster state (hints, the metadata log).

pub mod rng;
pub mod stop;
pub mod system;
pub mod tls;

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

pub use rng::SeededRng;
pub use stop::StopSignal;
pub use system::{SystemClock, TokioNetwork};

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A byte stream: a TCP connection, or a simulated one.
pub trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for T {}

/// A connection as the network hands it out.
pub type BoxStream = Box<dyn Stream>;

/// A bound listening socket.
pub trait Listener: Send + Sync {
    /// The next inbound connection and the peer's address.
    fn accept(&self) -> BoxFuture<'_, io::Result<(BoxStream, SocketAddr)>>;
    /// The address it listens on (with the port chosen, if 0 was asked).
    fn local_addr(&self) -> io::Result<SocketAddr>;
}

/// Opening connections and listening for them.
pub trait Network: Send + Sync + 'static {
    fn bind(&self, addr: SocketAddr) -> BoxFuture<'_, io::Result<Box<dyn Listener>>>;
    fn connect(&self, addr: SocketAddr) -> BoxFuture<'_, io::Result<BoxStream>>;
}

/// Time, monotonic and wall-clock.
pub trait Clock: Send + Sync + 'static {
    /// Monotonic time (tokio's, which a simulation pauses and advances).
    fn now(&self) -> Instant;
    /// Resolves once `duration` has passed on this clock.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
    /// Microseconds since the Unix epoch (write timestamps, TTLs,
    /// timeuuids); a simulation skews it per node.
    fn wall_micros(&self) -> i64;
}

/// Why [`timeout`] gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("timed out")]
pub struct Elapsed;

/// Runs `fut` until it finishes or `duration` passes on `clock`.
pub async fn timeout<F: Future>(
    clock: &dyn Clock,
    duration: Duration,
    fut: F,
) -> Result<F::Output, Elapsed> {
    let sleep = clock.sleep(duration);
    tokio::select! {
        biased;
        out = fut => Ok(out),
        () = sleep => Err(Elapsed),
    }
}

/// The network, clock and randomness of one node.
#[derive(Clone)]
pub struct Env {
    pub net: Arc<dyn Network>,
    pub clock: Arc<dyn Clock>,
    pub rng: Arc<SeededRng>,
}

impl Env {
    /// Real TCP through tokio, the system clock, and an RNG seeded with
    /// `seed` (print it with any failure that depends on it).
    pub fn tokio(seed: u64) -> Env {
        Env {
            net: Arc::new(TokioNetwork::ANY_SOURCE),
            clock: Arc::new(SystemClock),
            rng: Arc::new(SeededRng::new(seed)),
        }
    }
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("rng", &self.rng)
            .finish_non_exhaustive()
    }
}
