//! Sequential reads with O_DIRECT, for compactions: the file's bytes go
//! from the disk into one reused, aligned user-space buffer, without
//! passing through the page cache.
//!
//! Why: flushes and compactions write around the page cache
//! ([`crate::fs_direct`]), so a compaction's inputs are usually not cached,
//! and reading them through the cache takes a fresh cache page for every
//! 4 KiB. On the benchmark VM the first touch of such a page is costly: a
//! `garbagecollect` of 4.5 GB took 10-13 s of server CPU with its inputs
//! read from the disk and 3-3.6 s with them cached (docs/benchmarks.md,
//! session 10). One buffer, filled again and again, avoids that.
//!
//! How: a read of `[start, end)` outside the buffer's window refills the
//! buffer from `start` rounded down to `DIRECT_ALIGN`, `DIRECT_READ_BYTES`
//! at a time (more if one read needs it). Reads that move forward through
//! the file, as a compaction's do, are served from the window until it is
//! passed. A file system that refuses O_DIRECT (tmpfs) makes [`open`]
//! return `None`; the caller then reads as usual.
//!
//! `AlignedWindow` and `open_file` also serve point reads around the page
//! cache (`fs_direct_point`), which refill only the aligned range they
//! need.

use crate::fs_direct::DIRECT_ALIGN;
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

/// Bytes per refill of the buffer: small enough that a client's read that
/// reaches the disk behind one waits little (a background reader of 1 MiB
/// reads raised the p99 of 16 KiB random reads on this machine's disk from
/// 0.31 to 1.53 ms, one of 256 KiB reads to 0.48 ms), large enough to
/// read 900 MB/s front to back with one in flight.
pub const DIRECT_READ_BYTES: usize = 256 << 10;

/// A file read front to back with O_DIRECT.
pub struct DirectReader {
    file: File,
    window: AlignedWindow,
}

/// Opens `path` for O_DIRECT reading, or `None` when the file system does
/// not support it.
pub fn open(path: &Path) -> io::Result<Option<DirectReader>> {
    Ok(open_file(path)?.map(|file| DirectReader {
        file,
        window: AlignedWindow::default(),
    }))
}

/// Opens `path` with O_DIRECT, or `None` when the file system refuses it
/// (tmpfs).
pub(crate) fn open_file(path: &Path) -> io::Result<Option<File>> {
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path);
    match opened {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(None),
        Err(e) => Err(e),
    }
}

impl DirectReader {
    /// The file's bytes `[start, end)`; an `UnexpectedEof` error when the
    /// file ends before `end`.
    pub fn bytes(&mut self, start: u64, end: u64) -> io::Result<&[u8]> {
        if !self.window.holds(start, end) {
            self.window
                .fill(&self.file, start, end, DIRECT_READ_BYTES)?;
        }
        Ok(self.window.bytes(start, end))
    }
}

/// One stretch of a file read with O_DIRECT into an aligned buffer, which
/// grows to the largest stretch asked for and is then reused.
#[derive(Default)]
pub(crate) struct AlignedWindow {
    /// `capacity + DIRECT_ALIGN` bytes; the buffer proper starts at
    /// `start`, the first aligned address.
    store: Vec<u8>,
    start: usize,
    capacity: usize,
    /// File offset of the buffer's first byte (a multiple of
    /// `DIRECT_ALIGN`) and how many bytes it holds.
    at: u64,
    filled: usize,
}

impl AlignedWindow {
    /// Whether the window holds `[start, end)`.
    fn holds(&self, start: u64, end: u64) -> bool {
        start >= self.at && end <= self.at + self.filled as u64 && start <= end
    }

    /// The file's bytes `[start, end)`, which the last [`fill`] covered.
    ///
    /// [`fill`]: AlignedWindow::fill
    pub(crate) fn bytes(&self, start: u64, end: u64) -> &[u8] {
        let from = self.start + (start - self.at) as usize;
        &self.store[from..from + (end - start) as usize]
    }

    /// Reads `file` (opened with O_DIRECT) from `start` rounded down
    /// through at least `end`, and `min_bytes` where the file has them;
    /// an `UnexpectedEof` error when the file ends before `end`.
    pub(crate) fn fill(
        &mut self,
        file: &File,
        start: u64,
        end: u64,
        min_bytes: usize,
    ) -> io::Result<()> {
        if end < start {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "end before start",
            ));
        }
        let at = start - start % DIRECT_ALIGN as u64;
        let need = (end - at) as usize;
        let capacity = need.max(min_bytes).next_multiple_of(DIRECT_ALIGN);
        if capacity > self.capacity {
            self.store = vec![0u8; capacity + DIRECT_ALIGN];
            self.start = self.store.as_ptr().align_offset(DIRECT_ALIGN);
            self.capacity = capacity;
        }
        self.at = at;
        self.filled = 0;
        while self.filled < need {
            // Offsets and lengths stay aligned: `filled` is a multiple of
            // the alignment until the short read at the end of the file.
            let from = self.start + self.filled;
            let buf = &mut self.store[from..self.start + capacity];
            let n = file.read_at(buf, at + self.filled as u64)?;
            if n == 0 {
                break;
            }
            self.filled += n;
            if n % DIRECT_ALIGN != 0 {
                break;
            }
        }
        if self.filled < need {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past the end of the file",
            ));
        }
        Ok(())
    }
}

/// Test support: a file of `len` patterned bytes named after `name` where
/// O_DIRECT works (the temporary directory, or the crate's directory when
/// that is a tmpfs), or `None` where it works nowhere.
#[cfg(test)]
pub(crate) fn patterned_file(name: &str, len: usize) -> Option<(std::path::PathBuf, Vec<u8>)> {
    let data: Vec<u8> = (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ (i >> 12) as u8)
        .collect();
    let name = format!("varve-fs-direct-{}-{name}", std::process::id());
    for dir in [
        std::env::temp_dir(),
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")),
    ] {
        let path = dir.join(&name);
        std::fs::write(&path, &data).unwrap();
        if let Ok(Some(_)) = open_file(&path) {
            return Some((path, data));
        }
        let _ = std::fs::remove_file(&path);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Forward reads of every shape (within the window, across its end,
    /// longer than a refill, unaligned, empty, up to the last byte) and a
    /// read backwards return exactly the file's bytes; one byte past the
    /// end, or a range that ends before it starts, is an error.
    #[test]
    fn reads_return_exactly_the_files_bytes() {
        let a = DIRECT_ALIGN as u64;
        let b = DIRECT_READ_BYTES as u64;
        let len = 3 * b + a + 123;
        let Some((path, data)) = patterned_file("exact", len as usize) else {
            eprintln!("no O_DIRECT on this file system; nothing to check");
            return;
        };
        let mut r = open(&path).unwrap().unwrap();
        let ranges = [
            (0, 0),
            (0, 1),
            (1, a + 1),
            (a - 1, b - 1),
            (b - 10, b + 10),
            (b + 10, b + 10),
            (b + 11, 3 * b),
            (5, 6),
            (2 * b + 7, len),
            (len, len),
            (len - 1, len),
        ];
        for (start, end) in ranges {
            let got = r.bytes(start, end).unwrap();
            assert!(got == &data[start as usize..end as usize], "{start}..{end}");
        }
        let err = r.bytes(len - 10, len + 1).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        let err = r.bytes(10, 9).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "end before start");
        assert!(
            r.bytes(0, 3).unwrap() == &data[..3],
            "usable after an error"
        );
        std::fs::remove_file(path).unwrap();
    }
}
