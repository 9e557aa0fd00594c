//! The membership properties a history must have (docs/design/cluster.md,
//! sections 5 and 11). Each follows from the design, not from one run:
//!
//! 1. **The run itself**: every start succeeded, no task panicked, the
//!    simulation did not stop with an error, no transition was missed.
//! 2. **Never itself**: a node never announces itself UP or DOWN, and
//!    its final live set leaves it out.
//! 3. **No stranger**: no node of the cluster ever sees the node of
//!    another cluster name UP, nor it one of ours; no host id appears that
//!    no node has.
//! 4. **Well-formed transitions**: per observer incarnation and peer,
//!    UP and DOWN alternate starting with UP; a DOWN is in the generation
//!    of the UP before it; UP generations never go back; every UP
//!    generation is one the peer had started with, before that moment.
//! 5. **Generations rise**: each node's generation at each start is
//!    above the one before, whatever its wall clock's skew.
//! 6. **The live set is the transitions' sum**: each final live set is
//!    what replaying that incarnation's transitions gives.
//! 7. **Convergence**: at the end (a quiet phase after the nemesis has
//!    healed everything), every running node sees every other running
//!    node UP in its current generation, and no stopped node.
//! 8. **A crash is noticed in time**: when a node crashes on a network
//!    that has been quiet for `SimConfig::settle` and stays quiet, every
//!    node that had it UP and runs throughout sees it DOWN within
//!    [`conviction_bound`]. (Faults before the crash are excluded because
//!    they can delay the crashed node's last heartbeats, and any news
//!    restarts the detector's clock.)
//! 9. **A shutdown is heard**: when a node shuts down gracefully in such
//!    a window, every node that had it UP (and has run for `settle`, so
//!    the stopping node knows it) sees it DOWN *because of the shutdown*
//!    within [`shutdown_bound`].
//!
//! The checker also counts the stops it could time ([`Coverage`]): CI
//! asserts that its seeds put 8 and 9 to the test.

use std::collections::BTreeMap;
use std::f64::consts::LN_10;
use std::fmt;
use std::time::Duration;

use super::harness::{Run, SimConfig};
use super::history::{Event, Who};
use super::movement::MovementEvent;
use super::nemesis::Action;
use super::timeline::Timeline;
use crate::membership::config::{ECHO_TIMEOUT_DEFAULT, SHUTDOWN_ANNOUNCE_TIMEOUT_DEFAULT};
use crate::membership::detector::ARRIVAL_INTERVAL_MAX_FACTOR;
use crate::membership::{Change, DownReason};

/// A property that did not hold, where in the run, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub property: &'static str,
    pub at: std::time::Duration,
    pub what: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}] at {:.3}s: {}",
            self.property,
            self.at.as_secs_f64(),
            self.what
        )
    }
}

/// How long after a crash a node that had the crashed one UP has it DOWN
/// at the latest, on a quiet network. The detector convicts once the
/// silence exceeds `phi × ln 10 × mean`, and the mean interval is at most
/// `ARRIVAL_INTERVAL_MAX_FACTOR` gossip intervals (longer ones are not
/// sampled); on top of that, ten intervals for the crashed node's last
/// heartbeat to reach everyone second hand and for the next evaluation,
/// and one largest latency.
pub fn conviction_bound(config: &SimConfig) -> Duration {
    let max_mean = config.gossip_interval * ARRIVAL_INTERVAL_MAX_FACTOR;
    max_mean.mul_f64(config.phi_convict_threshold * LN_10)
        + config.gossip_interval * 10
        + config.max_latency
}

/// How long after a graceful shutdown is asked for its peers have it
/// DOWN: it pushes `SHUTDOWN` at once, and waits for ECHOs at most
/// `shutdown_announce_timeout`; ten gossip intervals more for a peer it
/// did not count live to hear it second hand.
pub fn shutdown_bound(config: &SimConfig) -> Duration {
    SHUTDOWN_ANNOUNCE_TIMEOUT_DEFAULT + config.gossip_interval * 10 + config.max_latency
}

