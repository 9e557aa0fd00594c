//! Reads that never wait on the disk: `preadv2(2)` with `RWF_NOWAIT`
//! (Linux 4.14, buffered reads on ext4 and xfs since 5.x) copies what the
//! page cache holds and answers `EAGAIN` where it would have to read the
//! disk. The event loop reads this way (docs/design/read-path-io.md).
//!
//! Where the kernel or the file system lacks the flag (`EOPNOTSUPP`,
//! `EINVAL`, `ENOSYS`), the first such answer turns the probe off for the
//! process and every non-blocking read reports that it would wait: the
//! read then runs on the read stage, the fallback path.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

/// Cleared once the kernel refused `RWF_NOWAIT`.
static NOWAIT_SUPPORTED: AtomicBool = AtomicBool::new(true);

/// Whether the probe is still on for this process.
pub fn nowait_supported() -> bool {
    NOWAIT_SUPPORTED.load(Ordering::Relaxed)
}

/// Fills `buf` from `offset` of `fd` if the page cache holds all of it:
/// `Ok(true)`; `Ok(false)` when part of it would come from the disk (the
/// contents of `buf` are then unspecified). The caller has checked that
/// the range lies within the file, so a short answer means "not cached",
/// never the end of the file.
pub fn pread_nowait(fd: std::os::fd::RawFd, offset: u64, buf: &mut [u8]) -> io::Result<bool> {
    if !nowait_supported() {
        return Ok(false);
    }
    let mut done = 0usize;
    while done < buf.len() {
        let rest = &mut buf[done..];
        let iov = libc::iovec {
            iov_base: rest.as_mut_ptr() as *mut libc::c_void,
            iov_len: rest.len(),
        };
        let at = offset + done as u64;
        let Ok(at) = libc::off_t::try_from(at) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "offset past what the platform can address",
            ));
        };
        // SAFETY: `iov` describes `rest`, which lives and is writable for
        // the call; the fd is open for the call (the caller owns it).
        let n = unsafe { libc::preadv2(fd, &iov, 1, at, libc::RWF_NOWAIT) };
        if n > 0 {
            done += n as usize;
            continue;
        }
        if n == 0 {
            // The file ended before the range did: not what the caller
            // checked, so report it as a real read would.
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past the end of the file",
            ));
        }
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) => Ok(false),
            Some(libc::EINTR) => continue,
            Some(libc::EOPNOTSUPP | libc::EINVAL | libc::ENOSYS) => {
                NOWAIT_SUPPORTED.store(false, Ordering::Relaxed);
                tracing::info!(
                    "preadv2 with RWF_NOWAIT is not available here ({e}): \
                     reads missing the chunk cache go to the read stage"
                );
                Ok(false)
            }
            _ => Err(e),
        };
    }
    Ok(true)
}

/// `RWF_DONTCACHE` (Linux 6.14): a buffered read that drops the pages it
/// brought into the page cache once done (not those already there).
const RWF_DONTCACHE: libc::c_int = 0x80;

/// Cleared once the kernel or the file system refused `RWF_DONTCACHE`.
static DONTCACHE_SUPPORTED: AtomicBool = AtomicBool::new(true);

/// Fills `buf` from `offset` of `fd` with `RWF_DONTCACHE`: `Ok(true)` when
/// it did; `Ok(false)` where the flag is not supported (the caller then
/// reads the plain way). A short read (the file ended) is an error.
pub fn pread_dontcache(fd: std::os::fd::RawFd, offset: u64, buf: &mut [u8]) -> io::Result<bool> {
    if !DONTCACHE_SUPPORTED.load(Ordering::Relaxed) {
        return Ok(false);
    }
    let mut done = 0usize;
    while done < buf.len() {
        let rest = &mut buf[done..];
        let iov = libc::iovec {
            iov_base: rest.as_mut_ptr() as *mut libc::c_void,
            iov_len: rest.len(),
        };
        let Ok(at) = libc::off_t::try_from(offset + done as u64) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "offset past what the platform can address",
            ));
        };
        // SAFETY: `iov` describes `rest`, writable for the call; the fd is
        // open for the call (the caller owns it).
        let n = unsafe { libc::preadv2(fd, &iov, 1, at, RWF_DONTCACHE) };
        if n > 0 {
            done += n as usize;
            continue;
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past the end of the file",
            ));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EOPNOTSUPP | libc::EINVAL | libc::ENOSYS) if done == 0 => {
                DONTCACHE_SUPPORTED.store(false, Ordering::Relaxed);
                return Ok(false);
            }
            _ => return Err(e),
        }
    }
    Ok(true)
}

