//! The data section: the partition stream cut into chunks of
//! `chunk_length` uncompressed bytes (the last may be shorter), each stored
//! compressed (or as is) and followed by the CRC32 of its stored bytes.
//! The chunk offset table gives the file offset of every chunk, so chunk
//! `i` holds stream bytes `[i * chunk_length, (i + 1) * chunk_length)`.
//!
//! Reads verify a chunk's CRC with probability `crc_check_chance`; a
//! mismatch, a failed decompression or a wrong decompressed length is a
//! [`Error::Corruption`] naming the chunk's file offset. A chunk is never
//! decompressed into more than [`LZ4_MAX_RATIO`] times its stored size, so
//! a forged length cannot make a reader allocate without bound.
//!
//! A chunk whose CRC matched is trusted on later reads, as long as the
//! chunks verified node-wide since then add up to less than (7/8 to all
//! of) [`TRUSTED_CHUNK_BYTES_MAX`] (see [`ChunkTrust`]). Cassandra does the same
//! through its chunk cache: a chunk is checked when it is read into the
//! cache (512 MiB by default), and reads served from the cache are not
//! checked again. Checking every read cost 12% of a point read's CPU.

use crate::error::{Error, Result};
use crate::fs::{ReadFile, ReadKind, WriteFile};
use crate::fs_direct_read::DirectReader;
use crate::io_mode;
use crate::sstable::block_cache::{BlockCache, BlockTable, CachedBlock};
use crate::sstable::format::{Compression, Section, CHUNK_CRC_LEN, LZ4_MAX_RATIO};
use bytes::Bytes;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// Writes the data section, chunk by chunk.
pub struct ChunkWriter {
    compression: Compression,
    chunk_length: usize,
    pending: Vec<u8>,
    offsets: Vec<u64>,
    uncompressed_len: u64,
    start: u64,
    written: u64,
    crc: crc32fast::Hasher,
    scratch: Vec<u8>,
}

impl ChunkWriter {
    /// A writer whose first chunk starts at file offset `start`.
    pub fn new(compression: Compression, chunk_length: usize, start: u64) -> Self {
        ChunkWriter {
            compression,
            chunk_length,
            pending: Vec::with_capacity(chunk_length),
            offsets: Vec::new(),
            uncompressed_len: 0,
            start,
            written: 0,
            crc: crc32fast::Hasher::new(),
            scratch: Vec::new(),
        }
    }

    /// Stream bytes written so far (the position of the next byte).
    pub fn position(&self) -> u64 {
        self.uncompressed_len
    }

    pub fn write(&mut self, file: &mut dyn WriteFile, path: &Path, mut bytes: &[u8]) -> Result<()> {
        self.uncompressed_len += bytes.len() as u64;
        while !bytes.is_empty() {
            let room = self.chunk_length - self.pending.len();
            let (now, later) = bytes.split_at(room.min(bytes.len()));
            self.pending.extend_from_slice(now);
            bytes = later;
            if self.pending.len() == self.chunk_length {
                self.flush_chunk(file, path)?;
            }
        }
        Ok(())
    }

