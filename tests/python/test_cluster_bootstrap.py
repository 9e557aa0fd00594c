"""A node that joins a cluster holding data bootstraps: it is listed as
joining, takes the writes of the ranges it gains while it streams them
from the nodes that lose them, and serves only once it has them all
(docs/design/topology.md, section 3).

Real `varve server` processes on 127.0.0.x (same ports on each), the
Python driver writing at QUORUM while the fourth node joins; every
acknowledged row is then read back at QUORUM, and at ONE through the new
node, whose coordinator reads its own replica first.
"""

import os
import re
import signal
import subprocess
import threading
import time
import urllib.request

import pytest

from conftest import VarveNode, connect, peer_rows, pinned_cluster, varve_bin

NATIVE, ADMIN, STORAGE = 19342, 19480, 17300
FIXED_PORTS = NATIVE  # conftest.py: modules on this port set run in order
VALUE = "v" * 200


def start_node(tmp_path, index, *extra):
    node = VarveNode(tmp_path / f"node{index}", ["--seeds", "127.0.0.1", *extra],
                     listen=f"127.0.0.{index}", storage_port=STORAGE)
    return node.start(port=NATIVE, admin_port=ADMIN)


@pytest.fixture
def nodes():
    started = []
    yield started
    for node in started:
        if node.running:
            node.stop(signal.SIGKILL)


def pinned(host):
    """A session whose requests all go to `host` as coordinator."""
    cluster = pinned_cluster(host, NATIVE)
    return cluster, cluster.connect()


def three_nodes_with_rows(tmp_path, nodes, rows, value=VALUE):
    for index in range(1, 4):
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
    value_of = value if callable(value) else (lambda _k: value)
    results = execute_concurrent_with_args(session, insert, [(k, value_of(k)) for k in range(rows)],
                                           concurrency=64)
    assert all(ok for ok, _ in results)
    # Some rows deleted: the tombstones must move too.
    delete = session.prepare("DELETE FROM ks.t WHERE k = ?")
    delete.consistency_level = ConsistencyLevel.QUORUM
    for k in range(0, rows, 10):
        session.execute(delete, (k,))
    return cluster, session


class Writer(threading.Thread):
    """Writes new rows at QUORUM through nodes 1-3 until stopped; keeps the
    keys whose writes were acknowledged."""

    def __init__(self, first_key, port=NATIVE, pause_s=0.0):
        super().__init__(daemon=True)
        self.port = port
        self.pause_s = pause_s
        self.next_key = first_key
        self.acked = []
        self.failed = 0
        self.stopping = threading.Event()

    def run(self):
        from cassandra import ConsistencyLevel

        cluster = connect("127.0.0.1", self.port, 5)
        session = cluster.connect()
        insert = session.prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
        insert.consistency_level = ConsistencyLevel.QUORUM
        try:
            while not self.stopping.is_set():
                k = self.next_key
                self.next_key += 1
                try:
                    session.execute(insert, (k, VALUE))
                    self.acked.append(k)
                except Exception:  # noqa: BLE001 - a timeout is not an acknowledgement
                    self.failed += 1
                self.stopping.wait(self.pause_s)
        finally:
            cluster.shutdown()

    def stop(self):
        self.stopping.set()
        self.join(30)


def missing_rows(session, keys, consistency, query="SELECT k FROM ks.t WHERE k = ?"):
    from cassandra import ConsistencyLevel
    from cassandra.concurrent import execute_concurrent_with_args

    select = session.prepare(query)
    select.consistency_level = getattr(ConsistencyLevel, consistency)
    results = execute_concurrent_with_args(session, select, [(k,) for k in keys], concurrency=64)
    return [k for k, (ok, rows) in zip(keys, results) if not ok or not list(rows)]


