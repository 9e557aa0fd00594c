//! Point reads with O_DIRECT (`disk_access_mode: direct`): a chunk or an
//! index span the chunk cache misses comes from the disk into an aligned
//! buffer of the reading thread and is copied out, without a page cache
//! page to allocate, charge to the memory cgroup, and reclaim later. The
//! chunk cache is then the node's only cache of sstable data
//! (docs/design/read-path-io.md, "Reads around the page cache").
//!
//! A read of `[offset, offset + len)` reads the aligned range around it:
//! from `offset` rounded down to `DIRECT_ALIGN` to the end rounded up, in
//! one request, into the thread's [`AlignedWindow`] (the buffer compactions'
//! sequential reads use too, there with a larger refill), which grows to
//! the largest read the thread made and stays.

use std::cell::RefCell;
use std::fs::File;
use std::io;

use crate::fs_direct_read::AlignedWindow;

thread_local! {
    static WINDOW: RefCell<AlignedWindow> = RefCell::new(AlignedWindow::default());
}

/// Fills `buf` with `file`'s bytes from `offset` (a file opened with
/// O_DIRECT, [`crate::fs_direct_read::open_file`]); an `UnexpectedEof`
/// error when the file ends first.
pub(crate) fn read_exact_at(file: &File, offset: u64, buf: &mut [u8]) -> io::Result<()> {
    let end = offset
        .checked_add(buf.len() as u64)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "offset overflows"))?;
    WINDOW.with(|cell| {
        let mut window = cell.borrow_mut();
        // Only the aligned range around the bytes: no read ahead.
        window.fill(file, offset, end, 0)?;
        buf.copy_from_slice(window.bytes(offset, end));
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs_direct::DIRECT_ALIGN;
    use crate::fs_direct_read::{open_file, patterned_file};

    #[test]
    fn unaligned_reads_anywhere_return_the_files_bytes() {
        let Some((path, data)) = patterned_file("point-any", 3 * DIRECT_ALIGN + 777) else {
            return;
        };
        let f = open_file(&path).unwrap().unwrap();
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
        let Some((path, data)) = patterned_file("point-eof", DIRECT_ALIGN + 100) else {
            return;
        };
        let f = open_file(&path).unwrap().unwrap();
        let mut buf = vec![0u8; 200];
        let e = read_exact_at(&f, data.len() as u64 - 100, &mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        // The next read of the same thread is not disturbed by the failed one.
        let mut ok = vec![0u8; 100];
        read_exact_at(&f, data.len() as u64 - 100, &mut ok).unwrap();
        assert_eq!(&ok[..], &data[data.len() - 100..]);
        std::fs::remove_file(path).unwrap();
    }
}
