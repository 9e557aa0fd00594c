//! The file layer under the commitlog and sstables. Production uses
//! [`RealFs`]; tests use a simulated file system that can "lose power"
//! and drop every byte not yet made durable, so crash tests can check
//! that nothing acknowledged is lost.
//!
//! Durability contract (what callers may rely on, and what the simulated
//! layer enforces): bytes written to a file are durable only after
//! [`WriteFile::sync`]; a created, renamed or removed directory entry is
//! durable only after [`Fs::sync_dir`] on its directory.

use std::io;
use std::path::{Path, PathBuf};

pub use crate::fs_map::DiskAccessMode;
use crate::fs_map::RealReadFile;

/// A file being written, front to back.
pub trait WriteFile: Send {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()>;
    /// Makes every byte written so far durable (fdatasync).
    fn sync(&mut self) -> io::Result<()>;
    /// Bytes written so far.
    fn len(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Another handle to the same open file (`dup(2)`), so one thread can
    /// fsync it while another keeps writing: [`WriteFile::sync`] on either
    /// makes every byte written through both durable. Only `sync` is
    /// meant to be used on the clone. Unsupported unless overridden.
    fn try_clone(&self) -> io::Result<Box<dyn WriteFile>> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this file cannot be cloned",
        ))
    }
}

/// What part of an sstable a read is for: the access mode may map one and
/// not the other (see [`crate::fs_map::DiskAccessMode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadKind {
    Index,
    Data,
}

/// A file read at arbitrary offsets.
pub trait ReadFile: Send + Sync {
    /// Fills `buf` from `offset`; an error if the file is shorter.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    fn len(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// [`ReadFile::read_exact_at`] only when it needs no wait on the disk
    /// (the bytes are in the page cache): `Ok(false)`, with `buf` in any
    /// state, when it would have to wait. For the event loop's reads (see
    /// [`crate::io_mode`]). A file held in memory never waits.
    fn read_exact_at_nowait(&self, offset: u64, buf: &mut [u8]) -> io::Result<bool> {
        self.read_exact_at(offset, buf).map(|()| true)
    }
    /// [`ReadFile::read_exact_at`], leaving the page cache as it was where
    /// the OS can (`RWF_DONTCACHE`): pages read from the disk for this read
    /// are dropped after it. For background reads.
    fn read_exact_at_uncached(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.read_exact_at(offset, buf)
    }
    /// Asks the OS to bring `[offset, offset + len)` into the page cache in
    /// the background (an sstable's index, once written around the cache).
    /// A hint: files in memory ignore it.
    fn prefetch(&self, _offset: u64, _len: u64) {}
    /// Whether bytes `[offset, offset + len)` of the map of `kind` (see
    /// [`ReadFile::mapped`]) are in memory, so touching them cannot fault
    /// in a page from the disk. Unmapped or in-memory files: true.
    fn resident(&self, _kind: ReadKind, _offset: u64, _len: u64) -> bool {
        true
    }
    /// The whole file in memory, when reads of `kind` go through a map:
    /// callers then slice it instead of copying with
    /// [`ReadFile::read_exact_at`].
    fn mapped(&self, _kind: ReadKind) -> Option<&[u8]> {
        None
    }
    /// A reader of this file that bypasses the page cache (O_DIRECT), for
    /// one front-to-back scan such as a compaction's; `None` when the file
    /// or its file system cannot be read that way.
    fn direct_reader(&self) -> Option<crate::fs_direct_read::DirectReader> {
        None
    }
}

/// Whether the bytes of a file written in bulk should stay in the page
/// cache for reads that follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageCache {
    /// Write through the page cache: the pages are cached for the reads
    /// that follow, at the price of a kernel copy of every byte into newly
    /// allocated cache pages.
    Keep,
    /// Write around the page cache (O_DIRECT) where the file system allows:
    /// no kernel copy of each byte into new cache pages, at the price of a
    /// first read from the disk (see `fs_direct`).
    Bypass,
}

impl PageCache {
    /// Parses a `*_write_disk_access_mode` value of the node's config:
    /// `direct` (around the cache) or `standard` (through it).
    pub fn parse_write_mode(text: &str) -> Option<PageCache> {
        match text {
            "direct" => Some(PageCache::Bypass),
            "standard" => Some(PageCache::Keep),
            _ => None,
        }
    }

    /// The config value that [`PageCache::parse_write_mode`] reads back.
    pub fn write_mode_name(self) -> &'static str {
        match self {
            PageCache::Bypass => "direct",
            PageCache::Keep => "standard",
        }
    }
}