/// How many bounded checks a run had the conditions for (so a test can
/// tell a property that held from one never put to the test).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Coverage {
    /// (crash, observer) pairs checked against the conviction bound.
    pub crashes: u64,
    /// (shutdown, observer) pairs checked against the shutdown bound.
    pub shutdowns: u64,
}

impl std::ops::AddAssign for Coverage {
    fn add_assign(&mut self, other: Coverage) {
        self.crashes += other.crashes;
        self.shutdowns += other.shutdowns;
    }
}

/// Every violation in `run`, in property order, and what was covered.
pub fn check(run: &Run, panics: u64) -> (Vec<Violation>, Coverage) {
    let end = run.config.end();
    let timeline = Timeline::new(&run.history.entries, end);
    let mut out = Vec::new();
    the_run(run, panics, &mut out);
    never_itself(&timeline, &mut out);
    no_stranger(&timeline, &mut out);
    well_formed(&timeline, &mut out);
    generations_rise(run, &timeline, &mut out);
    live_set_is_the_sum(&timeline, end, &mut out);
    convergence(run, &timeline, &mut out);
    let coverage = Coverage {
        crashes: crash_noticed(run, &timeline, &mut out),
        shutdowns: shutdown_heard(run, &timeline, &mut out),
    };
    (out, coverage)
}

fn violation(property: &'static str, at: Duration, what: String) -> Violation {
    Violation { property, at, what }
}

/// `n1@1700000000, n2@1700000030`.
fn peers(live: &[(Who, i64)]) -> String {
    let each: Vec<String> = live.iter().map(|(p, g)| format!("{p}@{g}")).collect();
    each.join(", ")
}

fn the_run(run: &Run, panics: u64, out: &mut Vec<Violation>) {
    let end = run.config.end();
    if let Some(error) = &run.error {
        out.push(violation(
            "run",
            end,
            format!("the simulation stopped: {error}"),
        ));
    }
    if panics > 0 {
        out.push(violation(
            "run",
            end,
            format!("{panics} panics (see the log)"),
        ));
    }
    for entry in &run.history.entries {
        match &entry.event {
            Event::StartFailed { node, error } => {
                out.push(violation(
                    "run",
                    entry.at,
                    format!("{node} did not start: {error}"),
                ));
            }
            Event::Lagged { observer, missed } => out.push(violation(
                "run",
                entry.at,
                format!("{observer} missed {missed} transitions: the history is incomplete"),
            )),
            _ => {}
        }
    }
}

fn never_itself(t: &Timeline, out: &mut Vec<Violation>) {
    for (i, inc) in t.incarnations.iter().enumerate() {
        for seen in t.views[i].iter().filter(|s| s.peer == inc.who) {
            out.push(violation(
                "never itself",
                seen.at,
                format!("{} announced itself {:?}", inc.who, seen.change),
            ));
        }
    }
    for (who, live) in &t.finals {
        if live.iter().any(|(peer, _)| peer == who) {
            out.push(violation(
                "never itself",
                Duration::MAX,
                format!("{who} is in its own live set"),
            ));
        }
    }
}

fn no_stranger(t: &Timeline, out: &mut Vec<Violation>) {
    for (i, inc) in t.incarnations.iter().enumerate() {
        for seen in &t.views[i] {
            let stranger = match (inc.who, seen.peer) {
                (_, Who::Unknown(_)) => true,
                (Who::Intruder, _) | (_, Who::Intruder) => seen.change == Change::Up,
                _ => false,
            };
            if stranger {
                out.push(violation(
                    "no stranger",
                    seen.at,
                    format!("{} sees {} {:?}", inc.who, seen.peer, seen.change),
                ));
            }
        }
    }
}

