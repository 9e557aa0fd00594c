//! `GET /nodetool/info`: the node's facts in the layout of Cassandra's
//! `nodetool info` (`Key<padding>: value`, keys padded to 23 columns).

use std::fmt::Write;

use varve_query::info::{chunk_cache_text, file_size_text, usage_text};
use varve_query::Processor;

use crate::metrics::Metrics;

/// Width of the key column (as `nodetool info` pads it).
const KEY_WIDTH: usize = 23;

/// The text of `nodetool info`.
pub fn info_text(processor: &Processor, metrics: &Metrics, native_active: bool) -> String {
    let status = processor.node_status();
    let process = varve_metrics::process::sample();
    let mb = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    let mut lines: Vec<(&str, String)> = vec![
        ("ID", status.host_id),
        ("Gossip active", processor.gossip_active().to_string()),
        ("Native Transport active", native_active.to_string()),
        ("Load", file_size_text(status.load_bytes)),
        ("Uptime (seconds)", status.uptime.as_secs().to_string()),
    ];
    if let Some(rss) = process.rss_bytes {
        lines.push(("Resident memory (MB)", format!("{:.2}", mb(rss))));
    }
    if let Some(cpu) = process.cpu_seconds {
        lines.push(("CPU seconds", format!("{cpu:.2}")));
    }
    lines.extend([
        ("Data Center", status.data_center),
        ("Rack", status.rack),
        ("Exceptions", metrics.exceptions().to_string()),
        (
            "Pending compactions",
            status.pending_compactions.to_string(),
        ),
        ("Client connections", metrics.connections_open().to_string()),
        ("Chunk Cache", chunk_cache_text(&status.chunk_cache)),
        (
            "Memtables",
            format!(
                "{} (writes wait past the limit)",
                usage_text(status.memtables.0, status.memtables.1)
            ),
        ),
        (
            "Key Cache",
            usage_text(status.key_cache.0, Some(status.key_cache.1)),
        ),
        (
            "Index Summaries",
            usage_text(status.index_summaries.0, Some(status.index_summaries.1)),
        ),
        (
            "Token",
            format!("(node has {} tokens; see system.local)", status.token_count),
        ),
    ]);
    let mut out = String::new();
    for (key, value) in lines {
        let _ = writeln!(out, "{key:<KEY_WIDTH$}: {value}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_padded_like_nodetool() {
        let node = varve_query::NodeInfo {
            cluster_name: "c".into(),
            listen_address: [127, 0, 0, 1].into(),
            listen_port: 7000,
            rpc_address: [127, 0, 0, 1].into(),
            native_port: 9042,
            data_center: "datacenter1".into(),
            rack: "rack1".into(),
            tokens: vec![1, 2],
            host_id: [0; 16],
            release_version: "5.0.4".into(),
            cql_version: "3.4.7".into(),
            native_protocol_version: "5".into(),
        };
        let p = Processor::new(node);
        let text = info_text(&p, &Metrics::default(), true);
        assert!(text.contains("Native Transport active: true\n"), "{text}");
        assert!(
            text.contains("Load                   : 0 bytes\n"),
            "{text}"
        );
        assert!(text.contains("Uptime (seconds)       : "), "{text}");
        assert!(text.contains("Data Center            : datacenter1\n"));
        assert!(text.contains("Token                  : (node has 2 tokens"));
        assert!(text.lines().all(|l| l.find(": ") == Some(KEY_WIDTH)));
    }
}
