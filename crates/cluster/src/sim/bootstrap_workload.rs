//! What a join run (`sim/movement.rs` with a bootstrap) draws from its
//! seed before it starts: its settings and the nemesis' plan (faults the
//! design says a join survives), when the join begins, the clients'
//! writes and final reads, and until when each key is written
//! ([`KeyGroup`]). The other movements draw these too, and more
//! (`sim/movement_workload.rs`).

use std::time::Duration;

use varve_types::consistency::Consistency;

use super::harness::{mix, SimConfig};
use super::history::NodeIndex;
use super::movement_workload::Roles;
use super::nemesis::{between, ms, pick, Action, NetFault, Plan, Step};
use super::workload::{OpKind, PlannedOp};
use crate::coordinator::Speculation;
use crate::env::SeededRng;

/// How many keys the clients write: enough for the joiner to gain
/// several of each [`KeyGroup`].
pub const BOOTSTRAP_KEYS: usize = 20;

/// Until when clients write a key (key `k` is in group `k % 4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyGroup {
    /// Until this time, drawn from the 2 s before the metadata commits
    /// the joiner `Joining` (phase A).
    Until(Duration),
    /// Until this long after the joiner's first bootstrap attempt began
    /// (drawn up to 2.5 s).
    AfterStreaming(Duration),
    /// Until a bootstrap attempt succeeds (phases A and B).
    UntilJoined,
    /// To the end of the writes.
    Always,
}

impl KeyGroup {
    pub(super) fn draw(rng: &SeededRng, key: usize, joining_at: Duration) -> KeyGroup {
        match key % 4 {
            0 => KeyGroup::Until(joining_at.saturating_sub(ms(rng.below_or_at(2_000)))),
            1 => KeyGroup::AfterStreaming(ms(rng.below_or_at(2_500))),
            2 => KeyGroup::UntilJoined,
            _ => KeyGroup::Always,
        }
    }
}

/// How long after the settled quiet phase the join may still take: a
/// page lost to a partition or a crash just before the quiet phase waits
/// out `STREAM_PAGE_TIMEOUT` (30 s), then is asked again.
const JOIN_SLACK: Duration = Duration::from_secs(30);

/// The final reads: rounds at QUORUM, then at ALL (a client retries a
/// timeout), the first this long after the engines were recorded.
const FINAL_QUORUM_ROUNDS: u32 = 2;
const FINAL_ALL_ROUNDS: u32 = 3;
const FINAL_READS_AFTER: Duration = Duration::from_millis(500);
const FINAL_ROUND_GAP: Duration = Duration::from_secs(3);

impl SimConfig {
    /// The run of `seed` where a node joins: 4 or 5 nodes, 35 s of
    /// nemesis from 3 s (drawn here, pinned in `plan`; phase B begins
    /// within it, at [`joining_at`]), the quiet phase's settling, room
    /// for a late join, and the final reads.
    pub fn with_bootstrap(seed: u64) -> SimConfig {
        let rng = SeededRng::new(mix(seed, 6));
        let mut config = SimConfig::with_data(seed);
        config.nodes = 4 + usize::from(rng.below_or_at(1) == 1);
        config.warmup = Duration::from_secs(3);
        config.nemesis = Duration::from_secs(35);
        let finals = FINAL_READS_AFTER + FINAL_ROUND_GAP * (FINAL_QUORUM_ROUNDS + FINAL_ALL_ROUNDS);
        config.quiet = config.settle + JOIN_SLACK + finals;
        let (start, end) = (config.nemesis_start(), config.nemesis_end());
        let joining = joining_at(seed);
        config.plan = Some(plan(&rng, config.nodes, (start, joining, end)));
        config.movement = Some(Roles::bootstrap(config.nodes, joining));
        config
    }
}

/// When the metadata commits the joiner `Joining` in the run of `seed`:
/// from 6 to 12 s.
pub fn joining_at(seed: u64) -> Duration {
    let rng = SeededRng::new(mix(seed, 7));
    ms(between(&rng, 6_000, 12_000))
}

/// The nemesis of a join: faults the design says the join survives,
/// from `start` to `end`, phase B beginning at `joining`.
fn plan(
    rng: &SeededRng,
    nodes: usize,
    (start, joining, end): (Duration, Duration, Duration),
) -> Plan {
    let mut steps = network_faults(rng, nodes, start, end);
    let others: Vec<NodeIndex> = (0..nodes - 1).collect();
    steps.extend(restarts(rng, &others, nodes - 1, joining, end));
    steps.push(Step {
        at: end,
        action: Action::Quiet,
    });
    steps.sort_by_key(|s| s.at);
    Plan {
        steps,
        down_at_end: None,
    }
}

