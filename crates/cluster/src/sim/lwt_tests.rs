//! The seeds of the LWT simulation (`SimConfig::with_lwt`): CI's fixed
//! set, one or many more from the environment (`VARVE_SIM_SEED=S`, or
//! `VARVE_SIM_SEEDS=N` with `VARVE_SIM_FIRST_SEED=K`, in `replay_lwt`),
//! and what each run must satisfy: the membership properties, and a
//! linearizable history of every register's every cell.

use super::checker::{check, report};
use super::harness::{run, Run, SimConfig};
use super::history::{Entry, Event, History};
use super::lwt::{
    check_history, from_portable, portable, LwtEvent, LwtOp, LwtOutcome, CELLS, LWT_KEYS,
};
use super::panics;
use crate::coordinator::CasPath;

/// The seeds CI runs with LWT.
const CI_LWT_SEEDS: u64 = 6;

/// The seeds CI runs with LWT and homes that refuse forwards.
const CI_REFUSING_SEEDS: u64 = 3;

impl SimConfig {
    /// A run with data whose clients run lightweight transactions.
    pub fn with_lwt(seed: u64) -> SimConfig {
        let mut config = SimConfig::with_data(seed);
        config.lwt = true;
        config
    }
}

/// What an LWT run's history holds.
#[derive(Debug, Default, Clone, Copy)]
pub struct LwtCoverage {
    pub applied: u64,
    pub not_applied: u64,
    pub reads: u64,
    pub unknown: u64,
    /// Operations on the LOCAL_SERIAL registers (two-data-centre runs).
    pub local_serial: u64,
    /// Compare-and-sets the register's home ran for their coordinator.
    pub forwarded: u64,
    /// Compare-and-sets the home refused, which their coordinator ran.
    pub home_refused: u64,
    /// Compare-and-sets decided in two rounds, and those whose two-round
    /// try fell back to the full round (docs/design/paxos-two-rounds.md).
    pub two_rounds: u64,
    pub fell_back: u64,
}

fn coverage(run: &Run) -> LwtCoverage {
    let mut c = LwtCoverage::default();
    for e in &run.history.entries {
        if let Event::Lwt(LwtEvent::Invoke { key, .. }) = &e.event {
            c.local_serial += u64::from(*key >= LWT_KEYS);
        }
        if let Event::Lwt(LwtEvent::Done {
            outcome,
            forwarded,
            home_refused,
            path,
            ..
        }) = &e.event
        {
            c.forwarded += u64::from(*forwarded);
            c.home_refused += u64::from(*home_refused);
            c.two_rounds += u64::from(*path == CasPath::TwoRounds);
            c.fell_back += u64::from(*path == CasPath::FellBack);
            match outcome {
                LwtOutcome::Cas(true) => c.applied += 1,
                LwtOutcome::Cas(false) => c.not_applied += 1,
                LwtOutcome::Read(_) => c.reads += 1,
                LwtOutcome::Unknown(_) => c.unknown += 1,
                LwtOutcome::Failed(_) => {}
            }
        }
    }
    c
}

/// Runs the LWT seed; the first violation's report, if any.
fn run_and_check(seed: u64) -> (Run, Result<LwtCoverage, String>) {
    run_config(&SimConfig::with_lwt(seed))
}

/// Runs `config`; the first violation's report, if any.
fn run_config(config: &SimConfig) -> (Run, Result<LwtCoverage, String>) {
    let seed = config.seed;
    panics::install();
    let before = panics::count();
    let run = run(config);
    let (violations, _) = check(&run, panics::count() - before);
    if !violations.is_empty() {
        let text = report(&run, &violations);
        return (run, Err(text));
    }
    if let Err(v) = super::lwt::check_history(&run.history) {
        return (run, Err(format!("seed {seed}: not linearizable: {v}")));
    }
    let c = coverage(&run);
    (run, Ok(c))
}

fn check_seeds(seeds: impl Iterator<Item = u64>) -> LwtCoverage {
    let mut total = LwtCoverage::default();
    for seed in seeds {
        match run_and_check(seed) {
            (_, Ok(c)) => {
                total.applied += c.applied;
                total.not_applied += c.not_applied;
                total.reads += c.reads;
                total.unknown += c.unknown;
                total.local_serial += c.local_serial;
                total.forwarded += c.forwarded;
                total.home_refused += c.home_refused;
                total.two_rounds += c.two_rounds;
                total.fell_back += c.fell_back;
            }
            (_, Err(report)) => panic!("seed {seed} failed:\n{report}"),
        }
    }
    total
}

