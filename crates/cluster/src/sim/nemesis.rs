//! The nemesis: a plan of faults drawn from the simulation's seed, made
//! before the run starts (so it is printed whole with any failure), and
//! applied to the turmoil world at its simulated times.
//!
//! Two tracks, each a sequence of episodes with gaps between them, which
//! may overlap each other:
//!
//! - the *network* track, one fault at a time (turmoil's link states do
//!   not compose: a one-way partition under a hold is unsupported, and a
//!   random loss can repair a one-way partition), each healed by its
//!   exact inverse: a partition of some nodes from the rest, both ways; a
//!   one-way partition of one link; a frozen node (all its links held,
//!   then released, turmoil having no SIGSTOP); a lossy link (turmoil's
//!   fail rate: a failure drops what is in flight on the link, which for
//!   TCP leaves a hole the stream never gets past); a slow node (the
//!   latency of its links raised);
//! - the *node* track, one node down at a time: a crash (the host's
//!   runtime dropped with every task, as SIGKILL would; peers see its
//!   connections close) or a graceful shutdown, then a restart on the same
//!   address with a new generation, sometimes with its wall clock skewed
//!   backwards (the generation must still rise) or forwards.
//!
//! At the end of the nemesis phase everything is healed ([`Action::Quiet`])
//! and, in two runs of three ([`LastStop`]), one node is crashed or shut
//! down for good once the network has settled, so the checker can time how soon the
//! others see it DOWN, and ask that they all do.

use std::fmt;
use std::time::Duration;

use super::history::NodeIndex;
use crate::env::SeededRng;

/// A fault of the network track.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetFault {
    /// `side` cut off from every other node, both ways.
    Partition { side: Vec<NodeIndex> },
    /// Nothing sent from `from` reaches `to`; the other way works.
    OneWay { from: NodeIndex, to: NodeIndex },
    /// Every link of `node` held: it runs, but nothing it sends or is sent
    /// arrives until the links are released.
    Freeze { node: NodeIndex },
    /// The link between `a` and `b` fails with this chance per segment.
    Loss {
        a: NodeIndex,
        b: NodeIndex,
        permille: u32,
    },
    /// Every link of `node` delayed by up to `max_ms`.
    Slow { node: NodeIndex, max_ms: u64 },
}

/// One thing the nemesis does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Start(NetFault),
    Heal(NetFault),
    Crash(NodeIndex),
    Shutdown(NodeIndex),
    /// Start the node again, its wall clock moved by `skew_ms` first.
    Restart {
        node: NodeIndex,
        skew_ms: i64,
    },
    /// Every fault is healed; nothing happens from here on but the final
    /// crash or shutdown of [`Plan::down_at_end`].
    Quiet,
}

impl fmt::Display for NetFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetFault::Partition { side } => {
                let side: Vec<String> = side.iter().map(|n| format!("n{n}")).collect();
                write!(f, "partition [{}] from the rest", side.join(", "))
            }
            NetFault::OneWay { from, to } => write!(f, "one-way partition n{from} -> n{to}"),
            NetFault::Freeze { node } => write!(f, "freeze n{node} (all links held)"),
            NetFault::Loss { a, b, permille } => {
                write!(f, "lossy link n{a} <-> n{b} ({permille}/1000)")
            }
            NetFault::Slow { node, max_ms } => {
                write!(f, "slow n{node} (latency up to {max_ms} ms)")
            }
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Start(fault) => write!(f, "start {fault}"),
            Action::Heal(fault) => write!(f, "heal {fault}"),
            Action::Crash(node) => write!(f, "crash n{node}"),
            Action::Shutdown(node) => write!(f, "graceful shutdown of n{node}"),
            Action::Restart { node, skew_ms } => {
                write!(f, "restart n{node} (wall clock skew {skew_ms} ms)")
            }
            Action::Quiet => f.write_str("quiet: every fault healed"),
        }
    }
}

