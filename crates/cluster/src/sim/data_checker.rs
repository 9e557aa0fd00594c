//! The data properties a history must have (docs/design/cluster.md,
//! section 11, checks (a), (b), (d) and (e) as built), over the client
//! operations the workload recorded. "Before" is the history's order:
//! every host runs on one thread, so a line recorded earlier happened
//! earlier.
//!
//! - **(a) Acknowledged writes are seen**: a read that completed with a
//!   value and began after a write of its key was acknowledged, where
//!   any replicas that can acknowledge the write meet any that can answer
//!   the read (`block_for(R) + block_for(W) > RF` in one data centre),
//!   returns that write's value or a newer one (a higher timestamp); if
//!   it returns nothing, that write was a deletion or a deletion newer
//!   than it had begun before the read ended.
//! - **(a') Monotonic reads**: the same, with a read that had blocking
//!   read repair in place of the write, and the value it returned in place
//!   of the write's: such a read answers only once the replicas that
//!   answered it hold that value (Cassandra's monotonic quorum reads).
//! - **(c) No value from nowhere**: a value read is one a write of that
//!   key stored, with that write's timestamp, and the write had begun
//!   before the read ended. (Writes that timed out or failed may or may
//!   not be seen: nothing else is asked of them.)
//! - **(b) Unavailable exactly when too few are UP**: an Unavailable
//!   says the level's `block_for` was required and an `alive` the
//!   coordinator's live view (the UP and DOWN its gossiper announced,
//!   plus itself) had, and at some moment within [`VIEW_SLACK`] of the
//!   request that view held fewer of the key's replicas than required;
//!   an operation that was tried instead had enough UP at some such
//!   moment; and no Unavailable comes once the cluster has converged
//!   after the nemesis (every running node seeing every other UP for
//!   good).
//! - **(d) The end agrees**: after the quiet phase every node reads every
//!   key at ALL successfully in one of the final rounds (a client retries
//!   a timeout), and every such read of a key returns the same value ((a)
//!   already asks that it be the newest acknowledged one or newer).
//! - **(e) No hang**: every operation finishes within its timeout plus
//!   [`HANG_SLACK`], unless its node stopped first.

use std::collections::BTreeMap;
use std::time::Duration;

use super::checker::Violation;
use super::data::timeouts;
use super::data::Layout;
use super::harness::Run;
use super::history::{Event, Who};
use super::timeline::Timeline;
use super::workload::{value_of, OpEvent, OpKind, Outcome, PlannedOp};
use crate::membership::Change;

/// How far from a request the coordinator's view is looked at: the view
/// the history records comes from the gossiper's announcements, which a
/// node's recording task receives a moment after the live set changed.
pub const VIEW_SLACK: Duration = Duration::from_millis(100);

/// How much past its timeout an operation may take (a read that met a
/// mismatch waits for repairs within its timeout, then merges).
pub const HANG_SLACK: Duration = Duration::from_millis(500);

/// What the data checks were put to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DataCoverage {
    pub writes_ok: u64,
    pub reads_ok: u64,
    /// Reads made as range scans that answered (`SimConfig::scans`).
    pub scans_ok: u64,
    /// (read, earlier acknowledged write or repairing read) pairs that
    /// (a) and (a') compared.
    pub pairs: u64,
    pub unavailable: u64,
    pub timeouts: u64,
    /// Operations cut off by their node stopping.
    pub unfinished: u64,
}

impl std::ops::AddAssign for DataCoverage {
    fn add_assign(&mut self, o: DataCoverage) {
        self.writes_ok += o.writes_ok;
        self.reads_ok += o.reads_ok;
        self.scans_ok += o.scans_ok;
        self.pairs += o.pairs;
        self.unavailable += o.unavailable;
        self.timeouts += o.timeouts;
        self.unfinished += o.unfinished;
    }
}

/// A read's answer: the cell's timestamp and value, if any.
type Found = Option<(i64, String)>;

/// One operation as the history has it.
#[derive(Debug, Clone)]
pub(super) struct Op {
    pub id: usize,
    pub op: PlannedOp,
    pub write_ts: Option<i64>,
    /// History position and time of the invocation.
    pub invoked: (usize, Duration),
    pub done: Option<(usize, Duration, Outcome)>,
}

impl Op {
    pub fn outcome(&self) -> Option<&Outcome> {
        self.done.as_ref().map(|(_, _, o)| o)
    }

    fn read(&self) -> Option<Found> {
        match self.outcome() {
            Some(Outcome::Read(found)) => Some(found.clone()),
            _ => None,
        }
    }
}

