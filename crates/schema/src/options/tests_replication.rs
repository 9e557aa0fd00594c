//! Tests of keyspace replication and keyspace options.

use super::*;
use crate::options::OptionError;

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn create(pairs: &[(&str, &str)]) -> Result<ReplicationParams> {
    ReplicationParams::for_keyspace("ks", &map(pairs), None, &ReplicationContext::default())
}

fn err(pairs: &[(&str, &str)]) -> String {
    create(pairs).unwrap_err().to_string()
}

#[test]
fn simple_strategy() {
    for class in [
        "SimpleStrategy",
        "org.apache.cassandra.locator.SimpleStrategy",
    ] {
        let p = create(&[("class", class), ("replication_factor", "3")]).unwrap();
        assert_eq!(p, ReplicationParams::simple(3));
        assert_eq!(
            p.to_map(),
            map(&[
                ("class", "org.apache.cassandra.locator.SimpleStrategy"),
                ("replication_factor", "3")
            ])
        );
        assert_eq!(
            p.to_cql(),
            "{'class': 'SimpleStrategy', 'replication_factor': '3'}"
        );
    }
    // A missing factor takes default_keyspace_rf (1), as in Cassandra 4.1+.
    assert_eq!(
        create(&[("class", "SimpleStrategy")]).unwrap(),
        ReplicationParams::simple(1)
    );
    // 0 is a valid factor.
    assert!(create(&[("class", "SimpleStrategy"), ("replication_factor", "0")]).is_ok());
    assert_eq!(
        err(&[("class", "SimpleStrategy"), ("replication_factor", "-1")]),
        "Replication factor must be non-negative, found -1"
    );
    assert_eq!(
        err(&[("class", "SimpleStrategy"), ("replication_factor", "x")]),
        "For input string: \"x\""
    );
    assert_eq!(
        err(&[
            ("class", "SimpleStrategy"),
            ("replication_factor", "3"),
            ("dc1", "1")
        ]),
        "Unrecognized strategy option {dc1} passed to SimpleStrategy for keyspace ks"
    );
}

#[test]
fn network_topology_strategy() {
    let p = create(&[("class", "NetworkTopologyStrategy"), ("datacenter1", "3")]).unwrap();
    assert_eq!(
        p,
        ReplicationParams::network_topology(&[("datacenter1", 3)])
    );
    assert_eq!(p.replication_factor("datacenter1"), 3);
    assert_eq!(
        p.to_cql(),
        "{'class': 'NetworkTopologyStrategy', 'datacenter1': '3'}"
    );
    // replication_factor expands to the known datacenters.
    let p = create(&[
        ("class", "NetworkTopologyStrategy"),
        ("replication_factor", "2"),
    ])
    .unwrap();
    assert_eq!(p.options, map(&[("datacenter1", "2")]));
    // No options at all: default_keyspace_rf in every datacenter.
    let p = create(&[("class", "NetworkTopologyStrategy")]).unwrap();
    assert_eq!(p.options, map(&[("datacenter1", "1")]));
    assert_eq!(
        err(&[("class", "NetworkTopologyStrategy"), ("DC1", "3")]),
        "Unrecognized strategy option {DC1} passed to NetworkTopologyStrategy for keyspace ks"
    );
    assert_eq!(
        err(&[("class", "NetworkTopologyStrategy"), ("datacenter1", "0")]),
        "Configuration for at least one datacenter must be present"
    );
}

#[test]
fn transient_replicas_are_refused() {
    assert_eq!(
        err(&[("class", "SimpleStrategy"), ("replication_factor", "3/1")]),
        "Transient replication is not enabled on this node"
    );
    assert_eq!(
        err(&[("class", "NetworkTopologyStrategy"), ("datacenter1", "3/1")]),
        "Transient replication is not enabled on this node"
    );
    assert_eq!(
        err(&[
            ("class", "NetworkTopologyStrategy"),
            ("replication_factor", "3/1")
        ]),
        "Transient replication is not enabled on this node"
    );
    assert_eq!(
        err(&[("class", "SimpleStrategy"), ("replication_factor", "3/1/1")]),
        "Replication factor format is <replicas> or <replicas>/<transient>"
    );
}

#[test]
fn unknown_and_reserved_classes() {
    assert_eq!(
        err(&[("class", "Foo")]),
        "Unable to find replication strategy class 'org.apache.cassandra.locator.Foo'"
    );
    assert_eq!(
        err(&[("class", "EverywhereStrategy")]),
        "Unable to find replication strategy class 'org.apache.cassandra.locator.EverywhereStrategy'"
    );
    assert_eq!(
        err(&[("class", "LocalStrategy")]),
        "Unable to use given strategy class: LocalStrategy is reserved for internal use."
    );
    assert_eq!(
        err(&[("replication_factor", "1")]),
        "Missing replication strategy class"
    );
    assert!(err(&[("class", "OldNetworkTopologyStrategy")])
        .starts_with("The support for the OldNetworkTopologyStrategy has been removed"));
}

#[test]
fn alter_keeps_and_converts_factors() {
    let ctx = ReplicationContext::default();
    let simple = ReplicationParams::simple(3);
    let nts = ReplicationParams::for_keyspace(
        "ks",
        &map(&[("class", "NetworkTopologyStrategy")]),
        Some(&simple),
        &ctx,
    )
    .unwrap();
    assert_eq!(nts.options, map(&[("datacenter1", "3")]));
    let back = ReplicationParams::for_keyspace(
        "ks",
        &map(&[("class", "SimpleStrategy")]),
        Some(&simple),
        &ctx,
    )
    .unwrap();
    assert_eq!(back, simple);
}

#[test]
fn keyspace_options() {
    let ctx = ReplicationContext::default();
    let props = vec![
        (
            "replication".to_string(),
            OptionValue::Map(map(&[
                ("class", "SimpleStrategy"),
                ("replication_factor", "1"),
            ])),
        ),
        ("durable_writes".to_string(), OptionValue::Bool(false)),
    ];
    let ks = KeyspaceOptions::for_create("ks", &props, &ctx).unwrap();
    assert!(!ks.durable_writes);
    assert_eq!(
        ks.to_cql(),
        "WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '1'}  AND durable_writes = false;"
    );
    let altered = ks
        .altered(
            "ks",
            &[(
                "durable_writes".to_string(),
                OptionValue::Text("yes".into()),
            )],
            &ctx,
        )
        .unwrap();
    assert!(altered.durable_writes);
    assert_eq!(altered.replication, ks.replication);
    let e = KeyspaceOptions::for_create(
        "ks",
        &[("durable_writes".to_string(), OptionValue::Bool(true))],
        &ctx,
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "Missing mandatory option 'replication'");
    let e =
        KeyspaceOptions::for_create("ks", &[("foo".to_string(), OptionValue::Bool(true))], &ctx)
            .unwrap_err();
    assert_eq!(e, OptionError::Syntax("Unknown property 'foo'".into()));
    let e = KeyspaceOptions::for_create(
        "ks",
        &[(
            "replication".to_string(),
            OptionValue::Map(map(&[("replication_factor", "1")])),
        )],
        &ctx,
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "Missing replication strategy class");
}