/// How the node writes its sstables, for flushes and for compactions
/// (`flush_write_disk_access_mode`, `compaction_write_disk_access_mode`).
/// Both bypass the page cache by default, and a compaction that bypasses it
/// also reads its inputs around it (`fs_direct_read`); see "How sstables
/// are written" in docs/design/storage-model.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SstableWrites {
    pub flush: PageCache,
    pub compaction: PageCache,
}

impl Default for SstableWrites {
    fn default() -> Self {
        SstableWrites {
            flush: PageCache::Bypass,
            compaction: PageCache::Bypass,
        }
    }
}

/// The operations storage needs from a file system.
pub trait Fs: Send + Sync {
    /// Creates (or truncates) a file for writing.
    fn create(&self, path: &Path) -> io::Result<Box<dyn WriteFile>>;
    /// Like [`Fs::create`], for a large file written front to back in
    /// bulk (an sstable): the implementation may gather writes in memory
    /// and start writing back before [`WriteFile::sync`], which alone still
    /// makes the bytes durable. `cache` is a hint a file system may ignore.
    fn create_sequential(&self, path: &Path, cache: PageCache) -> io::Result<Box<dyn WriteFile>> {
        let _ = cache;
        self.create(path)
    }
    /// Opens an existing file to write it again from its first byte,
    /// without cutting it: the bytes past what is written keep their
    /// value (a preallocated commitlog segment). Unsupported unless
    /// overridden.
    fn open_overwrite(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "{}: this file system cannot overwrite files",
                path.display()
            ),
        ))
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn ReadFile>>;
    /// When the file was last modified (seconds since the epoch), if the
    /// file system knows: the creation time of an sstable found at start.
    fn modified_seconds(&self, _path: &Path) -> Option<i64> {
        None
    }
    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>>;
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// The entries of a directory, sorted by name.
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    fn exists(&self, path: &Path) -> bool;
    /// A second name for the file `from` (a hard link: the same bytes, no
    /// copy), for snapshots and imports. `Unsupported` unless overridden;
    /// callers then copy (see `engine_snapshot::link_or_copy`).
    fn hard_link(&self, _from: &Path, _to: &Path) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this file system has no hard links",
        ))
    }
    /// Whether every operation completes without waiting on a device (a
    /// file system held in memory): work on it may then run where waiting
    /// is not allowed (see [`crate::io_mode`]). False unless overridden.
    fn never_waits(&self) -> bool {
        false
    }
    /// Removes an empty directory. `Unsupported` unless overridden.
    fn remove_dir(&self, _dir: &Path) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this file system cannot remove directories",
        ))
    }
    /// What a directory entry is: its length, whether it is a directory,
    /// and which file it names (two names of one file share it). For
    /// snapshot sizes. `Unsupported` unless overridden.
    fn metadata(&self, _path: &Path) -> io::Result<FileMeta> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this file system keeps no metadata",
        ))
    }
}

/// What [`Fs::metadata`] tells of a directory entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileMeta {
    /// Bytes of a file (0 for a directory).
    pub len: u64,
    pub is_dir: bool,
    /// The file behind the name (device and inode on a real file system):
    /// equal for hard links of one file.
    pub identity: (u64, u64),
}

/// The operating system's file system; sstables are read as `access`
/// says, and files asked to bypass the page cache are written with
/// O_DIRECT where the file system allows it.
#[derive(Debug, Clone, Copy)]
pub struct RealFs {
    access: DiskAccessMode,
    /// Whether non-blocking reads may ask the kernel for page-cache hits
    /// (`preadv2` with `RWF_NOWAIT`); without, every such read reports that
    /// it would wait (the fallback for kernels without the flag).
    nowait: bool,
}

impl RealFs {
    pub const fn new(access: DiskAccessMode) -> Self {
        RealFs {
            access,
            nowait: true,
        }
    }

    /// The same file system with the `RWF_NOWAIT` probe turned off, as on
    /// a kernel without it (tests of the fallback path).
    pub const fn without_nowait(self) -> Self {
        RealFs {
            nowait: false,
            ..self
        }
    }
}

impl Default for RealFs {
    fn default() -> Self {
        RealFs::new(DiskAccessMode::default())
    }
}

struct RealWriteFile {
    file: std::fs::File,
    len: u64,
}

impl WriteFile for RealWriteFile {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        use std::io::Write;
        self.file.write_all(buf)?;
        self.len += buf.len() as u64;
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn try_clone(&self) -> io::Result<Box<dyn WriteFile>> {
        Ok(Box::new(RealWriteFile {
            file: self.file.try_clone()?,
            len: self.len,
        }))
    }
}

