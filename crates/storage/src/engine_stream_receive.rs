//! Whole-sstable streaming, the receiving side (docs/design/topology.md,
//! section 4): a file sent by another node is written under a temporary
//! name, checked, and made live with the others of its stream in one
//! manifest write; never installed if anything fails.
//!
//! 1. [`Engine::receive_sstable`] takes a fresh generation and creates
//!    `<generation>.sst.tmp` in the table's directory ([`IncomingSstable`]).
//! 2. [`IncomingSstable::write`] appends the chunks in order, computing
//!    the CRC32 of every byte.
//! 3. [`Engine::finish_received`] checks the length and that CRC against
//!    the whole-file checksum the sender gave (the sstable's own section
//!    checksums, combined), fsyncs, renames the file to
//!    `<generation>.sst`, syncs the directory and opens it (footer,
//!    header, layout, and the checksums and structure of its chunk
//!    offsets, summary, bloom filter and statistics), then checks that
//!    its first and last tokens and partition count are those announced.
//! 4. [`Engine::install_received`] lists the received files in the
//!    manifest in one write, under the table's flush lock, as `nodetool
//!    import` does; they are then readable and seen by compaction (at
//!    level 0).
//!
//! A failure removes what the step wrote (an unfinished [`IncomingSstable`]
//! and an uninstalled [`ReceivedSstable`] delete their file when dropped);
//! a crash leaves files the manifest does not list, which the table's
//! next open deletes. A full disk is an I/O error of the stream, nothing
//! more.

use crate::engine::{sstable_path, Engine, TableId};
use crate::engine_import::reserve_generations;
use crate::engine_stream_files::SstableSpan;
use crate::error::{Error, Result};
use crate::fs::{Fs, WriteFile};
use crate::manifest::Manifest;
use crate::sstable::Sstable;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An sstable being received: its bytes so far, under a temporary name.
pub struct IncomingSstable {
    fs: Arc<dyn Fs>,
    table: TableId,
    generation: u64,
    tmp: PathBuf,
    file: Box<dyn WriteFile>,
    /// What the sender announced: the span, size and partition count.
    expected: SstableSpan,
    expected_crc: u32,
    crc: crc32fast::Hasher,
    written: u64,
    /// Renamed into place: nothing to remove when dropped.
    finished: bool,
}

impl IncomingSstable {
    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The generation this file takes on this node.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Appends the next bytes of the file; refused when they go past the
    /// announced size.
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        if !self.fs.never_waits() {
            crate::io_mode::check_may_block("a write of a streamed sstable")?;
        }
        let end = self.written.saturating_add(bytes.len() as u64);
        if end > self.expected.size_bytes {
            return Err(Error::Refused(format!(
                "{} bytes sent for a file of {}",
                end, self.expected.size_bytes
            )));
        }
        self.file
            .write_all(bytes)
            .map_err(|e| Error::io(&self.tmp, e))?;
        self.crc.update(bytes);
        self.written = end;
        Ok(())
    }
}

impl Drop for IncomingSstable {
    fn drop(&mut self) {
        if !self.finished {
            remove_quietly(self.fs.as_ref(), &self.tmp);
        }
    }
}

/// A received sstable, checked and in place, not yet live.
pub struct ReceivedSstable {
    fs: Arc<dyn Fs>,
    table: TableId,
    path: PathBuf,
    generation: u64,
    sstable: Arc<Sstable>,
    /// Listed in the manifest (or possibly listed): never removed here.
    kept: bool,
}

impl ReceivedSstable {
    /// The generation it has on this node.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn size_bytes(&self) -> u64 {
        self.sstable.size_on_disk()
    }

    pub fn partitions(&self) -> u64 {
        self.sstable.stats().partition_count
    }
}

impl Drop for ReceivedSstable {
    fn drop(&mut self) {
        if !self.kept {
            remove_quietly(self.fs.as_ref(), &self.path);
        }
    }
}

fn remove_quietly(fs: &dyn Fs, path: &Path) {
    if fs.exists(path) {
        if let Err(e) = fs.remove(path) {
            tracing::warn!("removing {} of a failed stream: {e}", path.display());
        }
    }
}

impl Engine {
    /// Starts receiving the file the sender announced as `span` with the
    /// whole-file checksum `crc` (see the module doc).
    pub fn receive_sstable(
        &self,
        id: TableId,
        span: &SstableSpan,
        crc: u32,
    ) -> Result<IncomingSstable> {
        self.check_disk_wait("creating a streamed sstable")?;
        let table = self.table(id)?;
        let Some(dir) = table.dir.clone() else {
            return Err(Error::Refused(
                "the table is kept in memory: it cannot receive sstables".into(),
            ));
        };
        let generation = reserve_generations(&table, 1);
        let tmp = dir.join(format!("{generation}.sst.tmp"));
        let file = self
            .fs
            .create_sequential(&tmp, self.sstable_writes().flush)
            .map_err(|e| Error::io(&tmp, e))?;
        Ok(IncomingSstable {
            fs: self.fs.clone(),
            table: id,
            generation,
            tmp,
            file,
            expected: *span,
            expected_crc: crc,
            crc: crc32fast::Hasher::new(),
            written: 0,
            finished: false,
        })
    }

