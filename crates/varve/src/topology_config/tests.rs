//! Each setting from the file, the flags and the properties file, and the
//! errors at start.

use super::*;

const LISTEN: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2));

fn resolve(yaml: &str, flags: &TopologyFlags, rackdc: Option<&str>) -> anyhow::Result<Topology> {
    let file: TopologyFile = if yaml.trim().is_empty() {
        TopologyFile::default()
    } else {
        serde_yaml::from_str(yaml)?
    };
    Topology::resolve(&file, flags, rackdc, LISTEN)
}

fn addr(s: &str) -> SocketAddr {
    s.parse().expect("address")
}

#[test]
fn defaults_make_a_cluster_of_one_in_datacenter1() {
    let t = resolve("", &TopologyFlags::default(), None).expect("defaults");
    assert_eq!(t.seeds, [addr("127.0.0.2:7000")]);
    assert_eq!(t.storage_port, DEFAULT_STORAGE_PORT);
    assert_eq!(t.snitch, Snitch::Simple);
    assert_eq!((t.dc.as_str(), t.rack.as_str()), (DEFAULT_DC, DEFAULT_RACK));
    assert_eq!(t.phi_convict_threshold, DEFAULT_PHI_CONVICT_THRESHOLD);
    assert_eq!(t.gossip_interval, DEFAULT_GOSSIP_INTERVAL);
    assert_eq!(t.allocation_rf, DEFAULT_ALLOCATION_RF);
    assert!(t.auto_bootstrap);
}

#[test]
fn the_allocation_factor_is_limited_at_n_and_auto_bootstrap_is_read() {
    let rf = |n: usize| {
        resolve(
            &format!("allocate_tokens_for_local_replication_factor: {n}"),
            &TopologyFlags::default(),
            None,
        )
    };
    assert_eq!(rf(1).expect("N").allocation_rf, 1);
    assert_eq!(rf(16).expect("N").allocation_rf, 16);
    assert!(rf(0).is_err());
    assert!(rf(17).is_err());
    let t = resolve("auto_bootstrap: false", &TopologyFlags::default(), None).expect("parses");
    assert!(!t.auto_bootstrap);
}

#[test]
fn stream_throughput_reads_rates_and_bare_mebibytes() {
    let rate = |text: &str| {
        resolve(
            &format!("stream_throughput_outbound: {text}"),
            &TopologyFlags::default(),
            None,
        )
        .map(|t| t.stream_throughput)
    };
    let default = resolve("", &TopologyFlags::default(), None).expect("parses");
    assert_eq!(default.stream_throughput, 24 << 20);
    assert_eq!(rate("8MiB/s").expect("a rate"), 8 << 20);
    assert_eq!(rate("3").expect("bare MiB/s"), 3 << 20);
    assert_eq!(rate("0").expect("no limit"), 0);
    assert!(rate("fast").is_err());
}

#[test]
fn replace_address_first_boot_must_be_an_address() {
    let replace = |text: &str| {
        resolve(
            &format!("replace_address_first_boot: {text}"),
            &TopologyFlags::default(),
            None,
        )
        .map(|t| t.replace_address)
    };
    assert_eq!(
        replace("127.0.0.4").expect("an address"),
        Some([127, 0, 0, 4].into())
    );
    assert!(replace("node4").is_err());
    let default = resolve("", &TopologyFlags::default(), None).expect("parses");
    assert_eq!(default.replace_address, None);
}

#[test]
fn the_gossip_interval_is_limited_at_n() {
    let ms = |n: u64| {
        resolve(
            &format!("gossip_interval_ms: {n}"),
            &TopologyFlags::default(),
            None,
        )
    };
    assert_eq!(ms(10).expect("N").gossip_interval.as_millis(), 10);
    assert_eq!(ms(10_000).expect("N").gossip_interval.as_millis(), 10_000);
    assert!(ms(9).is_err());
    assert!(ms(10_001).is_err());
}

#[test]
fn the_two_round_paxos_path_is_on_unless_turned_off() {
    let two = |yaml: &str| {
        resolve(yaml, &TopologyFlags::default(), None)
            .expect("valid")
            .paxos_two_rounds
    };
    assert!(two(""));
    assert!(two("paxos_two_round_path: true"));
    assert!(!two("paxos_two_round_path: false"));
}

