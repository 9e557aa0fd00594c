//! `varve stress` flags ([`StressArgs`], clap) and their translation into
//! a [`RunPlan`]: one [`StressConfig`] and the phases to run.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::config::{parse_consistency, parse_serial_consistency, StressConfig, Workload};
use crate::error::{Result, StressError};
use crate::population::Population;
use crate::spec::{parse_duration, Limit, Op, OpMix, PhaseSpec, Rate};

/// Population size when neither `--pop` nor `--n` says (cassandra-stress's).
pub const DEFAULT_POPULATION: u64 = 1_000_000;

/// What `varve stress` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StressCommand {
    /// Write rows (generation 0 values).
    Write,
    /// Read rows a previous `write` wrote (same --pop).
    Read,
    /// A weighted mix of operations (needs --ratio).
    Mixed,
}

impl StressCommand {
    fn name(self) -> &'static str {
        match self {
            StressCommand::Write => "write",
            StressCommand::Read => "read",
            StressCommand::Mixed => "mixed",
        }
    }
}

/// `varve stress <write|read|mixed> [flags]`.
#[derive(Args, Debug, Clone)]
pub struct StressArgs {
    /// write, read or mixed.
    #[arg(value_enum)]
    pub command: StressCommand,
    /// Operations to run (the phase ends after this many).
    #[arg(long, conflicts_with = "duration")]
    pub n: Option<u64>,
    /// How long to run: 30s, 500ms, 2m.
    #[arg(long)]
    pub duration: Option<String>,
    /// Unrecorded operations before the measured phase.
    #[arg(long, default_value_t = 0)]
    pub warmup: u64,
    /// Contact points, host:port, comma separated.
    #[arg(long, default_value = "127.0.0.1:9042", value_delimiter = ',')]
    pub hosts: Vec<String>,
    /// Concurrent operations (workers).
    #[arg(long, default_value_t = 64)]
    pub concurrency: usize,
    /// Connections per host.
    #[arg(long, default_value_t = 1)]
    pub connections: usize,
    /// unlimited, throttle=N/s (latency from the send) or fixed=N/s
    /// (latency from the intended start: no coordinated omission).
    #[arg(long, default_value = "unlimited")]
    pub rate: String,
    /// Operation weights for mixed: write=4,read=5,delete=1.
    #[arg(long)]
    pub ratio: Option<String>,
    /// Keys: seq=1..N, uniform=1..N or gaussian=1..N (default seq=1..n).
    #[arg(long)]
    pub pop: Option<String>,
    /// Bytes per value column.
    #[arg(long, default_value_t = 34)]
    pub col_size: usize,
    /// Value columns of the kv table.
    #[arg(long, default_value_t = 5)]
    pub col_count: usize,
    /// Consistency level: ONE, QUORUM, LOCAL_QUORUM, ALL...
    #[arg(long, default_value = "ONE")]
    pub cl: String,
    /// Serial consistency of LWT: SERIAL or LOCAL_SERIAL.
    #[arg(long, default_value = "SERIAL")]
    pub serial_cl: String,
    /// kv, largeblob, timeseries or lwt.
    #[arg(long, default_value = "kv")]
    pub workload: String,
    /// Keyspace (default keyspace1).
    #[arg(long, default_value = "keyspace1")]
    pub keyspace: String,
    /// Replication factor of the created keyspace (NetworkTopologyStrategy
    /// in the contact node's data centre).
    #[arg(long, default_value_t = 1)]
    pub replication_factor: u32,
    /// Compaction map for the created table: "{'class':'SizeTieredCompactionStrategy'}".
    #[arg(long)]
    pub compaction: Option<String>,
    /// Keys of the lwt workload (1 = fully contended).
    #[arg(long, default_value_t = 1000)]
    pub lwt_keys: u64,
    /// Check that reads return the rows `write` wrote (kv).
    #[arg(long)]
    pub verify: bool,
    /// Run directory for summary.json, intervals.csv and hdr/*.hlog.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Progress and intervals.csv period.
    #[arg(long, default_value = "1s")]
    pub interval: String,
    /// Do not create the keyspace and table.
    #[arg(long)]
    pub no_schema: bool,
    /// TRUNCATE the table first.
    #[arg(long)]
    pub truncate: bool,
    /// Seed of the random choices (keys of uniform/gaussian, op mix).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Client-side timeout of one request.
    #[arg(long, default_value = "12s")]
    pub timeout: String,
    /// The node's admin port (probed to tell Varve from Cassandra).
    #[arg(long, default_value_t = 9180)]
    pub admin_port: u16,
    /// No progress lines on stderr.
    #[arg(long)]
    pub quiet: bool,
}

/// A phase with its name.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedPhase {
    pub name: String,
    pub spec: PhaseSpec,
}

/// A whole run: settings and phases in order.
#[derive(Debug, Clone)]
pub struct RunPlan {
    pub config: StressConfig,
    pub phases: Vec<NamedPhase>,
}

