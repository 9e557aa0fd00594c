//! Tests of `apply`: one per rule, and a property test over random entry
//! sequences against the module's invariants.

use proptest::prelude::*;

use super::*;

pub(crate) fn node(host: u8, tokens: &[i64]) -> NodeRecord {
    NodeRecord {
        host_id: HostId([host; 16]),
        storage_addr: SocketAddr::from(([127, 0, 0, host], 7000)),
        rpc_addr: Some(SocketAddr::from(([127, 0, 0, host], 9042))),
        dc: "dc1".to_string(),
        rack: "rack1".to_string(),
        tokens: tokens.to_vec(),
        state: NodeState::Normal,
    }
}

/// Node `host` at 127.0.0.`host` with `tokens`, in `state` (for other
/// modules' tests of placement and streaming).
pub(crate) fn record(host: u8, tokens: &[i64], state: NodeState) -> NodeRecord {
    NodeRecord {
        state,
        ..node(host, tokens)
    }
}

fn create(host: u8) -> Entry {
    Entry::Command(Command::CreateCluster {
        cluster_name: "Test Cluster".to_string(),
        cluster_id: ClusterId([9; 16]),
        node: node(host, &[host.into()]),
    })
}

fn created() -> ClusterMetadata {
    let mut m = ClusterMetadata::default();
    assert_eq!(apply(&mut m, 1, &create(1)), Outcome::Applied);
    m
}

#[test]
fn create_cluster_applies_once() {
    let mut m = created();
    assert!(m.has_cluster());
    assert_eq!(m.epoch, 1);
    assert_eq!(m.nodes.len(), 1);
    let again = apply(&mut m, 2, &create(2));
    assert!(matches!(again, Outcome::Rejected(_)), "{again:?}");
    assert_eq!(m.nodes.len(), 1);
    assert_eq!(m.epoch, 2);
}

#[test]
fn join_needs_a_cluster_and_the_current_epoch() {
    let mut empty = ClusterMetadata::default();
    let join = |expected_epoch| {
        Entry::Command(Command::Join {
            node: node(2, &[20]),
            expected_epoch,
        })
    };
    assert!(matches!(
        apply(&mut empty, 1, &join(0)),
        Outcome::Rejected(_)
    ));

    let mut m = created();
    assert_eq!(
        apply(&mut m, 2, &join(0)),
        Outcome::Stale { current_epoch: 2 }
    );
    assert_eq!(m.nodes.len(), 1);
    assert_eq!(apply(&mut m, 3, &join(2)), Outcome::Applied);
    assert_eq!(m.nodes.len(), 2);
    assert_eq!(m.token_owner(20), Some(HostId([2; 16])));
}

#[test]
fn a_rejoin_replaces_the_record_but_never_its_tokens() {
    let mut m = created();
    let mut moved = node(1, &[1]);
    moved.storage_addr = SocketAddr::from(([10, 0, 0, 1], 7000));
    let rejoin = Entry::Command(Command::Join {
        node: moved.clone(),
        expected_epoch: 1,
    });
    assert_eq!(apply(&mut m, 2, &rejoin), Outcome::Applied);
    assert_eq!(m.nodes[&moved.host_id], moved);

    let retokened = Entry::Command(Command::Join {
        node: node(1, &[2]),
        expected_epoch: 2,
    });
    assert!(matches!(apply(&mut m, 3, &retokened), Outcome::Rejected(_)));
    assert_eq!(m.nodes[&moved.host_id], moved);

    let taken = Entry::Command(Command::Join {
        node: node(3, &[1]),
        expected_epoch: 3,
    });
    assert!(matches!(apply(&mut m, 4, &taken), Outcome::Rejected(_)));
    let twice = Entry::Command(Command::Join {
        node: node(3, &[5, 5]),
        expected_epoch: 4,
    });
    assert!(matches!(apply(&mut m, 5, &twice), Outcome::Rejected(_)));
    assert_eq!(m.nodes.len(), 1);
}

