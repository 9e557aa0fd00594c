//! Snapshots of tables: `nodetool snapshot`, `listsnapshots`,
//! `clearsnapshot`, and auto_snapshot before DROP and TRUNCATE
//! (docs/design/snapshots.md).
//!
//! A snapshot of a table flushes its memtable, then gives every live
//! sstable a second name (a hard link: no byte is copied) in
//! `<table directory>/snapshots/<tag>/`, beside a `manifest.json` and, when
//! the query layer told storage the table's CQL, `schema.cql` (layout and
//! names: [`crate::snapshot_manifest`]). The links are made under the
//! table's state lock, so no compaction swaps those sstables out and
//! deletes their files half-way; afterwards compaction and DROP delete
//! only their own names, and the snapshot keeps the bytes.
//!
//! Invariants:
//! 1. A tag names at most one snapshot of a table; taking it again is
//!    refused, and a snapshot that failed half-way is removed whole.
//! 2. DROP TABLE and TRUNCATE never delete anything under `snapshots/`: a
//!    dropped table's directory stays while it holds snapshots (as in
//!    Cassandra), and `clearsnapshot` removes it once it is empty.
//! 3. Listing and clearing read the directories on disk, so they see the
//!    snapshots of dropped tables too.

use crate::engine::{Engine, TableId, TableStore};
use crate::error::{Error, Result};
use crate::fs::Fs;
use crate::snapshot_manifest::{
    auto_tag, table_of_dir_name, validate_tag, SnapshotManifest, DROPPED_PREFIX, SNAPSHOTS_DIR,
    SNAPSHOT_MANIFEST_FILE, SNAPSHOT_SCHEMA_FILE,
};
use parking_lot::{Mutex, RwLock};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes read and written at a time when a file must be copied (a file
/// system without hard links, or an import from another device).
pub const COPY_CHUNK_BYTES: usize = 1 << 20;
/// Tags auto_snapshot tries before it gives up (a clock that went back
/// can meet names already taken).
const AUTO_TAG_ATTEMPTS: usize = 16;

/// The engine's snapshot state.
#[derive(Default)]
pub(crate) struct SnapshotState {
    /// One snapshot, listing or clearing at a time: a tag is taken once,
    /// and nothing is listed while it is half made or half removed.
    lock: Mutex<()>,
    /// `auto_snapshot: false` (the default is on, as in Cassandra).
    auto_snapshot_off: AtomicBool,
    /// The milliseconds of the last auto_snapshot tag: each takes a later
    /// one, so two in one millisecond never share a tag.
    last_auto_millis: AtomicU64,
    /// Each table's CREATE TABLE, as the query layer gave it.
    schemas: RwLock<HashMap<TableId, Arc<str>>>,
}

/// One snapshot of one table, as `nodetool listsnapshots` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotInfo {
    pub tag: String,
    pub keyspace: String,
    pub table: String,
    pub dir: PathBuf,
    /// Sstables in it.
    pub sstables: usize,
    /// Bytes of its files that no live sstable of the table shares: what
    /// clearing it gives back.
    pub true_size_bytes: u64,
    /// Bytes of all its files.
    pub size_on_disk_bytes: u64,
    /// When it was taken, from its manifest (`None` if unreadable).
    pub created_at_millis: Option<i64>,
}

impl Engine {
    /// Sets `auto_snapshot`: whether DROP and TRUNCATE snapshot the table
    /// first (default true).
    pub fn set_auto_snapshot(&self, on: bool) {
        self.snapshots
            .auto_snapshot_off
            .store(!on, Ordering::Relaxed);
    }

    /// Whether DROP and TRUNCATE snapshot the table first.
    pub fn auto_snapshot(&self) -> bool {
        !self.snapshots.auto_snapshot_off.load(Ordering::Relaxed)
    }

