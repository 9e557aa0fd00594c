//! Counting panics on the simulation's thread. A panic inside a tokio
//! task does not fail the test: the runtime catches it and the task
//! simply ends (a gossip loop that panicked would look like a node gone
//! silent). The harness installs, once per process, a panic hook that
//! counts panics per thread before handing them to the previous hook, and
//! fails a run whose thread counted any.

use std::cell::Cell;
use std::sync::Once;

thread_local! {
    static PANICS: Cell<u64> = const { Cell::new(0) };
}

/// Installs the counting hook (once per process).
pub fn install() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.with(|p| p.set(p.get() + 1));
            previous(info);
        }));
    });
}

/// Panics on this thread so far.
pub fn count() -> u64 {
    PANICS.with(Cell::get)
}
