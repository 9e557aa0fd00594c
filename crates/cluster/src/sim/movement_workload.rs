//! What a movement run (`sim/movement.rs`) draws from its seed before it
//! starts, beyond a join run's (`sim/bootstrap_workload.rs`): which node
//! does what ([`Roles`]), the settings of a run with LWT and repair
//! ([`SimConfig::with_movement`]), the nemesis' plan (with the node
//! killed for good of a replacement or a removal), where the keys live
//! before and after ([`layout`]), and the metadata's epochs, each the one
//! before with the server's next command applied ([`epochs`]).

use std::collections::BTreeSet;
use std::time::Duration;

use super::bootstrap_workload::{network_faults, restarts};
use super::data::{Layout, Placement};
use super::harness::{mix, SimConfig, CLUSTER_NAME};
use super::history::NodeIndex;
use super::movement::MovementKind;
use super::nemesis::{between, ms, pick, Action, Plan, Step};
use crate::env::SeededRng;
use crate::metadata::state::{apply, Entry, Outcome};
use crate::metadata::{ClusterMetadata, Command, NodeRecord, NodeState};
use crate::net::handshake::ClusterId;
use crate::ring::Location;

/// Who does what in a movement run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roles {
    pub kind: MovementKind,
    /// The node that streams and proposes: the joiner, the leaver, the
    /// replacement, or the node that runs the removal.
    pub mover: NodeIndex,
    /// The node listed only from the movement on (joiner, replacement).
    pub newcomer: Option<NodeIndex>,
    /// The node listed before the movement and not after (the leaver, the
    /// replaced or removed node).
    pub departing: Option<NodeIndex>,
    /// The node crashed for good before the movement (a replacement's or a
    /// removal's), and when.
    pub dead: Option<(NodeIndex, Duration)>,
    /// When the movement starts.
    pub starts_at: Duration,
}

impl Roles {
    /// A join of the last of `nodes` nodes at `starts_at`.
    pub fn bootstrap(nodes: usize, starts_at: Duration) -> Roles {
        Roles {
            kind: MovementKind::Bootstrap,
            mover: nodes - 1,
            newcomer: Some(nodes - 1),
            departing: None,
            dead: None,
            starts_at,
        }
    }

    /// The roles of `kind` among `nodes` nodes, drawn from `rng`.
    fn draw(rng: &SeededRng, kind: MovementKind, nodes: usize, starts_at: Duration) -> Roles {
        let dead_at =
            starts_at.saturating_sub(ms(between(rng, DEAD_BEFORE_MS.0, DEAD_BEFORE_MS.1)));
        match kind {
            MovementKind::Bootstrap => Roles::bootstrap(nodes, starts_at),
            MovementKind::Decommission => {
                let leaver = departing(rng, nodes);
                Roles {
                    kind,
                    mover: leaver,
                    newcomer: None,
                    departing: Some(leaver),
                    dead: None,
                    starts_at,
                }
            }
            MovementKind::Replace => {
                let dead = pick(rng, nodes - 1);
                Roles {
                    kind,
                    mover: nodes - 1,
                    newcomer: Some(nodes - 1),
                    departing: Some(dead),
                    dead: Some((dead, dead_at)),
                    starts_at,
                }
            }
            MovementKind::Removenode => {
                let dead = departing(rng, nodes);
                let runner = (dead + 1 + pick(rng, nodes - 1)) % nodes;
                Roles {
                    kind,
                    mover: runner,
                    newcomer: None,
                    departing: Some(dead),
                    dead: Some((dead, dead_at)),
                    starts_at,
                }
            }
        }
    }

    /// The nodes listed before the movement.
    pub fn initial(&self, nodes: usize) -> Vec<NodeIndex> {
        (0..nodes).filter(|n| Some(*n) != self.newcomer).collect()
    }

    /// The nodes listed once it is done.
    pub fn last(&self, nodes: usize) -> Vec<NodeIndex> {
        (0..nodes).filter(|n| Some(*n) != self.departing).collect()
    }
}

/// The node that leaves or dies, in a run of five nodes where it must be
/// one of the data centre with three (nodes alternate between two; the
/// other keeps its two replicas).
fn departing(rng: &SeededRng, nodes: usize) -> NodeIndex {
    2 * pick(rng, nodes.div_ceil(2))
}

/// How long before the movement starts its dead node is crashed, in ms.
const DEAD_BEFORE_MS: (u64, u64) = (1_000, 4_000);

/// The nemesis of a movement run: as a join's, from `warmup`.
const MOVEMENT_NEMESIS: Duration = Duration::from_secs(30);

/// The time a final phase may take for the repairs (each node's tries).
pub const REPAIR_ALLOWANCE: Duration = Duration::from_secs(20);

impl MovementKind {
    /// Whether clients write at ONE: not when a node dies for good, which
    /// loses what only it acknowledged (as Cassandra's ONE does).
    pub fn allows_one(self) -> bool {
        matches!(self, MovementKind::Bootstrap | MovementKind::Decommission)
    }
}

impl SimConfig {
    /// The run of `seed` where `kind` happens, with clients writing and
    /// running LWT, and a repair in the final phase: 4 or 5 nodes (5 when
    /// one leaves for good), 30 s of nemesis from 3 s, the movement
    /// starting within it, room for a late end, the repairs and the
    /// final reads.
    pub fn with_movement(seed: u64, kind: MovementKind) -> SimConfig {
        let rng = SeededRng::new(mix(seed, 8));
        let mut config = SimConfig::with_bootstrap(seed);
        config.nodes = match kind {
            MovementKind::Decommission | MovementKind::Removenode => 5,
            _ => 4 + usize::from(rng.below_or_at(1) == 1),
        };
        config.nemesis = MOVEMENT_NEMESIS;
        config.lwt = true;
        config.repair = true;
        config.quiet += REPAIR_ALLOWANCE + super::movement::LWT_AFTER_MOVEMENT;
        let starts_at = ms(between(&rng, 6_000, 12_000));
        let roles = Roles::draw(&rng, kind, config.nodes, starts_at);
        let (start, end) = (config.nemesis_start(), config.nemesis_end());
        config.plan = Some(plan(&rng, config.nodes, &roles, (start, end)));
        config.movement = Some(roles);
        config
    }
}

