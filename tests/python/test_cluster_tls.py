"""Internode TLS (`server_encryption_options.internode_encryption: all`,
docs/design/security.md, section 11) on a three-node cluster of real
processes (`varve cluster start`), with certificates made in the test:

- the nodes authenticate each other and replicate (writes and reads at ALL
  on every node cross the TLS links);
- the storage port speaks no clear text: a plain internode HELLO is closed;
- a fourth node whose certificate another CA signed is refused by the
  cluster and never joins.
"""

import socket

import pytest
import trustme
from cassandra import ConsistencyLevel
from cassandra.query import SimpleStatement

from conftest import VarveNode
from test_cluster_auth import logs
from test_cluster_launcher import eventually, varve_cluster

# Ports no other test_cluster_* module uses.
NATIVE, ADMIN, STORAGE = 19742, 19880, 17700
FIXED_PORTS = NATIVE  # conftest.py: modules on this port set run in order
PORTS = ["--native-port", str(NATIVE), "--admin-port", str(ADMIN), "--storage-port", str(STORAGE)]
HOSTS = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
STRANGER = "127.0.0.4"
# How long the node with an untrusted certificate is given to (not) start.
STRANGER_WAIT_S = 8
REPLICATION = "{'class': 'SimpleStrategy', 'replication_factor': 3}"


def internode_yaml(dir, ca, name):
    """A config whose node certificate `ca` signed, trusting the test CA."""
    cert = ca.issue_cert(*HOSTS, STRANGER)
    keystore = dir / f"{name}.pem"
    keystore.write_bytes(cert.private_key_pem.bytes() + b"".join(c.bytes() for c in cert.cert_chain_pems))
    config = dir / f"{name}.yaml"
    config.write_text("server_encryption_options:\n  internode_encryption: all\n"
                      f"  keystore: {keystore}\n  truststore: {dir / 'ca.pem'}\n  require_client_auth: true\n")
    return config


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    dir = tmp_path_factory.mktemp("cluster_tls")
    ca = trustme.CA()
    (dir / "ca.pem").write_bytes(ca.cert_pem.bytes())
    config = internode_yaml(dir, ca, "member")
    directory = dir / "cluster"
    varve_cluster(directory, "start", "--nodes", "3", *PORTS, "--", "--config", str(config))
    yield dir, directory
    varve_cluster(directory, "stop", check=False)


def pinned(host):
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import WhiteListRoundRobinPolicy

    profile = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy([host]), request_timeout=20)
    cluster = Cluster([host], port=NATIVE, protocol_version=5,
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile})
    return cluster, cluster.connect()


def test_nodes_replicate_over_mutual_tls(tls_cluster):
    c, s = pinned(HOSTS[0])
    try:
        s.execute(f"CREATE KEYSPACE IF NOT EXISTS tks WITH replication = {REPLICATION}")
        s.execute("CREATE TABLE IF NOT EXISTS tks.t (k int PRIMARY KEY, v text)")
        for i, _ in enumerate(HOSTS):
            s.execute(SimpleStatement("INSERT INTO tks.t (k, v) VALUES (%s, %s)",
                                      consistency_level=ConsistencyLevel.ALL), (i, "x" * 20000))
    finally:
        c.shutdown()
    for host in HOSTS:
        c, s = pinned(host)
        try:
            rows = s.execute(SimpleStatement("SELECT k, v FROM tks.t", consistency_level=ConsistencyLevel.ALL))
            assert sorted(r.k for r in rows) == [0, 1, 2], host
            assert len(s.execute("SELECT peer FROM system.peers").all()) == 2, host
        finally:
            c.shutdown()


def test_the_storage_port_speaks_no_clear_text(tls_cluster):
    with socket.create_connection((HOSTS[0], STORAGE), timeout=10) as sock:
        # The frame magic of a plain internode HELLO ("VRVN"), then junk.
        sock.sendall(b"VRVN\x01" + b"\x00" * 64)
        data = b""
        try:
            while chunk := sock.recv(4096):
                data += chunk
        except ConnectionResetError:
            pass
        assert b"VRVN" not in data


def test_a_node_with_an_untrusted_certificate_is_refused(tls_cluster):
    dir, directory = tls_cluster
    config = internode_yaml(dir, trustme.CA(), "stranger")
    node = VarveNode(dir / "stranger", ["--seeds", HOSTS[0], "--config", str(config)],
                     listen=STRANGER, storage_port=STORAGE)
    refused = lambda: any(  # noqa: E731
        "internode" in text and ("TLS" in text or "certificate" in text.lower() or "handshake" in text)
        for text in logs(directory))
    try:
        # Never ready: it cannot join. A few seconds show it; the harness's
        # whole READY_TIMEOUT_S would only make the test slower.
        with pytest.raises(RuntimeError):
            node.start(port=NATIVE, admin_port=ADMIN, timeout_s=STRANGER_WAIT_S)
        assert eventually(refused), "the refusal is logged"
        c, s = pinned(HOSTS[0])
        try:
            assert STRANGER not in {str(r.peer) for r in s.execute("SELECT peer FROM system.peers")}
        finally:
            c.shutdown()
    finally:
        if node.running:
            node.stop()
