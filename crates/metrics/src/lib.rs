//! varve-metrics: the node's metrics, recorded lock-free on the hot path and
//! rendered for Prometheus (text exposition format 0.0.4) or as flat rows for
//! a CQL virtual table.
//!
//! Pieces:
//! - [`Counter`], [`Gauge`]: one atomic each.
//! - [`LatencyHistogram`]: log-linear buckets over 1 µs .. 60 s with ≤ 1.6 %
//!   relative error, all-time totals plus a rotating *recent* view (see the
//!   module doc of [`histogram`]).
//! - [`Meter`]: a count with mean and exponentially weighted 1/5/15-minute
//!   rates, ticked every 5 s.
//! - [`Registry`]: named families with labels; handing out the same
//!   `Arc` for the same name and labels, rendering in sorted order.
//! - [`process`]: CPU, RSS, open fds, threads from `/proc` (fails soft).
//! - [`names`]: every metric name the workspace records into, as constants.
//!
//! Invariants: recording never allocates, locks or panics; only registration
//! and rendering take the registry lock. Design and the name table that maps
//! each metric to the Cassandra metric it mirrors: `docs/design/metrics.md`.
//! This crate depends on no other Varve crate, so every crate can use it.

pub mod error;
pub mod histogram;
pub mod instruments;
pub mod meter;
pub mod names;
pub mod process;
pub mod registry;
pub mod render;

pub use error::{Error, Result};
pub use histogram::{LatencyHistogram, Snapshot};
pub use instruments::{Counter, Gauge};
pub use meter::{Meter, Rates};
pub use process::ProcessStats;
pub use registry::{Kind, Registry, RegistryOptions, Row, Ticker};
pub use render::CONTENT_TYPE;
