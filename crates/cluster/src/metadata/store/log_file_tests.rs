//! The log file: append, read, truncate, purge, reopen, a torn tail cut,
//! corruption in the middle refused.

use super::*;

/// A directory removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let dir =
            std::env::temp_dir().join(format!("varve-log-file-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }

    fn log(&self) -> PathBuf {
        self.0.join(LOG_FILE_NAME)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn records(range: std::ops::Range<u64>) -> Vec<(u64, Vec<u8>)> {
    range.map(|i| (i, vec![i as u8; i as usize])).collect()
}

#[test]
fn append_read_and_reopen() {
    let dir = Dir::new("append");
    let mut log = LogFile::open(&dir.0).unwrap();
    assert_eq!(log.last_index(), None);
    log.append(&records(1..4)).unwrap();
    log.append(&records(4..6)).unwrap();
    assert_eq!(log.read(..).unwrap(), records(1..6));
    assert_eq!(log.read(2..4).unwrap(), records(2..4));
    drop(log);
    let log = LogFile::open(&dir.0).unwrap();
    assert_eq!((log.first_index(), log.last_index()), (Some(1), Some(5)));
    assert_eq!(log.read(..).unwrap(), records(1..6));
}

#[test]
fn append_out_of_sequence_is_refused() {
    let dir = Dir::new("sequence");
    let mut log = LogFile::open(&dir.0).unwrap();
    log.append(&records(5..7)).unwrap();
    assert!(log.append(&records(8..9)).is_err());
    assert!(log.append(&records(6..7)).is_err());
    assert_eq!(log.last_index(), Some(6));
}

#[test]
fn truncate_then_append_again() {
    let dir = Dir::new("truncate");
    let mut log = LogFile::open(&dir.0).unwrap();
    log.append(&records(1..6)).unwrap();
    log.truncate(3).unwrap();
    assert_eq!(log.last_index(), Some(2));
    log.truncate(10).unwrap();
    let other = vec![(3, b"other".to_vec())];
    log.append(&other).unwrap();
    drop(log);
    let log = LogFile::open(&dir.0).unwrap();
    let mut expected = records(1..3);
    expected.extend(other);
    assert_eq!(log.read(..).unwrap(), expected);
}

#[test]
fn purge_keeps_the_rest_and_the_purged_id() {
    let dir = Dir::new("purge");
    let mut log = LogFile::open(&dir.0).unwrap();
    log.append(&records(1..6)).unwrap();
    log.purge(3, b"id-3").unwrap();
    assert_eq!(log.read(..).unwrap(), records(4..6));
    log.append(&records(6..7)).unwrap();
    drop(log);
    let mut log = LogFile::open(&dir.0).unwrap();
    assert_eq!(log.purged(), b"id-3");
    assert_eq!(log.read(..).unwrap(), records(4..7));
    // Purging everything leaves an empty log that takes any index next.
    log.purge(6, b"id-6").unwrap();
    assert_eq!(log.last_index(), None);
    log.append(&records(10..11)).unwrap();
    assert_eq!(log.read(..).unwrap(), records(10..11));
}

#[test]
fn a_torn_tail_is_cut() {
    let dir = Dir::new("torn");
    let mut log = LogFile::open(&dir.0).unwrap();
    log.append(&records(1..4)).unwrap();
    drop(log);
    let full = std::fs::read(dir.log()).unwrap();
    // Every cut inside the last record leaves records 1 and 2.
    let last_len = RECORD_HEADER_BYTES + 3;
    for cut in 1..last_len {
        std::fs::write(dir.log(), &full[..full.len() - cut]).unwrap();
        let log = LogFile::open(&dir.0).unwrap();
        assert_eq!(log.read(..).unwrap(), records(1..3), "cut {cut}");
    }
    // So does a last record whose bytes were not all written.
    let mut flipped = full.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0xff;
    std::fs::write(dir.log(), &flipped).unwrap();
    let mut log = LogFile::open(&dir.0).unwrap();
    assert_eq!(log.last_index(), Some(2));
    // The cut is on disk: appending goes on from there.
    log.append(&records(3..4)).unwrap();
    drop(log);
    assert_eq!(std::fs::read(dir.log()).unwrap(), full);
}

#[test]
fn corruption_in_the_middle_is_an_error() {
    let dir = Dir::new("middle");
    let mut log = LogFile::open(&dir.0).unwrap();
    log.append(&records(1..4)).unwrap();
    drop(log);
    let mut bytes = std::fs::read(dir.log()).unwrap();
    // The first record's payload byte (record 1 holds one byte).
    let header_len = 4 + 1 + 4 + 4;
    bytes[header_len + RECORD_HEADER_BYTES] ^= 1;
    std::fs::write(dir.log(), &bytes).unwrap();
    let err = LogFile::open(&dir.0).unwrap_err();
    assert!(matches!(err, StoreError::Corruption { .. }), "{err}");
    // A bad header is corruption too.
    let mut bytes = std::fs::read(dir.log()).unwrap();
    bytes[0] = b'X';
    std::fs::write(dir.log(), &bytes).unwrap();
    assert!(LogFile::open(&dir.0).is_err());
}

#[test]
fn records_at_the_limit_and_over() {
    let dir = Dir::new("limit");
    let mut log = LogFile::open(&dir.0).unwrap();
    log.append(&[(1, vec![0; MAX_LOG_RECORD_BYTES])]).unwrap();
    assert!(log
        .append(&[(2, vec![0; MAX_LOG_RECORD_BYTES + 1])])
        .is_err());
    drop(log);
    let log = LogFile::open(&dir.0).unwrap();
    assert_eq!(log.last_index(), Some(1));
}
