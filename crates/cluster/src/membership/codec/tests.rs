//! Tests of the GOSSIP payload: round trips, sizes, refusals, and every
//! limit at N and N + 1.

use super::*;
use proptest::prelude::*;

fn addr() -> SocketAddr {
    ([127, 0, 0, 1], 7000).into()
}

fn entry(key: u8, version: u64, value: &str) -> Entry {
    Entry {
        key: GossipKey(key),
        version,
        value: value.to_string(),
    }
}

fn delta(entries: Vec<Entry>) -> NodeDelta {
    NodeDelta {
        host: HostId([3; 16]),
        generation: 1_700_000_000,
        address: addr(),
        from_version: 0,
        entries,
    }
}

#[test]
fn each_kind_round_trips() {
    let digest = Digest {
        host: HostId([1; 16]),
        generation: 42,
        max_version: 7,
    };
    let d = delta(vec![entry(2, 1, "dc1"), entry(0, 5, "")]);
    for m in [
        GossipMessage::Syn {
            digests: vec![digest, digest],
        },
        GossipMessage::SynAck {
            requests: vec![digest],
            deltas: vec![d.clone()],
        },
        GossipMessage::Ack { deltas: vec![d] },
        GossipMessage::Ack { deltas: vec![] },
    ] {
        let bytes = m.encode();
        assert_eq!(GossipMessage::decode(&bytes), Ok(m));
    }
}

#[test]
fn encoded_sizes_match_the_size_functions() {
    let d = delta(vec![entry(2, 1, "dc1"), entry(9, 2, "NORMAL")]);
    let m = GossipMessage::Ack {
        deltas: vec![d.clone()],
    };
    let expected = 1 + 1 + delta_header_bytes(addr()) + entry_bytes(3) + entry_bytes(6);
    assert_eq!(m.encode().len(), expected);
    let syn = GossipMessage::Syn {
        digests: vec![
            Digest {
                host: HostId([0; 16]),
                generation: 1,
                max_version: 1
            };
            3
        ],
    };
    assert_eq!(syn.encode().len(), 1 + 1 + 3 * DIGEST_BYTES);
}

#[test]
fn bad_kinds_orders_and_trailing_bytes_are_refused() {
    assert_eq!(
        GossipMessage::decode(&[9, 0]),
        Err(WireError::BadValue("gossip message kind"))
    );
    assert_eq!(GossipMessage::decode(&[]), Err(WireError::Truncated));
    assert_eq!(
        GossipMessage::decode(&[1, 0, 0]),
        Err(WireError::Trailing(1))
    );
    let out_of_order = GossipMessage::Ack {
        deltas: vec![delta(vec![entry(2, 5, "a"), entry(3, 5, "b")])],
    };
    assert_eq!(
        GossipMessage::decode(&out_of_order.encode()),
        Err(WireError::BadValue("gossip entry versions"))
    );
    let mut at_from = delta(vec![entry(2, 5, "a")]);
    at_from.from_version = 5;
    let at_from = GossipMessage::Ack {
        deltas: vec![at_from],
    };
    assert_eq!(
        GossipMessage::decode(&at_from.encode()),
        Err(WireError::BadValue("gossip entry versions"))
    );
    let repeated = GossipMessage::Ack {
        deltas: vec![delta(vec![entry(2, 5, "a"), entry(2, 6, "b")])],
    };
    assert_eq!(
        GossipMessage::decode(&repeated.encode()),
        Err(WireError::BadValue("gossip key repeated"))
    );
    let mut bad_utf8 = GossipMessage::Ack {
        deltas: vec![delta(vec![entry(2, 5, "a")])],
    }
    .encode();
    let last = bad_utf8.len() - 1;
    bad_utf8[last] = 0xff;
    assert_eq!(
        GossipMessage::decode(&bad_utf8),
        Err(WireError::BadValue("gossip value"))
    );
}

/// An ACK of one node whose encoding is exactly `len` bytes.
fn ack_of_len(len: usize) -> Vec<u8> {
    let fixed = 1 + 1 + delta_header_bytes(addr());
    let mut left = len - fixed;
    let mut value_lens = Vec::new();
    while left >= 2 * entry_bytes(400) {
        value_lens.push(400);
        left -= entry_bytes(400);
    }
    // The rest as two values of 194 to 400 bytes: an entry is then
    // 1 + 8 + a 2-byte varint + the value.
    let first = left / 2;
    value_lens.push(first - 11);
    value_lens.push(left - first - 11);
    let entries = value_lens
        .iter()
        .enumerate()
        .map(|(i, n)| entry(i as u8, i as u64 + 1, &"v".repeat(*n)))
        .collect();
    let bytes = GossipMessage::Ack {
        deltas: vec![delta(entries)],
    }
    .encode();
    assert_eq!(bytes.len(), len);
    bytes
}

#[test]
fn payload_limit_at_n_and_n_plus_one() {
    let n = ack_of_len(MAX_GOSSIP_PAYLOAD_BYTES);
    assert!(GossipMessage::decode(&n).is_ok());
    let n1 = ack_of_len(MAX_GOSSIP_PAYLOAD_BYTES + 1);
    assert!(matches!(
        GossipMessage::decode(&n1),
        Err(WireError::TooLong {
            what: "gossip payload",
            ..
        })
    ));
}

