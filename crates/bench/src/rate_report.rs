//! The outcome of `--find-rate` and `--rates`: each judged phase's rate,
//! trends and verdict ([`crate::judge`]), written as rates.md (and into
//! bench.md and summary.json), with the first rate where compaction fell
//! behind.

use std::fmt::Write as _;

use serde::Serialize;

use crate::judge::{Verdict, FALLS_BEHIND, GROWTH_MIN, POINTS_MIN, UNKNOWN};

/// One judged phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateResult {
    pub phase: String,
    /// Operations per second asked of the cluster (W:D 4:1).
    pub rate_per_s: f64,
    /// Fitted rise of pending compactions over the phase's second half.
    pub pending_growth: Option<f64>,
    /// Fitted rise of unleveled sstables over the phase's second half.
    pub unleveled_growth: Option<f64>,
    /// `falls behind`, `keeps up` or `unknown`.
    pub verdict: String,
}

impl RateResult {
    pub fn new(phase: &str, rate_per_s: f64, verdict: &Verdict) -> RateResult {
        RateResult {
            phase: phase.to_string(),
            rate_per_s,
            pending_growth: verdict.pending.growth(),
            unleveled_growth: verdict.unleveled.growth(),
            verdict: verdict.label().to_string(),
        }
    }

    /// Whether compaction fell behind at this rate.
    pub fn behind(&self) -> bool {
        self.verdict == FALLS_BEHIND
    }
}

/// The rate search as summary.json's `bench.rate_search`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateSearchInfo {
    pub stop_when_behind: bool,
    /// The first rate judged to fall behind, if any.
    pub first_behind_per_s: Option<f64>,
    pub phases: Vec<RateResult>,
}

impl RateSearchInfo {
    pub fn new(stop_when_behind: bool, phases: Vec<RateResult>) -> RateSearchInfo {
        RateSearchInfo {
            stop_when_behind,
            first_behind_per_s: phases.iter().find(|r| r.behind()).map(|r| r.rate_per_s),
            phases,
        }
    }
}

fn growth(g: Option<f64>) -> String {
    g.map_or("-".into(), |g| format!("{g:+.1}"))
}

/// The one-line conclusion.
pub fn conclusion(info: &RateSearchInfo) -> String {
    let known: Vec<&RateResult> = info
        .phases
        .iter()
        .filter(|r| r.verdict != UNKNOWN)
        .collect();
    let unknown = info.phases.len() - known.len();
    let unknown_note = match unknown {
        0 => String::new(),
        n => format!(" ({n} rate(s) could not be judged)"),
    };
    match (info.first_behind_per_s, known.last()) {
        (Some(rate), _) => format!("compaction first falls behind at {rate:.0} op/s"),
        (None, Some(last)) => format!(
            "compaction kept up at every rate judged, up to {:.0} op/s{unknown_note}",
            last.rate_per_s
        ),
        (None, None) if unknown > 0 => {
            format!("no rate could be judged: each phase's second half needs {POINTS_MIN} samples")
        }
        (None, None) => "no rate was run".to_string(),
    }
}

/// The text of rates.md.
pub fn render(info: &RateSearchInfo) -> String {
    let mut out = String::from("## Rate search (seed 002: where does LCS fall behind?)\n\n");
    let _ = writeln!(
        out,
        "W:D 4:1 at each rate; over each phase's second half, a least-squares line through \
         pending compactions and through unleveled sstables (server.csv). A series grows when \
         the line rises by at least {GROWTH_MIN} and by more than the samples' scatter around it \
         (at least {POINTS_MIN} samples); compaction falls behind when every series grows.{}\n",
        match info.stop_when_behind {
            true => " The search stops at the first rate that falls behind.",
            false => "",
        }
    );
    out.push_str("| Rate (op/s) | Phase | Pending growth | Unleveled growth | Verdict |\n");
    out.push_str("|---:|---|---:|---:|---|\n");
    for r in &info.phases {
        let _ = writeln!(
            out,
            "| {:.0} | {} | {} | {} | {} |",
            r.rate_per_s,
            r.phase,
            growth(r.pending_growth),
            growth(r.unleveled_growth),
            r.verdict
        );
    }
    let _ = writeln!(out, "\n**Result:** {}.", conclusion(info));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::Trend;

    fn verdict(behind: Option<bool>, pending: f64) -> Verdict {
        let trend = match behind {
            Some(true) => Trend::Grows {
                growth: pending,
                noise: 1.0,
            },
            _ => Trend::Holds {
                growth: pending,
                noise: 1.0,
            },
        };
        Verdict {
            pending: trend,
            unleveled: Trend::Unknown { points: 3 },
            behind,
        }
    }

    #[test]
    fn the_first_rate_behind_is_reported() {
        let phases = vec![
            RateResult::new("lcs-500", 500.0, &verdict(Some(false), 0.4)),
            RateResult::new("lcs-1000", 1000.0, &verdict(Some(true), 12.0)),
        ];
        let info = RateSearchInfo::new(true, phases);
        assert_eq!(info.first_behind_per_s, Some(1000.0));
        let text = render(&info);
        assert!(
            text.contains("| 500 | lcs-500 | +0.4 | - | keeps up |"),
            "{text}"
        );
        assert!(text.contains("| 1000 | lcs-1000 | +12.0 | - | falls behind |"));
        assert!(text.contains("**Result:** compaction first falls behind at 1000 op/s."));
        assert!(text.contains("stops at the first rate"));
    }

    #[test]
    fn keeping_up_says_up_to_what_and_unknowns_are_not_keeping_up() {
        let info = RateSearchInfo::new(
            false,
            vec![
                RateResult::new("lcs-2700", 2700.0, &verdict(Some(false), 0.5)),
                RateResult::new("lcs-3000", 3000.0, &verdict(Some(false), 1.0)),
                RateResult::new("lcs-4000", 4000.0, &verdict(None, 0.0)),
            ],
        );
        assert_eq!(info.first_behind_per_s, None);
        assert_eq!(info.phases[2].verdict, "unknown");
        assert_eq!(
            conclusion(&info),
            "compaction kept up at every rate judged, up to 3000 op/s (1 rate(s) could not be judged)"
        );
        let unknown = RateSearchInfo::new(false, info.phases[2..].to_vec());
        assert!(conclusion(&unknown).starts_with("no rate could be judged"));
        assert_eq!(
            conclusion(&RateSearchInfo::new(false, Vec::new())),
            "no rate was run"
        );
    }
}