impl StressArgs {
    /// The plan these flags describe; `command_line` goes to summary.json.
    pub fn plan(&self, command_line: &str) -> Result<RunPlan> {
        let limit = match (self.n, &self.duration) {
            (Some(n), None) => Limit::Ops(n),
            (None, Some(d)) => Limit::Duration(parse_duration(d)?),
            _ => {
                return Err(StressError::config(
                    "limit",
                    "give exactly one of --n or --duration",
                ))
            }
        };
        let workload = Workload::parse(&self.workload)?;
        let mix = match (self.command, &self.ratio) {
            (StressCommand::Mixed, Some(r)) => OpMix::parse(r)?,
            (StressCommand::Mixed, None) => {
                return Err(StressError::config(
                    "ratio",
                    "mixed needs --ratio, e.g. write=1,read=1",
                ))
            }
            (_, Some(_)) => return Err(StressError::config("ratio", "only mixed takes --ratio")),
            (StressCommand::Write, None) => OpMix::only(Op::Write),
            (StressCommand::Read, None) => OpMix::only(Op::Read),
        };
        let population = match &self.pop {
            Some(p) => Population::parse(p)?,
            None => Population::Seq {
                lo: 1,
                hi: self.n.filter(|n| *n > 0).unwrap_or(DEFAULT_POPULATION),
            },
        };
        let rate = Rate::parse(&self.rate)?;
        let config = StressConfig {
            hosts: self.hosts.clone(),
            connections: self.connections,
            consistency: parse_consistency(&self.cl)?,
            serial_consistency: parse_serial_consistency(&self.serial_cl)?,
            request_timeout: parse_duration(&self.timeout)?,
            workload,
            keyspace: self.keyspace.clone(),
            replication_factor: self.replication_factor,
            compaction: self.compaction.clone(),
            create_schema: !self.no_schema,
            truncate: self.truncate,
            population,
            column_size: self.col_size,
            column_count: self.col_count,
            lwt_keys: self.lwt_keys,
            verify: self.verify,
            interval: parse_duration(&self.interval)?,
            progress: !self.quiet,
            seed: self.seed,
            command: command_line.to_string(),
            out: self.out.clone(),
            admin_port: self.admin_port,
            ..StressConfig::default()
        };
        config.validate()?;
        let mut phases = Vec::new();
        if self.warmup > 0 {
            phases.push(NamedPhase {
                name: "warmup".to_string(),
                spec: PhaseSpec {
                    mix: mix.clone(),
                    rate: Rate::Unlimited,
                    limit: Limit::Ops(self.warmup),
                    concurrency: self.concurrency,
                    recorded: false,
                },
            });
        }
        phases.push(NamedPhase {
            name: self.command.name().to_string(),
            spec: PhaseSpec {
                mix,
                rate,
                limit,
                concurrency: self.concurrency,
                recorded: true,
            },
        });
        Ok(RunPlan { config, phases })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: StressArgs,
    }

    fn plan(argv: &[&str]) -> Result<RunPlan> {
        let cli = Cli::try_parse_from(std::iter::once("stress").chain(argv.iter().copied()))
            .map_err(|e| StressError::config("argv", e.to_string()))?;
        cli.args.plan(&argv.join(" "))
    }

    #[test]
    fn write_defaults_to_seq_over_n() {
        let p = plan(&["write", "--n", "2000"]).unwrap();
        assert_eq!(p.config.population, Population::Seq { lo: 1, hi: 2000 });
        assert_eq!(p.phases.len(), 1);
        assert_eq!(p.phases[0].name, "write");
        assert_eq!(p.phases[0].spec.limit, Limit::Ops(2000));
        assert_eq!(p.config.keyspace, "keyspace1");
    }

    #[test]
    fn mixed_needs_a_ratio_and_warmup_adds_a_phase() {
        assert!(plan(&["mixed", "--n", "10"]).is_err());
        assert!(plan(&["write", "--n", "10", "--ratio", "write=1"]).is_err());
        assert!(plan(&["write"]).is_err(), "no limit");
        assert!(plan(&["write", "--n", "1", "--duration", "1s"]).is_err());
        let p = plan(&[
            "mixed",
            "--duration",
            "3s",
            "--ratio",
            "write=1,read=1",
            "--warmup",
            "50",
            "--rate",
            "fixed=200/s",
            "--pop",
            "uniform=1..100",
            "--cl",
            "QUORUM",
        ])
        .unwrap();
        assert_eq!(p.phases.len(), 2);
        assert!(!p.phases[0].spec.recorded);
        assert_eq!(p.phases[1].spec.rate, Rate::Fixed { per_s: 200.0 });
        assert_eq!(
            p.phases[1].spec.limit,
            Limit::Duration(std::time::Duration::from_secs(3))
        );
        assert_eq!(p.phases[1].spec.mix.weight(Op::Read), 1);
    }

    #[test]
    fn bad_values_are_errors() {
        for bad in [
            &["write", "--n", "1", "--rate", "fast"][..],
            &["write", "--n", "1", "--cl", "MOST"],
            &["write", "--n", "1", "--workload", "tpcc"],
            &["write", "--n", "1", "--pop", "seq=9..1"],
            &["write", "--n", "1", "--connections", "0"],
            &["write", "--n", "1", "--interval", "1ms"],
        ] {
            assert!(plan(bad).is_err(), "{bad:?}");
        }
    }
}
