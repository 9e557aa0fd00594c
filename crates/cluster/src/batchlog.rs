//! Logged batches (docs/design/cluster.md, section 8.6): before it writes
//! a logged batch, the coordinator has up to two other UP nodes of its
//! data centre keep the whole batch ([`store`]); once the writes are done
//! it tells them to forget it. A holder replays a batch it still keeps
//! [`REPLAY_AFTER_TIMEOUTS`] write timeouts after it was created (its
//! coordinator died, or a write failed), checking every
//! [`REPLAY_INTERVAL`]: every mutation is written at ANY (replicas that are
//! DOWN get hints), then the batch goes. So a batch is applied whole or
//! not at all, eventually, even when its coordinator dies half-way.

pub mod store;

use std::time::Duration;

pub use store::BatchlogStore;

/// How often a holder looks for batches to replay (fixed, as in Cassandra).
pub const REPLAY_INTERVAL: Duration = Duration::from_secs(10);
/// A batch is replayed once it is older than this many write timeouts.
pub const REPLAY_AFTER_TIMEOUTS: u32 = 2;
/// Holders of a batch besides the coordinator, at most.
pub const BATCHLOG_HOLDERS: usize = 2;
