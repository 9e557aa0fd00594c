//! This node's cluster machinery: internode messaging on
//! `listen_address:storage_port` and gossip membership with the seeds,
//! started with the server and stopped after it (docs/design/cluster.md,
//! sections 4 and 5). The query layer sees the peers through a
//! [`ClusterView`] over the membership (`system.peers`, `nodetool status`).
//!
//! A node whose only seed is itself (the default) forms a cluster of one
//! and still listens, so others can join it by naming it as a seed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::broadcast;
use varve_cluster::batchlog::BatchlogStore;
use varve_cluster::coordinator::{Coordinator, CoordinatorMetrics, Host, Timeouts, Topology};
use varve_cluster::env::tls::{InternodeEncryption, PerPeerTls, TlsNetwork};
use varve_cluster::env::{Env, TokioNetwork};
use varve_cluster::hints::{HintDispatcher, HintStore, HintsMetrics};
use varve_cluster::membership::{
    GossipKey, GossipLocations, Gossiper, Membership, MembershipConfig,
};
use varve_cluster::metadata::{MetadataLog, MetadataService, NodeState};
use varve_cluster::net::handshake::HostId;
use varve_cluster::net::messaging::{Messaging, MessagingConfig};
use varve_cluster::paxos::{PaxosReplica, PaxosStore};
use varve_cluster::ring::Location;
use varve_cluster::verbs::Replica;
use varve_protocol::{Event, StatusChangeType};
use varve_query::cluster_view::{ClusterView, PeerInfo};
use varve_query::info::uuid_text;
use varve_query::{NodeInfo, Processor};

use crate::cluster_metadata::SchemaParts;
use crate::cluster_path::ClusterPath;
use crate::config::Settings;

/// How often a changed schema version is announced to the peers.
const SCHEMA_ANNOUNCE_INTERVAL: Duration = Duration::from_millis(250);
/// How often a changed load (bytes on disk) is announced: as Cassandra's
/// `LoadBroadcaster`, but more often than its minute.
const LOAD_ANNOUNCE_INTERVAL: Duration = Duration::from_secs(5);

/// The running messaging and membership of this node.
pub struct ClusterNode {
    messaging: Messaging,
    membership: Arc<Gossiper>,
    announcer: tokio::task::JoinHandle<()>,
    /// Delivers hints and syncs their files.
    delivery: tokio::task::JoinHandle<()>,
    /// Replays the logged batches whose coordinator did not finish them.
    batch_replay: tokio::task::JoinHandle<()>,
    /// The cluster metadata log (schema, nodes, tokens), the task that
    /// routes schema changes through it once the node is a member, and
    /// this node's join.
    metadata: crate::cluster_metadata::Started,
    events: Option<tokio::task::JoinHandle<()>>,
    /// With `internode_encryption: dc` or `rack`, tells open internode
    /// connections when peers' locations change.
    tls_locations: Option<tokio::task::JoinHandle<()>>,
    coordinator: Arc<Coordinator>,
    /// `nodetool decommission`, and the signal that this node has left.
    decommission: Arc<crate::decommission::Decommission>,
    cluster_name: String,
}

