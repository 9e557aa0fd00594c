"""`varve cluster`: a local cluster of real `varve server` processes on
127.0.0.1 .. 127.0.0.N with the same ports on every address.

These check the launcher's promises and what gossip gives the nodes
already: every node runs on its address with its data centre and rack;
`start` returns once every node counts every other UP; a driver finds the
whole cluster from one contact point (system.peers) with every node's
tokens; `kill N` is a crash (SIGKILL) that the others notice (DN, by the
failure detector) and after which `start N` brings the node back UP with
its data; `stop` ends every process. Schemas are not shared between nodes
yet (the metadata log comes later), so the driver's schema agreement wait
is turned off here. The ports are not the defaults, so a node a developer
runs on 9042 does not collide with these.
"""

import re
import subprocess
import time

import pytest

from conftest import connect, pinned_cluster, varve_bin
from helpers import string_map  # noqa: F401 (test_cluster_schema imports it from here)

NATIVE, ADMIN, STORAGE = 19042, 19180, 17000
FIXED_PORTS = NATIVE  # conftest.py: modules on this port set run in order


def port_args(native, admin, storage):
    """The `varve cluster start` arguments of a port set."""
    return ["--native-port", str(native), "--admin-port", str(admin), "--storage-port", str(storage)]


PORTS = port_args(NATIVE, ADMIN, STORAGE)


def varve_cluster(directory, *args, check=True):
    cmd = [varve_bin(), "cluster", "--dir", str(directory), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}")
    return done


def status(directory):
    """{node index: (address, dc, state)} from `varve cluster status`."""
    out = varve_cluster(directory, "status").stdout
    nodes = {}
    for line in out.splitlines()[1:]:
        m = re.match(r"node(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(.*)$", line)
        assert m, line
        nodes[int(m.group(1))] = (m.group(2), m.group(3), m.group(5).strip())
    return nodes


def node_states(directory, node):
    """{address: 'UN' | 'DN'} as node `node`'s `nodetool status` shows them."""
    out = varve_cluster(directory, "nodetool", str(node), "status").stdout
    return {line.split()[1]: line.split()[0] for line in out.splitlines() if line[:3] in ("UN ", "DN ")}


def eventually(check, timeout_s=30):
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def pinned(host, port=NATIVE):
    """A driver cluster that sends everything to `host`."""
    return pinned_cluster(host, port)


def local_row(host):
    cluster = pinned(host)
    try:
        row = cluster.connect().execute(
            "SELECT listen_address, data_center, rack, cluster_name FROM system.local").one()
        return (str(row.listen_address), row.data_center, row.rack, row.cluster_name)
    finally:
        cluster.shutdown()


@pytest.fixture
def cluster_dir(tmp_path):
    directory = tmp_path / "cluster"
    yield directory
    if (directory / "cluster.json").exists():
        varve_cluster(directory, "stop", check=False)


