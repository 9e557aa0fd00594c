//! Whether the running thread may wait on the disk.
//!
//! The server runs statements on its event loop inside a [`NonBlocking`]
//! scope. There, anything in storage that would wait (a chunk in neither
//! the chunk cache nor the page cache, a mapped page not resident, a write
//! waiting for memtable memory) returns [`crate::Error::WouldBlock`]
//! instead, before it changed anything, and the server runs the statement
//! again on a thread that may block (docs/design/read-path-io.md). Threads
//! outside such a scope (the read stage, flushes, compactions, tests) may
//! always block.

use std::cell::Cell;

thread_local! {
    static NON_BLOCKING: Cell<bool> = const { Cell::new(false) };
    static BACKGROUND: Cell<bool> = const { Cell::new(false) };
}

/// While alive, the thread's reads are background reads (a compaction's
/// look at other sstables): they use what the chunk cache and the page
/// cache hold, but leave nothing behind in either (`RWF_DONTCACHE` where
/// the kernel has it), so that a compaction does not push out what the
/// clients read.
pub struct BackgroundReads {
    before: bool,
    _thread: std::marker::PhantomData<*const ()>,
}

impl BackgroundReads {
    pub fn enter() -> Self {
        BackgroundReads {
            before: BACKGROUND.with(|f| f.replace(true)),
            _thread: std::marker::PhantomData,
        }
    }
}

impl Drop for BackgroundReads {
    fn drop(&mut self) {
        BACKGROUND.with(|f| f.set(self.before));
    }
}

/// Whether this thread's reads should leave the caches as they found them.
pub fn background() -> bool {
    BACKGROUND.with(|f| f.get())
}

/// While alive, the thread that made it may not wait on the disk. Scopes
/// nest; dropping one restores what was before it.
pub struct NonBlocking {
    before: bool,
    /// Not `Send`: the flag belongs to the thread that set it.
    _thread: std::marker::PhantomData<*const ()>,
}

impl NonBlocking {
    /// Enters a non-blocking scope on this thread.
    pub fn enter() -> Self {
        NonBlocking {
            before: NON_BLOCKING.with(|f| f.replace(true)),
            _thread: std::marker::PhantomData,
        }
    }
}

impl Drop for NonBlocking {
    fn drop(&mut self) {
        NON_BLOCKING.with(|f| f.set(self.before));
    }
}

/// Whether this thread may wait on the disk now.
pub fn may_block() -> bool {
    !NON_BLOCKING.with(|f| f.get())
}

/// `Err(WouldBlock)` naming `what` when this thread may not block.
pub fn check_may_block(what: &'static str) -> crate::Result<()> {
    if may_block() {
        Ok(())
    } else {
        Err(crate::Error::WouldBlock { what })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_and_restore() {
        assert!(may_block());
        {
            let _outer = NonBlocking::enter();
            assert!(!may_block());
            {
                let _inner = NonBlocking::enter();
                assert!(!may_block());
            }
            assert!(!may_block(), "the inner scope restores the outer one");
            assert!(matches!(
                check_may_block("a chunk"),
                Err(crate::Error::WouldBlock { what: "a chunk" })
            ));
        }
        assert!(may_block());
        assert!(check_may_block("a chunk").is_ok());
    }

    #[test]
    fn background_reads_nest_and_restore() {
        assert!(!background());
        {
            let _a = BackgroundReads::enter();
            assert!(background());
            {
                let _b = BackgroundReads::enter();
            }
            assert!(background());
        }
        assert!(!background());
    }

    #[test]
    fn the_flag_is_per_thread() {
        let _scope = NonBlocking::enter();
        let other = std::thread::spawn(may_block).join().unwrap();
        assert!(other, "another thread is not in this thread's scope");
        assert!(!may_block());
    }
}