#[test]
fn schema_change_sets_the_digest() {
    let mut m = created();
    let empty_version = m.schema_version;
    let change = Entry::Command(Command::SchemaChange {
        schema: Bytes::from_static(b"{\"ks\":1}"),
        expected_epoch: 1,
    });
    assert_eq!(apply(&mut m, 2, &change), Outcome::Applied);
    assert_ne!(m.schema_version, empty_version);
    assert_eq!(m.schema_version, SchemaVersion::of(b"{\"ks\":1}"));
    // Version 3 and the IETF variant, as a name-based UUID.
    let text = m.schema_version.to_string();
    assert_eq!(text.len(), 36);
    assert_eq!(&text[14..15], "3");
    assert!(matches!(&text[19..20], "8" | "9" | "a" | "b"), "{text}");
}

#[test]
fn blank_voters_and_set_voters() {
    let mut m = created();
    assert_eq!(apply(&mut m, 2, &Entry::Blank), Outcome::Applied);
    assert_eq!(m.epoch, 2);
    let voters: BTreeSet<HostId> = [HostId([1; 16]), HostId([2; 16])].into();
    assert_eq!(
        apply(&mut m, 3, &Entry::Voters(voters.clone())),
        Outcome::Applied
    );
    assert_eq!(m.voters, voters);
    let direct = Entry::Command(Command::SetVoters {
        voters: BTreeSet::new(),
    });
    assert!(matches!(apply(&mut m, 4, &direct), Outcome::Rejected(_)));
    assert_eq!(m.voters, voters);
}

fn join_as(host: u8, tokens: &[i64], state: NodeState, expected_epoch: u64) -> Entry {
    let mut record = node(host, tokens);
    record.state = state;
    Entry::Command(Command::Join {
        node: record,
        expected_epoch,
    })
}

#[test]
fn one_node_joins_at_a_time_and_never_joins_again() {
    let mut m = created();
    assert_eq!(
        apply(&mut m, 2, &join_as(2, &[20], NodeState::Joining, 1)),
        Outcome::Applied
    );
    assert_eq!(m.nodes[&HostId([2; 16])].state, NodeState::Joining);
    // A second node cannot start moving ranges while the first does...
    let second = apply(&mut m, 3, &join_as(3, &[30], NodeState::Joining, 2));
    assert!(
        matches!(&second, Outcome::Rejected(r) if r.contains("one node moves")),
        "{second:?}"
    );
    assert!(!m.nodes.contains_key(&HostId([3; 16])));
    // ... but may join without moving any (auto_bootstrap: false).
    assert_eq!(
        apply(&mut m, 4, &join_as(3, &[30], NodeState::Normal, 3)),
        Outcome::Applied
    );
    // The joining node ends its bootstrap with its own tokens.
    assert_eq!(
        apply(&mut m, 5, &join_as(2, &[20], NodeState::Normal, 4)),
        Outcome::Applied
    );
    assert_eq!(m.nodes[&HostId([2; 16])].state, NodeState::Normal);
    // A Normal node never goes back to Joining.
    let back = apply(&mut m, 6, &join_as(2, &[20], NodeState::Joining, 5));
    assert!(
        matches!(&back, Outcome::Rejected(r) if r.contains("cannot become")),
        "{back:?}"
    );
    assert_eq!(m.nodes[&HostId([2; 16])].state, NodeState::Normal);
    // Now another node may bootstrap.
    assert_eq!(
        apply(&mut m, 7, &join_as(4, &[40], NodeState::Joining, 6)),
        Outcome::Applied
    );
}

