//! Placement against a real Cassandra 5.0.4 ring: four nodes in two data
//! centres (`../shared/cassandra/cluster.sh start 4 2`), 16 tokens each,
//! and what `nodetool getendpoints` answered for twelve keys in a
//! SimpleStrategy keyspace (RF 2) and a NetworkTopologyStrategy one
//! (dc1: 2, dc2: 1), recorded by `fixtures/capture_ring.py` (see
//! `fixtures/README.md`). The same ring here must give the same replicas,
//! in the same order.

use serde_json::Value;
use varve_cluster::ring::placement::{network_topology, simple};
use varve_cluster::ring::{Location, TokenRing};
use varve_types::token::murmur3_token;

fn fixture() -> Value {
    let text = include_str!("fixtures/cassandra_5_0_4_ring.json");
    serde_json::from_str(text).expect("fixture is JSON")
}

fn str_of(v: &Value) -> &str {
    v.as_str().expect("a string")
}

#[test]
fn replicas_match_nodetool_getendpoints() {
    let f = fixture();
    let nodes = f["nodes"].as_array().expect("nodes");
    let addresses: Vec<&str> = nodes.iter().map(|n| str_of(&n["address"])).collect();
    let ring = TokenRing::new(
        nodes
            .iter()
            .map(|n| {
                let location = Location {
                    dc: str_of(&n["dc"]).into(),
                    rack: str_of(&n["rack"]).into(),
                };
                let tokens = n["tokens"]
                    .as_array()
                    .expect("tokens")
                    .iter()
                    .map(|t| t.as_i64().expect("a token"))
                    .collect();
                (location, tokens)
            })
            .collect(),
    )
    .expect("a ring");
    let mut checked = 0;
    for e in f["endpoints"].as_array().expect("endpoints") {
        let ks = str_of(&e["keyspace"]);
        let key = str_of(&e["key"]);
        let token = murmur3_token(key.as_bytes());
        let desc = f["keyspaces"]
            .as_array()
            .expect("keyspaces")
            .iter()
            .find(|k| str_of(&k["name"]) == ks)
            .expect("the keyspace is described");
        let replicas = match str_of(&desc["strategy"]) {
            "simple" => simple(&ring, token, desc["rf"].as_u64().expect("rf") as usize),
            _ => {
                let factors: Vec<(&str, usize)> = desc["factors"]
                    .as_object()
                    .expect("factors")
                    .iter()
                    .map(|(dc, rf)| (dc.as_str(), rf.as_u64().expect("rf") as usize))
                    .collect();
                network_topology(&ring, token, &factors)
            }
        };
        let ours: Vec<&str> = replicas.iter().map(|n| addresses[*n]).collect();
        let theirs: Vec<&str> = e["replicas"]
            .as_array()
            .expect("replicas")
            .iter()
            .map(str_of)
            .collect();
        assert_eq!(ours, theirs, "{ks} {key} (token {token})");
        checked += 1;
    }
    assert_eq!(checked, 24);
}
