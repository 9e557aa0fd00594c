//! The deterministic simulation of a cluster (docs/design/cluster.md,
//! section 11): several nodes in one process on turmoil's simulated
//! network and clock, a nemesis drawn from a seed, a history of what each
//! node observed, and a checker that judges the history.
//!
//! Test-only (`cfg(test)`): turmoil is a dev-dependency, so it never
//! reaches a production build, and `cargo test -p varve-cluster` runs the
//! seeds with the crate's other tests. The nodes run the production code
//! unchanged: [`env`] implements `Env`'s `Network` and `Clock` over
//! turmoil, and [`node`] starts `Messaging` and `Gossiper` on it as the
//! server does (and, in a run with data, the replica handlers and the
//! `Coordinator`).
//!
//! - [`harness`]: one run from a seed ([`harness::SimConfig`],
//!   [`harness::run`]);
//! - [`nemesis`]: the plan of faults drawn from the seed;
//! - [`history`]: what was observed, with simulated times;
//! - [`checker`]: the membership properties a history must have, over
//!   the history replayed ([`timeline`]);
//! - [`metadata`]: the metadata log's runs under the same nemesis, with
//!   their own workload and checks;
//! - in a run with data: [`data`], each node's engine, replica handlers,
//!   coordinator and client; [`workload`], the client operations drawn
//!   from the seed; [`data_checker`], what their outcomes must satisfy;
//! - in a run with LWT: [`lwt`], clients doing compare-and-set and SERIAL
//!   reads through Paxos; [`linearizability`], whether a history of
//!   reads, writes and compare-and-sets of registers is linearizable, the
//!   judge of those runs;
//! - in a run where a node joins, leaves, or replaces a dead one, or a
//!   dead one is removed: [`movement`], the metadata's epochs applied node
//!   by node, clients writing (and running LWT) throughout;
//!   [`movement_steps`], the moving node's step through the production
//!   streaming code; [`movement_final`], the engines recorded, the
//!   repairs and the final reads; [`bootstrap_workload`] and
//!   [`movement_workload`], what such a run draws from its seed;
//!   [`movement_checker`], no acknowledged write lost across the
//!   movement, replicas equal after repair, LWT linearizable;
//!   [`movement_event`], its history lines;
//! - `tests`, `data_tests`, `lwt_tests`, `bootstrap_tests` and
//!   `movement_tests`: the seeds CI runs, one or many more from the
//!   environment, and the determinism checks; `regressions`: the seeds
//!   and scenarios kept because they once failed.
//!
//! What makes a seed replay: every random choice comes from the seed
//! (nodes' `SeededRng`s, turmoil's RNG, the plan); the epoch is fixed;
//! every `select!` of the crate is `biased` (tokio's unbiased choice is
//! seeded only under `--cfg tokio_unstable`); cluster code keeps no hash
//! maps; all hosts run on one thread; and cluster code goes to tokio's
//! blocking pool only when the storage engine's non-blocking scope
//! refuses, which the simulation's in-memory engines never do (a task on
//! the pool ends at a moment of real time).

pub mod bootstrap_storage;
pub mod bootstrap_workload;
pub mod checker;
pub mod data;
pub mod data_checker;
pub mod env;
pub mod harness;
pub mod history;
pub mod linearizability;
mod log;
pub mod lwt;
pub mod metadata;
pub mod movement;
pub mod movement_checker;
pub mod movement_event;
pub mod movement_final;
pub mod movement_steps;
pub mod movement_workload;
pub mod nemesis;
pub mod node;
mod panics;
pub mod scan;
pub mod timeline;
pub mod workload;

mod bootstrap_tests;
mod data_tests;
mod lwt_tests;
mod movement_tests;
mod regressions;
mod tests;
