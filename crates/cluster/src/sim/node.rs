//! The software of one simulated host: a node's `Messaging` and
//! `Gossiper`, exactly as the server starts them, over [`sim_env`]. It
//! records its start (with the generation it chose from its generation
//! file and its skewed clock), every UP and DOWN its gossiper announces,
//! and a graceful shutdown when the nemesis asks for one. turmoil calls
//! [`run`] again on every restart: each start is a new incarnation with
//! its own RNG stream, a new generation, and the same address and files.
//!
//! A crash comes in two steps. The nemesis first sends [`Command::Crash`]:
//! the node drops its gossiper without a word and closes every connection
//! at once, as the kernel closes the sockets of a killed process; a tick
//! later the harness has turmoil drop the host's runtime. turmoil's crash
//! alone would drop the tasks, and so close their sockets, in the order
//! of tokio's task ids, which are process-wide: another run of the same
//! seed would close them in another order. A restart of the node planned
//! in the tick of its crash waits for that second step, which would
//! otherwise drop the new incarnation as it starts.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::{Arc, Weak};

use tokio::sync::{broadcast, Notify};

use super::data::NodeData;
use super::env::{sim_env, Skew};
use super::history::{Event, Recorder, Who};
use crate::coordinator::Host;
use crate::membership::{generation, Gossiper, Membership, MembershipConfig, Transition};
use crate::net::{HostId, Messaging, MessagingConfig};
use crate::ring::Location;

/// Who each host id is, for the history.
#[derive(Debug, Default)]
pub struct Directory(pub BTreeMap<HostId, Who>);

impl Directory {
    pub fn who(&self, host: HostId) -> Who {
        self.0.get(&host).copied().unwrap_or(Who::Unknown(host.0))
    }
}

/// How the nemesis stops a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// `Membership::shutdown`, then messaging's.
    Shutdown,
    /// The first step of a crash (see the module docs).
    Crash,
}

/// Everything a host needs to start (and start again) one node.
pub struct NodeSpec {
    pub who: Who,
    pub cluster_name: String,
    pub host_id: HostId,
    pub listen: SocketAddr,
    /// The membership settings, seeds included.
    pub membership: MembershipConfig,
    /// Mixed with the incarnation for each start's RNG seed.
    pub rng_seed: u64,
    /// Where the generation file lives (this node's own temporary dir).
    pub dir: PathBuf,
    pub skew: Skew,
    pub recorder: Recorder,
    pub directory: Rc<Directory>,
    /// The node's engine, replica handlers, coordinator and client, in a
    /// run with a data workload (`sim/data.rs`).
    pub data: Option<Rc<NodeData>>,
    /// What the nemesis asks of the running incarnation.
    command: Cell<Option<Command>>,
    commanded: Notify,
    /// The running incarnation's gossiper, for the final live sets.
    pub running: Rc<Cell<Option<Weak<Gossiper>>>>,
    incarnations: Cell<u64>,
}

impl NodeSpec {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        who: Who,
        cluster_name: &str,
        host_id: HostId,
        listen: SocketAddr,
        membership: MembershipConfig,
        rng_seed: u64,
        dir: PathBuf,
        recorder: Recorder,
        directory: Rc<Directory>,
    ) -> NodeSpec {
        NodeSpec {
            who,
            cluster_name: cluster_name.to_string(),
            host_id,
            listen,
            membership,
            rng_seed,
            dir,
            skew: Skew::default(),
            recorder,
            directory,
            data: None,
            command: Cell::new(None),
            commanded: Notify::new(),
            running: Rc::new(Cell::new(None)),
            incarnations: Cell::new(0),
        }
    }

    /// Asks the running incarnation to stop (a command for a node not
    /// running is forgotten when it starts).
    pub fn command(&self, command: Command) {
        self.command.set(Some(command));
        self.commanded.notify_one();
    }

    /// The live set of the running incarnation: each peer with the
    /// generation it is UP in; `None` if the node is not running.
    pub fn live(&self) -> Option<Vec<(Who, i64)>> {
        let weak = self.running.take();
        let gossip = weak.as_ref().and_then(Weak::upgrade);
        self.running.set(weak);
        let live = gossip?.live();
        Some(
            live.peers
                .values()
                .map(|p| (self.directory.who(p.host_id), p.generation))
                .collect(),
        )
    }
}

/// One incarnation of the node, until it is crashed or shut down.
pub async fn run(spec: Rc<NodeSpec>) -> turmoil::Result {
    let incarnation = spec.incarnations.get();
    spec.incarnations.set(incarnation + 1);
    let seed = spec
        .rng_seed
        .wrapping_add(incarnation.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let env = sim_env(seed, spec.skew.clone());
    let clock = env.clock.clone();
    let failed = |error: String| {
        spec.recorder.record_now(Event::StartFailed {
            node: spec.who,
            error: error.clone(),
        });
        Err(error.into())
    };
    let generation = match generation::next_generation(&spec.dir, &*env.clock) {
        Ok(generation) => generation,
        Err(error) => return failed(error.to_string()),
    };
    let mut config = MessagingConfig::new(&spec.cluster_name, spec.host_id, spec.listen);
    config.generation = generation;
    let messaging = match Messaging::start(config, env.clone()).await {
        Ok(messaging) => messaging,
        Err(error) => return failed(format!("messaging: {error}")),
    };
    if let Some(data) = &spec.data {
        data.register(&messaging, clock.clone());
    }
    let gossip = match Gossiper::start(spec.membership.clone(), &messaging, env).await {
        Ok(gossip) => Arc::new(gossip),
        Err(error) => return failed(format!("gossip: {error}")),
    };
    // Subscribed before the gossip task first runs: nothing is missed.
    let mut transitions = gossip.transitions();
    let here = Host {
        host_id: spec.host_id,
        address: spec.listen,
        location: Location {
            dc: spec.membership.dc.clone(),
            rack: spec.membership.rack.clone(),
        },
        is_local: true,
    };
    let data = spec
        .data
        .as_ref()
        .map(|d| d.start(&messaging, &gossip, clock, here));
    spec.command.set(None);
    spec.running.set(Some(Arc::downgrade(&gossip)));
    spec.recorder.record_now(Event::Started {
        node: spec.who,
        generation,
    });
    let graceful = loop {
        tokio::select! {
            biased;
            () = spec.commanded.notified() => match spec.command.take() {
                Some(Command::Crash) => break false,
                Some(Command::Shutdown) => break true,
                None => {}
            },
            received = transitions.recv() => match received {
                Ok(t) => record(&spec, t),
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    spec.recorder.record_now(Event::Lagged { observer: spec.who, missed });
                }
                // The gossiper holds the sender as long as it runs.
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            },
        }
    };
    spec.running.set(None);
    // Its client stops taking operations; those in flight end unfinished.
    drop(data);
    if graceful {
        gossip.shutdown().await;
        messaging.shutdown().await;
        spec.recorder.record_now(Event::ShutDown { node: spec.who });
        Ok(())
    } else {
        // Dropped without a word, as a crash; its sockets closed as the
        // kernel closes a killed process'. turmoil drops the rest.
        drop(gossip);
        messaging.shutdown().await;
        std::future::pending().await
    }
}

fn record(spec: &NodeSpec, t: Transition) {
    spec.recorder.record_now(Event::Transition {
        observer: spec.who,
        peer: spec.directory.who(t.host_id),
        generation: t.generation,
        change: t.change,
    });
}
