//! Building and running one simulation: N nodes (each a `Messaging` and
//! a `Gossiper` on its own turmoil host), optionally a node of another
//! cluster, the nemesis' plan applied at its times, and the history
//! recorded until the end of the quiet phase (a movement run's ends once
//! its final reads are over; its node that left stops for good, and the
//! plan's later steps for it are dropped).
//!
//! Everything random comes from the one seed: the number of nodes, the
//! host ids, each node's RNG (and each restart's), turmoil's own RNG
//! (latencies, losses) and the nemesis' plan. The simulated epoch is
//! fixed, so generations, too, are the same on every run of a seed.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, UNIX_EPOCH};

use super::data::{self, Layout};
use super::history::{node_name, Event, History, NodeIndex, Recorder, Who, INTRUDER_NAME};
use super::nemesis::{self, Action, LastStop, NetFault, Plan};
use super::node::{self, Command, Directory, NodeSpec};
use crate::env::SeededRng;
use crate::membership::{GossipKey, MembershipConfig};
use crate::net::HostId;

/// The simulated wall clock at the start: 2023-11-14, 22:13:20 UTC.
pub const EPOCH_SECONDS: u64 = 1_700_000_000;

/// The port every node listens on.
pub const STORAGE_PORT: u16 = 7000;

pub const CLUSTER_NAME: &str = "Sim Cluster";
pub const OTHER_CLUSTER_NAME: &str = "Other Cluster";

/// How long a movement run goes on once its final reads are over (its
/// `quiet` phase is cut there, and the run's config says so).
const RUN_AFTER_FINAL_READS: Duration = Duration::from_secs(1);

/// The settings of one run.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub seed: u64,
    pub nodes: usize,
    pub gossip_interval: Duration,
    pub phi_convict_threshold: f64,
    /// turmoil's step: network delivery happens at this granularity
    /// (timers inside a host fire at their exact times).
    pub tick: Duration,
    /// The largest latency of a healthy link (turmoil draws each one
    /// from an exponential distribution below it).
    pub max_latency: Duration,
    /// From the start until the nemesis' first action.
    pub warmup: Duration,
    /// How long the nemesis acts.
    pub nemesis: Duration,
    /// From the nemesis' end (everything healed) to the end of the run.
    pub quiet: Duration,
    /// How long connections may take to recover once the network is
    /// quiet (a stalled one is closed after messaging's write timeout);
    /// the node stopped for good stops this long into the quiet phase.
    pub settle: Duration,
    /// Whether a node of another cluster name, with the same seeds, runs
    /// beside the cluster.
    pub intruder: bool,
    /// A plan to follow instead of one drawn from the seed (regression
    /// tests pin the scenario they guard this way).
    pub plan: Option<Plan>,
    /// How the run ends (by the seed unless set).
    pub last_stop: LastStop,
    /// Whether the nodes store data and run the client workload
    /// (`sim/data.rs`).
    pub data: bool,
    /// With `data`: the clients run lightweight transactions
    /// (`sim/lwt.rs`) instead of the planned reads and writes (in a
    /// movement run, beside its writes).
    pub lwt: bool,
    /// With `data`: some of the planned reads are made as range scans
    /// (`PlannedOp::scan`).
    pub scans: bool,
    /// With `lwt`: node 0 answers forwarded statements with UNKNOWN_VERB
    /// and node 1 declines them, so their coordinators run them.
    pub refusing_homes: bool,
    /// With `lwt`: coordinators that are replicas take the two-round path
    /// (`paxos_two_round_path`, docs/design/paxos-two-rounds.md); off, every
    /// statement runs the full round.
    pub two_rounds: bool,
    /// With `data`: a node joins, leaves, or replaces a dead one, or a
    /// dead one is removed (`sim/movement.rs`), under clients and a plan
    /// of their own.
    pub movement: Option<super::movement_workload::Roles>,
    /// With `movement`: the final ring repairs before its final reads.
    pub repair: bool,
}