    fn flush_chunk(&mut self, file: &mut dyn WriteFile, path: &Path) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let stored: &[u8] = match self.compression {
            Compression::None => &self.pending,
            Compression::Lz4 => {
                let max = lz4_flex::block::get_maximum_output_size(self.pending.len());
                if self.scratch.len() < max {
                    self.scratch.resize(max, 0);
                }
                let n = lz4_flex::block::compress_into(&self.pending, &mut self.scratch)
                    .map_err(|e| Error::io(path, std::io::Error::other(e.to_string())))?;
                &self.scratch[..n]
            }
        };
        // One pass of CRC32 over the stored bytes serves both the chunk's
        // checksum and (combined) the data section's.
        let mut chunk_crc = crc32fast::Hasher::new();
        chunk_crc.update(stored);
        let crc = chunk_crc.clone().finalize().to_be_bytes();
        self.crc.combine(&chunk_crc);
        self.crc.update(&crc);
        self.offsets.push(self.start + self.written);
        file.write_all(stored).map_err(|e| Error::io(path, e))?;
        file.write_all(&crc).map_err(|e| Error::io(path, e))?;
        self.written += (stored.len() + crc.len()) as u64;
        self.pending.clear();
        Ok(())
    }

    /// Writes the last chunk; returns the data section, the chunk offset
    /// table's bytes and the stream length.
    pub fn finish(
        mut self,
        file: &mut dyn WriteFile,
        path: &Path,
    ) -> Result<(Section, Vec<u8>, u64)> {
        self.flush_chunk(file, path)?;
        let data = Section {
            offset: self.start,
            len: self.written,
            crc: self.crc.finalize(),
        };
        let mut table = Vec::with_capacity(8 + self.offsets.len() * 8);
        table.extend_from_slice(&(self.offsets.len() as u64).to_be_bytes());
        for o in &self.offsets {
            table.extend_from_slice(&o.to_be_bytes());
        }
        Ok((data, table, self.uncompressed_len))
    }
}

/// Stored bytes of chunks trusted without a CRC check, node-wide: Cassandra's
/// default `file_cache_size`.
pub const TRUSTED_CHUNK_BYTES_MAX: u64 = 512 << 20;

/// Generations of trust: a verified chunk stays trusted while fewer than
/// this many epochs have started since, each epoch holding an equal share
/// of the budget. With 1 the whole trust was dropped at once when the
/// budget filled, so a data set a little larger than the budget was checked
/// on most reads; with 8 a chunk is trusted until 7/8 to all of the budget
/// has been verified after it, close to a cache of the budget's size.
pub const TRUST_GENERATIONS: u32 = 8;

/// Which verified chunks may skip their CRC check. Trust is handed out in
/// epochs of `budget / TRUST_GENERATIONS` verified bytes: a chunk is
/// trusted while its epoch is one of the last [`TRUST_GENERATIONS`], and
/// checked again on its next read after that (a first-in first-out cache
/// of the budget's size, emptied an eighth at a time).
pub struct ChunkTrust {
    /// Bytes verified per epoch.
    budget: u64,
    epoch: AtomicU32,
    bytes: AtomicU64,
}

impl ChunkTrust {
    /// A trust of `budget` bytes (at least one byte per generation).
    pub const fn new(budget: u64) -> Self {
        let per_epoch = budget / TRUST_GENERATIONS as u64;
        ChunkTrust {
            budget: if per_epoch == 0 { 1 } else { per_epoch },
            epoch: AtomicU32::new(1),
            bytes: AtomicU64::new(0),
        }
    }

    /// The current epoch (never 0, which marks a chunk never verified).
    pub fn epoch(&self) -> u32 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Whether something verified in `epoch` (0: never) is still trusted.
    pub fn trusts(&self, epoch: u32) -> bool {
        epoch != 0 && self.epoch().wrapping_sub(epoch) < TRUST_GENERATIONS
    }

    /// Records a verified chunk of `len` stored bytes; returns the epoch
    /// it is trusted from.
    pub fn admit(&self, len: u64) -> u32 {
        let total = self.bytes.fetch_add(len, Ordering::AcqRel) + len;
        if total > self.budget {
            // Over the epoch's share: a new epoch, holding only this chunk.
            self.bytes.store(len, Ordering::Release);
            let next = self.epoch.fetch_add(1, Ordering::AcqRel).wrapping_add(1);
            if next == 0 {
                self.epoch.store(1, Ordering::Release);
                return 1;
            }
            return next;
        }
        self.epoch()
    }
}

/// The bits of a `crc_check_chance`, NaN read as 1 (always verify).
fn chance_bits(chance: f64) -> u64 {
    if chance.is_nan() {
        1.0f64.to_bits()
    } else {
        chance.to_bits()
    }
}

/// A chunk for one read: borrowed from the chunk cache, or just read.
enum Fetched<'a> {
    Cached(CachedBlock<'a>),
    Read(Bytes),
}