def test_a_node_joining_under_quorum_writes_streams_every_acknowledged_row(tmp_path, nodes):
    rows = 3000
    cluster, session = three_nodes_with_rows(tmp_path, nodes, rows)
    writer = Writer(first_key=rows)
    writer.start()
    time.sleep(0.5)
    try:
        nodes.append(start_node(tmp_path, 4))
        time.sleep(0.5)
    finally:
        writer.stop()
    log = nodes[3].log()
    assert "bootstrap: this node is joining" in log, nodes[3].log_tail()
    assert "bootstrap: done; this node is Normal" in log, nodes[3].log_tail()
    assert len(writer.acked) > 50, f"the writer got {len(writer.acked)} writes through"
    live = [k for k in range(rows) if k % 10 != 0] + writer.acked
    deleted = list(range(0, rows, 10))
    # Every node lists the new one as a peer, with its tokens.
    peers = {str(p.peer): p.tokens for p in peer_rows("127.0.0.1", NATIVE, "peer, tokens")}
    assert "127.0.0.4" in peers and len(peers["127.0.0.4"]) == 16, peers
    assert missing_rows(session, live, "QUORUM") == []
    new_cluster, new_session = pinned("127.0.0.4")
    try:
        # At ONE the new node's coordinator reads its own replica of every
        # key it replicates (three quarters of them).
        assert missing_rows(new_session, live, "ONE") == []
        # Deleted rows stay deleted: their tombstones came with the data.
        assert len(missing_rows(new_session, deleted, "ONE")) == len(deleted)
    finally:
        new_cluster.shutdown()
    # The old nodes gave a quarter of their ranges away: cleanup drops that
    # data, and every row is still on all three of its replicas.
    for index in range(1, 4):
        out = subprocess.run([varve_bin(), "nodetool", "-h", f"127.0.0.{index}", "-p", str(ADMIN),
                              "cleanup", "ks"], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        before, after = re.search(r"ks\.t: \d+ sstables rewritten, (\d+) bytes to (\d+) bytes",
                                  out.stdout).groups()
        assert int(after) < int(before), out.stdout
    assert missing_rows(session, live, "ALL") == []
    cluster.shutdown()


def start_slow_fourth_node(tmp_path, nodes):
    """Starts node 4 in the background, taking 350 KiB/s from each of
    three sources (about three seconds of streaming for its share of
    4000 rows of 1 KB); the node and the thread that starts it."""
    config = tmp_path / "slow.yaml"
    config.write_text("stream_throughput_outbound: 350KiB/s\n")
    node4 = VarveNode(tmp_path / "node4", ["--seeds", "127.0.0.1", "--config", str(config)],
                      listen="127.0.0.4", storage_port=STORAGE)
    nodes.append(node4)
    starting = threading.Thread(target=lambda: _start_quietly(node4), daemon=True)
    starting.start()
    return node4, starting


def test_a_bootstrap_killed_half_way_starts_again_and_completes(tmp_path, nodes):
    rows = 4000
    cluster, session = three_nodes_with_rows(tmp_path, nodes, rows, value="w" * 1000)
    node4, starting = start_slow_fourth_node(tmp_path, nodes)
    deadline = time.monotonic() + 60
    while "bootstrap: this node is joining" not in node4.log():
        assert time.monotonic() < deadline, node4.log_tail()
        time.sleep(0.05)
    # While it streams (after a write timeout's wait for writes planned
    # before it joined, and the sources' flush before they list their
    # sstables), its admin port shows the stream and the bytes.
    deadline = time.monotonic() + 20
    while True:
        netstats = subprocess.run([varve_bin(), "nodetool", "-h", "127.0.0.4", "-p", str(ADMIN),
                                   "netstats"], capture_output=True, text=True, timeout=30)
        metrics = urllib.request.urlopen(f"http://127.0.0.4:{ADMIN}/metrics", timeout=10).read().decode()
        received = re.search(r'varve_streaming_bytes_total\{direction="in"\} (\d+)', metrics)
        shown = re.search(r"bootstrap ks\.t: \d+ of \d+ ranges, \d+ bytes", netstats.stdout)
        if shown and received and int(received.group(1)) > 0:
            break
        assert time.monotonic() < deadline, (netstats.stdout, metrics, node4.log_tail())
        time.sleep(0.2)
    assert 'varve_streams_active{stream_operation="bootstrap"} 1' in metrics
    time.sleep(0.5)
    node4.proc.send_signal(signal.SIGKILL)
    node4.proc.wait()
    starting.join(30)
    assert "bootstrap: done" not in node4.log(), "the kill came too late to test a restart"
    # Listed as joining meanwhile: drivers do not see it as a peer.
    peers = [str(p.peer) for p in peer_rows("127.0.0.1", NATIVE, "peer")]
    assert "127.0.0.4" not in peers, peers
    node4.start(port=NATIVE, admin_port=ADMIN)
    assert "bootstrap: done; this node is Normal" in node4.log(), node4.log_tail()
    live = [k for k in range(rows) if k % 10 != 0]
    new_cluster, new_session = pinned("127.0.0.4")
    try:
        assert missing_rows(new_session, live, "ONE") == []
    finally:
        new_cluster.shutdown()
        cluster.shutdown()


def test_a_source_frozen_during_a_bootstrap_delays_it_and_the_join_completes_whole(tmp_path, nodes):
    """A source SIGSTOPped for 8 s while the new node streams from it
    (gossip convicts it meanwhile): the pulls from it wait (a page has
    STREAM_PAGE_TIMEOUT, 30 s), the other sources go on, the node stays
    joining; once the source runs again the join completes and the new
    node holds every row."""
    rows = 4000
    cluster, session = three_nodes_with_rows(tmp_path, nodes, rows, value="w" * 1000)
    node4, starting = start_slow_fourth_node(tmp_path, nodes)
    deadline = time.monotonic() + 60
    while "bootstrap: " not in node4.log() or " ranges of " not in node4.log():
        assert time.monotonic() < deadline, node4.log_tail()
        time.sleep(0.05)
    frozen = nodes[1]
    frozen.proc.send_signal(signal.SIGSTOP)
    try:
        time.sleep(8)
        assert "bootstrap: done" not in node4.log(), "the join finished without its frozen source"
    finally:
        frozen.proc.send_signal(signal.SIGCONT)
    starting.join(120)
    assert "bootstrap: done; this node is Normal" in node4.log(), node4.log_tail()
    live = [k for k in range(rows) if k % 10 != 0]
    new_cluster, new_session = pinned("127.0.0.4")
    try:
        assert missing_rows(new_session, live, "ONE") == []
        assert missing_rows(session, live, "QUORUM") == []
    finally:
        new_cluster.shutdown()
        cluster.shutdown()


def _start_quietly(node):
    try:
        node.start(port=NATIVE, admin_port=ADMIN)
    except (RuntimeError, AttributeError):
        pass  # killed before ready (what the test does), or stopped by the fixture


def replace_under_writes(tmp_path, nodes, dead, name, listen, rows):
    """Starts a node at `listen` (its data in tmp_path / name) that
    replaces the dead node at address `dead`, while a Writer adds rows
    from key `rows`; the replacement and the writer (stopped)."""
    config = tmp_path / f"{name}.yaml"
    config.write_text(f"replace_address_first_boot: {dead}\n")
    writer = Writer(first_key=rows)
    writer.start()
    try:
        replacement = VarveNode(tmp_path / name, ["--seeds", "127.0.0.1", "--config", str(config)],
                                listen=listen, storage_port=STORAGE)
        nodes.append(replacement.start(port=NATIVE, admin_port=ADMIN))
        time.sleep(0.5)
    finally:
        writer.stop()
    assert "bootstrap: this node replaces" in replacement.log(), replacement.log_tail()
    return replacement, writer


def assert_every_row_on(cluster, session, address, live_keys):
    """Every key of `live_keys` reads at QUORUM, and at ONE through the
    node at `address` alone; then both drivers are shut down."""
    assert missing_rows(session, live_keys, "QUORUM") == []
    new_cluster, new_session = pinned(address)
    try:
        assert missing_rows(new_session, live_keys, "ONE") == []
    finally:
        new_cluster.shutdown()
        cluster.shutdown()


def test_a_dead_node_is_replaced_by_a_new_one_with_its_tokens(tmp_path, nodes):
    rows = 2000
    cluster, session = three_nodes_with_rows(tmp_path, nodes, rows)
    nodes.append(start_node(tmp_path, 4))
    deadline = time.monotonic() + 10
    while True:
        tokens = {str(p.peer): sorted(p.tokens or [])
                  for p in peer_rows("127.0.0.1", NATIVE, "peer, tokens")}
        if tokens.get("127.0.0.4"):
            break
        assert time.monotonic() < deadline, tokens
        time.sleep(0.2)
    # Replacing a node that is alive is refused at start.
    config = tmp_path / "replace-live.yaml"
    config.write_text("replace_address_first_boot: 127.0.0.3\n")
    live = VarveNode(tmp_path / "node6", ["--seeds", "127.0.0.1", "--config", str(config)],
                     listen="127.0.0.6", storage_port=STORAGE)
    nodes.append(live)
    with pytest.raises(RuntimeError, match="exited"):
        live.start(port=NATIVE, admin_port=ADMIN)
    assert "only a dead node can be replaced" in live.log(), live.log_tail()
    nodes[3].stop(signal.SIGKILL)
    _, writer = replace_under_writes(tmp_path, nodes, "127.0.0.4", "node5", "127.0.0.5", rows)
    deadline = time.monotonic() + 10
    while True:
        now = {str(p.peer): sorted(p.tokens) for p in peer_rows("127.0.0.1", NATIVE, "peer, tokens")}
        if "127.0.0.4" not in now and "127.0.0.5" in now:
            break
        assert time.monotonic() < deadline, now
        time.sleep(0.2)
    assert now["127.0.0.5"] == tokens["127.0.0.4"]
    # The dead node, which voted on the metadata log, is taken out of it.
    deadline = time.monotonic() + 15
    while not any("a departed node left the group" in n.log() for n in nodes[:3]):
        assert time.monotonic() < deadline, "the replaced voter stayed in the metadata group"
        time.sleep(0.2)
    live_keys = [k for k in range(rows) if k % 10 != 0] + writer.acked
    assert_every_row_on(cluster, session, "127.0.0.5", live_keys)


def test_a_dead_node_is_replaced_on_its_own_address(tmp_path, nodes):
    """Cassandra's usual replacement: the dead node's machine comes back
    with an empty disk and `replace_address_first_boot` naming its own
    address. It takes the dead node's tokens under a new host id, streams
    from the survivors while a driver writes, and then holds every row."""
    rows = 2000
    cluster, session = three_nodes_with_rows(tmp_path, nodes, rows)
    before = {str(p.peer): (p.host_id, sorted(p.tokens or []))
              for p in peer_rows("127.0.0.1", NATIVE, "peer, host_id, tokens")}
    assert before.get("127.0.0.3"), before
    nodes[2].stop(signal.SIGKILL)
    _, writer = replace_under_writes(tmp_path, nodes, "127.0.0.3", "node3-new", "127.0.0.3", rows)
    deadline = time.monotonic() + 10
    while True:
        now = {str(p.peer): (p.host_id, sorted(p.tokens or []))
               for p in peer_rows("127.0.0.1", NATIVE, "peer, host_id, tokens")}
        if now.get("127.0.0.3") and now["127.0.0.3"][0] != before["127.0.0.3"][0]:
            break
        assert time.monotonic() < deadline, (before, now)
        time.sleep(0.2)
    assert now["127.0.0.3"][1] == before["127.0.0.3"][1], "the replacement took other tokens"
    assert sorted(now) == ["127.0.0.2", "127.0.0.3"], now
    live_keys = [k for k in range(rows) if k % 10 != 0] + writer.acked
    assert_every_row_on(cluster, session, "127.0.0.3", live_keys)


def test_a_full_disk_fails_the_bootstrap_not_the_node_and_it_completes_once_there_is_room(tmp_path, nodes):
    """The joining node's data directory is a 6 MiB tmpfs, less than its
    share of the data: streaming fails with the disk's error and is tried
    again, the node stays up (its admin port answers, the others list it
    joining), the cluster keeps serving; once the disk grows, the next
    attempt completes and the node serves every row."""
    rows = 2500
    # Random values: they do not compress.
    cluster, session = three_nodes_with_rows(tmp_path, nodes, rows, value=lambda _k: os.urandom(2000).hex())
    data = tmp_path / "node4"
    data.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(data)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (root only): {mounted.stderr.strip()}")
    try:
        config = tmp_path / "small.yaml"
        config.write_text("commitlog_segment_size: 1MiB\nmemtable_heap_space: 4MiB\n")
        joiner = VarveNode(data, ["--seeds", "127.0.0.1", "--config", str(config)],
                           listen="127.0.0.4", storage_port=STORAGE)
        nodes.append(joiner)
        started = []
        starter = threading.Thread(target=lambda: started.append(joiner.start(port=NATIVE, admin_port=ADMIN)),
                                   daemon=True)
        starter.start()
        deadline = time.monotonic() + 20
        while not re.search(r"bootstrap failed: .*No space left on device", joiner.log()):
            assert time.monotonic() < deadline, joiner.log_tail()
            time.sleep(0.1)
        assert joiner.running, joiner.log_tail()
        with urllib.request.urlopen(f"http://127.0.0.4:{ADMIN}/ready", timeout=5) as r:
            raise AssertionError(f"a joining node said it was ready: {r.status}")
    except urllib.error.HTTPError as e:
        assert e.code == 503, e
        status = subprocess.run([varve_bin(), "nodetool", "-h", "127.0.0.1", "-p", str(ADMIN), "status"],
                                capture_output=True, text=True, timeout=30).stdout
        assert "UJ  127.0.0.4" in status, status
        live = [k for k in range(rows) if k % 10 != 0]
        assert missing_rows(session, live[:200], "QUORUM") == []
        subprocess.run(["mount", "-o", "remount,size=256m", str(data)], check=True)
        starter.join(40)
        assert started, joiner.log_tail()
        new_cluster, new_session = pinned("127.0.0.4")
        try:
            assert missing_rows(new_session, live, "ONE") == []
        finally:
            new_cluster.shutdown()
        cluster.shutdown()
    finally:
        for node in nodes:
            if node.running:
                node.stop(signal.SIGKILL)
        subprocess.run(["umount", "-l", str(data)], check=False)
