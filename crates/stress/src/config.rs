//! The settings of a run that hold for all its phases: where to connect,
//! which workload and schema, how keys and values look, where outputs go.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

pub use scylla::frame::types::{Consistency, SerialConsistency};

use crate::error::{Result, StressError};
use crate::population::Population;
use crate::spec::Op;
use crate::values::{COLUMN_COUNT_MAX, COLUMN_SIZE_MAX};

/// Most connections per host.
pub const CONNECTIONS_PER_HOST_MAX: usize = 64;
/// Most concurrent workers of a phase.
pub const CONCURRENCY_MAX: usize = 16_384;
/// Shortest progress / intervals.csv interval.
pub const INTERVAL_MIN: Duration = Duration::from_millis(100);
/// Largest replication factor accepted for the created keyspace.
pub const REPLICATION_FACTOR_MAX: u32 = 32;

/// The named workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// cassandra-stress's default: `standard1 (key blob PRIMARY KEY, "C0".."C4" blob)`.
    Kv,
    /// The seed table `keyvaluelargeblob_2 (key text, column_0 blob,
    /// column_1 blob, value blob)`: insert / read / delete one row.
    LargeBlob,
    /// `timeseries (series bigint, ts bigint, value blob)` newest first;
    /// a read returns the newest rows of a series.
    TimeSeries,
    /// Conditional writes on `--lwt-keys` keys.
    Lwt,
}

impl Workload {
    /// Parses `kv`, `largeblob`, `timeseries` or `lwt`.
    pub fn parse(s: &str) -> Result<Workload> {
        match s {
            "kv" => Ok(Workload::Kv),
            "largeblob" => Ok(Workload::LargeBlob),
            "timeseries" => Ok(Workload::TimeSeries),
            "lwt" => Ok(Workload::Lwt),
            other => Err(StressError::config(
                "workload",
                format!("`{other}` (expected kv, largeblob, timeseries or lwt)"),
            )),
        }
    }

