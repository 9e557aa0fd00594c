//! What a phase runs: the operation kinds ([`Op`]), their weighted mix
//! ([`OpMix`], `--ratio write=4,read=5,delete=1`), the request rate
//! ([`Rate`], `--rate fixed=2000/s`), when the phase ends ([`Limit`]) and the
//! whole [`PhaseSpec`]. Pure values and parsers: no I/O.

use std::fmt;
use std::time::Duration;

use rand::Rng;

use crate::error::{Result, StressError};

/// Largest single weight of `--ratio`.
pub const MIX_WEIGHT_MAX: u32 = 1_000_000;
/// Largest `--rate` in operations per second.
pub const RATE_PER_S_MAX: f64 = 10_000_000.0;

/// One kind of operation, named as in the run directory format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Op {
    Write,
    Read,
    Delete,
    /// A conditional write (`INSERT ... IF NOT EXISTS` / `UPDATE ... IF`).
    CasWrite,
    /// A read at SERIAL consistency.
    CasRead,
}

impl Op {
    /// All kinds, in report order.
    pub const ALL: [Op; 5] = [Op::Write, Op::Read, Op::Delete, Op::CasWrite, Op::CasRead];

    /// The name used in flags, CSV and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Op::Write => "write",
            Op::Read => "read",
            Op::Delete => "delete",
            Op::CasWrite => "cas_write",
            Op::CasRead => "cas_read",
        }
    }

    /// Parses an operation name.
    pub fn parse(s: &str) -> Result<Op> {
        Op::ALL
            .into_iter()
            .find(|op| op.name() == s)
            .ok_or_else(|| {
                StressError::config(
                    "operation",
                    format!("`{s}` (expected write, read, delete, cas_write or cas_read)"),
                )
            })
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Weighted operation kinds; each operation picks one at random.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpMix {
    entries: Vec<(Op, u32)>,
    total: u64,
}

impl OpMix {
    /// A mix of one kind only.
    pub fn only(op: Op) -> OpMix {
        OpMix {
            entries: vec![(op, 1)],
            total: 1,
        }
    }

    /// A mix from `(op, weight)` pairs: at least one positive weight, no
    /// kind twice. Zero weights are dropped.
    pub fn new(pairs: impl IntoIterator<Item = (Op, u32)>) -> Result<OpMix> {
        let mut entries: Vec<(Op, u32)> = Vec::new();
        for (op, weight) in pairs {
            if entries.iter().any(|(o, _)| *o == op) {
                return Err(StressError::config("ratio", format!("`{op}` given twice")));
            }
            if weight > MIX_WEIGHT_MAX {
                return Err(StressError::config(
                    "ratio",
                    format!("weight {weight} of `{op}` is above {MIX_WEIGHT_MAX}"),
                ));
            }
            entries.push((op, weight));
        }
        entries.retain(|(_, w)| *w > 0);
        let total: u64 = entries.iter().map(|(_, w)| u64::from(*w)).sum();
        if total == 0 {
            return Err(StressError::config("ratio", "no positive weight"));
        }
        Ok(OpMix { entries, total })
    }

    /// Parses `write=4,read=5,delete=1` (a bare `read` means weight 1).
    pub fn parse(s: &str) -> Result<OpMix> {
        let mut pairs = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, weight) = match part.split_once('=') {
                Some((n, w)) => {
                    let w = w.trim().parse::<u32>().map_err(|_| {
                        StressError::config("ratio", format!("weight `{w}` of `{n}`"))
                    })?;
                    (n.trim(), w)
                }
                None => (part, 1),
            };
            pairs.push((Op::parse(name)?, weight));
        }
        OpMix::new(pairs)
    }

    /// The kinds of this mix, in the order given.
    pub fn ops(&self) -> impl Iterator<Item = Op> + '_ {
        self.entries.iter().map(|(op, _)| *op)
    }

    /// The weight of `op` (0 when absent).
    pub fn weight(&self, op: Op) -> u32 {
        self.entries
            .iter()
            .find(|(o, _)| *o == op)
            .map_or(0, |(_, w)| *w)
    }

    /// This mix with each kind renamed by `f` (weights of kinds that become
    /// the same are added).
    pub fn map(&self, f: impl Fn(Op) -> Op) -> OpMix {
        let mut entries: Vec<(Op, u32)> = Vec::new();
        for (op, w) in &self.entries {
            let to = f(*op);
            match entries.iter_mut().find(|(o, _)| *o == to) {
                Some((_, total)) => *total = total.saturating_add(*w),
                None => entries.push((to, *w)),
            }
        }
        OpMix {
            entries,
            total: self.total,
        }
    }

    /// Picks a kind with probability weight / total.
    pub fn pick(&self, rng: &mut impl Rng) -> Op {
        let mut x = rng.gen_range(0..self.total);
        for (op, w) in &self.entries {
            let w = u64::from(*w);
            if x < w {
                return *op;
            }
            x -= w;
        }
        // Unreachable while total is the sum of the weights; the last kind
        // is a safe answer all the same.
        self.entries.last().map_or(Op::Write, |(op, _)| *op)
    }
}

