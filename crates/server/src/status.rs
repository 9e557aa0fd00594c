//! `nodetool status`: every node of the cluster, this one and its peers,
//! grouped by data centre, as Cassandra's nodetool prints them (state,
//! address, load, tokens, ownership, host id, rack).
//!
//! Ownership is `?` until the ring comes from the cluster's metadata (it
//! needs every node's tokens and the keyspace's replication); a peer's
//! load is what it last gossiped (`?` before it did).

use std::collections::BTreeMap;

use varve_query::cluster_view::PeerInfo;
use varve_query::info::{file_size_text, uuid_text};
use varve_query::Processor;

/// One line of the table.
struct Line {
    state: &'static str,
    address: String,
    load: String,
    tokens: usize,
    host_id: String,
    rack: String,
}

/// The text of `nodetool status` on this node.
pub fn status_text(processor: &Processor) -> String {
    let node = processor.node();
    let status = processor.node_status();
    let mut by_dc: BTreeMap<String, Vec<Line>> = BTreeMap::new();
    by_dc
        .entry(node.data_center.clone())
        .or_default()
        .push(Line {
            state: "UN",
            address: node.listen_address.to_string(),
            load: file_size_text(status.load_bytes),
            tokens: processor.tokens().len(),
            host_id: status.host_id,
            rack: node.rack.clone(),
        });
    for peer in processor.cluster_view().peers() {
        by_dc
            .entry(peer.data_center.clone())
            .or_default()
            .push(peer_line(&peer));
    }
    let mut out = String::new();
    for (dc, mut lines) in by_dc {
        lines.sort_by(|a, b| a.address.cmp(&b.address));
        let title = format!("Datacenter: {dc}");
        out.push_str(&format!("{title}\n{}\n", "=".repeat(title.len())));
        out.push_str("Status=Up/Down\n|/ State=Normal/Leaving/Joining/Moving\n");
        out.push_str(&format!(
            "--  {:<15} {:<10} {:<7} {:<6} {:<36}  Rack\n",
            "Address", "Load", "Tokens", "Owns", "Host ID"
        ));
        for l in lines {
            out.push_str(&format!(
                "{}  {:<15} {:<10} {:<7} {:<6} {:<36}  {}\n",
                l.state, l.address, l.load, l.tokens, "?", l.host_id, l.rack
            ));
        }
        out.push('\n');
    }
    out
}

fn peer_line(peer: &PeerInfo) -> Line {
    Line {
        state: match (peer.up, peer.joining) {
            (true, false) => "UN",
            (false, false) => "DN",
            (true, true) => "UJ",
            (false, true) => "DJ",
        },
        address: peer.listen_address.to_string(),
        load: peer.load_bytes.map_or("?".to_string(), file_size_text),
        tokens: peer.tokens.len(),
        host_id: uuid_text(&peer.host_id),
        rack: peer.rack.clone(),
    }
}

/// The text of `nodetool describecluster` on this node: the cluster's
/// name, snitch and partitioner, and which nodes hold which schema
/// version (one version when the schema agrees; peers that are down are
/// listed as UNREACHABLE, as Cassandra does).
pub fn describe_cluster_text(processor: &Processor) -> String {
    let node = processor.node();
    let mut versions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    versions
        .entry(uuid_text(&processor.schema().version))
        .or_default()
        .push(node.listen_address.to_string());
    for peer in processor.cluster_view().peers() {
        let key = match peer.up {
            true => uuid_text(&peer.schema_version),
            false => "UNREACHABLE".to_string(),
        };
        versions
            .entry(key)
            .or_default()
            .push(peer.listen_address.to_string());
    }
    let mut out = format!(
        "Cluster Information:\n\tName: {}\n\tSnitch: org.apache.cassandra.locator.GossipingPropertyFileSnitch\n\tDynamicEndPointSnitch: disabled\n\tPartitioner: org.apache.cassandra.dht.Murmur3Partitioner\n\tSchema versions:\n",
        node.cluster_name
    );
    for (version, mut addresses) in versions {
        addresses.sort();
        out.push_str(&format!("\t\t{version}: [{}]\n\n", addresses.join(", ")));
    }
    out
}

/// One token of the ring: the token, its node's address, rack, UP or not,
/// and load.
type RingEntry = (i64, String, String, bool, String);