impl std::ops::Deref for Fetched<'_> {
    type Target = Bytes;

    fn deref(&self) -> &Bytes {
        match self {
            Fetched::Cached(c) => c,
            Fetched::Read(b) => b,
        }
    }
}

/// Reads chunks of an open sstable; shared by every reader thread.
pub struct ChunkReader {
    file: Arc<dyn ReadFile>,
    path: PathBuf,
    compression: Compression,
    chunk_length: u64,
    uncompressed_len: u64,
    /// File offset of each chunk, then the end of the data section.
    bounds: Vec<u64>,
    /// `crc_check_chance` as f64 bits: ALTER TABLE changes it on open
    /// sstables ([`ChunkReader::set_crc_check_chance`]).
    crc_check_chance: AtomicU64,
    sampler: AtomicU64,
    /// The node's trust (see [`crate::sstable::NodeCaches`]); a reader
    /// opened on its own has one of its own.
    trust: Arc<ChunkTrust>,
    /// Per chunk, the trust epoch of its last good CRC check (0: none).
    verified: Vec<AtomicU32>,
    /// This file's chunks in the node's chunk cache, slot `i` for chunk
    /// `i`. Point reads go through it unless the data is mapped; scans
    /// never do. Emptied when `crc_check_chance` rises, so that chunks
    /// cached unchecked (or less often checked) are read and checked again
    /// instead of being served from the cache.
    cache: Option<BlockTable>,
}