    /// The name used in flags and in summary.json.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Kv => "kv",
            Workload::LargeBlob => "largeblob",
            Workload::TimeSeries => "timeseries",
            Workload::Lwt => "lwt",
        }
    }

    /// The table the workload uses.
    pub fn table(self) -> &'static str {
        match self {
            Workload::Kv => "standard1",
            Workload::LargeBlob => "keyvaluelargeblob_2",
            Workload::TimeSeries => "timeseries",
            Workload::Lwt => "lwt",
        }
    }

    /// The operations the workload can run.
    pub fn supports(self, op: Op) -> bool {
        match self {
            Workload::Kv | Workload::LargeBlob => matches!(op, Op::Write | Op::Read | Op::Delete),
            Workload::TimeSeries => matches!(op, Op::Write | Op::Read),
            Workload::Lwt => matches!(op, Op::CasWrite | Op::CasRead),
        }
    }

    /// How a generic operation name is meant for this workload: `write` and
    /// `read` are the conditional ones for `lwt`.
    pub fn translate(self, op: Op) -> Op {
        match (self, op) {
            (Workload::Lwt, Op::Write) => Op::CasWrite,
            (Workload::Lwt, Op::Read) => Op::CasRead,
            _ => op,
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses a consistency level name (`ONE`, `LOCAL_QUORUM`, ...).
pub fn parse_consistency(s: &str) -> Result<Consistency> {
    Ok(match s.to_ascii_uppercase().as_str() {
        "ANY" => Consistency::Any,
        "ONE" => Consistency::One,
        "TWO" => Consistency::Two,
        "THREE" => Consistency::Three,
        "QUORUM" => Consistency::Quorum,
        "ALL" => Consistency::All,
        "LOCAL_QUORUM" => Consistency::LocalQuorum,
        "EACH_QUORUM" => Consistency::EachQuorum,
        "LOCAL_ONE" => Consistency::LocalOne,
        other => return Err(StressError::config("consistency", format!("`{other}`"))),
    })
}

/// Parses `SERIAL` or `LOCAL_SERIAL`.
pub fn parse_serial_consistency(s: &str) -> Result<SerialConsistency> {
    match s.to_ascii_uppercase().as_str() {
        "SERIAL" => Ok(SerialConsistency::Serial),
        "LOCAL_SERIAL" => Ok(SerialConsistency::LocalSerial),
        other => Err(StressError::config(
            "serial consistency",
            format!("`{other}`"),
        )),
    }
}

/// The name of a consistency level as users write it.
pub fn consistency_name(c: Consistency) -> &'static str {
    match c {
        Consistency::Any => "ANY",
        Consistency::One => "ONE",
        Consistency::Two => "TWO",
        Consistency::Three => "THREE",
        Consistency::Quorum => "QUORUM",
        Consistency::All => "ALL",
        Consistency::LocalQuorum => "LOCAL_QUORUM",
        Consistency::EachQuorum => "EACH_QUORUM",
        Consistency::LocalOne => "LOCAL_ONE",
        Consistency::Serial => "SERIAL",
        Consistency::LocalSerial => "LOCAL_SERIAL",
    }
}

/// Everything about a run except its phases.
#[derive(Debug, Clone)]
pub struct StressConfig {
    /// Contact points, `host:port`.
    pub hosts: Vec<String>,
    /// Connections per host.
    pub connections: usize,
    /// Consistency of every statement.
    pub consistency: Consistency,
    /// Serial consistency of conditional statements.
    pub serial_consistency: SerialConsistency,
    /// Client-side timeout of one request.
    pub request_timeout: Duration,
    /// The workload (schema and statements).
    pub workload: Workload,
    /// Keyspace of the workload's table.
    pub keyspace: String,
    /// Replication factor of the created keyspace (NetworkTopologyStrategy
    /// in the contact node's data centre).
    pub replication_factor: u32,
    /// A compaction map put after `WITH compaction =` when creating the table.
    pub compaction: Option<String>,
    /// Create the keyspace and table when missing.
    pub create_schema: bool,
    /// TRUNCATE the table before the first phase.
    pub truncate: bool,
    /// Which key each operation touches.
    pub population: Population,
    /// Bytes of each value column.
    pub column_size: usize,
    /// Value columns of the `kv` table.
    pub column_count: usize,
    /// Keys of the `lwt` workload.
    pub lwt_keys: u64,
    /// Rows returned by a `timeseries` read.
    pub timeseries_read_rows: u32,
    /// Check what reads return against the deterministic values.
    pub verify: bool,
    /// Progress line and intervals.csv period.
    pub interval: Duration,
    /// Print the progress line on stderr.
    pub progress: bool,
    /// Seed of the workers' random generators.
    pub seed: u64,
    /// The command line, for summary.json.
    pub command: String,
    /// Where to write the run directory (none: no files).
    pub out: Option<PathBuf>,
    /// The node's admin HTTP port, probed to tell Varve from Cassandra.
    pub admin_port: u16,
}

impl Default for StressConfig {
    fn default() -> Self {
        StressConfig {
            hosts: vec!["127.0.0.1:9042".to_string()],
            connections: 1,
            consistency: Consistency::One,
            serial_consistency: SerialConsistency::Serial,
            request_timeout: Duration::from_secs(12),
            workload: Workload::Kv,
            keyspace: "keyspace1".to_string(),
            replication_factor: 1,
            compaction: None,
            create_schema: true,
            truncate: false,
            population: Population::Seq {
                lo: 1,
                hi: 1_000_000,
            },
            column_size: 34,
            column_count: 5,
            lwt_keys: 1000,
            timeseries_read_rows: 10,
            verify: false,
            interval: Duration::from_secs(1),
            progress: true,
            seed: 0,
            command: String::new(),
            out: None,
            admin_port: 9180,
        }
    }
}

impl StressConfig {
    /// Checks ranges and names; every limit here is a named constant.
    pub fn validate(&self) -> Result<()> {
        if self.hosts.is_empty() {
            return Err(StressError::config("hosts", "none given"));
        }
        if self.connections == 0 || self.connections > CONNECTIONS_PER_HOST_MAX {
            return Err(StressError::config(
                "connections",
                format!(
                    "{} is outside 1..={CONNECTIONS_PER_HOST_MAX}",
                    self.connections
                ),
            ));
        }
        if !is_identifier(&self.keyspace) {
            return Err(StressError::config(
                "keyspace",
                format!("`{}`", self.keyspace),
            ));
        }
        if self.replication_factor == 0 || self.replication_factor > REPLICATION_FACTOR_MAX {
            return Err(StressError::config(
                "replication-factor",
                format!(
                    "{} is outside 1..={REPLICATION_FACTOR_MAX}",
                    self.replication_factor
                ),
            ));
        }
        if let Some(c) = &self.compaction {
            let c = c.trim();
            if !(c.starts_with('{') && c.ends_with('}')) || c.contains(';') {
                return Err(StressError::config(
                    "compaction",
                    format!("`{c}` is not a CQL map"),
                ));
            }
        }
        if self.column_size > COLUMN_SIZE_MAX {
            return Err(StressError::config(
                "col-size",
                format!("above {COLUMN_SIZE_MAX}"),
            ));
        }
        if self.column_count == 0 || self.column_count > COLUMN_COUNT_MAX {
            return Err(StressError::config(
                "col-count",
                format!("{} is outside 1..={COLUMN_COUNT_MAX}", self.column_count),
            ));
        }
        let (lo, hi) = self.population.range();
        if lo > hi {
            return Err(StressError::config(
                "pop",
                format!("empty range {lo}..{hi}"),
            ));
        }
        if self.verify && self.workload != Workload::Kv {
            return Err(StressError::config(
                "verify",
                "only the kv workload can verify reads",
            ));
        }
        if self.lwt_keys == 0 {
            return Err(StressError::config("lwt-keys", "must be at least 1"));
        }
        if self.interval < INTERVAL_MIN {
            return Err(StressError::config(
                "interval",
                format!("below {INTERVAL_MIN:?}"),
            ));
        }
        Ok(())
    }
}

/// A CQL identifier that needs no quoting.
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && s.len() <= 48
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_limits_hold() {
        let ok = StressConfig::default();
        ok.validate().unwrap();
        let mut c = ok.clone();
        c.connections = CONNECTIONS_PER_HOST_MAX;
        c.validate().unwrap();
        c.connections = CONNECTIONS_PER_HOST_MAX + 1;
        assert!(c.validate().is_err());
        let mut c = ok.clone();
        c.keyspace = "bad-name".into();
        assert!(c.validate().is_err());
        let mut c = ok.clone();
        c.compaction = Some("{'class': 'X'}; DROP TABLE t".into());
        assert!(c.validate().is_err());
        c.compaction = Some("{'class':'SizeTieredCompactionStrategy'}".into());
        c.validate().unwrap();
        let mut c = ok.clone();
        c.column_count = COLUMN_COUNT_MAX + 1;
        assert!(c.validate().is_err());
        let mut c = ok.clone();
        c.population = Population::Uniform { lo: 5, hi: 4 };
        assert!(
            c.validate().is_err(),
            "a population built in code is checked"
        );
        let mut c = ok;
        c.workload = Workload::Lwt;
        c.verify = true;
        assert!(c.validate().is_err());
    }

    #[test]
    fn every_limit_holds_at_n_and_fails_at_n_plus_one() {
        let ok = StressConfig::default();
        let check = |what: &str, set: &dyn Fn(&mut StressConfig, bool)| {
            let mut c = ok.clone();
            set(&mut c, false);
            assert!(c.validate().is_ok(), "{what} at the limit");
            set(&mut c, true);
            assert!(c.validate().is_err(), "{what} past the limit");
        };
        check("replication factor", &|c, past| {
            c.replication_factor = REPLICATION_FACTOR_MAX + u32::from(past)
        });
        check("column size", &|c, past| {
            c.column_size = COLUMN_SIZE_MAX + usize::from(past)
        });
        check("column count", &|c, past| {
            c.column_count = COLUMN_COUNT_MAX + usize::from(past)
        });
        check("interval", &|c, past| {
            c.interval = INTERVAL_MIN - Duration::from_millis(u64::from(past))
        });
    }

    #[test]
    fn names_parse() {
        assert_eq!(
            parse_consistency("local_quorum").unwrap(),
            Consistency::LocalQuorum
        );
        assert!(parse_consistency("MOST").is_err());
        assert_eq!(consistency_name(parse_consistency("ALL").unwrap()), "ALL");
        assert_eq!(Workload::parse("lwt").unwrap(), Workload::Lwt);
        assert!(Workload::parse("tpcc").is_err());
        assert_eq!(Workload::Lwt.translate(Op::Write), Op::CasWrite);
        assert!(!Workload::TimeSeries.supports(Op::Delete));
    }
}