impl ClusterNode {
    /// Starts messaging and gossip for `node`, and shows its peers in
    /// `processor`'s `system.peers`.
    pub async fn start(
        settings: &Settings,
        node: &NodeInfo,
        processor: &Arc<Processor>,
        data_path: &ClusterPath,
        schema: SchemaParts,
        events: broadcast::Sender<Event>,
    ) -> anyhow::Result<ClusterNode> {
        let host_id = HostId(node.host_id);
        let seed = u64::from_le_bytes(node.host_id[..8].try_into().unwrap_or_default());
        let mut env = Env::tokio(seed ^ varve_types::time::now_micros() as u64);
        env.net = Arc::new(TokioNetwork::from_source(settings.listen_address));
        let per_peer_tls = internode_tls(settings, node, &mut env)?;
        let generation =
            varve_cluster::membership::next_generation(&settings.data_dir, &*env.clock)
                .context("choosing the gossip generation")?;
        let listen = SocketAddr::new(settings.listen_address, settings.topology.storage_port);
        let mut config = MessagingConfig::new(&settings.cluster_name, host_id, listen);
        config.generation = generation;
        config.per_peer_tls = per_peer_tls.clone();
        config.send_delay = settings.topology.send_delay;
        if !config.send_delay.is_zero() {
            tracing::warn!(
                "internode_send_delay_ms: every internode message waits {:?} before it is sent (for benchmarks)",
                config.send_delay
            );
        }
        let messaging = Messaging::start(config, env.clone())
            .await
            .with_context(|| format!("listening for internode messages on {listen}"))?;
        let batchlog_dir = settings.data_dir.join("batchlog");
        let batchlog = Arc::new(
            BatchlogStore::open(batchlog_dir.clone())
                .with_context(|| format!("opening {}", batchlog_dir.display()))?,
        );
        let streams = Arc::new(varve_cluster::streaming::Streams::new(processor.registry()));
        let paxos = paxos_replica(processor)?;
        paxos.register(&messaging);
        Replica::new(processor.engine(), processor.writes_wait_for_sync())
            .with_batchlog(Arc::clone(&batchlog))
            .with_streams(Arc::clone(&streams))
            .with_paxos(Arc::clone(&paxos))
            .register(&messaging);
        let files = Arc::new(
            varve_cluster::streaming::FileSource::new(processor.engine(), Arc::clone(&env.clock))
                .with_streams(Arc::clone(&streams)),
        );
        files.register(&messaging);
        let own = messaging.local_addr();
        let mut membership = MembershipConfig::new(
            settings
                .topology
                .seeds
                .iter()
                .copied()
                .filter(|s| *s != own && s.port() != 0)
                .collect(),
        );
        membership.phi_convict_threshold = settings.topology.phi_convict_threshold;
        membership.gossip_interval = settings.topology.gossip_interval;
        membership.dc = node.data_center.clone();
        membership.rack = node.rack.clone();
        // The tokens are announced once the node has its own (at once when
        // it joined before): drivers never see the provisional ones.
        let saved_tokens = crate::node::saved_tokens(&settings.data_dir)?;
        // The schema version gossip starts with; the announcer compares
        // the processor's with this one, not with what it finds when it
        // first runs: a schema installed in between (the cluster's, on a
        // node that creates it) would otherwise never be announced.
        let announced_schema = processor.schema().version;
        membership.values = announced_values(node, announced_schema, saved_tokens.as_deref());
        let clock = Arc::clone(&env.clock);
        let coordinator_clock = Arc::clone(&env.clock);
        let metadata_env = env.clone();
        let gossiper = Gossiper::start(membership, &messaging, env)
            .await
            .context("starting gossip")?;
        let membership = Arc::new(gossiper);
        let tls_locations = per_peer_tls.map(|tls| follow_locations(tls, &membership));
        processor.set_cluster_view(Arc::new(GossipView {
            membership: membership.clone(),
            hints: None,
            metadata: None,
            decommission: None,
        }));
        let here = Host {
            host_id,
            address: own,
            location: Location {
                dc: node.data_center.clone(),
                rack: node.rack.clone(),
            },
            is_local: true,
        };
        let coordinator = Coordinator::with_metrics(
            processor.engine(),
            messaging.clone(),
            membership.clone(),
            clock,
            Topology::single(here, node.tokens.clone()),
            node.data_center.clone(),
            Timeouts::default(),
            CoordinatorMetrics::new(processor.registry()),
        );
        // The ring comes from the metadata log's node records (its
        // listener sets it, replay included); gossip only says who is UP.
        let hints = HintStore::open(
            settings.hints.clone(),
            HintsMetrics::new(processor.registry()),
        )
        .with_context(|| format!("opening hints_directory {}", settings.hints.dir.display()))?;
        coordinator.set_hints(Arc::clone(&hints));
        coordinator.set_paxos(Arc::clone(&paxos));
        coordinator.set_paxos_two_rounds(settings.topology.paxos_two_rounds);
        coordinator.set_batchlog(batchlog);
        coordinator.set_replication_lookup(ClusterPath::lookup(processor));
        coordinator.serve_forwarded(ClusterPath::rebuild(processor));
        let batch_replay = coordinator.replay_batches_forever();
        let dispatcher = HintDispatcher::new(
            Arc::clone(&hints),
            messaging.clone(),
            membership.clone(),
            Arc::clone(&coordinator_clock),
        );
        let delivery = dispatcher.start();
        let hints = (hints, dispatcher);
        processor.set_cluster_view(Arc::new(GossipView {
            membership: membership.clone(),
            hints: Some(hints.clone()),
            metadata: None,
            decommission: None,
        }));
        data_path.bind(Arc::clone(&coordinator), processor);
        let started = crate::cluster_metadata::start(
            settings,
            node,
            &messaging,
            metadata_env,
            schema,
            crate::cluster_metadata::Followers {
                membership: membership.clone(),
                processor: Arc::clone(processor),
                coordinator: Arc::clone(&coordinator),
                events,
            },
        )
        .await?;
        varve_cluster::repair::validate::serve(
            &messaging,
            processor.engine(),
            Some(Arc::clone(&paxos)),
        );
        varve_cluster::repair::incremental::serve(
            &messaging,
            processor.engine(),
            Arc::clone(&coordinator_clock),
        );
        let decommission = Arc::new(crate::decommission::Decommission::new(
            Arc::clone(&started.service),
            Arc::clone(&coordinator),
            Arc::downgrade(processor),
            settings.topology.stream_throughput,
            streams,
            paxos,
            files,
        ));
        let puller = Arc::new(decommission.puller());
        varve_cluster::streaming::removenode::serve_fetches(&messaging, Arc::clone(&puller));
        varve_cluster::streaming::offer::serve_offers(&messaging, puller);
        processor.set_cluster_view(Arc::new(GossipView {
            membership: membership.clone(),
            hints: Some(hints),
            metadata: Some(Arc::clone(&started.service)),
            decommission: Some(Arc::clone(&decommission)),
        }));
        let announcer = tokio::spawn(announce_changes(
            membership.clone(),
            processor.clone(),
            Arc::clone(&started.joining),
            saved_tokens,
            announced_schema,
        ));
        Ok(ClusterNode {
            messaging,
            membership,
            announcer,
            delivery,
            batch_replay,
            metadata: started,
            events: None,
            tls_locations,
            coordinator,
            decommission,
            cluster_name: settings.cluster_name.clone(),
        })
    }

