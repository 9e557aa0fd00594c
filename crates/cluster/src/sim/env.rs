//! [`Env`] over turmoil: the simulated hosts' TCP and time, so
//! `Messaging` and `Gossiper` run unchanged inside a simulation.
//!
//! Monotonic time is tokio's: each turmoil host runs on its own
//! current-thread runtime with paused time that turmoil advances tick by
//! tick, so [`SimClock::now`] and [`SimClock::sleep`] are tokio's own, as
//! in the production clock. The wall clock is turmoil's simulated epoch
//! plus this node's skew, which the nemesis moves ([`Skew`]). Like
//! `env/system.rs`, this is one of the two places in the crate allowed to
//! call timers directly (crates/cluster/clippy.toml).
//!
//! Every call must come from inside a turmoil host: turmoil keeps its
//! world in a thread-local.

#![allow(clippy::disallowed_methods)]

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::env::{BoxFuture, BoxStream, Clock, Env, Listener, Network, SeededRng};

/// TCP between simulated hosts.
#[derive(Debug, Clone, Copy, Default)]
pub struct SimNetwork;

/// turmoil binds only the wildcard address: the listener binds that on
/// the port asked and reports the address asked (the host's own), which
/// is what messaging tells its peers.
struct SimListener {
    inner: turmoil::net::TcpListener,
    addr: SocketAddr,
}

impl Listener for SimListener {
    fn accept(&self) -> BoxFuture<'_, io::Result<(BoxStream, SocketAddr)>> {
        Box::pin(async move {
            let (stream, addr) = self.inner.accept().await?;
            Ok((Box::new(stream) as BoxStream, addr))
        })
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.addr)
    }
}

impl Network for SimNetwork {
    fn bind(&self, addr: SocketAddr) -> BoxFuture<'_, io::Result<Box<dyn Listener>>> {
        Box::pin(async move {
            let wildcard = SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), addr.port());
            let inner = turmoil::net::TcpListener::bind(wildcard).await?;
            let port = inner.local_addr()?.port();
            let addr = SocketAddr::new(addr.ip(), port);
            Ok(Box::new(SimListener { inner, addr }) as Box<dyn Listener>)
        })
    }

    fn connect(&self, addr: SocketAddr) -> BoxFuture<'_, io::Result<BoxStream>> {
        Box::pin(async move {
            let stream = turmoil::net::TcpStream::connect(addr).await?;
            Ok(Box::new(stream) as BoxStream)
        })
    }
}

/// A node's wall-clock offset from simulated time, in microseconds; the
/// nemesis holds a clone and moves it.
#[derive(Debug, Clone, Default)]
pub struct Skew(Arc<AtomicI64>);

impl Skew {
    pub fn set_micros(&self, micros: i64) {
        self.0.store(micros, Ordering::Relaxed);
    }

    pub fn micros(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Simulated time as a [`Clock`]; see the module docs.
#[derive(Debug, Clone, Default)]
pub struct SimClock {
    skew: Skew,
}

impl SimClock {
    pub fn new(skew: Skew) -> SimClock {
        SimClock { skew }
    }
}

impl Clock for SimClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }

    fn wall_micros(&self) -> i64 {
        let since_epoch = turmoil::since_epoch().unwrap_or_default();
        let micros = i64::try_from(since_epoch.as_micros()).unwrap_or(i64::MAX);
        micros.saturating_add(self.skew.micros())
    }
}

/// The environment of one simulated node: turmoil's network, simulated
/// time with `skew`, and an RNG seeded with `seed`.
pub fn sim_env(seed: u64, skew: Skew) -> Env {
    Env {
        net: Arc::new(SimNetwork),
        clock: Arc::new(SimClock::new(skew)),
        rng: Arc::new(SeededRng::new(seed)),
    }
}
