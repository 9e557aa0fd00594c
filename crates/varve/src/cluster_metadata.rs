//! Starting this node's part of the cluster metadata log (docs/design/
//! cluster.md, section 6): the log under `<data directory>/metadata`, with
//! the seeds of gossip, this node's record (its internode and CQL
//! addresses, data centre, rack and tokens), and the schema installer as
//! its listener. Once the node is a member, schema changes go through the
//! log ([`ClusterSchema::bind`]); a node whose cluster has no schema yet
//! (it just created it) proposes its own, so a single node's keyspaces
//! become the cluster's and every node reports the same version at once.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use parking_lot::Mutex;
use tokio::sync::broadcast;
use varve_cluster::coordinator::{Coordinator, Topology};
use varve_cluster::env::Env;
use varve_cluster::membership::Gossiper;
use varve_cluster::metadata::{
    BalancedTokens, ClusterMetadata, Command, MetadataConfig, MetadataError, MetadataHooks,
    MetadataLog, MetadataService, NodeRecord, NodeState, TokenAllocator,
};
use varve_cluster::net::handshake::HostId;
use varve_cluster::net::messaging::Messaging;
use varve_protocol::{Event, TopologyChangeType};
use varve_query::local_schema::LocalSchema;
use varve_query::schema_source::SchemaSource;
use varve_query::{NodeInfo, Processor};

use crate::cluster_schema::{decode, encode, ClusterSchema, SchemaInstaller};
use crate::config::Settings;

/// Beside the schema file: the metadata epoch of the installed schema.
pub const SCHEMA_EPOCH_FILE: &str = "schema.epoch";

/// How long [`wait_joined`] lets seeds refuse this node's cluster name
/// before it gives up (one refusal may come from a stray node).
const NAME_REFUSAL_GRACE: Duration = Duration::from_secs(3);

/// How often [`wait_joined`] looks for a refusal while it waits.
const JOIN_POLL: Duration = Duration::from_millis(200);

/// How long the binding task waits for the node to become a member before
/// it says so in the log (it goes on waiting).
const MEMBER_WAIT_REPORT: Duration = Duration::from_secs(30);

/// What the node's schema is made of.
pub struct SchemaParts {
    pub schema: Arc<ClusterSchema>,
    pub local: Arc<LocalSchema>,
}

/// What the log's listener and the binding task act on.
pub struct Followers {
    pub membership: Arc<Gossiper>,
    /// Shows the tokens the node was given (system.local, nodetool).
    pub processor: Arc<Processor>,
    /// Takes its ring from the metadata.
    pub coordinator: Arc<Coordinator>,
    /// SCHEMA_CHANGE and TOPOLOGY_CHANGE go here.
    pub events: broadcast::Sender<Event>,
}

/// Starts the log; a task binds the schema to it once the node is a
/// member.
pub async fn start(
    settings: &Settings,
    node: &NodeInfo,
    messaging: &Messaging,
    env: Env,
    parts: SchemaParts,
    followers: Followers,
) -> anyhow::Result<Started> {
    let Followers {
        membership,
        processor,
        coordinator,
        events,
    } = followers;
    let joining = Arc::new(Joining::new(settings)?);
    let own_addr = messaging.local_addr();
    let own = NodeRecord {
        host_id: HostId(node.host_id),
        storage_addr: own_addr,
        rpc_addr: Some(SocketAddr::new(node.rpc_address, node.native_port)),
        dc: node.data_center.clone(),
        rack: node.rack.clone(),
        tokens: node.tokens.clone(),
        state: NodeState::Normal,
    };
    let installer = Arc::new(SchemaInstaller::new(
        Arc::clone(&parts.local),
        events.clone(),
        settings.data_dir.join("schema").join(SCHEMA_EPOCH_FILE),
    ));
    let own_id = own.host_id;
    let listener_joining = Arc::clone(&joining);
    let topology = TopologyEvents {
        own: own.host_id,
        known: Mutex::new(BTreeMap::new()),
        events,
    };
    let hooks = MetadataHooks {
        listener: Some(Arc::new(move |m: &Arc<ClusterMetadata>| {
            installer.on_applied(m);
            topology.on_applied(m);
            // The ring as the metadata lists it: a restarted node knows it
            // before it serves a single request.
            if let Some(record) = m.nodes.get(&own_id) {
                listener_joining.keep(&record.tokens, &processor);
                coordinator.set_topology(Topology::from_records(m.nodes.values(), own_id));
            }
        })),
        allocator: Some(joining.clone()),
    };
    let config = MetadataConfig::new(&settings.cluster_name, seeds(settings, own_addr));
    let dir = settings.data_dir.join("metadata");
    let service = MetadataService::start(config, env, messaging, &dir, own, hooks)
        .await
        .with_context(|| format!("starting the cluster metadata log in {}", dir.display()))?;
    let service = Arc::new(service);
    let binding = tokio::spawn(bind_when_member(Arc::clone(&service), parts, membership));
    Ok(Started {
        service,
        binding,
        joining,
    })
}

