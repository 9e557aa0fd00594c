//! Tests of the gossip state: versions, exchanges, generations, budgets
//! and limits.

use super::*;
use crate::net::limits::MAX_GOSSIP_PAYLOAD_BYTES;

const BUDGET: usize = MAX_GOSSIP_PAYLOAD_BYTES;

fn host(n: u8) -> HostId {
    HostId([n; 16])
}

fn addr(n: u8) -> SocketAddr {
    ([127, 0, 0, n], 7000).into()
}

fn node(n: u8, generation: i64, dc: &str) -> ClusterState {
    ClusterState::new(
        host(n),
        generation,
        addr(n),
        [
            (GossipKey::DC, dc.to_string()),
            (GossipKey::STATUS, Status::Normal.as_str().to_string()),
        ],
    )
}

/// One whole exchange opened by `a`; returns what each applied.
fn exchange(a: &mut ClusterState, b: &mut ClusterState) -> (Vec<Applied>, Vec<Applied>) {
    let syn = a.digests(0);
    let (requests, deltas) = b.answer_syn(&syn, BUDGET);
    let at_a = deltas.into_iter().map(|d| a.apply(d)).collect();
    let ack = a.answer_requests(&requests, BUDGET);
    let at_b = ack.into_iter().map(|d| b.apply(d)).collect();
    (at_a, at_b)
}

#[test]
fn local_versions_count_every_change_once() {
    let mut a = node(1, 10, "dc1");
    let me = a.node(host(1)).expect("local").clone();
    assert_eq!(me.max_version(), 2);
    assert!(!a.set_local(GossipKey::DC, "dc1".into()), "unchanged");
    a.beat();
    a.beat();
    let me = a.node(host(1)).expect("local");
    assert_eq!((me.max_version(), me.heartbeat()), (4, 4));
    assert!(a.set_local(GossipKey::DC, "dc2".into()));
    assert_eq!(a.node(host(1)).map(|n| n.max_version()), Some(5));
}

#[test]
fn one_exchange_teaches_both_sides() {
    let mut a = node(1, 10, "dc1");
    let mut b = node(2, 20, "dc2");
    a.beat();
    let (at_a, at_b) = exchange(&mut a, &mut b);
    assert_eq!(at_a, vec![Applied::NewGeneration]);
    assert_eq!(at_b, vec![Applied::NewGeneration]);
    assert_eq!(
        b.node(host(1)).and_then(|n| n.get(GossipKey::DC)),
        Some("dc1")
    );
    assert_eq!(
        a.node(host(2)).and_then(|n| n.get(GossipKey::DC)),
        Some("dc2")
    );
    assert_eq!(b.node(host(1)).map(|n| n.heartbeat()), Some(3));
    // Nothing more to say.
    let (at_a, at_b) = exchange(&mut a, &mut b);
    assert!(at_a.is_empty() && at_b.is_empty(), "{at_a:?} {at_b:?}");
    // A heartbeat travels as one entry.
    b.beat();
    let (at_a, _) = exchange(&mut a, &mut b);
    assert_eq!(at_a, vec![Applied::Advanced]);
    assert_eq!(a.node(host(2)).map(|n| n.heartbeat()), Some(3));
}

#[test]
fn state_spreads_through_a_third_node() {
    let mut a = node(1, 10, "dc1");
    let mut b = node(2, 20, "dc1");
    let mut c = node(3, 30, "dc2");
    exchange(&mut c, &mut b);
    exchange(&mut a, &mut b);
    assert_eq!(
        a.node(host(3)).and_then(|n| n.get(GossipKey::DC)),
        Some("dc2")
    );
    assert_eq!(a.peers().count(), 2);
}

