"""A cluster grown and shrunk under load, with `varve cluster`: three
nodes grow to five (`cluster add`, each bootstrapping while `cluster
status` shows its progress), shrink back to three (`nodetool
decommission`), and one of them is SIGKILLed and replaced by a new node
(`replace_address_first_boot`), while a driver writes at QUORUM the
whole time; every acknowledged row is readable at QUORUM afterwards, and
on the replacement at ONE.

Real `varve server` processes on 127.0.0.x and the Python driver.
"""

import subprocess
import time

from conftest import connect, pinned_cluster, varve_bin
from test_cluster_bootstrap import Writer, missing_rows
from test_cluster_launcher import PORTS, status, varve_cluster

NATIVE = 19042
FIXED_PORTS = NATIVE  # conftest.py: modules on this port set run in order
ROWS = 1500


def pinned_on(host):
    cluster = pinned_cluster(host, NATIVE)
    return cluster, cluster.connect()


def load_rows(session):
    from cassandra import ConsistencyLevel
    from cassandra.concurrent import execute_concurrent_with_args

    session.execute("CREATE KEYSPACE ks WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 3}")
    session.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
    insert = session.prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
    insert.consistency_level = ConsistencyLevel.QUORUM
    results = execute_concurrent_with_args(session, insert, [(k, "v" * 200) for k in range(ROWS)],
                                           concurrency=64)
    assert all(ok for ok, _ in results)


def add_node(directory, *server_args):
    """`varve cluster add`, watching `cluster status` while it runs; the
    states status showed for the new node."""
    cmd = [varve_bin(), "cluster", "--dir", str(directory), "add"]
    if server_args:
        cmd += ["--", *server_args]
    adding = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = set()
    while adding.poll() is None:
        new = max(status(directory))
        seen.add(status(directory)[new][2])
        time.sleep(0.05)
    out, err = adding.communicate()
    assert adding.returncode == 0, out + err
    assert "joined in" in out, out
    return seen


def wait_down(directory, node, address):
    deadline = time.monotonic() + 30
    while f"DN  {address}" not in varve_cluster(directory, "nodetool", str(node), "status").stdout:
        assert time.monotonic() < deadline, f"{address} never seen down"
        time.sleep(0.2)


def test_three_nodes_grow_to_five_shrink_to_three_and_replace_one_under_quorum_writes(tmp_path):
    directory = tmp_path / "cluster"
    varve_cluster(directory, "start", "--nodes", "3", *PORTS)
    writer = None
    try:
        cluster = connect("127.0.0.1", NATIVE, 5)
        session = cluster.connect()
        load_rows(session)
        # About a hundred writes a second: enough to cross every step, few
        # enough to read back quickly.
        writer = Writer(first_key=ROWS, port=NATIVE, pause_s=0.01)
        writer.start()
        # A slow stream (48 KiB/s from each of three sources: a second or
        # two), so that status shows the join.
        slow = tmp_path / "slow.yaml"
        slow.write_text("stream_throughput_outbound: 48KiB/s\n")
        seen = add_node(directory, "--config", str(slow))
        assert any(s.startswith("joining; bootstrap ks.t: ") and " ranges, " in s for s in seen), seen
        add_node(directory)
        assert [state for _, _, state in status(directory).values()] == ["up"] * 5
        for node in (5, 4):
            out = varve_cluster(directory, "nodetool", str(node), "decommission")
            assert out.returncode == 0, out.stderr
        deadline = time.monotonic() + 30
        while [state for _, _, state in status(directory).values()] != ["up"] * 3 + ["down"] * 2:
            assert time.monotonic() < deadline, status(directory)
            time.sleep(0.2)
        varve_cluster(directory, "kill", "3")
        wait_down(directory, 1, "127.0.0.3")
        replace = tmp_path / "replace.yaml"
        replace.write_text("replace_address_first_boot: 127.0.0.3\n")
        add_node(directory, "--config", str(replace))
        time.sleep(0.5)
        writer.stop()
        # QUORUM holds through every step: two of three replicas are always up.
        assert writer.failed < len(writer.acked) // 20, (writer.failed, len(writer.acked))
        live = list(range(ROWS)) + writer.acked
        assert len(writer.acked) > 100, f"the writer got {len(writer.acked)} writes through"
        assert missing_rows(session, live, "QUORUM") == []
        new_cluster, new_session = pinned_on("127.0.0.6")
        try:
            assert missing_rows(new_session, live, "ONE") == []
        finally:
            new_cluster.shutdown()
        one_cluster, one = pinned_on("127.0.0.1")
        try:
            peers = {str(p.peer) for p in one.execute("SELECT peer FROM system.peers")}
        finally:
            one_cluster.shutdown()
        assert peers == {"127.0.0.2", "127.0.0.6"}, peers
        cluster.shutdown()
    finally:
        if writer is not None and writer.is_alive():
            writer.stop()
        varve_cluster(directory, "stop", check=False)
