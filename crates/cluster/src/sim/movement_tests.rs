//! The seeds of the movement simulation (`SimConfig::with_movement`:
//! bootstrap, decommission, replace and removenode, with QUORUM writes,
//! LWT and a final repair): the fixed set CI runs (two tests, so both
//! cores share them), one seed or many more from the environment, and
//! the determinism check.
//!
//! - `VARVE_SIM_MOVEMENT_SEED=S` runs seed S in `replay_movement` and
//!   prints its history, failing or not;
//! - `VARVE_SIM_MOVEMENT_SEEDS=N` (and `VARVE_SIM_MOVEMENT_FIRST_SEED=K`)
//!   runs seeds K to K + N - 1 in `replay_movement`;
//! - `VARVE_SIM_MOVEMENT_KIND=decommission` (or `bootstrap`, `replace`,
//!   `removenode`) picks the movement, every kind without it;
//! - `VARVE_SIM_LOG=FILTER` prints the nodes' logs.
//!
//! A movement run is checked for the membership properties too.

use super::checker::{check, report, Violation};
use super::harness::{run, Run, SimConfig};
use super::movement::MovementKind;
use super::movement_checker::{self, MovementCoverage};
use super::{log, panics};

/// The seeds CI runs of each kind: `CI_SEEDS_PER_KIND` of them, from 0.
const CI_SEEDS_PER_KIND: u64 = 2;

/// Every kind, in the order the replay runs them.
pub const KINDS: [MovementKind; 4] = [
    MovementKind::Bootstrap,
    MovementKind::Decommission,
    MovementKind::Replace,
    MovementKind::Removenode,
];

/// The command that replays `seed` of `kind` (`repair`: a movement run,
/// else a join run of `with_bootstrap`).
pub fn replay_line(seed: u64, kind: MovementKind, repair: bool) -> String {
    match repair {
        false => format!(
            "VARVE_SIM_BOOTSTRAP_SEED={seed} cargo test -p varve-cluster --lib \
             sim::bootstrap_tests::replay_bootstrap -- --nocapture"
        ),
        true => format!(
            "VARVE_SIM_MOVEMENT_SEED={seed} VARVE_SIM_MOVEMENT_KIND={kind} cargo test -p \
             varve-cluster --lib sim::movement_tests::replay_movement -- --nocapture"
        ),
    }
}

/// Runs `config`; every violation of the membership and movement checks.
pub(super) fn run_and_check(config: &SimConfig) -> (Run, Vec<Violation>, MovementCoverage) {
    panics::install();
    let before = panics::count();
    let run = run(config);
    let (violations, coverage) = judge(&run, panics::count() - before);
    (run, violations, coverage)
}

/// Every violation of the membership and movement checks in `run`, during
/// which `panics` tasks panicked.
fn judge(run: &Run, panics: u64) -> (Vec<Violation>, MovementCoverage) {
    let (mut violations, _) = check(run, panics);
    let (moved, coverage) = movement_checker::check(run);
    violations.extend(moved);
    (violations, coverage)
}

/// Runs the config of every seed of `seeds`; fails with the first
/// failure's report (its seed and how to replay it) and the list of every
/// failing seed.
pub(super) fn check_seeds(
    seeds: impl Iterator<Item = u64>,
    config: impl Fn(u64) -> SimConfig,
) -> MovementCoverage {
    let mut failed = Vec::new();
    let mut first = None;
    let mut coverage = MovementCoverage::default();
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

/// The CI seeds `seeds` of `kind`.
fn check_ci_seeds(kind: MovementKind, seeds: std::ops::Range<u64>) {
    let c = check_seeds(seeds.clone(), |s| SimConfig::with_movement(s, kind));
    assert_has_material(kind, &seeds, &c);
}

/// The checks must have had something to judge.
fn assert_has_material(kind: MovementKind, seeds: &std::ops::Range<u64>, c: &MovementCoverage) {
    assert!(
        c.writes_ok_while_moving > 0
            && c.held > 0
            && c.ranges_moved > 0
            && c.lwt_applied > 0
            && c.lwt_reads > 0,
        "the {kind} seeds {seeds:?} left a check without material: {c:?}"
    );
}

pub(super) fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    match value.parse() {
        Ok(n) => Some(n),
        Err(_) => panic!("{name}={value} is not a number"),
    }
}

