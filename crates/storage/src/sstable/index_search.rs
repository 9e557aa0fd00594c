//! Index spans as the chunk cache keeps them: the span's bytes followed by
//! a search table, so that a point lookup binary-searches instead of
//! scanning.
//!
//! A scan of an index block decodes half of its `min_index_interval` (128)
//! entries on average: some 2 KB, 30 or more cache lines that a cached span
//! rarely has in the CPU's caches. With the table a lookup touches a few
//! lines of tokens and the one entry it lands on. The table is built from
//! the entries of a span that was just checked (CRC, order), in memory
//! only; nothing of it is written to disk.
//!
//! Layout (the table first: a lookup's first touch finds the count and the
//! first tokens on one cache line):
//!
//! | part | bytes |
//! | --- | --- |
//! | n | u32 (little-endian) |
//! | span length | u32 |
//! | tokens | n × i64, in entry order |
//! | offsets | n × u32, where each entry starts in the span |
//! | padding | to a multiple of 8 |
//! | span | the span's bytes |

use crate::encoding::Reader;
use crate::engine::PartitionKey;
use crate::sstable::format::get_key;
use crate::sstable::index::IndexEntry;
use std::cmp::Ordering;

/// Bytes of the header: entry count and span length.
const HEADER_LEN: usize = 8;

/// The span followed by its search table. `entries` must be the span's,
/// in order, borrowed from `span` itself (as `decode_span` returns them).
pub fn with_search_table(span: &[u8], entries: &[IndexEntry]) -> Vec<u8> {
    let n = entries.len();
    let span_at = (HEADER_LEN + n * 12).next_multiple_of(8);
    let mut out = Vec::with_capacity(span_at + span.len());
    out.extend_from_slice(&(n as u32).to_le_bytes());
    out.extend_from_slice(&(span.len() as u32).to_le_bytes());
    for e in entries {
        out.extend_from_slice(&e.token.to_le_bytes());
    }
    for e in entries {
        // The key's bytes lie in `span`; its entry starts with the token
        // (8 bytes) and the key's length (2).
        let key_at = e.key.as_ptr() as usize - span.as_ptr() as usize;
        out.extend_from_slice(&((key_at - 10) as u32).to_le_bytes());
    }
    out.resize(span_at, 0);
    out.extend_from_slice(span);
    out
}

/// A span with its search table, borrowed.
pub struct Searchable<'a> {
    span: &'a [u8],
    tokens: &'a [u8],
    offsets: &'a [u8],
}

fn u32_at(bytes: &[u8], at: usize) -> Option<usize> {
    let b = bytes.get(at..at + 4)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
}

impl<'a> Searchable<'a> {
    /// Splits what [`with_search_table`] built; `None` when the lengths do
    /// not add up.
    pub fn parse(bytes: &'a [u8]) -> Option<Self> {
        let n = u32_at(bytes, 0)?;
        let span_len = u32_at(bytes, 4)?;
        let offsets_at = HEADER_LEN.checked_add(n.checked_mul(8)?)?;
        let offsets_end = offsets_at.checked_add(n.checked_mul(4)?)?;
        let span_at = offsets_end.next_multiple_of(8);
        if span_at.checked_add(span_len)? != bytes.len() {
            return None;
        }
        Some(Searchable {
            span: &bytes[span_at..],
            tokens: &bytes[HEADER_LEN..offsets_at],
            offsets: &bytes[offsets_at..offsets_end],
        })
    }

    /// The span's own bytes.
    pub fn span(&self) -> &'a [u8] {
        self.span
    }

    fn len(&self) -> usize {
        self.offsets.len() / 4
    }

    fn token(&self, i: usize) -> i64 {
        let b = &self.tokens[i * 8..i * 8 + 8];
        i64::from_le_bytes(b.try_into().unwrap_or([0; 8]))
    }

    /// A reader at entry `i`.
    fn entry(&self, i: usize) -> Result<Reader<'a>, &'static str> {
        let at = u32_at(self.offsets, i * 4).ok_or("search table too short")?;
        let rest = self
            .span
            .get(at..)
            .ok_or("search table points past its span")?;
        Ok(Reader::new(rest))
    }

    /// Entry `i`'s key compared with `key`.
    fn compare(&self, i: usize, key: &PartitionKey) -> Result<Ordering, &'static str> {
        let token = self.token(i);
        if token != key.token {
            return Ok(token.cmp(&key.token));
        }
        let (_, k) = get_key(&mut self.entry(i)?).map_err(|_| "malformed index entry")?;
        Ok(k.cmp(&key.key[..]))
    }

    /// `key`'s entry: its position and length, or `None` when the span
    /// does not hold it.
    pub fn find(&self, key: &PartitionKey) -> Result<Option<(u64, u64)>, &'static str> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.compare(mid, key)? {
                Ordering::Less => lo = mid + 1,
                Ordering::Equal => return self.place(mid).map(Some),
                Ordering::Greater => hi = mid,
            }
        }
        Ok(None)
    }

    /// The position and length of entry `i`.
    fn place(&self, i: usize) -> Result<(u64, u64), &'static str> {
        let bad = |_| "malformed index entry";
        let mut r = self.entry(i)?;
        get_key(&mut r).map_err(bad)?;
        let position = r.varint().map_err(bad)?;
        let len = r.varint().map_err(bad)?;
        Ok((position, len))
    }
}

#[cfg(test)]
mod tests;