#[test]
fn a_newer_generation_replaces_the_old_state() {
    let mut a = node(1, 10, "dc1");
    let mut b = node(2, 20, "dc1");
    b.set_local(GossipKey::LOAD, "123".into());
    exchange(&mut a, &mut b);
    assert_eq!(
        a.node(host(2)).and_then(|n| n.get(GossipKey::LOAD)),
        Some("123")
    );
    // b restarts: generation 21, fewer keys, a lower max version.
    let mut b2 = node(2, 21, "dc3");
    let (at_a, _) = exchange(&mut a, &mut b2);
    assert_eq!(at_a, vec![Applied::NewGeneration]);
    let held = a.node(host(2)).expect("known");
    assert_eq!((held.generation, held.get(GossipKey::LOAD)), (21, None));
    assert_eq!(held.get(GossipKey::DC), Some("dc3"));
    // The old generation is no longer taken.
    let old = b.local_delta(BUDGET);
    assert_eq!(a.apply(old[0].clone()), Applied::Nothing);
    // And the opener learns the newer one from its digest too.
    let mut c = node(3, 30, "dc1");
    exchange(&mut c, &mut a);
    let (at_c, _) = exchange(&mut c, &mut b2);
    assert!(at_c.is_empty(), "{at_c:?}");
    assert_eq!(c.node(host(2)).map(|n| n.generation), Some(21));
}

#[test]
fn no_one_else_speaks_for_this_node() {
    let mut a = node(1, 10, "dc1");
    let mut impostor = node(1, 99, "evil");
    let delta = impostor.local_delta(BUDGET).remove(0);
    assert_eq!(a.apply(delta), Applied::Nothing);
    assert_eq!(
        a.node(host(1)).and_then(|n| n.get(GossipKey::DC)),
        Some("dc1")
    );
    // Nor asks for its own state.
    impostor.beat();
    let (requests, _) = a.answer_syn(&impostor.digests(0), BUDGET);
    assert!(requests.is_empty());
}

#[test]
fn gaps_are_refused() {
    let mut a = node(1, 10, "dc1");
    let b = node(2, 20, "dc1");
    let mut delta = b.local_delta(BUDGET).remove(0);
    delta.from_version = 1;
    delta.entries.remove(0);
    assert_eq!(a.apply(delta), Applied::Gap);
    assert!(a.node(host(2)).is_none());
}

#[test]
fn a_cut_delta_is_a_prefix_and_the_rest_follows() {
    let mut b = node(2, 20, "dc1");
    for i in 0..10 {
        b.set_local(GossipKey(20 + i), "x".repeat(100));
    }
    let header = delta_header_bytes(addr(2));
    // Room for the header and three 100-byte entries only.
    let budget = header + 3 * entry_bytes(100);
    let mut a = node(1, 10, "dc1");
    let mut rounds = 0;
    loop {
        let (_, deltas) = b.answer_syn(&a.digests(0), budget);
        if deltas.is_empty() {
            break;
        }
        for d in deltas {
            assert!(d.entries.windows(2).all(|w| w[0].version < w[1].version));
            assert!(a.apply(d) != Applied::Gap);
        }
        rounds += 1;
        assert!(rounds < 10, "never caught up");
    }
    assert_eq!(a.node(host(2)), b.node(host(2)));
    assert!(rounds >= 4);
}

#[test]
fn a_budget_too_small_for_one_entry_sends_nothing() {
    let b = node(2, 20, "dc1");
    let a = node(1, 10, "dc1");
    let (_, deltas) = b.answer_syn(&a.digests(0), delta_header_bytes(addr(2)));
    assert!(deltas.is_empty());
}

#[test]
fn local_keys_at_n_and_n_plus_one() {
    // Two keys already (dc, status): 62 more make N.
    let mut b = node(2, 20, "dc1");
    for i in 0..MAX_GOSSIP_ENTRIES_PER_NODE as u8 - 2 {
        assert!(b.set_local(GossipKey(100 + i), "v".into()));
    }
    let before = b.node(host(2)).map(|n| n.max_version());
    assert!(!b.set_local(GossipKey(250), "v".into()), "N + 1 is refused");
    assert_eq!(b.node(host(2)).map(|n| n.max_version()), before);
    assert!(
        b.set_local(GossipKey::DC, "dc2".into()),
        "held keys still change"
    );
    let held = b.node(host(2)).expect("local");
    assert_eq!(held.values().count(), MAX_GOSSIP_ENTRIES_PER_NODE);
}

