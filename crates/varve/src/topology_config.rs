//! The settings that place a node in a cluster, with cassandra.yaml's
//! names: `seed_provider` (or `--seeds`), `storage_port`,
//! `endpoint_snitch`, `phi_convict_threshold`; and the node's data centre
//! and rack (`dc` and `rack` in the YAML, `--dc` / `--rack`, or
//! `cassandra-rackdc.properties` beside the config file, as
//! GossipingPropertyFileSnitch reads it).
//!
//! The snitch decides where data centre and rack come from. SimpleSnitch
//! (Cassandra's default) puts every node in `datacenter1` / `rack1`;
//! GossipingPropertyFileSnitch takes them from the settings. Naming a data
//! centre or rack without naming a snitch implies the latter; naming them
//! with SimpleSnitch is an error at start, since they would be ignored.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use anyhow::{bail, Context};
use serde::Deserialize;

/// cassandra.yaml's default `storage_port` (internode messaging).
pub const DEFAULT_STORAGE_PORT: u16 = 7000;
/// cassandra.yaml's default `phi_convict_threshold`.
pub const DEFAULT_PHI_CONVICT_THRESHOLD: f64 = 8.0;
/// The range Cassandra accepts for `phi_convict_threshold`.
pub const PHI_CONVICT_THRESHOLD_RANGE: std::ops::RangeInclusive<f64> = 5.0..=16.0;
/// The most seeds a node takes (a few per data centre are plenty).
pub const MAX_SEEDS: usize = 64;
/// SimpleSnitch's data centre and rack for every node.
pub const DEFAULT_DC: &str = "datacenter1";
pub const DEFAULT_RACK: &str = "rack1";
/// The longest data centre or rack name.
pub const MAX_LOCATION_NAME_BYTES: usize = 128;
/// How often a node gossips (Varve's `gossip_interval`; Cassandra's is a
/// fixed second): 500 ms, so a fresh cluster is ready within 2 s.
pub const DEFAULT_GOSSIP_INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);
/// The range `gossip_interval` may take.
pub const GOSSIP_INTERVAL_RANGE_MS: std::ops::RangeInclusive<u64> = 10..=10_000;
/// The longest `internode_send_delay_ms` (a link across the world is a
/// few hundred ms each way).
pub const MAX_INTERNODE_SEND_DELAY_MS: u64 = 1_000;
/// The file GossipingPropertyFileSnitch reads, beside the config file.
/// `allocate_tokens_for_local_replication_factor` when it is not set.
pub const DEFAULT_ALLOCATION_RF: usize = 3;
/// The factors the token allocator accepts (a data centre of more replicas
/// than this is not one the allocator balances).
pub const ALLOCATION_RF_RANGE: std::ops::RangeInclusive<usize> = 1..=16;
pub const RACKDC_FILE: &str = "cassandra-rackdc.properties";

/// Where a node's data centre and rack come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Snitch {
    /// Every node in `datacenter1` / `rack1`.
    Simple,
    /// The node's own settings (`dc`, `rack`), told to the others by gossip.
    GossipingPropertyFile,
}

/// A node's place in a cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    /// Where to find the cluster at start; the node itself when none is
    /// given (a node without other seeds forms a cluster of one).
    pub seeds: Vec<SocketAddr>,
    /// Internode messaging port, on `listen_address`.
    pub storage_port: u16,
    pub snitch: Snitch,
    pub dc: String,
    pub rack: String,
    pub phi_convict_threshold: f64,
    pub gossip_interval: std::time::Duration,
    /// `allocate_tokens_for_local_replication_factor`: the replication
    /// factor a joining node balances its tokens for (3).
    pub allocation_rf: usize,
    /// `auto_bootstrap`: a new node that joins a cluster holding tables
    /// streams its ranges before it serves (docs/design/topology.md);
    /// false lets it join without data, as Cassandra's `false`.
    pub auto_bootstrap: bool,
    /// `stream_throughput_outbound` in bytes per second (0: no limit).
    pub stream_throughput: u64,
    /// `replace_address_first_boot`: a new node takes over the tokens of
    /// the dead node at this address (docs/design/topology.md, section 5).
    pub replace_address: Option<IpAddr>,
    /// Varve's `internode_send_delay_ms`: every internode frame this node
    /// sends waits this long first, as over a distant link (benchmarks of
    /// several data centres on one machine; zero by default).
    pub send_delay: std::time::Duration,
    /// Varve's `paxos_two_round_path`: a coordinator that is a replica runs
    /// conditional statements with a local promise and checked proposals
    /// (docs/design/paxos-two-rounds.md); true by default.
    pub paxos_two_rounds: bool,
}