def test_three_nodes_over_two_data_centres_start_and_answer_on_their_addresses(cluster_dir):
    out = varve_cluster(cluster_dir, "start", "--nodes", "3", "--dcs", "2", *PORTS).stdout
    assert "127.0.0.1:19042,127.0.0.2:19042,127.0.0.3:19042" in out, out
    assert status(cluster_dir) == {
        1: ("127.0.0.1", "dc1", "up"),
        2: ("127.0.0.2", "dc1", "up"),
        3: ("127.0.0.3", "dc2", "up"),
    }
    assert local_row("127.0.0.1") == ("127.0.0.1", "dc1", "rack1", "varve-local")
    assert local_row("127.0.0.3") == ("127.0.0.3", "dc2", "rack1", "varve-local")
    for node in (1, 2, 3):
        assert node_states(cluster_dir, node) == {f"127.0.0.{i}": "UN" for i in (1, 2, 3)}
    # Every node publishes its tokens in gossip as it becomes Normal; node 1
    # may hear of the last one's a moment after the cluster is ready.
    deadline = time.monotonic() + 10
    while True:
        gossip = varve_cluster(cluster_dir, "nodetool", "1", "gossipinfo").stdout
        if gossip.count("  TOKENS:") == 3 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    for i, dc in ((1, "dc1"), (2, "dc1"), (3, "dc2")):
        block = gossip.split(f"/127.0.0.{i}:17000\n")[1].split("\n/")[0]
        assert re.search(rf"^  DC:\d+:{dc}$", block, re.M), gossip
        assert re.search(r"^  TOKENS:\d+:(-?\d+,){15}-?\d+$", block, re.M), gossip
        assert re.search(r"^  RPC_ADDRESS:\d+:127\.0\.0\." + str(i) + "$", block, re.M), gossip
        assert re.search(r"^  LOAD:\d+:\d+$", block, re.M), gossip
    ring = varve_cluster(cluster_dir, "nodetool", "2", "ring").stdout
    tokens = [int(l.split()[-1]) for l in ring.splitlines() if l.startswith("127.0.0.")]
    assert len(tokens) == 48, ring
    described = varve_cluster(cluster_dir, "nodetool", "3", "describecluster").stdout
    assert re.search(r"^\t\t[0-9a-f-]{36}: \[127\.0\.0\.1, 127\.0\.0\.2, 127\.0\.0\.3\]$", described, re.M), described
    info = varve_cluster(cluster_dir, "nodetool", "1", "info").stdout
    assert re.search(r"^Gossip active\s*: true$", info, re.M), info

    # One contact point is enough: the driver reads the others from system.peers.
    cluster = connect("127.0.0.1", 19042, 5, local_dc="dc1", max_schema_agreement_wait=0)
    cluster.connect()
    hosts = {str(h.address): h.datacenter for h in cluster.metadata.all_hosts()}
    owners = set(str(h.address) for h in cluster.metadata.token_map.token_to_host_owner.values())
    tokens = len(cluster.metadata.token_map.ring)
    cluster.shutdown()
    assert hosts == {"127.0.0.1": "dc1", "127.0.0.2": "dc1", "127.0.0.3": "dc2"}
    assert owners == set(hosts) and tokens == 3 * 16
    cluster = pinned("127.0.0.2")
    host_id = cluster.connect().execute("SELECT host_id FROM system.local").one().host_id
    cluster.shutdown()
    info = varve_cluster(cluster_dir, "nodetool", "2", "info").stdout
    assert str(host_id) in info, info


def test_a_killed_node_is_down_until_started_again_with_its_data(cluster_dir):
    varve_cluster(cluster_dir, "start", "--nodes", "2", *PORTS)
    # Created on node 2, the schema reaches node 1 through the metadata
    # log; the row goes to the replica its key's token names.
    cluster = pinned("127.0.0.2")
    s = cluster.connect()
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
    s.execute("INSERT INTO ks.t (k, v) VALUES (1, 'kept')")
    version = s.execute("SELECT schema_version FROM system.local").one().schema_version
    cluster.shutdown()

    # The new schema version reaches the other node by gossip.
    def seen_by_node1():
        c = pinned("127.0.0.1")
        try:
            rows = c.connect().execute("SELECT peer, schema_version FROM system.peers")
            return {str(r.peer): r.schema_version for r in rows}.get("127.0.0.2") == version
        finally:
            c.shutdown()
    assert eventually(seen_by_node1, timeout_s=15)

    varve_cluster(cluster_dir, "kill", "2")
    nodes = status(cluster_dir)
    assert nodes[1][2] == "up" and nodes[2][2] == "down", nodes
    # Convicted by phi (about 9 s of silence at the default settings).
    assert eventually(lambda: node_states(cluster_dir, 1).get("127.0.0.2") == "DN"), node_states(cluster_dir, 1)

    varve_cluster(cluster_dir, "start", "2")
    assert status(cluster_dir)[2][2] == "up"
    assert node_states(cluster_dir, 1) == {"127.0.0.1": "UN", "127.0.0.2": "UN"}
    cluster = pinned("127.0.0.2")
    row = cluster.connect().execute("SELECT v FROM ks.t WHERE k = 1").one()
    cluster.shutdown()
    assert row.v == "kept"

    varve_cluster(cluster_dir, "stop")
    assert all(state == "down" for _, _, state in status(cluster_dir).values())


