//! The partition index and its summary.
//!
//! The index section is a run of blocks; a block holds up to
//! `min_index_interval` consecutive entries (fewer once it passes
//! [`INDEX_BLOCK_TARGET_LEN`] bytes) and is followed by the CRC32 of its
//! bytes, checked every time the block is read. An entry is a partition's
//! token, key, position in the uncompressed stream and entry length.
//!
//! The summary section has one entry per block: the block's first key and
//! where the block lies in the index section. It is read on open and kept
//! in memory; a lookup binary-searches it, then reads a single block.

use crate::encoding::{put_varint, DecodeError, Reader};
use crate::engine::PartitionKey;
use crate::sstable::format::{
    get_key, get_u32, get_u64, put_key, INDEX_BLOCK_TARGET_LEN, MAX_INDEX_BLOCK_LEN,
};
use bytes::Bytes;

/// One index entry, borrowed from a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry<'a> {
    pub token: i64,
    pub key: &'a [u8],
    /// Position of the partition's entry in the uncompressed stream.
    pub position: u64,
    /// Length of that entry.
    pub len: u64,
}

impl IndexEntry<'_> {
    pub fn partition_key(&self) -> PartitionKey {
        PartitionKey {
            token: self.token,
            key: Bytes::copy_from_slice(self.key),
        }
    }
}

/// One summary entry: the first key of an index block and its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryEntry {
    pub first: PartitionKey,
    /// Offset of the block in the index section.
    pub offset: u64,
    /// Bytes of the block including its CRC.
    pub len: u64,
}

/// Builds the index and summary sections in memory.
pub struct IndexWriter {
    interval: usize,
    index: Vec<u8>,
    block: Vec<u8>,
    block_count: usize,
    block_first: Option<PartitionKey>,
    summary: Vec<SummaryEntry>,
}

impl IndexWriter {
    pub fn new(interval: usize) -> Self {
        IndexWriter {
            interval: interval.max(1),
            index: Vec::new(),
            block: Vec::new(),
            block_count: 0,
            block_first: None,
            summary: Vec::new(),
        }
    }

    pub fn add(&mut self, key: &PartitionKey, position: u64, len: u64) {
        if self.block_first.is_none() {
            self.block_first = Some(key.clone());
        }
        put_key(&mut self.block, key.token, &key.key);
        put_varint(&mut self.block, position);
        put_varint(&mut self.block, len);
        self.block_count += 1;
        if self.block_count >= self.interval || self.block.len() >= INDEX_BLOCK_TARGET_LEN {
            self.close_block();
        }
    }

    fn close_block(&mut self) {
        let Some(first) = self.block_first.take() else {
            return;
        };
        let start = self.index.len();
        put_varint(&mut self.index, self.block_count as u64);
        self.index.extend_from_slice(&self.block);
        let crc = crc32fast::hash(&self.index[start..]);
        self.index.extend_from_slice(&crc.to_be_bytes());
        self.summary.push(SummaryEntry {
            first,
            offset: start as u64,
            len: (self.index.len() - start) as u64,
        });
        self.block.clear();
        self.block_count = 0;
    }

    /// The index section's bytes and the summary section's bytes.
    pub fn finish(mut self) -> (Vec<u8>, Vec<u8>) {
        self.close_block();
        let mut summary = Vec::new();
        summary.extend_from_slice(&(self.summary.len() as u64).to_be_bytes());
        for e in &self.summary {
            put_key(&mut summary, e.first.token, &e.first.key);
            summary.extend_from_slice(&e.offset.to_be_bytes());
            summary.extend_from_slice(&(e.len as u32).to_be_bytes());
        }
        (self.index, summary)
    }
}

