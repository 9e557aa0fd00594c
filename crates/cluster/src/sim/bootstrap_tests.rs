//! The seeds of the join simulation (`SimConfig::with_bootstrap`): the
//! fixed set CI runs (two tests, so both cores share them), one seed or
//! many more from the environment, and the determinism check.
//!
//! - `VARVE_SIM_BOOTSTRAP_SEED=S` runs seed S in `replay_bootstrap` and
//!   prints its history, failing or not;
//! - `VARVE_SIM_BOOTSTRAP_SEEDS=N` (and `VARVE_SIM_BOOTSTRAP_FIRST_SEED=K`)
//!   runs seeds K to K + N - 1 in `replay_bootstrap`;
//! - `VARVE_SIM_LOG=FILTER` prints the nodes' logs.
//!
//! A join run is checked for the membership properties too.

use super::checker::report;
use super::harness::{run, SimConfig};
use super::log;
use super::movement_tests::{check_seeds, env_u64, run_and_check};

/// The seeds CI runs: `CI_BOOTSTRAP_SEEDS` of them, from 0.
const CI_BOOTSTRAP_SEEDS: u64 = 6;

/// The CI seeds `seeds`: the checks must have had something to judge
/// (whole sstables too, with `files`).
fn check_ci_seeds(seeds: std::ops::Range<u64>, files: bool) {
    let c = check_seeds(seeds.clone(), SimConfig::with_bootstrap);
    assert!(
        c.writes_ok_while_moving > 0 && c.held > 0 && c.partitions_streamed > 0,
        "the join seeds {seeds:?} left a check without material: {c:?}"
    );
    assert!(
        !files || c.files_streamed > 0,
        "no whole sstable streamed in the join seeds {seeds:?}: {c:?}"
    );
}

#[test]
fn ci_bootstrap_seeds_first_half() {
    check_ci_seeds(0..CI_BOOTSTRAP_SEEDS / 2, false);
}

#[test]
fn ci_bootstrap_seeds_second_half() {
    // Seeds 3 and 4 flush sstables of one partition (their throughput
    // leaves room for them), and stream some whole.
    check_ci_seeds(CI_BOOTSTRAP_SEEDS / 2..CI_BOOTSTRAP_SEEDS, true);
}

/// One seed (`VARVE_SIM_BOOTSTRAP_SEED`, its history printed) or many
/// (`VARVE_SIM_BOOTSTRAP_SEEDS`); nothing without either.
#[test]
fn replay_bootstrap() {
    log::init_from_env();
    if let Some(seed) = env_u64("VARVE_SIM_BOOTSTRAP_SEED") {
        let (run, violations, coverage) = run_and_check(&SimConfig::with_bootstrap(seed));
        println!("{}\n{:?}\n{coverage:?}", run.history, run.layout);
        if !violations.is_empty() {
            panic!("{}", report(&run, &violations));
        }
    }
    if let Some(count) = env_u64("VARVE_SIM_BOOTSTRAP_SEEDS") {
        let first = env_u64("VARVE_SIM_BOOTSTRAP_FIRST_SEED").unwrap_or(0);
        let coverage = check_seeds(first..first + count, SimConfig::with_bootstrap);
        println!("{coverage:?}");
    }
}

/// A join seed gives the same history twice, the streaming, the
/// epochs and the engines' contents included: one seed of each layout
/// (one data centre, two).
///
/// Seed 6 is also the regression of what it found: STREAM_PULL's page
/// and the puller's stores always ran on tokio's blocking pool, whose
/// tasks end at a moment of real time, so on a loaded machine two runs
/// of the seed diverged (now in memory first, as the replica verbs; see
/// `a_page_in_memory_is_read_without_the_blocking_pool`).
#[test]
fn same_bootstrap_seed_same_history() {
    for seed in [6, 3] {
        let config = SimConfig::with_bootstrap(seed);
        let (a, b) = (run(&config), run(&config));
        let joined = a.history.entries.iter().any(|e| {
            matches!(
                e.event,
                super::history::Event::Movement(super::movement::MovementEvent::Streamed { .. })
            )
        });
        assert!(joined, "seed {seed} never joined");
        let two_dcs = matches!(
            a.layout.as_ref().map(|l| &l.replication),
            Some(crate::coordinator::Replication::PerDc(_))
        );
        assert_eq!(two_dcs, seed == 3, "seed {seed}'s layout changed");
        let (a, b) = (a.history.to_string(), b.history.to_string());
        super::data_tests::same_history(seed, &a, &b);
    }
}
