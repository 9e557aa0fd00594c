//! The bytes of a commitlog segment, as specified in
//! docs/format/commitlog.md: the file name, the header, the framing of an
//! entry, and a scanner that walks entries and tells a torn tail from
//! corruption in the middle. Everything here is pure (bytes in, values
//! out) so it can be fuzzed.

use crate::encoding::{
    encode_partition, put_varint, Reader, PARTITION_ENCODING_VERSION, READABLE_PARTITION_ENCODINGS,
};
use crate::engine::{PartitionKey, TableId};
use crate::partition::Partition;

/// "VCLG": the first four bytes of every segment.
pub const SEGMENT_MAGIC: u32 = 0x5643_4C47;
/// Version of the segment layout (header and entry framing). Part of the
/// file name.
pub const COMMITLOG_FORMAT_VERSION: u16 = 1;
/// magic u32, version u16, partition encoding u8, flags u8, id u64, crc u32.
pub const SEGMENT_HEADER_BYTES: u64 = 20;
/// [u32 length][u32 CRC32 of the length].
pub const ENTRY_HEADER_BYTES: u64 = 8;
/// [u32 CRC32 of the payload].
pub const ENTRY_TRAILER_BYTES: u64 = 4;
pub const ENTRY_OVERHEAD_BYTES: u64 = ENTRY_HEADER_BYTES + ENTRY_TRAILER_BYTES;
/// Table id (16) + token (8) + key length (>= 1) + partition (>= 3 in
/// encoding version 2: flags 1, base timestamp 1, row count 1; version 1
/// needs at least 15).
pub const MIN_PAYLOAD_BYTES: u64 = 16 + 8 + 1 + 3;
pub const FILE_PREFIX: &str = "CommitLog-";
pub const FILE_SUFFIX: &str = ".log";

/// What a segment header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentHeader {
    pub version: u16,
    pub encoding_version: u8,
    pub id: u64,
}

/// `CommitLog-<version>-<id>.log`.
pub fn segment_file_name(id: u64) -> String {
    format!("{FILE_PREFIX}{COMMITLOG_FORMAT_VERSION}-{id}{FILE_SUFFIX}")
}

/// The (version, id) of a segment file name; `None` for other files.
pub fn parse_segment_file_name(name: &str) -> Option<(u16, u64)> {
    let rest = name.strip_prefix(FILE_PREFIX)?.strip_suffix(FILE_SUFFIX)?;
    let (version, id) = rest.split_once('-')?;
    Some((version.parse().ok()?, id.parse().ok()?))
}

