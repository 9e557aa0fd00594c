//! Seed 002's question as a plan: at which write rate does LCS fall
//! behind? The table is on LCS from its creation; after the load, one
//! judged phase per rate of W:D 4:1 (`lcs-<rate>`), in the order given.
//! `--find-rate` steps up [`FIND_RATE_LADDER_FULL`] (scaled by the size's
//! rate, or `--rates` taken as given) and stops at the first rate the
//! judgement says LCS falls behind ([`crate::judge`]); `--rates a,b,c`
//! alone runs every rate, so Varve can run at Cassandra's found rate and
//! above and be judged by the same rule.

use super::scenarios::{
    compaction_mix, fixed, largeblob_segment, lcs, load_step, mixed_concurrency, ops, seconds,
    step, LOAD_ROWS_FULL,
};
use super::{Plan, Scenario, Size, MEASURED_PHASE_FULL};
use crate::error::{BenchError, Result};
use varve_stress::Rate;

/// The rates `--find-rate` steps through at full size, in operations per
/// second over the cluster (W:D 4:1): from a third of seed 002's 1.5k/s to
/// past what two cores take.
pub const FIND_RATE_LADDER_FULL: [u32; 8] = [500, 1000, 1500, 2000, 3000, 4000, 6000, 8000];
/// Most rates one run takes (`--rates`).
pub const RATES_MAX: usize = 16;
/// The highest rate `--rates` accepts, in operations per second.
pub const RATE_MAX_PER_S: u32 = 1_000_000;

/// What `--find-rate` and `--rates` ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateSearch {
    /// `--rates`, as given (operations per second); empty: the ladder.
    pub rates: Vec<u32>,
    /// `--find-rate`: stop at the first rate where LCS falls behind.
    pub stop_when_behind: bool,
}

impl RateSearch {
    /// Checks `--rates` (1 to [`RATES_MAX`] rates, each 1 to
    /// [`RATE_MAX_PER_S`]); with neither flag there is no search.
    pub fn from_flags(rates: &[u32], find_rate: bool) -> Result<Option<RateSearch>> {
        if rates.is_empty() && !find_rate {
            return Ok(None);
        }
        if rates.len() > RATES_MAX {
            return Err(BenchError::config(
                "rates",
                format!("{} rates, more than {RATES_MAX}", rates.len()),
            ));
        }
        if let Some(bad) = rates.iter().find(|&&r| r == 0 || r > RATE_MAX_PER_S) {
            return Err(BenchError::config(
                "rates",
                format!("{bad} is not a rate between 1 and {RATE_MAX_PER_S} per second"),
            ));
        }
        Ok(Some(RateSearch {
            rates: rates.to_vec(),
            stop_when_behind: find_rate,
        }))
    }
}

/// The rates a search runs at `size`: `--rates` as given, else the ladder
/// scaled by the size's rate multiplier (at least 1/s each).
pub fn ladder(search: &RateSearch, size: Size) -> Vec<f64> {
    match search.rates.is_empty() {
        false => search.rates.iter().map(|&r| f64::from(r)).collect(),
        true => FIND_RATE_LADDER_FULL
            .iter()
            .map(|&r| (f64::from(r) * size.scale().rate).round().max(1.0))
            .collect(),
    }
}

/// The compaction scenario as a rate search at `size`.
pub fn build_rates(search: &RateSearch, size: Size) -> Plan {
    let scale = size.scale();
    let rows = ops(LOAD_ROWS_FULL, scale);
    let mut steps = vec![load_step(rows, size)];
    for per_s in ladder(search, size) {
        let mut phase = step(
            &format!("lcs-{per_s}"),
            compaction_mix(),
            fixed(per_s, super::Scale { rate: 1.0, ..scale }),
            seconds(MEASURED_PHASE_FULL.as_secs_f64(), scale),
            mixed_concurrency(size),
        );
        debug_assert!(matches!(phase.spec.rate, Rate::Fixed { .. }));
        phase.leveled = true;
        phase.judged = true;
        steps.push(phase);
    }
    Plan {
        scenario: Scenario::Compaction,
        variant: None,
        size,
        segments: vec![largeblob_segment("main", rows, &lcs(scale), steps)],
        stop_when_behind: search.stop_when_behind,
    }
}
