//! The log file: a header, then records appended one after another
//! (docs/format/metadata-log.md, section 1.1).
//!
//! ```text
//! header: "VMLG" | version u8 | purged_len u32 | purged bytes | crc32 u32
//! record: payload_len u32 | crc32 u32 (of index and payload) | index u64 | payload
//! ```
//!
//! Indexes follow each other by one. Only offsets stay in memory; reads
//! go to the file. Appends and truncations are fsynced before they
//! return. Purging rewrites the file without the purged records (beside
//! it, then renamed), with the purged log id in the header: the metadata
//! log is small and purged once per snapshot.
//!
//! At open, a record that runs past the end of the file, or the last
//! record when its CRC does not check, is a torn write: it is cut off
//! with a warning. A bad record with records after it, an index out of
//! sequence, or a bad header is corruption, and open fails.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::ops::RangeBounds;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::{replace_file, StoreError, StoreResult};
use crate::metadata::limits::{MAX_LOG_RECORD_BYTES, MAX_STATE_FILE_BYTES};

pub const LOG_FILE_NAME: &str = "log";
pub const LOG_MAGIC: [u8; 4] = *b"VMLG";
pub const LOG_FORMAT_VERSION: u8 = 1;
/// Payload length, CRC, index.
pub const RECORD_HEADER_BYTES: usize = 4 + 4 + 8;

/// Where one record's payload is.
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// Offset of the record (its header).
    offset: u64,
    len: u32,
}

/// The open log file.
#[derive(Debug)]
pub struct LogFile {
    path: PathBuf,
    dir: PathBuf,
    file: File,
    /// The purged log id as the caller encoded it; empty if none.
    purged: Vec<u8>,
    slots: BTreeMap<u64, Slot>,
    end: u64,
}

impl LogFile {
    /// Opens `dir/log`, creating an empty one if there is none.
    pub fn open(dir: &Path) -> StoreResult<LogFile> {
        let path = dir.join(LOG_FILE_NAME);
        if !path.exists() {
            replace_file(dir, LOG_FILE_NAME, &header(&[]))?;
        }
        let bytes = std::fs::read(&path).map_err(|e| StoreError::io(&path, e))?;
        let (purged, header_len) = read_header(&path, &bytes)?;
        let (slots, valid_end) = scan(&path, &bytes, header_len)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| StoreError::io(&path, e))?;
        if valid_end < bytes.len() as u64 {
            tracing::warn!(
                path = %path.display(),
                offset = valid_end,
                cut_bytes = bytes.len() as u64 - valid_end,
                "metadata log: cutting a torn record at the end"
            );
            file.set_len(valid_end)
                .and_then(|()| file.sync_all())
                .map_err(|e| StoreError::io(&path, e))?;
        }
        Ok(LogFile {
            path,
            dir: dir.to_path_buf(),
            file,
            purged,
            slots,
            end: valid_end,
        })
    }

    /// The purged log id as written by [`LogFile::purge`]; empty if none.
    pub fn purged(&self) -> &[u8] {
        &self.purged
    }

    pub fn first_index(&self) -> Option<u64> {
        self.slots.keys().next().copied()
    }

    pub fn last_index(&self) -> Option<u64> {
        self.slots.keys().next_back().copied()
    }

    /// The payloads of the records in `range`, in index order.
    pub fn read(&self, range: impl RangeBounds<u64>) -> StoreResult<Vec<(u64, Vec<u8>)>> {
        self.slots
            .range(range)
            .map(|(index, slot)| Ok((*index, self.read_slot(*slot)?)))
            .collect()
    }

    fn read_slot(&self, slot: Slot) -> StoreResult<Vec<u8>> {
        let mut buf = vec![0; slot.len as usize];
        let at = slot.offset + RECORD_HEADER_BYTES as u64;
        self.file
            .read_exact_at(&mut buf, at)
            .map_err(|e| StoreError::io(&self.path, e))?;
        Ok(buf)
    }

    /// Appends records and fsyncs. The first index must follow the last
    /// record's (any index if the log is empty), and each the one before.
    pub fn append(&mut self, records: &[(u64, Vec<u8>)]) -> StoreResult<()> {
        let mut out = Vec::new();
        let mut next = self.last_index().map(|i| i + 1);
        let mut slots = Vec::with_capacity(records.len());
        for (index, payload) in records {
            if next.is_some_and(|n| n != *index) || payload.len() > MAX_LOG_RECORD_BYTES {
                return Err(StoreError::corruption(
                    &self.path,
                    self.end,
                    format!("append of index {index} ({} bytes) refused", payload.len()),
                ));
            }
            let offset = self.end + out.len() as u64;
            slots.push((
                *index,
                Slot {
                    offset,
                    len: payload.len() as u32,
                },
            ));
            put_record(&mut out, *index, payload);
            next = Some(index + 1);
        }
        self.file
            .write_all_at(&out, self.end)
            .and_then(|()| self.file.sync_data())
            .map_err(|e| StoreError::io(&self.path, e))?;
        self.end += out.len() as u64;
        self.slots.extend(slots);
        Ok(())
    }

    /// Removes every record from `index` on, and fsyncs.
    pub fn truncate(&mut self, index: u64) -> StoreResult<()> {
        let Some((_, first)) = self.slots.range(index..).next() else {
            return Ok(());
        };
        let end = first.offset;
        self.file
            .set_len(end)
            .and_then(|()| self.file.sync_all())
            .map_err(|e| StoreError::io(&self.path, e))?;
        self.slots.split_off(&index);
        self.end = end;
        Ok(())
    }

    /// Removes every record up to and including `index`, and records
    /// `purged` (the caller's encoding of the purged log id) in the
    /// header: the file is rewritten and renamed over the old one.
    pub fn purge(&mut self, index: u64, purged: &[u8]) -> StoreResult<()> {
        let kept = self.read(index.saturating_add(1)..)?;
        let mut out = header(purged);
        for (i, payload) in &kept {
            put_record(&mut out, *i, payload);
        }
        replace_file(&self.dir, LOG_FILE_NAME, &out)?;
        *self = LogFile::open(&self.dir)?;
        Ok(())
    }
}

