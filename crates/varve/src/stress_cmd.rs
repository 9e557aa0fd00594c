//! `varve stress`: the load generator of `varve-stress`, run on its own
//! runtime. Exit status: 0 when the run finished or was stopped with one
//! Ctrl-C (outputs written, last phase marked interrupted), 130 on a second
//! Ctrl-C, 1 on an error.

use anyhow::Context;

pub use varve_stress::StressArgs;

/// Runs `varve stress` with `args`.
pub fn run(args: StressArgs) -> anyhow::Result<()> {
    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
    let plan = args.plan(&command_line)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("varve-stress")
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(varve_stress::run(plan))?;
    Ok(())
}
