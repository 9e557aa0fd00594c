//! Reading sstables through memory maps (cassandra.yaml `disk_access_mode`).
//!
//! A mapped file is read where the page cache holds it: no system call and
//! no copy per read, which is most of a point read's kernel time when the
//! data is cached. The price, as in Cassandra's `mmap` modes: a read error
//! of the disk under a mapped page, or a file cut short by another process
//! while it is mapped, stops the process (SIGBUS) instead of failing one
//! read. Varve never changes an sstable once written, so only an outside
//! hand or a failing disk can do that; `standard` reads everything with
//! `pread` for those who would rather fail the read.

use std::io;

use crate::fs::{ReadFile, ReadKind};

/// How sstables are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DiskAccessMode {
    /// `pread` for everything, through the node's chunk cache (`auto` and
    /// `standard`; see docs/design/read-path-io.md).
    #[default]
    Standard,
    /// Index blocks through a map, data chunks with `pread` through the
    /// chunk cache (Cassandra 5.0's default).
    MmapIndexOnly,
    /// Index blocks and data chunks through a map, no chunk cache (`mmap`,
    /// and 5.0's `legacy`): for data that fits in memory.
    Mmap,
    /// `pread` with O_DIRECT for what the chunk cache misses, around the
    /// page cache (Varve's own value): the chunk cache is the only cache.
    Direct,
}

impl DiskAccessMode {
    /// Parses cassandra.yaml's value: `auto`, `mmap`, `mmap_index_only`,
    /// `standard`, or 5.0's `legacy` (4.x's `auto`, which mapped both).
    pub fn parse(text: &str) -> Option<DiskAccessMode> {
        match text {
            "mmap" | "legacy" => Some(DiskAccessMode::Mmap),
            "mmap_index_only" => Some(DiskAccessMode::MmapIndexOnly),
            "auto" | "standard" => Some(DiskAccessMode::Standard),
            "direct" => Some(DiskAccessMode::Direct),
            _ => None,
        }
    }

    /// The config value that [`DiskAccessMode::parse`] reads back.
    pub fn name(self) -> &'static str {
        match self {
            DiskAccessMode::Standard => "standard",
            DiskAccessMode::MmapIndexOnly => "mmap_index_only",
            DiskAccessMode::Mmap => "mmap",
            DiskAccessMode::Direct => "direct",
        }
    }

    /// Whether reads of `kind` go through the map.
    pub fn maps(self, kind: ReadKind) -> bool {
        match self {
            DiskAccessMode::Standard | DiskAccessMode::Direct => false,
            DiskAccessMode::MmapIndexOnly => kind == ReadKind::Index,
            DiskAccessMode::Mmap => true,
        }
    }
}

/// A file opened for reading, mapped when its mode maps anything.
pub(crate) struct RealReadFile {
    file: std::fs::File,
    len: u64,
    map: Option<memmap2::Mmap>,
    access: DiskAccessMode,
    /// Whether [`ReadFile::read_exact_at_nowait`] may try `RWF_NOWAIT`.
    nowait: bool,
    /// The file opened with O_DIRECT, in `direct` mode where the file
    /// system allows it: every read goes through it.
    direct: Option<std::fs::File>,
    path: std::path::PathBuf,
}

impl RealReadFile {
    pub(crate) fn open(
        path: &std::path::Path,
        access: DiskAccessMode,
        nowait: bool,
    ) -> io::Result<Self> {
        let file = std::fs::File::open(path)?;
        let len = file.metadata()?.len();
        advise_random(&file, path);
        let direct = match access {
            DiskAccessMode::Direct => crate::fs_direct_read::open_file(path)?,
            _ => None,
        };
        let map = if matches!(access, DiskAccessMode::Standard | DiskAccessMode::Direct) || len == 0
        {
            None
        } else {
            // SAFETY: the map is read-only and private to this reader; the
            // file is an sstable, which Varve writes once, syncs and renames
            // into place before opening, and never modifies again. Another
            // process changing it is outside what we can guard against
            // (see the module doc); removal keeps the pages valid.
            match unsafe { memmap2::Mmap::map(&file) } {
                Ok(map) => {
                    // Point reads touch a chunk or an index block at random:
                    // without this, a fault reads `read_ahead_kb` around it
                    // (8 MiB on some disks), hundreds of times what the read
                    // needs when the data is larger than memory.
                    if let Err(e) = map.advise(memmap2::Advice::Random) {
                        tracing::debug!("madvise(RANDOM) on {}: {e}", path.display());
                    }
                    Some(map)
                }
                Err(e) => {
                    tracing::debug!("reading {} without a map: {e}", path.display());
                    None
                }
            }
        };
        Ok(RealReadFile {
            file,
            len,
            map,
            access,
            nowait,
            direct,
            path: path.to_path_buf(),
        })
    }
}