    /// Tells storage a table's CREATE TABLE statement, for the
    /// `schema.cql` and manifest of its snapshots.
    pub fn set_table_schema_cql(&self, id: TableId, cql: &str) {
        self.snapshots.schemas.write().insert(id, Arc::from(cql));
    }

    pub(crate) fn forget_table_schema_cql(&self, id: TableId) {
        self.snapshots.schemas.write().remove(&id);
    }

    /// Whether the table has a snapshot called `tag`.
    pub fn snapshot_exists(&self, id: TableId, tag: &str) -> Result<bool> {
        validate_tag(tag).map_err(Error::Refused)?;
        let table = self.table(id)?;
        Ok(table
            .dir
            .as_ref()
            .is_some_and(|d| self.fs.exists(&d.join(SNAPSHOTS_DIR).join(tag))))
    }

    /// Flushes the table, then snapshots its live sstables as `tag`;
    /// returns the snapshot's directory. A tag the table already has is
    /// refused.
    pub fn snapshot(&self, id: TableId, tag: &str) -> Result<PathBuf> {
        validate_tag(tag).map_err(Error::Refused)?;
        let table = self.table(id)?;
        let (keyspace, name) = {
            let d = table.desc.read();
            (d.keyspace.clone(), d.name.clone())
        };
        let Some(dir) = table.dir.clone() else {
            return Err(Error::Refused(format!(
                "table {keyspace}.{name} is kept in memory: it has no files to snapshot"
            )));
        };
        let _one = self.snapshots.lock.lock();
        let target = dir.join(SNAPSHOTS_DIR).join(tag);
        if self.fs.exists(&target) {
            return Err(Error::Refused(format!(
                "snapshot {tag} already exists for {keyspace}.{name}"
            )));
        }
        self.flush(id)?;
        self.fs
            .create_dir_all(&target)
            .map_err(|e| Error::io(&target, e))?;
        match self.fill_snapshot(&table, &dir, &target) {
            Ok(()) => Ok(target),
            Err(e) => {
                if let Err(cleanup) = remove_tree(self.fs.as_ref(), &target) {
                    tracing::warn!(
                        "removing the failed snapshot {}: {cleanup}",
                        target.display()
                    );
                }
                Err(e)
            }
        }
    }

    /// Links the live sstables into `target`, then writes the manifest
    /// and the schema, all durably.
    fn fill_snapshot(&self, table: &TableStore, dir: &Path, target: &Path) -> Result<()> {
        let files = self.link_live_sstables(table, target)?;
        let desc = table.desc.read().clone();
        let manifest = SnapshotManifest {
            keyspace: desc.keyspace,
            table: desc.name,
            table_id: desc.id,
            created_at_millis: varve_types::time::now_millis(),
            files,
            schema: self
                .snapshots
                .schemas
                .read()
                .get(&desc.id)
                .map(|s| s.to_string()),
        };
        let fs = self.fs.as_ref();
        write_durably(fs, &target.join(SNAPSHOT_MANIFEST_FILE), &manifest.encode())?;
        if let Some(cql) = &manifest.schema {
            let text = format!("{};\n", cql.trim_end().trim_end_matches(';'));
            write_durably(fs, &target.join(SNAPSHOT_SCHEMA_FILE), text.as_bytes())?;
        }
        let snapshots = dir.join(SNAPSHOTS_DIR);
        for d in [target, snapshots.as_path(), dir] {
            fs.sync_dir(d).map_err(|e| Error::io(d, e))?;
        }
        Ok(())
    }

    /// Hard links (or copies) each live sstable into `target`; returns
    /// their file names.
    fn link_live_sstables(&self, table: &TableStore, target: &Path) -> Result<Vec<String>> {
        // Under the state lock: a compaction cannot make these sstables
        // dead, and so delete their files, while they are being linked.
        let state = table.state.read();
        let mut names = Vec::with_capacity(state.sstables.len());
        for s in &state.sstables {
            let from = s.path();
            let name = from
                .file_name()
                .and_then(|n| n.to_str())
                .ok_or_else(|| Error::Refused(format!("{} has no file name", from.display())))?;
            link_or_copy(self.fs.as_ref(), from, &target.join(name))?;
            names.push(name.to_string());
        }
        Ok(names)
    }

