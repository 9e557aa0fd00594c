//! The cap's parsing and naming, and real cgroups where this machine has
//! the v1 memory controller and the test runs as root.

use super::*;

#[test]
fn sizes_parse_with_binary_units_and_a_floor() {
    assert_eq!(parse_size("2GiB").unwrap(), 2 << 30);
    assert_eq!(parse_size("2g").unwrap(), 2 << 30);
    assert_eq!(parse_size("1536MiB").unwrap(), 1536 << 20);
    assert_eq!(parse_size("1.5G").unwrap(), 1536 << 20);
    assert_eq!(parse_size(" 65536K ").unwrap(), 64 << 20);
    assert_eq!(
        parse_size(&MEMORY_CAP_MIN.to_string()).unwrap(),
        MEMORY_CAP_MIN
    );
    let below = (MEMORY_CAP_MIN - 1).to_string();
    assert!(parse_size(&below)
        .unwrap_err()
        .to_string()
        .contains("smallest cap"));
    for bad in [
        "",
        "GiB",
        "2 TiB",
        "two",
        "-1G",
        "1e3M",
        "99999999999999999999G",
    ] {
        assert!(parse_size(bad).is_err(), "{bad}");
    }
}

#[test]
fn the_effective_uid_is_the_second_of_four() {
    let status = "Name:\tx\nUid:\t1000\t0\t0\t0\nGid:\t0\t0\t0\t0\n";
    assert_eq!(effective_uid(status), Some(0));
    assert_eq!(effective_uid("Uid:\t0\t1000\t0\t0\n"), Some(1000));
    assert_eq!(effective_uid("Name: x\n"), None);
}

#[test]
fn no_controller_is_refused_with_its_reason() {
    let err = check_available(Path::new("/nonexistent/memory"))
        .unwrap_err()
        .to_string();
    // As root the controller is what is missing; otherwise root is.
    assert!(
        err.contains("no cgroup v1 memory controller") || err.contains("needs root"),
        "{err}"
    );
}

#[test]
fn a_runs_cgroup_is_named_after_its_directory_and_the_bench() {
    assert_eq!(
        run_name(Path::new("/tmp/runs/seed 001,full"), 42),
        "varve-bench-seed_001_full-42"
    );
    assert_eq!(run_name(Path::new("/"), 7), "varve-bench-run-7");
    assert_eq!(run_name(Path::new("/x/.."), 7), "varve-bench-run-7");
    let long = run_name(Path::new(&"a".repeat(200)), 1);
    assert_eq!(long.len(), NAME_PREFIX.len() + RUN_NAME_CHARS_MAX + 2);
}

#[test]
fn oom_kills_come_from_oom_control() {
    let text = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
    assert_eq!(parse_oom_kills(text), Some(3));
    assert_eq!(parse_oom_kills("oom_kill_disable 0\nunder_oom 0\n"), None);
    assert_eq!(parse_oom_kills("oom_kill lots\n"), None);
}

#[test]
fn memory_csv_has_a_row_per_node() {
    let rows = [
        NodeMemory {
            node: 1,
            cgroup: "/sys/fs/cgroup/memory/varve-bench-r-1/node1".into(),
            cap_bytes: 1 << 30,
            peak_bytes: Some(900 << 20),
            oom_kills: Some(0),
        },
        NodeMemory {
            node: 2,
            cgroup: "a,b".into(),
            cap_bytes: 1 << 30,
            peak_bytes: None,
            oom_kills: None,
        },
    ];
    assert_eq!(
        render_csv(&rows),
        format!(
            "{MEMORY_CSV_HEADER}\n1,/sys/fs/cgroup/memory/varve-bench-r-1/node1,1073741824,943718400,0\n2,a_b,1073741824,,\n"
        )
    );
}

/// Why the real-cgroup tests cannot run here, if they cannot.
fn unavailable() -> Option<String> {
    check_available(Path::new(MEMORY_ROOT))
        .err()
        .map(|e| e.to_string())
}

/// A process started with [`join_before_exec`] runs in its node's cgroup,
/// under the cap; one that outgrows the cap is OOM-killed and counted; a
/// process left in a cgroup is killed when the run's cgroups are removed,
/// and every directory is gone afterwards.
#[test]
fn real_cgroups_cap_count_and_vanish() {
    if let Some(why) = unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let name = run_name(Path::new("unit-test"), std::process::id());
    let cap = 96 << 20;
    let cgroups = RunCgroups::create(Path::new(MEMORY_ROOT), &name, 2, cap).unwrap();
    let paths = cgroups.paths().clone();
    let node1 = cgroups.node(1).unwrap().to_path_buf();
    assert_eq!(
        std::fs::read_to_string(node1.join("memory.limit_in_bytes"))
            .unwrap()
            .trim(),
        cap.to_string()
    );
    // Runs inside node1's cgroup.
    let mut command = Command::new("cat");
    command.arg("/proc/self/cgroup");
    join_before_exec(&mut command, &node1).unwrap();
    let out = String::from_utf8(command.output().unwrap().stdout).unwrap();
    let inside = format!("memory:/{name}/node1");
    assert!(out.lines().any(|l| l.ends_with(&inside)), "{out}");
    // More than the cap, touched: the OOM killer ends it and counts it.
    let node2 = cgroups.node(2).unwrap().to_path_buf();
    let mut hog = Command::new("dd");
    hog.args(["if=/dev/zero", "of=/dev/null", "bs=256M", "count=1"]);
    join_before_exec(&mut hog, &node2).unwrap();
    assert!(!hog.output().unwrap().status.success(), "killed");
    // A process still inside when the run ends.
    let mut sleeper = Command::new("sleep");
    sleeper.arg("30");
    join_before_exec(&mut sleeper, &node1).unwrap();
    let mut sleeper = sleeper.spawn().unwrap();
    let usage = cgroups.usage();
    assert_eq!(usage.len(), 2);
    assert!(usage[0].peak_bytes.is_some_and(|p| p > 0), "{usage:?}");
    assert_eq!(usage[0].oom_kills, Some(0));
    assert_eq!(usage[1].oom_kills, Some(1), "{usage:?}");
    assert!(usage[1].peak_bytes.is_some_and(|p| p <= cap), "{usage:?}");
    cgroups.remove().unwrap();
    let _ = sleeper.wait();
    for dir in paths.nodes.iter().chain([&paths.dir]) {
        assert!(!dir.exists(), "{} is gone", dir.display());
    }
    assert!(paths.remove().is_ok(), "removing twice is fine");
}

#[test]
fn joining_a_missing_cgroup_fails_the_spawn_and_drop_cleans_up() {
    let mut command = Command::new("true");
    join_before_exec(&mut command, Path::new("/nonexistent/varve-cgroup")).unwrap();
    assert!(command.status().is_err());
    if let Some(why) = unavailable() {
        eprintln!("skipped the drop half: {why}");
        return;
    }
    let name = run_name(Path::new("unit-drop"), std::process::id());
    let dir = Path::new(MEMORY_ROOT).join(&name);
    {
        let _cgroups = RunCgroups::create(Path::new(MEMORY_ROOT), &name, 1, 1 << 30).unwrap();
        assert!(dir.join("node1").is_dir());
        assert!(
            RunCgroups::create(Path::new(MEMORY_ROOT), &name, 1, 1 << 30).is_err(),
            "an existing cgroup is never reused"
        );
        assert!(dir.is_dir(), "and the refusal left it alone");
    }
    assert!(!dir.exists());
}