impl Action {
    /// The node a crash, shutdown or restart acts on.
    pub fn node(&self) -> Option<NodeIndex> {
        match self {
            Action::Crash(n) | Action::Shutdown(n) | Action::Restart { node: n, .. } => Some(*n),
            Action::Start(_) | Action::Heal(_) | Action::Quiet => None,
        }
    }
}

/// An action and when it happens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub at: Duration,
    pub action: Action,
}

/// The whole plan of one run, in time order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// In time order: the harness takes them in list order, each once
    /// its time has come, so one listed early would hold back those
    /// after it; it refuses a plan out of order (`check_order`).
    pub steps: Vec<Step>,
    /// The node crashed or shut down for good during the quiet phase.
    pub down_at_end: Option<NodeIndex>,
}

impl Plan {
    /// Whether the steps are in time order; the first pair that is not.
    pub fn check_order(&self) -> Result<(), String> {
        match self.steps.windows(2).find(|w| w[0].at > w[1].at) {
            None => Ok(()),
            Some(w) => Err(format!(
                "the plan's steps are not in time order: {:?} at {:?} is listed after \
                 {:?} at {:?}, and would wait for it (list them in time order)",
                w[1].action, w[1].at, w[0].action, w[0].at
            )),
        }
    }
}

/// The shortest time a node stays down: a graceful shutdown has finished
/// (its announcement waits at most 2 s) before the restart.
const DOWN_MS_MIN: u64 = 3_000;
const DOWN_MS_MAX: u64 = 25_000;

/// How the run ends: every node running, or one stopped for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastStop {
    None,
    Crash,
    Shutdown,
}

impl LastStop {
    /// By the seed, in turn, so any three consecutive seeds have all
    /// three endings (and CI's seeds time crashes and shutdowns alike).
    pub fn for_seed(seed: u64) -> LastStop {
        match seed % 3 {
            0 => LastStop::None,
            1 => LastStop::Crash,
            _ => LastStop::Shutdown,
        }
    }
}

/// Draws the plan for `nodes` nodes, faults from `start` to `end`, and
/// the node stopped for good at `last_at` (after `end`) if `last` says.
pub fn plan(
    rng: &SeededRng,
    nodes: usize,
    start: Duration,
    end: Duration,
    (last, last_at): (LastStop, Duration),
) -> Plan {
    let mut steps = network_track(rng, nodes, start, end);
    steps.extend(node_track(rng, nodes, start, end));
    steps.push(Step {
        at: end,
        action: Action::Quiet,
    });
    let down_at_end = (last != LastStop::None).then(|| pick(rng, nodes));
    if let Some(node) = down_at_end {
        let action = if last == LastStop::Shutdown {
            Action::Shutdown(node)
        } else {
            Action::Crash(node)
        };
        steps.push(Step {
            at: last_at,
            action,
        });
    }
    // Stable: at equal times the network track goes first.
    steps.sort_by_key(|s| s.at);
    Plan { steps, down_at_end }
}

fn network_track(rng: &SeededRng, nodes: usize, start: Duration, end: Duration) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut t = start;
    loop {
        let from = t + ms(between(rng, 0, 4_000));
        // Short faults (below conviction time) and long ones.
        let long = rng.below_or_at(1) == 0;
        let length = if long {
            between(rng, 6_000, 20_000)
        } else {
            between(rng, 500, 3_000)
        };
        let to = (from + ms(length)).min(end);
        if from >= end {
            return steps;
        }
        let fault = net_fault(rng, nodes);
        steps.push(Step {
            at: from,
            action: Action::Start(fault.clone()),
        });
        steps.push(Step {
            at: to,
            action: Action::Heal(fault),
        });
        t = to;
    }
}

fn net_fault(rng: &SeededRng, nodes: usize) -> NetFault {
    match rng.below_or_at(4) {
        0 => {
            let size = 1 + pick(rng, nodes / 2);
            let mut all: Vec<NodeIndex> = (0..nodes).collect();
            let mut side = Vec::new();
            for _ in 0..size {
                side.push(all.remove(pick(rng, all.len())));
            }
            side.sort_unstable();
            NetFault::Partition { side }
        }
        1 => {
            let (from, to) = two(rng, nodes);
            NetFault::OneWay { from, to }
        }
        2 => NetFault::Freeze {
            node: pick(rng, nodes),
        },
        3 => {
            let (a, b) = two(rng, nodes);
            let permille = u32::try_from(between(rng, 5, 100)).unwrap_or(100);
            NetFault::Loss { a, b, permille }
        }
        _ => NetFault::Slow {
            node: pick(rng, nodes),
            max_ms: between(rng, 200, 3_000),
        },
    }
}