/// The YAML keys of this module (the rest of the file is parsed elsewhere).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct TopologyFile {
    pub seed_provider: Option<Vec<SeedProvider>>,
    pub storage_port: Option<u16>,
    pub endpoint_snitch: Option<String>,
    pub phi_convict_threshold: Option<f64>,
    /// Varve's own key: `gossip_interval` in milliseconds.
    pub gossip_interval_ms: Option<u64>,
    /// Varve's own keys for GossipingPropertyFileSnitch's `dc` and `rack`.
    pub dc: Option<String>,
    pub rack: Option<String>,
    pub allocate_tokens_for_local_replication_factor: Option<usize>,
    pub auto_bootstrap: Option<bool>,
    /// `24MiB/s`, or a bare number of MiB/s.
    pub stream_throughput_outbound: Option<serde_yaml::Value>,
    pub replace_address_first_boot: Option<String>,
    pub internode_send_delay_ms: Option<u64>,
    pub paxos_two_round_path: Option<bool>,
}

/// `stream_throughput_outbound` in bytes per second: a rate like
/// `24MiB/s` or a bare number of MiB/s; 0 is no limit.
fn stream_throughput(value: Option<&serde_yaml::Value>) -> anyhow::Result<u64> {
    const MIB: u64 = 1024 * 1024;
    let text = match value {
        None => return Ok(varve_cluster::streaming::STREAM_THROUGHPUT_OUTBOUND_MIB * MIB),
        Some(serde_yaml::Value::Number(n)) => n.to_string(),
        Some(serde_yaml::Value::String(s)) => s.clone(),
        Some(_) => bail!("stream_throughput_outbound must be a rate like 24MiB/s"),
    };
    let text = text.trim().trim_end_matches("/s");
    crate::sizes::parse_size_bytes(text, MIB)
        .map_err(|e| anyhow::anyhow!("stream_throughput_outbound: {e}"))
}

/// cassandra.yaml's `seed_provider` entry.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct SeedProvider {
    pub class_name: Option<String>,
    pub parameters: Vec<SeedParameters>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct SeedParameters {
    /// "host[:port], host[:port], ..."
    pub seeds: Option<String>,
}

/// What the command line says about the topology.
#[derive(Debug, Default, Clone)]
pub struct TopologyFlags {
    pub seeds: Option<String>,
    pub storage_port: Option<u16>,
    pub dc: Option<String>,
    pub rack: Option<String>,
}

impl Topology {
    /// From the file, the flags (which win), and `rackdc` (the contents of
    /// cassandra-rackdc.properties, if there is one), for a node listening
    /// on `listen`.
    pub fn resolve(
        file: &TopologyFile,
        flags: &TopologyFlags,
        rackdc: Option<&str>,
        listen: IpAddr,
    ) -> anyhow::Result<Topology> {
        let storage_port = flags
            .storage_port
            .or(file.storage_port)
            .unwrap_or(DEFAULT_STORAGE_PORT);
        let from_file = rackdc.map(parse_rackdc).transpose()?.unwrap_or_default();
        let dc = flags.dc.clone().or(file.dc.clone()).or(from_file.0);
        let rack = flags.rack.clone().or(file.rack.clone()).or(from_file.1);
        let snitch = snitch(
            file.endpoint_snitch.as_deref(),
            dc.is_some() || rack.is_some(),
        )?;
        let (dc, rack) = match snitch {
            Snitch::Simple => (DEFAULT_DC.to_string(), DEFAULT_RACK.to_string()),
            Snitch::GossipingPropertyFile => (
                location("dc", dc.unwrap_or_else(|| DEFAULT_DC.to_string()))?,
                location("rack", rack.unwrap_or_else(|| DEFAULT_RACK.to_string()))?,
            ),
        };
        let seeds_text = match &flags.seeds {
            Some(s) => Some(s.clone()),
            None => file_seeds(file)?,
        };
        let seeds = match seeds_text {
            Some(text) => parse_seeds(&text, storage_port)?,
            None => vec![SocketAddr::new(listen, storage_port)],
        };
        let phi_convict_threshold = file
            .phi_convict_threshold
            .unwrap_or(DEFAULT_PHI_CONVICT_THRESHOLD);
        if !PHI_CONVICT_THRESHOLD_RANGE.contains(&phi_convict_threshold) {
            bail!("phi_convict_threshold must be between 5 and 16, not {phi_convict_threshold}");
        }
        let gossip_ms = file
            .gossip_interval_ms
            .unwrap_or(DEFAULT_GOSSIP_INTERVAL.as_millis() as u64);
        if !GOSSIP_INTERVAL_RANGE_MS.contains(&gossip_ms) {
            bail!("gossip_interval_ms must be between 10 and 10000, not {gossip_ms}");
        }
        let allocation_rf = file
            .allocate_tokens_for_local_replication_factor
            .unwrap_or(DEFAULT_ALLOCATION_RF);
        if !ALLOCATION_RF_RANGE.contains(&allocation_rf) {
            bail!(
                "allocate_tokens_for_local_replication_factor must be between 1 and {}, not \
                 {allocation_rf}",
                ALLOCATION_RF_RANGE.end()
            );
        }
        let send_delay_ms = file.internode_send_delay_ms.unwrap_or(0);
        if send_delay_ms > MAX_INTERNODE_SEND_DELAY_MS {
            bail!("internode_send_delay_ms must be at most {MAX_INTERNODE_SEND_DELAY_MS}, not {send_delay_ms}");
        }
        Ok(Topology {
            seeds,
            storage_port,
            snitch,
            dc,
            rack,
            phi_convict_threshold,
            gossip_interval: std::time::Duration::from_millis(gossip_ms),
            allocation_rf,
            auto_bootstrap: file.auto_bootstrap.unwrap_or(true),
            stream_throughput: stream_throughput(file.stream_throughput_outbound.as_ref())?,
            replace_address: match &file.replace_address_first_boot {
                None => None,
                Some(text) => Some(text.trim().parse().with_context(|| {
                    format!("replace_address_first_boot: '{text}' is not an IP address")
                })?),
            },
            send_delay: std::time::Duration::from_millis(send_delay_ms),
            paxos_two_rounds: file.paxos_two_round_path.unwrap_or(true),
        })
    }