/// One fault at a time: a slow node (messages delayed up to 1.5 s), or a
/// node partitioned from the rest or frozen for at most 3 s.
pub(super) fn network_faults(
    rng: &SeededRng,
    nodes: usize,
    start: Duration,
    end: Duration,
) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut t = start;
    loop {
        let from = t + ms(between(rng, 0, 4_000));
        if from >= end {
            return steps;
        }
        let node = pick(rng, nodes);
        let (fault, length) = match rng.below_or_at(2) {
            0 => {
                let max_ms = between(rng, 100, 1_500);
                (NetFault::Slow { node, max_ms }, between(rng, 1_000, 8_000))
            }
            1 => (
                NetFault::Partition { side: vec![node] },
                between(rng, 300, 3_000),
            ),
            _ => (NetFault::Freeze { node }, between(rng, 300, 3_000)),
        };
        let to = (from + ms(length)).min(end);
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

/// Nodes stopped (crashed or shut down) and started again 3 to 8 s
/// later, one at a time: none to two of them, the `mover` one time in
/// three, else one of `others`; and one seed in two, first, one of
/// `others` down from shortly before the movement begins (`joining`)
/// until some time in it. That one misses the last writes of the keys
/// written before the movement only, so the replicas of some ranges
/// differ when the mover streams them, and streaming from the wrong one
/// loses them.
pub(super) fn restarts(
    rng: &SeededRng,
    others: &[NodeIndex],
    mover: NodeIndex,
    joining: Duration,
    end: Duration,
) -> Vec<Step> {
    let mut steps = Vec::new();
    let across = rng.below_or_at(1) == 0;
    let mut t = match across {
        true => joining.saturating_sub(ms(between(rng, 500, 3_000))),
        false => joining + ms(between(rng, 0, 6_000)),
    };
    for episode in 0..rng.below_or_at(2) + u64::from(across) {
        if t >= end {
            break;
        }
        let node = match rng.below_or_at(2) {
            0 if !(across && episode == 0) => mover,
            _ => others[pick(rng, others.len())],
        };
        let action = match rng.below_or_at(1) {
            0 => Action::Shutdown(node),
            _ => Action::Crash(node),
        };
        steps.push(Step { at: t, action });
        let back = (t + ms(between(rng, 3_000, 8_000))).min(end);
        steps.push(Step {
            at: back,
            action: Action::Restart { node, skew_ms: 0 },
        });
        t = back + ms(between(rng, 1_000, 6_000));
    }
    steps
}

/// Writes and deletions from `from` until `until`, about 15 a second,
/// through the other nodes and one in eight through the last one (a
/// joiner's run once it is `Normal`): at QUORUM, at ALL (which a joiner
/// must hold whatever the faults) and, if `one`, at ONE (else at QUORUM
/// instead).
pub(super) fn writes(
    rng: &SeededRng,
    nodes: usize,
    from: Duration,
    until: Duration,
    one: bool,
) -> Vec<PlannedOp> {
    let mut ops = Vec::new();
    let mut t = from;
    while t < until {
        let node = match rng.below_or_at(7) {
            0 => nodes - 1,
            _ => pick(rng, nodes - 1),
        };
        let key = pick(rng, BOOTSTRAP_KEYS);
        let level = match rng.below_or_at(19) {
            0..=8 => Consistency::Quorum,
            9..=15 => Consistency::All,
            _ if one => Consistency::One,
            _ => Consistency::Quorum,
        };
        let kind = match rng.below_or_at(6) {
            0 => OpKind::Delete,
            _ => OpKind::Write,
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
        t += ms(1 + rng.below_or_at(130));
    }
    ops
}

/// The final reads of every key through every node of `nodes` (the
/// final ring), their times counted from the final reads' start: rounds
/// at QUORUM without read repair, then rounds at ALL with it (the only
/// ones marked `last`). Every read of a movement run's plan is one of
/// these.
pub(super) fn final_reads(nodes: &[NodeIndex]) -> Vec<PlannedOp> {
    let mut ops = Vec::new();
    for round in 0..FINAL_QUORUM_ROUNDS + FINAL_ALL_ROUNDS {
        let all = round >= FINAL_QUORUM_ROUNDS;
        let mut t = FINAL_READS_AFTER + FINAL_ROUND_GAP * round;
        for key in 0..BOOTSTRAP_KEYS {
            for &node in nodes {
                ops.push(PlannedOp {
                    at: t,
                    node,
                    kind: OpKind::Read {
                        speculation: Speculation::Never,
                        blocking_repair: all,
                    },
                    key,
                    level: if all {
                        Consistency::All
                    } else {
                        Consistency::Quorum
                    },
                    last: all,
                    scan: false,
                });
                t += Duration::from_millis(20);
            }
        }
    }
    ops
}