    /// Checks a fully written file and puts it in place (see the module
    /// doc); a corrupt or truncated file is an [`Error::Corruption`] and
    /// leaves nothing behind.
    pub fn finish_received(&self, mut incoming: IncomingSstable) -> Result<ReceivedSstable> {
        self.check_disk_wait("checking a streamed sstable")?;
        check_complete(&incoming)?;
        let table = self.table(incoming.table)?;
        let desc = table.desc.read().clone();
        let dir = incoming
            .tmp
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let path = sstable_path(&dir, incoming.generation);
        incoming
            .file
            .sync()
            .map_err(|e| Error::io(&incoming.tmp, e))?;
        self.fs
            .rename(&incoming.tmp, &path)
            .map_err(|e| Error::io(&path, e))?;
        incoming.finished = true;
        let opened = (|| -> Result<Sstable> {
            self.fs.sync_dir(&dir).map_err(|e| Error::io(&dir, e))?;
            let opened = self.open_sstable(&path, &desc)?;
            check_announced(&opened, &path, &incoming.expected)?;
            Ok(opened)
        })();
        let opened = match opened {
            Ok(s) => s,
            Err(e) => {
                remove_quietly(self.fs.as_ref(), &path);
                return Err(e);
            }
        };
        opened.set_created_at_seconds(i64::from(self.now_seconds()));
        Ok(ReceivedSstable {
            fs: self.fs.clone(),
            table: incoming.table,
            path,
            generation: incoming.generation,
            sstable: Arc::new(opened),
            kept: false,
        })
    }

    /// Makes `files` (received for table `id`) live in one manifest
    /// write; returns their generations here. On a failure none is live;
    /// their files are removed unless the manifest on disk may list them
    /// (a rename that happened before a failed directory sync), in which
    /// case the table's next open keeps or deletes them as it says.
    pub fn install_received(
        &self,
        id: TableId,
        mut files: Vec<ReceivedSstable>,
    ) -> Result<Vec<u64>> {
        if files.is_empty() {
            return Ok(Vec::new());
        }
        self.check_disk_wait("installing streamed sstables")?;
        let table = self.table(id)?;
        let Some(dir) = table.dir.clone() else {
            return Err(Error::Refused("the table is kept in memory".into()));
        };
        if let Some(f) = files.iter().find(|f| f.table != id) {
            return Err(Error::Refused(format!(
                "{} was received for another table",
                f.path.display()
            )));
        }
        let generations: Vec<u64> = files.iter().map(|f| f.generation).collect();
        let opened: Vec<Arc<Sstable>> = files.iter().map(|f| Arc::clone(&f.sstable)).collect();
        let flush = table.flush_lock.lock();
        let published = self.publish_imported(&table, &dir, &generations, opened);
        drop(flush);
        if let Err(e) = published {
            let listed = Manifest::load(self.fs.as_ref(), &dir)
                .map_or(true, |m| generations.iter().any(|g| m.live.contains(g)));
            for f in &mut files {
                f.kept = listed;
            }
            return Err(e);
        }
        for f in &mut files {
            f.kept = true;
        }
        Ok(generations)
    }
}

/// Whether every byte announced came, with the announced checksum.
fn check_complete(incoming: &IncomingSstable) -> Result<()> {
    let size = incoming.expected.size_bytes;
    if incoming.written != size {
        return Err(Error::corruption(
            &incoming.tmp,
            incoming.written,
            format!("truncated: {} of {size} bytes", incoming.written),
        ));
    }
    let crc = incoming.crc.clone().finalize();
    if crc != incoming.expected_crc {
        return Err(Error::corruption(
            &incoming.tmp,
            0,
            format!(
                "whole-file checksum {crc:08x} where the sender's is {:08x}",
                incoming.expected_crc
            ),
        ));
    }
    Ok(())
}

/// Whether the opened file is the one announced: its tokens, size and
/// partition count.
fn check_announced(s: &Sstable, path: &Path, expected: &SstableSpan) -> Result<()> {
    let got = SstableSpan::of(s);
    let same = got.is_some_and(|g| {
        g.first_token == expected.first_token
            && g.last_token == expected.last_token
            && g.size_bytes == expected.size_bytes
            && g.partitions == expected.partitions
    });
    if same {
        return Ok(());
    }
    Err(Error::corruption(
        path,
        0,
        format!("the sstable received is not the one announced ({got:?}, not {expected:?})"),
    ))
}