/// The size of a memory page.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as u64
    } else {
        4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    fn test_file(name: &str, len: usize) -> (std::path::PathBuf, Vec<u8>) {
        let dir = std::env::temp_dir().join(format!("varve-nowait-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        (path, bytes)
    }

    /// Bytes just written are in the page cache: the probe reads them
    /// (or, on a kernel without the flag, says it would wait).
    #[test]
    fn cached_bytes_are_read_without_waiting() {
        let (path, bytes) = test_file("cached", 100_000);
        let file = std::fs::File::open(&path).unwrap();
        let mut buf = vec![0u8; 40_000];
        let got = pread_nowait(file.as_raw_fd(), 12_345, &mut buf).unwrap();
        if nowait_supported() {
            assert!(got);
            assert_eq!(&buf[..], &bytes[12_345..52_345]);
        } else {
            assert!(!got);
        }
        std::fs::remove_file(&path).unwrap();
    }

    /// Bytes dropped from the page cache would come from the disk: the
    /// probe says so instead of reading them.
    #[test]
    fn uncached_bytes_are_not_waited_for() {
        let (path, _) = test_file("uncached", 1 << 20);
        let file = std::fs::File::open(&path).unwrap();
        if in_memory_fs(&file) {
            return; // tmpfs: every page is "cached", nothing to drop
        }
        file.sync_all().unwrap();
        // SAFETY: plain advice on an open fd.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        assert_eq!(rc, 0);
        let mut buf = vec![0u8; 16 << 10];
        let got = pread_nowait(file.as_raw_fd(), 512 << 10, &mut buf).unwrap();
        assert!(!got, "a page just dropped was read without waiting");
        std::fs::remove_file(&path).unwrap();
    }

    /// Whether the file lives on tmpfs or ramfs, where nothing is dropped.
    fn in_memory_fs(file: &std::fs::File) -> bool {
        // SAFETY: statfs fills the zeroed struct for an open fd.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) };
        const TMPFS_MAGIC: i64 = 0x0102_1994;
        const RAMFS_MAGIC: i64 = 0x8584_58f6;
        rc == 0 && [TMPFS_MAGIC, RAMFS_MAGIC].contains(&(st.f_type as i64))
    }

    #[test]
    fn an_uncached_read_reads_the_bytes_and_leaves_no_pages_behind() {
        let (path, bytes) = test_file("dontcache", 1 << 20);
        let file = std::fs::File::open(&path).unwrap();
        file.sync_all().unwrap();
        // SAFETY: plain advice on an open fd.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        let mut buf = vec![0u8; 64 << 10];
        if !pread_dontcache(file.as_raw_fd(), 256 << 10, &mut buf).unwrap() {
            return; // the kernel or the file system lacks RWF_DONTCACHE
        }
        assert_eq!(&buf[..], &bytes[256 << 10..320 << 10]);
        if !in_memory_fs(&file) && nowait_supported() {
            let mut probe = vec![0u8; 4096];
            let cached = pread_nowait(file.as_raw_fd(), 256 << 10, &mut probe).unwrap();
            assert!(!cached, "the pages an uncached read brought in stayed");
        }
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn the_page_size_is_a_power_of_two() {
        assert!(page_size().is_power_of_two());
        assert!(page_size() >= 4096);
    }
}
