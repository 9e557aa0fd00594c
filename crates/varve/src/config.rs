//! Settings of `varve server`: defaults, then the YAML file (cassandra.yaml
//! names where the concept is the same), then flags. Unknown YAML keys are
//! logged at WARN and ignored, so a cassandra.yaml can be used as it is.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;

use anyhow::{bail, Context};
use serde::Deserialize;
use serde_yaml::Value;

use crate::sizes::{parse_duration_ms, parse_size_bytes};
use crate::ServerArgs;

/// Cassandra's default cluster name; drivers only display it.
pub const DEFAULT_CLUSTER_NAME: &str = "Test Cluster";
/// CQL native protocol port, as Cassandra.
pub const DEFAULT_NATIVE_PORT: u16 = 9042;
/// Admin HTTP port. Not Cassandra's 7199 (JMX), so both can run side by side.
pub const DEFAULT_ADMIN_PORT: u16 = 9180;
/// Default data directory, relative to the working directory.
pub const DEFAULT_DATA_DIR: &str = "./varve-data";
/// Tokens per node (cassandra.yaml `num_tokens`; Cassandra 4.0+ uses 16).
pub const DEFAULT_NUM_TOKENS: usize = 16;
/// Most tokens a node may own.
pub const MAX_NUM_TOKENS: usize = 1536;
/// The largest `concurrent_reads` accepted: each is a thread when busy.
pub const MAX_CONCURRENT_READS: usize = 1024;
/// Memory for memtables before the largest is flushed (Cassandra: a
/// quarter of the heap; Varve has no heap to size it from).
pub const DEFAULT_MEMTABLE_SPACE_BYTES: u64 = 256 * MIB;
/// cassandra.yaml's default `commitlog_segment_size`.
pub const DEFAULT_COMMITLOG_SEGMENT_BYTES: u64 = 32 * MIB;
/// Default `commitlog_sync_group_window` for group mode.
pub const DEFAULT_GROUP_WINDOW_MS: u64 = 15;
/// cassandra.yaml's default `commitlog_sync_period`.
pub const DEFAULT_COMMITLOG_SYNC_PERIOD_MS: u64 = 10_000;
const MIB: u64 = 1 << 20;
/// `native_transport_max_frame_size` must stay below this (as in Cassandra).
pub const MAX_FRAME_SIZE_LIMIT_BYTES: u64 = 2048 * MIB;

/// The YAML file as written; every field optional.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FileConfig {
    cluster_name: Option<String>,
    listen_address: Option<String>,
    rpc_address: Option<String>,
    native_transport_port: Option<u16>,
    data_file_directories: Option<Vec<PathBuf>>,
    commitlog_directory: Option<PathBuf>,
    commitlog_sync: Option<String>,
    commitlog_sync_period: Option<Value>,
    commitlog_sync_period_in_ms: Option<u64>,
    native_transport_max_frame_size: Option<Value>,
    native_transport_max_frame_size_in_mb: Option<u64>,
    native_transport_max_concurrent_connections: Option<i64>,
    num_tokens: Option<usize>,
    memtable_heap_space: Option<Value>,
    compaction_throughput: Option<Value>,
    index_summary_capacity: Option<Value>,
    key_cache_size: Option<Value>,
    file_cache_size: Option<Value>,
    file_cache_size_in_mb: Option<u64>,
    concurrent_reads: Option<usize>,
    concurrent_compactors: Option<usize>,
    disk_access_mode: Option<String>,
    flush_write_disk_access_mode: Option<String>,
    compaction_write_disk_access_mode: Option<String>,
    commitlog_segment_size: Option<Value>,
    commitlog_sync_group_window: Option<Value>,
    auto_snapshot: Option<bool>,
    /// Varve's own key: new commitlog segments begin as preallocated files
    /// of zeros.
    commitlog_preallocate_segments: Option<bool>,
    /// Varve's own key: the admin HTTP port.
    admin_port: Option<u16>,
    /// Varve's own keys: the admin port's address and token
    /// (crate::admin_config).
    admin_address: Option<String>,
    admin_token: Option<String>,
    // The node's place in a cluster (crate::topology_config).
    seed_provider: Option<Vec<crate::topology_config::SeedProvider>>,
    storage_port: Option<u16>,
    endpoint_snitch: Option<String>,
    phi_convict_threshold: Option<f64>,
    gossip_interval_ms: Option<u64>,
    internode_send_delay_ms: Option<u64>,
    paxos_two_round_path: Option<bool>,
    dc: Option<String>,
    rack: Option<String>,
    allocate_tokens_for_local_replication_factor: Option<usize>,
    auto_bootstrap: Option<bool>,
    stream_throughput_outbound: Option<Value>,
    replace_address_first_boot: Option<String>,
    // Hints (crate::hints_config).
    hinted_handoff_enabled: Option<bool>,
    max_hint_window: Option<Value>,
    hints_directory: Option<PathBuf>,
    max_hints_size_per_host: Option<Value>,
    hinted_handoff_throttle: Option<Value>,
    hints_flush_period: Option<Value>,
    hints_space_total: Option<Value>,
    // Security (crate::security_config).
    authenticator: Option<Value>,
    authorizer: Option<Value>,
    role_manager: Option<Value>,
    network_authorizer: Option<Value>,
    cidr_authorizer: Option<Value>,
    credentials_validity: Option<Value>,
    credentials_validity_in_ms: Option<u64>,
    client_encryption_options: Option<Value>,
    /// Varve's own key: TLS for the admin port (crate::admin_config).
    admin_encryption_options: Option<Value>,
    server_encryption_options: Option<Value>,
    #[serde(flatten)]
    unknown: BTreeMap<String, Value>,
}