/// The running log, the task that binds the schema to it, and the join.
pub struct Started {
    pub service: Arc<MetadataService>,
    pub binding: tokio::task::JoinHandle<()>,
    pub joining: Arc<Joining>,
}

/// Waits until this node is listed in the cluster's metadata, so that it
/// serves clients only with its own tokens and the cluster's ring (a node
/// that served before would own every key of a ring of itself alone).
/// An error when the join was refused, or after `limit` (no seed answered).
pub async fn wait_joined(
    started: &Started,
    messaging: &Messaging,
    cluster_name: &str,
    limit: Duration,
) -> anyhow::Result<()> {
    let began = tokio::time::Instant::now();
    let deadline = began + limit;
    loop {
        if let Some(reason) = started
            .joining
            .refusal()
            .or_else(|| started.service.join_refusal())
        {
            anyhow::bail!("this node cannot join the cluster: {reason}");
        }
        // Seeds of another cluster refuse every connection: no point
        // waiting the whole limit for them.
        let refused = messaging
            .counters()
            .rejected_by_peer(varve_cluster::net::handshake::RejectReason::CLUSTER_NAME_DIFFERS);
        if refused > 0 && began.elapsed() >= NAME_REFUSAL_GRACE {
            anyhow::bail!(
                "this node cannot join the cluster: its seeds belong to a cluster with another \
                 name than \"{cluster_name}\" (cluster_name); set the cluster's name"
            );
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            anyhow::bail!(
                "this node did not join a cluster within {} s: no seed answered, or the \
                 cluster's metadata log has no quorum",
                limit.as_secs()
            );
        }
        let step = left.min(JOIN_POLL);
        if started.service.wait_member(step).await.is_ok() {
            return Ok(());
        }
    }
}

/// How the tokens of this node are chosen when it joins, and kept.
pub struct Joining {
    data_dir: std::path::PathBuf,
    /// The tokens saved at an earlier join; a node keeps them for good.
    saved: Mutex<Option<Vec<i64>>>,
    balanced: BalancedTokens,
    auto_bootstrap: bool,
    /// `replace_address_first_boot`: the dead node whose tokens this one
    /// takes over.
    replace: Option<std::net::IpAddr>,
    /// Why the allocator refused the join, for the start to report.
    refused: Mutex<Option<String>>,
}

impl Joining {
    fn new(settings: &Settings) -> anyhow::Result<Joining> {
        Ok(Joining {
            data_dir: settings.data_dir.clone(),
            saved: Mutex::new(crate::node::saved_tokens(&settings.data_dir)?),
            balanced: BalancedTokens {
                num_tokens: settings.num_tokens,
                rf: settings.topology.allocation_rf,
            },
            auto_bootstrap: settings.topology.auto_bootstrap,
            replace: settings.topology.replace_address,
            refused: Mutex::new(None),
        })
    }

    /// The tokens this node was given when it joined (saved); none before.
    pub fn tokens(&self) -> Option<Vec<i64>> {
        self.saved.lock().clone()
    }

    /// Why the join was refused, if it was.
    pub fn refusal(&self) -> Option<String> {
        self.refused.lock().clone()
    }

    /// The tokens of this node's record, once listed: saved the first time
    /// (the node keeps them for good) and shown by the processor.
    fn keep(&self, tokens: &[i64], processor: &Processor) {
        let mut saved = self.saved.lock();
        if saved.as_deref() == Some(tokens) || tokens.is_empty() {
            return;
        }
        if let Err(e) = crate::node::save_tokens(&self.data_dir, tokens) {
            // Kept in memory: the metadata log holds them, and a restart
            // finds this node listed with them.
            tracing::error!("saving this node's tokens failed: {e:#}");
        }
        tracing::info!("this node's {} tokens are now its own", tokens.len());
        *saved = Some(tokens.to_vec());
        processor.set_tokens(tokens.to_vec());
    }

    fn choose(&self, metadata: &ClusterMetadata, own: &NodeRecord) -> Result<Vec<i64>, String> {
        if let Some(tokens) = self.saved.lock().clone() {
            return Ok(tokens);
        }
        if let Some(ip) = self.replace {
            return replaced_tokens(metadata, ip);
        }
        self.balanced.allocate(metadata, own)
    }
}

impl TokenAllocator for Joining {
    fn allocate(&self, metadata: &ClusterMetadata, own: &NodeRecord) -> Result<Vec<i64>, String> {
        let chosen = self.choose(metadata, own);
        if let Err(reason) = &chosen {
            *self.refused.lock() = Some(reason.clone());
        }
        chosen
    }

    /// A new node bootstraps when the cluster holds user tables and
    /// `auto_bootstrap` is on (docs/design/topology.md, section 3).
    fn state(&self, metadata: &ClusterMetadata) -> NodeState {
        let has_tables = user_tables(metadata).is_ok_and(|n| n > 0);
        let fresh = self.saved.lock().is_none();
        if fresh && self.replace.is_some() {
            return NodeState::Joining;
        }
        if self.auto_bootstrap && has_tables && fresh {
            NodeState::Joining
        } else {
            NodeState::Normal
        }
    }
}

