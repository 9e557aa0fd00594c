//! The process's memory allocator: mimalloc, and how long it keeps memory
//! that was freed.
//!
//! mimalloc instead of glibc malloc: the benchmark of issue 3 saw glibc's
//! per-thread arenas keep a gigabyte resident after flushes and spend a
//! fifth of the server's CPU in malloc/free. Built without transparent huge
//! pages (`no_thp`): with them, every page mimalloc takes back from the OS
//! faulted in a zeroed 2 MiB page, a quarter of the server's CPU under
//! writes, and RSS doubled.
//!
//! Freed memory is returned to the OS after [`PURGE_DELAY_MS`] instead of
//! mimalloc v2's 10 ms. A write workload frees a memtable's value chunks at
//! each flush and allocates new ones at once; returned too soon, every new
//! chunk page faults in a zeroed page again. Under a cgroup memory limit the
//! node keeps mimalloc's 10 ms ([`LIMITED_PURGE_DELAY_MS`]): there, memory
//! held back costs the page cache. See [`tune`].

use std::ffi::c_long;

#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How long freed memory stays with the process before mimalloc returns it
/// to the OS: mimalloc v3's default. Measured on 32 KiB-row writes (five
/// A/B pairs, docs/benchmarks.md, session 7): 26% more writes per server
/// CPU-second than with 10 ms on average (0 to 51% per pair), for about
/// 0.3 GiB more anonymous memory at the end of the run.
pub const PURGE_DELAY_MS: c_long = 1000;

/// `mi_option_purge_delay` in the mimalloc v2 sources this build compiles
/// (`include/mimalloc.h`); the Rust bindings name its neighbours
/// (`mi_option_eager_commit_delay` = 14, `mi_option_use_numa_nodes` = 16)
/// but not it. A test checks it against the option's default.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// The environment variable with which mimalloc users set the delay; when
/// it is set, its value is kept.
const PURGE_DELAY_ENV: &str = "MIMALLOC_PURGE_DELAY";

/// The purge delay of a node under a cgroup memory limit: mimalloc v2's
/// own. With [`PURGE_DELAY_MS`], a node in 1.5 GiB running the seeds' mix
/// during a garbagecollect held 1.1-1.2 GiB of anonymous memory against
/// 0.6-0.76 GiB with 10 ms (or 0) for the same budgets: memory freed on
/// threads that then sat idle (the read stage's, a paused compaction's) was
/// not given back until they ran again, and the kernel, short of page
/// cache, stalled every read for seconds (docs/benchmarks.md, session 12).
pub const LIMITED_PURGE_DELAY_MS: c_long = 10;

/// The purge delay for a node: [`LIMITED_PURGE_DELAY_MS`] under a memory
/// limit, else [`PURGE_DELAY_MS`].
pub fn purge_delay_for(memory_limited: bool) -> c_long {
    if memory_limited {
        LIMITED_PURGE_DELAY_MS
    } else {
        PURGE_DELAY_MS
    }
}

/// Sets the purge delay ([`purge_delay_for`]), unless the environment
/// chose one.
pub fn tune(memory_limited: bool) {
    if std::env::var_os(PURGE_DELAY_ENV).is_some() {
        return;
    }
    // SAFETY: mi_option_set stores an integer in mimalloc's option table
    // (atomically); it may be called at any time from any thread, and the
    // option is a plain delay with no memory-safety meaning.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, purge_delay_for(memory_limited))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn purge_delay() -> c_long {
        // SAFETY: reads an integer option.
        unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) }
    }

    /// The option id is purge_delay's (its v2 default is 10 ms, which no
    /// neighbour has), and `tune` sets it.
    #[test]
    fn tune_sets_the_purge_delay() {
        if std::env::var_os(PURGE_DELAY_ENV).is_some() {
            eprintln!("{PURGE_DELAY_ENV} is set; the default cannot be checked");
            return;
        }
        assert_eq!(purge_delay(), 10, "mimalloc v2's default purge delay");
        tune(false);
        assert_eq!(purge_delay(), PURGE_DELAY_MS);
        tune(true);
        assert_eq!(purge_delay(), LIMITED_PURGE_DELAY_MS);
        tune(false);
    }
}