/// Parses the summary and checks that its blocks tile the index section
/// (of `index_len` bytes) and that first keys ascend.
pub fn decode_summary(bytes: &[u8], index_len: u64) -> Result<Vec<SummaryEntry>, &'static str> {
    let mut r = Reader::new(bytes);
    let bad = |_: DecodeError| "truncated summary";
    let n = get_u64(&mut r).map_err(bad)?;
    // Each entry takes at least 22 bytes: bound the allocation.
    if n > bytes.len() as u64 / 22 {
        return Err("summary count larger than the section");
    }
    let mut out: Vec<SummaryEntry> = Vec::with_capacity(n as usize);
    let mut at = 0u64;
    for _ in 0..n {
        let (token, key) = get_key(&mut r).map_err(bad)?;
        let first = PartitionKey {
            token,
            key: Bytes::copy_from_slice(key),
        };
        let offset = get_u64(&mut r).map_err(bad)?;
        let len = get_u32(&mut r).map_err(bad)? as u64;
        if offset != at || !(5..=MAX_INDEX_BLOCK_LEN).contains(&len) {
            return Err("summary blocks do not tile the index");
        }
        if out.last().is_some_and(|p| p.first >= first) {
            return Err("summary keys out of order");
        }
        at += len;
        out.push(SummaryEntry { first, offset, len });
    }
    if !r.is_empty() {
        return Err("trailing bytes after the summary");
    }
    if at != index_len {
        return Err("summary does not cover the index");
    }
    Ok(out)
}

/// Checks a block's CRC and entry count; a reader positioned at the first
/// entry, and the count.
fn open_block(block: &[u8], check_crc: bool) -> Result<(Reader<'_>, u64), &'static str> {
    let Some(body_len) = block.len().checked_sub(4) else {
        return Err("index block too short");
    };
    let (body, crc) = block.split_at(body_len);
    if check_crc && crc32fast::hash(body) != u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]) {
        return Err("index block checksum mismatch");
    }
    let mut r = Reader::new(body);
    let n = r.varint().map_err(|_| "malformed index block")?;
    // Each entry takes at least 12 bytes.
    if n == 0 || n > body.len() as u64 / 12 {
        return Err("impossible index block entry count");
    }
    Ok((r, n))
}

/// Checks a block's CRC and returns its entries, which must ascend.
pub fn decode_block(block: &[u8]) -> Result<Vec<IndexEntry<'_>>, &'static str> {
    let (mut r, n) = open_block(block, true)?;
    let bad = |_: DecodeError| "malformed index block";
    let mut out: Vec<IndexEntry> = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let (token, key) = get_key(&mut r).map_err(bad)?;
        let e = IndexEntry {
            token,
            key,
            position: r.varint().map_err(bad)?,
            len: r.varint().map_err(bad)?,
        };
        if out
            .last()
            .is_some_and(|p| (p.token, p.key) >= (e.token, e.key))
        {
            return Err("index keys out of order");
        }
        out.push(e);
    }
    if !r.is_empty() {
        return Err("trailing bytes in index block");
    }
    Ok(out)
}

/// The length, CRC included, of the block that starts `bytes` (which may
/// run on into the following blocks of a downsampled summary's span).
fn block_len(bytes: &[u8]) -> Result<usize, &'static str> {
    let mut r = Reader::new(bytes);
    let bad = |_: DecodeError| "malformed index block";
    let n = r.varint().map_err(bad)?;
    if n == 0 || n > bytes.len() as u64 / 12 {
        return Err("impossible index block entry count");
    }
    for _ in 0..n {
        get_key(&mut r).map_err(bad)?;
        r.skip_varint().map_err(bad)?;
        r.skip_varint().map_err(bad)?;
    }
    r.take(4).map_err(|_| "index block too short")?;
    Ok(r.position())
}

/// Checks and decodes the consecutive blocks that make up `span`; their
/// entries, which must ascend across blocks too. `base` is the span's
/// offset in the index section, for errors: (offset of the bad block,
/// reason).
pub fn decode_span(span: &[u8], base: u64) -> Result<Vec<IndexEntry<'_>>, (u64, &'static str)> {
    let mut out: Vec<IndexEntry> = Vec::new();
    let mut at = 0;
    while at < span.len() {
        let offset = base + at as u64;
        let rest = &span[at..];
        let len = block_len(rest).map_err(|r| (offset, r))?;
        let entries = decode_block(&rest[..len]).map_err(|r| (offset, r))?;
        if let (Some(p), Some(e)) = (out.last(), entries.first()) {
            if (p.token, p.key) >= (e.token, e.key) {
                return Err((offset, "index keys out of order"));
            }
        }
        out.extend(entries);
        at += len;
    }
    Ok(out)
}

/// Where a point lookup's scan of a block ended.
enum Scan {
    Found {
        position: u64,
        len: u64,
    },
    /// An entry after the key: the key is not in the index.
    Passed,
    /// Every entry sorts before the key: it may be in the next block.
    Before,
}

