//! The history replayed for the checker: every node's incarnations (from
//! a start to its crash, shutdown or restart), what each incarnation
//! observed, and when the network track of the nemesis was at work.

use std::collections::BTreeMap;
use std::time::Duration;

use super::history::{Entry, Event, Who};
use super::movement::MovementEvent;
use super::nemesis::Action;
use crate::membership::Change;

/// One start of a node's software, until it stopped.
#[derive(Debug, Clone)]
pub struct Incarnation {
    pub who: Who,
    pub generation: i64,
    pub started: Duration,
    /// When it was crashed, finished a graceful shutdown, or was started
    /// again; `None` if it ran to the end.
    pub ended: Option<Duration>,
    /// When a graceful shutdown of it was asked for.
    pub shutdown_asked: Option<Duration>,
}

impl Incarnation {
    /// Whether it ran at least from `from` until `to`.
    pub fn runs_throughout(&self, from: Duration, to: Duration) -> bool {
        self.started <= from && self.ended.is_none_or(|end| end >= to)
    }
}

/// One transition an incarnation announced.
#[derive(Debug, Clone, Copy)]
pub struct Seen {
    pub at: Duration,
    pub peer: Who,
    pub generation: i64,
    pub change: Change,
}

/// The history, replayed.
#[derive(Debug, Default)]
pub struct Timeline {
    /// In the order they started.
    pub incarnations: Vec<Incarnation>,
    /// What each incarnation (same index) announced, in order.
    pub views: Vec<Vec<Seen>>,
    /// When each fault of the network track was active (start, heal).
    pub network_faults: Vec<(Duration, Duration)>,
    /// The final live set of each node still running at the end.
    pub finals: BTreeMap<Who, Vec<(Who, i64)>>,
}

impl Timeline {
    pub fn new(entries: &[Entry], end: Duration) -> Timeline {
        let mut t = Timeline::default();
        let mut current: BTreeMap<Who, usize> = BTreeMap::new();
        let mut fault_started = None;
        for entry in entries {
            let at = entry.at;
            match &entry.event {
                Event::Started { node, generation } => {
                    if let Some(i) = current.remove(node) {
                        t.end(i, at);
                    }
                    current.insert(*node, t.incarnations.len());
                    t.incarnations.push(Incarnation {
                        who: *node,
                        generation: *generation,
                        started: at,
                        ended: None,
                        shutdown_asked: None,
                    });
                    t.views.push(Vec::new());
                }
                Event::Transition {
                    observer,
                    peer,
                    generation,
                    change,
                } => {
                    if let Some(&i) = current.get(observer) {
                        t.views[i].push(Seen {
                            at,
                            peer: *peer,
                            generation: *generation,
                            change: *change,
                        });
                    }
                }
                // A node that left shuts down for good.
                Event::Movement(MovementEvent::Left { node }) => {
                    if let Some(&i) = current.get(&Who::Node(*node)) {
                        t.incarnations[i].shutdown_asked = Some(at);
                    }
                }
                Event::ShutDown { node } => {
                    if let Some(i) = current.remove(node) {
                        t.end(i, at);
                    }
                }
                Event::Nemesis(action) => match action {
                    Action::Crash(n) | Action::Restart { node: n, .. } => {
                        if let Some(i) = current.remove(&Who::Node(*n)) {
                            t.end(i, at);
                        }
                    }
                    Action::Shutdown(n) => {
                        if let Some(&i) = current.get(&Who::Node(*n)) {
                            t.incarnations[i].shutdown_asked = Some(at);
                        }
                    }
                    Action::Start(_) => fault_started = Some(at),
                    Action::Heal(_) => {
                        if let Some(from) = fault_started.take() {
                            t.network_faults.push((from, at));
                        }
                    }
                    Action::Quiet => {}
                },
                Event::Final { node, live } => {
                    t.finals.insert(*node, live.clone());
                }
                Event::StartFailed { .. }
                | Event::Lagged { .. }
                | Event::Op(_)
                | Event::Lwt(_)
                | Event::Movement(_) => {}
            }
        }
        if let Some(from) = fault_started {
            t.network_faults.push((from, end));
        }
        t
    }

    fn end(&mut self, i: usize, at: Duration) {
        if self.incarnations[i].ended.is_none() {
            self.incarnations[i].ended = Some(at);
        }
    }

    /// The incarnation of `who` running at `at`.
    pub fn running_at(&self, who: Who, at: Duration) -> Option<usize> {
        self.incarnations.iter().rposition(|inc| {
            inc.who == who && inc.started <= at && inc.ended.is_none_or(|e| e > at)
        })
    }

    /// The generation in which incarnation `observer` had `peer` UP at
    /// `at` (transitions at `at` included).
    pub fn up_at(&self, observer: usize, peer: Who, at: Duration) -> Option<i64> {
        let mut up = None;
        for seen in self.views[observer]
            .iter()
            .take_while(|s| s.at <= at)
            .filter(|s| s.peer == peer)
        {
            up = match seen.change {
                Change::Up => Some(seen.generation),
                Change::Down(_) => None,
            };
        }
        up
    }

    /// Whether no network fault was active at any time in `from..=to`
    /// (one healed at `from` is not).
    pub fn network_quiet(&self, from: Duration, to: Duration) -> bool {
        self.network_faults
            .iter()
            .all(|(start, heal)| *heal <= from || *start > to)
    }

    /// Every generation `who` started with, in order.
    pub fn generations(&self, who: Who) -> Vec<(Duration, i64)> {
        self.incarnations
            .iter()
            .filter(|inc| inc.who == who)
            .map(|inc| (inc.started, inc.generation))
            .collect()
    }
}
