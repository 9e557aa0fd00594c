//! What a join run (`sim/bootstrap.rs`) must satisfy: no acknowledged
//! write lost across the join (docs/design/topology.md, section 3, "Why
//! nothing acknowledged is lost").
//!
//! - **The join finishes**: a bootstrap attempt succeeded, every node
//!   applied epoch 3 before the final phase, and every node recorded
//!   its engine then.
//! - **Acknowledged writes are held**: a write (or deletion) acknowledged
//!   at a level that waits for `w` replicas is held, at the start of the
//!   final phase, by at least `w` of its key's replicas in the final ring
//!   (the joiner's included): each of their engines has a timestamp of
//!   that key at least as new. This is the design's argument itself: a
//!   write acknowledged before the join was on `w` old replicas, the
//!   joiner holds what the losing one held when it streamed; one
//!   acknowledged while the joiner was pending had `w + 1`
//!   acknowledgements, at most one of them from the losing node. It
//!   implies that every read whose replicas must meet the write's sees
//!   it, whichever replicas it asks.
//!
//!   At ALL, `w` is every replica: the joiner itself must hold every write
//!   acknowledged at ALL. The joiner need not hold a write acknowledged
//!   at QUORUM: one acknowledged by the two replicas that stay, while the
//!   losing node missed it (a partition, a crash), never reaches the
//!   stream, and a QUORUM write while the joiner is pending can be
//!   acknowledged without it; both are still on a quorum of the final
//!   ring, which is what the design promises.
//! - **Acknowledged writes are seen**, **no value from nowhere**, **the
//!   end agrees** and **no hang**: `sim/data_checker.rs`'s checks (a),
//!   (c), (d) and (e), over the final reads. The layout is the final
//!   ring; every read is a final one, made after every write ended.
//!   (Check (b), Unavailable exactly when too few are UP, is left out: a
//!   pending replica changes what a level requires, and its layout is
//!   the final ring's.)

use std::collections::BTreeMap;
use std::time::Duration;

use super::bootstrap::{JoinEvent, EPOCH_NORMAL};
use super::checker::Violation;
use super::data::Layout;
use super::data_checker::{self, Op};
use super::harness::Run;
use super::history::{Event, NodeIndex};
use super::timeline::Timeline;
use super::workload::{OpKind, Outcome};

/// What a join run's checks were put to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JoinCoverage {
    pub writes_ok: u64,
    /// Acknowledged writes invoked while some node had applied epoch 2
    /// and not yet epoch 3 (the joiner pending somewhere).
    pub writes_ok_while_joining: u64,
    /// (acknowledged write, replica) pairs the holding check looked at.
    pub held: u64,
    pub final_reads_ok: u64,
    pub attempts_failed: u64,
    pub partitions_streamed: u64,
    /// Whole sstables among them.
    pub files_streamed: u64,
}

impl std::ops::AddAssign for JoinCoverage {
    fn add_assign(&mut self, o: JoinCoverage) {
        self.writes_ok += o.writes_ok;
        self.writes_ok_while_joining += o.writes_ok_while_joining;
        self.held += o.held;
        self.final_reads_ok += o.final_reads_ok;
        self.attempts_failed += o.attempts_failed;
        self.partitions_streamed += o.partitions_streamed;
        self.files_streamed += o.files_streamed;
    }
}

fn violation(property: &'static str, at: Duration, what: String) -> Violation {
    Violation { property, at, what }
}

/// The join's steps as the history has them.
#[derive(Debug, Default)]
struct Steps {
    /// When the first node applied epoch 2, and the last one epoch 3.
    joining: Option<Duration>,
    normal_everywhere: Option<Duration>,
    /// Each node's first application of epoch 3.
    normal: BTreeMap<NodeIndex, Duration>,
    streamed: Option<(Duration, u64)>,
    /// Whole sstables the successful attempt streamed.
    files: u64,
    failed: u64,
    final_phase: Option<Duration>,
    /// Each node's engine at the final phase.
    holds: BTreeMap<NodeIndex, Vec<Option<i64>>>,
}

