//! The data workload of a simulation (docs/design/cluster.md, section
//! 11): client operations drawn from the seed before the run, each a
//! write, a deletion or a read of one of a few keys at a random level through one
//! node's coordinator, and the history lines they leave (an invocation,
//! then a completion with its outcome).
//!
//! Every write carries a value no other write has: its timestamp, taken
//! at invocation from one counter all nodes share (deletions take theirs
//! from it too), so a later write is a
//! newer one and a value read names the write it came from. After the
//! nemesis and the settling time, every node reads every key at ALL (the
//! *final* reads) in a few rounds, with no write in flight.

use std::fmt;
use std::time::Duration;

use varve_types::consistency::Consistency;

use super::history::NodeIndex;
use crate::coordinator::Speculation;
use crate::env::SeededRng;

/// The replication factor (SimpleStrategy) of the simulated table.
pub const RF: u32 = 3;

/// How many keys the workload writes and reads: few, so reads meet
/// recent writes of the same key often.
pub const KEYS: usize = 6;

/// The levels drawn for writes and reads.
pub const LEVELS: [Consistency; 6] = [
    Consistency::One,
    Consistency::Two,
    Consistency::Quorum,
    Consistency::All,
    Consistency::LocalOne,
    Consistency::LocalQuorum,
];

/// The largest gap between two operations of the whole cluster.
const GAP_MS_MAX: u64 = 400;

/// How many times every node reads every key at ALL at the end, and how
/// far apart: a client retries a read that timed out, and a connection
/// a partition left with a hole (turmoil's TCP does not retransmit) may
/// swallow requests until messaging's write timeout closes it, after the
/// quiet phase settled.
pub const FINAL_ROUNDS: u32 = 4;
pub const FINAL_ROUND_GAP: Duration = Duration::from_secs(3);

/// What an operation does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OpKind {
    Write,
    /// A row deletion (a tombstone with the write's timestamp).
    Delete,
    /// A read, with the table options it runs under.
    Read {
        speculation: Speculation,
        blocking_repair: bool,
    },
}

/// One client operation of the plan; its id is its index.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedOp {
    pub at: Duration,
    /// The node whose coordinator runs it (skipped if it is down then).
    pub node: NodeIndex,
    pub kind: OpKind,
    pub key: usize,
    pub level: Consistency,
    /// One of the final reads at ALL, after the quiet phase settled.
    pub last: bool,
    /// A read made as a range scan (RANGE_READ of rows) from the key's
    /// token to the end of its ring range, whose answer for the key is
    /// the read's (runs with `SimConfig::scans`).
    pub scan: bool,
}

/// Every operation of a run, in time order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Workload {
    pub ops: Vec<PlannedOp>,
}

/// Draws operations from `from` until `until`, then the final reads of
/// every key through every node from `last_at`.
pub fn workload(
    rng: &SeededRng,
    nodes: usize,
    from: Duration,
    until: Duration,
    last_at: Duration,
) -> Workload {
    let mut ops = Vec::new();
    let mut t = from;
    while t < until {
        let node = index(rng, nodes);
        let key = index(rng, KEYS);
        let level = LEVELS[index(rng, LEVELS.len())];
        let kind = match rng.below_or_at(9) {
            0..=3 => OpKind::Write,
            4 => OpKind::Delete,
            _ => OpKind::Read {
                speculation: match rng.below_or_at(2) {
                    0 => Speculation::Never,
                    1 => Speculation::Always,
                    _ => Speculation::Fixed(Duration::from_millis(50)),
                },
                blocking_repair: rng.below_or_at(3) != 0,
            },
        };
        ops.push(PlannedOp {
            at: t,
            node,
            kind,
            key,
            level,
            last: false,
            scan: false,
        });
        t += Duration::from_millis(1 + rng.below_or_at(GAP_MS_MAX));
    }
    for round in 0..FINAL_ROUNDS {
        let mut t = last_at + FINAL_ROUND_GAP * round;
        for key in 0..KEYS {
            for node in 0..nodes {
                ops.push(PlannedOp {
                    at: t,
                    node,
                    kind: OpKind::Read {
                        speculation: Speculation::Never,
                        blocking_repair: true,
                    },
                    key,
                    level: Consistency::All,
                    last: true,
                    scan: false,
                });
                t += Duration::from_millis(20);
            }
        }
    }
    Workload { ops }
}

