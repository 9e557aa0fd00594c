//! The history lines of a movement run (`sim/movement.rs`): what the
//! metadata committed, what each node applied, the mover's attempts, and
//! the final phase's engines and repairs.

use std::fmt;

use super::history::NodeIndex;
use crate::metadata::ClusterMetadata;
use crate::net::HostId;

/// A step of the movement, as the history has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MovementEvent {
    /// The metadata committed `epoch`, which does `what`.
    Committed { epoch: u64, what: String },
    /// `node` applied `epoch` (its ring and its messaging's epoch).
    Applied { node: NodeIndex, epoch: u64 },
    /// The mover began an attempt (streaming, pushing, restoring).
    Streaming,
    /// The attempt succeeded; the metadata commits the last epoch.
    Streamed {
        ranges: usize,
        partitions: u64,
        bytes: u64,
        /// Whole sstables among what moved.
        files: u64,
    },
    /// `node` flushed a memtable of one partition.
    NarrowFlush { node: NodeIndex },
    /// The attempt failed; the mover tries again after a pause.
    Failed(String),
    /// The decommissioned node has left: its process stops.
    Left { node: NodeIndex },
    /// The final phase began: every node applied the last epoch.
    FinalPhase,
    /// The newest timestamp (cell or tombstone) `node`'s own engine holds
    /// of each key, at the start of the final phase, or once every node
    /// of the final ring has repaired (`repaired`).
    Holds {
        node: NodeIndex,
        repaired: bool,
        newest: Vec<Option<i64>>,
    },
    /// `node` repaired its primary ranges.
    Repaired {
        node: NodeIndex,
        ranges: usize,
        out_of_sync: usize,
    },
    /// `node`'s repair failed.
    RepairFailed { node: NodeIndex, why: String },
}

impl fmt::Display for MovementEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MovementEvent::Committed { epoch, what } => {
                write!(f, "metadata: epoch {epoch} committed: {what}")
            }
            MovementEvent::Applied { node, epoch } => write!(f, "n{node} applies epoch {epoch}"),
            MovementEvent::Streaming => f.write_str("the mover starts an attempt"),
            MovementEvent::Streamed {
                ranges,
                partitions,
                bytes,
                files,
            } => write!(
                f,
                "the mover moved {ranges} ranges ({partitions} partitions, {bytes} bytes, \
                 {files} whole sstables): done"
            ),
            MovementEvent::NarrowFlush { node } => {
                write!(f, "n{node} flushes a memtable of one partition")
            }
            MovementEvent::Failed(why) => write!(f, "the attempt failed: {why}"),
            MovementEvent::Left { node } => write!(f, "n{node} has left: its process stops"),
            MovementEvent::FinalPhase => f.write_str("final phase: engines recorded, then reads"),
            MovementEvent::Holds {
                node,
                repaired,
                newest,
            } => {
                let when = if *repaired { " after repair" } else { "" };
                write!(f, "n{node} holds{when}")?;
                for (k, ts) in newest.iter().enumerate() {
                    match ts {
                        Some(ts) => write!(f, " k{k}@{ts}")?,
                        None => write!(f, " k{k}@-")?,
                    }
                }
                Ok(())
            }
            MovementEvent::Repaired {
                node,
                ranges,
                out_of_sync,
            } => write!(
                f,
                "n{node} repaired {ranges} ranges, {out_of_sync} out of sync"
            ),
            MovementEvent::RepairFailed { node, why } => {
                write!(f, "n{node}'s repair failed: {why}")
            }
        }
    }
}

/// What the entry from `before` to `after` did, for the history.
pub(super) fn describe(
    before: &ClusterMetadata,
    after: &ClusterMetadata,
    ids: &[HostId],
) -> String {
    let name = |h: &HostId| match ids.iter().position(|i| i == h) {
        Some(n) => format!("n{n}"),
        None => h.to_string(),
    };
    let mut what = Vec::new();
    if before.voters != after.voters {
        let voters: Vec<String> = after.voters.iter().map(name).collect();
        what.push(format!("voters [{}]", voters.join(", ")));
    }
    for (id, r) in &after.nodes {
        if before.nodes.get(id).map(|b| b.state) != Some(r.state) {
            what.push(format!("{} {:?}", name(id), r.state));
        }
    }
    for id in before
        .nodes
        .keys()
        .filter(|id| !after.nodes.contains_key(id))
    {
        what.push(format!("{} leaves", name(id)));
    }
    what.join(", ")
}