impl Fs for RealFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
        let file = std::fs::File::create(path)?;
        Ok(Box::new(RealWriteFile { file, len: 0 }))
    }

    fn open_overwrite(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
        let file = std::fs::OpenOptions::new().write(true).open(path)?;
        Ok(Box::new(RealWriteFile { file, len: 0 }))
    }

    fn create_sequential(&self, path: &Path, cache: PageCache) -> io::Result<Box<dyn WriteFile>> {
        if cache == PageCache::Bypass {
            if let Some(f) = crate::fs_direct::create(path)? {
                return Ok(Box::new(f));
            }
        }
        let options = crate::fs_seq::SeqWriteOptions::default();
        Ok(Box::new(crate::fs_seq::SeqFile::create(path, options)?))
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn ReadFile>> {
        Ok(Box::new(RealReadFile::open(
            path,
            self.access,
            self.nowait,
        )?))
    }

    fn modified_seconds(&self, path: &Path) -> Option<i64> {
        let modified = std::fs::metadata(path).ok()?.modified().ok()?;
        let since = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
        i64::try_from(since.as_secs()).ok()
    }

    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir)? {
            out.push(e?.path());
        }
        out.sort();
        Ok(out)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::File::open(dir)?.sync_all()
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::hard_link(from, to)
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::remove_dir(dir)
    }

    fn metadata(&self, path: &Path) -> io::Result<FileMeta> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::symlink_metadata(path)?;
        Ok(FileMeta {
            len: if m.is_dir() { 0 } else { m.len() },
            is_dir: m.is_dir(),
            identity: (m.dev(), m.ino()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether this process holds `path` open with O_DIRECT, from the
    /// kernel's own account (/proc/self/fdinfo), or `None` if not open.
    fn opened_direct(path: &Path) -> Option<bool> {
        for entry in std::fs::read_dir("/proc/self/fd").ok()?.flatten() {
            if std::fs::read_link(entry.path()).ok().as_deref() != Some(path) {
                continue;
            }
            let info =
                std::fs::read_to_string(Path::new("/proc/self/fdinfo").join(entry.file_name()))
                    .ok()?;
            let flags = info.lines().find_map(|l| l.strip_prefix("flags:"))?;
            let flags = i32::from_str_radix(flags.trim(), 8).ok()?;
            return Some(flags & libc::O_DIRECT != 0);
        }
        None
    }

    /// A new directory for one test, under the temporary directory.
    fn test_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("varve-fs-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// `Bypass` opens with O_DIRECT; `Keep` never does. (On a file system
    /// without O_DIRECT, both write through the page cache; the test then
    /// only checks that.)
    #[test]
    fn the_page_cache_hint_decides_o_direct() {
        let dir = test_dir("hint");
        let path = dir.join("f");
        let supported = crate::fs_direct::create(&path).unwrap().is_some();
        let cases = [
            (RealFs::default(), PageCache::Bypass, supported),
            (RealFs::default(), PageCache::Keep, false),
        ];
        for (fs, hint, direct) in cases {
            let mut f = fs.create_sequential(&path, hint).unwrap();
            assert_eq!(opened_direct(&path), Some(direct), "{hint:?} {fs:?}");
            f.write_all(b"bytes").unwrap();
            f.sync().unwrap();
            drop(f);
            assert_eq!(std::fs::read(&path).unwrap(), b"bytes");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The write modes' names read back as the modes they name, and
    /// anything else is refused.
    #[test]
    fn write_mode_names_round_trip() {
        for mode in [PageCache::Keep, PageCache::Bypass] {
            assert_eq!(
                PageCache::parse_write_mode(mode.write_mode_name()),
                Some(mode)
            );
        }
        assert_eq!(PageCache::write_mode_name(PageCache::Bypass), "direct");
        assert_eq!(PageCache::parse_write_mode("mmap"), None);
        assert_eq!(PageCache::parse_write_mode("Direct"), None);
    }

    #[test]
    fn real_fs_writes_reads_renames() {
        let dir = test_dir("rename");
        let fs = RealFs::default();
        let a = dir.join("a.tmp");
        let mut w = fs.create(&a).unwrap();
        w.write_all(b"hello").unwrap();
        w.sync().unwrap();
        assert_eq!(w.len(), 5);
        drop(w);
        let b = dir.join("b");
        fs.rename(&a, &b).unwrap();
        fs.sync_dir(&dir).unwrap();
        let r = fs.open_read(&b).unwrap();
        let mut buf = [0u8; 3];
        r.read_exact_at(2, &mut buf).unwrap();
        assert_eq!(&buf, b"llo");
        assert!(r.read_exact_at(4, &mut buf).is_err());
        assert_eq!(fs.list(&dir).unwrap(), vec![b.clone()]);
        fs.remove(&b).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