#[test]
fn the_internode_send_delay_is_off_by_default_and_limited_at_n() {
    let delay = |yaml: &str| resolve(yaml, &TopologyFlags::default(), None);
    assert!(delay("").expect("default").send_delay.is_zero());
    let at = |n: u64| delay(&format!("internode_send_delay_ms: {n}"));
    let n = MAX_INTERNODE_SEND_DELAY_MS;
    assert_eq!(at(n).expect("N").send_delay.as_millis(), u128::from(n));
    let err = at(n + 1).expect_err("N + 1").to_string();
    assert!(
        err.contains("internode_send_delay_ms must be at most 1000"),
        "{err}"
    );
}

#[test]
fn cassandra_yaml_seed_provider_and_snitch_are_read() {
    let yaml = r#"
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "127.0.0.1, 127.0.0.3:7001,localhost"
storage_port: 7010
endpoint_snitch: org.apache.cassandra.locator.GossipingPropertyFileSnitch
dc: east
rack: r2
phi_convict_threshold: 12
"#;
    let t = resolve(yaml, &TopologyFlags::default(), None).expect("valid");
    assert_eq!(
        t.seeds,
        [addr("127.0.0.1:7010"), addr("127.0.0.3:7001")],
        "localhost is 127.0.0.1, given once"
    );
    assert_eq!(t.snitch, Snitch::GossipingPropertyFile);
    assert_eq!((t.dc.as_str(), t.rack.as_str()), ("east", "r2"));
    assert_eq!(t.phi_convict_threshold, 12.0);
}

#[test]
fn flags_win_over_the_file_and_the_file_over_the_properties() {
    let flags = TopologyFlags {
        seeds: Some("127.0.0.9".into()),
        storage_port: Some(7100),
        dc: Some("west".into()),
        rack: None,
    };
    let rackdc = "# comment\ndc=props-dc\nrack = props-rack\nprefer_local=true\n";
    let t = resolve("dc: file-dc", &flags, Some(rackdc)).expect("valid");
    assert_eq!(t.seeds, [addr("127.0.0.9:7100")]);
    assert_eq!((t.dc.as_str(), t.rack.as_str()), ("west", "props-rack"));
    let t = resolve("", &TopologyFlags::default(), Some(rackdc)).expect("valid");
    assert_eq!(
        t.snitch,
        Snitch::GossipingPropertyFile,
        "implied by the file"
    );
    assert_eq!(t.dc, "props-dc");
}

#[test]
fn settings_that_would_be_ignored_or_are_wrong_stop_the_start() {
    let err = |yaml: &str| {
        resolve(yaml, &TopologyFlags::default(), None)
            .unwrap_err()
            .to_string()
    };
    assert!(err("endpoint_snitch: SimpleSnitch\ndc: east").contains("GossipingPropertyFileSnitch"));
    assert!(err("endpoint_snitch: Ec2Snitch").contains("not supported"));
    assert!(err("phi_convict_threshold: 4.9").contains("between 5 and 16"));
    assert!(err("phi_convict_threshold: 16.1").contains("between 5 and 16"));
    assert!(resolve("phi_convict_threshold: 5", &TopologyFlags::default(), None).is_ok());
    assert!(resolve("phi_convict_threshold: 16", &TopologyFlags::default(), None).is_ok());
    assert!(err("seed_provider:\n  - class_name: K8sSeedProvider").contains("SimpleSeedProvider"));
    assert!(err("dc: ''").contains("dc must be"));
    assert!(err("rack: 'a,b'").contains("comma"));
    let bad_seed = TopologyFlags {
        seeds: Some("node-1".into()),
        ..TopologyFlags::default()
    };
    assert!(resolve("", &bad_seed, None).is_err());
}

#[test]
fn location_names_are_limited_at_n_bytes() {
    let name = |n: usize| format!("dc: {}", "d".repeat(n));
    let ok = resolve(
        &name(MAX_LOCATION_NAME_BYTES),
        &TopologyFlags::default(),
        None,
    );
    assert!(ok.is_ok());
    let too_long = resolve(
        &name(MAX_LOCATION_NAME_BYTES + 1),
        &TopologyFlags::default(),
        None,
    );
    assert!(too_long.is_err());
}

#[test]
fn seeds_are_limited_at_n() {
    let list = |n: usize| {
        (0..n)
            .map(|i| format!("127.0.{}.{}", i / 250, i % 250 + 1))
            .collect::<Vec<_>>()
            .join(",")
    };
    assert_eq!(
        parse_seeds(&list(MAX_SEEDS), 7000).expect("N").len(),
        MAX_SEEDS
    );
    assert!(parse_seeds(&list(MAX_SEEDS + 1), 7000).is_err());
    assert!(parse_seeds(" , ", 7000).is_err());
}