/// The resolved settings of a node.
#[derive(Debug, Clone)]
pub struct Settings {
    pub cluster_name: String,
    pub listen_address: IpAddr,
    /// The address CQL and admin bind to.
    pub rpc_address: IpAddr,
    pub native_port: u16,
    pub admin_port: u16,
    /// Where the admin port listens (crate::admin_config).
    pub admin_address: IpAddr,
    /// The token admin requests must carry, if any.
    pub admin_token: Option<String>,
    /// `admin_encryption_options`: HTTPS on the admin port
    /// (crate::admin_config).
    pub admin_tls: Option<varve_server::tls::ClientTlsSettings>,
    pub data_dir: PathBuf,
    /// Accepted and kept for the durable engine; memtables ignore it today.
    pub commitlog_dir: PathBuf,
    pub commitlog_sync: String,
    pub commitlog_sync_period_ms: u64,
    /// `commitlog_sync_group_window` (group mode).
    pub commitlog_group_window_ms: u64,
    /// `commitlog_segment_size`.
    pub commitlog_segment_bytes: u64,
    /// `commitlog_preallocate_segments` (Varve's own; default: in batch
    /// and group modes).
    pub commitlog_preallocate: bool,
    /// `memtable_heap_space`: memory all memtables may use before a flush.
    pub memtable_space_bytes: u64,
    /// `compaction_throughput` in MiB/s (0: unlimited).
    pub compaction_throughput_mib_per_sec: u64,
    /// `index_summary_capacity`: memory of all partition summaries before
    /// they are downsampled (toward each table's `max_index_interval`).
    pub index_summary_capacity_bytes: u64,
    /// `key_cache_size`: memory of the key caches of all sstables (0: off).
    pub key_cache_bytes: u64,
    /// `file_cache_size`: the chunk cache of decompressed chunks and index
    /// blocks (0: off).
    pub file_cache_bytes: u64,
    /// `concurrent_reads`: statements that need the disk running at once.
    pub concurrent_reads: usize,
    /// The memory limit of the node's cgroup, when one is set: the budgets
    /// not set explicitly were fitted to it.
    pub memory_limit_bytes: Option<u64>,
    /// `concurrent_compactors` (0: storage's default, min(cores, 8)).
    pub concurrent_compactors: usize,
    /// `disk_access_mode`: how sstables are read (default `auto`, which is
    /// `standard`: `pread` through the chunk cache; see varve_storage's
    /// `DiskAccessMode`).
    pub disk_access_mode: varve_storage::fs::DiskAccessMode,
    /// `flush_write_disk_access_mode` and
    /// `compaction_write_disk_access_mode`: `direct` (default) writes
    /// flushed and compacted sstables with O_DIRECT, around the page cache
    /// (and compactions read their inputs that way too); `standard` through it.
    pub sstable_writes: varve_storage::fs::SstableWrites,
    pub max_frame_body_bytes: usize,
    pub max_connections: usize,
    pub num_tokens: usize,
    /// `auto_snapshot`: DROP TABLE, DROP KEYSPACE and TRUNCATE snapshot
    /// the table first (default true, as in Cassandra).
    pub auto_snapshot: bool,
    /// Seeds, storage port, snitch, data centre and rack.
    pub topology: crate::topology_config::Topology,
    /// Hinted handoff (crate::hints_config).
    pub hints: varve_cluster::hints::HintsConfig,
    /// Authentication and authorization (crate::security_config).
    pub auth: varve_query::auth::AuthSettings,
    /// `client_encryption_options` (crate::tls_config).
    pub client_tls: Option<varve_server::tls::ClientTlsSettings>,
    /// `server_encryption_options` (crate::internode_tls_config).
    pub internode_tls: Option<varve_cluster::env::tls::InternodeTlsSettings>,
}

