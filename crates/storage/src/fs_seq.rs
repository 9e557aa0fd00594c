//! Files written front to back in bulk (sstables): the bytes gather in a
//! user-space buffer and reach the kernel in large writes, and once enough
//! has been written a helper thread starts writing it back (fdatasync on
//! its own handle) while the writer goes on, so the final
//! [`WriteFile::sync`] finds little left to do and dirty pages do not pile
//! up behind a long compaction.
//!
//! Durability is unchanged: bytes are durable only after `sync`, which
//! writes the buffer out, waits for the helper, reports any error the
//! helper met (a background fdatasync consumes the file's writeback error,
//! so it must be passed on) and then runs its own fdatasync. Bytes still
//! in the buffer are lost if the process dies, which is within the
//! contract: nothing unsynced was promised.

use crate::fs::WriteFile;
use std::io::{self, Write};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::thread::JoinHandle;

/// Bytes gathered before one write(2): fewer system calls and partly
/// written pages than one write per chunk. Measured (the compaction bench
/// in `engine_compact`): 1 MiB was worse than one write per chunk, the
/// kernel's copy into the page cache then reading a buffer no longer in
/// the CPU cache; 128 KiB was not.
pub const WRITE_BUFFER_BYTES: usize = 128 << 10;

/// Bytes written between two requests to the write-behind helper (each an
/// fdatasync, so also a journal commit: not too often).
pub const WRITE_BEHIND_BYTES: u64 = 32 << 20;

/// How a sequential file is written (the bench compares settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeqWriteOptions {
    /// 0: every `write_all` is one write(2).
    pub buffer_bytes: usize,
    /// 0: no write-behind; all writeback waits for `sync`.
    pub write_behind_bytes: u64,
}

impl Default for SeqWriteOptions {
    fn default() -> Self {
        SeqWriteOptions {
            buffer_bytes: WRITE_BUFFER_BYTES,
            write_behind_bytes: WRITE_BEHIND_BYTES,
        }
    }
}

/// Gathers small writes into writes of exactly `capacity` bytes; a write at
/// least that large with nothing gathered goes through as is.
pub struct WriteBuffer<W: Write> {
    inner: W,
    buf: Vec<u8>,
    capacity: usize,
}

impl<W: Write> WriteBuffer<W> {
    pub fn new(inner: W, capacity: usize) -> Self {
        WriteBuffer {
            inner,
            buf: Vec::with_capacity(capacity),
            capacity,
        }
    }

