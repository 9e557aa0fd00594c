"""Nodes that join a running cluster one at a time: each takes tokens the
cluster metadata log's allocator balances for replication factor 3
(`allocate_tokens_for_local_replication_factor`), keeps them across
restarts, and shows them to drivers. A new node joining a cluster that
holds tables streams its data (test_cluster_bootstrap.py), unless
`auto_bootstrap: false` lets it join without data, as in Cassandra.

Each node runs on its own 127.0.0.x with the same ports, as a real
`varve server` process, and joins through 127.0.0.1 as its seed.
"""

import re
import signal
import subprocess
import time

import pytest

from conftest import VarveNode, connect, pinned_cluster, varve_bin

NATIVE, ADMIN, STORAGE = 19142, 19280, 17100
FIXED_PORTS = NATIVE  # conftest.py: modules on this port set run in order
RING = 1 << 64


def start_node(tmp_path, index, *extra):
    node = VarveNode(tmp_path / f"node{index}", ["--seeds", "127.0.0.1", *extra],
                     listen=f"127.0.0.{index}", storage_port=STORAGE)
    return node.start(port=NATIVE, admin_port=ADMIN)


def tokens_by_node(host):
    """{address: [tokens]} from system.local and system.peers of `host`
    (both queries go to `host` itself)."""
    cluster = pinned_cluster(host, NATIVE)
    try:
        session = cluster.connect()
        local = session.execute("SELECT listen_address, tokens FROM system.local").one()
        nodes = {str(local.listen_address): sorted(int(t) for t in local.tokens)}
        for peer in session.execute("SELECT peer, tokens FROM system.peers"):
            nodes[str(peer.peer)] = sorted(int(t) for t in peer.tokens or [])
        return nodes
    finally:
        cluster.shutdown()


def settled_tokens(host, addresses, timeout_s=15):
    """`tokens_by_node(host)` once it lists every address with tokens
    (gossip brings a new node's tokens within a few intervals)."""
    deadline = time.monotonic() + timeout_s
    while True:
        seen = tokens_by_node(host)
        if sorted(seen) == sorted(addresses) and all(seen.values()):
            return seen
        assert time.monotonic() < deadline, f"{host} sees {seen}"
        time.sleep(0.2)


def replicated_shares(nodes, rf=3):
    """Each node's share of the ring it replicates at `rf` (SimpleStrategy)."""
    ring = sorted((t, n) for n, tokens in nodes.items() for t in tokens)
    load = {n: 0 for n in nodes}
    for k, (token, _) in enumerate(ring):
        width = (token - ring[k - 1][0]) % RING
        seen = []
        j = k
        while len(seen) < min(rf, len(nodes)):
            owner = ring[j % len(ring)][1]
            if owner not in seen:
                seen.append(owner)
                load[owner] += width
            j += 1
    return {n: v / RING for n, v in load.items()}


@pytest.fixture
def nodes():
    started = []
    yield started
    for node in started:
        if node.running:
            node.stop(signal.SIGKILL)


def test_nodes_joining_one_at_a_time_get_balanced_tokens_they_keep(tmp_path, nodes):
    for index in range(1, 6):
        nodes.append(start_node(tmp_path, index))
    addresses = [f"127.0.0.{i}" for i in range(1, 6)]
    seen = settled_tokens("127.0.0.1", addresses)
    every = [t for tokens in seen.values() for t in tokens]
    assert all(len(tokens) == 16 for tokens in seen.values()), seen
    assert len(set(every)) == len(every), "two nodes share a token"
    shares = replicated_shares(seen)
    # Five nodes at RF 3 each replicate 3/5 of the ring when balanced.
    spread = max(shares.values()) / min(shares.values())
    assert spread < 1.25, shares
    # Every node reports the same ring, its own tokens in system.local.
    for index in range(2, 6):
        assert settled_tokens(f"127.0.0.{index}", addresses) == seen
    # A restart keeps the tokens the node was given.
    node5 = nodes[4]
    assert node5.stop() == 0
    node5.start(port=NATIVE, admin_port=ADMIN)
    assert settled_tokens("127.0.0.5", addresses) == seen
    assert (tmp_path / "node5" / "tokens").read_text().split() == [str(t) for t in seen["127.0.0.5"]]