#[test]
fn a_leaving_node_goes_with_leave_and_only_then() {
    let mut m = created();
    assert_eq!(
        apply(&mut m, 2, &join_as(2, &[20], NodeState::Normal, 1)),
        Outcome::Applied
    );
    let leave = |epoch| {
        Entry::Command(Command::Leave {
            host: HostId([2; 16]),
            expected_epoch: epoch,
        })
    };
    // A Normal node cannot just go.
    assert!(matches!(apply(&mut m, 3, &leave(2)), Outcome::Rejected(_)));
    assert_eq!(
        apply(&mut m, 4, &join_as(2, &[20], NodeState::Leaving, 3)),
        Outcome::Applied
    );
    // While it leaves, nobody joins, and it cannot turn back.
    let joining = apply(&mut m, 5, &join_as(3, &[30], NodeState::Joining, 4));
    assert!(
        matches!(&joining, Outcome::Rejected(r) if r.contains("one node moves")),
        "{joining:?}"
    );
    let back = apply(&mut m, 6, &join_as(2, &[20], NodeState::Normal, 5));
    assert!(matches!(back, Outcome::Rejected(_)), "{back:?}");
    // A new node cannot enter Leaving.
    let new_leaving = apply(&mut m, 7, &join_as(4, &[40], NodeState::Leaving, 6));
    assert!(
        matches!(new_leaving, Outcome::Rejected(_)),
        "{new_leaving:?}"
    );
    assert_eq!(apply(&mut m, 8, &leave(7)), Outcome::Applied);
    assert!(!m.nodes.contains_key(&HostId([2; 16])));
    assert!(matches!(apply(&mut m, 9, &leave(8)), Outcome::Rejected(_)));
}

#[test]
fn a_joining_node_with_a_normal_nodes_tokens_replaces_it() {
    let mut m = created();
    assert_eq!(
        apply(&mut m, 2, &join_as(2, &[20, 21], NodeState::Normal, 1)),
        Outcome::Applied
    );
    // Some of its tokens only: a conflict, not a replacement.
    let partial = apply(&mut m, 3, &join_as(3, &[20], NodeState::Joining, 2));
    assert!(matches!(partial, Outcome::Rejected(_)), "{partial:?}");
    // All of them, joining: node 2 is Leaving in the same entry.
    assert_eq!(
        apply(&mut m, 4, &join_as(3, &[20, 21], NodeState::Joining, 3)),
        Outcome::Applied
    );
    assert_eq!(m.nodes[&HostId([2; 16])].state, NodeState::Leaving);
    assert_eq!(m.nodes[&HostId([3; 16])].state, NodeState::Joining);
    // Nobody else moves meanwhile.
    let other = apply(&mut m, 5, &join_as(4, &[40], NodeState::Joining, 4));
    assert!(matches!(other, Outcome::Rejected(_)), "{other:?}");
    // Saying Joining again changes nothing; Normal removes node 2.
    assert_eq!(
        apply(&mut m, 6, &join_as(3, &[20, 21], NodeState::Joining, 5)),
        Outcome::Applied
    );
    assert_eq!(
        apply(&mut m, 7, &join_as(3, &[20, 21], NodeState::Normal, 6)),
        Outcome::Applied
    );
    assert!(!m.nodes.contains_key(&HostId([2; 16])));
    assert_eq!(m.nodes[&HostId([3; 16])].state, NodeState::Normal);
    // A Normal node's tokens asked by a new Normal node: a conflict.
    let normal = apply(&mut m, 8, &join_as(5, &[20, 21], NodeState::Normal, 7));
    assert!(matches!(normal, Outcome::Rejected(_)), "{normal:?}");
}

/// A new node on a member's address is refused (an operator who meant a
/// replacement, or two nodes given one address), saying what to do; a
/// replacement on the dead node's own address is not.
#[test]
fn a_new_node_on_a_members_address_is_refused_unless_it_replaces_that_member() {
    let mut m = created();
    let at_host_1 = |host: u8, tokens: &[i64], state, expected_epoch| {
        let mut record = record(host, tokens, state);
        record.storage_addr = node(1, &[]).storage_addr;
        Entry::Command(Command::Join {
            node: record,
            expected_epoch,
        })
    };
    let refused = apply(&mut m, 2, &at_host_1(2, &[20], NodeState::Joining, 1));
    let Outcome::Rejected(reason) = refused else {
        panic!("{refused:?}");
    };
    assert!(
        reason.contains("replace_address_first_boot: 127.0.0.1"),
        "{reason}"
    );
    assert_eq!(m.nodes.len(), 1);
    // The same address with exactly node 1's tokens: a replacement.
    assert_eq!(
        apply(&mut m, 3, &at_host_1(2, &[1], NodeState::Joining, 2)),
        Outcome::Applied
    );
    assert_eq!(m.nodes[&HostId([1; 16])].state, NodeState::Leaving);
}

