//! `varve-bench`: the seed experiments end to end (`varve bench <scenario>`).
//!
//! A run starts a node (this same executable as `varve server`), a
//! cluster (`--nodes N`, through `varve cluster start`), or uses
//! `--hosts`, samples the server once a second into server.csv, drives the
//! scenario's phases through `varve-stress` runners, takes each phase's
//! actions (ALTER TABLE, garbagecollect) and marks them in events.csv, then
//! writes the run directory (docs/format/run-directory.md) and renders its
//! report with `varve-report`. See docs/design/bench.md.
//!
//! Invariants:
//! - Plans are pure values ([`plan`]); what runs is what `--plan-only`
//!   prints and what the unit tests check against the seeds.
//! - One clock for the run: intervals, server samples and events share
//!   `t` (segments run on separate runners are shifted onto it, [`merge`]).
//! - Text from the server (metrics, nodetool output, HTTP) is untrusted: a
//!   parse failure is an empty cell or an event, never a panic.
//! - A Ctrl-C still writes what was measured and stops the embedded node.
//!
//! It depends on `varve-stress` and `varve-report` only (and the CQL driver
//! for ALTER TABLE through the runner's session).

pub mod actions;
pub mod cgroup;
pub mod cli;
pub mod clock;
pub mod cluster;
pub mod commitlog_dirs;
pub mod error;
pub mod events;
pub mod external;
pub mod gc_log;
pub mod http;
pub mod interrupt;
pub mod jolokia;
pub mod judge;
pub mod merge;
pub mod node;
pub mod plan;
pub mod prom;
pub mod rate_report;
pub mod run;
pub mod sampler;
pub mod seed_table;

pub use cli::{BenchArgs, BenchOptions};
pub use error::{BenchError, Result};
pub use plan::{Plan, Scenario, Size, Variant};
pub use run::{run, Outcome};
