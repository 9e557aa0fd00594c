//! Whole-sstable streaming in storage, on the simulated file system: the
//! spans listed, a held sstable read back chunk by chunk with its
//! whole-file checksum (and still readable once a compaction removed it),
//! a file received and installed on another node's engine, and every way
//! a receive fails leaving nothing: a corrupt or truncated file, a file
//! other than the one announced, a full disk, a failed manifest write.
//! Pages skip the sstables sent whole.

mod common;

use bytes::Bytes;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use varve_storage::fs::Fs;
use varve_storage::fs_sim::SimFs;
use varve_storage::io_mode::NonBlocking;
use varve_storage::*;
use varve_types::CqlType;

const TABLE: TableId = 0x5f;
/// Chunks of this many bytes: several per sstable.
const CHUNK: usize = 100;

fn cmp() -> Arc<ClusteringComparator> {
    ClusteringComparator::new(vec![(CqlType::Int, false)])
}

/// A node's engine on its own simulated file system.
fn node() -> (Arc<SimFs>, Storage) {
    let fs = Arc::new(SimFs::new());
    let o = common::options_on(fs.clone(), Clock::from_fn(|| 1_000_000));
    let s = Storage::open(o, vec![common::table(TABLE, cmp())]).unwrap();
    (fs, s)
}

fn table_dir() -> PathBuf {
    PathBuf::from(format!("/data/ks/t-{TABLE:032x}"))
}

fn key(i: u32) -> PartitionKey {
    PartitionKey::new(Bytes::from(format!("k{i}")))
}

fn row(i: u32) -> Partition {
    let mut p = Partition::default();
    let mut r = Row::default();
    r.cells.insert(
        (0, None),
        Cell::live(1 + i64::from(i), Bytes::from(i.to_be_bytes().to_vec())),
    );
    p.rows.insert(
        ClusteringKey::row(vec![Bytes::copy_from_slice(&7i32.to_be_bytes())], &cmp()),
        r,
    );
    p
}

/// Writes `keys` and flushes them into one sstable.
fn sstable_of(s: &Storage, keys: std::ops::Range<u32>) {
    for i in keys {
        s.apply(TABLE, &key(i), row(i)).unwrap();
    }
    s.flush(TABLE).unwrap();
}

fn readable(s: &Storage, keys: std::ops::Range<u32>) -> usize {
    keys.filter(|i| {
        s.read_partition(TABLE, &key(*i), &[Slice::all(&cmp())])
            .unwrap()
            .is_some()
    })
    .count()
}

/// The files of the table's directory (but `manifest.tmp`, which a
/// failed manifest write leaves and the next one replaces).
fn names(fs: &SimFs) -> Vec<String> {
    fs.list(&table_dir())
        .unwrap()
        .iter()
        .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
        .filter(|n| n != "manifest.tmp")
        .collect()
}

/// Every byte of `held`, chunk by chunk.
fn read_all(held: &HeldSstable) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let chunk = held.read_chunk(out.len() as u64, CHUNK).unwrap();
        if chunk.is_empty() {
            return out;
        }
        out.extend_from_slice(&chunk);
    }
}

fn hold_one(s: &Storage, generation: u64) -> HeldSstable {
    let mut held = s
        .hold_sstables(TABLE, |span| span.generation == generation, 10)
        .unwrap();
    assert_eq!(held.len(), 1);
    held.remove(0)
}

/// `bytes` received by `to` as the file `held` announces, in chunks.
fn receive(to: &Storage, held: &HeldSstable, bytes: &[u8]) -> Result<ReceivedSstable> {
    let mut incoming = to.receive_sstable(TABLE, held.span(), held.file_crc())?;
    for chunk in bytes.chunks(CHUNK) {
        incoming.write(chunk)?;
    }
    to.finish_received(incoming)
}

