//! The read path's I/O: reads in a non-blocking scope never wait on the
//! disk (they answer `WouldBlock` and are served once a thread that may
//! block brought the bytes in), in every access mode, with `RWF_NOWAIT`
//! and without it (the fallback); read errors and short reads name the
//! file and the offset. Real files in a temporary directory, their pages
//! dropped from the page cache with `posix_fadvise(DONTNEED)`.

use super::test_util::{comparator, sample_partitions};
use crate::engine::PartitionKey;
use crate::error::Error;
use crate::fs::{DiskAccessMode, Fs, ReadFile, RealFs};
use crate::io_mode::NonBlocking;
use crate::partition::Partition;
use crate::sstable::fs_mem::MemFs;
use crate::sstable::{BlockCache, Sstable, SstableParams, SstableWriter};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A directory of its own for one test.
fn test_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("varve-io-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes a few partitions (LZ4, small chunks and index blocks, so that
/// several chunks and blocks exist) to `path`.
fn write_sstable(path: &Path) -> Vec<(PartitionKey, Partition)> {
    let parts = sample_partitions(40);
    let params = SstableParams {
        chunk_length: 256,
        min_index_interval: 4,
        ..SstableParams::default()
    };
    let fs: Arc<dyn Fs> = Arc::new(RealFs::default());
    let mut w = SstableWriter::create(fs, path, params, comparator()).unwrap();
    for (k, p) in &parts {
        w.add(k, p).unwrap();
    }
    w.finish().unwrap();
    parts
}

/// Drops the file's pages from the page cache; false where nothing can
/// be dropped (tmpfs), and the test then has nothing to show.
fn drop_from_page_cache(path: &Path) -> bool {
    let file = std::fs::File::open(path).unwrap();
    file.sync_all().unwrap();
    // SAFETY: advice on an open fd.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0);
    // Whether it worked: a non-blocking read of its middle must now miss.
    let mut buf = [0u8; 512];
    let len = file.metadata().unwrap().len();
    !crate::fs_nowait::pread_nowait(file.as_raw_fd(), len / 2, &mut buf).unwrap_or(true)
        || !crate::fs_nowait::nowait_supported()
}

fn open(fs: RealFs, path: &Path, cache: &Arc<BlockCache>) -> Sstable {
    Sstable::open(Arc::new(fs), path, comparator(), 1.0)
        .unwrap()
        .with_block_cache(cache.clone())
}

/// Reads every partition on this thread inside a non-blocking scope:
/// how many were served and how many would have blocked. Anything else
/// (a wrong answer, another error) fails the test.
fn read_without_blocking(table: &Sstable, parts: &[(PartitionKey, Partition)]) -> (usize, usize) {
    let _scope = NonBlocking::enter();
    let (mut served, mut blocked) = (0, 0);
    for (k, p) in parts {
        match table.read_partition(k) {
            Ok(got) => {
                assert_eq!(got.as_ref(), Some(p));
                served += 1;
            }
            Err(Error::WouldBlock { .. }) => blocked += 1,
            Err(e) => panic!("{e}"),
        }
    }
    (served, blocked)
}

/// Reads every partition where blocking is allowed.
fn read_blocking(table: &Sstable, parts: &[(PartitionKey, Partition)]) {
    for (k, p) in parts {
        assert_eq!(table.read_partition(k).unwrap().as_ref(), Some(p));
    }
}

#[test]
fn uncached_reads_would_block_until_a_blocking_read_fills_the_chunk_cache() {
    let dir = test_dir("chunk-cache");
    let path = dir.join("1.sst");
    let parts = write_sstable(&path);
    let cache = Arc::new(BlockCache::new(1 << 20));
    let table = open(RealFs::default(), &path, &cache);
    // After the open, which reads the footer and the sections it keeps
    // (and the kernel reads ahead around them).
    if !drop_from_page_cache(&path) {
        return;
    }
    // A miss starts the kernel's readahead (RWF_NOWAIT only declines to
    // wait for it), so later reads of the pass may find their pages.
    let (served, blocked) = read_without_blocking(&table, &parts);
    assert!(blocked > 0, "nothing would have waited ({served} served)");
    read_blocking(&table, &parts);
    // Every chunk and index block is in the chunk cache now.
    let before = cache.stats();
    assert_eq!(read_without_blocking(&table, &parts), (parts.len(), 0));
    let after = cache.stats();
    assert!(after.hits > before.hits);
    assert_eq!(after.misses, before.misses, "{after:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// With `RWF_NOWAIT`, bytes in the page cache are served without the read
/// stage; without it (the fallback), only the chunk cache serves the event
/// loop. Both serve everything once a blocking read filled the cache.
#[test]
fn page_cache_hits_are_served_with_nowait_and_not_in_the_fallback() {
    let dir = test_dir("nowait");
    let path = dir.join("1.sst");
    let parts = write_sstable(&path);
    std::fs::read(&path).unwrap(); // every page cached
    for (fs, nowait) in [
        (RealFs::default(), true),
        (RealFs::default().without_nowait(), false),
    ] {
        let cache = Arc::new(BlockCache::new(1 << 20));
        let table = open(fs, &path, &cache);
        let (served, blocked) = read_without_blocking(&table, &parts);
        if nowait && crate::fs_nowait::nowait_supported() {
            assert_eq!((served, blocked), (parts.len(), 0), "with RWF_NOWAIT");
        } else {
            assert_eq!((served, blocked), (0, parts.len()), "fallback");
        }
        read_blocking(&table, &parts);
        assert_eq!(read_without_blocking(&table, &parts), (parts.len(), 0));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A cache of capacity 0 (`file_cache_size: 0`): every non-blocking read
/// goes to the page cache, so the event loop is served exactly when the
/// page cache holds the bytes.
#[test]
fn without_a_chunk_cache_the_page_cache_decides() {
    let dir = test_dir("no-cache");
    let path = dir.join("1.sst");
    let parts = write_sstable(&path);
    let cache = Arc::new(BlockCache::new(0));
    let table = open(RealFs::default(), &path, &cache);
    if !drop_from_page_cache(&path) || !crate::fs_nowait::nowait_supported() {
        return;
    }
    let (served, blocked) = read_without_blocking(&table, &parts);
    assert!(blocked > 0, "nothing would have waited ({served} served)");
    read_blocking(&table, &parts);
    assert_eq!(read_without_blocking(&table, &parts), (parts.len(), 0));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Mapped files: a page not resident would fault, so a non-blocking read
/// reports it instead of touching it.
#[test]
fn mapped_reads_never_fault_in_a_non_blocking_scope() {
    let dir = test_dir("mmap");
    let path = dir.join("1.sst");
    let parts = write_sstable(&path);
    for mode in [DiskAccessMode::Mmap, DiskAccessMode::MmapIndexOnly] {
        let cache = Arc::new(BlockCache::new(1 << 20));
        let table = open(RealFs::new(mode), &path, &cache);
        if !drop_from_page_cache(&path) {
            return;
        }
        let (served, blocked) = read_without_blocking(&table, &parts);
        assert_eq!((served, blocked), (0, parts.len()), "{mode:?}");
        read_blocking(&table, &parts);
        assert_eq!(
            read_without_blocking(&table, &parts),
            (parts.len(), 0),
            "{mode:?}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// How a [`FaultyFs`] file fails reads that touch its faulty range.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    /// The disk reports an error (EIO).
    Error,
    /// The file ends early: the read comes back short.
    Short,
}

/// In-memory files whose reads fail when they touch `[from, to)`.
struct FaultyFs {
    inner: Arc<MemFs>,
    from: u64,
    to: u64,
    fault: Fault,
}

struct FaultyRead {
    inner: Box<dyn ReadFile>,
    from: u64,
    to: u64,
    fault: Fault,
}

impl ReadFile for FaultyRead {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let end = offset + buf.len() as u64;
        if offset < self.to && end > self.from {
            return Err(match self.fault {
                Fault::Error => std::io::Error::from_raw_os_error(libc::EIO),
                Fault::Short => std::io::ErrorKind::UnexpectedEof.into(),
            });
        }
        self.inner.read_exact_at(offset, buf)
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }
}

impl Fs for FaultyFs {
    fn create(&self, path: &Path) -> std::io::Result<Box<dyn crate::fs::WriteFile>> {
        self.inner.create(path)
    }
    fn open_read(&self, path: &Path) -> std::io::Result<Box<dyn ReadFile>> {
        Ok(Box::new(FaultyRead {
            inner: self.inner.open_read(path)?,
            from: self.from,
            to: self.to,
            fault: self.fault,
        }))
    }
    fn read_all(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        self.inner.read_all(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> std::io::Result<()> {
        self.inner.remove(path)
    }
    fn list(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        self.inner.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
}

/// A read error and a short read in the data chunks and in the index are
/// each reported with the file and the offset of what failed, through the
/// chunk cache and without it; the reads of other partitions go on.
#[test]
fn read_errors_and_short_reads_name_the_file_and_offset() {
    let mem = MemFs::new();
    let path = Path::new("ks/t/7.sst");
    let parts = sample_partitions(40);
    let params = SstableParams {
        chunk_length: 256,
        min_index_interval: 4,
        ..SstableParams::default()
    };
    super::test_util::write(&mem, path, params, &parts);
    let image = mem.get(path).unwrap();
    let footer = crate::sstable::format::Footer::decode(
        &image[image.len() - crate::sstable::format::FOOTER_LEN as usize..],
    )
    .unwrap();
    // A stretch in the middle of the data, and the whole index section.
    let data_mid = footer.data.offset + footer.data.len / 2;
    let ranges = [
        (data_mid, data_mid + 1, "data"),
        (footer.index.offset, footer.index.end(), "index"),
    ];
    for (from, to, what) in ranges {
        for fault in [Fault::Error, Fault::Short] {
            for cached in [false, true] {
                let fs = Arc::new(FaultyFs {
                    inner: mem.clone(),
                    from,
                    to,
                    fault,
                });
                let table = Sstable::open(fs, path, comparator(), 1.0).unwrap();
                let table = if cached {
                    table.with_block_cache(Arc::new(BlockCache::new(1 << 20)))
                } else {
                    table
                };
                let (mut failed, mut served) = (0, 0);
                for (k, p) in &parts {
                    match table.read_partition(k) {
                        Ok(got) => {
                            assert_eq!(got.as_ref(), Some(p));
                            served += 1;
                        }
                        Err(e) => {
                            failed += 1;
                            let text = e.to_string();
                            assert!(text.contains("ks/t/7.sst"), "{what} {fault:?}: {text}");
                            // The offset of the read, chunk or block that
                            // failed: at most a chunk or a block before the
                            // fault, never past it.
                            let named = named_offset(&text);
                            assert!(
                                named.is_some_and(|o| o + 4096 >= from && o < to),
                                "{what} {fault:?} names no offset near {from}..{to}: {text}"
                            );
                            match fault {
                                Fault::Error => {
                                    assert!(matches!(e, Error::Io { .. }), "{what}: {e:?}")
                                }
                                Fault::Short => assert!(
                                    matches!(e, Error::Corruption { .. } | Error::Io { .. }),
                                    "{what}: {e:?}"
                                ),
                            }
                        }
                    }
                }
                assert!(failed > 0, "{what} {fault:?}: no read touched the fault");
                if what == "data" {
                    assert!(
                        served > 0,
                        "{what} {fault:?}: one bad chunk failed every read"
                    );
                }
            }
        }
    }
}

/// The number after "offset " in an error message.
fn named_offset(text: &str) -> Option<u64> {
    let rest = &text[text.find("offset ")? + "offset ".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// A chunk cached while `crc_check_chance` was 0 went in unchecked: once
/// the chance rises (ALTER TABLE), it is read and checked again rather
/// than served from the cache; lowering the chance keeps what is cached.
#[test]
fn raising_crc_check_chance_rechecks_what_was_cached_unchecked() {
    let mem = MemFs::new();
    let path = Path::new("ks/t/3.sst");
    let parts = sample_partitions(40);
    let params = SstableParams {
        chunk_length: 256,
        min_index_interval: 4,
        compression: crate::sstable::Compression::None,
        ..SstableParams::default()
    };
    super::test_util::write(&mem, path, params, &parts);
    let mut image = mem.get(path).unwrap();
    let footer = crate::sstable::format::Footer::decode(
        &image[image.len() - crate::sstable::format::FOOTER_LEN as usize..],
    )
    .unwrap();
    let at = (footer.data.offset + footer.data.len / 2) as usize;
    image[at] ^= 0x40;
    mem.insert(path, image);
    let cache = Arc::new(BlockCache::new(1 << 20));
    let table = Sstable::open(mem.clone(), path, comparator(), 0.0)
        .unwrap()
        .with_block_cache(cache.clone());
    // Unchecked: every read "succeeds" (one of them with the flipped byte,
    // or an undecodable partition reported as corruption by the decoder).
    let read_all = |t: &Sstable| -> usize {
        parts
            .iter()
            .filter(|(k, _)| matches!(t.read_partition(k), Err(Error::Corruption { .. })))
            .count()
    };
    let unchecked_failures = read_all(&table);
    table.set_crc_check_chance(0.5);
    table.set_crc_check_chance(1.0);
    let checked_failures = read_all(&table);
    assert!(
        checked_failures > unchecked_failures,
        "the damaged chunk was served from the cache unchecked ({checked_failures} failures)"
    );
    let hits = cache.stats().hits;
    table.set_crc_check_chance(0.0);
    let _ = read_all(&table);
    assert!(
        cache.stats().hits > hits,
        "lowering the chance dropped the cache"
    );
}

/// Whether the page cache holds the 4 KiB at `offset` of `path`.
fn cached(path: &Path, offset: u64) -> bool {
    let file = std::fs::File::open(path).unwrap();
    let mut buf = [0u8; 4096];
    crate::fs_nowait::pread_nowait(file.as_raw_fd(), offset, &mut buf).unwrap()
}

#[test]
fn consecutive_point_reads_do_not_read_ahead() {
    // Chunk after chunk of one partition looks like a sequential stream to
    // the kernel, which read up to `read_ahead_kb` (8 MiB on some disks)
    // around them; sstables are opened for point reads.
    const PIECE: usize = 16 << 10;
    let dir = test_dir("no-readahead");
    let path = dir.join("data");
    std::fs::write(&path, vec![7u8; 16 << 20]).unwrap();
    if !drop_from_page_cache(&path) || !crate::fs_nowait::nowait_supported() {
        return; // tmpfs, or no RWF_NOWAIT: nothing to observe
    }
    let file = RealFs::default().open_read(&path).unwrap();
    let start = 4u64 << 20;
    let mut buf = vec![0u8; PIECE];
    for i in 0..8u64 {
        file.read_exact_at(start + i * PIECE as u64, &mut buf)
            .unwrap();
    }
    let end = start + 8 * PIECE as u64;
    assert!(cached(&path, end - 4096), "what was read is cached");
    for past in [0u64, 16 << 10, 64 << 10, 256 << 10, 1 << 20] {
        assert!(
            !cached(&path, end + past),
            "read ahead to {past} bytes past the reads"
        );
    }
    // A sequential reader asks for its readahead itself.
    file.prefetch(end, 1 << 20);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !cached(&path, end + (1 << 20) - 4096) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(
        cached(&path, end + (1 << 20) - 4096),
        "a prefetch reads ahead"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
