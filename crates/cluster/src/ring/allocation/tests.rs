//! Tests of token allocation: each step on small rings, the incremental
//! cost against a full recomputation, invariants on random clusters, and
//! clusters grown from 3 to 24 nodes, whose max/min replicated load is
//! measured with the real placement and compared with random tokens.

use std::collections::BTreeSet;

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::super::placement;
use super::*;

const RACKS: [&str; 4] = ["r0", "r1", "r2", "r3"];

fn at(dc: &str, rack: &str) -> Location {
    Location {
        dc: dc.into(),
        rack: rack.into(),
    }
}

/// A host id per test node number, spread over all 16 bytes.
fn host(n: u64) -> HostId {
    let x = u128::from(n).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835);
    HostId(x.to_be_bytes())
}

/// Checks what [`allocate`] promises of its answer.
fn check_tokens(ring: &TokenRing, tokens: &[i64], num_tokens: usize) {
    assert_eq!(tokens.len(), num_tokens, "{tokens:?}");
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "sorted, distinct");
    assert!(!tokens.contains(&i64::MIN));
    let existing: BTreeSet<i64> = ring.tokens().iter().map(|(t, _)| *t).collect();
    assert!(tokens.iter().all(|t| !existing.contains(t)), "new tokens");
}

/// Nodes joined one by one.
#[derive(Default)]
struct Cluster {
    nodes: Vec<(Location, Vec<i64>)>,
}

impl Cluster {
    fn ring(&self) -> TokenRing {
        TokenRing::new(self.nodes.clone()).expect("distinct tokens")
    }

    /// Node `id` joins at `location` with allocated tokens.
    fn join(&mut self, location: Location, id: u64, num_tokens: usize, rf: usize) -> Vec<i64> {
        let ring = self.ring();
        let tokens = allocate(&ring, &location, host(id), num_tokens, rf);
        check_tokens(&ring, &tokens, num_tokens);
        self.nodes.push((location, tokens.clone()));
        tokens
    }
}

/// The replicated load of each node of `dc` (ring order of nodes), by
/// the real placement on the whole ring.
fn replicated_loads(ring: &TokenRing, dc: &str, rf: usize) -> Vec<i128> {
    let mut loads = vec![0i128; ring.nodes().len()];
    let tokens = ring.tokens();
    for (k, &(token, _)) in tokens.iter().enumerate() {
        let start = tokens[(k + tokens.len() - 1) % tokens.len()].0;
        let width = if tokens.len() == 1 {
            RING_WIDTH
        } else {
            distance(start, token)
        };
        for node in placement::network_topology(ring, token, &[(dc, rf)]) {
            loads[node] += width;
        }
    }
    ring.nodes()
        .iter()
        .zip(loads)
        .filter(|(location, _)| location.dc == dc)
        .map(|(_, load)| load)
        .collect()
}

fn max_min_ratio(loads: &[i128]) -> f64 {
    let max = *loads.iter().max().expect("nodes");
    let min = *loads.iter().min().expect("nodes");
    max as f64 / min as f64
}

#[test]
fn the_first_node_of_a_data_centre_spaces_its_tokens_evenly_from_its_host_id() {
    let ring = TokenRing::default();
    let tokens = allocate(&ring, &at("dc1", "r0"), host(1), 16, 3);
    check_tokens(&ring, &tokens, 16);
    let gaps: BTreeSet<i128> = (0..16)
        .map(|k| distance(tokens[k], tokens[(k + 1) % 16]))
        .collect();
    assert_eq!(gaps, BTreeSet::from([RING_WIDTH / 16]));
    assert_eq!(tokens, allocate(&ring, &at("dc1", "r0"), host(1), 16, 3));
    assert_ne!(tokens, allocate(&ring, &at("dc1", "r0"), host(2), 16, 3));
    assert_eq!(allocate(&ring, &at("dc1", "r0"), host(1), 1, 3).len(), 1);
    assert!(allocate(&ring, &at("dc1", "r0"), host(1), 0, 3).is_empty());
}

