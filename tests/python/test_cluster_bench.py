"""`varve bench --nodes 3`: the bench starts a local three-node cluster
itself (`varve cluster start` on 127.0.0.1-3 with the bench's ports), runs the
scenario at RF 3 and LOCAL_QUORUM on it (its defaults there), samples every
node, and stops it. Where this machine allows (root, cgroup v1 memory), each
node runs capped in a cgroup of its own (`--memory-cap`), recorded in
memory.csv and report.md, and removed afterwards.
"""

import csv
import json
import os
import subprocess

from conftest import varve_bin

FIXED_PORTS = 9142  # crates/bench/src/cluster.rs: CLUSTER_NATIVE_PORT (conftest.py)
RUN_TIMEOUT_S = 180
CGROUP_V1_MEMORY = "/sys/fs/cgroup/memory"  # crates/bench/src/cgroup.rs: MEMORY_ROOT
CAP_MIB = 512


def can_cap():
    return os.geteuid() == 0 and os.path.isfile(f"{CGROUP_V1_MEMORY}/memory.limit_in_bytes")


def test_bench_on_a_cluster_it_starts_samples_every_node_and_stops_it(tmp_path):
    out = tmp_path / "run"
    # RF 3 and LOCAL_QUORUM are the defaults on a cluster the bench starts.
    cmd = [varve_bin(), "bench", "lwt", "--size", "tiny", "--nodes", "3", "--out", str(out), "--quiet"]
    capped = can_cap()
    if capped:
        cmd += ["--memory-cap", f"{CAP_MIB}MiB"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, f"{cmd}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert "local cluster of 3" in proc.stdout
    summary = json.loads((out / "summary.json").read_text())
    applied = [p for p in summary["phases"] if p["name"].startswith("lwt-c")]
    assert applied and all(p["ops"]["cas_write"]["count"] > 0 for p in applied), summary["phases"]
    # Every node was sampled: the server's resident memory is the sum of
    # three processes' (a debug-build node holds 45-60 MB after this run;
    # the three 150 MB when measured), the CPU the sum of theirs.
    with open(out / "server.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["server_rss_bytes"]]
    assert rows, "no server sample"
    assert float(rows[-1]["server_rss_bytes"]) > 90_000_000, rows[-1]
    # The nodes are gone afterwards.
    for n in (1, 2, 3):
        pid = int((out / "cluster" / f"node{n}" / "pid").read_text())
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            assert state == "Z", f"node {n} (pid {pid}) still runs"
        except FileNotFoundError:
            pass
    if capped:
        check_capped(out)


def check_capped(out):
    with open(out / "memory.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["node"] for r in rows] == ["1", "2", "3"], rows
    for r in rows:
        assert int(r["cap_bytes"]) == CAP_MIB << 20, r
        assert 0 < int(r["peak_bytes"]) <= CAP_MIB << 20, r
        assert r["oom_kills"] == "0", r
        assert not os.path.exists(r["cgroup"]), f"{r['cgroup']} was removed"
    for n in (1, 2, 3):
        log = (out / "cluster" / f"node{n}" / "varve.log").read_text()
        assert f"cgroup memory limit {CAP_MIB} MiB" in log, f"node {n} ran under the cap"
    assert "### Memory per node" in (out / "report.md").read_text()
