"""`nodetool repair`: replicas made to diverge on purpose (a node down
while writes go at ONE, its hints truncated) agree after one repair,
shown by reading every row at ONE through each replica and by a second
repair that finds nothing out of sync (equal Merkle leaves everywhere);
incremental repairs (the default) mark what they compared repaired and
compare only what is new; after ALTER KEYSPACE raises a replication
factor, one repair puts every row on its new replicas; and a replica that
missed lightweight transactions gets their Paxos state from the repair.

Real `varve server` processes on 127.0.0.x and the Python driver.
"""

import re
import signal
import subprocess
import time


from conftest import connect, varve_bin
from test_cluster_bootstrap import (  # noqa: F401 (nodes: a fixture)
    ADMIN, NATIVE, missing_rows, nodes, pinned, start_node, three_nodes_with_rows)
FIXED_PORTS = NATIVE  # conftest.py: modules on this port set run in order


def nodetool(index, *args):
    out = subprocess.run([varve_bin(), "nodetool", "-h", f"127.0.0.{index}", "-p", str(ADMIN), *args],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def out_of_sync(report):
    return int(re.search(r"ks\.t: \d+ ranges repaired, (\d+) out of sync", report).group(1))


def test_one_repair_brings_diverged_replicas_together(tmp_path, nodes):
    from cassandra import ConsistencyLevel
    from cassandra.concurrent import execute_concurrent_with_args

    for index in range(1, 4):
        nodes.append(start_node(tmp_path, index))
    cluster = connect("127.0.0.1", NATIVE, 5)
    session = cluster.connect()
    session.execute("CREATE KEYSPACE ks WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 3}")
    session.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
    insert = session.prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
    insert.consistency_level = ConsistencyLevel.ALL
    assert all(ok for ok, _ in execute_concurrent_with_args(
        session, insert, [(k, "old") for k in range(1000)], concurrency=64))
    # Node 3 misses new rows and deletes, written at ONE; its hints go.
    kill_third(nodes)
    insert.consistency_level = ConsistencyLevel.ONE
    assert all(ok for ok, _ in execute_concurrent_with_args(
        session, insert, [(k, "new") for k in range(1000, 1500)], concurrency=64))
    delete = session.prepare("DELETE FROM ks.t WHERE k = ?")
    delete.consistency_level = ConsistencyLevel.ONE
    for k in range(0, 100):
        session.execute(delete, (k,))
    restart_third_without_hints(nodes)
    live = list(range(100, 1500))
    deleted = list(range(100))
    third_cluster, third = pinned("127.0.0.3")
    try:
        assert len(missing_rows(third, live, "ONE")) >= 400, "node 3 did not diverge"
        first = nodetool(1, "repair", "-full", "ks")
        assert out_of_sync(first) > 0, first
        for index in range(1, 4):
            one_cluster, one = pinned(f"127.0.0.{index}")
            try:
                assert missing_rows(one, live, "ONE") == [], f"node {index}"
                assert len(missing_rows(one, deleted, "ONE")) == len(deleted), f"node {index}"
            finally:
                one_cluster.shutdown()
        # Nothing differs any more: every replica's leaves are equal.
        again = nodetool(2, "repair", "-full", "ks")
        assert out_of_sync(again) == 0, again
        # -pr repairs only the ranges each node is first replica of.
        primary = nodetool(3, "repair", "-pr", "-full", "ks")
        ranges = int(re.search(r"ks\.t: (\d+) ranges", primary).group(1))
        every = int(re.search(r"ks\.t: (\d+) ranges", again).group(1))
        assert 0 < ranges < every, (primary, again)
        incremental_repairs_compare_only_what_is_new(session, nodes)
        raise_replication_then_repair(session)
    finally:
        third_cluster.shutdown()
        cluster.shutdown()


def kill_third(nodes):
    """SIGKILLs node 3 and waits until nodes 1 and 2 both see it down, so
    that neither sends it a mutation whose timeout would make a hint after
    the test dropped the hints (and then give node 3 the write)."""
    nodes[2].stop(signal.SIGKILL)
    deadline = time.monotonic() + 30
    while any("DN  127.0.0.3" not in nodetool(i, "status") for i in (1, 2)):
        assert time.monotonic() < deadline
        time.sleep(0.2)


def restart_third_without_hints(nodes):
    """Drops the hints of nodes 1 and 2, starts node 3 again and waits
    until every node sees all three up."""
    for index in (1, 2):
        nodetool(index, "truncatehints")
    nodes[2].start(port=NATIVE, admin_port=ADMIN)
    deadline = time.monotonic() + 30
    while any(nodetool(i, "status").count("UN") < 3 for i in (1, 2, 3)):
        assert time.monotonic() < deadline
        time.sleep(0.2)


def paxos_out_of_sync(report):
    return int(re.search(r"system\.paxos: \d+ ranges repaired, (\d+) out of sync", report).group(1))


def committed_keys(session):
    """The user partitions whose Paxos commit this replica holds."""
    rows = session.execute("SELECT row_key, most_recent_commit_at FROM system.paxos")
    return {bytes(r.row_key) for r in rows if r.most_recent_commit_at is not None}


def test_repair_gives_a_replica_the_paxos_state_of_transactions_it_missed(tmp_path, nodes):
    """Node 3 is down while 40 conditional inserts commit on nodes 1 and 2
    (hints dropped): its `system.paxos` lacks them. `nodetool repair`
    repairs the Paxos state first: it finds it out of sync, node 3 then
    holds every commit, and a second repair finds it equal, although each
    replica wrote its Paxos rows with timestamps of its own."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    cluster, session = three_nodes_with_rows(tmp_path, nodes, 0)
    kill_third(nodes)
    insert = SimpleStatement("INSERT INTO ks.t (k, v) VALUES (%s, 'lwt') IF NOT EXISTS",
                             consistency_level=ConsistencyLevel.QUORUM,
                             serial_consistency_level=ConsistencyLevel.SERIAL)
    for k in range(40):
        assert session.execute(insert, (k,)).one()[0] is True
    restart_third_without_hints(nodes)
    first_cluster, first = pinned("127.0.0.1")
    third_cluster, third = pinned("127.0.0.3")
    try:
        committed = committed_keys(first)
        assert len(committed) == 40, len(committed)
        assert committed_keys(third) == set(), "node 3 took part in the transactions"
        report = nodetool(1, "repair", "ks")
        assert paxos_out_of_sync(report) > 0, report
        assert committed_keys(third) == committed
        again = nodetool(2, "repair", "ks")
        assert paxos_out_of_sync(again) == 0, again
    finally:
        first_cluster.shutdown()
        third_cluster.shutdown()
        cluster.shutdown()


def percent_repaired(index):
    stats = nodetool(index, "tablestats", "ks.t")
    return float(re.search(r"Percent repaired: ([\d.]+)", stats).group(1))


def incremental_repairs_compare_only_what_is_new(session, nodes):
    """The default repair is incremental: the first marks what it compared
    repaired on every replica; after node 3 misses more writes, the next
    one compares and streams only the new data, and afterwards a full
    repair finds nothing out of sync (the replicas really agree) and
    another incremental one has nothing new to compare."""
    from cassandra import ConsistencyLevel
    from cassandra.concurrent import execute_concurrent_with_args

    first = nodetool(1, "repair", "ks")
    assert "incremental repair, session" in first, first
    assert int(re.search(r"(\d+) sstables marked repaired", first).group(1)) > 0, first
    assert all(percent_repaired(i) > 50 for i in range(1, 4)), [percent_repaired(i) for i in range(1, 4)]

    kill_third(nodes)
    insert = session.prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
    insert.consistency_level = ConsistencyLevel.ONE
    fresh = list(range(2000, 2300))
    assert all(ok for ok, _ in execute_concurrent_with_args(
        session, insert, [(k, "fresh") for k in fresh], concurrency=64))
    restart_third_without_hints(nodes)
    second = nodetool(2, "repair", "ks")
    assert out_of_sync(second) > 0, second
    for index in range(1, 4):
        one_cluster, one = pinned(f"127.0.0.{index}")
        try:
            assert missing_rows(one, fresh, "ONE") == [], f"node {index}"
        finally:
            one_cluster.shutdown()
    assert out_of_sync(nodetool(3, "repair", "-full", "ks")) == 0
    third = nodetool(1, "repair", "ks")
    assert out_of_sync(third) == 0, third


def raise_replication_then_repair(session):
    """ALTER KEYSPACE from RF 1 to 3, then `repair -pr` on each node: every
    row is on its new replicas."""
    from cassandra import ConsistencyLevel
    from cassandra.concurrent import execute_concurrent_with_args

    session.execute("CREATE KEYSPACE ks1 WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE TABLE ks1.t (k int PRIMARY KEY, v text)")
    insert = session.prepare("INSERT INTO ks1.t (k, v) VALUES (?, ?)")
    insert.consistency_level = ConsistencyLevel.ONE
    assert all(ok for ok, _ in execute_concurrent_with_args(
        session, insert, [(k, "v") for k in range(900)], concurrency=64))
    session.execute("ALTER KEYSPACE ks1 WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 3}")
    keys = list(range(900))
    select = "SELECT k FROM ks1.t WHERE k = ?"
    # Before a repair, each row is on its one old replica only.
    one_cluster, one = pinned("127.0.0.1")
    try:
        assert len(missing_rows(one, keys, "ONE", select)) > 300
    finally:
        one_cluster.shutdown()
    for index in range(1, 4):
        nodetool(index, "repair", "-full", "-pr", "ks1")
    for index in range(1, 4):
        one_cluster, one = pinned(f"127.0.0.{index}")
        try:
            assert missing_rows(one, keys, "ONE", select) == [], f"node {index}"
        finally:
            one_cluster.shutdown()

