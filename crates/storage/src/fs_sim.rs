//! A simulated, in-memory file system for crash tests: [`SimFs`].
//!
//! It enforces the durability contract of [`crate::fs`] the way a machine
//! losing power does:
//! - every file holds *durable* bytes (made so by [`WriteFile::sync`]) and
//!   the bytes written since, which are only in the "page cache";
//! - every directory change (create, rename, remove) is pending until
//!   [`Fs::sync_dir`] on that directory;
//! - [`SimFs::power_loss`] (alias [`SimFs::crash`]) drops every pending
//!   byte and every pending directory change; [`SimFs::kill`] models
//!   SIGKILL, which keeps them (the kernel still has the page cache).
//!
//! Both return a new handle for the "restarted process"; the old handle and
//! every file opened through it are dead afterwards (each call fails), so a
//! test can keep the old process's threads running without them touching
//! the new process's files.
//!
//! Fault injection: [`SimFs::set_disk_full`] and
//! [`SimFs::fail_writes_after`] make writes fail with ENOSPC (after a
//! partial write, as a real `write(2)` may), and [`SimFs::corrupt`] flips a
//! byte on "disk".
//!
//! Simplifications: directories themselves are durable as soon as they are
//! created; a file truncated by [`Fs::create`] keeps its durable bytes
//! until the next sync; a sync makes durable every byte from the first one
//! changed since the last sync (a file opened with [`Fs::open_overwrite`]
//! keeps its old bytes on "disk" until then, as a preallocated file does).

use crate::fs::{Fs, ReadFile, WriteFile};
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Linux's ENOSPC, so the error looks exactly like a real full disk.
const ENOSPC: i32 = 28;

#[derive(Default)]
struct SimFile {
    /// What survives a power loss.
    durable: Vec<u8>,
    /// What a process reads now (durable bytes plus pending writes).
    data: Vec<u8>,
    /// `data` and `durable` agree before this offset: the next sync
    /// copies `data` from here (0 after a truncating create).
    dirty_from: usize,
}

#[derive(Default)]
struct SimState {
    /// Bumped by every crash or kill; handles of older generations are dead.
    generation: u64,
    inodes: HashMap<u64, SimFile>,
    next_inode: u64,
    /// The namespace a process sees now.
    entries: BTreeMap<PathBuf, u64>,
    /// The namespace that survives a power loss.
    durable_entries: BTreeMap<PathBuf, u64>,
    dirs: BTreeSet<PathBuf>,
    /// Bytes that may still be written before writes fail (None: no limit).
    write_budget: Option<u64>,
    disk_full: bool,
    /// Open read handles per inode: as on POSIX, a removed file stays
    /// readable through them (found by the garbagecollect model test: a
    /// compaction reading a shadow sstable that another one had just
    /// replaced got "read past the end").
    open_reads: HashMap<u64, usize>,
}

impl SimState {
    fn check(&self, generation: u64) -> io::Result<()> {
        if generation == self.generation {
            Ok(())
        } else {
            Err(io::Error::other(
                "simulated process is dead (crashed or killed)",
            ))
        }
    }

    /// Drops inodes that no name (current or durable) and no open read
    /// handle refers to.
    fn collect_garbage(&mut self) {
        let live: BTreeSet<u64> = self
            .entries
            .values()
            .chain(self.durable_entries.values())
            .chain(self.open_reads.keys())
            .copied()
            .collect();
        self.inodes.retain(|ino, _| live.contains(ino));
    }

    fn dir_exists(&self, dir: &Path) -> bool {
        dir.as_os_str().is_empty() || self.dirs.contains(dir)
    }
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file", path.display()),
    )
}

/// An in-memory [`Fs`] that can lose power. Cloning gives another handle
/// of the same process.
#[derive(Clone, Default)]
pub struct SimFs {
    state: Arc<Mutex<SimState>>,
    generation: u64,
}