/// The CI seeds `seeds`: the checker must have had something to judge.
fn check_ci_seeds(seeds: std::ops::Range<u64>) {
    let c = check_seeds(seeds.clone());
    assert!(
        c.applied > 0 && c.not_applied > 0 && c.reads > 0 && c.unknown > 0,
        "the LWT seeds {seeds:?} judged nothing: {c:?}"
    );
    // Contended registers' compare-and-sets went to their home replica.
    assert!(
        c.forwarded > 0,
        "the LWT seeds {seeds:?} forwarded nothing to a home replica: {c:?}"
    );
    // Coordinators that are replicas took the two-round path, and some
    // tries met another replica's refusal and fell back.
    assert!(
        c.two_rounds > 0 && c.fell_back > 0,
        "the LWT seeds {seeds:?} never took the two-round path, or it never fell back: {c:?}"
    );
    // Seeds 0 and 3 run over two data centres, one in each half.
    assert!(
        c.local_serial > 0,
        "the LWT seeds {seeds:?} ran nothing at LOCAL_SERIAL: {c:?}"
    );
}

/// Seed 0 is also the regression of two bugs it found: the acceptor's
/// state written with its ballots' micros as timestamps (two ballots of
/// one micro made equal timestamps, and a promise could be forgotten), and
/// its expiry reckoned on the coordinator's clock instead of the
/// replica's.
#[test]
fn ci_lwt_seeds_first_half() {
    check_ci_seeds(0..CI_LWT_SEEDS / 2);
}

#[test]
fn ci_lwt_seeds_second_half() {
    check_ci_seeds(CI_LWT_SEEDS / 2..CI_LWT_SEEDS);
}

/// Homes that refuse forwarded compare-and-sets (node 0 as a node of an
/// earlier build, without the verb; node 1 declining every one): their
/// coordinators run them, and every register stays linearizable.
#[test]
fn ci_lwt_seeds_with_refusing_homes() {
    let mut refused = 0;
    for seed in 0..CI_REFUSING_SEEDS {
        let mut config = SimConfig::with_lwt(seed);
        config.refusing_homes = true;
        match run_config(&config) {
            (_, Ok(c)) => refused += c.home_refused,
            (_, Err(report)) => panic!("seed {seed} with refusing homes failed:\n{report}"),
        }
    }
    assert!(refused > 0, "no home refused a forwarded compare-and-set");
}

/// With `paxos_two_round_path: false` every statement runs the full
/// round (docs/design/paxos.md, section 5), which the seeds above only
/// reach through fallbacks and the coordinators that are not replicas:
/// the switch holds, and the full round alone stays linearizable.
#[test]
fn ci_lwt_seeds_without_the_two_round_path() {
    for seed in 0..CI_REFUSING_SEEDS {
        let mut config = SimConfig::with_lwt(seed);
        config.two_rounds = false;
        match run_config(&config) {
            (_, Ok(c)) => {
                assert!(c.applied > 0, "seed {seed} applied nothing: {c:?}");
                assert_eq!(
                    (c.two_rounds, c.fell_back),
                    (0, 0),
                    "seed {seed} took the two-round path while it was off"
                );
            }
            (_, Err(report)) => panic!("seed {seed} without the two-round path failed:\n{report}"),
        }
    }
}

#[test]
fn replay_lwt() {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    if let Some(seed) = env("VARVE_SIM_SEED") {
        let (run, result) = run_and_check(seed);
        println!("{}", run.history);
        println!("{result:?}");
        assert!(result.is_ok());
    } else if let Some(n) = env("VARVE_SIM_SEEDS") {
        let first = env("VARVE_SIM_FIRST_SEED").unwrap_or(0);
        let c = check_seeds(first..first + n);
        println!("{c:?}");
    }
}

