//! The hints a coordinator keeps on its disk for replicas that missed
//! writes (docs/design/cluster.md, section 8.5): files per target node in
//! `hints_directory`, within a per-node and a total budget, synced every
//! `hints_flush_period`, handed to the dispatcher file by file and deleted
//! once every hint in a file was delivered.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::time::Instant;

use super::file;
use super::{HintsConfig, HintsMetrics};
use crate::net::HostId;

/// A file is closed (and becomes deliverable) past this size.
pub const FILE_ROTATE_BYTES: u64 = 8 * 1024 * 1024;

/// The hints of one target node.
#[derive(Default)]
struct Target {
    /// The file being appended to.
    writing: Option<Writing>,
    /// Closed files, oldest first, with their sizes.
    closed: Vec<(PathBuf, u64)>,
    bytes: u64,
}

struct Writing {
    file: File,
    path: PathBuf,
    bytes: u64,
    dirty: bool,
}

/// Every target's hints on this node.
pub struct HintStore {
    config: HintsConfig,
    targets: Mutex<BTreeMap<HostId, Target>>,
    /// When each node was seen going DOWN (for `max_hint_window`).
    down_since: Mutex<BTreeMap<HostId, Instant>>,
    total_bytes: AtomicU64,
    next_file: AtomicU64,
    pub(super) metrics: HintsMetrics,
}

impl HintStore {
    /// Opens `config.dir` (creating it), taking the files a previous run
    /// left as deliverable.
    pub fn open(config: HintsConfig, metrics: HintsMetrics) -> io::Result<Arc<HintStore>> {
        std::fs::create_dir_all(&config.dir)?;
        let mut targets: BTreeMap<HostId, Target> = BTreeMap::new();
        let mut last = 0;
        let mut total = 0;
        let mut found: Vec<(u64, PathBuf)> = Vec::new();
        for entry in std::fs::read_dir(&config.dir)? {
            let path = entry?.path();
            if let Some(seq) = sequence_of(&path) {
                found.push((seq, path));
            }
        }
        found.sort();
        for (seq, path) in found {
            last = last.max(seq);
            match file::read(&path) {
                Ok(c) => {
                    let size = std::fs::metadata(&path)?.len();
                    let t = targets.entry(c.target).or_default();
                    t.closed.push((path, size));
                    t.bytes += size;
                    total += size;
                }
                Err(e) => tracing::warn!(
                    "hints file {} is unreadable, left aside: {e}",
                    path.display()
                ),
            }
        }
        Ok(Arc::new(HintStore {
            config,
            targets: Mutex::new(targets),
            down_since: Mutex::new(BTreeMap::new()),
            total_bytes: AtomicU64::new(total),
            next_file: AtomicU64::new(last + 1),
            metrics,
        }))
    }

    pub fn config(&self) -> &HintsConfig {
        &self.config
    }

    /// Whether a write missed by `target` should be kept for it now:
    /// hints are on and it has not been DOWN longer than the window.
    pub fn should_hint(&self, target: HostId, now: Instant) -> bool {
        self.config.enabled
            && self
                .down_since
                .lock()
                .get(&target)
                .is_none_or(|since| now.saturating_duration_since(*since) < self.config.max_window)
    }

    /// Notes that `target` went DOWN (`Some(now)`) or came UP (`None`).
    pub fn set_down(&self, target: HostId, since: Option<Instant>) {
        let mut d = self.down_since.lock();
        match since {
            Some(t) => {
                d.entry(target).or_insert(t);
            }
            None => {
                d.remove(&target);
            }
        }
    }

    /// Keeps a MUTATION payload for `target`; whether it was stored (not
    /// over a budget, the disk willing).
    pub fn store(&self, target: HostId, created_micros: i64, mutation: &Bytes) -> bool {
        let mut payload = Vec::with_capacity(8 + mutation.len());
        payload.extend_from_slice(&created_micros.to_be_bytes());
        payload.extend_from_slice(mutation);
        let entry = file::entry(&payload);
        let size = entry.len() as u64;
        let mut targets = self.targets.lock();
        let t = targets.entry(target).or_default();
        let per_host = self.config.max_bytes_per_host;
        let over_host = per_host > 0 && t.bytes + size > per_host;
        let over_total =
            self.total_bytes.load(Ordering::Relaxed) + size > self.config.max_bytes_total;
        if over_host || over_total || payload.len() > file::MAX_HINT_BYTES {
            self.metrics.dropped.inc();
            return false;
        }
        match self.append(target, t, &entry) {
            Ok(()) => {
                t.bytes += size;
                self.total_bytes.fetch_add(size, Ordering::Relaxed);
                self.metrics.created.inc();
                true
            }
            Err(e) => {
                tracing::warn!("a hint for {target} was not stored: {e}");
                self.metrics.dropped.inc();
                false
            }
        }
    }