impl SimFs {
    pub fn new() -> Self {
        SimFs::default()
    }

    /// A machine losing power: every byte not synced and every directory
    /// change not synced is gone. Returns the handle for the restarted
    /// process; this handle (and its open files) stop working.
    pub fn power_loss(&self) -> SimFs {
        let mut s = self.state.lock();
        s.entries = s.durable_entries.clone();
        s.collect_garbage();
        for f in s.inodes.values_mut() {
            f.data = f.durable.clone();
            f.dirty_from = f.data.len();
        }
        s.generation += 1;
        SimFs {
            state: self.state.clone(),
            generation: s.generation,
        }
    }

    /// Same as [`SimFs::power_loss`].
    pub fn crash(&self) -> SimFs {
        self.power_loss()
    }

    /// SIGKILL: the process dies but the kernel keeps every byte written.
    /// Returns the handle for the restarted process.
    pub fn kill(&self) -> SimFs {
        let mut s = self.state.lock();
        s.generation += 1;
        SimFs {
            state: self.state.clone(),
            generation: s.generation,
        }
    }

    /// Makes every write fail with ENOSPC (`true`), or lifts both this and
    /// [`SimFs::fail_writes_after`] (`false`).
    pub fn set_disk_full(&self, full: bool) {
        let mut s = self.state.lock();
        s.disk_full = full;
        if !full {
            s.write_budget = None;
        }
    }

    /// Lets `bytes` more bytes be written, then fails writes with ENOSPC
    /// (the write that crosses the limit writes its first part).
    pub fn fail_writes_after(&self, bytes: u64) {
        self.state.lock().write_budget = Some(bytes);
    }

    /// Flips every bit of the byte at `offset` of `path`, on "disk" and in
    /// the page cache.
    pub fn corrupt(&self, path: &Path, offset: u64) -> io::Result<()> {
        let mut s = self.state.lock();
        let ino = *s.entries.get(path).ok_or_else(|| not_found(path))?;
        let f = s.inodes.get_mut(&ino).ok_or_else(|| not_found(path))?;
        let i = usize::try_from(offset).map_err(io::Error::other)?;
        if i >= f.data.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "offset past the end",
            ));
        }
        f.data[i] ^= 0xff;
        if let Some(b) = f.durable.get_mut(i) {
            *b ^= 0xff;
        }
        Ok(())
    }

    /// Cuts `path` to `len` bytes, durably (a torn write made permanent).
    pub fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        let mut s = self.state.lock();
        let ino = *s.entries.get(path).ok_or_else(|| not_found(path))?;
        let f = s.inodes.get_mut(&ino).ok_or_else(|| not_found(path))?;
        let len = usize::try_from(len).map_err(io::Error::other)?;
        f.data.truncate(len);
        f.durable.truncate(len);
        f.dirty_from = f.dirty_from.min(len);
        Ok(())
    }

    /// The length of `path` as a process sees it, and as it would survive
    /// a power loss (0 when its directory entry is not durable).
    pub fn lengths(&self, path: &Path) -> Option<(u64, u64)> {
        let s = self.state.lock();
        let now = s
            .entries
            .get(path)
            .and_then(|i| s.inodes.get(i))?
            .data
            .len() as u64;
        let durable = s
            .durable_entries
            .get(path)
            .and_then(|i| s.inodes.get(i))
            .map_or(0, |f| f.durable.len() as u64);
        Some((now, durable))
    }
}

struct SimWriteFile {
    state: Arc<Mutex<SimState>>,
    generation: u64,
    inode: u64,
    /// Bytes written through this handle: the offset of the next write.
    len: u64,
}

