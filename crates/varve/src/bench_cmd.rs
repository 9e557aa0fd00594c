//! `varve bench <scenario>`: a seed experiment end to end into a report
//! directory (crates/bench, docs/design/bench.md). This module only starts
//! a runtime and hands over the flags with this executable's path, which
//! the bench starts as its embedded node. Exit status: 0 when the run
//! finished or was stopped with one Ctrl-C (outputs written and rendered),
//! 130 on a second Ctrl-C, 1 on an error.

use anyhow::Context;

pub use varve_bench::BenchArgs;

/// Runs `varve bench` with `args`.
pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
    let exe = std::env::current_exe().context("finding the varve executable")?;
    let options = args.options(exe, &command_line)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("varve-bench")
        .build()
        .context("starting the async runtime")?;
    let outcome = runtime.block_on(varve_bench::run(options))?;
    if outcome.interrupted {
        eprintln!("interrupted: the last phase is marked so in summary.json");
    }
    Ok(())
}