impl fmt::Display for OpMix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (op, w)) in self.entries.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{op}={w}")?;
        }
        Ok(())
    }
}

/// How fast operations are issued.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rate {
    /// Each worker sends its next operation as soon as the last one ends.
    Unlimited,
    /// Workers take evenly spaced send slots; a slot is never earlier than
    /// now, so a slow server lowers the rate instead of building a backlog.
    /// Latency is measured from the actual send.
    Throttle { per_s: f64 },
    /// Operation `i` is due at `start + i / rate` whatever happens; latency
    /// is measured from that intended start, so time spent queued behind a
    /// slow server counts (no coordinated omission).
    Fixed { per_s: f64 },
}

impl Rate {
    /// Parses `unlimited`, `throttle=2000/s` or `fixed=2000/s` (`/s` optional).
    pub fn parse(s: &str) -> Result<Rate> {
        let s = s.trim();
        if s == "unlimited" {
            return Ok(Rate::Unlimited);
        }
        let (kind, value) = s.split_once('=').ok_or_else(|| {
            StressError::config(
                "rate",
                format!("`{s}` (expected unlimited, throttle=N/s or fixed=N/s)"),
            )
        })?;
        let number = value.trim().strip_suffix("/s").unwrap_or(value.trim());
        let per_s: f64 = number.parse().map_err(|_| {
            StressError::config("rate", format!("`{value}` is not a number per second"))
        })?;
        let rate = match kind.trim() {
            "throttle" => Rate::Throttle { per_s },
            "fixed" => Rate::Fixed { per_s },
            other => {
                return Err(StressError::config(
                    "rate",
                    format!("`{other}` (expected unlimited, throttle or fixed)"),
                ))
            }
        };
        rate.validate()?;
        Ok(rate)
    }

    /// Checks that a rate built in code is positive, finite and at most
    /// [`RATE_PER_S_MAX`] (the schedule divides by it).
    pub fn validate(&self) -> Result<()> {
        match *self {
            Rate::Unlimited => Ok(()),
            Rate::Throttle { per_s } | Rate::Fixed { per_s } => {
                if per_s.is_finite() && per_s > 0.0 && per_s <= RATE_PER_S_MAX {
                    Ok(())
                } else {
                    Err(StressError::config(
                        "rate",
                        format!("{per_s}/s is outside (0, {RATE_PER_S_MAX}]"),
                    ))
                }
            }
        }
    }

    /// True when latency is measured from the intended start.
    pub fn measures_from_intended_start(&self) -> bool {
        matches!(self, Rate::Fixed { .. })
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rate::Unlimited => f.write_str("unlimited"),
            Rate::Throttle { per_s } => write!(f, "throttle={per_s}/s"),
            Rate::Fixed { per_s } => write!(f, "fixed={per_s}/s"),
        }
    }
}

/// When a phase ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// After this many operations have been issued (and completed).
    Ops(u64),
    /// When this much time has passed; operations in flight then complete.
    Duration(Duration),
}

/// Parses a duration: `30s`, `500ms`, `2m`, `1h`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration> {
    let s = s.trim();
    let (number, unit_s) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (s, 1.0)
    };
    let value: f64 = number.trim().parse().map_err(|_| {
        StressError::config("duration", format!("`{s}` (expected e.g. 30s, 500ms, 2m)"))
    })?;
    Duration::try_from_secs_f64(value * unit_s)
        .map_err(|_| StressError::config("duration", format!("`{s}` is out of range")))
}