    /// Takes the auto_snapshot of a table about to be dropped or truncated
    /// (`prefix` is [`crate::snapshot_manifest::DROPPED_PREFIX`] or
    /// `TRUNCATED_PREFIX`), unless auto_snapshot is off or the table has
    /// no files. Returns the snapshot's directory when it took one.
    pub(crate) fn auto_snapshot_before(
        &self,
        id: TableId,
        prefix: &str,
    ) -> Result<Option<PathBuf>> {
        if !self.auto_snapshot() {
            return Ok(None);
        }
        let table = self.table(id)?;
        let Some(dir) = table.dir.clone() else {
            return Ok(None);
        };
        let name = table.desc.read().name.clone();
        let mut last = None;
        for _ in 0..AUTO_TAG_ATTEMPTS {
            let tag = auto_tag(prefix, self.next_auto_millis(), &name);
            if self.fs.exists(&dir.join(SNAPSHOTS_DIR).join(&tag)) {
                last = Some(tag);
                continue;
            }
            return self.snapshot(id, &tag).map(Some);
        }
        Err(Error::Refused(format!(
            "auto_snapshot found every name it tried taken (the last {last:?})"
        )))
    }

    /// The auto_snapshot of a table about to be dropped (see
    /// [`Engine::drop_table`]); whether its files may go: false when the
    /// snapshot failed, which is logged with where the files stay.
    pub(crate) fn auto_snapshot_before_drop(&self, id: TableId) -> bool {
        let snapshot = self.auto_snapshot_before(id, DROPPED_PREFIX);
        self.forget_table_schema_cql(id);
        let Err(e) = snapshot else {
            return true;
        };
        let dir = self
            .table(id)
            .ok()
            .and_then(|t| t.dir.clone())
            .unwrap_or_default();
        tracing::error!(
            "auto_snapshot before dropping table {id:032x} failed, so its files are kept in {}: {e}",
            dir.display()
        );
        false
    }

    /// Deletes a dropped table's files, all but its `snapshots/`.
    pub(crate) fn remove_table_files(&self, dir: &Path) -> Result<()> {
        for path in list(self.fs.as_ref(), dir)? {
            if path.file_name() != Some(SNAPSHOTS_DIR.as_ref()) {
                self.fs.remove(&path).map_err(|e| Error::io(&path, e))?;
            }
        }
        Ok(())
    }