#[test]
fn spans_name_each_live_sstable_with_its_tokens_size_and_generation() {
    let (_fs, s) = node();
    sstable_of(&s, 0..1);
    sstable_of(&s, 1..5);
    let spans = s.sstable_spans(TABLE).unwrap();
    assert_eq!(
        spans.iter().map(|x| x.generation).collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(spans[0].first_token, key(0).token);
    assert_eq!(spans[0].last_token, key(0).token);
    assert_eq!(spans[0].partitions, 1);
    let tokens: Vec<i64> = (1..5).map(|i| key(i).token).collect();
    assert_eq!(spans[1].first_token, *tokens.iter().min().unwrap());
    assert_eq!(spans[1].last_token, *tokens.iter().max().unwrap());
    assert_eq!(spans[1].partitions, 4);
    assert!(spans[1].size_bytes > spans[0].size_bytes);
    let t = key(0).token;
    let inside = s
        .hold_sstables(TABLE, |span| span.inside(t - 1, t), 10)
        .unwrap();
    assert_eq!(
        inside.len(),
        1,
        "only the one-partition sstable lies inside"
    );
    assert_eq!(
        s.hold_sstables(TABLE, |_| true, 1).unwrap().len(),
        1,
        "limit"
    );
}

#[test]
fn a_held_sstable_reads_back_whole_with_its_whole_file_checksum() {
    let (fs, s) = node();
    sstable_of(&s, 0..20);
    let held = hold_one(&s, 1);
    let bytes = read_all(&held);
    assert_eq!(bytes, fs.read_all(&table_dir().join("1.sst")).unwrap());
    assert_eq!(crc32fast::hash(&bytes), held.file_crc());
    assert_eq!(bytes.len() as u64, held.span().size_bytes);
    assert!(held.read_chunk(bytes.len() as u64 + 1, CHUNK).is_err());
    // The simulated file system never waits: no WouldBlock in a
    // non-blocking scope.
    let _scope = NonBlocking::enter();
    assert_eq!(held.read_chunk(0, CHUNK).unwrap(), bytes[..CHUNK]);
    s.flush_for_streaming(TABLE).unwrap();
}

#[test]
fn compaction_during_a_send_does_not_take_the_held_bytes_away() {
    let (fs, s) = node();
    sstable_of(&s, 0..10);
    sstable_of(&s, 10..20);
    let held = hold_one(&s, 1);
    let first = held.read_chunk(0, CHUNK).unwrap();
    let path = table_dir().join("1.sst");
    let before = fs.read_all(&path).unwrap();
    s.major_compact(TABLE, 1_000_000).unwrap();
    assert!(!fs.exists(&path), "the compaction removed the input's name");
    assert!(!s.table_generations(TABLE).unwrap().contains(&1));
    let bytes = read_all(&held);
    assert_eq!(bytes[..CHUNK], first[..]);
    assert_eq!(
        bytes, before,
        "the held file is read whole after the compaction"
    );
    assert_eq!(crc32fast::hash(&bytes), held.file_crc());
}

#[test]
fn a_received_sstable_is_installed_in_one_manifest_write_and_readable() {
    let (_fs_a, a) = node();
    let (fs_b, b) = node();
    sstable_of(&a, 0..10);
    sstable_of(&a, 10..30);
    sstable_of(&b, 100..101);
    let held: Vec<HeldSstable> = a.hold_sstables(TABLE, |_| true, 10).unwrap();
    let received: Vec<ReceivedSstable> = held
        .iter()
        .map(|h| receive(&b, h, &read_all(h)).unwrap())
        .collect();
    assert_eq!(readable(&b, 0..30), 0, "nothing is live before the install");
    assert_eq!(received[1].partitions(), 20);
    let installed = b.install_received(TABLE, received).unwrap();
    assert_eq!(installed, [2, 3], "fresh generations of the receiver");
    assert_eq!(readable(&b, 0..30), 30);
    assert_eq!(b.table_generations(TABLE).unwrap(), [1, 2, 3]);
    let manifest = String::from_utf8(fs_b.read_all(&table_dir().join("manifest")).unwrap());
    assert!(manifest.unwrap().contains("live 3\n"));
    assert!(!names(&fs_b).iter().any(|n| n.ends_with(".tmp")));
    // A restart finds them.
    drop(b);
    let o = common::options_on(Arc::new(fs_b.kill()), Clock::from_fn(|| 1_000_000));
    let b = Storage::open(o, vec![common::table(TABLE, cmp())]).unwrap();
    assert_eq!(readable(&b, 0..30), 30);
}

/// The receiver's table as it is: generations, files, readable keys.
fn state(s: &Storage, fs: &SimFs) -> (Vec<u64>, Vec<String>, usize) {
    (
        s.table_generations(TABLE).unwrap(),
        names(fs),
        readable(s, 0..20),
    )
}

#[test]
fn a_corrupt_truncated_or_wrong_file_is_refused_and_leaves_nothing() {
    let (_fs_a, a) = node();
    let (fs_b, b) = node();
    sstable_of(&a, 0..20);
    sstable_of(&b, 100..101);
    let before = state(&b, &fs_b);
    let held = hold_one(&a, 1);
    let good = read_all(&held);

    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x01;
    let err = receive(&b, &held, &flipped).err().unwrap();
    assert!(err.to_string().contains("whole-file checksum"), "{err}");
    assert_eq!(state(&b, &fs_b), before);

    let err = receive(&b, &held, &good[..good.len() - 1]).err().unwrap();
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
    assert!(err.to_string().contains("truncated"), "{err}");
    assert_eq!(state(&b, &fs_b), before);

    let mut longer = good.clone();
    longer.push(0);
    assert!(receive(&b, &held, &longer).is_err());
    assert_eq!(state(&b, &fs_b), before);

    // Right bytes, but announced as another sstable: refused once open.
    let mut wrong = *held.span();
    wrong.first_token -= 1;
    let mut incoming = b.receive_sstable(TABLE, &wrong, held.file_crc()).unwrap();
    incoming.write(&good).unwrap();
    let err = b.finish_received(incoming).err().unwrap();
    assert!(err.to_string().contains("not the one announced"), "{err}");
    assert_eq!(state(&b, &fs_b), before);

    // An incoming file given up half-way goes too.
    let mut incoming = b
        .receive_sstable(TABLE, held.span(), held.file_crc())
        .unwrap();
    incoming.write(&good[..CHUNK]).unwrap();
    drop(incoming);
    assert_eq!(state(&b, &fs_b), before);
}

#[test]
fn a_full_disk_fails_the_receive_and_leaves_nothing() {
    let (_fs_a, a) = node();
    let (fs_b, b) = node();
    sstable_of(&a, 0..20);
    let before = state(&b, &fs_b);
    let held = hold_one(&a, 1);
    let good = read_all(&held);
    fs_b.fail_writes_after(CHUNK as u64 * 2 + 10);
    let err = receive(&b, &held, &good).err().unwrap();
    let Error::Io { source, .. } = &err else {
        panic!("{err}");
    };
    assert_eq!(source.raw_os_error(), Some(28), "ENOSPC: {err}");
    assert_eq!(state(&b, &fs_b), before);
    fs_b.set_disk_full(false);
    let received = receive(&b, &held, &good).unwrap();
    b.install_received(TABLE, vec![received]).unwrap();
    assert_eq!(readable(&b, 0..20), 20, "the disk has room again");
}

#[test]
fn a_failed_install_leaves_nothing() {
    let (_fs_a, a) = node();
    let (fs_b, b) = node();
    sstable_of(&a, 0..20);
    sstable_of(&b, 100..101);
    let before = state(&b, &fs_b);
    let held = hold_one(&a, 1);
    let received = receive(&b, &held, &read_all(&held)).unwrap();
    fs_b.set_disk_full(true);
    let err = b.install_received(TABLE, vec![received]).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
    fs_b.set_disk_full(false);
    assert_eq!(state(&b, &fs_b), before);
    // The next install works, and the table opens again as it was.
    let received = receive(&b, &held, &read_all(&held)).unwrap();
    b.install_received(TABLE, vec![received]).unwrap();
    assert_eq!(readable(&b, 0..20), 20);
}

#[test]
fn pages_skip_the_sstables_sent_whole() {
    let (_fs, s) = node();
    sstable_of(&s, 0..10);
    sstable_of(&s, 10..20);
    // Key 3 again, in the memtable: it is not only in the skipped file.
    s.apply(TABLE, &key(3), row(3)).unwrap();
    let skip: BTreeSet<u64> = [1].into();
    let all = TokenBound::Unbounded;
    let keys = s.scan_keys_skipping(TABLE, &all, &all, 100, &skip).unwrap();
    let expected: BTreeSet<PartitionKey> = (10..20).chain([3]).map(key).collect();
    assert_eq!(keys.into_iter().collect::<BTreeSet<_>>(), expected);
    let read = |i| {
        s.read_partition_skipping(TABLE, &key(i), &[Slice::all(&cmp())], &skip)
            .unwrap()
    };
    assert!(read(0).is_none());
    assert!(read(3).is_some() && read(15).is_some());
    let none = BTreeSet::new();
    assert_eq!(
        s.scan_keys_skipping(TABLE, &all, &all, 100, &none).unwrap(),
        s.scan_keys(TABLE, &all, &all, 100).unwrap()
    );
}

#[test]
fn on_a_real_disk_a_flush_for_streaming_waits_only_where_it_may() {
    let dir = std::env::temp_dir().join(format!(
        "varve-stream-files-{}-{}",
        std::process::id(),
        varve_types::time::now_micros()
    ));
    let mut o = common::options(Clock::from_fn(|| 1_000_000));
    o.fs = Arc::new(varve_storage::fs::RealFs::default());
    o.data_dir = dir.join("data");
    o.commitlog_dir = dir.join("commitlog");
    let s = Storage::open(o, vec![common::table(TABLE, cmp())]).unwrap();
    s.apply(TABLE, &key(1), row(1)).unwrap();
    {
        let _scope = NonBlocking::enter();
        let err = s.flush_for_streaming(TABLE).unwrap_err();
        assert!(matches!(err, Error::WouldBlock { .. }), "{err}");
    }
    s.flush_for_streaming(TABLE).unwrap();
    assert_eq!(s.sstable_spans(TABLE).unwrap().len(), 1);
    drop(s);
    let _ = std::fs::remove_dir_all(Path::new(&dir));
}
