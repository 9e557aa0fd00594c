//! Replay of the segments found at open.
//!
//! Two passes. At open, each segment is walked once to check every
//! checksum, learn which tables have data in it (so it is kept until they
//! flush) and report what is damaged. Then [`Replay`] walks them again,
//! one segment in memory at a time, decoding each partition as the caller
//! pulls entries.
//!
//! Damage (see docs/design/durability.md): where an entry fails its
//! checksums, the segment's replay stops. If no intact entry follows, the
//! bytes are the remains of an interrupted write — a [`WarningKind::TornTail`].
//! If intact entries follow, it is [`WarningKind::Corruption`]: the entries
//! after it are not replayed (they cannot be trusted to be whole entries),
//! and with `strict_replay` the open fails instead.

use super::position::Position;
use super::segment::{
    decode_header, decode_payload_head, next_entry, parse_segment_file_name, payload_table,
    SEGMENT_HEADER_BYTES,
};
use crate::clustering::ClusteringComparator;
use crate::encoding::{decode_partition_v, READABLE_PARTITION_ENCODINGS};
use crate::engine::{PartitionKey, TableId};
use crate::error::{Error, Result};
use crate::fs::Fs;
use crate::partition::Partition;
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use varve_types::CqlType;

/// One entry found in the commitlog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayEntry {
    pub position: Position,
    pub table: TableId,
    pub key: PartitionKey,
    pub partition: Partition,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarningKind {
    /// The end of a segment holds the remains of an interrupted write
    /// (nothing intact follows): expected after a crash.
    TornTail,
    /// Damaged bytes with intact entries after them, a damaged header, an
    /// entry whose checksum holds but which does not decode, or a segment
    /// that could not be read: the replay of that segment stopped or
    /// skipped the entry. Data may be lost.
    Corruption,
}

/// Something replay skipped, with where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayWarning {
    pub file: PathBuf,
    pub offset: u64,
    pub kind: WarningKind,
    pub reason: String,
}

/// What the first pass learned of one segment.
pub(super) struct ScannedSegment {
    pub path: PathBuf,
    pub id: u64,
    pub bytes: u64,
    /// Known tables with entries here, and their last entry's position.
    pub tables: HashMap<TableId, Position>,
}

/// The entries of the segments found at open, oldest first. Iterate it to
/// the end, then look at [`Replay::warnings`].
pub struct Replay {
    fs: Arc<dyn Fs>,
    queue: VecDeque<(PathBuf, u64)>,
    comparators: HashMap<TableId, Arc<ClusteringComparator>>,
    /// The segment being replayed: path, id, bytes, offset of the next
    /// entry, and the partition encoding version its header names.
    current: Option<(PathBuf, u64, Vec<u8>, usize, u8)>,
    warnings: Vec<ReplayWarning>,
    skipped_unknown: u64,
    segments: usize,
}

impl Replay {
    /// Damage found so far (all framing damage is known at open; decoding
    /// damage appears as the iteration reaches it).
    pub fn warnings(&self) -> &[ReplayWarning] {
        &self.warnings
    }

    /// Entries skipped because their table is unknown (dropped).
    pub fn skipped_unknown_tables(&self) -> u64 {
        self.skipped_unknown
    }

    /// Segments found at open.
    pub fn segments_found(&self) -> usize {
        self.segments
    }

    fn warn(&mut self, file: &Path, offset: u64, kind: WarningKind, reason: String) {
        self.warnings.push(ReplayWarning {
            file: file.to_path_buf(),
            offset,
            kind,
            reason,
        });
    }
}

impl Iterator for Replay {
    type Item = ReplayEntry;

    fn next(&mut self) -> Option<ReplayEntry> {
        loop {
            let Some((path, id, bytes, pos, version)) = self.current.as_mut() else {
                let (path, id) = self.queue.pop_front()?;
                match self.fs.read_all(&path) {
                    Ok(bytes) => match decode_header(&bytes) {
                        Ok(h) => {
                            let at = SEGMENT_HEADER_BYTES as usize;
                            self.current = Some((path, id, bytes, at, h.encoding_version))
                        }
                        // The first pass checked it: the file changed since.
                        Err((_, reason)) => self.warn(&path, 0, WarningKind::Corruption, reason),
                    },
                    Err(e) => self.warn(
                        &path,
                        0,
                        WarningKind::Corruption,
                        format!("could not read segment: {e}"),
                    ),
                }
                continue;
            };
            // Damage was reported by the first pass: here it just ends the walk.
            let Ok(Some((offset, payload))) = next_entry(bytes, pos) else {
                self.current = None;
                continue;
            };
            let position = Position::new(*id, offset);
            let Some(cmp) = payload_table(payload).and_then(|t| self.comparators.get(&t)) else {
                continue;
            };
            match decode_entry(payload, cmp, *version) {
                Ok((table, key, partition)) => {
                    return Some(ReplayEntry {
                        position,
                        table,
                        key,
                        partition,
                    })
                }
                Err(reason) => {
                    let path = path.clone();
                    self.warn(
                        &path,
                        offset,
                        WarningKind::Corruption,
                        format!("entry does not decode: {reason}"),
                    );
                }
            }
        }
    }
}

