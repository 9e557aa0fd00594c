//! What the server's test binaries share: the facts of the one test node.

use std::net::{IpAddr, Ipv4Addr};
use varve_query::NodeInfo;

/// A single local node, as the tests' processors describe it.
pub fn node() -> NodeInfo {
    NodeInfo {
        cluster_name: "Test Cluster".into(),
        listen_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
        rpc_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
        native_port: 9042,
        data_center: "datacenter1".into(),
        rack: "rack1".into(),
        tokens: vec![0],
        host_id: [7; 16],
        release_version: "5.0.4".into(),
        cql_version: "3.4.7".into(),
        native_protocol_version: "5".into(),
    }
}
