//! The nodes' logs in a replayed simulation (`VARVE_SIM_LOG=FILTER`):
//! each line stamped with simulated time and the turmoil host it came
//! from, so it reads beside the history.

use std::fmt;

use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;

/// Simulated time and the host, in place of the wall clock.
struct SimTime;

impl FormatTime for SimTime {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        let at = turmoil::sim_elapsed().unwrap_or_default();
        write!(w, "{:>9.3}s", at.as_secs_f64())
    }
}

/// Logs to the test's output if `VARVE_SIM_LOG` is set.
pub fn init_from_env() {
    let Ok(filter) = std::env::var("VARVE_SIM_LOG") else {
        return;
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_timer(SimTime)
        .with_ansi(false)
        .with_test_writer()
        .try_init();
}