/// The tokens of the `Normal` node listening at `ip`, for a node that
/// replaces it.
fn replaced_tokens(metadata: &ClusterMetadata, ip: std::net::IpAddr) -> Result<Vec<i64>, String> {
    let found = metadata.nodes.values().find(|n| n.storage_addr.ip() == ip);
    match found {
        Some(n) if n.state == NodeState::Normal => Ok(n.tokens.clone()),
        Some(n) => Err(format!(
            "the node at {ip} to replace is {:?}, not Normal",
            n.state
        )),
        None => Err(format!(
            "replace_address_first_boot: no node of the cluster listens at {ip}"
        )),
    }
}

/// How many user tables the metadata's schema holds.
fn user_tables(metadata: &ClusterMetadata) -> Result<usize, String> {
    if metadata.schema.is_empty() {
        return Ok(0);
    }
    let schema = decode(&metadata.schema, [0; 16])?;
    Ok(schema
        .keyspaces
        .values()
        .filter(|k| !k.is_system)
        .map(|k| k.tables.len())
        .sum())
}

/// TOPOLOGY_CHANGE NEW_NODE for every node the metadata lists as `Normal`
/// for the first time (its CQL address), and REMOVED_NODE for one that
/// left it, to this node's registered clients: a bootstrapping node is
/// announced once it serves.
struct TopologyEvents {
    own: HostId,
    known: Mutex<BTreeMap<HostId, Option<SocketAddr>>>,
    events: broadcast::Sender<Event>,
}

impl TopologyEvents {
    fn on_applied(&self, m: &Arc<ClusterMetadata>) {
        let mut known = self.known.lock();
        for (id, node) in &m.nodes {
            if *id == self.own || node.state != NodeState::Normal || known.contains_key(id) {
                continue;
            }
            known.insert(*id, node.rpc_addr);
            if let Some(addr) = node.rpc_addr {
                let _ = self.events.send(Event::TopologyChange {
                    change: TopologyChangeType::NewNode,
                    addr,
                });
            }
        }
        let gone: Vec<HostId> = known
            .keys()
            .filter(|id| !m.nodes.contains_key(id))
            .copied()
            .collect();
        for id in gone {
            if let Some(Some(addr)) = known.remove(&id) {
                let _ = self.events.send(Event::TopologyChange {
                    change: TopologyChangeType::RemovedNode,
                    addr,
                });
            }
        }
    }
}

/// The metadata log's seeds: gossip's, with this node's own address as it
/// listens (a port of 0 meant "this node"); this node alone when none.
fn seeds(settings: &Settings, own: SocketAddr) -> Vec<SocketAddr> {
    let mut out: Vec<SocketAddr> = settings
        .topology
        .seeds
        .iter()
        .map(|s| {
            if s.port() == 0 || (s.ip() == own.ip() && s.port() == own.port()) {
                own
            } else {
                *s
            }
        })
        .collect();
    out.dedup();
    if out.is_empty() {
        out.push(own);
    }
    out
}

/// Waits until this node is a member, then routes schema changes through
/// the log, and gives a new cluster this node's schema.
async fn bind_when_member(
    service: Arc<MetadataService>,
    parts: SchemaParts,
    membership: Arc<Gossiper>,
) {
    while service.wait_member(MEMBER_WAIT_REPORT).await.is_err() {
        tracing::warn!("not yet a member of the cluster's metadata log; still trying");
    }
    let log: Arc<dyn MetadataLog> = service.clone();
    parts.schema.bind(Arc::clone(&log), membership);
    // A cluster just created has no schema: this node's becomes the
    // cluster's (its keyspaces, or none), so every node that joins installs
    // it and all report one schema version from the start. Until the log
    // holds one: a stale proposal only says that some entry (a join, a
    // membership change) came first, not that a schema did, and if every
    // node gave up on its first try the cluster would never get one.
    loop {
        let metadata = log.current();
        if !metadata.schema.is_empty() {
            tracing::info!("the cluster's schema is set (epoch {})", metadata.epoch);
            return;
        }
        let change = Command::SchemaChange {
            schema: encode(&parts.local.current()),
            expected_epoch: metadata.epoch,
        };
        match log.propose(change).await {
            Ok(epoch) => {
                tracing::info!("this node's schema became the cluster's at epoch {epoch}");
                return;
            }
            Err(MetadataError::Stale { current_epoch }) => {
                let _ = log.wait_applied(current_epoch).await;
            }
            Err(e) => {
                tracing::warn!("proposing this node's schema as the cluster's: {e}; trying again");
                tokio::time::sleep(SCHEMA_PROPOSE_RETRY).await;
            }
        }
    }
}

/// How long a node waits before proposing its schema as a new cluster's
/// again, after a failure other than a stale epoch (no quorum yet).
const SCHEMA_PROPOSE_RETRY: Duration = Duration::from_millis(200);
