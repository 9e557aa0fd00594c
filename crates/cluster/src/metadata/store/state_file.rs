//! A small file replaced whole: magic, version, length, payload, CRC32
//! (docs/format/metadata-log.md, section 1.2). Used for the vote, the
//! committed log id and the snapshot.
//!
//! The file is written beside and renamed over the old one, so a crash
//! leaves the old file or the new one, never a mix: a file that does not
//! check is corruption, and the node refuses to start on it.

use std::path::Path;

use super::{replace_file, StoreError, StoreResult};
use crate::metadata::limits::MAX_STATE_FILE_BYTES;

/// The layout version of every state file.
pub const STATE_FILE_VERSION: u8 = 1;

/// Magic, version, length.
pub const STATE_HEADER_BYTES: usize = 4 + 1 + 4;

/// The vote file's magic.
pub const VOTE_MAGIC: [u8; 4] = *b"VMVT";
/// The committed log id file's magic.
pub const COMMITTED_MAGIC: [u8; 4] = *b"VMCM";
/// The snapshot file's magic.
pub const SNAPSHOT_MAGIC: [u8; 4] = *b"VMSN";

/// The bytes of a state file holding `payload`.
pub fn encode(magic: [u8; 4], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(STATE_HEADER_BYTES + payload.len() + 4);
    out.extend_from_slice(&magic);
    out.push(STATE_FILE_VERSION);
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

/// The payload of a state file's bytes, or why they do not check
/// (`path` only names the file in the error).
pub fn decode(path: &Path, magic: [u8; 4], bytes: &[u8]) -> StoreResult<Vec<u8>> {
    let bad = |offset: usize, reason: &str| StoreError::corruption(path, offset as u64, reason);
    if bytes.len() < STATE_HEADER_BYTES + 4 {
        return Err(bad(0, "shorter than a header"));
    }
    if bytes[..4] != magic {
        return Err(bad(0, "wrong magic"));
    }
    if bytes[4] != STATE_FILE_VERSION {
        return Err(bad(4, "unknown version"));
    }
    let len = u32::from_be_bytes([bytes[5], bytes[6], bytes[7], bytes[8]]) as usize;
    if len > MAX_STATE_FILE_BYTES {
        return Err(bad(5, "payload over MAX_STATE_FILE_BYTES"));
    }
    let end = STATE_HEADER_BYTES + len;
    if bytes.len() != end + 4 {
        return Err(bad(5, "length does not match the file"));
    }
    let crc = u32::from_be_bytes([bytes[end], bytes[end + 1], bytes[end + 2], bytes[end + 3]]);
    if crc != crc32fast::hash(&bytes[..end]) {
        return Err(bad(end, "CRC mismatch"));
    }
    Ok(bytes[STATE_HEADER_BYTES..end].to_vec())
}

/// Replaces `dir/name` with a state file holding `payload`.
pub fn write(dir: &Path, name: &str, magic: [u8; 4], payload: &[u8]) -> StoreResult<()> {
    replace_file(dir, name, &encode(magic, payload))
}

/// The payload of `dir/name`, or `None` if there is no such file.
pub fn read(dir: &Path, name: &str, magic: [u8; 4]) -> StoreResult<Option<Vec<u8>>> {
    let path = dir.join(name);
    match std::fs::read(&path) {
        Ok(bytes) => decode(&path, magic, &bytes).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StoreError::io(&path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_every_flipped_byte_is_caught() {
        let path = Path::new("vote");
        let bytes = encode(VOTE_MAGIC, b"payload");
        assert_eq!(decode(path, VOTE_MAGIC, &bytes).unwrap(), b"payload");
        assert!(decode(path, SNAPSHOT_MAGIC, &bytes).is_err());
        for i in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[i] ^= 0x40;
            assert!(decode(path, VOTE_MAGIC, &flipped).is_err(), "byte {i}");
        }
        for cut in 0..bytes.len() {
            assert!(
                decode(path, VOTE_MAGIC, &bytes[..cut]).is_err(),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn payload_at_the_limit_and_over() {
        let path = Path::new("snapshot");
        let at = encode(SNAPSHOT_MAGIC, &vec![0; MAX_STATE_FILE_BYTES]);
        assert!(decode(path, SNAPSHOT_MAGIC, &at).is_ok());
        let over = encode(SNAPSHOT_MAGIC, &vec![0; MAX_STATE_FILE_BYTES + 1]);
        assert!(decode(path, SNAPSHOT_MAGIC, &over).is_err());
    }

    #[test]
    fn write_then_read_and_a_missing_file() {
        let dir = std::env::temp_dir().join(format!("varve-state-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(read(&dir, "vote", VOTE_MAGIC).unwrap(), None);
        write(&dir, "vote", VOTE_MAGIC, b"one").unwrap();
        write(&dir, "vote", VOTE_MAGIC, b"two").unwrap();
        assert_eq!(
            read(&dir, "vote", VOTE_MAGIC).unwrap(),
            Some(b"two".to_vec())
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