def test_auto_bootstrap_false_joins_a_cluster_with_tables_without_streaming(tmp_path, nodes):
    nodes.append(start_node(tmp_path, 1))
    cluster = connect("127.0.0.1", NATIVE, 5, max_schema_agreement_wait=0)
    try:
        session = cluster.connect()
        session.execute("CREATE KEYSPACE ks WITH replication = "
                        "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        session.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        session.execute("INSERT INTO ks.t (k, v) VALUES (1, 1)")
    finally:
        cluster.shutdown()
    # With auto_bootstrap: false the operator takes the missing data upon
    # themselves (a repair brings it), and the node joins at once, as in
    # Cassandra; with the default it would stream (test_cluster_bootstrap.py).
    config = tmp_path / "no-bootstrap.yaml"
    config.write_text("auto_bootstrap: false\n")
    joined = start_node(tmp_path, 3, "--config", str(config))
    nodes.append(joined)
    assert sorted(settled_tokens("127.0.0.1", ["127.0.0.1", "127.0.0.3"])) == ["127.0.0.1", "127.0.0.3"]
    assert "bootstrap: this node is joining" not in joined.log()


def test_a_node_of_another_cluster_name_stops_at_once_saying_why(tmp_path, nodes):
    nodes.append(start_node(tmp_path, 1))
    stranger = VarveNode(tmp_path / "node2", ["--seeds", "127.0.0.1", "--cluster-name", "Other Cluster"],
                         listen="127.0.0.2", storage_port=STORAGE)
    nodes.append(stranger)
    began = time.monotonic()
    with pytest.raises(RuntimeError, match="exited"):
        stranger.start(port=NATIVE, admin_port=ADMIN)
    assert time.monotonic() - began < 20, "it waited the whole join limit"
    assert "seeds belong to a cluster with another name" in stranger.log(), stranger.log_tail()
    assert list(tokens_by_node("127.0.0.1")) == ["127.0.0.1"]


def test_a_new_node_on_a_dead_members_address_is_refused_saying_to_replace_it(tmp_path, nodes):
    """Node 3 dies and its data is lost; a new node started on its address
    without `replace_address_first_boot` (two nodes on one address) stops
    within seconds saying how to replace it, and the ring is unchanged."""
    for index in (1, 2, 3):
        nodes.append(start_node(tmp_path, index))
    settled_tokens("127.0.0.1", ["127.0.0.1", "127.0.0.2", "127.0.0.3"])
    nodes[2].stop(signal.SIGKILL)
    fresh = VarveNode(tmp_path / "node3-new", ["--seeds", "127.0.0.1"],
                      listen="127.0.0.3", storage_port=STORAGE)
    nodes.append(fresh)
    began = time.monotonic()
    with pytest.raises(RuntimeError, match="exited"):
        fresh.start(port=NATIVE, admin_port=ADMIN)
    assert time.monotonic() - began < 20, "it waited the whole join limit"
    assert re.search(r"address 127\.0\.0\.3:\d+ belongs to node .* replace_address_first_boot: 127\.0\.0\.3",
                     fresh.log()), fresh.log_tail()
    # The ring still holds the dead node, once, and nobody else.
    status = subprocess.run([varve_bin(), "nodetool", "-h", "127.0.0.1", "-p", str(ADMIN), "status"],
                            capture_output=True, text=True, timeout=30).stdout
    rows = [line.split()[:2] for line in status.splitlines() if line[:3] in ("UN ", "DN ", "UJ ")]
    assert sorted(r[1] for r in rows) == ["127.0.0.1", "127.0.0.2", "127.0.0.3"], status