fn violation(property: &'static str, at: Duration, what: String) -> Violation {
    Violation { property, at, what }
}

/// Every violation of the data properties in `run` (none without data),
/// and what was checked.
pub fn check(run: &Run) -> (Vec<Violation>, DataCoverage) {
    let mut out = Vec::new();
    let mut coverage = DataCoverage::default();
    let Some(layout) = &run.layout else {
        return (out, coverage);
    };
    let ops = operations(run);
    for op in ops.values() {
        match op.outcome() {
            Some(Outcome::Written) => coverage.writes_ok += 1,
            Some(Outcome::Read(_)) if op.op.scan => {
                coverage.reads_ok += 1;
                coverage.scans_ok += 1;
            }
            Some(Outcome::Read(_)) => coverage.reads_ok += 1,
            Some(Outcome::Unavailable { .. }) => coverage.unavailable += 1,
            Some(Outcome::WriteTimeout { .. } | Outcome::ReadTimeout { .. }) => {
                coverage.timeouts += 1;
            }
            _ => {}
        }
    }
    coverage.pairs = writes_are_seen(layout, &ops, &mut out);
    no_value_from_nowhere(&ops, &mut out);
    let timeline = Timeline::new(&run.history.entries, run.config.end());
    unavailable_is_true(run, &timeline, layout, &ops, &mut out);
    let nodes: Vec<super::history::NodeIndex> = (0..run.config.nodes).collect();
    the_end_agrees(run, &ops, &nodes, layout.replicas.len(), &mut out);
    coverage.unfinished = no_hang(run, &timeline, &ops, &mut out);
    (out, coverage)
}

pub(super) fn operations(run: &Run) -> BTreeMap<usize, Op> {
    let mut ops = BTreeMap::new();
    for (n, entry) in run.history.entries.iter().enumerate() {
        match &entry.event {
            Event::Op(OpEvent::Invoke { id, op, write_ts }) => {
                ops.insert(
                    *id,
                    Op {
                        id: *id,
                        op: op.clone(),
                        write_ts: *write_ts,
                        invoked: (n, entry.at),
                        done: None,
                    },
                );
            }
            Event::Op(OpEvent::Done { id, outcome }) => {
                if let Some(op) = ops.get_mut(id) {
                    op.done = Some((n, entry.at, outcome.clone()));
                }
            }
            _ => {}
        }
    }
    ops
}

/// What a finished operation left on at least `block_for` of the
/// replicas its level counts: an acknowledged write's timestamp, or the
/// timestamp a read with blocking read repair returned (it answers only
/// once every replica that answered it holds what it returns).
fn stored(op: &Op) -> Option<i64> {
    match (op.op.kind, op.outcome()?) {
        (OpKind::Write | OpKind::Delete, Outcome::Written) => op.write_ts,
        (
            OpKind::Read {
                blocking_repair: true,
                ..
            },
            Outcome::Read(Some((ts, _))),
        ) => Some(*ts),
        _ => None,
    }
}

/// (a) and (a'); how many pairs they compared.
pub(super) fn writes_are_seen(
    layout: &Layout,
    ops: &BTreeMap<usize, Op>,
    out: &mut Vec<Violation>,
) -> u64 {
    let mut pairs = 0;
    for read in ops.values() {
        let Some(found) = read.read() else { continue };
        let read_ts = found.as_ref().map_or(0, |(ts, _)| *ts);
        let newest = ops
            .values()
            .filter(|w| w.op.key == read.op.key && must_meet(layout, &w.op, &read.op))
            .filter_map(|w| {
                let ts = stored(w)?;
                let (done, _, _) = w.done.as_ref()?;
                (*done < read.invoked.0).then_some((ts, w.id, w.op.kind))
            })
            .inspect(|_| pairs += 1)
            .max_by_key(|(ts, _, _)| *ts);
        let Some((ts, id, kind)) = newest else {
            continue;
        };
        let seen = match &found {
            Some(_) => read_ts >= ts,
            // Nothing: the newest required was a deletion, or a deletion
            // at least as new had begun before the read ended.
            None => kind == OpKind::Delete || deleted_since(ops, read, ts),
        };
        if seen {
            continue;
        }
        let (property, what) = match kind {
            OpKind::Write => ("acknowledged writes are seen", "acknowledged"),
            OpKind::Delete => ("acknowledged writes are seen", "acknowledged a deletion at"),
            OpKind::Read { .. } => ("monotonic reads", "read with blocking repair"),
        };
        out.push(violation(
            property,
            read.invoked.1,
            format!(
                "op {} ({}) read {found:?}, but op {id} had {what} timestamp {ts} before it began",
                read.id, read.op
            ),
        ));
    }
    pairs
}

