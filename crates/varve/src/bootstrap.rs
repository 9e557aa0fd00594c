//! A node listed as `Joining` fetches its ranges, then becomes `Normal`
//! (docs/design/topology.md, section 3), before it serves clients.
//!
//! Runs after the node is listed in the metadata; a node listed `Normal`
//! goes on at once. Each attempt streams every range again from the start
//! (applying a partition twice changes nothing), so an attempt that fails
//! (a source down, a page refused) is simply made again, every
//! [`BOOTSTRAP_RETRY`], with the reason in the log.

use std::time::Duration;

use tracing::{info, warn};
use varve_cluster::coordinator::Coordinator;
use varve_cluster::metadata::{Command, MetadataError, MetadataLog, MetadataService, NodeState};
use varve_cluster::net::handshake::HostId;
use varve_cluster::streaming::{self, Puller, StreamTable};
use varve_query::Processor;

use crate::cluster_path::replication;

/// How many stale epochs the proposal to become `Normal` rides out.
const BECOME_NORMAL_ATTEMPTS: usize = 16;

/// The pause between two bootstrap attempts.
pub const BOOTSTRAP_RETRY: Duration = Duration::from_secs(5);

/// Streams this node's ranges if it is `Joining`, then proposes it
/// `Normal`; returns once the metadata lists it `Normal`.
pub async fn finish_joining(
    service: &MetadataService,
    coordinator: &Coordinator,
    processor: &Processor,
    puller: &Puller,
) -> anyhow::Result<()> {
    let own = service.local_host();
    loop {
        let current = service.current();
        let Some(record) = current.nodes.get(&own) else {
            anyhow::bail!("this node is not listed in the cluster's metadata");
        };
        if record.state == NodeState::Normal {
            return Ok(());
        }
        // A node that replaces a dead one shares its tokens with it.
        let replacing = current
            .nodes
            .values()
            .find(|n| {
                n.host_id != own && n.tokens == record.tokens && n.state == NodeState::Leaving
            })
            .map(|n| n.host_id);
        match replacing {
            Some(dead) => info!("bootstrap: this node replaces {dead}; streaming its ranges"),
            None => info!("bootstrap: this node is joining; streaming its ranges"),
        }
        match attempt(coordinator, processor, puller, current.epoch, replacing).await {
            Ok(report) => {
                info!(
                    "bootstrap: streamed {} ranges of {} tables ({} partitions, {} bytes, {} \
                     whole sstables)",
                    report.ranges,
                    report.tables,
                    report.moved.partitions,
                    report.moved.bytes,
                    report.moved.files
                );
                become_normal(service).await;
            }
            Err(e) => {
                warn!(
                    "bootstrap failed: {e}; trying again in {} s",
                    BOOTSTRAP_RETRY.as_secs()
                );
                tokio::time::sleep(BOOTSTRAP_RETRY).await;
            }
        }
    }
}

/// Proposes this node `Normal` with its tokens, again on each stale
/// epoch (entries that came meanwhile, voter changes among them, change
/// nothing streamed), until it applies or something else fails.
async fn become_normal(service: &MetadataService) {
    let own = service.local_host();
    for _ in 0..BECOME_NORMAL_ATTEMPTS {
        let current = service.current();
        let Some(record) = current
            .nodes
            .get(&own)
            .filter(|r| r.state == NodeState::Joining)
        else {
            return;
        };
        let mut normal = record.clone();
        normal.state = NodeState::Normal;
        let command = Command::Join {
            node: normal,
            expected_epoch: current.epoch,
        };
        match service.propose(command).await {
            Ok(epoch) => {
                info!("bootstrap: done; this node is Normal at epoch {epoch}");
                return;
            }
            Err(MetadataError::Stale { .. }) => continue,
            Err(e) => {
                warn!("bootstrap: becoming Normal failed ({e}); streaming again");
                return;
            }
        }
    }
}

async fn attempt(
    coordinator: &Coordinator,
    processor: &Processor,
    puller: &Puller,
    epoch: u64,
    replacing: Option<HostId>,
) -> Result<streaming::BootstrapReport, String> {
    streaming::bootstrap(
        coordinator,
        puller,
        &tables_to_move(processor),
        epoch,
        replacing,
    )
    .await
}

/// What moves with a node's ranges: every user table, and `system.paxos`
/// once per distinct replication of the user keyspaces (its rows live
/// under the user partitions' keys; they merge by ballot where they land).
pub fn tables_to_move(processor: &Processor) -> Vec<StreamTable> {
    let mut tables = user_tables(processor);
    let paxos = paxos_tables(processor, &tables);
    tables.extend(paxos);
    tables
}

/// `system.paxos` once per distinct replication of `tables` (none when
/// the schema has no `system.paxos`).
pub fn paxos_tables(processor: &Processor, tables: &[StreamTable]) -> Vec<StreamTable> {
    let schema = processor.schema();
    let Some(paxos) = schema.table("system", "paxos").map(|t| t.id) else {
        return Vec::new();
    };
    let mut replications: Vec<_> = Vec::new();
    for t in tables {
        if !replications.contains(&t.replication) {
            replications.push(t.replication.clone());
        }
    }
    replications
        .into_iter()
        .map(|replication| StreamTable {
            table: paxos,
            name: "system.paxos".to_string(),
            replication,
        })
        .collect()
}

/// Every user table with its keyspace's replication.
pub fn user_tables(processor: &Processor) -> Vec<StreamTable> {
    let schema = processor.schema();
    let mut out = Vec::new();
    for ks in schema.keyspaces.values().filter(|k| !k.is_system) {
        let replication = replication(&ks.replication);
        for t in ks.tables.values() {
            out.push(StreamTable {
                table: t.id,
                name: format!("{}.{}", ks.name, t.name),
                replication: replication.clone(),
            });
        }
    }
    out
}

/// With `replace_address_first_boot` on a node that never joined: refuses
/// to start while a node answers on the replaced address's storage port
/// (only a dead node is replaced, as Cassandra checks it).
pub fn check_replaced_is_dead(settings: &crate::config::Settings) -> anyhow::Result<()> {
    let Some(ip) = settings.topology.replace_address else {
        return Ok(());
    };
    if crate::node::saved_tokens(&settings.data_dir)?.is_some() {
        info!("replace_address_first_boot is ignored: this node joined before");
        return Ok(());
    }
    let addr = std::net::SocketAddr::new(ip, settings.topology.storage_port);
    if std::net::TcpStream::connect_timeout(&addr, REPLACED_PROBE_TIMEOUT).is_ok() {
        anyhow::bail!(
            "replace_address_first_boot: a node answers at {addr}; only a dead node can be \
             replaced (stop it, or decommission it instead)"
        );
    }
    Ok(())
}

/// How long the start waits for the replaced address to answer.
const REPLACED_PROBE_TIMEOUT: Duration = Duration::from_secs(1);