fn well_formed(t: &Timeline, out: &mut Vec<Violation>) {
    for (i, inc) in t.incarnations.iter().enumerate() {
        // Per peer: the generation it is UP in, and the last UP generation.
        let mut state: BTreeMap<Who, (Option<i64>, i64)> = BTreeMap::new();
        for seen in &t.views[i] {
            let (up, last) = state.entry(seen.peer).or_insert((None, i64::MIN));
            let bad =
                |what: String| violation("well-formed", seen.at, format!("{}: {what}", inc.who));
            match seen.change {
                Change::Up => {
                    if let Some(g) = up {
                        out.push(bad(format!("{} UP again (generation {g})", seen.peer)));
                    }
                    if seen.generation < *last {
                        out.push(bad(format!(
                            "{} UP in generation {} after {last}",
                            seen.peer, seen.generation
                        )));
                    }
                    // UP needs an ECHO answered in that generation, so the
                    // peer ran in it at some moment of the ECHO's timeout.
                    let answered = t.incarnations.iter().any(|peer| {
                        peer.who == seen.peer
                            && peer.generation == seen.generation
                            && peer.started <= seen.at
                            && peer
                                .ended
                                .is_none_or(|end| end + ECHO_TIMEOUT_DEFAULT >= seen.at)
                    });
                    if !answered {
                        out.push(bad(format!(
                            "{} UP in generation {}, which did not run in the {:?} before",
                            seen.peer, seen.generation, ECHO_TIMEOUT_DEFAULT
                        )));
                    }
                    *up = Some(seen.generation);
                    *last = seen.generation;
                }
                Change::Down(_) => {
                    if *up != Some(seen.generation) {
                        out.push(bad(format!(
                            "{} DOWN in generation {} while UP in {up:?}",
                            seen.peer, seen.generation
                        )));
                    }
                    *up = None;
                }
            }
        }
    }
}

fn generations_rise(run: &Run, t: &Timeline, out: &mut Vec<Violation>) {
    for n in 0..run.config.nodes {
        let generations = t.generations(Who::Node(n));
        for pair in generations.windows(2) {
            if pair[1].1 <= pair[0].1 {
                out.push(violation(
                    "generations rise",
                    pair[1].0,
                    format!(
                        "n{n} started with generation {} after {}",
                        pair[1].1, pair[0].1
                    ),
                ));
            }
        }
    }
}

fn live_set_is_the_sum(t: &Timeline, end: Duration, out: &mut Vec<Violation>) {
    for (who, live) in &t.finals {
        let Some(i) = t.running_at(*who, end) else {
            continue;
        };
        let mut replayed: Vec<(Who, i64)> = Vec::new();
        for peer in t.views[i].iter().map(|s| s.peer) {
            if !replayed.iter().any(|(p, _)| *p == peer) {
                if let Some(g) = t.up_at(i, peer, end) {
                    replayed.push((peer, g));
                }
            }
        }
        replayed.sort();
        let mut published = live.clone();
        published.sort();
        if replayed != published {
            out.push(violation(
                "live set is the sum",
                end,
                format!(
                    "{who} publishes [{}], its transitions give [{}]",
                    peers(&published),
                    peers(&replayed)
                ),
            ));
        }
    }
}

fn convergence(run: &Run, t: &Timeline, out: &mut Vec<Violation>) {
    let end = run.config.end();
    let running: Vec<(Who, i64)> = (0..run.config.nodes)
        .filter_map(|n| {
            let who = Who::Node(n);
            t.running_at(who, end)
                .map(|i| (who, t.incarnations[i].generation))
        })
        .collect();
    for (who, _) in &running {
        let mut expected: Vec<(Who, i64)> =
            running.iter().filter(|(p, _)| p != who).copied().collect();
        expected.sort();
        let mut live = t.finals.get(who).cloned().unwrap_or_default();
        live.sort();
        if live != expected {
            out.push(violation(
                "convergence",
                end,
                format!(
                    "{who} ends seeing [{}] UP, but [{}] are running",
                    peers(&live),
                    peers(&expected)
                ),
            ));
        }
    }
}

/// For each crash on a quiet network: every node that had the crashed
/// one UP sees it DOWN within the bound.
fn crash_noticed(run: &Run, t: &Timeline, out: &mut Vec<Violation>) -> u64 {
    let bound = conviction_bound(&run.config);
    let mut checked = 0;
    for_each_stop(run, t, bound, |stop, observer, generation| {
        if stop.graceful {
            return;
        }
        checked += 1;
        let seen = t.views[observer]
            .iter()
            .find(|s| s.peer == stop.who && s.at > stop.at && matches!(s.change, Change::Down(_)));
        if seen.is_none_or(|s| s.at > stop.at + bound || s.generation != generation) {
            out.push(violation(
                "crash noticed",
                stop.at,
                format!(
                    "{} crashed (generation {generation}); {} had it UP and did not see it DOWN within {bound:?}",
                    stop.who, t.incarnations[observer].who
                ),
            ));
        }
    });
    checked
}