impl SimConfig {
    /// The standard run of `seed`: 3 to 5 nodes (drawn from the seed),
    /// the default gossip interval and phi threshold, 10 s of warm-up,
    /// 60 s of nemesis, and 50 s of quiet: enough for connections to
    /// settle, a last node to stop, and the others to convict it (the
    /// checker's bounds), with an intruder.
    pub fn new(seed: u64) -> SimConfig {
        let rng = SeededRng::new(mix(seed, 0));
        SimConfig {
            seed,
            nodes: 3 + usize::try_from(rng.below_or_at(2)).unwrap_or(0),
            gossip_interval: crate::membership::config::GOSSIP_INTERVAL_DEFAULT,
            phi_convict_threshold: crate::membership::config::PHI_CONVICT_THRESHOLD_DEFAULT,
            tick: Duration::from_millis(10),
            max_latency: Duration::from_millis(50),
            warmup: Duration::from_secs(10),
            nemesis: Duration::from_secs(60),
            quiet: Duration::from_secs(50),
            settle: crate::net::limits::WRITE_TIMEOUT * 2,
            intruder: true,
            plan: None,
            last_stop: LastStop::for_seed(seed),
            data: false,
            lwt: false,
            scans: false,
            refusing_homes: false,
            two_rounds: true,
            movement: None,
            repair: false,
        }
    }

    pub fn nemesis_start(&self) -> Duration {
        self.warmup
    }

    pub fn nemesis_end(&self) -> Duration {
        self.warmup + self.nemesis
    }

    pub fn end(&self) -> Duration {
        self.nemesis_end() + self.quiet
    }
}

/// A finished run: its settings, the nemesis' plan, the history, where
/// its data lived (a run with data), and an error if the simulation
/// itself stopped (a host's software failed).
#[derive(Debug, Clone)]
pub struct Run {
    pub config: SimConfig,
    pub plan: Plan,
    pub history: History,
    pub layout: Option<Layout>,
    pub error: Option<String>,
}

