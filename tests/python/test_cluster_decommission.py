"""`nodetool decommission`: a node gives every range it replicates to the
node that takes it over, leaves the cluster's metadata and stops, while
clients go on writing at QUORUM (docs/design/topology.md, section 5). A
decommission that would leave a keyspace with fewer nodes than its
replication factor is refused, as Cassandra refuses it. A dead node is
removed (`nodetool removenode`) with its ranges restored from the
survivors.

Real `varve server` processes on 127.0.0.x (same ports on each) and the
Python driver.
"""

import signal
import subprocess
import time


from conftest import connect, peer_rows, varve_bin
from test_cluster_bootstrap import ADMIN, NATIVE, Writer, missing_rows, nodes, pinned, start_node  # noqa: F401 (nodes: a fixture)
FIXED_PORTS = NATIVE  # conftest.py: modules on this port set run in order


def nodetool(index, *args):
    return subprocess.run([varve_bin(), "nodetool", "-h", f"127.0.0.{index}", "-p", str(ADMIN),
                           *args], capture_output=True, text=True, timeout=300)


def cluster_with_rows(tmp_path, nodes, count, rows):
    for index in range(1, count + 1):
        nodes.append(start_node(tmp_path, index))
    cluster = connect("127.0.0.1", NATIVE, 5)
    session = cluster.connect()
    session.execute("CREATE KEYSPACE ks WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 3}")
    session.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
    from cassandra import ConsistencyLevel
    from cassandra.concurrent import execute_concurrent_with_args

    insert = session.prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
    insert.consistency_level = ConsistencyLevel.QUORUM
    results = execute_concurrent_with_args(session, insert, [(k, "x" * 100) for k in range(rows)],
                                           concurrency=64)
    assert all(ok for ok, _ in results)
    return cluster, session


def test_a_decommissioned_node_hands_its_ranges_over_and_leaves(tmp_path, nodes):
    rows = 2000
    cluster, session = cluster_with_rows(tmp_path, nodes, 4, rows)
    writer = Writer(first_key=rows)
    writer.start()
    time.sleep(0.5)
    try:
        out = nodetool(4, "decommission")
        time.sleep(0.5)
    finally:
        writer.stop()
    assert out.returncode == 0, out.stderr
    assert "Decommissioned" in out.stdout, out.stdout
    leaving = nodes[3]
    assert leaving.proc.wait(timeout=30) == 0, leaving.log_tail()
    assert "left the cluster at epoch" in leaving.log()
    assert len(writer.acked) > 50, f"the writer got {len(writer.acked)} writes through"
    # The cluster no longer lists it.
    deadline = time.monotonic() + 10
    while True:
        peers = sorted(str(p.peer) for p in peer_rows("127.0.0.1", NATIVE, "peer"))
        if peers == ["127.0.0.2", "127.0.0.3"]:
            break
        assert time.monotonic() < deadline, peers
        time.sleep(0.2)
    keys = list(range(rows)) + writer.acked
    assert missing_rows(session, keys, "QUORUM") == []
    # Three nodes at RF 3: each now holds every row itself (read at ONE
    # through each, whose coordinator reads its own replica first).
    for index in range(1, 4):
        one_cluster, one_session = pinned(f"127.0.0.{index}")
        try:
            assert missing_rows(one_session, keys, "ONE") == [], f"node {index}"
        finally:
            one_cluster.shutdown()
    # A fourth departure would leave two nodes for RF 3: refused, as
    # Cassandra refuses it, and the node stays.
    out = nodetool(3, "decommission")
    assert out.returncode != 0
    assert "keeps 3 replicas" in out.stderr + out.stdout, out.stderr
    assert nodes[2].running
    status = nodetool(1, "status").stdout
    assert status.count("UN") == 3, status
    cluster.shutdown()


def test_removenode_restores_a_dead_nodes_ranges_from_the_survivors(tmp_path, nodes):
    rows = 2000
    cluster, session = cluster_with_rows(tmp_path, nodes, 4, rows)
    peers = {str(p.peer): str(p.host_id) for p in peer_rows("127.0.0.1", NATIVE, "peer, host_id")}
    dead_id = peers["127.0.0.4"]
    # A node that is up is refused: it should be decommissioned.
    refused = nodetool(1, "removenode", peers["127.0.0.3"])
    assert refused.returncode != 0 and "is alive" in refused.stderr + refused.stdout, refused
    nodes[3].stop(signal.SIGKILL)
    deadline = time.monotonic() + 30
    while "DN  127.0.0.4" not in nodetool(1, "status").stdout:
        assert time.monotonic() < deadline, nodetool(1, "status").stdout
        time.sleep(0.2)
    out = nodetool(1, "removenode", dead_id)
    assert out.returncode == 0, out.stderr
    assert f"Removed {dead_id}" in out.stdout, out.stdout
    status = nodetool(1, "status").stdout
    assert "127.0.0.4" not in status and status.count("UN") == 3, status
    # Three nodes at RF 3: each holds every row again, those the dead node
    # replicated included.
    keys = list(range(rows))
    for index in range(1, 4):
        one_cluster, one_session = pinned(f"127.0.0.{index}")
        try:
            assert missing_rows(one_session, keys, "ONE") == [], f"node {index}"
        finally:
            one_cluster.shutdown()
    cluster.shutdown()