#[test]
fn remote_keys_past_the_limit_are_not_kept_nor_asked_again() {
    // A peer that gossips more keys than this version keeps.
    let a = node(1, 10, "dc1");
    let mut b = node(2, 20, "dc1");
    let mut delta = NodeDelta {
        host: host(3),
        generation: 5,
        address: addr(3),
        from_version: 0,
        entries: Vec::new(),
    };
    for i in 0..=MAX_GOSSIP_ENTRIES_PER_NODE as u64 {
        delta.entries.push(Entry {
            key: GossipKey(100 + i as u8),
            version: i + 1,
            value: "v".into(),
        });
    }
    let count = delta.entries.len() as u64;
    assert_eq!(b.apply(delta), Applied::NewGeneration);
    let held = b.node(host(3)).expect("known");
    assert_eq!(held.values().count(), MAX_GOSSIP_ENTRIES_PER_NODE);
    assert_eq!(held.max_version(), count, "the dropped version is known");
    // Passing it on works, and asks nothing it cannot have.
    let (_, deltas) = b.answer_syn(&a.digests(0), BUDGET);
    assert_eq!(deltas.len(), 2, "{deltas:?}");
    let mut c = a.clone();
    for d in deltas {
        c.apply(d);
    }
    let (_, again) = b.answer_syn(&c.digests(0), BUDGET);
    assert!(again.is_empty(), "{again:?}");
}

#[test]
fn digests_rotate_past_the_message_limit() {
    let mut a = node(1, 10, "dc1");
    for n in 2..=(MAX_GOSSIP_NODES as u16 + 9) {
        let mut h = [0u8; 16];
        h[..2].copy_from_slice(&n.to_be_bytes());
        let other = ClusterState::new(HostId(h), 5, addr(9), [(GossipKey::DC, "d".into())]);
        for d in other.local_delta(BUDGET) {
            a.apply(d);
        }
    }
    let first = a.digests(0);
    assert_eq!(first.len(), MAX_GOSSIP_NODES);
    assert_eq!(first[0].host, host(1));
    let later = a.digests(100);
    assert_eq!(later.len(), MAX_GOSSIP_NODES);
    assert_ne!(first[1].host, later[1].host);
}

/// One exchange opened by `nodes[a]` with `nodes[b]` whose three
/// messages are each lost when `lost` says so.
fn lossy_exchange(nodes: &mut [ClusterState], a: usize, b: usize, lost: [bool; 3]) {
    if a == b || lost[0] {
        return;
    }
    let syn = nodes[a].digests(0);
    let (requests, deltas) = nodes[b].answer_syn(&syn, BUDGET);
    if lost[1] {
        return;
    }
    for d in deltas {
        assert_ne!(nodes[a].apply(d), Applied::Gap);
    }
    let ack = nodes[a].answer_requests(&requests, BUDGET);
    if lost[2] {
        return;
    }
    for d in ack {
        assert_ne!(nodes[b].apply(d), Applied::Gap);
    }
}

proptest::proptest! {
    /// Scuttlebutt converges whatever was lost before: after lossy
    /// exchanges, changes and restarts, two lossless rounds of every pair
    /// leave every node with every other's exact state.
    #[test]
    fn exchanges_converge_despite_lost_messages(
        n in 2usize..6,
        steps in proptest::collection::vec(
            (0usize..6, 0usize..6, proptest::array::uniform3(proptest::bool::ANY), 0u8..4),
            0..60,
        ),
    ) {
        let mut nodes: Vec<ClusterState> =
            (0..n).map(|i| node(i as u8 + 1, 10 + i as i64, "dc1")).collect();
        let mut generations: Vec<i64> = (0..n).map(|i| 10 + i as i64).collect();
        for (a, b, lost, action) in steps {
            let (a, b) = (a % n, b % n);
            match action {
                0 => nodes[a].beat(),
                1 => {
                    nodes[a].set_local(GossipKey::LOAD, format!("{b}"));
                }
                // A restart: a newer generation, knowing nobody.
                2 if a != 0 => {
                    generations[a] += 100;
                    nodes[a] = node(a as u8 + 1, generations[a], "dc2");
                }
                _ => {}
            }
            lossy_exchange(&mut nodes, a, b, lost);
        }
        for _ in 0..2 {
            for a in 0..n {
                for b in 0..n {
                    lossy_exchange(&mut nodes, a, b, [false; 3]);
                }
            }
        }
        for owner in 0..n {
            let host = host(owner as u8 + 1);
            let truth = nodes[owner].node(host).cloned();
            for other in &nodes {
                proptest::prop_assert_eq!(other.node(host).cloned(), truth.clone());
            }
        }
    }
}
