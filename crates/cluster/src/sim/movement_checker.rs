//! What a movement run (`sim/movement.rs`) must satisfy: no acknowledged
//! write lost across the movement (docs/design/topology.md, section 3,
//! "Why nothing acknowledged is lost"), replicas equal after repair, and
//! LWT histories linearizable.
//!
//! - **The movement finishes**: an attempt succeeded, every node of the
//!   final ring applied the last epoch before the final phase, recorded
//!   its engine then and (with repair) repaired and recorded it again.
//! - **Acknowledged writes are held**: a write (or deletion) acknowledged
//!   at a level that waits for `w` replicas is held, at the start of the
//!   final phase, before any repair, by at least `w` of its key's
//!   replicas in the final ring: each of their engines has a timestamp of
//!   that key at least as new. This is the design's argument itself: a
//!   write acknowledged before a join or a decommission was on `w` old
//!   replicas, and the node that gains a range holds what the one that
//!   loses it held when it streamed; one acknowledged while the movement
//!   ran had `w + 1` acknowledgements, at most one of them from the
//!   losing node. (A joiner need not hold a write acknowledged at QUORUM:
//!   one acknowledged by the two replicas that stay, while the losing node
//!   missed it, never reaches the stream. At ALL, `w` is every replica.)
//!
//!   A replacement or a removal copies a dead node's ranges from one
//!   surviving replica, which may lack a write the dead node acknowledged
//!   (Cassandra's, too: repair afterwards): a write the dead node may
//!   have acknowledged (invoked before its crash, on a key it replicated)
//!   needs `w - 1` of the final replicas only, unless its level waited
//!   for every replica (ALL): then every survivor holds it, the one the
//!   gainer copies from too, and it needs `w`. Clients write no ONE there.
//! - **Replicas equal after repair** (a run with repair): once every node
//!   repaired, every final replica of each key (the registers' too) has
//!   the same newest timestamp, at least as new as every acknowledged
//!   write of the key.
//! - **Acknowledged writes are seen**, **no value from nowhere**, **the
//!   end agrees** and **no hang**: `sim/data_checker.rs`'s checks (a),
//!   (c), (d) and (e), over the final reads (made after every write
//!   ended, through the final ring's nodes). (Check (b), Unavailable
//!   exactly when too few are UP, is left out: a pending replica changes
//!   what a level requires.)
//! - **Linearizable** (a run with LWT): the LWT history, final SERIAL
//!   reads included, by `sim/linearizability.rs`, register by register.

use std::collections::BTreeMap;
use std::time::Duration;

use super::bootstrap_workload::BOOTSTRAP_KEYS;
use super::checker::Violation;
use super::data::Layout;
use super::data_checker::{self, Op};
use super::harness::Run;
use super::history::{Event, NodeIndex};
use super::lwt::{LwtEvent, LwtOutcome};
use super::movement::MovementEvent;
use super::timeline::Timeline;
use super::workload::{OpKind, Outcome};

/// How long after its recorded crash the dead node may still have
/// acknowledged a write (its messaging closes in the tick after).
const CRASH_MARGIN: Duration = Duration::from_secs(1);

/// What a movement run's checks were put to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MovementCoverage {
    pub writes_ok: u64,
    /// Acknowledged writes invoked while some node had applied an epoch
    /// where a node moves and not yet the last one.
    pub writes_ok_while_moving: u64,
    /// (acknowledged write, replica) pairs the holding check looked at.
    pub held: u64,
    pub final_reads_ok: u64,
    pub attempts_failed: u64,
    pub ranges_moved: u64,
    pub partitions_streamed: u64,
    /// Whole sstables among what the successful attempt moved.
    pub files_streamed: u64,
    /// Ranges the final repairs found out of sync.
    pub repaired_out_of_sync: u64,
    pub lwt_applied: u64,
    pub lwt_reads: u64,
    pub lwt_unknown: u64,
}