/// Runs one simulation to its end.
pub fn run(config: &SimConfig) -> Run {
    let seed = config.seed;
    let plan = config.plan.clone().unwrap_or_else(|| {
        nemesis::plan(
            &SeededRng::new(mix(seed, 1)),
            config.nodes,
            config.nemesis_start(),
            config.nemesis_end(),
            (config.last_stop, config.nemesis_end() + config.settle),
        )
    });
    if let Err(why) = plan.check_order() {
        panic!("seed {seed}: {why}");
    }
    let mut sim = turmoil::Builder::new()
        .rng_seed(mix(seed, 2))
        .epoch(UNIX_EPOCH + Duration::from_secs(EPOCH_SECONDS))
        .tick_duration(config.tick)
        .simulation_duration(config.end() + Duration::from_secs(60))
        .max_message_latency(config.max_latency)
        .build();
    let dirs = TempDirs::new(seed);
    let recorder = Recorder::default();
    let ids = SeededRng::new(mix(seed, 3));
    let mut names: Vec<String> = (0..config.nodes).map(node_name).collect();
    let mut members: Vec<Who> = (0..config.nodes).map(Who::Node).collect();
    if config.intruder {
        names.push(INTRUDER_NAME.to_string());
        members.push(Who::Intruder);
    }
    let addresses: Vec<SocketAddr> = names
        .iter()
        .map(|n| SocketAddr::new(sim.lookup(n.as_str()), STORAGE_PORT))
        .collect();
    let host_ids: Vec<HostId> = names.iter().map(|_| host_id(&ids)).collect();
    let directory = Rc::new(Directory(
        host_ids
            .iter()
            .copied()
            .zip(members.iter().copied())
            .collect(),
    ));
    // The first two nodes are the seeds, of the intruder too.
    let seeds: Vec<SocketAddr> = addresses.iter().take(2).copied().collect();
    let (data, layout) = match config.data {
        true => {
            let location = MembershipConfig::new(Vec::new());
            let location = crate::ring::Location {
                dc: location.dc,
                rack: location.rack,
            };
            let rng = SeededRng::new(mix(seed, 4));
            let (nodes, layout) = match config.movement.is_some() {
                true => super::movement::cluster(
                    &rng,
                    config,
                    &location,
                    recorder.clone(),
                    (&host_ids, &addresses),
                ),
                false => data::cluster(&rng, config, &location, recorder.clone()),
            };
            (nodes, Some(layout))
        }
        false => (Vec::new(), None),
    };
    let specs: Vec<Rc<NodeSpec>> = members
        .iter()
        .enumerate()
        .map(|(i, who)| {
            let mut membership = MembershipConfig::new(seeds.clone());
            membership.gossip_interval = config.gossip_interval;
            membership.phi_convict_threshold = config.phi_convict_threshold;
            let cluster = match who {
                Who::Intruder => OTHER_CLUSTER_NAME,
                _ => CLUSTER_NAME,
            };
            let data = data.get(i).cloned();
            if let (Some(d), Some(layout)) = (&data, &layout) {
                membership
                    .values
                    .insert(GossipKey::TOKENS, data::tokens_value(&d.tokens));
                membership.dc = layout.dcs[i].clone();
            }
            let mut spec = NodeSpec::new(
                *who,
                cluster,
                host_ids[i],
                addresses[i],
                membership,
                mix(seed, 100 + i as u64),
                dirs.node(i),
                recorder.clone(),
                directory.clone(),
            );
            spec.data = data;
            Rc::new(spec)
        })
        .collect();
    for (name, spec) in names.iter().zip(&specs) {
        let spec = spec.clone();
        sim.host(name.as_str(), move || node::run(spec.clone()));
    }
    let world = World {
        names: &names,
        specs: &specs,
        nodes: config.nodes,
        max_latency: config.max_latency,
    };
    let movement = data.first().and_then(|d| d.shared.movement.clone());
    let mut gone = Vec::new();
    let mut steps = plan.steps.iter().peekable();
    let mut error = None;
    let mut crashing = Vec::new();
    let mut end = config.end();
    while sim.elapsed() < end {
        // A movement run ends once its final reads are over.
        if let Some(done) = movement.as_ref().and_then(|m| m.reads_done_at()) {
            end = end.min(done + RUN_AFTER_FINAL_READS);
        }
        // The second step of a crash (see node.rs).
        for node in crashing.drain(..) {
            sim.crash(world.name(node));
        }
        // A node that left stops for good, as its process exits.
        for node in movement.iter().flat_map(|m| m.stops()).skip(gone.len()) {
            gone.push(node);
            specs[node].command(Command::Shutdown);
        }
        // A restart waits for the second step of a crash of its node
        // (next tick): that step would otherwise drop the new incarnation.
        while let Some(step) = steps.next_if(|s| {
            s.at <= sim.elapsed()
                && !matches!(s.action, Action::Restart { node, .. } if crashing.contains(&node))
        }) {
            if step.action.node().is_some_and(|n| gone.contains(&n)) {
                continue;
            }
            recorder.record(sim.elapsed(), Event::Nemesis(step.action.clone()));
            if let Action::Crash(node) = step.action {
                crashing.push(node);
            }
            world.apply(&mut sim, &step.action);
        }
        if let Err(e) = sim.step() {
            error = Some(e.to_string());
            break;
        }
    }
    for spec in &specs {
        if let Some(live) = spec.live() {
            recorder.record(
                sim.elapsed(),
                Event::Final {
                    node: spec.who,
                    live,
                },
            );
        }
    }
    // The hosts' software goes before the directories it uses.
    drop(sim);
    drop(dirs);
    let mut config = config.clone();
    config.quiet = end.saturating_sub(config.nemesis_end());
    Run {
        config,
        plan,
        history: History {
            seed,
            entries: recorder.entries(),
        },
        layout,
        error,
    }
}

/// What the nemesis acts on.
struct World<'a> {
    names: &'a [String],
    specs: &'a [Rc<NodeSpec>],
    nodes: usize,
    max_latency: Duration,
}