fn index(rng: &SeededRng, len: usize) -> usize {
    let max = u64::try_from(len.saturating_sub(1)).unwrap_or(0);
    usize::try_from(rng.below_or_at(max)).unwrap_or(0)
}

/// The replicas a level waits for at RF 3 in one data centre.
pub fn block_for(level: Consistency) -> u32 {
    level.block_for(&varve_types::consistency::Factors::Simple(RF), "")
}

/// How an operation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The write (or deletion) met its level.
    Written,
    /// The read's answer: the cell's timestamp and value, if any.
    Read(Option<(i64, String)>),
    Unavailable {
        required: u32,
        alive: u32,
    },
    WriteTimeout {
        received: u32,
        block_for: u32,
    },
    ReadTimeout {
        received: u32,
        block_for: u32,
        data_present: bool,
    },
    /// Any other error, as the coordinator worded it.
    Failed(String),
}

/// A workload line of the history.
#[derive(Debug, Clone, PartialEq)]
pub enum OpEvent {
    /// Operation `id` of the plan began; a write or deletion names its
    /// timestamp.
    Invoke {
        id: usize,
        op: PlannedOp,
        write_ts: Option<i64>,
    },
    /// Operation `id` finished.
    Done { id: usize, outcome: Outcome },
}

/// The value a write of timestamp `ts` stores.
pub fn value_of(ts: i64) -> String {
    format!("v{ts}")
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Written => f.write_str("ok"),
            Outcome::Read(None) => f.write_str("ok, nothing"),
            Outcome::Read(Some((ts, value))) => write!(f, "ok, {value} (timestamp {ts})"),
            Outcome::Unavailable { required, alive } => {
                write!(f, "Unavailable (required {required}, alive {alive})")
            }
            Outcome::WriteTimeout {
                received,
                block_for,
            } => write!(f, "WriteTimeout ({received} of {block_for})"),
            Outcome::ReadTimeout {
                received,
                block_for,
                data_present,
            } => write!(
                f,
                "ReadTimeout ({received} of {block_for}, data present: {data_present})"
            ),
            Outcome::Failed(what) => write!(f, "failed: {what}"),
        }
    }
}

impl fmt::Display for OpEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpEvent::Invoke { id, op, write_ts } => {
                write!(f, "op {id}: {op}")?;
                match (op.kind, write_ts) {
                    (OpKind::Write, Some(ts)) => write!(f, ", value {}", value_of(*ts)),
                    (_, Some(ts)) => write!(f, ", timestamp {ts}"),
                    _ => Ok(()),
                }
            }
            OpEvent::Done { id, outcome } => write!(f, "op {id} done: {outcome}"),
        }
    }
}

impl fmt::Display for PlannedOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            OpKind::Write => "write",
            OpKind::Delete => "delete",
            OpKind::Read { .. } if self.scan => "scan",
            OpKind::Read { .. } => "read",
        };
        write!(
            f,
            "{what} k{} at {} through n{}",
            self.key, self.level, self.node
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workload_is_ordered_and_replayable() {
        let draw = || {
            workload(
                &SeededRng::new(7),
                4,
                Duration::from_secs(5),
                Duration::from_secs(60),
                Duration::from_secs(70),
            )
        };
        let w = draw();
        assert_eq!(w, draw());
        assert!(w.ops.windows(2).all(|p| p[0].at <= p[1].at));
        assert_eq!(
            w.ops.iter().filter(|o| o.last).count(),
            KEYS * 4 * FINAL_ROUNDS as usize
        );
        assert_eq!(block_for(Consistency::Quorum), 2);
        assert_eq!(block_for(Consistency::LocalQuorum), 2);
        assert_eq!(block_for(Consistency::All), 3);
    }
}