fn put_record(out: &mut Vec<u8>, index: u64, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(&record_crc(index, payload).to_be_bytes());
    out.extend_from_slice(&index.to_be_bytes());
    out.extend_from_slice(payload);
}

fn record_crc(index: u64, payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&index.to_be_bytes());
    hasher.update(payload);
    hasher.finalize()
}

fn header(purged: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(13 + purged.len());
    out.extend_from_slice(&LOG_MAGIC);
    out.push(LOG_FORMAT_VERSION);
    out.extend_from_slice(&(purged.len() as u32).to_be_bytes());
    out.extend_from_slice(purged);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

/// The purged bytes and the header's length.
fn read_header(path: &Path, bytes: &[u8]) -> StoreResult<(Vec<u8>, usize)> {
    let bad = |reason: &str| StoreError::corruption(path, 0, reason);
    if bytes.len() < 9 || bytes[..4] != LOG_MAGIC {
        return Err(bad("not a metadata log header"));
    }
    if bytes[4] != LOG_FORMAT_VERSION {
        return Err(bad("unknown log format version"));
    }
    let len = u32::from_be_bytes([bytes[5], bytes[6], bytes[7], bytes[8]]) as usize;
    if len > MAX_STATE_FILE_BYTES || bytes.len() < 9 + len + 4 {
        return Err(bad("header length out of bounds"));
    }
    let end = 9 + len;
    let crc = u32::from_be_bytes([bytes[end], bytes[end + 1], bytes[end + 2], bytes[end + 3]]);
    if crc != crc32fast::hash(&bytes[..end]) {
        return Err(bad("header CRC mismatch"));
    }
    Ok((bytes[9..end].to_vec(), end + 4))
}

/// The records' slots and where the valid records end.
fn scan(path: &Path, bytes: &[u8], start: usize) -> StoreResult<(BTreeMap<u64, Slot>, u64)> {
    let mut slots = BTreeMap::new();
    let mut pos = start;
    let mut last: Option<u64> = None;
    while pos < bytes.len() {
        let rest = &bytes[pos..];
        if rest.len() < RECORD_HEADER_BYTES {
            break; // a torn header
        }
        let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let crc = u32::from_be_bytes([rest[4], rest[5], rest[6], rest[7]]);
        let mut index_bytes = [0; 8];
        index_bytes.copy_from_slice(&rest[8..16]);
        let index = u64::from_be_bytes(index_bytes);
        let end = RECORD_HEADER_BYTES.saturating_add(len);
        if end > rest.len() {
            break; // runs past the end: a torn write
        }
        let bad = |reason: String| StoreError::corruption(path, pos as u64, reason);
        if len > MAX_LOG_RECORD_BYTES {
            return Err(bad(format!("record of {len} bytes")));
        }
        if crc != record_crc(index, &rest[RECORD_HEADER_BYTES..end]) {
            if end == rest.len() {
                break; // the last record: a torn write
            }
            return Err(bad(format!("CRC mismatch in record {index}")));
        }
        if last.is_some_and(|l| l + 1 != index) {
            return Err(bad(format!("index {index} after {last:?}")));
        }
        slots.insert(
            index,
            Slot {
                offset: pos as u64,
                len: len as u32,
            },
        );
        last = Some(index);
        pos += end;
    }
    Ok((slots, pos as u64))
}

#[cfg(test)]
#[path = "log_file_tests.rs"]
mod tests;