    /// Milliseconds for an auto_snapshot tag: now, or one past the last
    /// one given, whichever is later.
    fn next_auto_millis(&self) -> u64 {
        let now = u64::try_from(varve_types::time::now_millis()).unwrap_or(0);
        let previous = self
            .snapshots
            .last_auto_millis
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |last| {
                Some(now.max(last.saturating_add(1)))
            })
            .unwrap_or(now);
        now.max(previous.saturating_add(1))
    }

    /// Every snapshot on disk, of every table or of one keyspace's,
    /// dropped tables included, by keyspace, table and tag.
    pub fn list_snapshots(&self, keyspace: Option<&str>) -> Result<Vec<SnapshotInfo>> {
        let _one = self.snapshots.lock.lock();
        let mut out = Vec::new();
        for (keyspace, table, table_dir) in self.table_dirs(keyspace)? {
            for tag_dir in self.tag_dirs(&table_dir)? {
                out.push(self.snapshot_info(&keyspace, &table, &table_dir, &tag_dir)?);
            }
        }
        Ok(out)
    }

    /// Removes the snapshots called `tag` (every snapshot when `None`) of
    /// every table or of one keyspace's; returns how many it removed. A
    /// dropped table's directory goes once it holds nothing.
    pub fn clear_snapshots(&self, keyspace: Option<&str>, tag: Option<&str>) -> Result<usize> {
        if let Some(t) = tag {
            validate_tag(t).map_err(Error::Refused)?;
        }
        let _one = self.snapshots.lock.lock();
        let live: HashSet<PathBuf> = self
            .tables
            .read()
            .values()
            .filter_map(|t| t.dir.clone())
            .collect();
        let fs = self.fs.as_ref();
        let mut removed = 0;
        for (_, _, table_dir) in self.table_dirs(keyspace)? {
            for tag_dir in self.tag_dirs(&table_dir)? {
                let name = tag_dir.file_name().and_then(|n| n.to_str());
                if tag.is_none() || name == tag {
                    remove_tree(fs, &tag_dir)?;
                    removed += 1;
                }
            }
            remove_if_empty(fs, &table_dir.join(SNAPSHOTS_DIR))?;
            if !live.contains(&table_dir) {
                remove_if_empty(fs, &table_dir)?;
            }
        }
        Ok(removed)
    }

    /// (keyspace, table, directory) of every table directory on disk, of
    /// one keyspace or all, whether or not the table still exists.
    fn table_dirs(&self, keyspace: Option<&str>) -> Result<Vec<(String, String, PathBuf)>> {
        let Some(data_dir) = self.options.as_ref().map(|o| o.data_dir.clone()) else {
            return Ok(Vec::new());
        };
        let keyspace_dirs = match keyspace {
            Some(k) => {
                check_keyspace_name(k)?;
                vec![data_dir.join(k)]
            }
            None => list(self.fs.as_ref(), &data_dir)?,
        };
        let mut out = Vec::new();
        for ks_dir in keyspace_dirs.into_iter().filter(|d| self.is_dir(d)) {
            let Some(ks) = ks_dir
                .file_name()
                .and_then(|n| n.to_str())
                .map(str::to_string)
            else {
                continue;
            };
            for dir in list(self.fs.as_ref(), &ks_dir)? {
                let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if let Some((table, _)) = table_of_dir_name(name) {
                    if self.is_dir(&dir) {
                        out.push((ks.clone(), table.to_string(), dir.clone()));
                    }
                }
            }
        }
        Ok(out)
    }

    /// The snapshot directories of a table directory.
    fn tag_dirs(&self, table_dir: &Path) -> Result<Vec<PathBuf>> {
        let snapshots = table_dir.join(SNAPSHOTS_DIR);
        if !self.is_dir(&snapshots) {
            return Ok(Vec::new());
        }
        Ok(list(self.fs.as_ref(), &snapshots)?
            .into_iter()
            .filter(|d| self.is_dir(d))
            .collect())
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.fs.metadata(path).is_ok_and(|m| m.is_dir)
    }

    /// Sizes and manifest of one snapshot directory.
    fn snapshot_info(
        &self,
        keyspace: &str,
        table: &str,
        table_dir: &Path,
        tag_dir: &Path,
    ) -> Result<SnapshotInfo> {
        let fs = self.fs.as_ref();
        let tag = tag_dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let mut info = SnapshotInfo {
            tag: tag.to_string(),
            keyspace: keyspace.to_string(),
            table: table.to_string(),
            dir: tag_dir.to_path_buf(),
            sstables: 0,
            true_size_bytes: 0,
            size_on_disk_bytes: 0,
            created_at_millis: None,
        };
        for file in list(fs, tag_dir)? {
            let meta = fs.metadata(&file).map_err(|e| Error::io(&file, e))?;
            let Some(name) = file.file_name().filter(|_| !meta.is_dir) else {
                continue;
            };
            info.size_on_disk_bytes += meta.len;
            let is_sstable = name.to_str().is_some_and(|n| n.ends_with(".sst"));
            let live = fs.metadata(&table_dir.join(name));
            if !(is_sstable && live.is_ok_and(|l| l.identity == meta.identity)) {
                info.true_size_bytes += meta.len;
            }
            info.sstables += usize::from(is_sstable);
        }
        info.created_at_millis = fs
            .read_all(&tag_dir.join(SNAPSHOT_MANIFEST_FILE))
            .ok()
            .and_then(|b| SnapshotManifest::decode(&b).ok())
            .map(|m| m.created_at_millis);
        Ok(info)
    }
}