fn arb_state() -> impl Strategy<Value = NodeState> {
    prop_oneof![
        Just(NodeState::Normal),
        Just(NodeState::Joining),
        Just(NodeState::Leaving)
    ]
}

fn arb_entry() -> impl Strategy<Value = Entry> {
    prop_oneof![
        Just(Entry::Blank),
        (1u8..4).prop_map(create),
        (1u8..6, 0i64..8, arb_state(), 0u64..12).prop_map(
            |(host, token, state, expected_epoch)| join_as(host, &[token], state, expected_epoch)
        ),
        (0u8..4, 0u64..12).prop_map(|(byte, expected_epoch)| {
            Entry::Command(Command::SchemaChange {
                schema: Bytes::from(vec![byte; usize::from(byte)]),
                expected_epoch,
            })
        }),
        (1u8..6, 0u64..12).prop_map(|(host, expected_epoch)| {
            Entry::Command(Command::Leave {
                host: HostId([host; 16]),
                expected_epoch,
            })
        }),
        proptest::collection::btree_set(1u8..6, 0..4)
            .prop_map(|hosts| Entry::Voters(hosts.into_iter().map(|h| HostId([h; 16])).collect())),
    ]
}

proptest! {
    #[test]
    fn apply_keeps_its_invariants(entries in proptest::collection::vec(arb_entry(), 0..40)) {
        let mut m = ClusterMetadata::default();
        let mut replay = ClusterMetadata::default();
        for (i, entry) in entries.iter().enumerate() {
            let index = i as u64 + 1;
            let before = m.clone();
            let outcome = apply(&mut m, index, entry);
            prop_assert_eq!(apply(&mut replay, index, entry), outcome.clone());
            prop_assert_eq!(m.epoch, index);
            prop_assert_eq!(m.schema_version, SchemaVersion::of(&m.schema));
            if !matches!(outcome, Outcome::Applied) || matches!(entry, Entry::Blank) {
                let mut unchanged = before.clone();
                unchanged.epoch = index;
                prop_assert_eq!(&m, &unchanged);
            }
            if let Outcome::Stale { current_epoch } = outcome {
                prop_assert_eq!(current_epoch, index);
            }
            if let Entry::Command(Command::Join { expected_epoch, .. })
            | Entry::Command(Command::SchemaChange { expected_epoch, .. })
            | Entry::Command(Command::Leave { expected_epoch, .. }) = entry
            {
                if *expected_epoch != before.epoch {
                    let stale = matches!(outcome, Outcome::Stale { .. });
                    prop_assert!(stale, "{:?}", outcome);
                }
            }
            let moving: Vec<&NodeRecord> = m.nodes.values().filter(|n| n.state.is_moving()).collect();
            let pair = |a: &NodeRecord, b: &NodeRecord| {
                a.tokens == b.tokens
                    && matches!(
                        (a.state, b.state),
                        (NodeState::Leaving, NodeState::Joining) | (NodeState::Joining, NodeState::Leaving)
                    )
            };
            prop_assert!(
                moving.len() <= 1 || (moving.len() == 2 && pair(moving[0], moving[1])),
                "{:?} move ranges", moving
            );
            for (id, was) in &before.nodes {
                let now = m.nodes.get(id).map(|n| n.state);
                let allowed = match was.state {
                    NodeState::Normal => [Some(NodeState::Normal), Some(NodeState::Leaving)],
                    NodeState::Joining => [Some(NodeState::Joining), Some(NodeState::Normal)],
                    NodeState::Leaving => [Some(NodeState::Leaving), None],
                };
                prop_assert!(allowed.contains(&now), "{:?} became {:?}", was.state, now);
            }
            let mut seen = BTreeSet::new();
            for token in m
                .nodes
                .values()
                .filter(|n| n.state != NodeState::Leaving || !moving.iter().any(|o| o.host_id != n.host_id && pair(o, n)))
                .flat_map(|n| n.tokens.iter())
            {
                prop_assert!(seen.insert(*token), "token {} owned twice", token);
            }
        }
        prop_assert_eq!(m, replay);
    }
}
