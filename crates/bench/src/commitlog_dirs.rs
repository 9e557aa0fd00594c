//! Bytes a server's commitlog wrote, counted from its directory
//! (`--commitlog-dir`, once per node): for Cassandra, which counts none.
//!
//! Cassandra 5.0 writes an uncompressed commitlog through memory-mapped
//! segments whose files it sizes with a truncate, so a new segment takes
//! no disk blocks until its pages are written; the blocks a segment file
//! holds (`st_blocks`) are the bytes written to it so far. A segment is
//! deleted once its mutations are flushed, never reused, so the count is
//! the sum, over every segment file ever seen, of the most blocks seen for
//! it, at a page's granularity. Its rate is seed 004's "commitlog disk
//! throughput", beside Varve's own `varve_commitlog_bytes_written_total`.
//!
//! A directory that cannot be read adds nothing; when none can be read
//! the reading is `None` (an empty cell), not zero.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// Bytes in one `st_blocks` unit.
pub const BLOCK_BYTES: u64 = 512;

/// The commitlog directories of a cluster's nodes and what each segment
/// file has held at most.
#[derive(Debug, Default)]
pub struct CommitlogDirs {
    dirs: Vec<PathBuf>,
    most: HashMap<PathBuf, u64>,
}

impl CommitlogDirs {
    pub fn new(dirs: Vec<PathBuf>) -> Self {
        CommitlogDirs {
            dirs,
            most: HashMap::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty()
    }

    /// Bytes written so far to every segment seen in the directories
    /// (cumulative: a deleted segment keeps counting); `None` when no
    /// directory could be read.
    pub fn poll(&mut self) -> Option<f64> {
        let mut read_any = false;
        for dir in &self.dirs {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            read_any = true;
            for entry in entries.flatten() {
                let Ok(meta) = entry.metadata() else {
                    continue; // deleted between the listing and the stat
                };
                if !meta.is_file() {
                    continue;
                }
                let bytes = meta.blocks() * BLOCK_BYTES;
                let most = self.most.entry(entry.path()).or_insert(0);
                *most = (*most).max(bytes);
            }
        }
        read_any.then(|| self.most.values().sum::<u64>() as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom, Write};

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("varve-cl-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Writes `len` bytes at `at` of a file sized to 1 MiB by a truncate.
    fn segment(path: &PathBuf, at: u64, len: usize) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .unwrap();
        f.set_len(1 << 20).unwrap();
        f.seek(SeekFrom::Start(at)).unwrap();
        f.write_all(&vec![7u8; len]).unwrap();
        f.sync_all().unwrap();
    }

    #[test]
    fn bytes_written_count_and_deleted_segments_keep_counting() {
        let d = dir("count");
        let mut dirs = CommitlogDirs::new(vec![d.clone(), d.join("missing")]);
        assert_eq!(dirs.poll(), Some(0.0), "an empty directory: nothing yet");
        let first = d.join("CommitLog-7-1.log");
        segment(&first, 0, 64 << 10);
        let after_one = dirs.poll().unwrap();
        assert!(
            (64.0 * 1024.0..128.0 * 1024.0).contains(&after_one),
            "a sparse 1 MiB segment with 64 KiB written: {after_one}"
        );
        segment(&first, 64 << 10, 64 << 10);
        let second = d.join("CommitLog-7-2.log");
        segment(&second, 0, 4096);
        let after_two = dirs.poll().unwrap();
        assert!(
            after_two >= after_one + 64.0 * 1024.0 + 4096.0,
            "{after_two}"
        );
        std::fs::remove_file(&first).unwrap();
        assert_eq!(
            dirs.poll(),
            Some(after_two),
            "a deleted segment still counts"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn no_readable_directory_is_no_reading() {
        let mut dirs = CommitlogDirs::new(vec![PathBuf::from("/nonexistent/varve-cl")]);
        assert_eq!(dirs.poll(), None);
        assert!(CommitlogDirs::default().is_empty());
    }
}