/// Scans one block (CRC-checked) for `key`, decoding entries only up to
/// the first at or past it; the entries scanned must ascend.
fn scan_block(block: &[u8], key: &PartitionKey, check_crc: bool) -> Result<Scan, &'static str> {
    let (mut r, n) = open_block(block, check_crc)?;
    let bad = |_: DecodeError| "malformed index block";
    let target = (key.token, &key.key[..]);
    let mut previous: Option<(i64, &[u8])> = None;
    for _ in 0..n {
        let (token, k) = get_key(&mut r).map_err(bad)?;
        if previous.is_some_and(|p| p >= (token, k)) {
            return Err("index keys out of order");
        }
        match (token, k).cmp(&target) {
            std::cmp::Ordering::Less => {
                // Passed over: its position and length are not needed.
                r.skip_varint().map_err(bad)?;
                r.skip_varint().map_err(bad)?;
                previous = Some((token, k));
            }
            std::cmp::Ordering::Equal => {
                let position = r.varint().map_err(bad)?;
                let len = r.varint().map_err(bad)?;
                return Ok(Scan::Found { position, len });
            }
            std::cmp::Ordering::Greater => return Ok(Scan::Passed),
        }
    }
    Ok(Scan::Before)
}

/// Looks `key` up in the blocks of `span` (see [`decode_span`] for `base`
/// and the errors): its entry's position and length. `one_block` says the
/// span is a single block (a summary kept in full), whose length is then
/// the span's, with no pass to measure it. Blocks are checked as they are
/// reached; the scan stops at the first entry at or past the key, so a
/// lookup decodes half a block on average and allocates nothing.
/// `check_crc` false skips the blocks' CRC checks (a block verified
/// before); their structure is still checked as they are read.
pub fn find_in_span(
    span: &[u8],
    base: u64,
    one_block: bool,
    check_crc: bool,
    key: &PartitionKey,
) -> Result<Option<(u64, u64)>, (u64, &'static str)> {
    let mut at = 0;
    while at < span.len() {
        let offset = base + at as u64;
        let rest = &span[at..];
        let len = if one_block {
            rest.len()
        } else {
            block_len(rest).map_err(|r| (offset, r))?
        };
        match scan_block(&rest[..len], key, check_crc).map_err(|r| (offset, r))? {
            Scan::Found { position, len } => return Ok(Some((position, len))),
            Scan::Passed => return Ok(None),
            Scan::Before => at += len,
        }
    }
    Ok(None)
}

