//! The hint store: files per target, budgets at N and N + 1, the hint
//! window, delivery bookkeeping and reopening after a restart.

use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;

use super::file;
use super::store::HintStore;
use super::{HintsConfig, HintsMetrics};
use crate::env::{Clock, SystemClock};
use crate::net::HostId;

struct Dir(PathBuf);

impl Dir {
    fn new(test: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!("varve-hints-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Dir(dir)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const A: HostId = HostId([1; 16]);
const B: HostId = HostId([2; 16]);

/// The bytes one stored hint of `mutation` takes on disk.
fn entry_bytes(mutation: &[u8]) -> u64 {
    file::entry(&[&[0u8; 8][..], mutation].concat()).len() as u64
}

#[test]
fn hints_are_kept_per_target_and_read_back_in_order() {
    let dir = Dir::new("order");
    let store = HintStore::open(HintsConfig::new(dir.0.clone()), HintsMetrics::detached()).unwrap();
    assert!(store.store(A, 1, &Bytes::from_static(b"a1")));
    assert!(store.store(B, 2, &Bytes::from_static(b"b1")));
    assert!(store.store(A, 3, &Bytes::from_static(b"a2")));
    assert_eq!(store.targets(), vec![A, B]);
    let files = store.take(A);
    assert_eq!(files.len(), 1);
    let c = file::read(&files[0]).unwrap();
    assert_eq!(c.target, A);
    let bodies: Vec<&[u8]> = c.payloads.iter().map(|p| &p[8..]).collect();
    assert_eq!(bodies, vec![&b"a1"[..], &b"a2"[..]]);
    assert_eq!(
        i64::from_be_bytes(c.payloads[1][..8].try_into().unwrap()),
        3
    );
    // New hints while a file is being delivered go to a new file.
    assert!(store.store(A, 4, &Bytes::from_static(b"a3")));
    store.delivered(A, &files[0]);
    assert!(!files[0].exists());
    assert_eq!(store.take(A).len(), 1, "the newer file is still to deliver");
    assert_eq!(store.metrics.created.get(), 4);
}

#[test]
fn the_per_host_budget_holds_at_n_and_refuses_n_plus_one() {
    let dir = Dir::new("budget");
    let m = Bytes::from_static(b"mutation");
    let one = entry_bytes(&m);
    let mut config = HintsConfig::new(dir.0.clone());
    config.max_bytes_per_host = 3 * one;
    let store = HintStore::open(config, HintsMetrics::detached()).unwrap();
    for _ in 0..3 {
        assert!(store.store(A, 0, &m));
    }
    assert!(!store.store(A, 0, &m), "a fourth passes the budget");
    assert!(store.store(B, 0, &m), "another target has its own budget");
    assert_eq!(store.metrics.dropped.get(), 1);
}

#[test]
fn the_total_budget_holds_at_n_and_refuses_n_plus_one() {
    let dir = Dir::new("total");
    let m = Bytes::from_static(b"mutation");
    let mut config = HintsConfig::new(dir.0.clone());
    config.max_bytes_total = 2 * entry_bytes(&m);
    let store = HintStore::open(config, HintsMetrics::detached()).unwrap();
    assert!(store.store(A, 0, &m));
    assert!(store.store(B, 0, &m));
    assert!(!store.store(A, 0, &m));
    assert_eq!(store.total_bytes(), 2 * entry_bytes(&m));
}

#[test]
fn a_node_down_longer_than_the_window_gets_no_hints() {
    let dir = Dir::new("window");
    let mut config = HintsConfig::new(dir.0.clone());
    config.max_window = Duration::from_secs(60);
    let store = HintStore::open(config, HintsMetrics::detached()).unwrap();
    let now = SystemClock.now();
    assert!(store.should_hint(A, now), "never seen DOWN");
    store.set_down(A, Some(now));
    assert!(store.should_hint(A, now + Duration::from_secs(59)));
    assert!(!store.should_hint(A, now + Duration::from_secs(60)));
    store.set_down(A, None);
    assert!(
        store.should_hint(A, now + Duration::from_secs(600)),
        "UP again"
    );
    let mut off = HintsConfig::new(dir.0.clone());
    off.enabled = false;
    let off = HintStore::open(off, HintsMetrics::detached()).unwrap();
    assert!(!off.should_hint(B, now));
}

#[test]
fn hints_survive_a_restart_and_truncate_removes_them() {
    let dir = Dir::new("restart");
    {
        let store =
            HintStore::open(HintsConfig::new(dir.0.clone()), HintsMetrics::detached()).unwrap();
        assert!(store.store(A, 7, &Bytes::from_static(b"kept")));
        store.flush();
    }
    let store = HintStore::open(HintsConfig::new(dir.0.clone()), HintsMetrics::detached()).unwrap();
    assert_eq!(store.targets(), vec![A]);
    let files = store.take(A);
    assert_eq!(file::read(&files[0]).unwrap().payloads.len(), 1);
    assert!(store.store(A, 8, &Bytes::from_static(b"more")));
    assert_ne!(
        store.take(A).last(),
        files.last(),
        "a new file, not the old one reopened"
    );
    assert_eq!(store.truncate(), 2);
    assert!(store.targets().is_empty());
    assert_eq!(store.total_bytes(), 0);
}