#[test]
fn up_to_rf_nodes_split_the_widest_ranges() {
    let mut cluster = Cluster::default();
    cluster.join(at("dc1", "r0"), 1, 4, 3);
    cluster.join(at("dc1", "r0"), 2, 4, 3);
    let ring = cluster.ring();
    let widths: BTreeSet<i128> = (0..8)
        .map(|k| distance(ring.tokens()[k].0, ring.tokens()[(k + 1) % 8].0))
        .collect();
    assert_eq!(
        widths,
        BTreeSet::from([RING_WIDTH / 8]),
        "every range halved"
    );
    // The third node halves four of the eight ranges: the first four,
    // since they tie.
    let third = cluster.join(at("dc1", "r0"), 3, 4, 3);
    let expected: Vec<i64> = (0..4)
        .map(|k| wrap(i128::from(ring.tokens()[k].0) - RING_WIDTH / 16))
        .collect::<BTreeSet<i64>>()
        .into_iter()
        .collect();
    assert_eq!(third, expected);
}

#[test]
fn allocation_is_deterministic() {
    let grow = || {
        let mut cluster = Cluster::default();
        for n in 0..7u64 {
            cluster.join(at("dc1", RACKS[n as usize % 2]), n, 8, 3);
        }
        cluster.nodes
    };
    assert_eq!(grow(), grow());
}

#[test]
fn another_data_centre_only_moves_tokens_it_would_collide_with() {
    let mut alone = Cluster::default();
    for n in 0..5 {
        alone.join(at("dc1", "r0"), n, 8, 2);
    }
    // dc2 holds exactly the tokens dc1's sixth node would take.
    let wanted = allocate(&alone.ring(), &at("dc1", "r0"), host(5), 8, 2);
    let mut shared = Cluster {
        nodes: alone.nodes.clone(),
    };
    shared.nodes.push((at("dc2", "r0"), wanted[..4].to_vec()));
    let got = shared.join(at("dc1", "r0"), 5, 8, 2);
    assert_eq!(&got[4..], &wanted[4..], "the others are unchanged");
    for (g, w) in got[..4].iter().zip(&wanted[..4]) {
        assert!((g - w).abs() <= MIDPOINT_SEARCH_MAX as i64, "{g} near {w}");
    }
}

#[test]
fn a_range_too_narrow_to_split_is_not_a_candidate() {
    let taken = BTreeSet::new();
    assert_eq!(free_token_inside(10, 1, &taken), None);
    assert_eq!(free_token_inside(10, 2, &taken), Some(11));
    assert_eq!(free_token_inside(10, 2, &BTreeSet::from([11])), None);
    assert_eq!(free_token_inside(10, 6, &BTreeSet::from([13])), Some(14));
    assert_eq!(
        free_token_inside(i64::MAX - 1, 4, &taken),
        Some(i64::MIN + 1),
        "i64::MIN is skipped"
    );
}

/// Max/min replicated load of one data centre of `nodes` nodes.
struct Ratios {
    nodes: usize,
    /// Over every node.
    all: f64,
    /// The worst over the nodes of one rack.
    rack: f64,
}

/// Grows one data centre to `nodes` nodes, node `k` on rack `k % racks`,
/// each joining with the tokens `choose` gives; the ratios after each
/// join from 3 nodes on.
fn grow(
    nodes: usize,
    racks: usize,
    rf: usize,
    mut choose: impl FnMut(&TokenRing, &Location, u64) -> Vec<i64>,
) -> Vec<Ratios> {
    let mut cluster = Cluster::default();
    let mut ratios = Vec::new();
    for k in 0..nodes {
        let location = at("dc1", RACKS[k % racks]);
        let tokens = choose(&cluster.ring(), &location, k as u64);
        cluster.nodes.push((location, tokens));
        if k + 1 >= 3 {
            let loads = replicated_loads(&cluster.ring(), "dc1", rf);
            let rack = (0..racks)
                .map(|r| {
                    let mine: Vec<i128> = loads.iter().skip(r).step_by(racks).copied().collect();
                    max_min_ratio(&mine)
                })
                .fold(1.0, f64::max);
            ratios.push(Ratios {
                nodes: k + 1,
                all: max_min_ratio(&loads),
                rack,
            });
        }
    }
    ratios
}