/// Every span of `index` at summary step `step`, with its first key and
/// its offset in the index (for tests).
#[cfg(test)]
pub(crate) fn test_spans(
    index: &[u8],
    summary: &[u8],
    step: usize,
) -> Vec<(PartitionKey, u64, Vec<u8>)> {
    let blocks = decode_summary(summary, index.len() as u64).unwrap();
    blocks
        .chunks(step)
        .map(|run| {
            let start = run[0].offset;
            let end = run.last().map_or(start, |b| b.offset + b.len);
            let bytes = index[start as usize..end as usize].to_vec();
            (run[0].first.clone(), start, bytes)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u32) -> PartitionKey {
        PartitionKey {
            token: i as i64,
            key: Bytes::from(format!("k{i}")),
        }
    }

    proptest::proptest! {
        /// A point lookup that scans finds exactly what decoding the whole
        /// span and searching it finds, for present and absent keys, at
        /// any block size and summary step.
        #[test]
        fn find_in_span_agrees_with_decode_span(
            tokens in proptest::collection::btree_set(-1000i64..1000, 1..60),
            interval in 1usize..8,
            step in 1usize..4,
        ) {
            let key_of = |t: i64| PartitionKey { token: t * 2, key: Bytes::from(format!("k{t}")) };
            let mut w = IndexWriter::new(interval);
            for (n, t) in tokens.iter().enumerate() {
                w.add(&key_of(*t), n as u64 * 10, 7);
            }
            let (index, summary) = w.finish();
            let spans = test_spans(&index, &summary, step);
            let probes = (-1001i64..1001).map(|t| PartitionKey { token: t * 2 + (t & 1), key: Bytes::from(format!("k{t}")) });
            for probe in probes.chain(tokens.iter().map(|t| key_of(*t))) {
                let Some(i) = spans.partition_point(|s| s.0 <= probe).checked_sub(1) else {
                    continue;
                };
                let (_, base, span) = &spans[i];
                let entries = decode_span(span, *base).unwrap();
                let expected = entries
                    .iter()
                    .find(|e| e.token == probe.token && e.key == &probe.key[..])
                    .map(|e| (e.position, e.len));
                for check_crc in [true, false] {
                    let got = find_in_span(span, *base, step == 1, check_crc, &probe).unwrap();
                    proptest::prop_assert_eq!(got, expected);
                }
            }
        }
    }

    /// The index and summary of partitions `key(0..n)`, each 100 bytes at
    /// position `i * 100`, in blocks of `interval`.
    fn index_of(n: u32, interval: usize) -> (Vec<u8>, Vec<u8>) {
        let mut w = IndexWriter::new(interval);
        for i in 0..n {
            w.add(&key(i), i as u64 * 100, 100);
        }
        w.finish()
    }

    #[test]
    fn find_in_span_reports_a_corrupt_block_where_it_lies() {
        let (index, summary) = index_of(6, 2);
        let spans = test_spans(&index, &summary, 3);
        let (_, base, span) = &spans[0];
        assert_eq!(
            find_in_span(span, *base, false, true, &key(4)).unwrap(),
            Some((400, 100))
        );
        // A flipped byte in the span's second block: a lookup that reaches
        // it fails there; one that stops in the first block does not.
        let second = decode_summary(&summary, index.len() as u64).unwrap()[1].offset as usize;
        let mut bad = span.clone();
        bad[second + 3] ^= 1;
        let (at, reason) = find_in_span(&bad, 1000, false, true, &key(4)).unwrap_err();
        assert_eq!(at, 1000 + second as u64);
        assert!(reason.contains("checksum"), "{reason}");
        assert_eq!(
            find_in_span(&bad, 1000, false, true, &key(1)).unwrap(),
            Some((100, 100))
        );
        // Without the CRC check (a block trusted before) the flip is not
        // seen as a checksum mismatch.
        let unchecked = find_in_span(&bad, 1000, false, false, &key(4));
        assert!(
            !matches!(unchecked, Err((_, r)) if r.contains("checksum")),
            "{unchecked:?}"
        );
    }

    #[test]
    fn blocks_round_trip_and_tile_the_index() {
        let (index, summary) = index_of(10, 3);
        let s = decode_summary(&summary, index.len() as u64).unwrap();
        assert_eq!(s.len(), 4);
        assert_eq!(s[1].first, key(3));
        let block = &index[s[3].offset as usize..(s[3].offset + s[3].len) as usize];
        let entries = decode_block(block).unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].partition_key(), key(9));
        assert_eq!(entries[0].position, 900);
        assert!(decode_summary(&summary, index.len() as u64 + 1).is_err());
        for i in 0..block.len() {
            let mut bad = block.to_vec();
            bad[i] ^= 1;
            assert!(decode_block(&bad).is_err(), "flip at {i}");
        }
    }

    #[test]
    fn block_length_limit_holds_at_n_and_fails_at_n_plus_one() {
        let summary = |len: u32| {
            let mut out = 1u64.to_be_bytes().to_vec();
            put_key(&mut out, 1, b"k");
            out.extend_from_slice(&0u64.to_be_bytes());
            out.extend_from_slice(&len.to_be_bytes());
            out
        };
        let n = MAX_INDEX_BLOCK_LEN as u32;
        assert!(decode_summary(&summary(n), n as u64).is_ok());
        assert!(decode_summary(&summary(n + 1), n as u64 + 1).is_err());
    }

    #[test]
    fn a_span_of_several_blocks_decodes_as_one_run() {
        let (index, summary) = index_of(10, 3);
        let s = decode_summary(&summary, index.len() as u64).unwrap();
        let end = (s[2].offset + s[2].len) as usize;
        let entries = decode_span(&index[..end], 0).unwrap();
        let keys: Vec<_> = entries.iter().map(|e| e.partition_key()).collect();
        assert_eq!(keys, (0..9).map(key).collect::<Vec<_>>());
        assert_eq!(decode_span(&index, 0).unwrap().len(), 10);
        // A flipped byte in the second block is reported at that block.
        let mut bad = index.clone();
        bad[s[1].offset as usize + 2] ^= 1;
        let (at, _) = decode_span(&bad, 1000).unwrap_err();
        assert_eq!(at, 1000 + s[1].offset);
        // Every truncation fails cleanly.
        for cut in 0..index.len() {
            let _ = decode_span(&index[..cut], 0);
        }
        assert!(decode_span(&index[..index.len() - 1], 0).is_err());
    }
}
