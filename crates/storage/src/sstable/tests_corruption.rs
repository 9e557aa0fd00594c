//! Damaged files: every truncation and every single-byte flip of a small
//! sstable is detected (open fails, or a read reports corruption) and
//! nothing panics; random and mutated images go through `fuzz_open`.

use super::test_util::{open, sample_partitions, write};
use crate::engine::{PartitionKey, TokenBound};
use crate::error::Error;
use crate::fs::DiskAccessMode;
use crate::partition::Partition;
use crate::sstable::fs_mem::MemFs;
use crate::sstable::{fuzz_open, Compression, Sstable, SstableParams};
use std::path::Path;

fn small_image(compression: Compression) -> (Vec<u8>, Vec<(PartitionKey, Partition)>) {
    let parts = sample_partitions(5);
    assert_eq!(parts.len(), 5);
    let fs = MemFs::new();
    let path = Path::new("c/small.db");
    let params = SstableParams {
        chunk_length: 64,
        compression,
        min_index_interval: 2,
        ..SstableParams::default()
    };
    write(&fs, path, params, &parts);
    (fs.get(path).unwrap(), parts)
}

/// Opens `bytes` and reads everything; Ok(true) when all of it came back
/// equal to `parts`, Err when a corruption was reported.
fn read_everything(bytes: Vec<u8>, parts: &[(PartitionKey, Partition)]) -> crate::Result<bool> {
    read_everything_as(DiskAccessMode::Standard, bytes, parts)
}

/// [`read_everything`] with readers that offer the file as `access` maps it.
fn read_everything_as(
    access: DiskAccessMode,
    bytes: Vec<u8>,
    parts: &[(PartitionKey, Partition)],
) -> crate::Result<bool> {
    let fs = MemFs::with_access(access);
    let path = Path::new("c/bad.db");
    fs.insert(path, bytes);
    // Without a chunk cache, then through one (the default for what is
    // not mapped): both must see every damage.
    let plain = read_table(open(&fs, path, 1.0)?, parts)?;
    let cache = std::sync::Arc::new(crate::sstable::BlockCache::new(1 << 20));
    let cached = read_table(open(&fs, path, 1.0)?.with_block_cache(cache), parts)?;
    Ok(plain && cached)
}

/// Reads everything of `table`: true when it all equals `parts`.
fn read_table(table: Sstable, parts: &[(PartitionKey, Partition)]) -> crate::Result<bool> {
    let all: Vec<_> = table.iter()?.collect::<crate::Result<_>>()?;
    let keys = table.keys(&TokenBound::Unbounded, &TokenBound::Unbounded, usize::MAX)?;
    let mut same = all == parts && keys.len() == parts.len();
    for (k, p) in parts {
        same &= table.read_partition(k)?.as_ref() == Some(p);
    }
    Ok(same)
}

/// Every way sstables can be read: `pread`, index mapped, all mapped,
/// O_DIRECT `pread`.
const ACCESS_MODES: [DiskAccessMode; 4] = [
    DiskAccessMode::Standard,
    DiskAccessMode::MmapIndexOnly,
    DiskAccessMode::Mmap,
    DiskAccessMode::Direct,
];

fn assert_corruption(r: crate::Result<bool>, what: &str) {
    match r {
        Err(Error::Corruption { file, .. }) => assert!(file.ends_with("bad.db")),
        Err(e) => panic!("{what}: not a corruption error: {e}"),
        Ok(same) => panic!("{what}: not detected (data equal: {same})"),
    }
}

#[test]
fn every_truncation_fails_with_corruption() {
    for compression in [Compression::None, Compression::Lz4] {
        let (image, parts) = small_image(compression);
        eprintln!("{compression:?} image of {} bytes", image.len());
        for access in ACCESS_MODES {
            assert!(read_everything_as(access, image.clone(), &parts).unwrap());
            for cut in 0..image.len() {
                assert_corruption(
                    read_everything_as(access, image[..cut].to_vec(), &parts),
                    &format!("{access:?}: cut at {cut}"),
                );
            }
        }
    }
}

#[test]
fn every_byte_flip_is_detected() {
    for compression in [Compression::None, Compression::Lz4] {
        let (image, parts) = small_image(compression);
        for i in 0..image.len() {
            for (mask, access) in [0x01u8, 0x80, 0xff]
                .into_iter()
                .zip(ACCESS_MODES.iter().cycle())
            {
                let mut bad = image.clone();
                bad[i] ^= mask;
                assert_corruption(
                    read_everything_as(*access, bad, &parts),
                    &format!("{access:?}: flip {mask:#x} at {i}"),
                );
            }
        }
    }
}