/// Tells the kernel that `pread`s of `file` are point reads: no readahead
/// around them. A partition of a few chunks is read chunk after chunk,
/// which the kernel took for a sequential stream: with `read_ahead_kb`
/// 8192 (this machine's disk), 8 GB in a 1.5 GiB container read 400-600
/// MB/s from the disk for 1,500 reads of 16 KiB chunks a second, and a
/// garbagecollect crawled behind it. Scans that want readahead ask for it
/// ([`ReadFile::prefetch`]) or read around the page cache.
fn advise_random(file: &std::fs::File, path: &std::path::Path) {
    use std::os::fd::AsRawFd;
    // SAFETY: advice on an open fd; no memory is passed.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
    if rc != 0 {
        tracing::debug!("posix_fadvise(RANDOM) on {}: error {rc}", path.display());
    }
}

impl ReadFile for RealReadFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        if let Some(direct) = &self.direct {
            return crate::fs_direct_point::read_exact_at(direct, offset, buf);
        }
        if let Some(map) = &self.map {
            let end = offset.checked_add(buf.len() as u64);
            let bytes = end.and_then(|end| map.get(offset as usize..end as usize));
            return match bytes {
                Some(bytes) => {
                    buf.copy_from_slice(bytes);
                    Ok(())
                }
                None => Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "read past the end of the file",
                )),
            };
        }
        use std::os::unix::fs::FileExt;
        self.file.read_exact_at(buf, offset)
    }

    fn read_exact_at_nowait(&self, offset: u64, buf: &mut [u8]) -> io::Result<bool> {
        let end = offset.checked_add(buf.len() as u64);
        if end.is_none_or(|end| end > self.len) {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past the end of the file",
            ));
        }
        if let Some(map) = &self.map {
            if !resident(map, offset, buf.len() as u64) {
                return Ok(false);
            }
            return self.read_exact_at(offset, buf).map(|()| true);
        }
        if !self.nowait || self.direct.is_some() {
            return Ok(false);
        }
        use std::os::fd::AsRawFd;
        crate::fs_nowait::pread_nowait(self.file.as_raw_fd(), offset, buf)
    }

    fn read_exact_at_uncached(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        if self.map.is_none() && self.direct.is_none() {
            use std::os::fd::AsRawFd;
            if crate::fs_nowait::pread_dontcache(self.file.as_raw_fd(), offset, buf)? {
                return Ok(());
            }
        }
        self.read_exact_at(offset, buf)
    }

    fn prefetch(&self, offset: u64, len: u64) {
        use std::os::fd::AsRawFd;
        if self.direct.is_some() {
            return;
        }
        let (Ok(off), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
            return;
        };
        // SAFETY: advice about a range of an open file; no memory is passed.
        unsafe {
            libc::posix_fadvise(self.file.as_raw_fd(), off, len, libc::POSIX_FADV_WILLNEED);
        }
    }

    fn resident(&self, kind: ReadKind, offset: u64, len: u64) -> bool {
        match self.mapped(kind) {
            Some(map) => resident(map, offset, len),
            None => true,
        }
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn mapped(&self, kind: ReadKind) -> Option<&[u8]> {
        match &self.map {
            Some(map) if self.access.maps(kind) => Some(&map[..]),
            _ => None,
        }
    }

    fn direct_reader(&self) -> Option<crate::fs_direct_read::DirectReader> {
        match crate::fs_direct_read::open(&self.path) {
            Ok(reader) => reader,
            Err(e) => {
                tracing::debug!(
                    "reading {} through the page cache: {e}",
                    self.path.display()
                );
                None
            }
        }
    }
}

