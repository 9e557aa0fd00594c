//! A tiny in-memory [`Fs`] for sstable tests and the fuzz entry point.
//! Every write is immediately visible and "durable"; it models no crash
//! (the power-loss file system lives elsewhere). Readers see a snapshot of
//! the file taken when they open it, offered as a memory map would be when
//! the file system's [`DiskAccessMode`] says so, so sstable tests cover
//! both read paths.

use crate::fs::{DiskAccessMode, Fs, ReadFile, ReadKind, WriteFile};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

type Contents = Arc<Mutex<Vec<u8>>>;

/// Files held in memory, keyed by path.
pub struct MemFs {
    files: Mutex<BTreeMap<PathBuf, Contents>>,
    access: DiskAccessMode,
}

impl Default for MemFs {
    fn default() -> Self {
        MemFs {
            files: Mutex::default(),
            access: DiskAccessMode::Standard,
        }
    }
}

impl MemFs {
    pub fn new() -> Arc<Self> {
        Arc::new(MemFs::default())
    }

    /// A file system whose readers offer their bytes as `access` maps them.
    pub fn with_access(access: DiskAccessMode) -> Arc<Self> {
        Arc::new(MemFs {
            files: Mutex::default(),
            access,
        })
    }

    /// Puts a file with the given bytes in place (replacing any).
    pub fn insert(&self, path: &Path, bytes: Vec<u8>) {
        self.files
            .lock()
            .insert(path.to_path_buf(), Arc::new(Mutex::new(bytes)));
    }

    /// A copy of a file's bytes.
    pub fn get(&self, path: &Path) -> Option<Vec<u8>> {
        self.files.lock().get(path).map(|c| c.lock().clone())
    }

    fn not_found(path: &Path) -> io::Error {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} not found", path.display()),
        )
    }
}

struct MemWrite(Contents);

impl WriteFile for MemWrite {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.lock().extend_from_slice(buf);
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn len(&self) -> u64 {
        self.0.lock().len() as u64
    }
}

struct MemRead(Vec<u8>, DiskAccessMode);

impl ReadFile for MemRead {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let src = start
            .checked_add(buf.len())
            .and_then(|end| self.0.get(start..end))
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.0.len() as u64
    }

    fn mapped(&self, kind: ReadKind) -> Option<&[u8]> {
        self.1.maps(kind).then_some(&self.0[..])
    }
}

impl Fs for MemFs {
    fn never_waits(&self) -> bool {
        true
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
        let contents: Contents = Arc::default();
        self.files
            .lock()
            .insert(path.to_path_buf(), contents.clone());
        Ok(Box::new(MemWrite(contents)))
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn ReadFile>> {
        let bytes = self.get(path).ok_or_else(|| MemFs::not_found(path))?;
        Ok(Box::new(MemRead(bytes, self.access)))
    }

    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.get(path).ok_or_else(|| MemFs::not_found(path))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut files = self.files.lock();
        let c = files.remove(from).ok_or_else(|| MemFs::not_found(from))?;
        files.insert(to.to_path_buf(), c);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.files
            .lock()
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| MemFs::not_found(path))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        Ok(self
            .files
            .lock()
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .cloned()
            .collect())
    }

    fn create_dir_all(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }

    fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        self.files.lock().contains_key(path)
    }
}