    fn append(&self, target: HostId, t: &mut Target, entry: &[u8]) -> io::Result<()> {
        if t.writing.is_none() {
            let seq = self.next_file.fetch_add(1, Ordering::Relaxed);
            let path = self.config.dir.join(format!("{target}-{seq:012}.hints"));
            let file = file::create(&path, target)?;
            t.writing = Some(Writing {
                file,
                path,
                bytes: file::HEADER_BYTES as u64,
                dirty: true,
            });
        }
        let w = t.writing.as_mut().expect("opened above");
        w.file.write_all(entry)?;
        w.bytes += entry.len() as u64;
        w.dirty = true;
        if w.bytes >= FILE_ROTATE_BYTES {
            close_writing(t)?;
        }
        Ok(())
    }

    /// Syncs every file written since the last sync (each
    /// `hints_flush_period`, and at shutdown).
    pub fn flush(&self) {
        let mut targets = self.targets.lock();
        for (host, t) in targets.iter_mut() {
            if let Some(w) = t.writing.as_mut().filter(|w| w.dirty) {
                match w.file.sync_data() {
                    Ok(()) => w.dirty = false,
                    Err(e) => tracing::warn!("syncing hints for {host}: {e}"),
                }
            }
        }
    }

    /// The targets that have hints, in host order.
    pub fn targets(&self) -> Vec<HostId> {
        self.targets
            .lock()
            .iter()
            .filter(|(_, t)| t.writing.is_some() || !t.closed.is_empty())
            .map(|(h, _)| *h)
            .collect()
    }

    /// Closes `target`'s current file and returns its files to deliver,
    /// oldest first.
    pub fn take(&self, target: HostId) -> Vec<PathBuf> {
        let mut targets = self.targets.lock();
        let Some(t) = targets.get_mut(&target) else {
            return Vec::new();
        };
        if let Err(e) = close_writing(t) {
            tracing::warn!("closing hints for {target}: {e}");
        }
        t.closed.iter().map(|(p, _)| p.clone()).collect()
    }

    /// Every hint of `path` was delivered: the file goes.
    pub fn delivered(&self, target: HostId, path: &Path) {
        let mut targets = self.targets.lock();
        if let Some(t) = targets.get_mut(&target) {
            if let Some(k) = t.closed.iter().position(|(p, _)| p == path) {
                let (_, size) = t.closed.remove(k);
                t.bytes = t.bytes.saturating_sub(size);
                let _ = self
                    .total_bytes
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                        Some(v.saturating_sub(size))
                    });
            }
        }
        if let Err(e) = std::fs::remove_file(path) {
            tracing::warn!("removing delivered hints {}: {e}", path.display());
        }
    }

    /// Deletes every hint (`nodetool truncatehints`); how many files went.
    pub fn truncate(&self) -> usize {
        let mut targets = self.targets.lock();
        let mut removed = 0;
        for t in targets.values_mut() {
            let paths = t
                .writing
                .take()
                .map(|w| w.path)
                .into_iter()
                .chain(t.closed.drain(..).map(|(p, _)| p));
            for p in paths {
                if std::fs::remove_file(&p).is_ok() {
                    removed += 1;
                }
            }
            t.bytes = 0;
        }
        self.total_bytes.store(0, Ordering::Relaxed);
        removed
    }

    /// Bytes of hints on disk.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes.load(Ordering::Relaxed)
    }
}

/// Syncs and closes a target's current file; it becomes deliverable.
fn close_writing(t: &mut Target) -> io::Result<()> {
    if let Some(w) = t.writing.take() {
        w.file.sync_data()?;
        t.closed.push((w.path, w.bytes));
    }
    Ok(())
}

/// The sequence number of a hints file's name (`<host id>-<seq>.hints`).
fn sequence_of(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?.strip_suffix(".hints")?;
    name.rsplit('-').next()?.parse().ok()
}
