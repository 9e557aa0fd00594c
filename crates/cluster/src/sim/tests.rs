//! The simulation's seeds: the fixed set CI runs (split in four tests so
//! both cores share them), one seed or many more from the environment,
//! the determinism check, and the seeds kept because they once failed.
//!
//! - `VARVE_SIM_SEED=S` runs seed S in `replay` and prints its history;
//! - `VARVE_SIM_SEEDS=N` (and `VARVE_SIM_FIRST_SEED=K`, 0 by default)
//!   runs seeds K to K + N - 1 in `replay`;
//! - `VARVE_SIM_LOG=FILTER` (`debug`, `varve_cluster=trace` ...) prints
//!   the nodes' logs in `replay`, stamped with simulated time and host.
//!
//! A failing seed prints itself, the command that replays it, the
//! violations with the history around each, and the nemesis' plan.

use super::checker::{check, report, Coverage};
use super::harness::{run, Run, SimConfig};
use super::{log, panics};

/// The seeds CI runs: `CI_SEEDS` of them, from 0.
const CI_SEEDS: u64 = 32;

/// Runs `config` and checks its history; the report of a failure.
pub(super) fn check_config(config: &SimConfig) -> Result<(Run, Coverage), String> {
    panics::install();
    let before = panics::count();
    let run = run(config);
    let (violations, coverage) = check(&run, panics::count() - before);
    if violations.is_empty() {
        Ok((run, coverage))
    } else {
        Err(report(&run, &violations))
    }
}

/// Runs every seed of `seeds`; fails with the first failure's report and
/// the list of every failing seed. What the bounded checks covered.
pub(super) fn check_seeds(seeds: impl Iterator<Item = u64>) -> Coverage {
    let mut failed = Vec::new();
    let mut first = None;
    let mut coverage = Coverage::default();
    for seed in seeds {
        match check_config(&SimConfig::new(seed)) {
            Ok((_, covered)) => coverage += covered,
            Err(report) => {
                failed.push(seed);
                first.get_or_insert(report);
            }
        }
    }
    if let Some(report) = first {
        panic!("{report}\nfailing seeds: {failed:?}");
    }
    coverage
}

/// The CI seeds `seeds`, whose bounded checks must each have been put to
/// the test at least once.
fn check_ci_seeds(seeds: std::ops::Range<u64>) {
    let coverage = check_seeds(seeds.clone());
    assert!(
        coverage.crashes > 0 && coverage.shutdowns > 0,
        "seeds {seeds:?} never checked a crash or a shutdown: {coverage:?}"
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
fn ci_seeds_first_quarter() {
    check_ci_seeds(0..CI_SEEDS / 4);
}

#[test]
fn ci_seeds_second_quarter() {
    check_ci_seeds(CI_SEEDS / 4..CI_SEEDS / 2);
}

#[test]
fn ci_seeds_third_quarter() {
    check_ci_seeds(CI_SEEDS / 2..CI_SEEDS * 3 / 4);
}

#[test]
fn ci_seeds_fourth_quarter() {
    check_ci_seeds(CI_SEEDS * 3 / 4..CI_SEEDS);
}

/// One seed (`VARVE_SIM_SEED`, its history printed) or many
/// (`VARVE_SIM_SEEDS`); nothing without either.
#[test]
fn replay() {
    log::init_from_env();
    if let Some(seed) = env_u64("VARVE_SIM_SEED") {
        match check_config(&SimConfig::new(seed)) {
            Ok((run, coverage)) => println!("{}\n{coverage:?}", run.history),
            Err(report) => panic!("{report}"),
        }
    }
    if let Some(count) = env_u64("VARVE_SIM_SEEDS") {
        let first = env_u64("VARVE_SIM_FIRST_SEED").unwrap_or(0);
        let coverage = check_seeds(first..first + count);
        println!("{coverage:?}");
    }
}

/// The same seed twice gives the same history, line for line: what
/// catches a hash map's order, an unseeded random choice or an unbiased
/// `select!` deciding something.
#[test]
fn same_seed_same_history() {
    for seed in [3, 1_000_003] {
        let config = SimConfig::new(seed);
        let a = run(&config).history.to_string();
        let b = run(&config).history.to_string();
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
                "seed {seed} replayed differently from line {diff}:\nfirst run:\n{}\nsecond run:\n{}",
                around(&a),
                around(&b)
            );
        }
    }
}