/// One phase of a run: what to do, how fast, for how long.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseSpec {
    /// The operations and their weights.
    pub mix: OpMix,
    /// The request rate.
    pub rate: Rate,
    /// When the phase ends.
    pub limit: Limit,
    /// Concurrent workers (in-flight operations at most).
    pub concurrency: usize,
    /// False for a warm-up: run, but leave no trace in the outputs.
    pub recorded: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn ratio_parses_and_picks_by_weight() {
        let mix = OpMix::parse("write=4, read=5,delete=1").unwrap();
        assert_eq!(mix.weight(Op::Write), 4);
        assert_eq!(mix.weight(Op::Read), 5);
        assert_eq!(mix.weight(Op::Delete), 1);
        assert_eq!(mix.to_string(), "write=4,read=5,delete=1");
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut counts = [0u32; 3];
        for _ in 0..100_000 {
            match mix.pick(&mut rng) {
                Op::Write => counts[0] += 1,
                Op::Read => counts[1] += 1,
                Op::Delete => counts[2] += 1,
                other => panic!("picked {other}"),
            }
        }
        for (count, expected) in counts.iter().zip([40_000.0, 50_000.0, 10_000.0]) {
            let ratio = f64::from(*count) / expected;
            assert!((0.97..1.03).contains(&ratio), "{counts:?}");
        }
    }

    #[test]
    fn ratio_rejects_bad_input() {
        for bad in [
            "",
            "write=0",
            "write=x",
            "scan=1",
            "write=1,write=2",
            "write=-1",
            "write=1000001",
            "read=1,write=1,delete=1,cas_read=1,cas_write=1,read=1",
        ] {
            assert!(OpMix::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(OpMix::parse("read").unwrap(), OpMix::only(Op::Read));
        assert!(OpMix::parse(&format!("write={MIX_WEIGHT_MAX}")).is_ok());
        assert!(OpMix::parse(&format!("write={}", MIX_WEIGHT_MAX + 1)).is_err());
    }

    #[test]
    fn ratio_map_merges_renamed_kinds() {
        let mix = OpMix::parse("write=2,cas_write=3,read=1").unwrap();
        let lwt = mix.map(|op| match op {
            Op::Write => Op::CasWrite,
            Op::Read => Op::CasRead,
            other => other,
        });
        assert_eq!(lwt.weight(Op::CasWrite), 5);
        assert_eq!(lwt.weight(Op::CasRead), 1);
        assert_eq!(lwt.weight(Op::Write), 0);
    }

    #[test]
    fn rate_parses() {
        assert_eq!(Rate::parse("unlimited").unwrap(), Rate::Unlimited);
        assert_eq!(
            Rate::parse("throttle=2000/s").unwrap(),
            Rate::Throttle { per_s: 2000.0 }
        );
        assert_eq!(
            Rate::parse("fixed=200").unwrap(),
            Rate::Fixed { per_s: 200.0 }
        );
        assert_eq!(
            Rate::parse("fixed=0.5/s").unwrap(),
            Rate::Fixed { per_s: 0.5 }
        );
        for bad in [
            "",
            "fast",
            "fixed=",
            "fixed=0/s",
            "fixed=-3/s",
            "fixed=NaN",
            "burst=10/s",
            "fixed=inf",
        ] {
            assert!(Rate::parse(bad).is_err(), "{bad}");
        }
        assert!(Rate::parse(&format!("fixed={}/s", RATE_PER_S_MAX)).is_ok());
        assert!(Rate::parse(&format!("fixed={}/s", RATE_PER_S_MAX * 2.0)).is_err());
        let r = Rate::parse("fixed=2000/s").unwrap();
        assert_eq!(Rate::parse(&r.to_string()).unwrap(), r);
        // Rates built in code are checked too (the schedule divides by them).
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, RATE_PER_S_MAX * 2.0] {
            assert!(Rate::Fixed { per_s: bad }.validate().is_err(), "{bad}");
            assert!(Rate::Throttle { per_s: bad }.validate().is_err(), "{bad}");
        }
        assert!(Rate::Unlimited.validate().is_ok());
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
        for bad in ["", "s", "-1s", "x", "1e400s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