/// Decodes one entry's payload, its partition in encoding `version` (from
/// the segment header).
fn decode_entry(
    payload: &[u8],
    cmp: &Arc<ClusteringComparator>,
    version: u8,
) -> std::result::Result<(TableId, PartitionKey, Partition), String> {
    let (table, key, mut r) = decode_payload_head(payload)?;
    let partition = decode_partition_v(&mut r, cmp, version).map_err(|e| e.to_string())?;
    if !r.is_empty() {
        return Err(format!(
            "{} bytes after the partition",
            payload.len() - r.position()
        ));
    }
    Ok((table, key, partition))
}

/// The first pass over every segment of `dir`.
pub(super) fn scan_directory(
    fs: &Arc<dyn Fs>,
    dir: &Path,
    comparators: &dyn Fn(TableId) -> Option<Arc<ClusteringComparator>>,
    strict: bool,
) -> Result<(Vec<ScannedSegment>, Replay)> {
    let mut files: Vec<(u64, PathBuf)> = fs
        .list(dir)
        .map_err(|e| Error::io(dir, e))?
        .into_iter()
        .filter_map(|p| {
            let (_, id) = parse_segment_file_name(p.file_name()?.to_str()?)?;
            Some((id, p))
        })
        .collect();
    files.sort();
    let mut replay = Replay {
        fs: fs.clone(),
        queue: VecDeque::new(),
        comparators: HashMap::new(),
        current: None,
        warnings: Vec::new(),
        skipped_unknown: 0,
        segments: files.len(),
    };
    let mut scanned = Vec::with_capacity(files.len());
    for (id, path) in files {
        let bytes = fs.read_all(&path).map_err(|e| Error::io(path.clone(), e))?;
        let seg = scan_segment(&path, id, &bytes, comparators, &mut replay);
        if strict {
            if let Some(w) = replay
                .warnings
                .iter()
                .find(|w| w.kind == WarningKind::Corruption)
            {
                return Err(Error::corruption(
                    w.file.clone(),
                    w.offset,
                    w.reason.clone(),
                ));
            }
        }
        if !seg.tables.is_empty() {
            replay.queue.push_back((path, id));
        }
        scanned.push(seg);
    }
    Ok((scanned, replay))
}

fn scan_segment(
    path: &Path,
    id: u64,
    bytes: &[u8],
    comparators: &dyn Fn(TableId) -> Option<Arc<ClusteringComparator>>,
    replay: &mut Replay,
) -> ScannedSegment {
    let mut seg = ScannedSegment {
        path: path.to_path_buf(),
        id,
        bytes: bytes.len() as u64,
        tables: HashMap::new(),
    };
    match decode_header(bytes) {
        Ok(h) if h.id == id => {}
        Ok(h) => {
            let reason = format!("header says segment {} but the file name says {id}", h.id);
            replay.warn(path, 0, WarningKind::Corruption, reason);
            return seg;
        }
        Err((torn, reason)) => {
            let kind = if torn {
                WarningKind::TornTail
            } else {
                WarningKind::Corruption
            };
            replay.warn(path, 0, kind, reason);
            return seg;
        }
    }
    let mut pos = SEGMENT_HEADER_BYTES as usize;
    loop {
        match next_entry(bytes, &mut pos) {
            Ok(None) => break,
            Ok(Some((offset, payload))) => {
                let Some(table) = payload_table(payload) else {
                    continue;
                };
                let known = replay.comparators.contains_key(&table) || {
                    let cmp = comparators(table);
                    cmp.map(|c| replay.comparators.insert(table, c)).is_some()
                };
                if known {
                    let last = seg.tables.entry(table).or_insert(Position::new(id, offset));
                    *last = (*last).max(Position::new(id, offset));
                } else {
                    replay.skipped_unknown += 1;
                }
            }
            Err(stop) => {
                let kind = if stop.torn {
                    WarningKind::TornTail
                } else {
                    WarningKind::Corruption
                };
                replay.warn(path, stop.offset, kind, stop.reason);
                break;
            }
        }
    }
    seg
}

/// Replays a segment image from memory and discards the results: the
/// entry point of the commitlog fuzz target. Must never panic.
pub fn fuzz_replay(bytes: &[u8]) {
    let cmp = ClusteringComparator::new(vec![(CqlType::Blob, false), (CqlType::Int, true)]);
    // The payload decoder on raw input, since checksums keep most fuzzed
    // bytes away from it; the first byte picks the encoding version.
    if let Some((first, rest)) = bytes.split_first() {
        let versions = READABLE_PARTITION_ENCODINGS;
        let _ = decode_entry(rest, &cmp, versions[*first as usize % versions.len()]);
    }
    let mut replay = Replay {
        fs: Arc::new(crate::fs_sim::SimFs::new()),
        queue: VecDeque::new(),
        comparators: HashMap::new(),
        current: None,
        warnings: Vec::new(),
        skipped_unknown: 0,
        segments: 1,
    };
    let header = decode_header(bytes).ok();
    let id = header.map_or(0, |h| h.id);
    let version = header.map_or(crate::encoding::PARTITION_ENCODING_VERSION, |h| {
        h.encoding_version
    });
    let path = Path::new("fuzz.log");
    let known = |_| Some(cmp.clone());
    let _ = scan_segment(path, id, bytes, &known, &mut replay);
    let mut pos = SEGMENT_HEADER_BYTES as usize;
    while let Ok(Some((_, payload))) = next_entry(bytes, &mut pos) {
        let _ = decode_entry(payload, &cmp, version);
    }
}