impl ChunkReader {
    /// Parses and checks the chunk offset table against the data section.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        file: Arc<dyn ReadFile>,
        path: &Path,
        compression: Compression,
        chunk_length: u64,
        uncompressed_len: u64,
        data: Section,
        table: &[u8],
        crc_check_chance: f64,
    ) -> std::result::Result<Self, &'static str> {
        let count = uncompressed_len.div_ceil(chunk_length.max(1));
        if Some(table.len() as u64) != count.checked_mul(8).and_then(|n| n.checked_add(8)) {
            return Err("chunk offset table does not match the stream length");
        }
        if u64::from_be_bytes(table[..8].try_into().map_err(|_| "short table")?) != count {
            return Err("chunk count does not match the stream length");
        }
        let mut bounds = Vec::with_capacity(count as usize + 1);
        for w in table[8..].chunks_exact(8) {
            bounds.push(u64::from_be_bytes(w.try_into().map_err(|_| "short table")?));
        }
        bounds.push(data.end());
        if bounds[0] != data.offset {
            return Err("first chunk does not start the data section");
        }
        if bounds
            .windows(2)
            .any(|w| w[1] < w[0].saturating_add(CHUNK_CRC_LEN + 1))
        {
            return Err("chunk offsets out of order");
        }
        Ok(ChunkReader {
            file,
            path: path.to_path_buf(),
            compression,
            chunk_length,
            uncompressed_len,
            bounds,
            crc_check_chance: AtomicU64::new(chance_bits(crc_check_chance)),
            sampler: AtomicU64::new(0x9e37_79b9_7f4a_7c15),
            trust: Arc::new(ChunkTrust::new(TRUSTED_CHUNK_BYTES_MAX)),
            verified: (0..count).map(|_| AtomicU32::new(0)).collect(),
            cache: None,
        })
    }

    /// Serves point reads through `cache` (unless the data is mapped: a
    /// map is its own cache).
    pub fn set_cache(&mut self, cache: &Arc<BlockCache>) {
        if self.file.mapped(ReadKind::Data).is_none() {
            let chunks = self.bounds.len().saturating_sub(1);
            self.cache = Some(BlockTable::new(cache, chunks));
        }
    }

    /// Counts this reader's verified chunks against `trust` (the node's)
    /// from now on; chunks verified before are checked again.
    pub fn set_trust(&mut self, trust: Arc<ChunkTrust>) {
        for v in &self.verified {
            v.store(0, Ordering::Relaxed);
        }
        self.trust = trust;
    }

    /// The same reader under another trust (tests of the budget).
    #[cfg(test)]
    pub fn with_trust(mut self, trust: Arc<ChunkTrust>) -> Self {
        self.set_trust(trust);
        self
    }

    /// The trust this reader's chunks (and its sstable's index blocks)
    /// count against.
    pub fn trust(&self) -> &ChunkTrust {
        &self.trust
    }

    /// Whether chunk `i` passed a CRC check in an epoch still trusted.
    fn trusted(&self, i: u64) -> bool {
        self.verified
            .get(i as usize)
            .is_some_and(|v| self.trust.trusts(v.load(Ordering::Relaxed)))
    }

    pub fn uncompressed_len(&self) -> u64 {
        self.uncompressed_len
    }

    /// The file offset of chunk `i` (for error messages).
    pub fn chunk_offset(&self, i: u64) -> u64 {
        self.bounds.get(i as usize).copied().unwrap_or(0)
    }

    /// The chunk holding stream position `pos`.
    pub fn chunk_of(&self, pos: u64) -> u64 {
        pos / self.chunk_length
    }

    /// The probability with which a read verifies a chunk's CRC.
    pub fn crc_check_chance(&self) -> f64 {
        f64::from_bits(self.crc_check_chance.load(Ordering::Relaxed))
    }

    /// Changes that probability for the reads from now on (NaN: 1).
    pub fn set_crc_check_chance(&self, chance: f64) {
        let before = self
            .crc_check_chance
            .swap(chance_bits(chance), Ordering::Relaxed);
        if let Some(cache) = self.cache.as_ref() {
            if self.crc_check_chance() > f64::from_bits(before) {
                // What was cached under the lower chance was not all checked.
                cache.clear();
            }
        }
    }

    /// Whether this read verifies its CRC (splitmix64 of a shared counter).
    fn should_verify(&self) -> bool {
        let chance = self.crc_check_chance();
        if chance >= 1.0 {
            return true;
        }
        if chance <= 0.0 {
            return false;
        }
        let mut z = self
            .sampler
            .fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((z >> 11) as f64 / (1u64 << 53) as f64) < chance
    }

    fn corrupt(&self, i: u64, reason: impl Into<String>) -> Error {
        Error::corruption(&self.path, self.chunk_offset(i), reason)
    }

    /// Runs `f` on the uncompressed bytes of chunk `i`, read (and
    /// decompressed) into buffers this thread reuses: a point read then
    /// allocates only what it copies out, not a zeroed chunk per read.
    pub fn with_chunk<R>(&self, i: u64, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        self.with_chunk_from(i, None, f)
    }

    /// A reader of this sstable's file around the page cache, for one
    /// sequential scan (see [`crate::fs_direct_read`]).
    pub fn direct_reader(&self) -> Option<DirectReader> {
        self.file.direct_reader()
    }

    /// Chunk `i`'s place in the file and its sizes, checked for
    /// plausibility: (start, end, uncompressed length, stored length).
    fn chunk_bounds(&self, i: u64) -> Result<(u64, u64, u64, u64)> {
        let (Some(&start), Some(&end)) =
            (self.bounds.get(i as usize), self.bounds.get(i as usize + 1))
        else {
            return Err(self.corrupt(i, format!("chunk {i} does not exist")));
        };
        let expected = self
            .chunk_length
            .min(self.uncompressed_len - i * self.chunk_length);
        let stored_len = end - start - CHUNK_CRC_LEN;
        let plausible = match self.compression {
            Compression::None => stored_len == expected,
            Compression::Lz4 => {
                expected <= stored_len.saturating_mul(LZ4_MAX_RATIO).saturating_add(16)
            }
        };
        if !plausible {
            return Err(self.corrupt(i, format!("chunk {i} has an impossible length")));
        }
        Ok((start, end, expected, stored_len))
    }

    /// Fills `buf` with the file's bytes from `start` with `pread`; on a
    /// thread that may not block, only from the page cache (else
    /// `WouldBlock`).
    fn pread(&self, i: u64, start: u64, buf: &mut [u8]) -> Result<()> {
        let len = buf.len();
        let io = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                self.corrupt(i, format!("chunk {i} lies past the end of the file"))
            }
            _ => Error::io_at(&self.path, start, len, e),
        };
        if io_mode::background() {
            return self.file.read_exact_at_uncached(start, buf).map_err(io);
        }
        if io_mode::may_block() {
            return self.file.read_exact_at(start, buf).map_err(io);
        }
        match self.file.read_exact_at_nowait(start, buf).map_err(io)? {
            true => Ok(()),
            false => Err(Error::WouldBlock {
                what: "a data chunk",
            }),
        }
    }

    /// Checks a chunk's stored bytes against their CRC when this read
    /// should; `verified` says whether it did and they matched.
    fn check_crc(&self, i: u64, raw: &[u8], stored_len: u64) -> Result<bool> {
        if !self.should_verify() {
            return Ok(false);
        }
        let (body, crc) = raw.split_at(stored_len as usize);
        let stored = u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]);
        if crc32fast::hash(body) != stored {
            return Err(self.corrupt(i, format!("checksum mismatch in chunk {i}")));
        }
        Ok(true)
    }

    /// Decompresses a chunk's stored body into `out` (exactly `expected`
    /// bytes).
    fn decompress(&self, i: u64, body: &[u8], out: &mut [u8]) -> Result<()> {
        match lz4_flex::block::decompress_into(body, out) {
            Ok(n) if n == out.len() => Ok(()),
            Ok(_) => Err(self.corrupt(i, format!("chunk {i} decompressed to the wrong length"))),
            Err(e) => Err(self.corrupt(i, format!("chunk {i} does not decompress: {e}"))),
        }
    }

    /// Chunk `i` decompressed, from the chunk cache, or read, checked and
    /// put there.
    fn cached_chunk<'a>(&self, i: u64, cache: &'a BlockTable) -> Result<Fetched<'a>> {
        if let Some(chunk) = cache.get(i as usize) {
            return Ok(Fetched::Cached(chunk));
        }
        let (start, end, expected, stored_len) = self.chunk_bounds(i)?;
        let chunk = match self.compression {
            Compression::None => {
                let mut raw = vec![0u8; (end - start) as usize];
                self.pread(i, start, &mut raw)?;
                self.check_crc(i, &raw, stored_len)?;
                raw.truncate(stored_len as usize);
                Bytes::from(raw)
            }
            Compression::Lz4 => {
                // The stored bytes only pass through: this thread's buffer,
                // not a zeroed allocation per miss.
                let mut plain = vec![0u8; expected as usize];
                SCRATCH.with(|scratch| {
                    let mut scratch = scratch.borrow_mut();
                    let raw = grown(&mut scratch.raw, (end - start) as usize);
                    self.pread(i, start, raw)?;
                    self.check_crc(i, raw, stored_len)?;
                    self.decompress(i, &raw[..stored_len as usize], &mut plain)
                })?;
                Bytes::from(plain)
            }
        };
        if !io_mode::background() {
            cache.insert(i as usize, chunk.clone());
        }
        Ok(Fetched::Read(chunk))
    }

    /// [`ChunkReader::with_chunk`], the stored bytes read through `direct`
    /// when given.
    fn with_chunk_from<R>(
        &self,
        i: u64,
        direct: Option<&mut DirectReader>,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        let (start, end, expected, stored_len) = self.chunk_bounds(i)?;
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            let Scratch { raw, plain } = &mut *scratch;
            let raw: &[u8] = match (direct, self.file.mapped(ReadKind::Data)) {
                (Some(direct), _) => direct.bytes(start, end).map_err(|e| match e.kind() {
                    std::io::ErrorKind::UnexpectedEof => {
                        self.corrupt(i, format!("chunk {i} lies past the end of the file"))
                    }
                    _ => Error::io(&self.path, e),
                })?,
                (None, Some(map)) => {
                    if !io_mode::may_block()
                        && !self.file.resident(ReadKind::Data, start, end - start)
                    {
                        return Err(Error::WouldBlock {
                            what: "a data chunk",
                        });
                    }
                    map.get(start as usize..end as usize).ok_or_else(|| {
                        self.corrupt(i, format!("chunk {i} lies past the end of the file"))
                    })?
                }
                (None, None) => {
                    let raw = grown(raw, (end - start) as usize);
                    self.pread(i, start, raw)?;
                    raw
                }
            };
            if !self.trusted(i) && self.check_crc(i, raw, stored_len)? {
                let epoch = self.trust.admit(end - start);
                self.verified[i as usize].store(epoch, Ordering::Relaxed);
            }
            let body = &raw[..stored_len as usize];
            match self.compression {
                Compression::None => Ok(f(body)),
                Compression::Lz4 => {
                    let out = grown(plain, expected as usize);
                    self.decompress(i, body, out)?;
                    Ok(f(out))
                }
            }
        })
    }

    /// Stream bytes `[pos, pos + len)` (whose size is bounded by the data
    /// length the file declares). Through the chunk cache, a range within
    /// one chunk is a slice of the cached chunk, not a copy; otherwise it
    /// is copied once, straight from each chunk it spans.
    pub fn read_range(&self, pos: u64, len: u64) -> Result<Bytes> {
        let end = pos.checked_add(len).filter(|e| *e <= self.uncompressed_len);
        let Some(end) = end else {
            return Err(self.corrupt(self.chunk_of(pos), "range past the end of the data"));
        };
        self.prefetch_span(pos, end);
        if let Some(cache) = self.cache.as_ref().filter(|c| c.enabled()) {
            return self.read_range_through(cache, pos, end);
        }
        let mut out = Vec::with_capacity(len as usize);
        let mut at = pos;
        while at < end {
            let i = self.chunk_of(at);
            let from = (at - i * self.chunk_length) as usize;
            let to = (end - i * self.chunk_length).min(self.chunk_length) as usize;
            let copied =
                self.with_chunk(i, |chunk| match chunk.get(from..to.min(chunk.len())) {
                    Some(part) if !part.is_empty() => {
                        out.extend_from_slice(part);
                        part.len()
                    }
                    _ => 0,
                })?;
            if copied == 0 {
                return Err(self.corrupt(i, "chunk shorter than expected"));
            }
            at += copied as u64;
        }
        Ok(Bytes::from(out))
    }

    /// [`ChunkReader::read_range`] of `[pos, end)` through the chunk cache.
    fn read_range_through(&self, cache: &BlockTable, pos: u64, end: u64) -> Result<Bytes> {
        let mut out: Option<Vec<u8>> = None;
        let mut at = pos;
        while at < end {
            let i = self.chunk_of(at);
            let chunk = self.cached_chunk(i, cache)?;
            let from = (at - i * self.chunk_length) as usize;
            let to = ((end - i * self.chunk_length) as usize).min(chunk.len());
            if from >= to {
                return Err(self.corrupt(i, "chunk shorter than expected"));
            }
            if out.is_none() && (to - from) as u64 == end - pos {
                return Ok(chunk.slice(from..to));
            }
            out.get_or_insert_with(|| Vec::with_capacity((end - pos) as usize))
                .extend_from_slice(&chunk[from..to]);
            at += (to - from) as u64;
        }
        Ok(Bytes::from(out.unwrap_or_default()))
    }

    /// Like [`ChunkReader::read_range`], reusing the last chunk read
    /// (`cache` holds its index and bytes) for sequential reads; chunks
    /// are read through `direct` when given.
    pub fn read_range_cached(
        &self,
        cache: &mut ChunkCache,
        mut direct: Option<&mut DirectReader>,
        pos: u64,
        len: u64,
    ) -> Result<Vec<u8>> {
        let end = pos.checked_add(len).filter(|e| *e <= self.uncompressed_len);
        let Some(end) = end else {
            return Err(self.corrupt(self.chunk_of(pos), "range past the end of the data"));
        };
        let mut out = Vec::new();
        let mut at = pos;
        while at < end {
            let i = self.chunk_of(at);
            if cache.as_ref().is_none_or(|(ci, _)| *ci != i) {
                if direct.is_none() {
                    self.prefetch_ahead(i, cache.is_none());
                }
                // Reuse the cached chunk's buffer rather than allocate one
                // per chunk.
                let mut buf = cache.take().map(|(_, b)| b).unwrap_or_default();
                self.with_chunk_from(i, direct.as_deref_mut(), |chunk| {
                    buf.clear();
                    buf.extend_from_slice(chunk);
                })?;
                *cache = Some((i, buf));
            }
            let chunk = cache.as_ref().map_or(&[][..], |(_, c)| &c[..]);
            let from = (at - i * self.chunk_length) as usize;
            let to = ((end - i * self.chunk_length) as usize).min(chunk.len());
            match chunk.get(from..to) {
                Some(part) if !part.is_empty() => {
                    out.extend_from_slice(part);
                    at += part.len() as u64;
                }
                _ => return Err(self.corrupt(i, "chunk shorter than expected")),
            }
        }
        Ok(out)
    }
}