impl WriteFile for SimWriteFile {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let mut s = self.state.lock();
        s.check(self.generation)?;
        if s.disk_full {
            return Err(io::Error::from_raw_os_error(ENOSPC));
        }
        let (n, fail) = match s.write_budget {
            Some(budget) if (buf.len() as u64) > budget => (budget as usize, true),
            _ => (buf.len(), false),
        };
        if let Some(budget) = s.write_budget.as_mut() {
            *budget -= n as u64;
        }
        // A removed (unlinked) file accepts writes that go nowhere.
        if let Some(f) = s.inodes.get_mut(&self.inode) {
            let at = usize::try_from(self.len).map_err(io::Error::other)?;
            write_at(f, at, &buf[..n]);
        }
        self.len += n as u64;
        if fail {
            return Err(io::Error::from_raw_os_error(ENOSPC));
        }
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        let mut s = self.state.lock();
        s.check(self.generation)?;
        if let Some(f) = s.inodes.get_mut(&self.inode) {
            let from = f.dirty_from.min(f.data.len()).min(f.durable.len());
            f.durable.truncate(from);
            let tail = f.data[from..].to_vec();
            f.durable.extend_from_slice(&tail);
            f.dirty_from = f.data.len();
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn try_clone(&self) -> io::Result<Box<dyn WriteFile>> {
        self.state.lock().check(self.generation)?;
        Ok(Box::new(SimWriteFile {
            state: self.state.clone(),
            generation: self.generation,
            inode: self.inode,
            len: self.len,
        }))
    }
}

/// Writes `buf` at `at` of the page-cache bytes, past the end too (a gap
/// reads as zeros), and remembers the first byte changed.
fn write_at(f: &mut SimFile, at: usize, buf: &[u8]) {
    let end = at + buf.len();
    if f.data.len() < end {
        f.data.resize(end, 0);
    }
    f.data[at..end].copy_from_slice(buf);
    f.dirty_from = f.dirty_from.min(at);
}

struct SimReadFile {
    state: Arc<Mutex<SimState>>,
    generation: u64,
    inode: u64,
    len: u64,
}

impl Drop for SimReadFile {
    fn drop(&mut self) {
        let mut s = self.state.lock();
        if let Some(n) = s.open_reads.get_mut(&self.inode) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                s.open_reads.remove(&self.inode);
                s.collect_garbage();
            }
        }
    }
}

impl ReadFile for SimReadFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let s = self.state.lock();
        s.check(self.generation)?;
        let data = s.inodes.get(&self.inode).map_or(&[][..], |f| &f.data[..]);
        let start = usize::try_from(offset).map_err(io::Error::other)?;
        let end = start.checked_add(buf.len()).filter(|e| *e <= data.len());
        match end {
            Some(end) => {
                buf.copy_from_slice(&data[start..end]);
                Ok(())
            }
            None => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past the end",
            )),
        }
    }

    fn len(&self) -> u64 {
        self.len
    }
}

impl Fs for SimFs {
    fn never_waits(&self) -> bool {
        true
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
        let mut s = self.state.lock();
        s.check(self.generation)?;
        let parent = path.parent().unwrap_or(Path::new(""));
        if !s.dir_exists(parent) {
            return Err(not_found(parent));
        }
        let inode = match s.entries.get(path).copied() {
            Some(ino) => {
                if let Some(f) = s.inodes.get_mut(&ino) {
                    f.data.clear();
                    f.dirty_from = 0;
                }
                ino
            }
            None => {
                s.next_inode += 1;
                let ino = s.next_inode;
                s.inodes.insert(ino, SimFile::default());
                s.entries.insert(path.to_path_buf(), ino);
                ino
            }
        };
        Ok(Box::new(SimWriteFile {
            state: self.state.clone(),
            generation: self.generation,
            inode,
            len: 0,
        }))
    }

