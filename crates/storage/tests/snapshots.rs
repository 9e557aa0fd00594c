//! Snapshots, auto_snapshot and import on the real file system (hard
//! links are checked by inode): a snapshot is links of the live sstables
//! that outlive compaction and DROP; clearing removes them; a good sstable
//! imports and is readable at once, a damaged one is refused with nothing
//! installed.

mod common;

use bytes::Bytes;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use varve_storage::fs::RealFs;
use varve_storage::snapshot_manifest::{SnapshotManifest, MAX_SNAPSHOT_TAG_LEN};
use varve_storage::*;
use varve_types::CqlType;

const TABLE: TableId = 0x51;
/// The same table created again after a DROP (a new id, a new directory).
const RECREATED: TableId = 0x52;

/// A fresh directory for one test, removed when dropped.
struct TestDir(PathBuf);

impl TestDir {
    fn new(name: &str) -> TestDir {
        let dir = std::env::temp_dir().join(format!(
            "varve-snapshots-{name}-{}-{}",
            std::process::id(),
            varve_types::time::now_micros()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TestDir(dir)
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn cmp() -> Arc<ClusteringComparator> {
    ClusteringComparator::new(vec![(CqlType::Int, false)])
}

fn desc(id: TableId) -> TableDescriptor {
    common::table(id, cmp())
}

fn open(dir: &Path, tables: Vec<TableDescriptor>) -> Storage {
    let mut o = common::options(Clock::system());
    o.fs = Arc::new(RealFs::default());
    o.data_dir = dir.join("data");
    o.commitlog_dir = dir.join("commitlog");
    Storage::open(o, tables).unwrap()
}

fn table_dir(root: &Path, id: TableId) -> PathBuf {
    root.join("data/ks").join(format!("t-{id:032x}"))
}

fn key(i: u32) -> PartitionKey {
    PartitionKey::new(Bytes::from(format!("k{i}")))
}

/// One row (clustering `i`) holding one cell of value `i`.
fn row(i: u32) -> Partition {
    let mut p = Partition::default();
    let mut r = Row::default();
    r.cells.insert(
        (0, None),
        Cell::live(1 + i64::from(i), Bytes::from(i.to_be_bytes().to_vec())),
    );
    p.rows.insert(
        ClusteringKey::row(
            vec![Bytes::copy_from_slice(&(i as i32).to_be_bytes())],
            &cmp(),
        ),
        r,
    );
    p
}

fn write(s: &Storage, id: TableId, keys: std::ops::Range<u32>) {
    for i in keys {
        s.apply(id, &key(i), row(i)).unwrap();
    }
}

/// How many of `keys` read back with their own value.
fn readable(s: &Storage, id: TableId, keys: std::ops::Range<u32>) -> usize {
    keys.filter(|i| {
        let found = s
            .read_live(id, &key(*i), &[Slice::all(&cmp())], false, 0, 10)
            .unwrap();
        found.is_some_and(|(p, _, _)| {
            p.rows
                .values()
                .next()
                .and_then(|r| r.cells.values().next())
                .map(|c| c.value.clone())
                == Some(Bytes::from(i.to_be_bytes().to_vec()))
        })
    })
    .count()
}

fn names(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

fn inode(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().ino()
}

#[test]
fn a_snapshot_is_hard_links_of_the_live_sstables_with_a_manifest() {
    let root = TestDir::new("links");
    let s = open(&root.0, vec![desc(TABLE)]);
    s.set_table_schema_cql(
        TABLE,
        "CREATE TABLE ks.t (k text, c int, v blob, PRIMARY KEY (k, c))",
    );
    write(&s, TABLE, 0..10);
    s.flush(TABLE).unwrap();
    write(&s, TABLE, 10..20); // left in the memtable: the snapshot flushes it
    let snap = s.snapshot(TABLE, "t1").unwrap();
    let dir = table_dir(&root.0, TABLE);
    assert_eq!(snap, dir.join("snapshots/t1"));
    assert_eq!(
        names(&snap),
        ["1.sst", "2.sst", "manifest.json", "schema.cql"]
    );
    for f in ["1.sst", "2.sst"] {
        assert_eq!(
            inode(&snap.join(f)),
            inode(&dir.join(f)),
            "{f} is a hard link"
        );
    }
    let manifest =
        SnapshotManifest::decode(&std::fs::read(snap.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest.files, ["1.sst", "2.sst"]);
    assert_eq!(
        (manifest.keyspace.as_str(), manifest.table.as_str()),
        ("ks", "t")
    );
    assert_eq!(manifest.table_id, TABLE);
    let schema = std::fs::read_to_string(snap.join("schema.cql")).unwrap();
    assert!(
        schema.starts_with("CREATE TABLE ks.t (") && schema.ends_with(");\n"),
        "{schema}"
    );

    let err = s.snapshot(TABLE, "t1").unwrap_err();
    assert_eq!(err.to_string(), "snapshot t1 already exists for ks.t");

    let list = s.list_snapshots(None).unwrap();
    assert_eq!(list.len(), 1);
    let info = &list[0];
    assert_eq!(
        (
            info.tag.as_str(),
            info.keyspace.as_str(),
            info.table.as_str()
        ),
        ("t1", "ks", "t")
    );
    assert_eq!(info.sstables, 2);
    let sstable_bytes: u64 = ["1.sst", "2.sst"]
        .iter()
        .map(|f| std::fs::metadata(dir.join(f)).unwrap().len())
        .sum();
    let extra = ["manifest.json", "schema.cql"]
        .iter()
        .map(|f| std::fs::metadata(snap.join(f)).unwrap().len())
        .sum::<u64>();
    assert_eq!(info.size_on_disk_bytes, sstable_bytes + extra);
    assert_eq!(
        info.true_size_bytes, extra,
        "the sstables are shared with the live ones"
    );
    assert!(info.created_at_millis.is_some());
}

/// A tag of [`MAX_SNAPSHOT_TAG_LEN`] bytes is taken; one byte more, or a
/// tag with `/` or `..`, is refused before anything is written.
#[test]
fn snapshot_tags_are_checked_at_n_and_n_plus_1() {
    let root = TestDir::new("tags");
    let s = open(&root.0, vec![desc(TABLE)]);
    write(&s, TABLE, 0..3);
    let n = "x".repeat(MAX_SNAPSHOT_TAG_LEN);
    s.snapshot(TABLE, &n).unwrap();
    for bad in [
        "x".repeat(MAX_SNAPSHOT_TAG_LEN + 1),
        "a/b".into(),
        "..".into(),
        String::new(),
    ] {
        let err = s.snapshot(TABLE, &bad).unwrap_err();
        assert!(matches!(err, Error::Refused(_)), "{bad:?}: {err}");
    }
    assert_eq!(names(&table_dir(&root.0, TABLE).join("snapshots")), [n]);
}

#[test]
fn a_snapshot_outlives_compaction_and_drop_and_clearing_removes_it() {
    let root = TestDir::new("survives");
    let s = open(&root.0, vec![desc(TABLE)]);
    for batch in 0..3 {
        write(&s, TABLE, batch * 10..batch * 10 + 10);
        s.flush(TABLE).unwrap();
    }
    let snap = s.snapshot(TABLE, "before").unwrap();
    s.major_compact(TABLE, 0).unwrap();
    let dir = table_dir(&root.0, TABLE);
    assert!(!dir.join("1.sst").exists(), "compaction removed its inputs");
    assert!(std::fs::metadata(snap.join("1.sst")).unwrap().nlink() == 1);
    let info = s.list_snapshots(Some("ks")).unwrap().remove(0);
    assert_eq!(
        info.true_size_bytes, info.size_on_disk_bytes,
        "nothing shared any more"
    );

    s.drop_table(TABLE).unwrap();
    let left = names(&dir.join("snapshots"));
    assert_eq!(left.len(), 2, "{left:?}");
    assert_eq!(left[0], "before");
    assert!(
        left[1].starts_with("dropped-") && left[1].ends_with("-t"),
        "{left:?}"
    );
    assert_eq!(
        names(&dir),
        ["snapshots"],
        "the drop deleted the table's own files"
    );
    let dropped = dir.join("snapshots").join(&left[1]);
    assert_eq!(
        names(&dropped),
        ["4.sst", "manifest.json"],
        "the compacted sstable"
    );

    // Both snapshots of the dropped table are listed, with their sizes.
    let list = s.list_snapshots(None).unwrap();
    assert_eq!(list.len(), 2);
    assert!(list.iter().all(|i| i.table == "t" && i.true_size_bytes > 0));

    assert_eq!(s.clear_snapshots(Some("ks"), Some("before")).unwrap(), 1);
    assert_eq!(names(&dir.join("snapshots")), [left[1].clone()]);
    assert_eq!(s.clear_snapshots(None, None).unwrap(), 1);
    assert!(
        !dir.exists(),
        "a dropped table's empty directory goes with its last snapshot"
    );
    assert!(s.list_snapshots(None).unwrap().is_empty());
}

#[test]
fn truncate_snapshots_first_unless_auto_snapshot_is_off() {
    let root = TestDir::new("truncate");
    let s = open(&root.0, vec![desc(TABLE)]);
    assert!(s.auto_snapshot(), "on by default, as in Cassandra");
    write(&s, TABLE, 0..5);
    s.truncate(TABLE).unwrap();
    assert_eq!(readable(&s, TABLE, 0..5), 0);
    let list = s.list_snapshots(None).unwrap();
    assert_eq!(list.len(), 1);
    assert!(list[0].tag.starts_with("truncated-") && list[0].tag.ends_with("-t"));
    assert_eq!(list[0].sstables, 1, "the memtable was flushed into it");

    s.set_auto_snapshot(false);
    write(&s, TABLE, 0..5);
    s.truncate(TABLE).unwrap();
    s.drop_table(TABLE).unwrap();
    assert_eq!(s.list_snapshots(None).unwrap().len(), 1, "no new snapshot");
}

/// Copies a snapshot's sstables to a new directory (as an operator
/// would), returning it.
fn copy_sstables(from: &Path, to: &Path) -> PathBuf {
    std::fs::create_dir_all(to).unwrap();
    for name in names(from).iter().filter(|n| n.ends_with(".sst")) {
        std::fs::copy(from.join(name), to.join(name)).unwrap();
    }
    to.to_path_buf()
}

#[test]
fn an_imported_snapshot_is_readable_at_once_and_moved_by_default() {
    let root = TestDir::new("import");
    let s = open(&root.0, vec![desc(TABLE)]);
    write(&s, TABLE, 0..20);
    s.flush(TABLE).unwrap();
    write(&s, TABLE, 20..30);
    let snap = s.snapshot(TABLE, "t1").unwrap();
    let staged = copy_sstables(&snap, &root.0.join("staged"));
    s.drop_table(TABLE).unwrap();

    s.create_table(desc(RECREATED)).unwrap();
    write(&s, RECREATED, 100..101); // a live sstable generation 1 already
    s.flush(RECREATED).unwrap();
    let options = ImportOptions {
        copy_data: false,
        column_id_limit: Some(1),
    };
    let result = s.import_sstables(RECREATED, &staged, &options).unwrap();
    assert_eq!(result.partitions, 30);
    let generations: Vec<u64> = result.sstables.iter().map(|(_, g)| *g).collect();
    assert_eq!(generations, [2, 3], "fresh generations after the live one");
    assert_eq!(readable(&s, RECREATED, 0..30), 30);
    assert_eq!(readable(&s, RECREATED, 100..101), 1);
    assert_eq!(s.table_generations(RECREATED).unwrap(), [1, 2, 3]);
    assert!(names(&staged).is_empty(), "moved, as Cassandra does");

    // Compaction sees them, and a restart finds them live.
    s.major_compact(RECREATED, 0).unwrap();
    assert_eq!(s.table_generations(RECREATED).unwrap().len(), 1);
    drop(s);
    let s = open(&root.0, vec![desc(RECREATED)]);
    assert_eq!(readable(&s, RECREATED, 0..30), 30);
}

#[test]
fn copy_data_keeps_the_sources() {
    let root = TestDir::new("copy");
    let s = open(&root.0, vec![desc(TABLE), desc(RECREATED)]);
    write(&s, TABLE, 0..5);
    let snap = s.snapshot(TABLE, "t1").unwrap();
    let options = ImportOptions {
        copy_data: true,
        column_id_limit: None,
    };
    s.import_sstables(RECREATED, &snap, &options).unwrap();
    assert_eq!(readable(&s, RECREATED, 0..5), 5);
    assert_eq!(names(&snap), ["1.sst", "manifest.json"]);
}

/// Everything about the table as an import could change it: its live
/// generations and the files of its directory.
fn table_state(s: &Storage, root: &Path, id: TableId) -> (Vec<u64>, Vec<String>, Vec<u8>) {
    let dir = table_dir(root, id);
    (
        s.table_generations(id).unwrap(),
        names(&dir),
        std::fs::read(dir.join("manifest")).unwrap_or_default(),
    )
}

#[test]
fn a_truncated_or_corrupt_sstable_is_refused_and_nothing_is_installed() {
    let root = TestDir::new("refused");
    let s = open(&root.0, vec![desc(TABLE), desc(RECREATED)]);
    for batch in 0..2 {
        write(&s, TABLE, batch * 10..batch * 10 + 10);
        s.flush(TABLE).unwrap();
    }
    let snap = s.snapshot(TABLE, "t1").unwrap();
    write(&s, RECREATED, 50..51);
    s.flush(RECREATED).unwrap();
    let before = table_state(&s, &root.0, RECREATED);
    let options = ImportOptions::default();

    // The second of two files cut short: the first, good, is not installed either.
    let cut = copy_sstables(&snap, &root.0.join("cut"));
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(cut.join("2.sst"))
        .unwrap();
    f.set_len(f.metadata().unwrap().len() - 100).unwrap();
    let err = s.import_sstables(RECREATED, &cut, &options).unwrap_err();
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
    assert!(err.to_string().contains("2.sst"), "{err}");
    assert_eq!(table_state(&s, &root.0, RECREATED), before);
    assert_eq!(names(&cut), ["1.sst", "2.sst"], "the sources stay");

    // One flipped byte in the data.
    let flipped = copy_sstables(&snap, &root.0.join("flipped"));
    let mut bytes = std::fs::read(flipped.join("1.sst")).unwrap();
    bytes[40] ^= 0x10;
    std::fs::write(flipped.join("1.sst"), bytes).unwrap();
    let err = s
        .import_sstables(RECREATED, &flipped, &options)
        .unwrap_err();
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
    assert_eq!(table_state(&s, &root.0, RECREATED), before);
    assert_eq!(readable(&s, RECREATED, 0..20), 0);

    // An empty directory, and the table's own directory.
    std::fs::create_dir_all(root.0.join("empty")).unwrap();
    let err = s
        .import_sstables(RECREATED, &root.0.join("empty"), &options)
        .unwrap_err();
    assert!(err.to_string().contains("no sstables"), "{err}");
    let own = table_dir(&root.0, RECREATED);
    let err = s.import_sstables(RECREATED, &own, &options).unwrap_err();
    assert!(err.to_string().contains("own directory"), "{err}");
    assert_eq!(table_state(&s, &root.0, RECREATED), before);
}

/// An sstable of a table with another clustering, or with columns the
/// table never had, is refused.
#[test]
fn an_sstable_of_another_shape_is_refused() {
    let root = TestDir::new("shape");
    let flat = TableDescriptor {
        comparator: ClusteringComparator::new(Vec::new()),
        ..desc(RECREATED)
    };
    let s = open(&root.0, vec![desc(TABLE), flat]);
    write(&s, TABLE, 0..3);
    let snap = s.snapshot(TABLE, "t1").unwrap();
    let options = ImportOptions {
        copy_data: true,
        column_id_limit: None,
    };
    let err = s.import_sstables(RECREATED, &snap, &options).unwrap_err();
    assert!(
        err.to_string()
            .contains("1 clustering values where the table has 0"),
        "{err}"
    );

    s.create_table(desc(0x53)).unwrap();
    let narrow = ImportOptions {
        copy_data: true,
        column_id_limit: Some(0),
    };
    let err = s.import_sstables(0x53, &snap, &narrow).unwrap_err();
    assert!(err.to_string().contains("column id 0"), "{err}");
    assert!(s.table_generations(0x53).unwrap().is_empty());
}

/// When the auto_snapshot cannot be taken (a full disk fails its flush),
/// TRUNCATE fails and removes nothing, and DROP forgets the table but keeps
/// its files.
#[test]
fn a_failed_auto_snapshot_loses_nothing() {
    use varve_storage::fs::Fs;
    let fs = Arc::new(varve_storage::fs_sim::SimFs::new());
    let s = Storage::open(
        common::options_on(fs.clone(), Clock::system()),
        vec![desc(TABLE)],
    )
    .unwrap();
    write(&s, TABLE, 0..5);
    s.flush(TABLE).unwrap();
    write(&s, TABLE, 5..10);
    fs.set_disk_full(true);
    let err = s.truncate(TABLE).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
    assert_eq!(readable(&s, TABLE, 0..10), 10, "nothing truncated");
    let dir = PathBuf::from(format!("/data/ks/t-{TABLE:032x}"));
    assert!(
        s.list_snapshots(None).unwrap().is_empty(),
        "no half snapshot"
    );

    s.drop_table(TABLE).unwrap();
    assert!(
        s.table_generations(TABLE).is_err(),
        "the table is forgotten"
    );
    assert!(fs.exists(&dir.join("1.sst")), "its sstable is kept");
    assert!(fs.exists(&dir.join("manifest")));
}