impl ChunkReader {
    /// Before a read of stream bytes `[pos, end)` that spans several
    /// chunks, on a thread that may wait for the disk: asks the kernel for
    /// all of their stored bytes at once, so that the chunks the caches
    /// lack come in together rather than one `pread` after another (the
    /// files are opened for point reads, without readahead: a 2 GB
    /// partition read whole took 18.6 s instead of 10.0 s). Reads on the
    /// event loop, which may not wait, and compactions' reads, which leave
    /// no trace in the page cache, do not ask.
    fn prefetch_span(&self, pos: u64, end: u64) {
        if end <= pos || !io_mode::may_block() || io_mode::background() {
            return;
        }
        let (first, last) = (self.chunk_of(pos), self.chunk_of(end - 1));
        if last == first {
            return;
        }
        if let (Some(&from), Some(&to)) = (
            self.bounds.get(first as usize),
            self.bounds.get(last as usize + 1),
        ) {
            self.file.prefetch(from, to - from);
        }
    }

    /// For a sequential reader through the page cache, about to read
    /// chunk `i`: asks the kernel to read the next
    /// [`SEQUENTIAL_PREFETCH_BYTES`] of chunks when `i` starts a new stretch
    /// of them (or `first` is its first chunk). The files are opened for
    /// point reads, so the kernel reads ahead only when asked.
    fn prefetch_ahead(&self, i: u64, first: bool) {
        let per = (SEQUENTIAL_PREFETCH_BYTES / self.chunk_length.max(1)).max(1);
        if !first && !i.is_multiple_of(per) {
            return;
        }
        let count = self.bounds.len() as u64 - 1;
        let last = (i - i % per + 2 * per).min(count);
        if let (Some(&from), Some(&to)) =
            (self.bounds.get(i as usize), self.bounds.get(last as usize))
        {
            self.file.prefetch(from, to - from);
        }
    }
}

/// What a sequential reader through the page cache asks the kernel to
/// read ahead, each time it enters a new stretch of this many bytes of
/// chunks (it asks for two stretches: the one it enters and the next).
pub const SEQUENTIAL_PREFETCH_BYTES: u64 = 1 << 20;

/// Buffers a thread reuses for chunk reads (see [`ChunkReader::with_chunk`]).
#[derive(Default)]
struct Scratch {
    /// The stored bytes of a chunk and its CRC.
    raw: Vec<u8>,
    /// A decompressed chunk.
    plain: Vec<u8>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

/// The first `n` bytes of `buf`, growing it (zeroed once) when shorter: a
/// reused buffer is not zeroed again on every read.
fn grown(buf: &mut Vec<u8>, n: usize) -> &mut [u8] {
    if buf.len() < n {
        buf.resize(n, 0);
    }
    &mut buf[..n]
}

/// The last chunk read by a sequential reader: its index and bytes.
pub type ChunkCache = Option<(u64, Vec<u8>)>;

#[cfg(test)]
mod tests;