/// The kinds `VARVE_SIM_MOVEMENT_KIND` names (every kind without it).
fn kinds_from_env() -> Vec<MovementKind> {
    let Ok(name) = std::env::var("VARVE_SIM_MOVEMENT_KIND") else {
        return KINDS.to_vec();
    };
    match KINDS.iter().find(|k| k.to_string() == name) {
        Some(kind) => vec![*kind],
        None => panic!("VARVE_SIM_MOVEMENT_KIND={name} is none of {KINDS:?}"),
    }
}

/// The first of the two CI tests (each takes about half of the seeds,
/// so both cores share them): decommission seeds 0 and 1, seed 0 run
/// twice for the determinism check, and bootstrap seed 0 (the join
/// simulation runs more, without LWT: `bootstrap_tests.rs`).
#[test]
fn ci_decommission_and_bootstrap_seeds() {
    same_seed_same_history(MovementKind::Decommission, 0);
    check_ci_seeds(MovementKind::Decommission, 1..CI_SEEDS_PER_KIND);
    check_ci_seeds(MovementKind::Bootstrap, 0..1);
}

/// The second CI test: replace and removenode seeds 0 and 1.
#[test]
fn ci_replace_and_removenode_seeds() {
    check_ci_seeds(MovementKind::Replace, 0..CI_SEEDS_PER_KIND);
    check_ci_seeds(MovementKind::Removenode, 0..CI_SEEDS_PER_KIND);
}

/// Seed `seed` of `kind` gives the same history twice (the streaming, the
/// pushes, the repairs, the LWT rounds and the engines' contents
/// included), and passes the checks.
///
/// Its decommission is also the regression of what it found: the pages a
/// decommission pushes and repair's validation ran on tokio's blocking
/// pool, whose tasks end at a moment of real time (now in memory first,
/// as the replica verbs).
fn same_seed_same_history(kind: MovementKind, seed: u64) {
    panics::install();
    let before = panics::count();
    let config = SimConfig::with_movement(seed, kind);
    let (a, b) = (run(&config), run(&config));
    let (violations, coverage) = judge(&a, panics::count() - before);
    if !violations.is_empty() {
        panic!("{}", report(&a, &violations));
    }
    assert_has_material(kind, &(seed..seed + 1), &coverage);
    let (a, b) = (a.history.to_string(), b.history.to_string());
    super::data_tests::same_history(seed, &a, &b);
}

/// One seed (`VARVE_SIM_MOVEMENT_SEED`, its history printed) or many
/// (`VARVE_SIM_MOVEMENT_SEEDS`), of each kind asked; nothing without
/// either.
#[test]
fn replay_movement() {
    log::init_from_env();
    let kinds = kinds_from_env();
    if let Some(seed) = env_u64("VARVE_SIM_MOVEMENT_SEED") {
        for &kind in &kinds {
            let (run, violations, coverage) = run_and_check(&SimConfig::with_movement(seed, kind));
            println!("{}\n{:?}\n{coverage:?}", run.history, run.layout);
            if !violations.is_empty() {
                panic!("{}", report(&run, &violations));
            }
        }
    }
    if let Some(count) = env_u64("VARVE_SIM_MOVEMENT_SEEDS") {
        let first = env_u64("VARVE_SIM_MOVEMENT_FIRST_SEED").unwrap_or(0);
        for &kind in &kinds {
            let seeds = first..first + count;
            let c = check_seeds(seeds, |s| SimConfig::with_movement(s, kind));
            println!("{kind}: seeds {first}..{}: {c:?}", first + count);
        }
    }
}
