//! Which key an operation touches: `--pop seq=1..N | uniform=1..N |
//! gaussian=1..N`, as in cassandra-stress. A population maps the phase's
//! operation number (its ticket) and the worker's random generator to a key
//! index in `lo..=hi`. `seq` uses the ticket only, so `write --n N` with
//! `seq=1..N` writes every index exactly once, in order of issue.

use std::fmt;

use rand::Rng;

use crate::error::{Result, StressError};

/// Standard deviations between the mean and either end of a gaussian
/// population (cassandra-stress's default `stdvrng`).
pub const GAUSSIAN_STDEVS_PER_HALF_RANGE: f64 = 3.0;
/// Draws before a gaussian sample outside the range is clamped instead.
const GAUSSIAN_REDRAWS_MAX: u32 = 16;

/// A distribution of key indexes over `lo..=hi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Population {
    /// `lo, lo+1, ..., hi, lo, ...` by ticket.
    Seq { lo: u64, hi: u64 },
    /// Uniform over the range.
    Uniform { lo: u64, hi: u64 },
    /// Normal around the middle, 3 standard deviations to either end.
    Gaussian { lo: u64, hi: u64 },
}

impl Population {
    /// Parses `seq=1..N`, `uniform=1..N` or `gaussian=1..N`.
    pub fn parse(s: &str) -> Result<Population> {
        let bad = || {
            StressError::config(
                "pop",
                format!("`{s}` (expected seq=1..N, uniform=1..N or gaussian=1..N)"),
            )
        };
        let (kind, range) = s.trim().split_once('=').ok_or_else(bad)?;
        let (lo, hi) = range.split_once("..").ok_or_else(bad)?;
        let lo: u64 = lo.trim().parse().map_err(|_| bad())?;
        let hi: u64 = hi.trim().parse().map_err(|_| bad())?;
        if lo > hi {
            return Err(StressError::config(
                "pop",
                format!("empty range {lo}..{hi}"),
            ));
        }
        match kind.trim() {
            "seq" => Ok(Population::Seq { lo, hi }),
            "uniform" => Ok(Population::Uniform { lo, hi }),
            "gaussian" => Ok(Population::Gaussian { lo, hi }),
            _ => Err(bad()),
        }
    }

    /// The inclusive range of indexes.
    pub fn range(&self) -> (u64, u64) {
        match *self {
            Population::Seq { lo, hi }
            | Population::Uniform { lo, hi }
            | Population::Gaussian { lo, hi } => (lo, hi),
        }
    }

    /// How many distinct indexes there are (saturating at `u64::MAX`).
    pub fn size(&self) -> u64 {
        let (lo, hi) = self.range();
        (hi - lo).saturating_add(1)
    }

    /// The index for operation number `ticket` (0-based).
    pub fn index(&self, ticket: u64, rng: &mut impl Rng) -> u64 {
        match *self {
            Population::Seq { lo, .. } => lo + ticket % self.size(),
            Population::Uniform { lo, hi } => rng.gen_range(lo..=hi),
            Population::Gaussian { lo, hi } => gaussian_index(lo, hi, rng),
        }
    }
}

impl fmt::Display for Population {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kind, (lo, hi)) = match self {
            Population::Seq { .. } => ("seq", self.range()),
            Population::Uniform { .. } => ("uniform", self.range()),
            Population::Gaussian { .. } => ("gaussian", self.range()),
        };
        write!(f, "{kind}={lo}..{hi}")
    }
}

/// A normal sample (Box-Muller) around the middle of `lo..=hi`, redrawn when
/// outside, clamped after [`GAUSSIAN_REDRAWS_MAX`] draws.
fn gaussian_index(lo: u64, hi: u64, rng: &mut impl Rng) -> u64 {
    let mean = (lo as f64 + hi as f64) / 2.0;
    let stdev = ((hi - lo) as f64 / 2.0 / GAUSSIAN_STDEVS_PER_HALF_RANGE).max(f64::MIN_POSITIVE);
    let mut x = mean;
    for _ in 0..GAUSSIAN_REDRAWS_MAX {
        let u1: f64 = rng.gen_range(f64::EPSILON..1.0);
        let u2: f64 = rng.gen();
        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        x = (mean + z * stdev).round();
        if x >= lo as f64 && x <= hi as f64 {
            break;
        }
    }
    (x.max(lo as f64).min(hi as f64)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rng() -> rand::rngs::StdRng {
        rand::rngs::StdRng::seed_from_u64(42)
    }

    #[test]
    fn seq_covers_the_range_once_in_order() {
        let pop = Population::parse("seq=1..1000").unwrap();
        let mut r = rng();
        let got: Vec<u64> = (0..1000).map(|t| pop.index(t, &mut r)).collect();
        let want: Vec<u64> = (1..=1000).collect();
        assert_eq!(got, want);
        assert_eq!(pop.index(1000, &mut r), 1, "wraps around");
    }

    #[test]
    fn uniform_stays_in_range_and_reaches_both_ends() {
        let pop = Population::parse("uniform=10..20").unwrap();
        let mut r = rng();
        let got: Vec<u64> = (0..10_000).map(|t| pop.index(t, &mut r)).collect();
        assert!(got.iter().all(|i| (10..=20).contains(i)));
        assert!(got.contains(&10) && got.contains(&20));
    }

    #[test]
    fn gaussian_is_centred_and_in_range() {
        let pop = Population::parse("gaussian=1..1000").unwrap();
        let mut r = rng();
        let got: Vec<u64> = (0..50_000).map(|t| pop.index(t, &mut r)).collect();
        assert!(got.iter().all(|i| (1..=1000).contains(i)));
        let mean = got.iter().sum::<u64>() as f64 / got.len() as f64;
        assert!((mean - 500.5).abs() < 5.0, "mean {mean}");
        // About 68% within one standard deviation (166.5) of the mean.
        let near = got
            .iter()
            .filter(|i| (**i as f64 - 500.5).abs() < 166.5)
            .count();
        let share = near as f64 / got.len() as f64;
        assert!((0.64..0.72).contains(&share), "share {share}");
    }

    #[test]
    fn single_index_ranges_work() {
        let mut r = rng();
        for s in ["seq=5..5", "uniform=5..5", "gaussian=5..5"] {
            let pop = Population::parse(s).unwrap();
            assert_eq!(pop.index(3, &mut r), 5, "{s}");
            assert_eq!(pop.to_string(), s);
        }
        let full = Population::parse(&format!("seq=0..{}", u64::MAX)).unwrap();
        assert_eq!(full.index(7, &mut r), 7);
    }

    #[test]
    fn bad_populations_are_errors() {
        for bad in [
            "",
            "seq",
            "seq=1",
            "seq=5..1",
            "zipf=1..10",
            "seq=a..b",
            "seq=-1..3",
        ] {
            assert!(Population::parse(bad).is_err(), "{bad}");
        }
    }
}