    /// Sends a STATUS_CHANGE event to `events` (the server's, for
    /// registered clients) whenever a peer goes UP or DOWN.
    pub fn send_status_events(&mut self, events: broadcast::Sender<Event>) {
        let task = tokio::spawn(status_events(self.membership.clone(), events));
        self.events = Some(task);
    }

    /// Waits until this node is listed in the cluster's metadata (created
    /// or joined it), at most `limit`; an error if the join was refused.
    pub async fn wait_joined(&self, limit: Duration) -> anyhow::Result<()> {
        crate::cluster_metadata::wait_joined(
            &self.metadata,
            &self.messaging,
            &self.cluster_name,
            limit,
        )
        .await
    }

    /// Streams this node's ranges if it joined as `Joining`, and returns
    /// once it is `Normal` (docs/design/topology.md, section 3).
    pub async fn finish_joining(&self, processor: &Processor) -> anyhow::Result<()> {
        crate::bootstrap::finish_joining(
            &self.metadata.service,
            &self.coordinator,
            processor,
            &self.decommission.puller(),
        )
        .await
    }

    /// Resolves once this node has left the cluster (a decommission).
    pub fn left(&self) -> impl std::future::Future<Output = ()> + 'static {
        let left = Arc::clone(&self.decommission.left);
        async move { left.notified().await }
    }

    /// Where this node listens for internode messages.
    pub fn internode_addr(&self) -> SocketAddr {
        self.messaging.local_addr()
    }

    /// Tells the peers this node is going (they mark it down at once),
    /// then stops gossip and messaging.
    pub async fn shutdown(self) {
        self.announcer.abort();
        self.delivery.abort();
        self.batch_replay.abort();
        self.metadata.binding.abort();
        for task in [&self.events, &self.tls_locations].into_iter().flatten() {
            task.abort();
        }
        self.membership.shutdown().await;
        self.metadata.service.shutdown().await;
        self.messaging.shutdown().await;
    }
}

