//! What a benchmark runs, as plain values: the [`Scenario`], its [`Size`]
//! and the [`Plan`] built from both (segments of phases, with the actions
//! taken when a phase starts). Pure functions, no I/O, so every plan can be
//! checked in unit tests against what the seeds say.
//!
//! A *segment* is what one `varve_stress::Runner` can run: the workload,
//! population and column size are fixed per runner, so a scenario that
//! varies them (document sizes, LWT against plain writes) has several
//! segments, run one after another on the same node.

mod rates;
mod scenarios;
#[cfg(test)]
mod tests;

use std::fmt;
use std::time::Duration;

use varve_stress::{PhaseSpec, Population, Workload};

use crate::error::{BenchError, Result};

pub use rates::{build_rates, RateSearch, FIND_RATE_LADDER_FULL, RATES_MAX};
pub use scenarios::{build, DOC_SIZES, LWT_CONCURRENCIES_FULL};

/// Largest `--size` scaling factor (full is 1).
pub const SIZE_FACTOR_MAX: f64 = 10.0;
/// Live data each node holds at `--size full` (the seeds' nodes held
/// 200+ GB; this is the most that is still many times a capped node's
/// memory and loads in well under an hour): with RF 3 on three nodes,
/// every node holds the whole data set.
pub const LIVE_BYTES_PER_NODE_FULL: u64 = 10 << 30;
/// The shortest measured phase at `--size full` (issue 22: long enough for
/// several rounds of compaction).
pub const MEASURED_PHASE_FULL: Duration = Duration::from_secs(30 * 60);
/// Shortest duration of a time-limited phase, whatever the size.
pub const PHASE_DURATION_MIN: Duration = Duration::from_secs(1);
/// Fewest operations of an operation-limited phase, whatever the size.
pub const PHASE_OPS_MIN: u64 = 100;

/// The seed experiments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// Seeds 000 and 001: 5:4:1 read:write:delete on STCS + LZ4, then
    /// `provide_overlapping_tombstones` or `nodetool garbagecollect`.
    TombstoneGc,
    /// Seed 002: write:delete 4:1 under STCS, then LCS, then UCS.
    Compaction,
    /// Seed 004: writes then reads at six document sizes.
    DocSize,
    /// Seed 003: LWT against plain writes over concurrencies, and contended.
    Lwt,
}

impl Scenario {
    /// All scenarios, in the order of the issue.
    pub const ALL: [Scenario; 4] = [
        Scenario::TombstoneGc,
        Scenario::Compaction,
        Scenario::DocSize,
        Scenario::Lwt,
    ];

    /// Parses a scenario name as given on the command line.
    pub fn parse(s: &str) -> Result<Scenario> {
        Scenario::ALL
            .into_iter()
            .find(|sc| sc.name() == s)
            .ok_or_else(|| {
                BenchError::config(
                    "scenario",
                    format!("`{s}` (expected tombstone-gc, compaction, docsize or lwt)"),
                )
            })
    }

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::TombstoneGc => "tombstone-gc",
            Scenario::Compaction => "compaction",
            Scenario::DocSize => "docsize",
            Scenario::Lwt => "lwt",
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What phase 2 of `tombstone-gc` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Seed 000: `ALTER TABLE ... provide_overlapping_tombstones = ROW`.
    Overlapping,
    /// Seed 001: `nodetool garbagecollect` in the background.
    GarbageCollect,
}

impl Variant {
    /// Parses `overlapping` or `garbagecollect`.
    pub fn parse(s: &str) -> Result<Variant> {
        match s {
            "overlapping" => Ok(Variant::Overlapping),
            "garbagecollect" => Ok(Variant::GarbageCollect),
            other => Err(BenchError::config(
                "variant",
                format!("`{other}` (expected overlapping or garbagecollect)"),
            )),
        }
    }

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Overlapping => "overlapping",
            Variant::GarbageCollect => "garbagecollect",
        }
    }
}

/// `--size`: how long, how fast and how much.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Size {
    /// Seconds per scenario: the tests.
    Tiny,
    /// A few minutes per scenario.
    Small,
    /// The seeds' scale on one machine: 10 GiB per node, 30-minute phases
    /// at the seeds' rates; one to two hours per scenario.
    Full,
    /// Full with durations and populations multiplied by this factor.
    Factor(f64),
}

/// Multipliers applied to a scenario's full-size numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    /// Phase durations.
    pub time: f64,
    /// Request rates.
    pub rate: f64,
    /// Populations and operation counts.
    pub pop: f64,
}

impl Size {
    /// Parses `tiny`, `small`, `full` or a factor in (0, [`SIZE_FACTOR_MAX`]].
    pub fn parse(s: &str) -> Result<Size> {
        match s {
            "tiny" => Ok(Size::Tiny),
            "small" => Ok(Size::Small),
            "full" => Ok(Size::Full),
            other => match other.parse::<f64>() {
                Ok(x) if x.is_finite() && x > 0.0 && x <= SIZE_FACTOR_MAX => Ok(Size::Factor(x)),
                _ => Err(BenchError::config(
                    "size",
                    format!("`{other}` (expected tiny, small, full or a factor in (0, {SIZE_FACTOR_MAX}])"),
                )),
            },
        }
    }

    /// The multipliers of this size. Tiny and small also lower the rates:
    /// the tests share two cores with the nodes they load. Tiny turns a
    /// 30-minute phase into 5 s and 10 GiB into 2 MiB; small into 60 s and
    /// 20 MiB.
    pub fn scale(self) -> Scale {
        match self {
            Size::Tiny => Scale {
                time: 1.0 / 360.0,
                rate: 2.0 / 15.0,
                pop: 1.0 / 5000.0,
            },
            Size::Small => Scale {
                time: 1.0 / 30.0,
                rate: 0.2,
                pop: 1.0 / 500.0,
            },
            Size::Full => Scale {
                time: 1.0,
                rate: 1.0,
                pop: 1.0,
            },
            Size::Factor(x) => Scale {
                time: x,
                rate: 1.0,
                pop: x,
            },
        }
    }

