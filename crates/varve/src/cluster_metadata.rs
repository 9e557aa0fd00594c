//! Starting this node's part of the cluster metadata log (docs/design/
//! cluster.md, section 6): the log under `<data directory>/metadata`, with
//! the seeds of gossip, this node's record (its internode and CQL
//! addresses, data centre, rack and tokens), and the schema installer as
//! its listener. Once the node is a member, schema changes go through the
//! log ([`ClusterSchema::bind`]); a node whose cluster has no schema yet
//! (it just created it) proposes its own, so a single node's keyspaces
//! become the cluster's and every node reports the same version at once.

use std::collections::BTreeSet;
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
    ClusterMetadata, Command, MetadataConfig, MetadataHooks, MetadataLog, MetadataService,
    NodeRecord, NodeState,
};
use varve_cluster::net::handshake::HostId;
use varve_cluster::net::messaging::Messaging;
use varve_protocol::{Event, TopologyChangeType};
use varve_query::local_schema::LocalSchema;
use varve_query::schema_source::SchemaSource;
use varve_query::NodeInfo;

use crate::cluster_schema::{encode, ClusterSchema, SchemaInstaller};
use crate::config::Settings;

/// Beside the schema file: the metadata epoch of the installed schema.
pub const SCHEMA_EPOCH_FILE: &str = "schema.epoch";

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
) -> anyhow::Result<(Arc<MetadataService>, tokio::task::JoinHandle<()>)> {
    let Followers {
        membership,
        coordinator,
        events,
    } = followers;
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
    let topology = TopologyEvents {
        own: own.host_id,
        known: Mutex::new(BTreeSet::new()),
        events,
    };
    let hooks = MetadataHooks {
        listener: Some(Arc::new(move |m: &Arc<ClusterMetadata>| {
            installer.on_applied(m);
            topology.on_applied(m);
            // The ring as the metadata lists it: a restarted node knows it
            // before it serves a single request.
            if m.nodes.contains_key(&own_id) {
                coordinator.set_topology(Topology::from_records(m.nodes.values(), own_id));
            }
        })),
        allocator: None,
    };
    let config = MetadataConfig::new(&settings.cluster_name, seeds(settings, own_addr));
    let dir = settings.data_dir.join("metadata");
    let service = MetadataService::start(config, env, messaging, &dir, own, hooks)
        .await
        .with_context(|| format!("starting the cluster metadata log in {}", dir.display()))?;
    let service = Arc::new(service);
    let binding = tokio::spawn(bind_when_member(Arc::clone(&service), parts, membership));
    Ok((service, binding))
}

/// TOPOLOGY_CHANGE NEW_NODE for every node the metadata lists for the
/// first time (its CQL address), to this node's registered clients.
struct TopologyEvents {
    own: HostId,
    known: Mutex<BTreeSet<HostId>>,
    events: broadcast::Sender<Event>,
}

impl TopologyEvents {
    fn on_applied(&self, m: &Arc<ClusterMetadata>) {
        let mut known = self.known.lock();
        for (id, node) in &m.nodes {
            if *id == self.own || !known.insert(*id) {
                continue;
            }
            if let Some(addr) = node.rpc_addr {
                let _ = self.events.send(Event::TopologyChange {
                    change: TopologyChangeType::NewNode,
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
    // it and all report one schema version from the start.
    let metadata = log.current();
    if metadata.schema.is_empty() {
        let change = Command::SchemaChange {
            schema: encode(&parts.local.current()),
            expected_epoch: metadata.epoch,
        };
        match log.propose(change).await {
            Ok(epoch) => tracing::info!("this node's schema became the cluster's at epoch {epoch}"),
            Err(e) => tracing::info!("the cluster's schema came from elsewhere: {e}"),
        }
    }
}