/// Internode TLS as `server_encryption_options` asks: with `all`, every
/// connection of `env`'s network is TLS; with `dc` or `rack`, the per-peer
/// TLS that messaging applies (returned); with `none`, nothing.
fn internode_tls(
    settings: &Settings,
    node: &NodeInfo,
    env: &mut Env,
) -> anyhow::Result<Option<Arc<PerPeerTls>>> {
    let Some(tls) = &settings.internode_tls else {
        return Ok(None);
    };
    if tls.mode == InternodeEncryption::All {
        env.net = Arc::new(TlsNetwork::new(Arc::clone(&env.net), tls)?);
        return Ok(None);
    }
    tracing::warn!(
        "internode_encryption: {}: connections between nodes of the same {} are clear text, and a \
         clear-text connection is trusted as the node whose address it names, without a \
         certificate; internode_encryption: all authenticates every node",
        tls.mode,
        if tls.mode == InternodeEncryption::Dc {
            "data centre"
        } else {
            "rack"
        }
    );
    let here = Location {
        dc: node.data_center.clone(),
        rack: node.rack.clone(),
    };
    Ok(Some(Arc::new(PerPeerTls::new(tls, here)?)))
}

/// Gives per-peer TLS gossip's locations, and tells it each time the
/// peers gossip knows of change.
fn follow_locations(
    tls: Arc<PerPeerTls>,
    membership: &Arc<Gossiper>,
) -> tokio::task::JoinHandle<()> {
    let weak: std::sync::Weak<Gossiper> = Arc::downgrade(membership);
    let weak: std::sync::Weak<dyn Membership> = weak;
    tls.set_directory(Arc::new(GossipLocations(weak)));
    let mut changes = membership.changes();
    tokio::spawn(async move {
        while changes.changed().await.is_ok() {
            tls.locations_changed();
        }
    })
}

/// This node's Paxos acceptor over `system.paxos` in its storage.
fn paxos_replica(processor: &Processor) -> anyhow::Result<Arc<PaxosReplica>> {
    let table = processor
        .schema()
        .table("system", "paxos")
        .map(|t| t.id)
        .context("the system schema has no system.paxos")?;
    Ok(PaxosReplica::new(PaxosStore::new(
        processor.engine(),
        table,
    )))
}

/// The keys gossiped from the start besides membership's own.
fn announced_values(
    node: &NodeInfo,
    schema_version: [u8; 16],
    tokens: Option<&[i64]>,
) -> std::collections::BTreeMap<GossipKey, String> {
    let tokens = tokens.map(|t| (GossipKey::TOKENS, tokens_text(t)));
    [
        (GossipKey::RPC_ADDRESS, node.rpc_address.to_string()),
        (GossipKey::NATIVE_PORT, node.native_port.to_string()),
        (GossipKey::RELEASE_VERSION, node.release_version.clone()),
        (GossipKey::SCHEMA_VERSION, uuid_text(&schema_version)),
    ]
    .into_iter()
    .chain(tokens)
    .collect()
}

/// Announces the schema version whenever it differs from the one last
/// announced (`announced_schema`, the one gossip started with, at first),
/// the tokens once the node has its own, and the load every
/// [`LOAD_ANNOUNCE_INTERVAL`] when it changed.
async fn announce_changes(
    membership: Arc<Gossiper>,
    processor: Arc<Processor>,
    joining: Arc<crate::cluster_metadata::Joining>,
    mut last_tokens: Option<Vec<i64>>,
    announced_schema: [u8; 16],
) {
    let mut last = announced_schema;
    let mut last_load = None;
    let mut since_load = LOAD_ANNOUNCE_INTERVAL;
    loop {
        let now = processor.schema().version;
        if now != last {
            announce(&membership, GossipKey::SCHEMA_VERSION, uuid_text(&now));
            last = now;
        }
        // The tokens the node got when it joined (drivers read them).
        let tokens = joining.tokens();
        if tokens.is_some() && tokens != last_tokens {
            if let Some(t) = &tokens {
                announce(&membership, GossipKey::TOKENS, tokens_text(t));
            }
            last_tokens = tokens;
        }
        if since_load >= LOAD_ANNOUNCE_INTERVAL {
            since_load = Duration::ZERO;
            let p = processor.clone();
            let load = tokio::task::spawn_blocking(move || p.node_status().load_bytes).await;
            if let Ok(load) = load {
                if last_load != Some(load) {
                    announce(&membership, GossipKey::LOAD, load.to_string());
                    last_load = Some(load);
                }
            }
        }
        tokio::time::sleep(SCHEMA_ANNOUNCE_INTERVAL).await;
        since_load += SCHEMA_ANNOUNCE_INTERVAL;
    }
}

