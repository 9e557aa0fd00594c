//! Hinted handoff (docs/design/cluster.md, section 8.5): a write that a
//! replica missed (it was DOWN, or did not answer in time) is kept by the
//! coordinator ([`store`], files in [`file`]'s format) and delivered when
//! the replica is back ([`dispatch`]).

pub mod dispatch;
pub mod file;
pub mod store;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use varve_metrics::{names, Counter, Registry};

pub use dispatch::HintDispatcher;
pub use store::HintStore;

/// `max_hint_window`: a node DOWN longer than this gets no more hints.
pub const DEFAULT_MAX_HINT_WINDOW: Duration = Duration::from_secs(3 * 3600);
/// Varve's `hints_space_total`: all hints on a node.
pub const DEFAULT_HINTS_SPACE_TOTAL: u64 = 4 * 1024 * 1024 * 1024;
/// `hinted_handoff_throttle`: delivery rate, shared by the other nodes.
pub const DEFAULT_THROTTLE_BYTES_PER_SEC: u64 = 1024 * 1024;
/// `hints_flush_period`.
pub const DEFAULT_FLUSH_PERIOD: Duration = Duration::from_secs(10);

/// The hint settings (cassandra.yaml's names).
#[derive(Debug, Clone)]
pub struct HintsConfig {
    /// `hints_directory`.
    pub dir: PathBuf,
    /// `hinted_handoff_enabled`.
    pub enabled: bool,
    /// `max_hint_window`.
    pub max_window: Duration,
    /// `max_hints_size_per_host` (0: no limit).
    pub max_bytes_per_host: u64,
    /// `hints_space_total` (Varve's).
    pub max_bytes_total: u64,
    /// `hinted_handoff_throttle`, in bytes per second.
    pub throttle_bytes_per_sec: u64,
    /// `hints_flush_period`.
    pub flush_period: Duration,
}

impl HintsConfig {
    /// The defaults, hints in `dir`.
    pub fn new(dir: PathBuf) -> HintsConfig {
        HintsConfig {
            dir,
            enabled: true,
            max_window: DEFAULT_MAX_HINT_WINDOW,
            max_bytes_per_host: 0,
            max_bytes_total: DEFAULT_HINTS_SPACE_TOTAL,
            throttle_bytes_per_sec: DEFAULT_THROTTLE_BYTES_PER_SEC,
            flush_period: DEFAULT_FLUSH_PERIOD,
        }
    }
}

/// Hints created, delivered and dropped.
#[derive(Debug, Clone)]
pub struct HintsMetrics {
    pub created: Arc<Counter>,
    pub replayed: Arc<Counter>,
    pub dropped: Arc<Counter>,
}

impl HintsMetrics {
    pub fn new(registry: &Registry) -> HintsMetrics {
        HintsMetrics {
            created: registry.counter(names::HINTS_CREATED, &[]),
            replayed: registry.counter(names::HINTS_REPLAYED, &[]),
            dropped: registry.counter(names::HINTS_DROPPED, &[]),
        }
    }

    pub fn detached() -> HintsMetrics {
        HintsMetrics::new(&Registry::new())
    }
}

#[cfg(test)]
mod tests;
