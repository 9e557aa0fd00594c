//! Point reads with O_DIRECT (`disk_access_mode: direct`): a chunk or an
//! index span the chunk cache misses comes from the disk into an aligned
//! buffer of the reading thread and is copied out, without a page cache
//! page to allocate, charge to the memory cgroup, and reclaim later. The
//! chunk cache is then the node's only cache of sstable data
//! (docs/design/read-path-io.md, "Reads around the page cache").
//!
//! A read of `[offset, offset + len)` reads the aligned range around it:
//! from `offset` rounded down to [`DIRECT_ALIGN`] to the end rounded up,
//! in one request. The buffer grows to the largest read the thread made
//! and stays, one per reading thread.

use std::cell::RefCell;
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use crate::fs_direct::DIRECT_ALIGN;

/// Opens `path` for O_DIRECT point reads, or `None` where the file system
/// refuses O_DIRECT (tmpfs): the caller then reads through the page cache.
pub(crate) fn open(path: &Path) -> io::Result<Option<File>> {
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

/// An aligned buffer: `store` holds `capacity + DIRECT_ALIGN` bytes and the
/// buffer proper starts at `start`, its first aligned address.
#[derive(Default)]
struct Aligned {
    store: Vec<u8>,
    start: usize,
    capacity: usize,
}

impl Aligned {
    fn at_least(&mut self, capacity: usize) -> &mut [u8] {
        if capacity > self.capacity {
            self.store = vec![0u8; capacity + DIRECT_ALIGN];
            self.start = self.store.as_ptr().align_offset(DIRECT_ALIGN);
            self.capacity = capacity;
        }
        &mut self.store[self.start..self.start + capacity]
    }
}

thread_local! {
    static BUFFER: RefCell<Aligned> = RefCell::new(Aligned::default());
}

/// Fills `buf` with `file`'s bytes from `offset` (an O_DIRECT file); an
/// `UnexpectedEof` error when the file ends first.
pub(crate) fn read_exact_at(file: &File, offset: u64, buf: &mut [u8]) -> io::Result<()> {
    let align = DIRECT_ALIGN as u64;
    let end = offset
        .checked_add(buf.len() as u64)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "offset overflows"))?;
    let from = offset - offset % align;
    let span = (end.next_multiple_of(align) - from) as usize;
    BUFFER.with(|cell| {
        let mut aligned = cell.borrow_mut();
        let window = aligned.at_least(span);
        let mut filled = 0;
        while filled < span {
            let n = file.read_at(&mut window[filled..], from + filled as u64)?;
            filled += n;
            // A short read is the end of the file.
            if n == 0 || n % DIRECT_ALIGN != 0 {
                break;
            }
        }
        let skip = (offset - from) as usize;
        if filled < skip + buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past the end of the file",
            ));
        }
        buf.copy_from_slice(&window[skip..skip + buf.len()]);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `len` patterned bytes where O_DIRECT works (the temporary
    /// directory, or the crate's directory when that is a tmpfs), opened
    /// for direct reads.
    fn file(name: &str, len: usize) -> Option<(std::path::PathBuf, File, Vec<u8>)> {
        let data: Vec<u8> = (0..len)
            .map(|i| (i as u8).wrapping_mul(31) ^ (i >> 12) as u8)
            .collect();
        let name = format!("varve-fs-direct-point-{}-{name}", std::process::id());
        for dir in [
            std::env::temp_dir(),
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")),
        ] {
            let path = dir.join(&name);
            std::fs::write(&path, &data).unwrap();
            if let Ok(Some(f)) = open(&path) {
                return Some((path, f, data));
            }
            std::fs::remove_file(&path).unwrap();
        }
        None
    }

    #[test]
    fn unaligned_reads_anywhere_return_the_files_bytes() {
        let Some((path, f, data)) = file("any", 3 * DIRECT_ALIGN + 777) else {
            return;
        };
        let len = data.len() as u64;
        for (offset, n) in [
            (0u64, 1usize),
            (1, 4095),
            (4095, 2),
            (5000, 8000),
            (len - 10, 10),
            (0, data.len()),
            (len, 0),
        ] {
            let mut buf = vec![0u8; n];
            read_exact_at(&f, offset, &mut buf).unwrap();
            assert_eq!(
                &buf[..],
                &data[offset as usize..offset as usize + n],
                "{offset} {n}"
            );
        }
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_read_past_the_end_is_an_unexpected_eof() {
        let Some((path, f, data)) = file("eof", DIRECT_ALIGN + 100) else {
            return;
        };
        let mut buf = vec![0u8; 200];
        let e = read_exact_at(&f, data.len() as u64 - 100, &mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        std::fs::remove_file(path).unwrap();
    }
}
