//! Whether compaction keeps up during a phase, judged from server.csv's
//! series: seed 002's "LCS falls behind" means pending compactions and
//! unleveled sstables keep growing. Pure functions over hand-checkable
//! numbers, so the rule is tested apart from any server.
//!
//! The rule, per series, over the phase's second half (the first half is
//! left to the change of rate settling):
//! 1. fewer than [`POINTS_MIN`] samples with a value: unknown;
//! 2. fit a least-squares line; `growth` = its slope times the window's
//!    length (what the line rises over the window), `noise` = the standard
//!    deviation of the samples around it;
//! 3. the series grows iff `growth >= GROWTH_MIN` and `growth >= noise`:
//!    it rises by at least two tasks (sstables) and by more than its own
//!    scatter, so a sawtooth of compactions starting and ending is not
//!    growth, nor is a level that merely stays high.
//!
//! Compaction falls behind iff every series with a trend grows (pending
//! alone where there are no levels: not on LCS); it keeps up iff some
//! series has a trend and one of them does not grow; unknown otherwise.

use crate::sampler::ServerRow;

/// Fewest samples a series needs in the window to have a trend.
pub const POINTS_MIN: usize = 8;
/// The least rise over the window that counts as growth (tasks, sstables).
pub const GROWTH_MIN: f64 = 2.0;
/// The verdicts' labels.
pub const FALLS_BEHIND: &str = "falls behind";
pub const KEEPS_UP: &str = "keeps up";
pub const UNKNOWN: &str = "unknown";

/// A least-squares line through `(t, v)` points.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    /// Per second.
    pub slope: f64,
    /// Standard deviation of the points around the line.
    pub noise: f64,
}

/// The least-squares line through `points`; `None` with fewer than two
/// points or when every `t` is the same.
pub fn fit(points: &[(f64, f64)]) -> Option<Fit> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mean_t = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_v = points.iter().map(|p| p.1).sum::<f64>() / n;
    let (mut stt, mut stv) = (0.0, 0.0);
    for &(t, v) in points {
        stt += (t - mean_t) * (t - mean_t);
        stv += (t - mean_t) * (v - mean_v);
    }
    if stt <= 0.0 || !stt.is_finite() {
        return None;
    }
    let slope = stv / stt;
    let squares: f64 = points
        .iter()
        .map(|&(t, v)| {
            let off = v - (mean_v + slope * (t - mean_t));
            off * off
        })
        .sum();
    Some(Fit {
        slope,
        noise: (squares / n).sqrt(),
    })
}

/// One series' trend over the window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Trend {
    /// Too few samples (how many there were).
    Unknown { points: usize },
    /// Rises by `growth` over the window, more than the rule's floors.
    Grows { growth: f64, noise: f64 },
    /// Flat, falling, or rising less than the floors.
    Holds { growth: f64, noise: f64 },
}

impl Trend {
    /// The fitted rise over the window, when known.
    pub fn growth(self) -> Option<f64> {
        match self {
            Trend::Unknown { .. } => None,
            Trend::Grows { growth, .. } | Trend::Holds { growth, .. } => Some(growth),
        }
    }
}

/// The trend of `points` (samples inside the window, in time order).
pub fn trend(points: &[(f64, f64)]) -> Trend {
    let Some(line) = (points.len() >= POINTS_MIN).then(|| fit(points)).flatten() else {
        return Trend::Unknown {
            points: points.len(),
        };
    };
    let span = points[points.len() - 1].0 - points[0].0;
    let growth = line.slope * span;
    match growth >= GROWTH_MIN && growth >= line.noise {
        true => Trend::Grows {
            growth,
            noise: line.noise,
        },
        false => Trend::Holds {
            growth,
            noise: line.noise,
        },
    }
}

/// The judgement of one phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    pub pending: Trend,
    pub unleveled: Trend,
    /// `Some(true)`: falls behind; `Some(false)`: keeps up; `None`: unknown.
    pub behind: Option<bool>,
}

impl Verdict {
    /// `falls behind`, `keeps up` or `unknown`.
    pub fn label(&self) -> &'static str {
        match self.behind {
            Some(true) => FALLS_BEHIND,
            Some(false) => KEEPS_UP,
            None => UNKNOWN,
        }
    }
}

/// Judges the phase from `start_t` to `end_t` on the rows' clock.
pub fn judge(rows: &[ServerRow], start_t: f64, end_t: f64) -> Verdict {
    let from = start_t + (end_t - start_t) / 2.0;
    let series = |get: fn(&ServerRow) -> Option<f64>| -> Vec<(f64, f64)> {
        rows.iter()
            .filter(|r| r.t >= from && r.t <= end_t)
            .filter_map(|r| get(r).filter(|v| v.is_finite()).map(|v| (r.t, v)))
            .collect()
    };
    let pending = trend(&series(|r| r.pending_compactions));
    let unleveled = trend(&series(|r| r.unleveled_sstables));
    let known: Vec<Trend> = [pending, unleveled]
        .into_iter()
        .filter(|t| !matches!(t, Trend::Unknown { .. }))
        .collect();
    let behind = match known.is_empty() {
        true => None,
        false => Some(known.iter().all(|t| matches!(t, Trend::Grows { .. }))),
    };
    Verdict {
        pending,
        unleveled,
        behind,
    }
}

#[cfg(test)]
mod tests;