#[test]
fn flipped_chunk_names_the_file_and_chunk_offset() {
    let (image, parts) = small_image(Compression::Lz4);
    let at = 16 + 3; // inside the first chunk
    let mut bad = image;
    bad[at] ^= 0x10;
    match read_everything(bad, &parts) {
        Err(Error::Corruption { offset, reason, .. }) => {
            assert_eq!(offset, 16, "{reason}");
            assert!(reason.contains("chunk 0"), "{reason}");
        }
        other => panic!("not detected: {other:?}"),
    }
}

#[test]
fn unchecked_flips_and_fuzzed_images_never_panic() {
    let (image, _) = small_image(Compression::Lz4);
    for i in 0..image.len() {
        let mut bad = image.clone();
        bad[i] ^= 0x5a;
        fuzz_open(&bad);
        let fs = MemFs::new();
        let path = Path::new("c/u.db");
        fs.insert(path, bad);
        if let Ok(t) = open(&fs, path, 0.0) {
            for item in t.iter().unwrap() {
                let _ = item;
            }
        }
    }
    let mut state = 0x1234_5678u64;
    for len in [0usize, 1, 16, 100, 171, 172, 173, 500, 4096] {
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (state >> 56) as u8
            })
            .collect();
        fuzz_open(&bytes);
    }
}

#[test]
fn crc_check_chance_decides_whether_a_flip_is_seen() {
    let parts = super::tests_fixture::fixed_partitions();
    let fs = MemFs::new();
    let path = Path::new("c/chance.db");
    let params = SstableParams {
        chunk_length: 4096,
        compression: Compression::None,
        ..SstableParams::default()
    };
    write(&fs, path, params, &parts);
    let mut image = fs.get(path).unwrap();
    let at = image.windows(7).position(|w| w == b"value 3").unwrap();
    image[at] = b'V';
    fs.insert(path, image);
    let key = &parts.iter().find(|(k, _)| &k.key[..] == b"p3").unwrap().0;
    // Never checked: the damaged value comes back (the risk of chance < 1).
    let unchecked = open(&fs, path, 0.0).unwrap();
    let got = unchecked.read_partition(key).unwrap().unwrap();
    assert_ne!(
        Some(&got),
        parts.iter().find(|(k, _)| k == key).map(|(_, p)| p)
    );
    assert!(matches!(unchecked.verify(), Err(Error::Corruption { .. })));
    // The chance changed on the open sstable (ALTER TABLE): checked now.
    unchecked.set_crc_check_chance(1.0);
    assert_eq!(unchecked.crc_check_chance(), 1.0);
    assert!(matches!(
        unchecked.read_partition(key),
        Err(Error::Corruption { .. })
    ));
    // Always checked: a corruption error.
    let checked = open(&fs, path, 1.0).unwrap();
    assert!(matches!(
        checked.read_partition(key),
        Err(Error::Corruption { .. })
    ));
    // Half the time: both outcomes occur.
    let half = open(&fs, path, 0.5).unwrap();
    let errors = (0..200)
        .filter(|_| half.read_partition(key).is_err())
        .count();
    assert!((50..150).contains(&errors), "{errors} errors in 200 reads");
}

/// A compaction's scan reads around the page cache (`iter_direct`): on a
/// real file it returns every partition, and a byte flipped in a chunk
/// is a corruption error naming the file and the chunk's offset, as on
/// any other read.
#[test]
fn a_direct_scan_reads_everything_and_names_a_flipped_chunk() {
    use crate::fs::RealFs;
    let (image, parts) = small_image(Compression::None);
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("varve-direct-scan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.db");
    let fs = std::sync::Arc::new(RealFs::new(DiskAccessMode::Mmap));
    let scan = |bytes: &[u8]| -> crate::Result<Vec<(PartitionKey, Partition)>> {
        std::fs::write(&path, bytes).unwrap();
        let table = Sstable::open(fs.clone(), &path, super::test_util::comparator(), 1.0)?;
        let mut iter = table.iter_direct()?;
        assert!(
            iter.reads_direct() || !direct_supported(&path),
            "a direct reader"
        );
        iter.by_ref().collect()
    };
    assert_eq!(scan(&image).unwrap(), parts);
    let mut bad = image;
    bad[16 + 3] ^= 0x10; // inside the first chunk
    match scan(&bad) {
        Err(Error::Corruption {
            file,
            offset,
            reason,
        }) => {
            assert!(file.ends_with("bad.db"), "{file:?}");
            assert_eq!(offset, 16, "{reason}");
            assert!(reason.contains("chunk 0"), "{reason}");
        }
        other => panic!("not detected: {other:?}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn direct_supported(path: &Path) -> bool {
    matches!(crate::fs_direct_read::open(path), Ok(Some(_)))
}