/// For each graceful shutdown on a quiet network: every node that had
/// the stopping one UP sees it DOWN for that reason within the bound.
fn shutdown_heard(run: &Run, t: &Timeline, out: &mut Vec<Violation>) -> u64 {
    let bound = shutdown_bound(&run.config);
    let settled = run.config.settle;
    let mut checked = 0;
    for_each_stop(run, t, bound, |stop, observer, generation| {
        if !stop.graceful || t.incarnations[observer].started + settled > stop.at {
            return;
        }
        checked += 1;
        let seen = t.views[observer]
            .iter()
            .find(|s| s.peer == stop.who && s.at > stop.at && s.change != Change::Up);
        let heard = seen.is_some_and(|s| {
            s.at <= stop.at + bound
                && s.generation == generation
                && s.change == Change::Down(DownReason::Shutdown)
        });
        if !heard {
            out.push(violation(
                "shutdown heard",
                stop.at,
                format!(
                    "{} shut down (generation {generation}); {} had it UP and saw {:?} instead of a DOWN (shutdown) within {bound:?}",
                    stop.who,
                    t.incarnations[observer].who,
                    seen.map(|s| (s.at, s.change)),
                ),
            ));
        }
    });
    checked
}

/// A node stopping: crashed, or asked to shut down.
struct Stop {
    who: Who,
    at: Duration,
    graceful: bool,
}

/// Calls `f(stop, observer incarnation, generation it had the stopping
/// node UP in)` for each crash or shutdown whose window (`settle` before
/// it, for connections broken by earlier faults to recover, and `window`
/// after) has a quiet network and fits in the run, and each observer
/// running throughout that had it UP.
fn for_each_stop(run: &Run, t: &Timeline, window: Duration, mut f: impl FnMut(&Stop, usize, i64)) {
    let settle = run.config.settle;
    for entry in &run.history.entries {
        let (node, graceful) = match entry.event {
            Event::Nemesis(Action::Crash(n)) => (n, false),
            Event::Nemesis(Action::Shutdown(n)) => (n, true),
            // A decommissioned node's process stops as it shuts down.
            Event::Movement(MovementEvent::Left { node }) => (node, true),
            _ => continue,
        };
        let stop = Stop {
            who: Who::Node(node),
            at: entry.at,
            graceful,
        };
        let until = stop.at + window;
        if until > run.config.end() || !t.network_quiet(stop.at.saturating_sub(settle), until) {
            continue;
        }
        for observer in 0..t.incarnations.len() {
            let inc = &t.incarnations[observer];
            if inc.who == stop.who || !inc.runs_throughout(stop.at, until) {
                continue;
            }
            if let Some(generation) = t.up_at(observer, stop.who, stop.at) {
                f(&stop, observer, generation);
            }
        }
    }
}

/// The failure message: the seed and how to replay it, the violations,
/// the history around each, and the run's outline.
pub fn report(run: &Run, violations: &[Violation]) -> String {
    let seed = run.config.seed;
    let replay = if let Some(roles) = &run.config.movement {
        super::movement_tests::replay_line(seed, roles.kind, run.config.repair)
    } else if run.config.plan.is_some() {
        "rerun this test: its plan is pinned, not drawn from the seed".to_string()
    } else {
        let test = if run.config.data {
            "sim::data_tests::replay_data"
        } else {
            "sim::tests::replay"
        };
        format!("VARVE_SIM_SEED={seed} cargo test -p varve-cluster --lib {test} -- --nocapture")
    };
    let mut out = format!(
        "simulation seed {seed} failed ({} nodes, {} violations)\nreplay: {replay}\n",
        run.config.nodes,
        violations.len()
    );
    for v in violations.iter().take(10) {
        out.push_str(&format!("\n{v}\n"));
        let at = v.at.min(run.config.end());
        out.push_str(&run.history.excerpt(at, Duration::from_secs(3)));
    }
    out.push_str("\noutline of the run:\n");
    out.push_str(&run.history.outline());
    out
}
