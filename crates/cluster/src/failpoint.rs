//! Failpoints: named places where a test can make this process die, so
//! that what the design promises for a crash at that exact moment is
//! checked with real processes. `VARVE_FAILPOINTS` (comma-separated names)
//! is read once; with it unset, [`crash_if`] costs one load.
//!
//! Names: `batch_before_log` (a logged batch's coordinator, before any
//! batchlog holder got the batch), `batch_after_log` (after the holders
//! acknowledged it, before any of its writes was sent).

use std::sync::OnceLock;

fn active() -> &'static [String] {
    static ACTIVE: OnceLock<Vec<String>> = OnceLock::new();
    ACTIVE.get_or_init(|| {
        std::env::var("VARVE_FAILPOINTS")
            .map(|v| v.split(',').map(|s| s.trim().to_string()).collect())
            .unwrap_or_default()
    })
}

/// Aborts the process (as a crash would end it) when `name` is active.
pub fn crash_if(name: &str) {
    if active().iter().any(|a| a == name) {
        tracing::error!("failpoint {name}: aborting the process");
        std::process::abort();
    }
}