/// The `tokens` gossip value: the tokens, comma separated.
fn tokens_text(tokens: &[i64]) -> String {
    let tokens: Vec<String> = tokens.iter().map(i64::to_string).collect();
    tokens.join(",")
}

fn announce(membership: &Gossiper, key: GossipKey, value: String) {
    if let Err(e) = membership.announce(key, value) {
        tracing::warn!("announcing {key} failed: {e}");
    }
}

/// Turns each UP and DOWN of a peer into a STATUS_CHANGE naming where
/// clients reach it (its `rpc_address` and native port).
async fn status_events(membership: Arc<Gossiper>, events: broadcast::Sender<Event>) {
    let mut transitions = membership.transitions();
    loop {
        let t = match transitions.recv().await {
            Ok(t) => t,
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!("{n} UP/DOWN transitions missed: their events are not sent");
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let Some(peer) = membership.peer(t.host_id) else {
            continue;
        };
        let text = |key| peer.values.get(&key).map(|v| v.value.clone());
        let ip = text(GossipKey::RPC_ADDRESS)
            .and_then(|a| a.parse().ok())
            .unwrap_or(t.address.ip());
        let port = text(GossipKey::NATIVE_PORT)
            .and_then(|p| p.parse().ok())
            .unwrap_or(9042);
        let change = match t.is_up() {
            true => StatusChangeType::Up,
            false => StatusChangeType::Down,
        };
        let addr = SocketAddr::new(ip, port);
        // No receiver is fine: no client registered.
        let _ = events.send(Event::StatusChange { change, addr });
    }
}

/// The peers as gossip knows them, and the hints' nodetool operations.
struct GossipView {
    membership: Arc<Gossiper>,
    hints: Option<(Arc<HintStore>, Arc<HintDispatcher>)>,
    /// Once running: only the nodes it lists are peers, with the tokens it
    /// gave them (a node gossip knows that never joined, or was refused,
    /// is not one; drivers take every peer row for a ring member).
    metadata: Option<Arc<MetadataService>>,
    /// `nodetool decommission`, once the metadata log runs.
    decommission: Option<Arc<crate::decommission::Decommission>>,
}

impl ClusterView for GossipView {
    fn peers(&self) -> Vec<PeerInfo> {
        let listed = self.metadata.as_ref().map(|m| m.current());
        self.membership
            .peers()
            .into_iter()
            .filter(|p| !p.is_local)
            .filter_map(|p| match &listed {
                None => Some((p, None, false)),
                Some(m) => {
                    let record = m.nodes.get(&p.host_id)?;
                    let joining = record.state == NodeState::Joining;
                    Some((p, Some(record.tokens.clone()), joining))
                }
            })
            .map(|(p, listed_tokens, joining)| {
                let text = |key| {
                    p.values
                        .get(&key)
                        .map(|v| v.value.clone())
                        .unwrap_or_default()
                };
                PeerInfo {
                    listen_address: p.address.ip(),
                    listen_port: p.address.port(),
                    rpc_address: text(GossipKey::RPC_ADDRESS)
                        .parse()
                        .unwrap_or(p.address.ip()),
                    native_port: text(GossipKey::NATIVE_PORT).parse().unwrap_or(9042),
                    data_center: text(GossipKey::DC),
                    rack: text(GossipKey::RACK),
                    host_id: p.host_id.0,
                    release_version: text(GossipKey::RELEASE_VERSION),
                    schema_version: parse_uuid(&text(GossipKey::SCHEMA_VERSION)).unwrap_or([0; 16]),
                    tokens: listed_tokens.unwrap_or_else(|| {
                        text(GossipKey::TOKENS)
                            .split(',')
                            .filter_map(|t| t.trim().parse().ok())
                            .collect()
                    }),
                    up: p.up,
                    load_bytes: text(GossipKey::LOAD).parse().ok(),
                    joining,
                }
            })
            .collect()
    }

    fn gossip_info(&self) -> Option<String> {
        let mut out = String::new();
        for p in self.membership.peers() {
            out.push_str(&format!("/{}\n", p.address));
            out.push_str(&format!("  generation:{}\n", p.generation));
            out.push_str(&format!("  heartbeat:{}\n", p.heartbeat));
            out.push_str(&format!("  up:{}\n", p.up));
            for (key, v) in &p.values {
                let name = key
                    .name()
                    .map_or_else(|| format!("KEY_{}", key.code()), str::to_uppercase);
                out.push_str(&format!("  {name}:{}:{}\n", v.version, v.value));
            }
        }
        Some(out)
    }

    fn command(&self, name: &str, args: &[String]) -> Option<Result<String, String>> {
        if name == "cleanup" {
            let ops = self.decommission.as_ref()?;
            return Some(crate::cleanup::run(ops, args));
        }
        if name == "getendpoints" {
            let ops = self.decommission.as_ref()?;
            return Some(crate::getendpoints::run(ops, args));
        }
        if name == "netstats" {
            let ops = self.decommission.as_ref()?;
            return Some(Ok(ops.streams.netstats_text()));
        }
        if name == "repair" {
            let ops = self.decommission.as_ref()?;
            return Some(tokio::runtime::Handle::current().block_on(crate::repair::run(ops, args)));
        }
        if name == "removenode" {
            let ops = self.decommission.as_ref()?;
            let target = args.first().map(String::as_str).unwrap_or_default();
            let removal = crate::removenode::run(ops, target);
            return Some(tokio::runtime::Handle::current().block_on(removal));
        }
        let force = match name {
            "decommission" => Some(false),
            "decommission-force" => Some(true),
            _ => None,
        };
        if let Some(force) = force {
            // The admin port runs nodetool on the blocking pool.
            let decommission = self.decommission.as_ref()?;
            return Some(tokio::runtime::Handle::current().block_on(decommission.run(force)));
        }
        let (store, dispatcher) = self.hints.as_ref()?;
        Some(Ok(match name {
            "pausehandoff" => {
                dispatcher.set_paused(true);
                String::new()
            }
            "resumehandoff" => {
                dispatcher.set_paused(false);
                String::new()
            }
            "truncatehints" => {
                store.truncate();
                String::new()
            }
            "statushandoff" => format!(
                "Hinted handoff is {}{}; {} bytes of hints on disk\n",
                if store.config().enabled {
                    "running"
                } else {
                    "not running"
                },
                if dispatcher.is_paused() {
                    " (delivery paused)"
                } else {
                    ""
                },
                store.total_bytes()
            ),
            _ => return None,
        }))
    }
}

/// The bytes of a UUID's text; `None` if it is not one.
pub fn parse_uuid(text: &str) -> Option<[u8; 16]> {
    let hex: String = text.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_round_trip_through_their_text() {
        let u = [
            0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8,
        ];
        let text = uuid_text(&u);
        assert_eq!(text, "12345678-9abc-def0-0102-030405060708");
        assert_eq!(parse_uuid(&text), Some(u));
        assert_eq!(parse_uuid("not-a-uuid"), None);
        assert_eq!(parse_uuid(&text[..35]), None);
    }

    use varve_cluster::paxos::store::columns;

    /// The Paxos store writes `system.paxos` by column id: the ids must be
    /// those of the table's definition.
    #[test]
    fn system_paxos_columns_are_where_the_store_writes_them() {
        let schema = varve_query::system_schema();
        let table = schema.table("system", "paxos").expect("system.paxos");
        assert!(!table.is_virtual, "kept in storage");
        let id = |name: &str| table.column(name).expect(name).id;
        assert_eq!(id("in_progress_ballot"), columns::IN_PROGRESS_BALLOT);
        assert_eq!(id("most_recent_commit"), columns::MOST_RECENT_COMMIT);
        assert_eq!(id("most_recent_commit_at"), columns::MOST_RECENT_COMMIT_AT);
        assert_eq!(
            id("most_recent_commit_version"),
            columns::MOST_RECENT_COMMIT_VERSION
        );
        assert_eq!(id("proposal"), columns::PROPOSAL);
        assert_eq!(id("proposal_ballot"), columns::PROPOSAL_BALLOT);
        assert_eq!(id("proposal_version"), columns::PROPOSAL_VERSION);
    }
}