impl World<'_> {
    fn name(&self, node: NodeIndex) -> &str {
        &self.names[node]
    }

    fn apply(&self, sim: &mut turmoil::Sim<'_>, action: &Action) {
        match action {
            Action::Start(fault) => self.links().apply(sim, fault, true),
            Action::Heal(fault) => self.links().apply(sim, fault, false),
            Action::Crash(node) => self.specs[*node].command(Command::Crash),
            Action::Shutdown(node) => self.specs[*node].command(Command::Shutdown),
            Action::Restart { node, skew_ms } => {
                self.specs[*node]
                    .skew
                    .set_micros(skew_ms.saturating_mul(1000));
                sim.bounce(self.name(*node));
            }
            Action::Quiet => {}
        }
    }

    fn links(&self) -> Links<'_> {
        Links {
            names: self.names,
            nodes: self.nodes,
            max_latency: self.max_latency,
        }
    }
}

/// The links between the hosts `names` (the first `nodes` of them the
/// cluster's nodes), where the network track's faults start and heal.
pub struct Links<'a> {
    pub names: &'a [String],
    pub nodes: usize,
    /// A healthy link's largest latency, restored when a slow node heals.
    pub max_latency: Duration,
}

impl Links<'_> {
    fn name(&self, node: NodeIndex) -> &str {
        &self.names[node]
    }

    /// Every other host, the intruder included.
    fn others(&self, node: NodeIndex) -> impl Iterator<Item = &str> {
        self.names
            .iter()
            .enumerate()
            .filter(move |(i, _)| *i != node)
            .map(|(_, n)| n.as_str())
    }

    /// Starts `fault` (or heals it, its exact inverse).
    pub fn apply(&self, sim: &mut turmoil::Sim<'_>, fault: &NetFault, start: bool) {
        match fault {
            NetFault::Partition { side } => {
                for a in side {
                    for b in (0..self.nodes).filter(|b| !side.contains(b)) {
                        let (a, b) = (self.name(*a), self.name(b));
                        if start {
                            sim.partition(a, b);
                        } else {
                            sim.repair(a, b);
                        }
                    }
                }
            }
            NetFault::OneWay { from, to } => {
                let (from, to) = (self.name(*from), self.name(*to));
                if start {
                    sim.partition_oneway(from, to);
                } else {
                    sim.repair_oneway(from, to);
                }
            }
            NetFault::Freeze { node } => {
                for other in self.others(*node) {
                    if start {
                        sim.hold(self.name(*node), other);
                    } else {
                        sim.release(self.name(*node), other);
                    }
                }
            }
            NetFault::Loss { a, b, permille } => {
                let rate = if start {
                    f64::from(*permille) / 1000.0
                } else {
                    0.0
                };
                sim.set_link_fail_rate(self.name(*a), self.name(*b), rate);
            }
            NetFault::Slow { node, max_ms } => {
                let latency = if start {
                    Duration::from_millis(*max_ms)
                } else {
                    self.max_latency
                };
                for other in self.others(*node) {
                    sim.set_link_max_message_latency(self.name(*node), other, latency);
                }
            }
        }
    }
}

/// A host id drawn from `rng`.
fn host_id(rng: &SeededRng) -> HostId {
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
    id[8..].copy_from_slice(&rng.next_u64().to_le_bytes());
    HostId(id)
}

/// A value derived from `seed` for one purpose (splitmix64's finaliser
/// over the pair), so the streams of different purposes differ.
pub fn mix(seed: u64, purpose: u64) -> u64 {
    let mut z = seed ^ purpose.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One temporary directory per run, a subdirectory per node for its
/// generation file; removed when dropped.
pub struct TempDirs(PathBuf);

impl TempDirs {
    pub fn new(seed: u64) -> TempDirs {
        static RUNS: AtomicU64 = AtomicU64::new(0);
        let run = RUNS.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("varve-sim-{}-{seed}-{run}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        TempDirs(dir)
    }

    pub fn node(&self, i: usize) -> PathBuf {
        self.0.join(format!("node{i}"))
    }
}

impl Drop for TempDirs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