fn allocated(num_tokens: usize, rf: usize) -> impl FnMut(&TokenRing, &Location, u64) -> Vec<i64> {
    move |ring, location, id| allocate(ring, location, host(id), num_tokens, rf)
}

fn random(num_tokens: usize, seed: u64) -> impl FnMut(&TokenRing, &Location, u64) -> Vec<i64> {
    let mut rng = StdRng::seed_from_u64(seed);
    move |ring, _, _| {
        let mut tokens = BTreeSet::new();
        while tokens.len() < num_tokens {
            let t: i64 = rng.gen();
            if t != i64::MIN && ring.first_index(t).is_none_or(|i| ring.tokens()[i].0 != t) {
                tokens.insert(t);
            }
        }
        tokens.into_iter().collect()
    }
}

/// The worst of `ratio` over the sizes `counted` keeps.
fn worst(ratios: &[Ratios], ratio: fn(&Ratios) -> f64, counted: fn(usize) -> bool) -> f64 {
    ratios
        .iter()
        .filter(|r| counted(r.nodes))
        .map(ratio)
        .fold(1.0, f64::max)
}

/// The worst ratio of random tokens over a growth, the best of five seeds.
fn random_worst(racks: usize, ratio: fn(&Ratios) -> f64, counted: fn(usize) -> bool) -> f64 {
    (0..5)
        .map(|seed| worst(&grow(24, racks, 3, random(16, seed)), ratio, counted))
        .fold(f64::INFINITY, f64::min)
}

fn print_ratios(label: &str, ratios: &[Ratios]) {
    let line: Vec<String> = ratios
        .iter()
        .map(|r| format!("{}:{:.3}/{:.3}", r.nodes, r.all, r.rack))
        .collect();
    println!("{label} (nodes:all/within a rack): {}", line.join(" "));
}

fn all(r: &Ratios) -> f64 {
    r.all
}

fn within_rack(r: &Ratios) -> f64 {
    r.rack
}

/// Every node spacing its tokens evenly from its own offset, as a node
/// picks them before allocation (`even_tokens` in crates/varve).
fn evenly_spaced(num_tokens: usize) -> impl FnMut(&TokenRing, &Location, u64) -> Vec<i64> {
    move |ring, _, id| {
        let taken = ring.tokens().iter().map(|(t, _)| *t).collect();
        first_node_tokens(host(id), num_tokens, &taken)
    }
}

#[test]
fn growing_to_24_nodes_on_one_rack_keeps_loads_within_the_measured_bound() {
    let ratios = grow(24, 1, 3, allocated(16, 3));
    print_ratios("allocated, 1 rack", &ratios);
    let allocated = worst(&ratios, all, |_| true);
    let random = random_worst(1, all, |_| true);
    let even = worst(&grow(24, 1, 3, evenly_spaced(16)), all, |_| true);
    println!(
        "worst: allocated {allocated:.3}, random (best of 5 seeds) {random:.3}, \
         evenly spaced from each host id {even:.3}"
    );
    assert!(allocated < ONE_RACK_BOUND, "{allocated}");
    assert!(allocated < random);
    assert!(allocated < even);
}

#[test]
fn growing_to_24_nodes_of_16_tokens_takes_well_under_a_second() {
    #[allow(clippy::disallowed_methods)] // the test's own duration
    let started = std::time::Instant::now();
    let mut cluster = Cluster::default();
    for n in 0..24 {
        cluster.join(at("dc1", RACKS[n as usize % 3]), n, 16, 3);
    }
    let elapsed = started.elapsed();
    println!("24 joins of 16 tokens over 3 racks in {elapsed:?}");
    // Generous: a debug build on a busy machine.
    assert!(elapsed < std::time::Duration::from_secs(5), "{elapsed:?}");
}