impl std::ops::AddAssign for MovementCoverage {
    fn add_assign(&mut self, o: MovementCoverage) {
        self.writes_ok += o.writes_ok;
        self.writes_ok_while_moving += o.writes_ok_while_moving;
        self.held += o.held;
        self.final_reads_ok += o.final_reads_ok;
        self.attempts_failed += o.attempts_failed;
        self.ranges_moved += o.ranges_moved;
        self.partitions_streamed += o.partitions_streamed;
        self.files_streamed += o.files_streamed;
        self.repaired_out_of_sync += o.repaired_out_of_sync;
        self.lwt_applied += o.lwt_applied;
        self.lwt_reads += o.lwt_reads;
        self.lwt_unknown += o.lwt_unknown;
    }
}

fn violation(property: &'static str, at: Duration, what: String) -> Violation {
    Violation { property, at, what }
}

/// The movement's steps as the history has it.
#[derive(Debug, Default)]
struct Steps {
    /// When the first node applied an epoch past the first, and when the
    /// last one applied the last epoch.
    moving: Option<Duration>,
    done_everywhere: Option<Duration>,
    /// The last epoch, and each node's first application of it.
    last_epoch: u64,
    done: BTreeMap<NodeIndex, Duration>,
    streamed: Option<(Duration, usize, u64)>,
    /// Whole sstables the successful attempt moved.
    files: u64,
    failed: u64,
    final_phase: Option<Duration>,
    /// Each node's engine at the final phase, and after repair.
    holds: BTreeMap<NodeIndex, Vec<Option<i64>>>,
    repaired: BTreeMap<NodeIndex, Vec<Option<i64>>>,
    repairs: BTreeMap<NodeIndex, Result<usize, String>>,
}