/// The nemesis of a movement: a join's faults, from `start` to `end`,
/// with the dead node crashed for good before the movement starts, and
/// never restarted.
fn plan(rng: &SeededRng, nodes: usize, roles: &Roles, (start, end): (Duration, Duration)) -> Plan {
    let mut steps = network_faults(rng, nodes, start, end);
    let dead = roles.dead.map(|(n, _)| n);
    let others: Vec<NodeIndex> = (0..nodes)
        .filter(|&n| n != roles.mover && Some(n) != dead)
        .collect();
    steps.extend(restarts(rng, &others, roles.mover, roles.starts_at, end));
    if let Some((node, at)) = roles.dead {
        steps.push(Step {
            at,
            action: Action::Crash(node),
        });
    }
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

/// Where `keys` keys live in a movement run: the tokens and data centres
/// drawn as in `sim/data.rs` (a replacement taking its dead node's), the
/// replication of the final ring, each key's replicas on the final ring
/// and before the movement. Also each node's tokens.
pub fn layout(
    rng: &SeededRng,
    nodes: usize,
    location: &Location,
    roles: &Roles,
    keys: usize,
) -> (Layout, Vec<Vec<i64>>) {
    let mut placement = Placement::draw(rng, nodes, location);
    if let (Some(new), Some((dead, _))) = (roles.newcomer, roles.dead) {
        placement.tokens[new] = placement.tokens[dead].clone();
        placement.dcs[new] = placement.dcs[dead].clone();
    }
    let (before, last) = (roles.initial(nodes), roles.last(nodes));
    let replication = placement.replication_over(&last);
    let layout = Layout {
        tokens: placement.tokens.clone(),
        dcs: placement.dcs.clone(),
        replicas: placement.replicas_over(&replication, &last, &location.rack, keys),
        before: placement.replicas_over(&replication, &before, &location.rack, keys),
        replication,
    };
    (layout, placement.tokens)
}

/// The metadata's voters before the movement: its first nodes.
const VOTERS: usize = 3;

/// The metadata at each epoch of the run: every node but the newcomer
/// listed `Normal` at epoch 1, then each command the server proposes for
/// the movement (`crates/varve/src/bootstrap.rs`, `decommission.rs`,
/// `removenode.rs`), applied by the metadata's own `apply` at the next
/// index. `records` are every node's, `Normal`.
pub fn epochs(roles: &Roles, records: &[NodeRecord]) -> Vec<ClusterMetadata> {
    let initial = roles.initial(records.len());
    let mut m = ClusterMetadata {
        epoch: 1,
        cluster_name: CLUSTER_NAME.to_string(),
        cluster_id: ClusterId([0x51; 16]),
        nodes: initial
            .iter()
            .map(|&n| (records[n].host_id, records[n].clone()))
            .collect(),
        voters: initial
            .iter()
            .take(VOTERS)
            .map(|&n| records[n].host_id)
            .collect(),
        ..ClusterMetadata::default()
    };
    let mut out = vec![m.clone()];
    let mut next = |m: &mut ClusterMetadata, entry: Entry| {
        let index = m.epoch + 1;
        match apply(m, index, &entry) {
            Outcome::Applied => out.push(m.clone()),
            other => panic!("the metadata refused {entry:?}: {other:?}"),
        }
    };
    let state = |node: NodeIndex, state: NodeState| NodeRecord {
        state,
        ..records[node].clone()
    };
    match (roles.kind, roles.newcomer, roles.departing) {
        (MovementKind::Bootstrap | MovementKind::Replace, Some(new), _) => {
            let joining = join(&m, state(new, NodeState::Joining));
            next(&mut m, joining);
            let normal = join(&m, state(new, NodeState::Normal));
            next(&mut m, normal);
        }
        (MovementKind::Decommission | MovementKind::Removenode, _, Some(gone)) => {
            let host = records[gone].host_id;
            if let Some(voters) = without_vote(&m, host) {
                next(&mut m, Entry::Voters(voters));
            }
            let leaving = join(&m, state(gone, NodeState::Leaving));
            next(&mut m, leaving);
            let leave = Command::Leave {
                host,
                expected_epoch: m.epoch,
            };
            next(&mut m, Entry::Command(leave));
        }
        other => panic!("roles without a moving node: {other:?}"),
    }
    out
}

/// A `Join` of `node` expecting `m`'s epoch.
fn join(m: &ClusterMetadata, node: NodeRecord) -> Entry {
    Entry::Command(Command::Join {
        node,
        expected_epoch: m.epoch,
    })
}

/// The voters once `host` handed its vote to a `Normal` node without one
/// (`Decommission::give_up_vote`); `None` if it has none.
fn without_vote(
    m: &ClusterMetadata,
    host: crate::net::HostId,
) -> Option<BTreeSet<crate::net::HostId>> {
    if !m.voters.contains(&host) {
        return None;
    }
    let mut voters = m.voters.clone();
    voters.remove(&host);
    if let Some(next) = m
        .nodes
        .values()
        .find(|n| n.state == NodeState::Normal && !m.voters.contains(&n.host_id))
    {
        voters.insert(next.host_id);
    }
    Some(voters)
}
