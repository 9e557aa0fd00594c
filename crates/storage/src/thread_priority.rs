//! Background work below the client's: a compaction runs its thread at a
//! lower CPU priority (`nice` [`BACKGROUND_NICE`]) and in the idle I/O
//! class, so that on a busy node the scheduler and the disk serve client
//! requests first (docs/design/read-path-io.md, "Compaction beside the
//! client"). The guard restores the thread's priorities when dropped:
//! compactions also run on threads that serve other work afterwards (the
//! admin port's blocking pool).
//!
//! Best effort: where the kernel refuses (no permission, a scheduler that
//! ignores I/O classes), the work runs at the priority it had. The guard
//! also makes the thread's reads background reads
//! ([`crate::io_mode::BackgroundReads`]).

/// The `nice` value of compaction threads.
pub const BACKGROUND_NICE: i32 = 10;

const IOPRIO_CLASS_SHIFT: i32 = 13;
const IOPRIO_CLASS_IDLE: i32 = 3;
const IOPRIO_WHO_PROCESS: i32 = 1;

/// The calling thread's id (for the per-thread priority calls).
fn thread_id() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

fn get_ioprio(tid: i32) -> Option<i32> {
    // SAFETY: ioprio_get reads the priority of a thread of this process.
    let v = unsafe { libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, tid) };
    (v >= 0).then_some(v as i32)
}

fn set_ioprio(tid: i32, prio: i32) -> bool {
    // SAFETY: ioprio_set changes the I/O priority of a thread of this
    // process; no memory is passed.
    unsafe { libc::syscall(libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS, tid, prio) == 0 }
}

fn get_nice(tid: i32) -> Option<i32> {
    // getpriority returns -1 both as a value and an error: clear errno.
    // SAFETY: errno is thread-local; getpriority reads a thread's nice.
    unsafe {
        *libc::__errno_location() = 0;
        let v = libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t);
        (*libc::__errno_location() == 0).then_some(v)
    }
}

fn set_nice(tid: i32, nice: i32) -> bool {
    // SAFETY: setpriority changes a thread's nice value.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) == 0 }
}

/// While alive, the calling thread runs at background priority.
pub struct Background {
    /// Its reads leave the caches as they found them.
    _reads: crate::io_mode::BackgroundReads,
    tid: i32,
    nice: Option<i32>,
    ioprio: Option<i32>,
    /// Not `Send`: the priorities belong to the thread that set them.
    _thread: std::marker::PhantomData<*const ()>,
}

impl Background {
    /// Lowers the calling thread's CPU and I/O priority.
    pub fn enter() -> Background {
        let tid = thread_id();
        let nice = get_nice(tid);
        let ioprio = get_ioprio(tid);
        let lowered_nice = nice.filter(|n| *n < BACKGROUND_NICE && set_nice(tid, BACKGROUND_NICE));
        let lowered_io =
            ioprio.filter(|_| set_ioprio(tid, IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT));
        Background {
            _reads: crate::io_mode::BackgroundReads::enter(),
            tid,
            nice: lowered_nice,
            ioprio: lowered_io,
            _thread: std::marker::PhantomData,
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        // Raising a thread's priority back needs no privilege only down to
        // its old nice in recent kernels; as root (the service) it always
        // works. A failure leaves the thread at background priority.
        if let Some(n) = self.nice {
            set_nice(self.tid, n);
        }
        if let Some(p) = self.ioprio {
            set_ioprio(self.tid, p);
        }
    }
}

/// The calling thread's (nice, I/O priority), for tests.
pub fn current() -> (Option<i32>, Option<i32>) {
    let tid = thread_id();
    (get_nice(tid), get_ioprio(tid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_runs_in_the_background_while_the_guard_lives() {
        std::thread::spawn(|| {
            let (nice, io) = current();
            {
                let _bg = Background::enter();
                let (n, i) = current();
                if let Some(n) = n {
                    assert!(n >= BACKGROUND_NICE.min(nice.unwrap_or(0).max(BACKGROUND_NICE)));
                }
                if let Some(i) = i {
                    // Either the idle class, or the kernel refused.
                    assert!(i >> IOPRIO_CLASS_SHIFT == IOPRIO_CLASS_IDLE || Some(i) == io);
                }
            }
            assert_eq!(current(), (nice, io), "the guard restores both");
        })
        .join()
        .unwrap();
    }
}