#[test]
fn node_count_limit_at_n_and_n_plus_one() {
    let digest = Digest {
        host: HostId([1; 16]),
        generation: 1,
        max_version: 1,
    };
    let n = GossipMessage::Syn {
        digests: vec![digest; MAX_GOSSIP_NODES],
    };
    assert_eq!(GossipMessage::decode(&n.encode()), Ok(n));
    let n1 = GossipMessage::Syn {
        digests: vec![digest; MAX_GOSSIP_NODES + 1],
    };
    assert!(matches!(
        GossipMessage::decode(&n1.encode()),
        Err(WireError::TooLong {
            what: "gossip digests",
            ..
        })
    ));
    let small = delta(vec![]);
    let n = GossipMessage::Ack {
        deltas: vec![small.clone(); MAX_GOSSIP_NODES],
    };
    assert_eq!(GossipMessage::decode(&n.encode()), Ok(n));
    let n1 = GossipMessage::Ack {
        deltas: vec![small; MAX_GOSSIP_NODES + 1],
    };
    assert!(matches!(
        GossipMessage::decode(&n1.encode()),
        Err(WireError::TooLong {
            what: "gossip node deltas",
            ..
        })
    ));
}

#[test]
fn entry_count_limit_at_n_and_n_plus_one() {
    let entries =
        |n: usize| -> Vec<Entry> { (0..n).map(|i| entry(i as u8, i as u64 + 1, "")).collect() };
    let n = GossipMessage::Ack {
        deltas: vec![delta(entries(MAX_GOSSIP_ENTRIES_PER_NODE))],
    };
    assert_eq!(GossipMessage::decode(&n.encode()), Ok(n));
    let n1 = GossipMessage::Ack {
        deltas: vec![delta(entries(MAX_GOSSIP_ENTRIES_PER_NODE + 1))],
    };
    assert!(matches!(
        GossipMessage::decode(&n1.encode()),
        Err(WireError::TooLong {
            what: "gossip entries",
            ..
        })
    ));
}

#[test]
fn value_limit_at_n_and_n_plus_one() {
    let with = |len: usize| GossipMessage::Ack {
        deltas: vec![delta(vec![entry(2, 1, &"x".repeat(len))])],
    };
    let n = with(MAX_GOSSIP_VALUE_BYTES);
    assert_eq!(GossipMessage::decode(&n.encode()), Ok(n));
    assert!(matches!(
        GossipMessage::decode(&with(MAX_GOSSIP_VALUE_BYTES + 1).encode()),
        Err(WireError::TooLong {
            what: "gossip value",
            ..
        })
    ));
}

fn arb_digest() -> impl Strategy<Value = Digest> {
    (any::<[u8; 16]>(), any::<i64>(), any::<u64>()).prop_map(|(h, g, v)| Digest {
        host: HostId(h),
        generation: g,
        max_version: v,
    })
}

fn arb_delta() -> impl Strategy<Value = NodeDelta> {
    (
        any::<[u8; 16]>(),
        any::<i64>(),
        any::<u16>(),
        0u64..1_000,
        prop::collection::btree_map(any::<u8>(), (1u64..50, "[a-zA-Z0-9é]{0,20}"), 0..12),
    )
        .prop_map(|(h, generation, port, from, keys)| {
            // Distinct keys, increasing versions above `from`.
            let mut version = from;
            let entries = keys
                .into_iter()
                .map(|(key, (step, value))| {
                    version += step;
                    entry(key, version, &value)
                })
                .collect();
            NodeDelta {
                host: HostId(h),
                generation,
                address: ([10, 0, 0, 1], port).into(),
                from_version: from,
                entries,
            }
        })
}

fn arb_message() -> impl Strategy<Value = GossipMessage> {
    let digests = || prop::collection::vec(arb_digest(), 0..8);
    let deltas = || prop::collection::vec(arb_delta(), 0..4);
    prop_oneof![
        digests().prop_map(|digests| GossipMessage::Syn { digests }),
        (digests(), deltas())
            .prop_map(|(requests, deltas)| GossipMessage::SynAck { requests, deltas }),
        deltas().prop_map(|deltas| GossipMessage::Ack { deltas }),
    ]
}

proptest! {
    #[test]
    fn messages_round_trip(m in arb_message()) {
        prop_assert_eq!(GossipMessage::decode(&m.encode()), Ok(m));
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..256)) {
        if let Ok(m) = GossipMessage::decode(&data) {
            prop_assert_eq!(GossipMessage::decode(&m.encode()), Ok(m));
        }
    }
}

/// The GOSSIP seeds of the internode_frame fuzz corpus (two bytes of
/// piece sizes, then the payload) are valid messages, so the fuzzer
/// starts from payloads that get past the first checks.
#[test]
fn the_fuzz_corpus_seeds_decode() {
    let seeds: [&[u8]; 3] = [
        include_bytes!("../../../../../fuzz/corpus/internode_frame/gossip_syn"),
        include_bytes!("../../../../../fuzz/corpus/internode_frame/gossip_syn_ack"),
        include_bytes!("../../../../../fuzz/corpus/internode_frame/gossip_ack_shutdown"),
    ];
    for seed in seeds {
        let payload = &seed[2..];
        let message = GossipMessage::decode(payload).expect("a valid GOSSIP payload");
        assert_eq!(message.encode(), payload);
        crate::net::fuzz::fuzz_decode(seed);
    }
}