/// A forwarded compare-and-set comes back as it was sent: its cell, its
/// condition (a value, or the cell absent) and its new value.
#[test]
fn a_forwarded_compare_and_set_keeps_its_cell() {
    for cell in 0..CELLS {
        for expected in [None, Some(-7), Some(i64::MAX)] {
            let bytes = portable(cell, expected, 42);
            assert_eq!(from_portable(&bytes), Ok((cell, expected, 42)));
        }
    }
}

/// The rebuild takes exactly the lengths its flag says, and cells that
/// exist only.
#[test]
fn a_malformed_forwarded_compare_and_set_is_refused() {
    let absent = portable(1, None, 42);
    let present = portable(0, Some(5), 42);
    assert_eq!((absent.len(), present.len()), (10, 18));
    for bytes in [&absent[..], &present[..]] {
        for cut in 0..bytes.len() {
            assert!(from_portable(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.to_vec();
        longer.push(0);
        assert!(from_portable(&longer).is_err());
    }
    let mut unknown_flag = absent.to_vec();
    unknown_flag[1] = 2;
    assert!(from_portable(&unknown_flag).is_err());
    // A flag saying absent with a value's length, and the reverse.
    let mut absent_but_long = present.to_vec();
    absent_but_long[1] = 0;
    assert!(from_portable(&absent_but_long).is_err());
    let mut present_but_short = absent.to_vec();
    present_but_short[1] = 1;
    assert!(from_portable(&present_but_short).is_err());
    let mut no_such_cell = absent.to_vec();
    no_such_cell[0] = CELLS as u8;
    assert!(from_portable(&no_such_cell).is_err());
}

/// A history of register k0 from `ops`: each a client, its call and
/// return times (ms) on one client at a time, what it asked and got.
fn register_history(ops: &[(u64, u64, u64, LwtOp, LwtOutcome)]) -> History {
    let mut entries = Vec::new();
    let ms = std::time::Duration::from_millis;
    for (client, call, ret, op, outcome) in ops.iter().cloned() {
        let invoke = LwtEvent::Invoke { client, key: 0, op };
        let done = LwtEvent::Done {
            client,
            outcome,
            forwarded: false,
            home_refused: false,
            path: CasPath::TwoRounds,
        };
        entries.push(Entry {
            at: ms(call),
            event: Event::Lwt(invoke),
        });
        entries.push(Entry {
            at: ms(ret),
            event: Event::Lwt(done),
        });
    }
    entries.sort_by_key(|e| e.at);
    History { seed: 0, entries }
}

fn cas(cell: usize, expected: Option<i64>, new: i64) -> LwtOp {
    LwtOp::Cas {
        cell,
        expected,
        new,
    }
}

/// Each cell is judged as a register of its own: a compare-and-set on
/// one cell leaves the other as it was, and a decision on a stale cell
/// (what a replica that missed a commit on that cell, but has the
/// latest commit, would decide without the data digest) is a violation
/// of that cell's register.
#[test]
fn each_cell_is_a_register_of_its_own() {
    let both_set = [
        (0, 0, 1, cas(0, None, 1), LwtOutcome::Cas(true)),
        (0, 2, 3, cas(1, None, 2), LwtOutcome::Cas(true)),
        (1, 4, 5, LwtOp::Read, LwtOutcome::Read([Some(1), Some(2)])),
    ];
    assert_eq!(check_history(&register_history(&both_set)), Ok(()));

    let mut cell_lost = both_set.clone();
    cell_lost[2].4 = LwtOutcome::Read([None, Some(2)]);
    let report = check_history(&register_history(&cell_lost)).unwrap_err();
    assert!(report.starts_with("register k0, cell 0,"), "{report}");

    let mut stale_decision = both_set.to_vec();
    stale_decision.push((1, 6, 7, cas(0, Some(1), 3), LwtOutcome::Cas(false)));
    let report = check_history(&register_history(&stale_decision)).unwrap_err();
    assert!(report.starts_with("register k0, cell 0,"), "{report}");

    let mut other_cell = both_set.to_vec();
    other_cell.push((1, 6, 7, cas(1, Some(2), 3), LwtOutcome::Cas(true)));
    other_cell.push((1, 8, 9, LwtOp::Read, LwtOutcome::Read([Some(1), Some(3)])));
    assert_eq!(check_history(&register_history(&other_cell)), Ok(()));
}