fn node_track(rng: &SeededRng, nodes: usize, start: Duration, end: Duration) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut t = start + ms(between(rng, 0, 5_000));
    while t < end {
        let node = pick(rng, nodes);
        let action = if rng.below_or_at(2) == 0 {
            Action::Shutdown(node)
        } else {
            Action::Crash(node)
        };
        steps.push(Step { at: t, action });
        let back = (t + ms(between(rng, DOWN_MS_MIN, DOWN_MS_MAX))).min(end);
        let skew_ms = match rng.below_or_at(3) {
            0 => -i64::try_from(between(rng, 1_000, 120_000)).unwrap_or(0),
            1 => i64::try_from(between(rng, 0, 5_000)).unwrap_or(0),
            _ => 0,
        };
        steps.push(Step {
            at: back,
            action: Action::Restart { node, skew_ms },
        });
        t = back + ms(between(rng, 1_000, 8_000));
    }
    steps
}

pub(super) fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// A value in `low..=high`.
pub(super) fn between(rng: &SeededRng, low: u64, high: u64) -> u64 {
    low + rng.below_or_at(high - low)
}

/// An index below `len` (which must not be 0).
pub(super) fn pick(rng: &SeededRng, len: usize) -> usize {
    let max = u64::try_from(len.saturating_sub(1)).unwrap_or(0);
    usize::try_from(rng.below_or_at(max)).unwrap_or(0)
}

/// Two different nodes.
fn two(rng: &SeededRng, nodes: usize) -> (NodeIndex, NodeIndex) {
    let a = pick(rng, nodes);
    let b = (a + 1 + pick(rng, nodes - 1)) % nodes;
    (a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_are_ordered_healed_and_replayable() {
        for seed in 0..200 {
            let start = Duration::from_secs(10);
            let end = Duration::from_secs(70);
            let last = (LastStop::for_seed(seed), end + Duration::from_secs(20));
            let p = plan(&SeededRng::new(seed), 4, start, end, last);
            assert_eq!(p, plan(&SeededRng::new(seed), 4, start, end, last));
            assert_eq!(p.check_order(), Ok(()));
            let starts = p
                .steps
                .iter()
                .filter(|s| matches!(s.action, Action::Start(_)))
                .count();
            let heals = p
                .steps
                .iter()
                .filter(|s| matches!(s.action, Action::Heal(_)))
                .count();
            assert_eq!(starts, heals, "seed {seed}");
            for s in &p.steps {
                assert!(s.at >= start && s.at <= last.1, "seed {seed}: {s:?}");
                if let Action::Start(NetFault::OneWay { from, to }) = s.action {
                    assert_ne!(from, to);
                }
            }
        }
    }

    #[test]
    fn a_plan_out_of_time_order_is_refused() {
        let step = |ms: u64, action| Step {
            at: Duration::from_millis(ms),
            action,
        };
        let restart = Action::Restart {
            node: 3,
            skew_ms: 0,
        };
        let mut p = Plan {
            steps: vec![
                step(12_840, Action::Crash(3)),
                step(30_000, restart.clone()),
                step(22_630, Action::Crash(4)),
            ],
            down_at_end: None,
        };
        let why = p.check_order().expect_err("out of order");
        assert!(why.contains("Crash(4) at 22.63s is listed after"), "{why}");
        p.steps.swap(1, 2);
        assert_eq!(p.check_order(), Ok(()));
        // Steps at one instant are in order, taken as listed.
        p.steps.push(step(30_000, Action::Quiet));
        assert_eq!(p.check_order(), Ok(()));
    }
}