fn parse_address(key: &str, text: &str) -> anyhow::Result<IpAddr> {
    if text == "localhost" {
        return Ok(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    text.parse()
        .with_context(|| format!("{key}: '{text}' is not an IP address"))
}

fn value_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// What the node knows of its memory at start.
#[derive(Debug, Clone, Copy, Default)]
struct NodeMemory {
    /// Its cgroup's memory limit, when one is set.
    cgroup_limit: Option<u64>,
    /// The machine's physical memory, when known.
    physical: Option<u64>,
}

impl Settings {
    /// Defaults, overridden by the config file, overridden by flags.
    pub fn resolve(args: &ServerArgs) -> anyhow::Result<Settings> {
        let file = match &args.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading config {}", path.display()))?;
                parse_file(&text).with_context(|| format!("in config {}", path.display()))?
            }
            None => FileConfig::default(),
        };
        let memory = NodeMemory {
            cgroup_limit: crate::memory_limit::cgroup_memory_limit(),
            physical: crate::memory_limit::physical_memory(),
        };
        let rackdc = crate::topology_config::Topology::read_rackdc(args.config.as_deref())?;
        Settings::from_file_and_flags(file, args, memory, rackdc.as_deref())
    }

    /// The settings from the file and the flags; `memory` fits the memory
    /// budgets' defaults (see [`crate::memory_limit`]); `rackdc`: the
    /// contents of cassandra-rackdc.properties, if there is one.
    fn from_file_and_flags(
        file: FileConfig,
        args: &ServerArgs,
        memory: NodeMemory,
        rackdc: Option<&str>,
    ) -> anyhow::Result<Settings> {
        let memory_limit = memory.cgroup_limit;
        for key in file.unknown.keys() {
            tracing::warn!("config: unknown or unsupported key '{key}' ignored");
        }
        let listen_address = match &file.listen_address {
            Some(a) => parse_address("listen_address", a)?,
            None => IpAddr::V4(Ipv4Addr::LOCALHOST),
        };
        let rpc_address = match &file.rpc_address {
            Some(a) => parse_address("rpc_address", a)?,
            None => listen_address,
        };
        let (listen_address, rpc_address) = match args.listen {
            Some(a) => (a, a),
            None => (listen_address, rpc_address),
        };
        let data_dir = match (&args.data_dir, &file.data_file_directories) {
            (Some(d), _) => d.clone(),
            (None, Some(dirs)) => {
                if dirs.len() > 1 {
                    tracing::warn!(
                        "config: data_file_directories: only the first directory is used"
                    );
                }
                dirs.first()
                    .cloned()
                    .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR))
            }
            (None, None) => PathBuf::from(DEFAULT_DATA_DIR),
        };
        let commitlog_sync_period_ms = match (
            &file.commitlog_sync_period,
            file.commitlog_sync_period_in_ms,
        ) {
            (Some(v), _) => {
                let text = value_text(v)
                    .context("commitlog_sync_period must be a duration like 10000ms")?;
                parse_duration_ms(&text).map_err(anyhow::Error::msg)?
            }
            (None, Some(ms)) => ms,
            (None, None) => DEFAULT_COMMITLOG_SYNC_PERIOD_MS,
        };
        let max_frame = match (
            &file.native_transport_max_frame_size,
            file.native_transport_max_frame_size_in_mb,
        ) {
            (Some(v), _) => {
                let text = value_text(v)
                    .context("native_transport_max_frame_size must be a size like 16MiB")?;
                parse_size_bytes(&text, MIB).map_err(anyhow::Error::msg)?
            }
            (None, Some(mb)) => mb.saturating_mul(MIB),
            (None, None) => varve_server::limits::MAX_FRAME_BODY_BYTES as u64,
        };
        if max_frame >= MAX_FRAME_SIZE_LIMIT_BYTES {
            bail!("native_transport_max_frame_size must be below 2048MiB, not {max_frame} bytes");
        }
        let max_connections = match file.native_transport_max_concurrent_connections {
            None => varve_server::limits::MAX_CONNECTIONS,
            Some(n) if n < 0 => varve_server::limits::MAX_CONNECTIONS_UNLIMITED,
            Some(0) => bail!("native_transport_max_concurrent_connections must not be 0"),
            Some(n) => {
                usize::try_from(n).unwrap_or(varve_server::limits::MAX_CONNECTIONS_UNLIMITED)
            }
        };
        let size_or = |v: &Option<Value>, default: u64, what: &str| -> anyhow::Result<u64> {
            match v {
                None => Ok(default),
                Some(v) => {
                    let text = value_text(v)
                        .with_context(|| format!("{what} must be a size like 256MiB"))?;
                    parse_size_bytes(&text, MIB).map_err(anyhow::Error::msg)
                }
            }
        };
        use crate::memory_limit::{file_cache_default, fitted, KEY_CACHE_SHARE_DIVISOR};
        let memtable_space_bytes = size_or(
            &file.memtable_heap_space,
            fitted(
                DEFAULT_MEMTABLE_SPACE_BYTES,
                memory_limit,
                crate::memory_limit::MEMTABLE_SHARE_DIVISOR,
            ),
            "memtable_heap_space",
        )?;
        let index_summary_capacity_bytes = size_or(
            &file.index_summary_capacity,
            varve_storage::engine_summary::DEFAULT_INDEX_SUMMARY_CAPACITY_BYTES,
            "index_summary_capacity",
        )?;
        let key_cache_bytes = size_or(
            &file.key_cache_size,
            fitted(
                varve_storage::sstable::DEFAULT_KEY_CACHE_BYTES,
                memory_limit,
                KEY_CACHE_SHARE_DIVISOR,
            ),
            "key_cache_size",
        )?;
        let file_cache_bytes = match (&file.file_cache_size, file.file_cache_size_in_mb) {
            (None, Some(mb)) => mb.saturating_mul(MIB),
            (v, _) => size_or(
                v,
                file_cache_default(
                    memory.cgroup_limit,
                    memory.physical,
                    varve_storage::sstable::DEFAULT_FILE_CACHE_BYTES,
                    match file.disk_access_mode.as_deref() {
                        Some("direct") => crate::memory_limit::DIRECT_FILE_CACHE_SHARE_DIVISOR,
                        _ => crate::memory_limit::FILE_CACHE_SHARE_DIVISOR,
                    },
                ),
                "file_cache_size",
            )?,
        };
        let concurrent_reads = file
            .concurrent_reads
            .unwrap_or(varve_server::limits::CONCURRENT_READS);
        if concurrent_reads == 0 || concurrent_reads > MAX_CONCURRENT_READS {
            bail!("concurrent_reads must be between 1 and {MAX_CONCURRENT_READS}, not {concurrent_reads}");
        }
        let commitlog_segment_bytes = size_or(
            &file.commitlog_segment_size,
            DEFAULT_COMMITLOG_SEGMENT_BYTES,
            "commitlog_segment_size",
        )?;
        let commitlog_group_window_ms = match &file.commitlog_sync_group_window {
            None => DEFAULT_GROUP_WINDOW_MS,
            Some(v) => {
                let text = value_text(v)
                    .context("commitlog_sync_group_window must be a duration like 15ms")?;
                parse_duration_ms(&text).map_err(anyhow::Error::msg)?
            }
        };
        // `compaction_throughput: 64MiB/s` (or a bare number of MiB/s).
        let compaction_throughput_mib_per_sec = match &file.compaction_throughput {
            None => varve_storage::compaction::throttle::DEFAULT_COMPACTION_THROUGHPUT_MIB_PER_SEC,
            Some(v) => {
                let text =
                    value_text(v).context("compaction_throughput must be a rate like 64MiB/s")?;
                let text = text.trim().trim_end_matches("/s");
                parse_size_bytes(text, MIB).map_err(anyhow::Error::msg)? / MIB
            }
        };
        let num_tokens = file.num_tokens.unwrap_or(DEFAULT_NUM_TOKENS);
        if num_tokens == 0 || num_tokens > MAX_NUM_TOKENS {
            bail!("num_tokens must be between 1 and {MAX_NUM_TOKENS}, not {num_tokens}");
        }
        let commitlog_sync = file
            .commitlog_sync
            .unwrap_or_else(|| "periodic".to_string());
        if !["periodic", "batch", "group"].contains(&commitlog_sync.as_str()) {
            bail!("commitlog_sync must be periodic, batch or group, not '{commitlog_sync}'");
        }
        let disk_access_mode = match &file.disk_access_mode {
            None => varve_storage::fs::DiskAccessMode::default(),
            Some(text) => varve_storage::fs::DiskAccessMode::parse(text).with_context(|| {
                format!("disk_access_mode must be auto, mmap, mmap_index_only, standard, direct or legacy, not '{text}'")
            })?,
        };
        let default_writes = varve_storage::fs::SstableWrites::default();
        let sstable_writes = varve_storage::fs::SstableWrites {
            flush: write_mode(
                "flush_write_disk_access_mode",
                file.flush_write_disk_access_mode.as_deref(),
                default_writes.flush,
            )?,
            compaction: write_mode(
                "compaction_write_disk_access_mode",
                file.compaction_write_disk_access_mode.as_deref(),
                default_writes.compaction,
            )?,
        };
        let auth = crate::security_config::resolve(&crate::security_config::SecurityFile {
            authenticator: file.authenticator.clone(),
            authorizer: file.authorizer.clone(),
            role_manager: file.role_manager.clone(),
            network_authorizer: file.network_authorizer.clone(),
            cidr_authorizer: file.cidr_authorizer.clone(),
            credentials_validity: file.credentials_validity.clone(),
            credentials_validity_in_ms: file.credentials_validity_in_ms,
        })?;
        let admin_address = match &file.admin_address {
            Some(a) => Some(parse_address("admin_address", a)?),
            None => None,
        };
        let admin_tls = crate::admin_config::resolve_tls(file.admin_encryption_options.as_ref())?;
        let (admin_address, admin_token) = crate::admin_config::resolve(
            rpc_address,
            admin_address,
            file.admin_token.clone(),
            std::env::var(crate::admin_config::ADMIN_TOKEN_ENV).ok(),
            admin_tls.as_ref(),
        )?;
        let client_tls = crate::tls_config::resolve(file.client_encryption_options.as_ref())?;
        let internode_tls =
            crate::internode_tls_config::resolve(file.server_encryption_options.as_ref())?;
        let hints = crate::hints_config::resolve(
            &crate::hints_config::HintsFile {
                hinted_handoff_enabled: file.hinted_handoff_enabled,
                max_hint_window: file.max_hint_window.clone(),
                hints_directory: file.hints_directory.clone(),
                max_hints_size_per_host: file.max_hints_size_per_host.clone(),
                hinted_handoff_throttle: file.hinted_handoff_throttle.clone(),
                hints_flush_period: file.hints_flush_period.clone(),
                hints_space_total: file.hints_space_total.clone(),
            },
            &data_dir,
        )?;
        let topology = crate::topology_config::Topology::resolve(
            &crate::topology_config::TopologyFile {
                seed_provider: file.seed_provider,
                storage_port: file.storage_port,
                endpoint_snitch: file.endpoint_snitch,
                phi_convict_threshold: file.phi_convict_threshold,
                gossip_interval_ms: file.gossip_interval_ms,
                internode_send_delay_ms: file.internode_send_delay_ms,
                paxos_two_round_path: file.paxos_two_round_path,
                dc: file.dc,
                rack: file.rack,
                allocate_tokens_for_local_replication_factor: file
                    .allocate_tokens_for_local_replication_factor,
                auto_bootstrap: file.auto_bootstrap,
                stream_throughput_outbound: file.stream_throughput_outbound,
                replace_address_first_boot: file.replace_address_first_boot,
            },
            &crate::topology_config::TopologyFlags {
                seeds: args.seeds.clone(),
                storage_port: args.storage_port,
                dc: args.dc.clone(),
                rack: args.rack.clone(),
            },
            rackdc,
            listen_address,
        )?;
        Ok(Settings {
            topology,
            hints,
            auth,
            client_tls,
            internode_tls,
            admin_address,
            admin_token,
            admin_tls,
            cluster_name: args
                .cluster_name
                .clone()
                .or(file.cluster_name)
                .unwrap_or_else(|| DEFAULT_CLUSTER_NAME.to_string()),
            listen_address,
            rpc_address,
            native_port: args
                .port
                .or(file.native_transport_port)
                .unwrap_or(DEFAULT_NATIVE_PORT),
            admin_port: args
                .admin_port
                .or(file.admin_port)
                .unwrap_or(DEFAULT_ADMIN_PORT),
            commitlog_group_window_ms,
            commitlog_segment_bytes,
            // Where every write waits for an fsync, preallocated segments
            // make it cheaper; in periodic mode they cost the writes more
            // than they save the Paxos fsyncs (docs/benchmarks.md, session 28).
            commitlog_preallocate: file
                .commitlog_preallocate_segments
                .unwrap_or(commitlog_sync != "periodic"),
            memtable_space_bytes,
            compaction_throughput_mib_per_sec,
            index_summary_capacity_bytes,
            key_cache_bytes,
            file_cache_bytes,
            concurrent_reads,
            memory_limit_bytes: memory_limit,
            concurrent_compactors: file.concurrent_compactors.unwrap_or(0),
            disk_access_mode,
            sstable_writes,
            commitlog_dir: file
                .commitlog_directory
                .unwrap_or_else(|| data_dir.join("commitlog")),
            data_dir,
            commitlog_sync,
            commitlog_sync_period_ms,
            max_frame_body_bytes: usize::try_from(max_frame).unwrap_or(usize::MAX),
            max_connections,
            num_tokens,
            auto_snapshot: file.auto_snapshot.unwrap_or(true),
        })
    }

    /// The network settings for `varve-server`.
    pub fn server_config(&self) -> varve_server::ServerConfig {
        varve_server::ServerConfig {
            cql_addr: (self.rpc_address, self.native_port).into(),
            admin_addr: (self.admin_address, self.admin_port).into(),
            admin_token: self.admin_token.clone(),
            admin_tls: self.admin_tls.clone(),
            max_connections: self.max_connections,
            max_frame_body_bytes: self.max_frame_body_bytes,
            concurrent_reads: self.concurrent_reads,
            client_tls: self.client_tls.clone(),
            ..varve_server::ServerConfig::default()
        }
    }
}