/// The text of `nodetool ring` on this node: every token of every node,
/// by data centre in token order, each with its node's address, rack,
/// state and load (ownership `?`, as in `status`).
pub fn ring_text(processor: &Processor) -> String {
    let node = processor.node();
    let status = processor.node_status();
    let mut by_dc: BTreeMap<String, Vec<RingEntry>> = BTreeMap::new();
    let own_load = file_size_text(status.load_bytes);
    for t in processor.tokens().iter() {
        by_dc.entry(node.data_center.clone()).or_default().push((
            *t,
            node.listen_address.to_string(),
            node.rack.clone(),
            true,
            own_load.clone(),
        ));
    }
    for peer in processor.cluster_view().peers() {
        let load = peer.load_bytes.map_or("?".to_string(), file_size_text);
        for t in &peer.tokens {
            by_dc.entry(peer.data_center.clone()).or_default().push((
                *t,
                peer.listen_address.to_string(),
                peer.rack.clone(),
                peer.up,
                load.clone(),
            ));
        }
    }
    let mut out = String::new();
    for (dc, mut tokens) in by_dc {
        tokens.sort_by_key(|t| t.0);
        out.push_str(&format!("\nDatacenter: {dc}\n==========\n"));
        out.push_str(&format!(
            "{:<15} {:<8} {:<7} {:<7} {:<10} {:<6} Token\n",
            "Address", "Rack", "Status", "State", "Load", "Owns"
        ));
        if let Some(last) = tokens.last() {
            out.push_str(&format!("{:>64}\n", last.0));
        }
        for (token, address, rack, up, load) in tokens {
            out.push_str(&format!(
                "{:<15} {:<8} {:<7} {:<7} {:<10} {:<6} {}\n",
                address,
                rack,
                if up { "Up" } else { "Down" },
                "Normal",
                load,
                "?",
                token
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use varve_query::cluster_view::ClusterView;
    use varve_query::NodeInfo;

    struct Peers;

    impl ClusterView for Peers {
        fn peers(&self) -> Vec<PeerInfo> {
            [(2, "datacenter1", true), (3, "dc2", false)]
                .into_iter()
                .map(|(i, dc, up)| PeerInfo {
                    listen_address: [127, 0, 0, i].into(),
                    listen_port: 7000,
                    rpc_address: [127, 0, 0, i].into(),
                    native_port: 9042,
                    data_center: dc.into(),
                    rack: "rack1".into(),
                    host_id: [i; 16],
                    release_version: "5.0.4".into(),
                    schema_version: [0; 16],
                    tokens: vec![1, 2, 3],
                    up,
                    load_bytes: Some(2048),
                    joining: false,
                })
                .collect()
        }
    }

    #[test]
    fn every_node_is_listed_under_its_data_centre_up_or_down() {
        let p = Processor::new(NodeInfo::single_local());
        p.set_cluster_view(Arc::new(Peers));
        let text = status_text(&p);
        let dc1 = text.find("Datacenter: datacenter1").expect("dc1");
        let dc2 = text.find("Datacenter: dc2").expect("dc2");
        let line = |addr: &str| {
            text.lines()
                .find(|l| l.contains(&format!(" {addr} ")))
                .unwrap_or_else(|| panic!("{addr} in {text}"))
                .to_string()
        };
        assert!(line("127.0.0.1").starts_with("UN"), "{text}");
        assert!(line("127.0.0.2").starts_with("UN"), "{text}");
        assert!(line("127.0.0.3").starts_with("DN"), "{text}");
        let at = |addr: &str| text.find(&format!(" {addr} ")).expect("listed");
        assert!(dc1 < at("127.0.0.2") && at("127.0.0.2") < dc2 && dc2 < at("127.0.0.3"));
        assert!(line("127.0.0.3").contains("03030303-0303-0303-0303-030303030303"));
        assert!(line("127.0.0.2").contains("2.00 KiB"), "{text}");
    }

    #[test]
    fn the_ring_lists_every_token_in_order_by_data_centre() {
        let p = Processor::new(NodeInfo::single_local());
        p.set_cluster_view(Arc::new(Peers));
        let text = ring_text(&p);
        let own = p.tokens().len();
        let token_lines = |dc: &str| -> Vec<i64> {
            let block = text
                .split(&format!("Datacenter: {dc}\n"))
                .nth(1)
                .expect("dc listed");
            let block = block.split("\nDatacenter:").next().unwrap_or(block);
            block
                .lines()
                .filter(|l| l.starts_with("127."))
                .map(|l| l.split_whitespace().last().unwrap().parse().unwrap())
                .collect()
        };
        let dc1 = token_lines("datacenter1");
        assert_eq!(dc1.len(), own + 3, "{text}");
        assert!(
            dc1.windows(2).all(|w| w[0] <= w[1]),
            "in token order: {text}"
        );
        assert_eq!(token_lines("dc2"), vec![1, 2, 3]);
        assert!(text
            .lines()
            .any(|l| l.starts_with("127.0.0.3") && l.contains(" Down ")));
    }

    #[test]
    fn describecluster_groups_nodes_by_schema_version_and_marks_the_unreachable() {
        let p = Processor::new(NodeInfo::single_local());
        p.set_cluster_view(Arc::new(Peers));
        let text = describe_cluster_text(&p);
        assert!(text.contains("Schema versions:"), "{text}");
        assert!(text.contains("UNREACHABLE: [127.0.0.3]"), "{text}");
        assert!(
            text.contains("00000000-0000-0000-0000-000000000000: [127.0.0.2]"),
            "{text}"
        );
    }
}
