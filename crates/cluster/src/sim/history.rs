//! The history of one simulation: what each node observed (its starts,
//! every UP and DOWN it announced, its live set at the end) and what the
//! nemesis did, each stamped with simulated time. The checker judges it;
//! the determinism test compares two runs' histories line by line, so
//! every line is a pure function of the seed.

use super::lwt::LwtEvent;
use super::movement::MovementEvent;
use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;
use std::time::Duration;

use super::nemesis::Action;
use super::workload::OpEvent;
use crate::membership::{Change, DownReason};

/// A node of the simulation, by its index (`n0`, `n1` ...).
pub type NodeIndex = usize;

/// The node that belongs to another cluster, when a run has one.
pub const INTRUDER_NAME: &str = "intruder";

/// The turmoil host name of node `i`.
pub fn node_name(i: NodeIndex) -> String {
    format!("n{i}")
}

/// A peer as an observer saw it: a node of the simulation, or a host id
/// the harness does not know (which is itself a violation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Who {
    Node(NodeIndex),
    Intruder,
    Unknown([u8; 16]),
}

impl fmt::Display for Who {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Who::Node(i) => write!(f, "n{i}"),
            Who::Intruder => f.write_str(INTRUDER_NAME),
            Who::Unknown(id) => write!(f, "unknown host {:02x?}", &id[..4]),
        }
    }
}

/// One line of the history.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A node's software started with this generation.
    Started { node: Who, generation: i64 },
    /// A node could not start (its generation file, messaging or gossip
    /// refused); the run fails on it.
    StartFailed { node: Who, error: String },
    /// `observer` announced `peer` UP or DOWN in `generation`.
    Transition {
        observer: Who,
        peer: Who,
        generation: i64,
        change: Change,
    },
    /// `observer` missed transitions (its receiver lagged).
    Lagged { observer: Who, missed: u64 },
    /// A graceful shutdown finished (SHUTDOWN announced, gossip stopped).
    ShutDown { node: Who },
    /// What the nemesis did.
    Nemesis(Action),
    /// The live set a running node published at the end of the run:
    /// each peer with the generation it is UP in.
    Final { node: Who, live: Vec<(Who, i64)> },
    /// A client operation of the data workload began or finished.
    Op(OpEvent),
    /// A lightweight transaction began or finished.
    Lwt(LwtEvent),
    /// A step of a topology movement (`sim/movement.rs`).
    Movement(MovementEvent),
}

/// A history line with its simulated time.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub at: Duration,
    pub event: Event,
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:>9.3}s ", self.at.as_secs_f64())?;
        match &self.event {
            Event::Started { node, generation } => {
                write!(f, "{node} started, generation {generation}")
            }
            Event::StartFailed { node, error } => write!(f, "{node} failed to start: {error}"),
            Event::Transition {
                observer,
                peer,
                generation,
                change,
            } => {
                let change = match change {
                    Change::Up => "UP",
                    Change::Down(DownReason::Convicted) => "DOWN (convicted)",
                    Change::Down(DownReason::Shutdown) => "DOWN (shutdown)",
                    Change::Down(DownReason::Restarted) => "DOWN (restarted)",
                };
                write!(
                    f,
                    "{observer} sees {peer} {change} (generation {generation})"
                )
            }
            Event::Lagged { observer, missed } => {
                write!(f, "{observer} missed {missed} transitions")
            }
            Event::ShutDown { node } => write!(f, "{node} shut down"),
            Event::Nemesis(action) => write!(f, "nemesis: {action}"),
            Event::Op(op) => op.fmt(f),
            Event::Movement(step) => step.fmt(f),
            Event::Lwt(LwtEvent::Invoke { client, key, op }) => {
                write!(f, "lwt client {client} calls {op:?} on k{key}")
            }
            Event::Lwt(LwtEvent::Done {
                client,
                outcome,
                forwarded,
                home_refused,
                path,
            }) => {
                let home = match (forwarded, home_refused) {
                    (true, _) => " from the key's home",
                    (_, true) => " here, the key's home having refused it",
                    _ => "",
                };
                let path = match path {
                    crate::coordinator::CasPath::Full => "",
                    crate::coordinator::CasPath::TwoRounds => " in two rounds",
                    crate::coordinator::CasPath::FellBack => " after falling back",
                };
                write!(f, "lwt client {client} gets {outcome:?}{home}{path}")
            }
            Event::Final { node, live } => {
                write!(f, "{node} ends with live set [")?;
                for (i, (peer, generation)) in live.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}{peer}@{generation}")?;
                }
                f.write_str("]")
            }
        }
    }
}

/// The history being written: shared by the harness and every host's
/// software, all on the simulation's one thread.
#[derive(Debug, Clone, Default)]
pub struct Recorder(Rc<RefCell<Vec<Entry>>>);

impl Recorder {
    pub fn record(&self, at: Duration, event: Event) {
        self.0.borrow_mut().push(Entry { at, event });
    }

    /// Records at the current host's simulated time (inside a host).
    pub fn record_now(&self, event: Event) {
        self.record(turmoil::sim_elapsed().unwrap_or_default(), event);
    }

    pub fn entries(&self) -> Vec<Entry> {
        self.0.borrow().clone()
    }
}

/// A finished run's history, in the order it was recorded (which is
/// simulated-time order: one thread, time only moves forward).
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    pub seed: u64,
    pub entries: Vec<Entry>,
}

impl History {
    /// The lines within `around` of `at`, for a failure message.
    pub fn excerpt(&self, at: Duration, around: Duration) -> String {
        let from = at.saturating_sub(around);
        let to = at + around;
        let mut out = String::new();
        for entry in self.entries.iter().filter(|e| e.at >= from && e.at <= to) {
            out.push_str(&format!("  {entry}\n"));
        }
        out
    }

    /// The nemesis' lines and every node's start, shutdown and final
    /// live set: the outline of the run (no transitions, no operations).
    pub fn outline(&self) -> String {
        let mut out = String::new();
        for entry in &self.entries {
            if !matches!(entry.event, Event::Transition { .. } | Event::Op(_)) {
                out.push_str(&format!("  {entry}\n"));
            }
        }
        out
    }
}

impl fmt::Display for History {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "seed {}", self.seed)?;
        for entry in &self.entries {
            writeln!(f, "{entry}")?;
        }
        Ok(())
    }
}
