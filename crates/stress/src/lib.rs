//! `varve-stress`: the load generator behind `varve stress`, and the
//! library `varve bench` drives phase by phase.
//!
//! It speaks plain CQL through a real driver (the `scylla` crate: prepared
//! statements, token-aware routing), so it runs unchanged against Varve and
//! Apache Cassandra. It depends on no other Varve crate.
//!
//! Invariants:
//! - Latencies are microseconds in HdrHistograms; with `--rate fixed` they
//!   count from each operation's intended start, so a slow server cannot
//!   hide its queueing delay (no coordinated omission). See
//!   docs/design/stress.md.
//! - Keys and values are pure functions of (index, column, generation), so
//!   reads can be verified without remembering what was written.
//! - Outputs follow docs/format/run-directory.md (format version 1).
//!
//! Entry points: [`run`] (what `varve stress` does) and [`Runner`] (phases
//! under program control).

pub mod cli;
pub mod config;
pub mod error;
pub mod errors;
pub mod output;
pub mod population;
pub mod runner;
pub mod schedule;
pub mod spec;
pub mod stats;
pub mod target;
pub mod values;
mod worker;
pub mod workload;

pub use cli::{NamedPhase, RunPlan, StressArgs, StressCommand};
pub use config::{StressConfig, Workload};
pub use error::{Result, StressError};
pub use output::summary::{PhaseResult, RunSummary};
pub use population::Population;
pub use runner::{Runner, StopHandle};
pub use spec::{Limit, Op, OpMix, PhaseSpec, Rate};

/// Runs a plan the way `varve stress` does: phases in order, Ctrl-C stops
/// the current phase (operations in flight finish, the phase is marked
/// interrupted, later phases are skipped, outputs are still written); a
/// second Ctrl-C exits at once with status 130. Prints the result table on
/// stdout, and the summary.json path when there is an output directory.
pub async fn run(plan: RunPlan) -> Result<RunSummary> {
    let out = plan.config.out.clone();
    let mut runner = Runner::new(plan.config).await?;
    let stop = runner.stop_handle();
    let signals = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("interrupted: stopping (Ctrl-C again to exit at once)");
            stop.stop();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
    for phase in plan.phases {
        if runner.stop_handle().is_stopped() {
            break;
        }
        runner.run_phase(&phase.name, phase.spec).await?;
    }
    signals.abort();
    let summary = runner.finish()?;
    print!("{}", output::table::render(&summary));
    if let Some(dir) = out {
        println!("summary: {}", dir.join("summary.json").display());
    }
    Ok(summary)
}
