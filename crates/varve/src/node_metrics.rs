//! The node's metrics wiring: one [`Registry`] per node, ticked every
//! second, shared by the server (native transport, `/metrics`) and the
//! query processor (client requests, tables, compaction); and the settings
//! `system_views.settings` shows.

use std::sync::Arc;
use std::time::Duration;

use varve_metrics::{Registry, Ticker};

use crate::config::Settings;

/// How often the registry rotates histogram windows and advances meters.
pub const TICK_INTERVAL: Duration = Duration::from_secs(1);

/// The node's registry and the thread ticking it (stops when dropped).
pub fn start_registry() -> anyhow::Result<(Arc<Registry>, Ticker)> {
    let registry = Arc::new(Registry::new());
    let ticker = registry.spawn_ticker(TICK_INTERVAL)?;
    Ok((registry, ticker))
}

/// The node's settings as (cassandra.yaml name, value) rows.
pub fn settings_rows(s: &Settings) -> Vec<(String, String)> {
    let mib = |bytes: u64| format!("{}MiB", bytes / (1024 * 1024));
    let rows: Vec<(&str, String)> = vec![
        ("cluster_name", s.cluster_name.clone()),
        ("listen_address", s.listen_address.to_string()),
        ("rpc_address", s.rpc_address.to_string()),
        ("native_transport_port", s.native_port.to_string()),
        ("admin_port", s.admin_port.to_string()),
        ("data_file_directories", s.data_dir.display().to_string()),
        ("commitlog_directory", s.commitlog_dir.display().to_string()),
        ("commitlog_sync", s.commitlog_sync.clone()),
        (
            "commitlog_sync_period",
            format!("{}ms", s.commitlog_sync_period_ms),
        ),
        (
            "commitlog_sync_group_window",
            format!("{}ms", s.commitlog_group_window_ms),
        ),
        ("commitlog_segment_size", mib(s.commitlog_segment_bytes)),
        ("memtable_heap_space", mib(s.memtable_space_bytes)),
        (
            "compaction_throughput",
            format!("{}MiB/s", s.compaction_throughput_mib_per_sec),
        ),
        ("concurrent_compactors", s.concurrent_compactors.to_string()),
        (
            "index_summary_capacity",
            mib(s.index_summary_capacity_bytes),
        ),
        ("key_cache_size", mib(s.key_cache_bytes)),
        ("file_cache_size", mib(s.file_cache_bytes)),
        ("concurrent_reads", s.concurrent_reads.to_string()),
        ("disk_access_mode", s.disk_access_mode.name().to_string()),
        (
            "flush_write_disk_access_mode",
            s.sstable_writes.flush.write_mode_name().to_string(),
        ),
        (
            "compaction_write_disk_access_mode",
            s.sstable_writes.compaction.write_mode_name().to_string(),
        ),
        (
            "native_transport_max_frame_size",
            mib(s.max_frame_body_bytes as u64),
        ),
        (
            "native_transport_max_concurrent_connections",
            s.max_connections.to_string(),
        ),
        ("num_tokens", s.num_tokens.to_string()),
        ("auto_snapshot", s.auto_snapshot.to_string()),
    ];
    let mut rows: Vec<(String, String)> =
        rows.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    rows.sort();
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_use_cassandra_names() {
        let s = Settings::resolve(&crate::ServerArgs::default()).expect("defaults");
        let rows = settings_rows(&s);
        let get = |k: &str| rows.iter().find(|r| r.0 == k).map(|r| r.1.clone());
        assert_eq!(get("cluster_name").as_deref(), Some("Test Cluster"));
        assert_eq!(get("native_transport_port").as_deref(), Some("9042"));
        assert!(rows.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn the_registry_ticks() {
        let (registry, ticker) = start_registry().expect("thread");
        registry.counter("x", &[]).inc();
        drop(ticker);
        assert!(registry.render_prometheus().contains("varve_x_total 1"));
    }
}