fn steps(run: &Run) -> Steps {
    let mut s = Steps::default();
    let movements = run.history.entries.iter().filter_map(|e| match &e.event {
        Event::Movement(step) => Some((e.at, step)),
        _ => None,
    });
    s.last_epoch = movements
        .clone()
        .filter_map(|(_, step)| match step {
            MovementEvent::Committed { epoch, .. } => Some(*epoch),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    for (at, step) in movements {
        match step {
            MovementEvent::Applied { node, epoch } => {
                if *epoch > 1 && s.moving.is_none() {
                    s.moving = Some(at);
                }
                if *epoch == s.last_epoch {
                    s.done.entry(*node).or_insert(at);
                }
            }
            MovementEvent::Streamed {
                ranges,
                partitions,
                files,
                ..
            } => {
                s.streamed.get_or_insert((at, *ranges, *partitions));
                s.files += files;
            }
            MovementEvent::Failed(_) => s.failed += 1,
            MovementEvent::FinalPhase => s.final_phase = Some(at),
            MovementEvent::Holds {
                node,
                repaired,
                newest,
            } => {
                let into = if *repaired {
                    &mut s.repaired
                } else {
                    &mut s.holds
                };
                into.insert(*node, newest.clone());
            }
            MovementEvent::Repaired {
                node, out_of_sync, ..
            } => {
                s.repairs.insert(*node, Ok(*out_of_sync));
            }
            MovementEvent::RepairFailed { node, why } => {
                s.repairs.insert(*node, Err(why.clone()));
            }
            MovementEvent::Committed { .. }
            | MovementEvent::Streaming
            | MovementEvent::NarrowFlush { .. }
            | MovementEvent::Left { .. } => {}
        }
    }
    s
}

/// Every violation of a movement run's data and LWT properties, and what
/// was checked.
pub fn check(run: &Run) -> (Vec<Violation>, MovementCoverage) {
    let mut out = Vec::new();
    let mut coverage = MovementCoverage::default();
    let (Some(layout), Some(roles)) = (&run.layout, &run.config.movement) else {
        return (out, coverage);
    };
    let finals = roles.last(run.config.nodes);
    let mut steps = steps(run);
    let everywhere = finals.iter().map(|n| steps.done.get(n).copied());
    steps.done_everywhere = everywhere
        .collect::<Option<Vec<_>>>()
        .and_then(|d| d.into_iter().max());
    let ops = data_checker::operations(run);
    the_movement_finishes(run, &finals, &steps, &mut out);
    let dead = roles
        .dead
        .and_then(|(n, _)| crashed_at(run, n).map(|at| (n, at)));
    coverage.held = writes_are_held(layout, &steps, &ops, dead, &mut out);
    if run.config.repair {
        replicas_equal_after_repair(layout, &steps, &ops, dead, &mut out);
    }
    data_checker::writes_are_seen(layout, &ops, &mut out);
    data_checker::no_value_from_nowhere(&ops, &mut out);
    data_checker::the_end_agrees(run, &ops, &finals, BOOTSTRAP_KEYS, &mut out);
    let timeline = Timeline::new(&run.history.entries, run.config.end());
    data_checker::no_hang(run, &timeline, &ops, &mut out);
    if run.config.lwt {
        if let Err(v) = super::lwt::check_history(&run.history) {
            out.push(violation("linearizable", run.config.end(), v));
        }
    }
    count(run, &steps, &ops, &mut coverage);
    (out, coverage)
}

/// When the history has `node` crashed first.
fn crashed_at(run: &Run, node: NodeIndex) -> Option<Duration> {
    run.history.entries.iter().find_map(|e| match e.event {
        Event::Nemesis(super::nemesis::Action::Crash(n)) if n == node => Some(e.at),
        _ => None,
    })
}

fn count(run: &Run, steps: &Steps, ops: &BTreeMap<usize, Op>, c: &mut MovementCoverage) {
    for op in ops.values() {
        match (op.op.kind, op.outcome()) {
            (OpKind::Write | OpKind::Delete, Some(Outcome::Written)) => {
                c.writes_ok += 1;
                let at = op.invoked.1;
                let during = steps.moving.is_some_and(|j| at >= j)
                    && steps.done_everywhere.is_none_or(|n| at <= n);
                c.writes_ok_while_moving += u64::from(during);
            }
            (OpKind::Read { .. }, Some(Outcome::Read(_))) => c.final_reads_ok += 1,
            _ => {}
        }
    }
    c.attempts_failed = steps.failed;
    c.files_streamed = steps.files;
    (c.ranges_moved, c.partitions_streamed) =
        steps.streamed.map_or((0, 0), |(_, r, p)| (r as u64, p));
    c.repaired_out_of_sync = steps
        .repairs
        .values()
        .map(|r| r.clone().unwrap_or(0) as u64)
        .sum();
    for e in &run.history.entries {
        if let Event::Lwt(LwtEvent::Done { outcome, .. }) = &e.event {
            match outcome {
                LwtOutcome::Cas(true) => c.lwt_applied += 1,
                LwtOutcome::Read(_) => c.lwt_reads += 1,
                LwtOutcome::Unknown(_) => c.lwt_unknown += 1,
                LwtOutcome::Cas(false) | LwtOutcome::Failed(_) => {}
            }
        }
    }
}

fn the_movement_finishes(run: &Run, finals: &[NodeIndex], steps: &Steps, out: &mut Vec<Violation>) {
    let end = run.config.end();
    let Some(final_phase) = steps.final_phase else {
        let what = match steps.streamed {
            None => format!("no attempt succeeded ({} failed)", steps.failed),
            Some((at, _, _)) => format!("the movement ended at {at:?}, but no final phase began"),
        };
        out.push(violation("the movement finishes", end, what));
        return;
    };
    let mut missing =
        |what: String| out.push(violation("the movement finishes", final_phase, what));
    for &node in finals {
        match steps.done.get(&node) {
            Some(at) if *at <= final_phase => {}
            other => missing(format!(
                "n{node} had not applied epoch {} when the final phase began: {other:?}",
                steps.last_epoch
            )),
        }
        if !steps.holds.contains_key(&node) {
            missing(format!(
                "n{node} did not record its engine in the final phase"
            ));
        }
        if !run.config.repair {
            continue;
        }
        match steps.repairs.get(&node) {
            Some(Ok(_)) => {}
            Some(Err(why)) => missing(format!("n{node}'s repair failed: {why}")),
            None => missing(format!("n{node} did not repair")),
        }
        if !steps.repaired.contains_key(&node) {
            missing(format!(
                "n{node} did not record its engine after the repairs"
            ));
        }
    }
}

/// How many final replicas must hold an acknowledged write `op`: what
/// its level waited for; one less if the dead node may have been one of
/// them, unless the level waited for every replica (then every survivor
/// holds it, the one a gainer copies from too).
fn need(layout: &Layout, op: &Op, dead: Option<(NodeIndex, Duration)>) -> u32 {
    let (key, dc) = (op.op.key, &layout.dcs[op.op.node]);
    let (_, w) = layout.counting(key, op.op.level, dc);
    let counted_before = layout.before[key]
        .iter()
        .filter(|&&r| !op.op.level.is_datacenter_local() || layout.dcs[r] == *dc)
        .count();
    let dead_acked = dead.is_some_and(|(n, at)| {
        layout.before[key].contains(&n) && op.invoked.1 <= at + CRASH_MARGIN
    });
    let every_one = w as usize >= counted_before;
    w - u32::from(dead_acked && !every_one && w > 0)
}

/// The acknowledged writes with their timestamps.
fn acknowledged(ops: &BTreeMap<usize, Op>) -> impl Iterator<Item = (&Op, i64)> {
    ops.values()
        .filter_map(|op| match (op.outcome(), op.write_ts) {
            (Some(Outcome::Written), Some(ts)) => Some((op, ts)),
            _ => None,
        })
}

/// The holding check; how many (write, replica) pairs it looked at.
fn writes_are_held(
    layout: &Layout,
    steps: &Steps,
    ops: &BTreeMap<usize, Op>,
    dead: Option<(NodeIndex, Duration)>,
    out: &mut Vec<Violation>,
) -> u64 {
    if steps.holds.is_empty() {
        return 0;
    }
    let mut pairs = 0;
    for (op, ts) in acknowledged(ops) {
        let need = need(layout, op, dead);
        let replicas = &layout.replicas[op.op.key];
        let held: Vec<(NodeIndex, Option<i64>)> = replicas
            .iter()
            .map(|&r| (r, steps.holds.get(&r).and_then(|h| h[op.op.key])))
            .collect();
        pairs += held.len() as u64;
        let holding = held
            .iter()
            .filter(|(_, n)| n.is_some_and(|n| n >= ts))
            .count();
        if (holding as u64) < u64::from(need) {
            let what: Vec<String> = held.iter().map(|(r, n)| format!("n{r}: {n:?}")).collect();
            out.push(violation(
                "acknowledged writes are held",
                op.invoked.1,
                format!(
                    "op {} ({}) was acknowledged with timestamp {ts}, which needs {need} \
                     replicas, but only {holding} of the final ones hold it or newer ({})",
                    op.id,
                    op.op,
                    what.join(", ")
                ),
            ));
        }
    }
    pairs
}

/// After the repairs, the final replicas of each key hold the same
/// newest timestamp, and it is at least every acknowledged write's.
fn replicas_equal_after_repair(
    layout: &Layout,
    steps: &Steps,
    ops: &BTreeMap<usize, Op>,
    dead: Option<(NodeIndex, Duration)>,
    out: &mut Vec<Violation>,
) {
    if steps.repaired.is_empty() {
        return;
    }
    let at = steps.final_phase.unwrap_or_default();
    let newest = |r: &NodeIndex, k: usize| steps.repaired.get(r).and_then(|h| h[k]);
    for (k, replicas) in layout.replicas.iter().enumerate() {
        let each: Vec<Option<i64>> = replicas.iter().map(|r| newest(r, k)).collect();
        if each.windows(2).any(|w| w[0] != w[1]) {
            let what: Vec<String> = replicas
                .iter()
                .zip(&each)
                .map(|(r, n)| format!("n{r}: {n:?}"))
                .collect();
            out.push(violation(
                "replicas equal after repair",
                at,
                format!("the replicas of k{k} differ: {}", what.join(", ")),
            ));
        }
    }
    for (op, ts) in acknowledged(ops).filter(|(op, _)| need(layout, op, dead) > 0) {
        let k = op.op.key;
        let behind: Vec<NodeIndex> = layout.replicas[k]
            .iter()
            .copied()
            .filter(|r| newest(r, k).is_none_or(|n| n < ts))
            .collect();
        if !behind.is_empty() {
            out.push(violation(
                "replicas equal after repair",
                op.invoked.1,
                format!(
                    "op {} ({}) was acknowledged with timestamp {ts}, but after the repairs \
                     {behind:?} hold k{k} older",
                    op.id, op.op
                ),
            ));
        }
    }
}
