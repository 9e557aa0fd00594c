//! The software of one simulated host for the metadata runs: the node's
//! `Messaging` and `MetadataService`, exactly as the server starts them,
//! over the simulation's `Env`, and a client that proposes schema
//! changes on it. Its listener records every metadata it hears; the
//! client records every answer.
//!
//! A crash first has the node close its connections (as the kernel does
//! for a killed process), then turmoil drops the host's runtime with
//! every task, Raft's included; the files stay, and the next start
//! recovers from them.

use std::cell::Cell;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::super::env::{sim_env, Skew};
use super::super::node::Command;
use crate::env::Env;
use crate::metadata::{
    ClusterMetadata, Command as MetadataCommand, MetadataConfig, MetadataError, MetadataHooks,
    MetadataListener, MetadataLog, MetadataService, NodeRecord, NodeState,
};
use crate::net::{HostId, Messaging, MessagingConfig};

/// What a metadata run observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// A node's listener heard this metadata.
    Heard {
        node: usize,
        incarnation: u64,
        metadata: Arc<ClusterMetadata>,
    },
    /// A proposal of `schema` answered applied at `epoch`.
    Acked {
        node: usize,
        schema: Bytes,
        epoch: u64,
    },
    /// A proposal that failed otherwise than stale (its outcome unknown).
    Failed { node: usize, error: String },
}

/// The observations of all nodes, in the order they happened.
pub type Observations = Arc<Mutex<Vec<Seen>>>;

/// Everything a host needs to start (and start again) one node.
pub struct MetaSpec {
    pub index: usize,
    pub cluster_name: String,
    pub host_id: HostId,
    pub listen: SocketAddr,
    pub seeds: Vec<SocketAddr>,
    pub rng_seed: u64,
    pub dir: PathBuf,
    pub skew: Skew,
    pub seen: Observations,
    /// When the client stops proposing (the nemesis' end).
    pub proposals_until: Duration,
    command: Cell<Option<Command>>,
    commanded: Notify,
    incarnations: Cell<u64>,
    /// The running incarnation's log, for the final comparison.
    pub running: Mutex<Option<MetadataService>>,
}

impl MetaSpec {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        index: usize,
        cluster_name: &str,
        host_id: HostId,
        listen: SocketAddr,
        seeds: Vec<SocketAddr>,
        rng_seed: u64,
        dir: PathBuf,
        seen: Observations,
        proposals_until: Duration,
    ) -> MetaSpec {
        MetaSpec {
            index,
            cluster_name: cluster_name.to_string(),
            host_id,
            listen,
            seeds,
            rng_seed,
            dir,
            skew: Skew::default(),
            seen,
            proposals_until,
            command: Cell::new(None),
            commanded: Notify::new(),
            incarnations: Cell::new(0),
            running: Mutex::new(None),
        }
    }

    pub fn command(&self, command: Command) {
        self.command.set(Some(command));
        self.commanded.notify_one();
    }
}

fn record(spec: &MetaSpec) -> NodeRecord {
    NodeRecord {
        host_id: spec.host_id,
        storage_addr: spec.listen,
        rpc_addr: None,
        dc: "dc1".to_string(),
        rack: "rack1".to_string(),
        tokens: vec![spec.index as i64 * 1000],
        state: NodeState::Normal,
    }
}

/// One incarnation of the node, until it is crashed or shut down.
pub async fn run(spec: Rc<MetaSpec>) -> turmoil::Result {
    let incarnation = spec.incarnations.get();
    spec.incarnations.set(incarnation + 1);
    let seed = spec
        .rng_seed
        .wrapping_add(incarnation.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let env = sim_env(seed, spec.skew.clone());
    let config = MessagingConfig::new(&spec.cluster_name, spec.host_id, spec.listen);
    let messaging = Messaging::start(config, env.clone()).await?;
    let (node, seen) = (spec.index, spec.seen.clone());
    let listener = move |m: &Arc<ClusterMetadata>| {
        seen.lock().push(Seen::Heard {
            node,
            incarnation,
            metadata: m.clone(),
        });
    };
    let listener: Arc<dyn MetadataListener> = Arc::new(listener);
    let config = MetadataConfig::new(&spec.cluster_name, spec.seeds.clone());
    let hooks = MetadataHooks {
        listener: Some(listener),
        allocator: None,
    };
    let log = MetadataService::start(
        config,
        env.clone(),
        &messaging,
        &spec.dir,
        record(&spec),
        hooks,
    )
    .await
    .map_err(|e| e.to_string())?;
    *spec.running.lock() = Some(log.clone());
    spec.command.set(None);
    let client = tokio::spawn(client(
        log.clone(),
        env,
        spec.index,
        spec.seen.clone(),
        spec.proposals_until,
    ));
    let graceful = loop {
        spec.commanded.notified().await;
        match spec.command.take() {
            Some(Command::Crash) => break false,
            Some(Command::Shutdown) => break true,
            None => {}
        }
    };
    *spec.running.lock() = None;
    client.abort();
    if graceful {
        log.shutdown().await;
        messaging.shutdown().await;
        Ok(())
    } else {
        messaging.shutdown().await;
        std::future::pending().await
    }
}

/// Proposes a schema change every 1 to 3 s (from the node's generator),
/// each with bytes no other proposal has, until `until` (simulated time
/// since the start).
async fn client(log: MetadataService, env: Env, node: usize, seen: Observations, until: Duration) {
    for n in 0u64.. {
        let pause = Duration::from_millis(1000 + env.rng.below_or_at(2000));
        env.clock.sleep(pause).await;
        if turmoil::sim_elapsed().unwrap_or_default() >= until {
            return;
        }
        let current = log.current();
        if !current.nodes.contains_key(&log.local_host()) {
            continue;
        }
        let schema = Bytes::from(format!("n{node}-{}-{n}", env.rng.seed()));
        let command = MetadataCommand::SchemaChange {
            schema: schema.clone(),
            expected_epoch: current.epoch,
        };
        let observed = match log.propose(command).await {
            Ok(epoch) => Seen::Acked {
                node,
                schema,
                epoch,
            },
            Err(MetadataError::Stale { .. }) => continue,
            Err(error) => Seen::Failed {
                node,
                error: error.to_string(),
            },
        };
        seen.lock().push(observed);
    }
}
