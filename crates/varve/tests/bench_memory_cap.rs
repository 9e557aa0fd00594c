//! `varve bench --memory-cap` end to end at the level of one node: a real
//! `varve server` started by the bench's embedded-node code in a fresh
//! capped cgroup runs inside it from the start (its /proc/PID/cgroup, and
//! the limit it reports in its log), and the cgroup is gone once the run's
//! cgroups are removed. Skipped, saying why, where the cgroup v1 memory
//! controller is missing or the test does not run as root.

use std::path::Path;

use varve_bench::cgroup::{self, RunCgroups};
use varve_bench::node::{self, EmbeddedNode};

/// The cap of the test's node: small, but a debug node starts in it.
const CAP_BYTES: u64 = 256 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capped_node_runs_in_its_own_cgroup_which_is_removed_afterwards() {
    let root = Path::new(cgroup::MEMORY_ROOT);
    if let Err(why) = cgroup::check_available(root) {
        eprintln!("skipped: {why}");
        return;
    }
    let out = std::env::temp_dir().join(format!("varve-cap-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let config = out.join("node.yaml");
    std::fs::write(&config, node::default_config(Some("1MiB"))).unwrap();
    let name = cgroup::run_name(&out, std::process::id());
    let cgroups = RunCgroups::create(root, &name, 1, CAP_BYTES).unwrap();
    let dir = cgroups.paths().dir.clone();
    let exe = Path::new(env!("CARGO_BIN_EXE_varve"));
    let node = EmbeddedNode::start(exe, &out, &config, cgroups.node(1))
        .await
        .expect("the node starts under the cap");
    let pid = node.pid().unwrap();
    let own = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    assert!(
        own.lines()
            .any(|l| l.ends_with(&format!("memory:/{name}/node1"))),
        "{own}"
    );
    let procs = std::fs::read_to_string(dir.join("node1/cgroup.procs")).unwrap();
    assert_eq!(procs.trim(), pid.to_string());
    node.stop().await.expect("drains and exits 0");
    let log = std::fs::read_to_string(out.join("server.log")).unwrap();
    assert!(
        log.contains(&format!("cgroup memory limit {} MiB", CAP_BYTES >> 20)),
        "the node sized its budgets to the cap:\n{log}"
    );
    let usage = cgroups.usage();
    assert_eq!(usage.len(), 1);
    assert_eq!(usage[0].cap_bytes, CAP_BYTES);
    assert!(
        usage[0]
            .peak_bytes
            .is_some_and(|p| p > 1 << 20 && p <= CAP_BYTES),
        "{usage:?}"
    );
    assert_eq!(usage[0].oom_kills, Some(0));
    cgroups.remove().unwrap();
    assert!(!dir.exists(), "{} is removed", dir.display());
    std::fs::remove_dir_all(&out).unwrap();
}
