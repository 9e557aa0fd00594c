//! Unit tests of the simulated file system's durability semantics.

use super::*;

fn setup() -> (SimFs, PathBuf) {
    let fs = SimFs::new();
    let dir = PathBuf::from("/data");
    fs.create_dir_all(&dir).unwrap();
    (fs, dir)
}

fn write(fs: &SimFs, path: &Path, bytes: &[u8], sync: bool) {
    let mut f = fs.create(path).unwrap();
    f.write_all(bytes).unwrap();
    if sync {
        f.sync().unwrap();
    }
}

#[test]
fn unsynced_bytes_are_lost_on_power_loss() {
    let (fs, dir) = setup();
    let a = dir.join("a");
    let mut f = fs.create(&a).unwrap();
    f.write_all(b"durable").unwrap();
    f.sync().unwrap();
    f.write_all(b"-pending").unwrap();
    fs.sync_dir(&dir).unwrap();
    assert_eq!(fs.read_all(&a).unwrap(), b"durable-pending");
    let fs = fs.power_loss();
    assert_eq!(fs.read_all(&a).unwrap(), b"durable");
}

#[test]
fn kill_keeps_everything() {
    let (fs, dir) = setup();
    let a = dir.join("a");
    write(&fs, &a, b"pending", false);
    let fs = fs.kill();
    assert_eq!(fs.read_all(&a).unwrap(), b"pending");
}

#[test]
fn a_created_file_needs_a_directory_sync() {
    let (fs, dir) = setup();
    let a = dir.join("a");
    write(&fs, &a, b"x", true);
    let fs2 = fs.power_loss();
    assert!(!fs2.exists(&a));
    write(&fs2, &a, b"x", true);
    fs2.sync_dir(&dir).unwrap();
    let fs3 = fs2.power_loss();
    assert_eq!(fs3.read_all(&a).unwrap(), b"x");
}

#[test]
fn renames_and_removes_need_a_directory_sync() {
    let (fs, dir) = setup();
    let (a, b) = (dir.join("a"), dir.join("b"));
    write(&fs, &a, b"x", true);
    fs.sync_dir(&dir).unwrap();
    fs.rename(&a, &b).unwrap();
    let fs = fs.power_loss();
    assert!(fs.exists(&a) && !fs.exists(&b));
    fs.rename(&a, &b).unwrap();
    fs.sync_dir(&dir).unwrap();
    fs.remove(&b).unwrap();
    let fs = fs.power_loss();
    assert_eq!(fs.read_all(&b).unwrap(), b"x");
    fs.remove(&b).unwrap();
    fs.sync_dir(&dir).unwrap();
    let fs = fs.power_loss();
    assert!(!fs.exists(&b));
    assert!(fs.list(&dir).unwrap().is_empty());
}

#[test]
fn handles_of_a_dead_process_fail() {
    let (fs, dir) = setup();
    let a = dir.join("a");
    let mut f = fs.create(&a).unwrap();
    let fs2 = fs.kill();
    assert!(f.write_all(b"x").is_err());
    assert!(f.sync().is_err());
    assert!(fs.create(&dir.join("b")).is_err());
    assert!(fs2.create(&dir.join("b")).is_ok());
}

#[test]
fn a_full_disk_fails_writes_with_enospc() {
    let (fs, dir) = setup();
    let mut f = fs.create(&dir.join("a")).unwrap();
    fs.set_disk_full(true);
    let e = f.write_all(b"abc").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(ENOSPC));
    assert_eq!(f.len(), 0);
    fs.set_disk_full(false);
    f.write_all(b"abc").unwrap();
    fs.fail_writes_after(2);
    assert!(f.write_all(b"defg").is_err());
    assert_eq!(fs.read_all(&dir.join("a")).unwrap(), b"abcde");
    assert!(f.write_all(b"h").is_err());
    fs.set_disk_full(false);
    f.write_all(b"h").unwrap();
    assert_eq!(f.len(), 6);
}

#[test]
fn corrupt_flips_a_byte_durably() {
    let (fs, dir) = setup();
    let a = dir.join("a");
    write(&fs, &a, b"abc", true);
    fs.sync_dir(&dir).unwrap();
    fs.corrupt(&a, 1).unwrap();
    assert!(fs.corrupt(&a, 3).is_err());
    let fs = fs.power_loss();
    assert_eq!(fs.read_all(&a).unwrap(), vec![b'a', !b'b', b'c']);
    let r = fs.open_read(&a).unwrap();
    let mut buf = [0u8; 2];
    r.read_exact_at(1, &mut buf).unwrap();
    assert!(r.read_exact_at(2, &mut buf).is_err());
}

#[test]
fn list_is_sorted_and_per_directory() {
    let (fs, dir) = setup();
    fs.create_dir_all(&dir.join("sub")).unwrap();
    for n in ["c", "a", "b"] {
        write(&fs, &dir.join(n), b"", false);
    }
    write(&fs, &dir.join("sub").join("z"), b"", false);
    let names: Vec<_> = fs.list(&dir).unwrap();
    assert_eq!(
        names,
        vec![dir.join("a"), dir.join("b"), dir.join("c"), dir.join("sub")]
    );
    assert!(fs.list(Path::new("/nope")).is_err());
    assert!(fs.create(Path::new("/nope/x")).is_err());
}

#[test]
fn lengths_report_durable_and_current() {
    let (fs, dir) = setup();
    let a = dir.join("a");
    let mut f = fs.create(&a).unwrap();
    f.write_all(b"abcd").unwrap();
    assert_eq!(fs.lengths(&a), Some((4, 0)));
    f.sync().unwrap();
    fs.sync_dir(&dir).unwrap();
    f.write_all(b"ef").unwrap();
    assert_eq!(fs.lengths(&a), Some((6, 4)));
    fs.truncate(&a, 2).unwrap();
    assert_eq!(fs.lengths(&a), Some((2, 2)));
}

/// A hard link names the same inode (same identity, and the bytes outlive
/// the first name's removal); like any name, it is lost on a power loss
/// until its directory is synced.
#[test]
fn hard_links_share_the_file_and_wait_for_the_directory_sync() {
    let (fs, dir) = setup();
    let snap = dir.join("snap");
    fs.create_dir_all(&snap).unwrap();
    let a = dir.join("a");
    write(&fs, &a, b"bytes", true);
    fs.sync_dir(&dir).unwrap();
    let b = snap.join("a");
    fs.hard_link(&a, &b).unwrap();
    assert_eq!(
        fs.metadata(&a).unwrap().identity,
        fs.metadata(&b).unwrap().identity
    );
    assert!(fs.hard_link(&a, &b).is_err(), "the name is taken");
    let lost = fs.kill().power_loss();
    assert!(!lost.exists(&b), "not synced: gone");
    let fs = lost;
    fs.hard_link(&a, &b).unwrap();
    fs.sync_dir(&snap).unwrap();
    fs.remove(&a).unwrap();
    fs.sync_dir(&dir).unwrap();
    let fs = fs.power_loss();
    assert_eq!(fs.read_all(&b).unwrap(), b"bytes");
    assert_eq!(fs.metadata(&b).unwrap().len, 5);
    assert!(fs.metadata(&snap).unwrap().is_dir);
    assert!(fs.remove_dir(&snap).is_err(), "not empty");
    fs.remove(&b).unwrap();
    fs.remove_dir(&snap).unwrap();
    assert!(!fs.exists(&snap));
}