/// Whether a deletion of `read`'s key newer than `ts` had begun before
/// `read` ended.
fn deleted_since(ops: &BTreeMap<usize, Op>, read: &Op, ts: i64) -> bool {
    let Some((done, _, _)) = read.done else {
        return false;
    };
    ops.values().any(|d| {
        d.op.kind == OpKind::Delete
            && d.op.key == read.op.key
            && d.write_ts.is_some_and(|t| t > ts)
            && d.invoked.0 < done
    })
}

/// Whether every set of replicas that can acknowledge `write` meets
/// every set that can answer `read`: `w + r` above the replicas either
/// may count (at RF 3 in one data centre, `w + r > 3`; a local level
/// counts its coordinator's data centre only).
fn must_meet(layout: &Layout, write: &PlannedOp, read: &PlannedOp) -> bool {
    let (sw, w) = layout.counting(write.key, write.level, &layout.dcs[write.node]);
    let (sr, r) = layout.counting(read.key, read.level, &layout.dcs[read.node]);
    let union = sw
        .iter()
        .chain(sr.iter().filter(|x| !sw.contains(x)))
        .count();
    usize::try_from(w + r).unwrap_or(0) > union
}

/// (c).
pub(super) fn no_value_from_nowhere(ops: &BTreeMap<usize, Op>, out: &mut Vec<Violation>) {
    for read in ops.values() {
        let Some(Some((ts, value))) = read.read() else {
            continue;
        };
        let Some((done, _, _)) = read.done else {
            continue;
        };
        let written = ops.values().any(|w| {
            w.op.kind == OpKind::Write
                && w.write_ts == Some(ts)
                && w.op.key == read.op.key
                && w.invoked.0 < done
                && value == value_of(ts)
        });
        if !written {
            out.push(violation(
                "no value from nowhere",
                read.invoked.1,
                format!(
                    "op {} ({}) read {value} at timestamp {ts}, which no write of that key had begun to store",
                    read.id, read.op
                ),
            ));
        }
    }
}

/// (b): Unavailable exactly when the coordinator's view had too few of
/// the key's replicas UP, at some moment near the request.
fn unavailable_is_true(
    run: &Run,
    t: &Timeline,
    layout: &Layout,
    ops: &BTreeMap<usize, Op>,
    out: &mut Vec<Violation>,
) {
    let converged_at = converged(run, t);
    for op in ops.values() {
        let at = op.invoked.1;
        let me = op.op.node;
        let (replicas, required) = layout.counting(op.op.key, op.op.level, &layout.dcs[me]);
        let Some(outcome) = op.outcome() else {
            continue;
        };
        let Some(observer) = t.running_at(Who::Node(me), at) else {
            continue;
        };
        let counts = up_counts(t, observer, me, &replicas, at);
        let (fewest, most) = (counts.iter().min(), counts.iter().max());
        let (fewest, most) = (fewest.copied().unwrap_or(0), most.copied().unwrap_or(0));
        let Outcome::Unavailable {
            required: said,
            alive,
        } = outcome
        else {
            if most < required {
                out.push(violation(
                    "Unavailable is true",
                    at,
                    format!(
                        "op {} ({}) was tried ({outcome}), but n{me} had at most {most} of the replicas {replicas:?} UP",
                        op.id, op.op
                    ),
                ));
            }
            continue;
        };
        let what = format!(
            "op {} ({}) was Unavailable (required {said}, alive {alive})",
            op.id, op.op
        );
        if *said != required || !counts.contains(alive) {
            out.push(violation(
                "Unavailable is true",
                at,
                format!("{what}, but the level needs {required} and n{me} had {counts:?} UP"),
            ));
        }
        if at >= converged_at {
            out.push(violation(
                "Unavailable is true",
                at,
                format!("{what} after the cluster converged at {converged_at:?}"),
            ));
        } else if fewest >= required {
            out.push(violation(
                "Unavailable is true",
                at,
                format!(
                    "{what}, but n{me} had {fewest} of the replicas {replicas:?} UP throughout"
                ),
            ));
        }
    }
}