/// A keyspace name as a path component: letters, digits and `_` only (as
/// CQL allows), so it can never leave the data directory.
fn check_keyspace_name(keyspace: &str) -> Result<()> {
    let ok = !keyspace.is_empty()
        && keyspace
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(Error::Refused(format!(
            "{keyspace:?} is not a keyspace name"
        )))
    }
}

fn list(fs: &dyn Fs, dir: &Path) -> Result<Vec<PathBuf>> {
    fs.list(dir).map_err(|e| Error::io(dir, e))
}

/// A hard link of `from` at `to`; a copy where the file system has no hard
/// links or `to` is on another device.
pub(crate) fn link_or_copy(fs: &dyn Fs, from: &Path, to: &Path) -> Result<()> {
    match fs.hard_link(from, to) {
        Ok(()) => Ok(()),
        Err(e)
            if e.kind() == std::io::ErrorKind::Unsupported
                || e.raw_os_error() == Some(libc::EXDEV) =>
        {
            copy_file(fs, from, to)
        }
        Err(e) => Err(Error::io(to, e)),
    }
}

/// Copies `from` to a new file `to`, [`COPY_CHUNK_BYTES`] at a time, and
/// syncs it.
pub(crate) fn copy_file(fs: &dyn Fs, from: &Path, to: &Path) -> Result<()> {
    let src = fs.open_read(from).map_err(|e| Error::io(from, e))?;
    let mut dst = fs.create(to).map_err(|e| Error::io(to, e))?;
    let mut buf = vec![0u8; COPY_CHUNK_BYTES];
    let len = src.len();
    let mut at = 0u64;
    while at < len {
        let n = usize::try_from(len - at).map_or(COPY_CHUNK_BYTES, |r| r.min(COPY_CHUNK_BYTES));
        src.read_exact_at(at, &mut buf[..n])
            .map_err(|e| Error::io_at(from, at, n, e))?;
        dst.write_all(&buf[..n]).map_err(|e| Error::io(to, e))?;
        at += n as u64;
    }
    dst.sync().map_err(|e| Error::io(to, e))
}

/// Writes a small file whole and syncs it (its directory is synced by the
/// caller).
fn write_durably(fs: &dyn Fs, path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = fs.create(path).map_err(|e| Error::io(path, e))?;
    f.write_all(bytes).map_err(|e| Error::io(path, e))?;
    f.sync().map_err(|e| Error::io(path, e))
}

/// Removes a directory and everything in it.
fn remove_tree(fs: &dyn Fs, dir: &Path) -> Result<()> {
    for entry in list(fs, dir)? {
        if fs.metadata(&entry).is_ok_and(|m| m.is_dir) {
            remove_tree(fs, &entry)?;
        } else {
            fs.remove(&entry).map_err(|e| Error::io(&entry, e))?;
        }
    }
    fs.remove_dir(dir).map_err(|e| Error::io(dir, e))?;
    if let Some(parent) = dir.parent() {
        fs.sync_dir(parent).map_err(|e| Error::io(parent, e))?;
    }
    Ok(())
}

/// Removes `dir` if it exists and holds nothing.
fn remove_if_empty(fs: &dyn Fs, dir: &Path) -> Result<()> {
    if !fs.exists(dir) || !list(fs, dir)?.is_empty() {
        return Ok(());
    }
    fs.remove_dir(dir).map_err(|e| Error::io(dir, e))?;
    if let Some(parent) = dir.parent() {
        fs.sync_dir(parent).map_err(|e| Error::io(parent, e))?;
    }
    Ok(())
}