    pub fn write_all(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            if self.buf.is_empty() && data.len() >= self.capacity {
                return self.inner.write_all(data);
            }
            let room = self.capacity - self.buf.len();
            let (now, later) = data.split_at(room.min(data.len()));
            self.buf.extend_from_slice(now);
            data = later;
            if self.buf.len() >= self.capacity {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Hands every gathered byte to the inner writer.
    pub fn flush(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            self.inner.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    pub fn get_ref(&self) -> &W {
        &self.inner
    }
}

/// A file of the real file system written front to back.
pub struct SeqFile {
    out: WriteBuffer<std::fs::File>,
    len: u64,
    options: SeqWriteOptions,
    /// `len` at the last request to the helper.
    requested_at: u64,
    helper: Option<Helper>,
    /// Requests made of the helper (tests check the interval by it).
    #[cfg(test)]
    write_behind_requests: u64,
}

/// The write-behind thread: one fdatasync per request, requests coalesced.
struct Helper {
    requests: SyncSender<()>,
    thread: JoinHandle<io::Result<()>>,
}

impl SeqFile {
    pub fn create(path: &std::path::Path, options: SeqWriteOptions) -> io::Result<Self> {
        let file = std::fs::File::create(path)?;
        Ok(SeqFile {
            out: WriteBuffer::new(file, options.buffer_bytes.max(1)),
            len: 0,
            options,
            requested_at: 0,
            helper: None,
            #[cfg(test)]
            write_behind_requests: 0,
        })
    }

    fn write_behind(&mut self) -> io::Result<()> {
        let due = self.options.write_behind_bytes;
        if due == 0 || self.len - self.requested_at < due {
            return Ok(());
        }
        self.requested_at = self.len;
        #[cfg(test)]
        {
            self.write_behind_requests += 1;
        }
        // Only what reached the kernel can be written back.
        self.out.flush()?;
        if self.helper.is_none() {
            let file = self.out.get_ref().try_clone()?;
            let (requests, rx) = mpsc::sync_channel::<()>(1);
            let thread = std::thread::Builder::new()
                .name("write-behind".into())
                .spawn(move || {
                    while rx.recv().is_ok() {
                        file.sync_data()?;
                    }
                    Ok(())
                })?;
            self.helper = Some(Helper { requests, thread });
        }
        if let Some(h) = &self.helper {
            match h.requests.try_send(()) {
                // Full: a request is already waiting and covers these bytes.
                Ok(()) | Err(TrySendError::Full(())) => {}
                // The helper stopped on an error: `sync` reports it.
                Err(TrySendError::Disconnected(())) => {}
            }
        }
        Ok(())
    }

    /// Stops the helper and returns the first error it met.
    fn join_helper(&mut self) -> io::Result<()> {
        let Some(Helper { requests, thread }) = self.helper.take() else {
            return Ok(());
        };
        drop(requests);
        thread
            .join()
            .map_err(|_| io::Error::other("write-behind thread panicked"))?
    }
}

impl WriteFile for SeqFile {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.out.write_all(buf)?;
        self.len += buf.len() as u64;
        self.write_behind()
    }

    fn sync(&mut self) -> io::Result<()> {
        self.out.flush()?;
        self.join_helper()?;
        self.out.get_ref().sync_data()
    }

    fn len(&self) -> u64 {
        self.len
    }
}

impl Drop for SeqFile {
    fn drop(&mut self) {
        // Unsynced bytes carry no promise; hand them to the kernel anyway
        // (as a plain write would have), but never wait for the disk.
        let _ = self.out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records each write it receives.
    #[derive(Default)]
    struct Recorder(Vec<Vec<u8>>);

    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    const N: usize = 8;

    fn sizes(w: &WriteBuffer<Recorder>) -> Vec<usize> {
        w.get_ref().0.iter().map(Vec::len).collect()
    }

    #[test]
    fn write_buffer_writes_at_exactly_its_capacity() {
        let mut w = WriteBuffer::new(Recorder::default(), N);
        w.write_all(&[1; N - 1]).unwrap();
        assert_eq!(sizes(&w), Vec::<usize>::new(), "N - 1 bytes stay gathered");
        w.write_all(&[2]).unwrap();
        assert_eq!(sizes(&w), vec![N], "the N-th byte writes N bytes");
    }

    #[test]
    fn write_buffer_keeps_the_byte_past_its_capacity() {
        let mut w = WriteBuffer::new(Recorder::default(), N);
        w.write_all(&[1; 3]).unwrap();
        w.write_all(&[2; N - 2]).unwrap();
        assert_eq!(sizes(&w), vec![N], "N + 1 bytes: N written");
        w.flush().unwrap();
        assert_eq!(sizes(&w), vec![N, 1], "the last byte on flush");
    }

    #[test]
    fn write_buffer_passes_large_writes_through_when_empty() {
        let mut w = WriteBuffer::new(Recorder::default(), N);
        w.write_all(&[1; N]).unwrap();
        w.write_all(&[2; N + 1]).unwrap();
        assert_eq!(sizes(&w), vec![N, N + 1]);
        w.write_all(&[3; 1]).unwrap();
        w.write_all(&[4; N + 1]).unwrap();
        assert_eq!(sizes(&w), vec![N, N + 1, N], "gathered bytes go first");
        w.flush().unwrap();
        assert_eq!(sizes(&w), vec![N, N + 1, N, 2]);
    }

    fn pieces(seed: u64, total: usize) -> Vec<Vec<u8>> {
        let mut x = seed;
        let mut out = Vec::new();
        let mut n = 0;
        while n < total {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let len = ((x >> 33) % (3 * N as u64)) as usize;
            out.push((0..len).map(|i| (n + i) as u8).collect::<Vec<u8>>());
            n += len;
        }
        out
    }

    #[test]
    fn write_buffer_bytes_match_the_unbuffered_path() {
        for seed in 0..200 {
            let parts = pieces(seed, 100);
            let mut w = WriteBuffer::new(Recorder::default(), N);
            for p in &parts {
                w.write_all(p).unwrap();
            }
            w.flush().unwrap();
            assert!(w.get_ref().0.iter().all(|x| !x.is_empty()), "seed {seed}");
            assert_eq!(w.get_ref().0.concat(), parts.concat(), "seed {seed}");
        }
    }

    fn temp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("varve-fs-seq-{}-{name}", std::process::id()))
    }

    #[test]
    fn seq_file_bytes_match_the_unbuffered_path_with_write_behind() {
        for options in [
            SeqWriteOptions {
                buffer_bytes: 0,
                write_behind_bytes: 0,
            },
            SeqWriteOptions {
                buffer_bytes: 64,
                write_behind_bytes: 1000,
            },
            SeqWriteOptions {
                buffer_bytes: 4096,
                write_behind_bytes: 300,
            },
        ] {
            let path = temp(&format!(
                "{}-{}",
                options.buffer_bytes, options.write_behind_bytes
            ));
            let parts = pieces(7, 20_000);
            let mut f = SeqFile::create(&path, options).unwrap();
            for p in &parts {
                f.write_all(p).unwrap();
            }
            assert_eq!(f.len(), parts.concat().len() as u64);
            f.sync().unwrap();
            drop(f);
            assert_eq!(std::fs::read(&path).unwrap(), parts.concat(), "{options:?}");
            std::fs::remove_file(&path).unwrap();
        }
    }

    /// Writes `total` bytes in pieces of at most `piece` bytes and returns
    /// how many write-behind requests they made.
    fn write_behind_requests(name: &str, interval: u64, total: usize, piece: usize) -> u64 {
        let path = temp(name);
        let options = SeqWriteOptions {
            buffer_bytes: 16,
            write_behind_bytes: interval,
        };
        let mut f = SeqFile::create(&path, options).unwrap();
        let mut left = total;
        while left > 0 {
            let n = left.min(piece);
            f.write_all(&vec![7; n]).unwrap();
            left -= n;
        }
        let requests = f.write_behind_requests;
        f.sync().unwrap();
        drop(f);
        assert_eq!(std::fs::read(&path).unwrap().len(), total);
        std::fs::remove_file(&path).unwrap();
        requests
    }

    #[test]
    fn write_behind_is_requested_once_the_interval_is_reached() {
        const INTERVAL: u64 = 100;
        let n = INTERVAL as usize;
        for piece in [1, 7, n] {
            let name = |at: &str| format!("wb-{at}-{piece}");
            assert_eq!(
                write_behind_requests(&name("n-1"), INTERVAL, n - 1, piece),
                0
            );
            assert_eq!(write_behind_requests(&name("n"), INTERVAL, n, piece), 1);
            assert_eq!(
                write_behind_requests(&name("n+1"), INTERVAL, n + 1, piece),
                1
            );
        }
        // The next interval counts from the byte that made the request, so
        // with pieces that end on interval boundaries the second is at 2N.
        for piece in [1, n] {
            let name = |at: &str| format!("wb-{at}-{piece}");
            assert_eq!(
                write_behind_requests(&name("2n-1"), INTERVAL, 2 * n - 1, piece),
                1
            );
            assert_eq!(
                write_behind_requests(&name("2n"), INTERVAL, 2 * n, piece),
                2
            );
        }
        // One large write past several intervals is one request: the next
        // interval counts from where it ended.
        assert_eq!(
            write_behind_requests("wb-big", INTERVAL, 3 * n + 1, 3 * n + 1),
            1
        );
        // Interval 0 turns write-behind off.
        assert_eq!(write_behind_requests("wb-off", 0, 3 * n, 1), 0);
    }

    #[test]
    fn write_behind_default_interval_is_32_mib() {
        assert_eq!(WRITE_BEHIND_BYTES, 32 << 20);
        assert_eq!(
            SeqWriteOptions::default().write_behind_bytes,
            WRITE_BEHIND_BYTES
        );
    }

    #[test]
    fn seq_file_drop_without_sync_hands_bytes_to_the_kernel() {
        let path = temp("drop");
        let mut f = SeqFile::create(&path, SeqWriteOptions::default()).unwrap();
        f.write_all(b"abc").unwrap();
        drop(f);
        assert_eq!(std::fs::read(&path).unwrap(), b"abc");
        std::fs::remove_file(&path).unwrap();
    }
}