/// A `*_write_disk_access_mode` value, or `default` when it is absent.
fn write_mode(
    key: &str,
    text: Option<&str>,
    default: varve_storage::fs::PageCache,
) -> anyhow::Result<varve_storage::fs::PageCache> {
    match text {
        None => Ok(default),
        Some(text) => varve_storage::fs::PageCache::parse_write_mode(text)
            .with_context(|| format!("{key} must be direct or standard, not '{text}'")),
    }
}

fn parse_file(text: &str) -> anyhow::Result<FileConfig> {
    if text.trim().is_empty() {
        return Ok(FileConfig::default());
    }
    Ok(serde_yaml::from_str(text)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use varve_storage::fs::DiskAccessMode;

    fn resolve(yaml: &str, args: &ServerArgs) -> anyhow::Result<Settings> {
        Settings::from_file_and_flags(parse_file(yaml)?, args, NodeMemory::default(), None)
    }

    #[test]
    fn auto_snapshot_is_on_unless_the_file_turns_it_off() {
        let on = |yaml: &str| resolve(yaml, &ServerArgs::default()).unwrap().auto_snapshot;
        assert!(on(""));
        assert!(on("auto_snapshot: true"));
        assert!(!on("auto_snapshot: false"));
        assert!(resolve("auto_snapshot: maybe", &ServerArgs::default()).is_err());
    }

    #[test]
    fn commitlog_segments_are_preallocated_in_batch_and_group_modes_unless_the_file_says() {
        let on = |yaml: &str| {
            resolve(yaml, &ServerArgs::default())
                .unwrap()
                .commitlog_preallocate
        };
        assert!(!on(""));
        assert!(on("commitlog_sync: batch"));
        assert!(on(
            "commitlog_sync: group\ncommitlog_sync_group_window: 5ms"
        ));
        assert!(!on(
            "commitlog_sync: batch\ncommitlog_preallocate_segments: false"
        ));
        assert!(on("commitlog_preallocate_segments: true"));
        assert!(resolve("commitlog_preallocate_segments: 3", &ServerArgs::default()).is_err());
    }

    #[test]
    fn a_cgroup_limit_fits_the_defaults_but_not_what_is_set() {
        let limited = |yaml: &str| {
            Settings::from_file_and_flags(
                parse_file(yaml).unwrap(),
                &ServerArgs::default(),
                NodeMemory {
                    cgroup_limit: Some(1536 * MIB),
                    physical: Some(24 << 30),
                },
                None,
            )
            .unwrap()
        };
        let s = limited("");
        assert_eq!(s.memtable_space_bytes, 96 * MIB);
        assert_eq!(s.file_cache_bytes, 192 * MIB);
        assert_eq!(s.key_cache_bytes, 48 * MIB);
        assert_eq!(s.memory_limit_bytes, Some(1536 * MIB));
        let s =
            limited("memtable_heap_space: 512MiB\nfile_cache_size: 1GiB\nkey_cache_size: 200MiB");
        assert_eq!(s.memtable_space_bytes, 512 * MIB);
        assert_eq!(s.file_cache_bytes, 1024 * MIB);
        assert_eq!(s.key_cache_bytes, 200 * MIB);
        // Reads around the page cache: the chunk cache is the only cache
        // and defaults to a quarter of the limit, unless set.
        assert_eq!(
            limited("disk_access_mode: direct").file_cache_bytes,
            384 * MIB
        );
        assert_eq!(
            limited("disk_access_mode: direct\nfile_cache_size: 1GiB").file_cache_bytes,
            1024 * MIB
        );
    }

    #[test]
    fn without_a_limit_the_chunk_cache_is_an_eighth_of_the_machine_unless_set() {
        let on_machine = |yaml: &str| {
            let memory = NodeMemory {
                cgroup_limit: None,
                physical: Some(24 << 30),
            };
            Settings::from_file_and_flags(
                parse_file(yaml).unwrap(),
                &ServerArgs::default(),
                memory,
                None,
            )
            .unwrap()
        };
        let s = on_machine("");
        assert_eq!(s.file_cache_bytes, 3 << 30);
        assert_eq!(
            s.memtable_space_bytes,
            256 * MIB,
            "memtables keep their default"
        );
        assert_eq!(
            s.key_cache_bytes,
            100 * MIB,
            "the key cache keeps its default"
        );
        assert_eq!(
            on_machine("file_cache_size: 64MiB").file_cache_bytes,
            64 * MIB
        );
    }

    #[test]
    fn defaults() {
        let s = resolve("", &ServerArgs::default()).expect("defaults");
        assert_eq!(s.cluster_name, "Test Cluster");
        assert_eq!(s.native_port, 9042);
        assert_eq!(s.admin_port, DEFAULT_ADMIN_PORT);
        assert_eq!(s.rpc_address, IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(s.data_dir, PathBuf::from("./varve-data"));
        assert_eq!(s.num_tokens, 16);
        assert_eq!(s.disk_access_mode, DiskAccessMode::Standard);
        assert_eq!(s.file_cache_bytes, 512 << 20);
        assert_eq!(s.concurrent_reads, 32);
    }

    #[test]
    fn file_cache_size_takes_both_spellings() {
        let cache = |y: &str| resolve(y, &ServerArgs::default()).map(|s| s.file_cache_bytes);
        assert_eq!(cache("file_cache_size: 64MiB").unwrap(), 64 << 20);
        assert_eq!(cache("file_cache_size_in_mb: 32").unwrap(), 32 << 20);
        assert_eq!(cache("file_cache_size: 0").unwrap(), 0);
        assert!(cache("file_cache_size: much").is_err());
    }

    #[test]
    fn concurrent_reads_is_bounded() {
        let reads = |y: &str| resolve(y, &ServerArgs::default()).map(|s| s.concurrent_reads);
        assert_eq!(reads("concurrent_reads: 1").unwrap(), 1);
        assert_eq!(
            reads(&format!("concurrent_reads: {MAX_CONCURRENT_READS}")).unwrap(),
            MAX_CONCURRENT_READS
        );
        assert!(reads(&format!("concurrent_reads: {}", MAX_CONCURRENT_READS + 1)).is_err());
        assert!(reads("concurrent_reads: 0").is_err());
    }

    #[test]
    fn key_cache_size_is_a_size_defaulting_to_cassandras() {
        let size = |v: &str| resolve(&format!("key_cache_size: {v}"), &ServerArgs::default());
        let default = resolve("", &ServerArgs::default()).unwrap();
        assert_eq!(default.key_cache_bytes, 100 << 20);
        assert_eq!(size("16MiB").unwrap().key_cache_bytes, 16 << 20);
        assert_eq!(size("0").unwrap().key_cache_bytes, 0);
        assert!(size("lots").is_err());
    }

    #[test]
    fn sstable_write_disk_access_modes_are_direct_or_standard() {
        use varve_storage::fs::PageCache;
        let writes = |yaml: &str| resolve(yaml, &ServerArgs::default()).map(|s| s.sstable_writes);
        let default = writes("").unwrap();
        assert_eq!(default.flush, PageCache::Bypass);
        assert_eq!(default.compaction, PageCache::Bypass);
        for key in [
            "flush_write_disk_access_mode",
            "compaction_write_disk_access_mode",
        ] {
            let mode = |v: &str| writes(&format!("{key}: {v}"));
            // Each key sets its own kind of write and leaves the other as
            // it was.
            let pick = |w: varve_storage::fs::SstableWrites| {
                if key.starts_with("flush") {
                    (w.flush, w.compaction)
                } else {
                    (w.compaction, w.flush)
                }
            };
            assert_eq!(
                pick(mode("direct").unwrap()),
                (PageCache::Bypass, PageCache::Bypass),
                "{key}"
            );
            assert_eq!(
                pick(mode("standard").unwrap()),
                (PageCache::Keep, PageCache::Bypass),
                "{key}"
            );
            let err = format!("{:#}", mode("mmap").unwrap_err());
            assert!(
                err.contains(key) && err.contains("direct or standard"),
                "{err}"
            );
        }
    }

    #[test]
    fn disk_access_mode_takes_cassandras_values() {
        let mode = |v: &str| resolve(&format!("disk_access_mode: {v}"), &ServerArgs::default());
        assert_eq!(
            mode("auto").unwrap().disk_access_mode,
            DiskAccessMode::Standard
        );
        assert_eq!(mode("mmap").unwrap().disk_access_mode, DiskAccessMode::Mmap);
        assert_eq!(
            mode("mmap_index_only").unwrap().disk_access_mode,
            DiskAccessMode::MmapIndexOnly
        );
        assert_eq!(
            mode("standard").unwrap().disk_access_mode,
            DiskAccessMode::Standard
        );
        assert_eq!(
            mode("direct").unwrap().disk_access_mode,
            DiskAccessMode::Direct
        );
        let err = format!("{:#}", mode("o_direct").unwrap_err());
        assert!(err.contains("disk_access_mode must be"), "{err}");
    }

    #[test]
    fn file_then_flags() {
        let yaml = "cluster_name: Prod\nnative_transport_port: 9500\nrpc_address: 127.0.0.2\n\
                    data_file_directories: [/tmp/a, /tmp/b]\ncommitlog_sync_period: 5s\n\
                    native_transport_max_frame_size: 32MiB\nnative_transport_max_concurrent_connections: 10\n\
                    num_tokens: 8\nhints_directory: /x\n\
                    seed_provider: [{class_name: org.apache.cassandra.locator.SimpleSeedProvider, parameters: [{seeds: '127.0.0.5'}]}]\n";
        let s = resolve(yaml, &ServerArgs::default()).expect("file");
        assert_eq!(s.cluster_name, "Prod");
        assert_eq!(s.native_port, 9500);
        assert_eq!(s.rpc_address.to_string(), "127.0.0.2");
        assert_eq!(s.data_dir, PathBuf::from("/tmp/a"));
        assert_eq!(s.commitlog_sync_period_ms, 5000);
        assert_eq!(s.max_frame_body_bytes, 32 << 20);
        assert_eq!(s.max_connections, 10);
        assert_eq!(s.num_tokens, 8);
        assert_eq!(s.topology.seeds, ["127.0.0.5:7000".parse().unwrap()]);
        let args = ServerArgs {
            port: Some(1),
            cluster_name: Some("Flag".into()),
            ..ServerArgs::default()
        };
        let s = resolve(yaml, &args).expect("flags");
        assert_eq!((s.native_port, s.cluster_name.as_str()), (1, "Flag"));
    }

    #[test]
    fn bad_values_are_errors() {
        let args = ServerArgs::default();
        assert!(resolve("listen_address: nowhere", &args).is_err());
        assert!(resolve("num_tokens: 0", &args).is_err());
        assert!(resolve("commitlog_sync: sometimes", &args).is_err());
        assert!(resolve("native_transport_port: 99999", &args).is_err());
        assert!(resolve("- a list", &args).is_err());
        assert!(resolve("native_transport_max_frame_size: 16XB", &args).is_err());
        assert!(resolve("native_transport_max_frame_size: 2048MiB", &args).is_err());
        assert!(resolve("native_transport_max_frame_size: 2047MiB", &args).is_ok());
    }
}