#[test]
fn growing_to_24_nodes_on_three_racks_keeps_loads_within_the_measured_bound() {
    // With as many racks as replicas each rack holds one copy of the
    // ring, so the nodes of a smaller rack hold more: only sizes with
    // equal racks can be even overall; within a rack, every size can.
    let ratios = grow(24, 3, 3, allocated(16, 3));
    print_ratios("allocated, 3 racks", &ratios);
    let equal_racks = |n: usize| n.is_multiple_of(3);
    let allocated = worst(&ratios, all, equal_racks);
    let random = random_worst(3, all, equal_racks);
    println!(
        "worst with equal racks: allocated {allocated:.3}, random (best of 5 seeds) {random:.3}"
    );
    assert!(allocated < THREE_RACK_BOUND, "{allocated}");
    assert!(allocated < random);
    let allocated = worst(&ratios, within_rack, |_| true);
    let random = random_worst(3, within_rack, |_| true);
    println!("worst within a rack: allocated {allocated:.3}, random (best of 5 seeds) {random:.3}");
    assert!(allocated < THREE_RACK_WITHIN_RACK_BOUND, "{allocated}");
    assert!(allocated < random);
}

/// Bounds a little above what was measured (1.128 on one rack; 1.076
/// with equal racks and 1.073 within a rack on three; cluster.md,
/// section 14, question 6). The allocation is deterministic, so only a
/// change of algorithm moves them.
const ONE_RACK_BOUND: f64 = 1.15;
const THREE_RACK_BOUND: f64 = 1.10;
const THREE_RACK_WITHIN_RACK_BOUND: f64 = 1.10;

fn arb_dc_ring() -> impl Strategy<Value = (DcRing<'static>, usize, usize, usize)> {
    // 1 to 8 existing members with 1 to 5 tokens, a new member with 0 to
    // 3, racks from 4, rf 1 to 5, a range and a share of tokens placed.
    (
        prop::collection::vec((0..4usize, prop::collection::vec(any::<i64>(), 1..6)), 1..9),
        (0..4usize, prop::collection::vec(any::<i64>(), 0..4)),
        1..6usize,
        any::<prop::sample::Index>(),
        1..5usize,
    )
        .prop_filter_map("distinct tokens", |(members, new, rf, index, placed)| {
            let mut owned: Vec<(i64, usize)> = Vec::new();
            let mut racks = Vec::new();
            for (member, (rack, tokens)) in members.iter().chain([&new]).enumerate() {
                racks.push(RACKS[*rack]);
                owned.extend(tokens.iter().map(|t| (*t, member)));
            }
            owned.sort_unstable();
            if owned.windows(2).any(|w| w[0].0 == w[1].0) {
                return None;
            }
            let dc = DcRing {
                members: racks,
                tokens: owned.iter().map(|(t, _)| *t).collect(),
                owners: owned.iter().map(|(_, m)| *m).collect(),
            };
            let i = index.index(dc.tokens.len());
            Some((dc, rf, i, placed))
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The cost computed from the walks a new token changes equals the
    /// one from every walk of the ring with the token in it.
    #[test]
    fn the_incremental_cost_is_the_full_cost((dc, rf, i, placed) in arb_dc_ring()) {
        let taken: BTreeSet<i64> = dc.tokens.iter().copied().collect();
        if let Some(m) = dc.midpoint(i, &taken) {
            let (incremental, full) = greedy::incremental_and_full_cost(&dc, rf, (i, m), (placed, 4));
            prop_assert_eq!(incremental, full);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// On random clusters (1 to 3 data centres, 1 to 4 racks, some nodes
    /// with random tokens) every allocation keeps its promises and is the
    /// same when asked twice.
    #[test]
    fn allocation_keeps_its_promises_on_random_clusters(
        joins in prop::collection::vec((0..3usize, 0..4usize, any::<bool>(), any::<u64>()), 1..7),
        rf in 1..6usize,
        num_tokens in 1..33usize,
    ) {
        let mut cluster = Cluster::default();
        for (n, (dc, rack, random_tokens, seed)) in joins.into_iter().enumerate() {
            let location = at(&format!("dc{dc}"), RACKS[rack]);
            if random_tokens {
                let tokens = random(num_tokens, seed)(&cluster.ring(), &location, 0);
                cluster.nodes.push((location, tokens));
                continue;
            }
            let ring = cluster.ring();
            let again = allocate(&ring, &location, host(n as u64), num_tokens, rf);
            let tokens = cluster.join(location, n as u64, num_tokens, rf);
            prop_assert_eq!(tokens, again);
        }
    }
}