def test_commands_on_a_directory_without_a_cluster_say_so(tmp_path):
    done = varve_cluster(tmp_path / "none", "status", check=False)
    assert done.returncode != 0
    assert "holds no cluster" in done.stderr
    done = varve_cluster(tmp_path / "none", "start", "--nodes", "33", *PORTS, check=False)
    assert done.returncode != 0 and "between 1 and 32" in done.stderr


def test_a_start_that_fails_names_the_node_and_leaves_nothing_running(tmp_path):
    """Node 2's CQL port is taken: the start fails within seconds naming
    node2 and its log (not after the 60 s ready wait), and stops the nodes it
    started, so that nothing holds the cluster's ports afterwards."""
    import socket

    taken = socket.socket()
    taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    taken.bind(("127.0.0.2", 19042))
    taken.listen()
    directory = tmp_path / "cluster"
    try:
        started = time.monotonic()
        done = varve_cluster(directory, "start", "--nodes", "3", *PORTS, check=False)
        elapsed = time.monotonic() - started
    finally:
        taken.close()
    assert done.returncode != 0
    assert "node2 exited while starting" in done.stderr and "node2/varve.log" in done.stderr, done.stderr
    assert elapsed < 20, f"the failure took {elapsed:.1f} s"
    assert all(state == "down" for _, _, state in status(directory).values()), status(directory)


def string_list(items):
    import struct
    out = struct.pack(">H", len(items))
    for item in items:
        out += struct.pack(">H", len(item)) + item.encode()
    return out


def next_status_event(sock):
    """(change, ip, port) of the next STATUS_CHANGE EVENT frame on `sock`."""
    import socket
    import struct
    from helpers import read_frame

    opcode_event = 0x0C
    while True:
        frame = read_frame(sock)
        assert frame is not None, "connection closed"
        opcode, body = frame
        if opcode != opcode_event:
            continue
        (n,) = struct.unpack(">H", body[:2])
        kind, rest = body[2:2 + n].decode(), body[2 + n:]
        assert kind == "STATUS_CHANGE", kind
        (n,) = struct.unpack(">H", rest[:2])
        change, rest = rest[2:2 + n].decode(), rest[2 + n:]
        size = rest[0]
        ip = socket.inet_ntoa(rest[1:1 + size])
        (port,) = struct.unpack(">i", rest[1 + size:5 + size])
        return change, ip, port


def test_registered_clients_hear_a_peer_go_down_and_come_back(cluster_dir):
    from helpers import OPCODE_READY, OPCODE_STARTUP, open_socket, read_frame, v4_frame

    varve_cluster(cluster_dir, "start", "--nodes", "2", *PORTS)
    sock = open_socket("127.0.0.1", 19042, timeout=30)
    sock.sendall(v4_frame(OPCODE_STARTUP, string_map({"CQL_VERSION": "3.0.0"})))
    assert read_frame(sock)[0] == OPCODE_READY
    opcode_register = 0x0B
    sock.sendall(v4_frame(opcode_register, string_list(["STATUS_CHANGE"]), stream=1))
    assert read_frame(sock)[0] == OPCODE_READY

    varve_cluster(cluster_dir, "kill", "2")
    assert next_status_event(sock) == ("DOWN", "127.0.0.2", 19042)
    varve_cluster(cluster_dir, "start", "2")
    assert next_status_event(sock) == ("UP", "127.0.0.2", 19042)
    sock.close()


def test_a_frozen_node_is_down_until_it_thaws(cluster_dir):
    import os
    import signal

    varve_cluster(cluster_dir, "start", "--nodes", "2", *PORTS)
    pid = int((cluster_dir / "node2" / "pid").read_text())
    os.kill(pid, signal.SIGSTOP)
    try:
        # Frozen, it answers nothing: the failure detector convicts it.
        assert eventually(lambda: node_states(cluster_dir, 1).get("127.0.0.2") == "DN"), node_states(cluster_dir, 1)
    finally:
        os.kill(pid, signal.SIGCONT)
    # Thawed, same generation: it is heard again and UP once an ECHO gets through.
    assert eventually(lambda: node_states(cluster_dir, 1).get("127.0.0.2") == "UN"), node_states(cluster_dir, 1)
    both_up = {"127.0.0.1": "UN", "127.0.0.2": "UN"}
    assert eventually(lambda: node_states(cluster_dir, 2) == both_up), node_states(cluster_dir, 2)