pub fn encode_header(id: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(SEGMENT_HEADER_BYTES as usize);
    out.extend_from_slice(&SEGMENT_MAGIC.to_be_bytes());
    out.extend_from_slice(&COMMITLOG_FORMAT_VERSION.to_be_bytes());
    out.push(PARTITION_ENCODING_VERSION);
    out.push(0);
    out.extend_from_slice(&id.to_be_bytes());
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

fn be_u32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

/// Parses a header. `Err((torn, reason))`: `torn` when the file is too
/// short to hold one, or holds only zero bytes where it should be (a
/// segment created, or a preallocated file renamed, just before a crash).
pub fn decode_header(bytes: &[u8]) -> Result<SegmentHeader, (bool, String)> {
    let n = SEGMENT_HEADER_BYTES as usize;
    if bytes.len() < n {
        return Err((
            true,
            format!("segment header cut short ({} bytes)", bytes.len()),
        ));
    }
    if all_zero(&bytes[..n]) {
        return Err((true, "segment header not written (zero bytes)".into()));
    }
    let stored_crc = be_u32(bytes, n - 4).unwrap_or(0);
    if crc32fast::hash(&bytes[..n - 4]) != stored_crc {
        return Err((false, "segment header checksum mismatch".into()));
    }
    if be_u32(bytes, 0) != Some(SEGMENT_MAGIC) {
        return Err((false, "not a commitlog segment (bad magic)".into()));
    }
    let version = u16::from_be_bytes([bytes[4], bytes[5]]);
    if version != COMMITLOG_FORMAT_VERSION {
        return Err((
            false,
            format!("unsupported commitlog format version {version}"),
        ));
    }
    let encoding_version = bytes[6];
    if !READABLE_PARTITION_ENCODINGS.contains(&encoding_version) {
        return Err((
            false,
            format!("unsupported partition encoding version {encoding_version}"),
        ));
    }
    if bytes[7] != 0 {
        return Err((false, format!("unknown segment flags {:#04x}", bytes[7])));
    }
    let mut id = [0u8; 8];
    id.copy_from_slice(&bytes[8..16]);
    Ok(SegmentHeader {
        version,
        encoding_version,
        id: u64::from_be_bytes(id),
    })
}

/// A whole framed entry: header, payload, trailer.
pub fn encode_entry(table: TableId, key: &PartitionKey, partition: &Partition) -> Vec<u8> {
    let mut out = vec![0u8; ENTRY_HEADER_BYTES as usize];
    out.extend_from_slice(&table.to_be_bytes());
    out.extend_from_slice(&key.token.to_be_bytes());
    put_varint(&mut out, key.key.len() as u64);
    out.extend_from_slice(&key.key);
    encode_partition(&mut out, partition);
    let payload_len = out.len() - ENTRY_HEADER_BYTES as usize;
    // A payload past u32 is refused by the size limit before it is written;
    // saturating keeps this function total.
    let len = u32::try_from(payload_len).unwrap_or(u32::MAX).to_be_bytes();
    out[..4].copy_from_slice(&len);
    out[4..8].copy_from_slice(&crc32fast::hash(&len).to_be_bytes());
    let crc = crc32fast::hash(&out[ENTRY_HEADER_BYTES as usize..]);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

/// The table id, the partition key, and a reader positioned on the
/// encoded partition.
pub fn decode_payload_head(payload: &[u8]) -> Result<(TableId, PartitionKey, Reader<'_>), String> {
    let mut r = Reader::new(payload);
    let head = r.take(24).map_err(|e| e.to_string())?;
    let mut id = [0u8; 16];
    id.copy_from_slice(&head[..16]);
    let mut token = [0u8; 8];
    token.copy_from_slice(&head[16..24]);
    let key = r.bytes().map_err(|e| format!("partition key: {e}"))?;
    let key = PartitionKey {
        token: i64::from_be_bytes(token),
        key,
    };
    Ok((u128::from_be_bytes(id), key, r))
}

/// The table id of a payload (its first 16 bytes).
pub fn payload_table(payload: &[u8]) -> Option<TableId> {
    let head: [u8; 16] = payload.get(..16)?.try_into().ok()?;
    Some(u128::from_be_bytes(head))
}

/// Why the walk over a segment stopped before its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanStop {
    pub offset: u64,
    /// No intact entry follows: the remains of an interrupted write.
    pub torn: bool,
    pub reason: String,
}

/// One step of the walk.
enum Step<'a> {
    Entry { payload: &'a [u8], next: usize },
    End,
    Bad(String),
}

fn step(bytes: &[u8], at: usize) -> Step<'_> {
    let left = bytes.len().saturating_sub(at);
    if left == 0 {
        return Step::End;
    }
    if left < ENTRY_HEADER_BYTES as usize {
        return Step::Bad(format!("entry header cut short ({left} bytes left)"));
    }
    let (Some(len), Some(len_crc)) = (be_u32(bytes, at), be_u32(bytes, at + 4)) else {
        return Step::Bad("entry header cut short".into());
    };
    if crc32fast::hash(&len.to_be_bytes()) != len_crc {
        return Step::Bad("entry length checksum mismatch".into());
    }
    let len = len as usize;
    if (len as u64) < MIN_PAYLOAD_BYTES {
        return Step::Bad(format!("entry length {len} below the minimum"));
    }
    let start = at + ENTRY_HEADER_BYTES as usize;
    let end = start.saturating_add(len);
    let Some(stored) = end.checked_add(4).and_then(|_| be_u32(bytes, end)) else {
        return Step::Bad(format!(
            "entry of {len} bytes cut short ({left} bytes left)"
        ));
    };
    let payload = &bytes[start..end];
    if crc32fast::hash(payload) != stored {
        return Step::Bad("entry checksum mismatch".into());
    }
    Step::Entry {
        payload,
        next: end + ENTRY_TRAILER_BYTES as usize,
    }
}