    fn open_overwrite(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
        let s = self.state.lock();
        s.check(self.generation)?;
        let inode = *s.entries.get(path).ok_or_else(|| not_found(path))?;
        Ok(Box::new(SimWriteFile {
            state: self.state.clone(),
            generation: self.generation,
            inode,
            len: 0,
        }))
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn ReadFile>> {
        let mut s = self.state.lock();
        s.check(self.generation)?;
        let inode = *s.entries.get(path).ok_or_else(|| not_found(path))?;
        let len = s.inodes.get(&inode).map_or(0, |f| f.data.len() as u64);
        *s.open_reads.entry(inode).or_insert(0) += 1;
        Ok(Box::new(SimReadFile {
            state: self.state.clone(),
            generation: self.generation,
            inode,
            len,
        }))
    }

    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        let s = self.state.lock();
        s.check(self.generation)?;
        let inode = s.entries.get(path).ok_or_else(|| not_found(path))?;
        Ok(s.inodes
            .get(inode)
            .map(|f| f.data.clone())
            .unwrap_or_default())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.state.lock();
        s.check(self.generation)?;
        let inode = s.entries.remove(from).ok_or_else(|| not_found(from))?;
        s.entries.insert(to.to_path_buf(), inode);
        s.collect_garbage();
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut s = self.state.lock();
        s.check(self.generation)?;
        s.entries.remove(path).ok_or_else(|| not_found(path))?;
        s.collect_garbage();
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let s = self.state.lock();
        s.check(self.generation)?;
        if !s.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        let files = s.entries.keys().filter(|p| p.parent() == Some(dir));
        let dirs = s.dirs.iter().filter(|p| p.parent() == Some(dir));
        let mut out: Vec<PathBuf> = files.chain(dirs).cloned().collect();
        out.sort();
        Ok(out)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.state.lock();
        s.check(self.generation)?;
        for d in dir.ancestors() {
            if !d.as_os_str().is_empty() {
                s.dirs.insert(d.to_path_buf());
            }
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.state.lock();
        s.check(self.generation)?;
        let names: BTreeSet<PathBuf> = s
            .entries
            .keys()
            .chain(s.durable_entries.keys())
            .filter(|p| p.parent() == Some(dir))
            .cloned()
            .collect();
        for name in names {
            match s.entries.get(&name).copied() {
                Some(ino) => s.durable_entries.insert(name, ino),
                None => s.durable_entries.remove(&name),
            };
        }
        s.collect_garbage();
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        let s = self.state.lock();
        s.entries.contains_key(path) || s.dirs.contains(path)
    }

    /// A new name for the inode (pending until the directory's sync, as
    /// any other name).
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.state.lock();
        s.check(self.generation)?;
        let inode = *s.entries.get(from).ok_or_else(|| not_found(from))?;
        let parent = to.parent().unwrap_or(Path::new(""));
        if !s.dir_exists(parent) {
            return Err(not_found(parent));
        }
        if s.entries.contains_key(to) || s.dirs.contains(to) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{}: already exists", to.display()),
            ));
        }
        s.entries.insert(to.to_path_buf(), inode);
        Ok(())
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.state.lock();
        s.check(self.generation)?;
        if !s.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        let inside = |p: &PathBuf| p.parent() == Some(dir);
        if s.entries.keys().any(inside) || s.dirs.iter().any(inside) {
            return Err(io::Error::other(format!(
                "{}: directory not empty",
                dir.display()
            )));
        }
        s.dirs.remove(dir);
        Ok(())
    }

    fn metadata(&self, path: &Path) -> io::Result<crate::fs::FileMeta> {
        let s = self.state.lock();
        s.check(self.generation)?;
        if s.dirs.contains(path) {
            return Ok(crate::fs::FileMeta {
                len: 0,
                is_dir: true,
                identity: (1, 0),
            });
        }
        let inode = *s.entries.get(path).ok_or_else(|| not_found(path))?;
        let len = s.inodes.get(&inode).map_or(0, |f| f.data.len() as u64);
        Ok(crate::fs::FileMeta {
            len,
            is_dir: false,
            identity: (0, inode),
        })
    }
}

#[cfg(test)]
#[path = "fs_sim_tests.rs"]
mod tests;
