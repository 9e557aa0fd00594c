//! The seeds of the simulation with data (`SimConfig::with_data`): the
//! fixed set CI runs (two tests, so both cores share them), one seed or
//! many more from the environment, and the determinism check.
//!
//! - `VARVE_SIM_SEED=S` runs seed S in `replay_data` and prints its
//!   history, operations included, failing or not;
//! - `VARVE_SIM_SEEDS=N` (and `VARVE_SIM_FIRST_SEED=K`) runs seeds K to
//!   K + N - 1 in `replay_data`;
//! - `VARVE_SIM_LOG=FILTER` prints the nodes' logs, as in `replay`;
//! - `VARVE_SIM_SCANS=1` makes part of the reads of those seeds range
//!   scans, as `ci_data_seeds_with_scans` does.
//!
//! A run with data is checked for the membership properties too.

use super::checker::{check, report, Violation};
use super::data_checker::{self, DataCoverage};
use super::harness::{run, Run, SimConfig};
use super::{log, panics};
use crate::coordinator::Replication;

/// The seeds CI runs with data: `CI_DATA_SEEDS` of them, from 0 (12 since
/// the bootstrap simulation joined CI, to keep the whole run under 30
/// minutes; seeds 12-15 passed then, and run with `VARVE_SIM_SEEDS`).
const CI_DATA_SEEDS: u64 = 12;

/// Runs `config`; every violation of the membership and data checks.
pub(super) fn run_and_check(config: &SimConfig) -> (Run, Vec<Violation>, DataCoverage) {
    panics::install();
    let before = panics::count();
    let run = run(config);
    let (mut violations, _) = check(&run, panics::count() - before);
    let (data, coverage) = data_checker::check(&run);
    violations.extend(data);
    (run, violations, coverage)
}

/// Runs every seed of `seeds` with data; fails with the first failure's
/// report and the list of every failing seed.
pub(super) fn check_data_seeds(seeds: impl Iterator<Item = u64>) -> DataCoverage {
    check_seeds_of(seeds, SimConfig::with_data)
}

/// The same, over the configuration `config` makes of each seed.
pub(super) fn check_seeds_of(
    seeds: impl Iterator<Item = u64>,
    config: impl Fn(u64) -> SimConfig,
) -> DataCoverage {
    let mut failed = Vec::new();
    let mut first = None;
    let mut coverage = DataCoverage::default();
    for seed in seeds {
        let (run, violations, covered) = run_and_check(&config(seed));
        match violations.first() {
            None => coverage += covered,
            Some(v) => {
                failed.push(format!("seed {seed}: {v}"));
                first.get_or_insert_with(|| report(&run, &violations));
            }
        }
    }
    if let Some(report) = first {
        panic!("{report}\nfailing seeds:\n{}", failed.join("\n"));
    }
    coverage
}

/// The CI seeds `seeds`: the checks must have had something to judge.
fn check_ci_seeds(seeds: std::ops::Range<u64>) {
    let coverage = check_data_seeds(seeds.clone());
    assert!(
        coverage.pairs > 0 && coverage.unavailable > 0 && coverage.timeouts > 0,
        "seeds {seeds:?} left a check without material: {coverage:?}"
    );
}

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    match value.parse() {
        Ok(n) => Some(n),
        Err(_) => panic!("{name}={value} is not a number"),
    }
}

#[test]
fn ci_data_seeds_first_half() {
    check_ci_seeds(0..CI_DATA_SEEDS / 2);
}

#[test]
fn ci_data_seeds_second_half() {
    check_ci_seeds(CI_DATA_SEEDS / 2..CI_DATA_SEEDS);
}

/// The seeds CI runs with scans among the reads: `CI_SCAN_SEEDS` of
/// them, from 0 (the same seeds as `ci_data_seeds_*`, whose reads are in
/// part scans here).
const CI_SCAN_SEEDS: u64 = 4;

/// A data run of `seed` whose reads are in part range scans.
pub(super) fn with_scans(seed: u64) -> SimConfig {
    let mut config = SimConfig::with_data(seed);
    config.scans = true;
    config
}

#[test]
fn ci_data_seeds_with_scans() {
    let coverage = check_seeds_of(0..CI_SCAN_SEEDS, with_scans);
    assert!(
        coverage.scans_ok > 0 && coverage.pairs > 0 && coverage.unavailable > 0,
        "the scans left a check without material: {coverage:?}"
    );
}

/// A seed with scans gives the same history twice.
#[test]
fn same_scan_seed_same_history() {
    let config = with_scans(3);
    let first = run(&config).history.to_string();
    assert!(first.contains("scan k"), "seed 3 planned no scan");
    same_history(3, &first, &run(&config).history.to_string());
}

/// One seed (`VARVE_SIM_SEED`, its history printed) or many
/// (`VARVE_SIM_SEEDS`), with data; nothing without either.
#[test]
fn replay_data() {
    log::init_from_env();
    let config = match env_u64("VARVE_SIM_SCANS") {
        Some(1) => with_scans,
        _ => SimConfig::with_data,
    };
    if let Some(seed) = env_u64("VARVE_SIM_SEED") {
        let (run, violations, coverage) = run_and_check(&config(seed));
        println!("{}\n{coverage:?}", run.history);
        if !violations.is_empty() {
            panic!("{}", report(&run, &violations));
        }
    }
    if let Some(count) = env_u64("VARVE_SIM_SEEDS") {
        let first = env_u64("VARVE_SIM_FIRST_SEED").unwrap_or(0);
        let coverage = check_seeds_of(first..first + count, config);
        println!("{coverage:?}");
    }
}

/// A seed with data gives the same history twice, operations and their
/// answers included: one seed of each layout (one data centre, two).
#[test]
fn same_data_seed_same_history() {
    let mut layouts = Vec::new();
    for seed in 5.. {
        let config = SimConfig::with_data(seed);
        let first = run(&config);
        let two_dcs = first
            .layout
            .as_ref()
            .is_some_and(|l| matches!(l.replication, Replication::PerDc(_)));
        if layouts.contains(&two_dcs) {
            continue;
        }
        layouts.push(two_dcs);
        same_history(
            seed,
            &first.history.to_string(),
            &run(&config).history.to_string(),
        );
        if layouts.len() == 2 {
            break;
        }
    }
}

pub(super) fn same_history(seed: u64, a: &str, b: &str) {
    if a != b {
        let diff = a
            .lines()
            .zip(b.lines())
            .position(|(x, y)| x != y)
            .unwrap_or(a.lines().count().min(b.lines().count()));
        let around = |h: &str| -> String {
            h.lines()
                .skip(diff.saturating_sub(3))
                .take(6)
                .collect::<Vec<_>>()
                .join("\n")
        };
        panic!(
            "seed {seed} with data replayed differently from line {diff}:\nfirst run:\n{}\nsecond run:\n{}",
            around(a),
            around(b)
        );
    }
}