    /// cassandra-rackdc.properties beside `config`, when there is one.
    pub fn read_rackdc(config: Option<&Path>) -> anyhow::Result<Option<String>> {
        let Some(dir) = config.and_then(Path::parent) else {
            return Ok(None);
        };
        let path = dir.join(RACKDC_FILE);
        if !path.exists() {
            return Ok(None);
        }
        std::fs::read_to_string(&path)
            .map(Some)
            .with_context(|| format!("reading {}", path.display()))
    }
}

/// The snitch named (by its short or full class name), or implied.
fn snitch(named: Option<&str>, location_given: bool) -> anyhow::Result<Snitch> {
    let short = named.map(|n| n.rsplit('.').next().unwrap_or(n));
    match (short, location_given) {
        (None, false) | (Some("SimpleSnitch"), false) => Ok(Snitch::Simple),
        (Some("SimpleSnitch"), true) => bail!(
            "endpoint_snitch SimpleSnitch puts every node in {DEFAULT_DC}/{DEFAULT_RACK}: \
             a dc or rack setting needs GossipingPropertyFileSnitch"
        ),
        (None, true) | (Some("GossipingPropertyFileSnitch"), _) => Ok(Snitch::GossipingPropertyFile),
        (Some(other), _) => bail!(
            "endpoint_snitch {other} is not supported: use SimpleSnitch or GossipingPropertyFileSnitch"
        ),
    }
}

fn location(what: &str, name: String) -> anyhow::Result<String> {
    let name = name.trim().to_string();
    if name.is_empty() || name.len() > MAX_LOCATION_NAME_BYTES {
        bail!("{what} must be 1 to {MAX_LOCATION_NAME_BYTES} bytes, not '{name}'");
    }
    if name.chars().any(|c| c.is_control() || c == ',') {
        bail!("{what} '{name}' has a control character or a comma");
    }
    Ok(name)
}

/// The seeds text of the file's `seed_provider`.
fn file_seeds(file: &TopologyFile) -> anyhow::Result<Option<String>> {
    let Some(providers) = &file.seed_provider else {
        return Ok(None);
    };
    let Some(provider) = providers.first() else {
        bail!("seed_provider is empty");
    };
    if let Some(class) = &provider.class_name {
        if !class.ends_with("SimpleSeedProvider") {
            bail!("seed_provider class {class} is not supported: use SimpleSeedProvider");
        }
    }
    Ok(provider.parameters.iter().find_map(|p| p.seeds.clone()))
}

/// "host[:port], ..." with `port` where none is given; hosts are IP
/// addresses or `localhost`.
pub fn parse_seeds(text: &str, port: u16) -> anyhow::Result<Vec<SocketAddr>> {
    let mut seeds = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let seed = match item.parse::<SocketAddr>() {
            Ok(addr) => addr,
            Err(_) => {
                let host = if item == "localhost" {
                    "127.0.0.1"
                } else {
                    item
                };
                let ip: IpAddr = host.parse().with_context(|| {
                    format!("seed '{item}' is not an IP address (with an optional :port)")
                })?;
                SocketAddr::new(ip, port)
            }
        };
        if !seeds.contains(&seed) {
            seeds.push(seed);
        }
    }
    if seeds.is_empty() {
        bail!("seeds is empty");
    }
    if seeds.len() > MAX_SEEDS {
        bail!("at most {MAX_SEEDS} seeds, not {}", seeds.len());
    }
    Ok(seeds)
}

/// `dc=` and `rack=` of a cassandra-rackdc.properties file.
fn parse_rackdc(text: &str) -> anyhow::Result<(Option<String>, Option<String>)> {
    let (mut dc, mut rack) = (None, None);
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let Some((key, value)) = line.split_once(['=', ':']) else {
            bail!("{RACKDC_FILE}: '{line}' is not key=value");
        };
        match key.trim() {
            "dc" => dc = Some(value.trim().to_string()),
            "rack" => rack = Some(value.trim().to_string()),
            _ => {}
        }
    }
    Ok((dc, rack))
}

#[cfg(test)]
mod tests;
