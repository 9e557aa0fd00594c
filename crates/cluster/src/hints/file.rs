//! One hints file (docs/format/hints.md): a header naming the node the
//! hints are for, then entries, each `len` u32 and a CRC32 of those four
//! bytes, the payload, and a CRC32 of the payload. A payload is a HINT
//! request's: `created_micros` i64 then a MUTATION payload.
//!
//! Reading stops at the first entry that is short or whose checksums do
//! not match (a torn tail after a crash): the entries before it are kept,
//! and how many bytes were left unread is reported.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::Path;

use bytes::Bytes;

use crate::net::HostId;

/// The first bytes of every hints file.
pub const MAGIC: &[u8; 4] = b"VHNT";
/// The version this code writes and reads.
pub const VERSION: u8 = 1;
/// Header: magic, version, host id.
pub const HEADER_BYTES: usize = 4 + 1 + 16;
/// Largest hint payload (a mutation is at most 16 MiB with the default
/// commitlog segment size; a frame at most 32 MiB).
pub const MAX_HINT_BYTES: usize = crate::net::limits::MAX_FRAME_PAYLOAD_BYTES;

/// Creates a hints file for `target` and writes its header.
pub fn create(path: &Path, target: HostId) -> io::Result<File> {
    let mut f = OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(path)?;
    let mut header = Vec::with_capacity(HEADER_BYTES);
    header.extend_from_slice(MAGIC);
    header.push(VERSION);
    header.extend_from_slice(&target.0);
    f.write_all(&header)?;
    Ok(f)
}

/// The bytes of one entry holding `payload`.
pub fn entry(payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_be_bytes();
    let mut out = Vec::with_capacity(payload.len() + 12);
    out.extend_from_slice(&len);
    out.extend_from_slice(&crc32fast::hash(&len).to_be_bytes());
    out.extend_from_slice(payload);
    out.extend_from_slice(&crc32fast::hash(payload).to_be_bytes());
    out
}

/// What a file holds.
#[derive(Debug)]
pub struct Contents {
    pub target: HostId,
    pub payloads: Vec<Bytes>,
    /// Bytes after the last whole entry (a torn tail), 0 when clean.
    pub unread: usize,
}

/// Reads a whole hints file.
pub fn read(path: &Path) -> io::Result<Contents> {
    let mut bytes = Vec::new();
    File::open(path)?.read_to_end(&mut bytes)?;
    parse(&bytes)
}

/// Parses a file's bytes.
pub fn parse(bytes: &[u8]) -> io::Result<Contents> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    if bytes.len() < HEADER_BYTES || &bytes[..4] != MAGIC {
        return Err(bad("not a hints file"));
    }
    if bytes[4] != VERSION {
        return Err(bad("unknown hints file version"));
    }
    let mut id = [0u8; 16];
    id.copy_from_slice(&bytes[5..HEADER_BYTES]);
    let all = Bytes::copy_from_slice(bytes);
    let mut at = HEADER_BYTES;
    let mut payloads = Vec::new();
    while let Some((payload, next)) = next_entry(&all, at) {
        payloads.push(payload);
        at = next;
    }
    Ok(Contents {
        target: HostId(id),
        payloads,
        unread: bytes.len() - at,
    })
}

/// The entry at `at` and where the next starts, if it is whole and sound.
fn next_entry(all: &Bytes, at: usize) -> Option<(Bytes, usize)> {
    let head = all.get(at..at + 8)?;
    let (len, crc) = head.split_at(4);
    if crc32fast::hash(len).to_be_bytes() != crc {
        return None;
    }
    let n = u32::from_be_bytes(len.try_into().ok()?) as usize;
    if n > MAX_HINT_BYTES {
        return None;
    }
    let start = at + 8;
    let payload = all.get(start..start + n)?;
    let crc = all.get(start + n..start + n + 4)?;
    if crc32fast::hash(payload).to_be_bytes() != crc {
        return None;
    }
    Some((all.slice(start..start + n), start + n + 4))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(entries: &[&[u8]]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.push(VERSION);
        out.extend_from_slice(&[7; 16]);
        for e in entries {
            out.extend_from_slice(&entry(e));
        }
        out
    }

    #[test]
    fn an_entry_of_max_hint_bytes_reads_and_one_more_is_a_torn_tail() {
        let at_n = vec![1u8; MAX_HINT_BYTES];
        let c = parse(&file_with(&[&at_n])).unwrap();
        assert_eq!((c.payloads.len(), c.unread), (1, 0));
        let over = vec![1u8; MAX_HINT_BYTES + 1];
        let c = parse(&file_with(&[&over])).unwrap();
        assert!(c.payloads.is_empty() && c.unread > 0);
    }

    #[test]
    fn entries_read_back_in_order() {
        let c = parse(&file_with(&[b"one", b"", b"three"])).unwrap();
        assert_eq!(c.target, HostId([7; 16]));
        assert_eq!(c.payloads, vec![&b"one"[..], &b""[..], &b"three"[..]]);
        assert_eq!(c.unread, 0);
    }

    #[test]
    fn a_torn_or_damaged_tail_is_left_unread() {
        let whole = file_with(&[b"one", b"two"]);
        for cut in HEADER_BYTES..whole.len() {
            let c = parse(&whole[..cut]).unwrap();
            assert!(c.payloads.len() < 2, "cut at {cut}");
            assert_eq!(c.unread, cut - HEADER_BYTES - c.payloads.len() * (3 + 12));
        }
        let mut flipped = whole.clone();
        let last = flipped.len() - 5;
        flipped[last] ^= 1;
        let c = parse(&flipped).unwrap();
        assert_eq!(c.payloads, vec![&b"one"[..]]);
        assert!(parse(b"VHNT").is_err());
        assert!(parse(&[0; 40]).is_err());
    }
}