    /// The name as given (`tiny`, `0.5`).
    pub fn name(self) -> String {
        match self {
            Size::Tiny => "tiny".into(),
            Size::Small => "small".into(),
            Size::Full => "full".into(),
            Size::Factor(x) => format!("{x}"),
        }
    }

    /// `memtable_heap_space` of the nodes the bench starts when no
    /// `--config` is given: small memtables make tiny and small runs flush
    /// and compact; at full size and factors the server's own default
    /// (fitted to `--memory-cap`, as Cassandra's is a share of its heap).
    pub fn memtable_space(self) -> Option<&'static str> {
        match self {
            Size::Tiny => Some("256KiB"),
            Size::Small => Some("4MiB"),
            Size::Full | Size::Factor(_) => None,
        }
    }

    /// Whether this is the seeds' scale or a factor of it (not a test size).
    pub fn is_seed_scale(self) -> bool {
        matches!(self, Size::Full | Size::Factor(_))
    }
}

/// An action taken as a phase starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A CQL statement through the runner's session (`ALTER TABLE ...`).
    Cql(String),
    /// `nodetool garbagecollect` of one table, in the background while the
    /// phase's load continues.
    GarbageCollect { keyspace: String, table: String },
}

/// One phase and what happens when it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub name: String,
    pub spec: PhaseSpec,
    /// Taken in order just before the phase's load starts.
    pub actions: Vec<Action>,
    /// The table is on LCS during this phase (server.csv's unleveled column).
    pub leveled: bool,
    /// At its end, judge from server.csv whether compaction fell behind
    /// during it (`--find-rate`, `--rates`; [`crate::judge`]).
    pub judged: bool,
}

/// What one stress runner does: fixed workload, population and schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// Unique within the plan; also the name of its part directory.
    pub name: String,
    pub workload: Workload,
    pub keyspace: String,
    /// `WITH compaction = ...` when the table is created.
    pub compaction: Option<String>,
    /// Statements run once the table exists (e.g. its compression).
    pub setup: Vec<String>,
    pub population: Population,
    pub column_size: usize,
    pub column_count: usize,
    pub lwt_keys: u64,
    pub steps: Vec<Step>,
}

impl Segment {
    /// `keyspace.table` of the segment's table.
    pub fn qualified_table(&self) -> String {
        format!("{}.{}", self.keyspace, self.workload.table())
    }
}

/// A whole benchmark.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub scenario: Scenario,
    pub variant: Option<Variant>,
    pub size: Size,
    pub segments: Vec<Segment>,
    /// End the run at the first judged phase where compaction falls behind
    /// (`--find-rate`).
    pub stop_when_behind: bool,
}

impl Plan {
    /// Every step of every segment, in run order.
    pub fn steps(&self) -> impl Iterator<Item = (&Segment, &Step)> {
        self.segments
            .iter()
            .flat_map(|seg| seg.steps.iter().map(move |s| (seg, s)))
    }

    /// Planned seconds of the time-limited phases (operation-limited ones
    /// take as long as the server needs).
    pub fn planned_seconds(&self) -> f64 {
        self.steps()
            .map(|(_, s)| match s.spec.limit {
                varve_stress::Limit::Duration(d) => d.as_secs_f64(),
                varve_stress::Limit::Ops(_) => 0.0,
            })
            .sum()
    }

    /// The plan as printed at the start of a run, one line per phase.
    pub fn describe(&self) -> String {
        use fmt::Write as _;
        let variant = self
            .variant
            .map(|v| format!(" --variant {}", v.name()))
            .unwrap_or_default();
        let mut out = format!(
            "plan: {}{variant} --size {} ({} phases, {:.0} s timed + operation-limited phases)\n",
            self.scenario,
            self.size.name(),
            self.steps().count(),
            self.planned_seconds()
        );
        for seg in &self.segments {
            let _ = writeln!(
                out,
                "  [{}] {} workload {}, population {}, column size {} B{}",
                seg.name,
                seg.qualified_table(),
                seg.workload,
                seg.population,
                seg.column_size,
                seg.compaction
                    .as_deref()
                    .map(|c| format!(", compaction {c}"))
                    .unwrap_or_default()
            );
            for step in &seg.steps {
                let limit = match step.spec.limit {
                    varve_stress::Limit::Duration(d) => format!("{:.1} s", d.as_secs_f64()),
                    varve_stress::Limit::Ops(n) => format!("{n} ops"),
                };
                let _ = writeln!(
                    out,
                    "    {:<22} {:<28} {:<18} c={:<4} {limit}",
                    step.name,
                    step.spec.mix.to_string(),
                    step.spec.rate.to_string(),
                    step.spec.concurrency
                );
                for action in &step.actions {
                    let _ = writeln!(out, "      at start: {}", action_label(action));
                }
                if step.judged {
                    let _ = writeln!(out, "      at end: judge whether compaction keeps up");
                }
            }
        }
        if self.stop_when_behind {
            out.push_str("  the search stops at the first rate where compaction falls behind\n");
        }
        out
    }
}

/// How an action is named in the plan and in events.csv.
pub fn action_label(action: &Action) -> String {
    match action {
        Action::Cql(text) => text.clone(),
        Action::GarbageCollect { keyspace, table } => {
            format!("nodetool garbagecollect {keyspace}.{table}")
        }
    }
}
