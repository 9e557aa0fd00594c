"""`varve bench --nodes 3`: the bench starts a local three-node cluster
itself (`varve cluster start` on 127.0.0.1-3 with the bench's ports), runs the
scenario at RF 3 and LOCAL_QUORUM on it (its defaults there), samples every
node, and stops it.
"""

import csv
import json
import subprocess

from conftest import varve_bin

FIXED_PORTS = 9142  # crates/bench/src/cluster.rs: CLUSTER_NATIVE_PORT (conftest.py)
RUN_TIMEOUT_S = 180


def test_bench_on_a_cluster_it_starts_samples_every_node_and_stops_it(tmp_path):
    out = tmp_path / "run"
    # RF 3 and LOCAL_QUORUM are the defaults on a cluster the bench starts.
    cmd = [varve_bin(), "bench", "lwt", "--size", "tiny", "--nodes", "3", "--out", str(out), "--quiet"]
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