/// Whether every byte is zero (the unwritten rest of a preallocated
/// segment).
fn all_zero(bytes: &[u8]) -> bool {
    bytes.iter().all(|b| *b == 0)
}

/// Whether an intact entry starts anywhere after `from` (a resync scan,
/// run only once a walk has stopped). An entry's length is at least
/// [`MIN_PAYLOAD_BYTES`], so its first four bytes are not all zero: runs
/// of zeros (a preallocated segment's unwritten rest) are skipped whole.
fn intact_entry_after(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while at < bytes.len() {
        let nonzero = at + bytes[at..].iter().position(|b| *b != 0)?;
        // Entries starting up to three bytes before it have a length
        // whose first bytes are zero.
        let first = nonzero.saturating_sub(3).max(at);
        if let Some(found) =
            (first..=nonzero).find(|&p| matches!(step(bytes, p), Step::Entry { .. }))
        {
            return Some(found);
        }
        at = nonzero + 1;
    }
    None
}

/// Walks the entries of a segment image from `*pos` (which starts at
/// [`SEGMENT_HEADER_BYTES`]): each call returns the next payload and its
/// offset, `Ok(None)` at a clean end (the end of the file, or only zero
/// bytes left: a preallocated segment), or `Err` where the walk stops.
pub fn next_entry<'a>(
    bytes: &'a [u8],
    pos: &mut usize,
) -> Result<Option<(u64, &'a [u8])>, ScanStop> {
    let at = *pos;
    match step(bytes, at) {
        Step::End => Ok(None),
        Step::Entry { payload, next } => {
            *pos = next;
            Ok(Some((at as u64, payload)))
        }
        Step::Bad(_) if all_zero(&bytes[at..]) => Ok(None),
        Step::Bad(reason) => {
            let after = intact_entry_after(bytes, at + 1);
            let reason = match after {
                Some(o) => format!("{reason}; intact entries follow at offset {o}"),
                None => reason,
            };
            Err(ScanStop {
                offset: at as u64,
                torn: after.is_none(),
                reason,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::Cell;
    use crate::row::Row;
    use bytes::Bytes;

    pub(crate) fn sample_partition(value: &[u8]) -> Partition {
        let mut p = Partition::default();
        let mut row = Row::default();
        row.cells
            .insert((1, None), Cell::live(7, Bytes::copy_from_slice(value)));
        p.static_row = Some(row);
        p
    }

    #[test]
    fn file_names_round_trip() {
        let name = segment_file_name(1234);
        assert_eq!(name, "CommitLog-1-1234.log");
        assert_eq!(parse_segment_file_name(&name), Some((1, 1234)));
        for bad in [
            "CommitLog-1-x.log",
            "CommitLog-1.log",
            "foo",
            "CommitLog-1-2.log.tmp",
        ] {
            assert_eq!(parse_segment_file_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn header_round_trips_and_rejects_damage() {
        let h = encode_header(42);
        assert_eq!(h.len() as u64, SEGMENT_HEADER_BYTES);
        assert_eq!(decode_header(&h).unwrap().id, 42);
        assert!(decode_header(&h[..10]).unwrap_err().0);
        for i in 0..h.len() {
            let mut bad = h.clone();
            bad[i] ^= 1;
            assert!(!decode_header(&bad).unwrap_err().0, "flip at {i}");
        }
    }

    #[test]
    fn the_smallest_entry_is_the_minimum_payload() {
        let key = PartitionKey {
            token: 0,
            key: Bytes::new(),
        };
        let e = encode_entry(1, &key, &Partition::default());
        assert_eq!(e.len() as u64, ENTRY_OVERHEAD_BYTES + MIN_PAYLOAD_BYTES);
    }

    /// A framed entry around `payload` with valid checksums (the payload
    /// need not decode: the walk checks framing only).
    fn frame(payload: &[u8]) -> Vec<u8> {
        let len = (payload.len() as u32).to_be_bytes();
        let mut out = len.to_vec();
        out.extend_from_slice(&crc32fast::hash(&len).to_be_bytes());
        out.extend_from_slice(payload);
        out.extend_from_slice(&crc32fast::hash(payload).to_be_bytes());
        out
    }

    #[test]
    fn a_payload_below_the_minimum_is_rejected_and_the_minimum_accepted() {
        let n = MIN_PAYLOAD_BYTES as usize;
        let start = SEGMENT_HEADER_BYTES as usize;
        // N: a well-framed entry of exactly the minimum walks.
        let mut seg = encode_header(1);
        seg.extend(frame(&[5; MIN_PAYLOAD_BYTES as usize]));
        let mut pos = start;
        let (offset, payload) = next_entry(&seg, &mut pos).unwrap().unwrap();
        assert_eq!((offset, payload.len()), (start as u64, n));
        assert_eq!(next_entry(&seg, &mut pos), Ok(None));
        // N - 1 as the last entry: checksums intact, yet a torn tail.
        let mut seg = encode_header(1);
        seg.extend(frame(&vec![5; n - 1]));
        let mut pos = start;
        let stop = next_entry(&seg, &mut pos).unwrap_err();
        assert_eq!(stop.offset, start as u64);
        assert!(stop.torn, "{}", stop.reason);
        assert!(stop.reason.contains("below the minimum"), "{}", stop.reason);
        assert_eq!(pos, start, "the walk does not move past it");
        // N - 1 with an intact entry after it: corruption, not a torn tail.
        seg.extend(frame(&vec![6; n]));
        let mut pos = start;
        let stop = next_entry(&seg, &mut pos).unwrap_err();
        assert!(!stop.torn, "{}", stop.reason);
        assert!(stop.reason.contains("below the minimum"), "{}", stop.reason);
    }

    #[test]
    fn entries_walk_and_the_tail_is_classified() {
        let key = PartitionKey::new(Bytes::from_static(b"k"));
        let mut seg = encode_header(1);
        for i in 0..3u8 {
            seg.extend(encode_entry(9, &key, &sample_partition(&[i; 10])));
        }
        let mut pos = SEGMENT_HEADER_BYTES as usize;
        let mut n = 0;
        while let Some((_, payload)) = next_entry(&seg, &mut pos).unwrap() {
            let (table, k, _) = decode_payload_head(payload).unwrap();
            assert_eq!((table, &k), (9, &key));
            n += 1;
        }
        assert_eq!(n, 3);
        // A flip in the first entry: intact entries follow, so corruption.
        let mut bad = seg.clone();
        bad[SEGMENT_HEADER_BYTES as usize + 12] ^= 1;
        let mut pos = SEGMENT_HEADER_BYTES as usize;
        let stop = next_entry(&bad, &mut pos).unwrap_err();
        assert!(!stop.torn);
        // A flip in the last entry looks like a torn write.
        let mut bad = seg.clone();
        let last = bad.len() - 3;
        bad[last] ^= 1;
        let mut pos = SEGMENT_HEADER_BYTES as usize;
        assert!(next_entry(&bad, &mut pos).unwrap().is_some());
        assert!(next_entry(&bad, &mut pos).unwrap().is_some());
        assert!(next_entry(&bad, &mut pos).unwrap_err().torn);
    }
}