/// When the cluster converged after the nemesis: the last moment a node
/// running at the end came to see another one UP for good (the end if
/// some pair never did; the membership checker reports that).
fn converged(run: &Run, t: &Timeline) -> Duration {
    let end = run.config.end();
    let running: Vec<usize> = (0..t.incarnations.len())
        .filter(|&i| t.incarnations[i].ended.is_none())
        .collect();
    let mut at = run.config.nemesis_end();
    for &observer in &running {
        for &peer in &running {
            let who = t.incarnations[peer].who;
            if peer == observer {
                continue;
            }
            let last = t.views[observer].iter().rev().find(|s| s.peer == who);
            let up_since = match last {
                Some(seen) if seen.change == Change::Up => seen.at,
                _ => end,
            };
            at = at.max(up_since + VIEW_SLACK);
        }
    }
    at
}

/// How many of `replicas` incarnation `observer` of node `me` counted UP
/// (itself always) at each moment within [`VIEW_SLACK`] of `at` when its
/// view changed, and at the start of that window.
fn up_counts(
    t: &Timeline,
    observer: usize,
    me: usize,
    replicas: &[usize],
    at: Duration,
) -> Vec<u32> {
    let from = at.saturating_sub(VIEW_SLACK);
    let to = at + VIEW_SLACK;
    let mut moments = vec![from];
    moments.extend(
        t.views[observer]
            .iter()
            .map(|s| s.at)
            .filter(|m| *m >= from && *m <= to),
    );
    moments
        .iter()
        .map(|m| {
            let up = replicas
                .iter()
                .filter(|&&r| r == me || t.up_at(observer, Who::Node(r), *m).is_some())
                .count();
            u32::try_from(up).unwrap_or(u32::MAX)
        })
        .collect()
}

/// (d): every node of `nodes` read every one of `keys` keys at ALL
/// successfully in some round, and every successful final read of a key
/// returned the same.
pub(super) fn the_end_agrees(
    run: &Run,
    ops: &BTreeMap<usize, Op>,
    nodes: &[super::history::NodeIndex],
    keys: usize,
    out: &mut Vec<Violation>,
) {
    let end = run.config.end();
    let mut per_key: BTreeMap<usize, Vec<(usize, Found)>> = BTreeMap::new();
    let mut succeeded = std::collections::BTreeSet::new();
    for op in ops.values().filter(|o| o.op.last) {
        if let Some(found) = op.read() {
            succeeded.insert((op.op.key, op.op.node));
            per_key.entry(op.op.key).or_default().push((op.id, found));
        }
    }
    for key in 0..keys {
        for &node in nodes {
            if !succeeded.contains(&(key, node)) {
                let tries: Vec<String> = ops
                    .values()
                    .filter(|o| o.op.last && o.op.key == key && o.op.node == node)
                    .map(|o| format!("op {}: {:?}", o.id, o.outcome()))
                    .collect();
                out.push(violation(
                    "the end agrees",
                    end,
                    format!("no final read of k{key} through n{node} succeeded: {tries:?}"),
                ));
            }
        }
    }
    for (key, reads) in per_key {
        if reads.windows(2).any(|w| w[0].1 != w[1].1) {
            out.push(violation(
                "the end agrees",
                end,
                format!("the final reads of k{key} differ: {reads:?}"),
            ));
        }
    }
}

/// (e); how many operations their node's stop cut off.
pub(super) fn no_hang(
    run: &Run,
    t: &Timeline,
    ops: &BTreeMap<usize, Op>,
    out: &mut Vec<Violation>,
) -> u64 {
    let limits = timeouts();
    let mut cut = 0;
    for op in ops.values() {
        let timeout = match op.op.kind {
            OpKind::Write | OpKind::Delete => limits.write,
            OpKind::Read { .. } => limits.read,
        };
        let bound = timeout + HANG_SLACK;
        let (invoked_at, node) = (op.invoked.1, Who::Node(op.op.node));
        // A graceful shutdown stops the client at once.
        let ended = t.running_at(node, invoked_at).and_then(|i| {
            let inc = &t.incarnations[i];
            inc.shutdown_asked.or(inc.ended)
        });
        let took = match (&op.done, ended) {
            (Some((_, at, _)), _) => *at - invoked_at,
            (None, Some(ended)) if ended - invoked_at <= bound => {
                cut += 1;
                continue;
            }
            (None, ended) => ended.unwrap_or(run.config.end()) - invoked_at,
        };
        if took > bound {
            out.push(violation(
                "no hang",
                invoked_at,
                format!(
                    "op {} ({}) took {took:?} (bound {bound:?}): {:?}",
                    op.id,
                    op.op,
                    op.outcome()
                ),
            ));
        }
    }
    cut
}