/// Whether the pages of `map` under `[offset, offset + len)` are all in
/// memory (`mincore(2)`); a range outside the map, or a failed call, counts
/// as not resident, so the caller takes the path that may block.
fn resident(map: &[u8], offset: u64, len: u64) -> bool {
    let page = crate::fs_nowait::page_size();
    let Some(end) = offset.checked_add(len).filter(|e| *e <= map.len() as u64) else {
        return false;
    };
    if len == 0 {
        return true;
    }
    let start = offset / page * page;
    let span = (end - start) as usize;
    let mut pages = vec![0u8; span.div_ceil(page as usize)];
    // SAFETY: `start..end` lies inside the live map (checked above) and
    // `start` is page-aligned, as mincore requires (the map itself starts
    // on a page); `pages` has one byte per page of the span.
    let rc = unsafe {
        libc::mincore(
            map.as_ptr().add(start as usize) as *mut libc::c_void,
            span,
            pages.as_mut_ptr(),
        )
    };
    rc == 0 && pages.iter().all(|p| p & 1 == 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::{Fs, RealFs};

    #[test]
    fn modes_parse_as_cassandra_names_them() {
        assert_eq!(
            DiskAccessMode::parse("auto"),
            Some(DiskAccessMode::Standard)
        );
        assert_eq!(DiskAccessMode::parse("mmap"), Some(DiskAccessMode::Mmap));
        assert_eq!(DiskAccessMode::parse("legacy"), Some(DiskAccessMode::Mmap));
        assert_eq!(
            DiskAccessMode::parse("mmap_index_only"),
            Some(DiskAccessMode::MmapIndexOnly)
        );
        assert_eq!(
            DiskAccessMode::parse("standard"),
            Some(DiskAccessMode::Standard)
        );
        assert_eq!(
            DiskAccessMode::parse("direct"),
            Some(DiskAccessMode::Direct)
        );
        assert_eq!(DiskAccessMode::parse("o_direct"), None);
        for mode in [
            DiskAccessMode::Standard,
            DiskAccessMode::MmapIndexOnly,
            DiskAccessMode::Mmap,
            DiskAccessMode::Direct,
        ] {
            assert_eq!(DiskAccessMode::parse(mode.name()), Some(mode));
        }
    }

    /// Whether the file system under `path` takes O_DIRECT (not tmpfs).
    fn direct_works(path: &std::path::Path) -> bool {
        matches!(crate::fs_direct_read::open_file(path), Ok(Some(_)))
    }

    #[test]
    fn each_mode_maps_what_it_names_and_reads_the_same_bytes() {
        let dir = std::env::temp_dir().join(format!("varve-fs-map-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        std::fs::write(&path, b"0123456789").unwrap();
        let cases = [
            (DiskAccessMode::Standard, false, false),
            (DiskAccessMode::MmapIndexOnly, true, false),
            (DiskAccessMode::Mmap, true, true),
            (DiskAccessMode::Direct, false, false),
        ];
        for (mode, index, data) in cases {
            let f = RealFs::new(mode).open_read(&path).unwrap();
            assert_eq!(f.mapped(ReadKind::Index).is_some(), index, "{mode:?}");
            assert_eq!(f.mapped(ReadKind::Data).is_some(), data, "{mode:?}");
            if let Some(m) = f.mapped(ReadKind::Index) {
                assert_eq!(m, b"0123456789");
            }
            let mut buf = [0u8; 3];
            f.read_exact_at(7, &mut buf).unwrap();
            assert_eq!(&buf, b"789", "{mode:?}");
            let past = f.read_exact_at(8, &mut buf).unwrap_err();
            assert_eq!(past.kind(), io::ErrorKind::UnexpectedEof, "{mode:?}");
            // Nothing on the event loop can find a direct read in memory.
            if mode == DiskAccessMode::Direct && direct_works(&path) {
                assert!(!f.read_exact_at_nowait(7, &mut buf).unwrap());
            }
        }
        // An empty file is never mapped (a zero-length map is an error).
        let empty = dir.join("empty");
        std::fs::write(&empty, b"").unwrap();
        let f = RealFs::new(DiskAccessMode::Mmap).open_read(&empty).unwrap();
        assert!(f.mapped(ReadKind::Data).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