fn steps(run: &Run) -> Steps {
    let mut s = Steps::default();
    for entry in &run.history.entries {
        let Event::Join(step) = &entry.event else {
            continue;
        };
        match step {
            JoinEvent::Applied { node, epoch } => {
                if *epoch > 1 && s.joining.is_none() {
                    s.joining = Some(entry.at);
                }
                if *epoch == EPOCH_NORMAL {
                    s.normal.entry(*node).or_insert(entry.at);
                }
            }
            JoinEvent::Streamed {
                partitions, files, ..
            } => {
                s.streamed.get_or_insert((entry.at, *partitions));
                s.files += files;
            }
            JoinEvent::Failed(_) => s.failed += 1,
            JoinEvent::FinalPhase => s.final_phase = Some(entry.at),
            JoinEvent::Holds { node, newest } => {
                s.holds.insert(*node, newest.clone());
            }
            JoinEvent::Streaming | JoinEvent::NarrowFlush { .. } => {}
        }
    }
    if s.normal.len() == run.config.nodes {
        s.normal_everywhere = s.normal.values().max().copied();
    }
    s
}

/// Every violation of a join run's data properties, and what was
/// checked.
pub fn check(run: &Run) -> (Vec<Violation>, JoinCoverage) {
    let mut out = Vec::new();
    let mut coverage = JoinCoverage::default();
    let Some(layout) = &run.layout else {
        return (out, coverage);
    };
    let steps = steps(run);
    let ops = data_checker::operations(run);
    the_join_finishes(run, &steps, &mut out);
    coverage.held = writes_are_held(layout, &steps, &ops, &mut out);
    data_checker::writes_are_seen(layout, &ops, &mut out);
    data_checker::no_value_from_nowhere(&ops, &mut out);
    data_checker::the_end_agrees(run, &ops, &mut out);
    let timeline = Timeline::new(&run.history.entries, run.config.end());
    data_checker::no_hang(run, &timeline, &ops, &mut out);
    for op in ops.values() {
        match (op.op.kind, op.outcome()) {
            (OpKind::Write | OpKind::Delete, Some(Outcome::Written)) => {
                coverage.writes_ok += 1;
                let at = op.invoked.1;
                let during = steps.joining.is_some_and(|j| at >= j)
                    && steps.normal_everywhere.is_none_or(|n| at <= n);
                coverage.writes_ok_while_joining += u64::from(during);
            }
            (OpKind::Read { .. }, Some(Outcome::Read(_))) => coverage.final_reads_ok += 1,
            _ => {}
        }
    }
    coverage.attempts_failed = steps.failed;
    coverage.partitions_streamed = steps.streamed.map_or(0, |(_, p)| p);
    coverage.files_streamed = steps.files;
    (out, coverage)
}

fn the_join_finishes(run: &Run, steps: &Steps, out: &mut Vec<Violation>) {
    let end = run.config.end();
    let Some(final_phase) = steps.final_phase else {
        let what = match steps.streamed {
            None => format!("no bootstrap attempt succeeded ({} failed)", steps.failed),
            Some((at, _)) => format!("the joiner streamed at {at:?}, but no final phase began"),
        };
        out.push(violation("the join finishes", end, what));
        return;
    };
    for node in 0..run.config.nodes {
        match steps.normal.get(&node) {
            Some(at) if *at <= final_phase => {}
            other => out.push(violation(
                "the join finishes",
                final_phase,
                format!("n{node} had not applied epoch 3 when the final phase began: {other:?}"),
            )),
        }
        if !steps.holds.contains_key(&node) {
            out.push(violation(
                "the join finishes",
                final_phase,
                format!("n{node} did not record its engine in the final phase"),
            ));
        }
    }
}

/// The holding check; how many (write, replica) pairs it looked at.
fn writes_are_held(
    layout: &Layout,
    steps: &Steps,
    ops: &BTreeMap<usize, Op>,
    out: &mut Vec<Violation>,
) -> u64 {
    if steps.holds.is_empty() {
        return 0;
    }
    let mut pairs = 0;
    for op in ops.values() {
        let (Some(Outcome::Written), Some(ts)) = (op.outcome(), op.write_ts) else {
            continue;
        };
        let dc = &layout.dcs[op.op.node];
        let (_, need) = layout.counting(op.op.key, op.op.level, dc);
        let replicas = &layout.replicas[op.op.key];
        let held: Vec<(NodeIndex, Option<i64>)> = replicas
            .iter()
            .map(|&r| {
                let newest = steps.holds.get(&r).and_then(|h| h[op.op.key]);
                (r, newest)
            })
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
