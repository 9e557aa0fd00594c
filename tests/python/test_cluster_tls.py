"""TLS between nodes (`server_encryption_options`, docs/design/security.md,
section 11) and for clients, on clusters of real processes (`varve cluster
start`), with certificates made in the test.

`internode_encryption: dc` on two data centres (its own cluster, started
and stopped by its one test):

- writes at EACH_QUORUM and ALL go through across the data centres;
- the link to the other data centre is TLS and the one inside the data
  centre becomes clear text (the nodes log each connection they open);
- a clear-text HELLO naming the other data centre's node is refused
  (ENCRYPTION_REQUIRED), one naming a node of this data centre is accepted.

`internode_encryption: all` with PasswordAuthenticator, CassandraAuthorizer
and client TLS on three nodes (one cluster for the tests after it):

- the nodes authenticate each other and replicate (writes and reads at ALL
  on every node cross the TLS links);
- the storage port speaks no clear text: a plain internode HELLO is closed;
- a role created and granted on node 1 logs in over TLS on nodes 2 and 3 at
  once with the Python driver and cqlsh, and may do exactly what it was
  granted (the `scylla` crate does the same on its own three-node cluster
  in crates/driver-tests/tests/scylla_cluster_auth.rs);
- a fourth node whose certificate another CA signed is refused by the
  cluster and never joins.
"""

import os
import re
import socket
import ssl
import struct
import subprocess
import time
import uuid
import zlib

import pytest
import trustme
from cassandra import ConsistencyLevel, Unauthorized
from cassandra.auth import PlainTextAuthProvider
from cassandra.query import SimpleStatement

from conftest import VarveNode, pinned_cluster
from test_cluster_auth import logs
from test_cluster_launcher import eventually, varve_cluster
from test_cqlsh import CQLSH, CQLSH_TIMEOUT_S

# Ports no other test_cluster_* module uses.
NATIVE, ADMIN, STORAGE = 19742, 19880, 17700
FIXED_PORTS = NATIVE  # conftest.py: modules on this port set run in order
PORTS = ["--native-port", str(NATIVE), "--admin-port", str(ADMIN), "--storage-port", str(STORAGE)]
DC_NATIVE, DC_ADMIN, DC_STORAGE = 19752, 19890, 17710
DC_PORTS = ["--native-port", str(DC_NATIVE), "--admin-port", str(DC_ADMIN), "--storage-port", str(DC_STORAGE)]
HOSTS = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
STRANGER = "127.0.0.4"
# How long the node with an untrusted certificate is given to (not) start.
STRANGER_WAIT_S = 8
REPLICATION = "{'class': 'SimpleStrategy', 'replication_factor': 3}"
SUPERUSER = ("cassandra", "cassandra")
# How long the nodes of a fresh dc cluster may take to reopen their links
# inside the data centre in clear text (a gossip round or two).
CLEAR_LINK_WAIT_S = 15
# The internode frame layout (docs/format/internode.md, sections 2 and 4).
FRAME_MAGIC = b"VRVN"
VERB_HELLO, VERB_HELLO_ACK, VERB_HELLO_REJECT = 1, 2, 3
REJECT_ENCRYPTION_REQUIRED = 7
CLUSTER_NAME = b"varve-local"


def keystore(dir, ca, name):
    """A PEM keystore for every test address, signed by `ca`."""
    cert = ca.issue_cert(*HOSTS, STRANGER)
    path = dir / f"{name}.pem"
    path.write_bytes(cert.private_key_pem.bytes() + b"".join(c.bytes() for c in cert.cert_chain_pems))
    return path


def internode_yaml(dir, ca, name, mode="all", extra=""):
    """A config whose node certificate `ca` signed, trusting the test CA."""
    config = dir / f"{name}.yaml"
    config.write_text(f"server_encryption_options:\n  internode_encryption: {mode}\n"
                      f"  keystore: {keystore(dir, ca, name)}\n  truststore: {dir / 'ca.pem'}\n"
                      "  require_client_auth: true\n" + extra)
    return config


def make_ca(dir):
    ca = trustme.CA()
    (dir / "ca.pem").write_bytes(ca.cert_pem.bytes())
    return ca


def client_context(dir):
    return ssl.create_default_context(cafile=str(dir / "ca.pem"))


def pinned(host, ssl_context=None, port=NATIVE, user=None):
    """A session whose requests all go to `host` (logged in as `user`, a
    (name, password) pair, if given)."""
    auth = PlainTextAuthProvider(*user) if user else None
    cluster = pinned_cluster(host, port, ssl_context=ssl_context, auth_provider=auth)
    return cluster, cluster.connect()


# --- internode_encryption: dc ---------------------------------------------


def hello(address, port):
    """A plain internode HELLO frame naming `address:port` as the sender."""
    payload = bytes([1, 1, 0]) + bytes([len(CLUSTER_NAME)]) + CLUSTER_NAME + bytes(16) + uuid.uuid4().bytes
    payload += struct.pack(">q", 1) + bytes([4]) + socket.inet_aton(address) + struct.pack(">H", port)
    payload += bytes([4]) + b"fake"
    header = FRAME_MAGIC + struct.pack(">BBHqqII", 1, 0, VERB_HELLO, 0, 0, 0, len(payload))
    header += struct.pack(">I", zlib.crc32(header))
    return header + payload + struct.pack(">I", zlib.crc32(payload))


def answer_to_plain_hello(host, claimed):
    """(verb, first payload byte) of `host`'s answer to a clear-text HELLO
    that claims to come from the node at `claimed`."""
    with socket.create_connection((host, DC_STORAGE), timeout=10) as sock:
        sock.sendall(hello(claimed, DC_STORAGE))
        data = b""
        while len(data) < 37:
            chunk = sock.recv(4096)
            assert chunk, f"closed after {data!r}"
            data += chunk
    assert data[:4] == FRAME_MAGIC, data
    return struct.unpack(">H", data[6:8])[0], data[36]


def opened(directory, node, peer, tls):
    """Whether node `node` logged opening a connection to `peer` with `tls`."""
    text = (directory / f"node{node}" / "varve.log").read_text(errors="replace")
    pattern = rf"internode connection open addr={re.escape(peer)}:{DC_STORAGE} kind=\w+ tls={str(tls).lower()}"
    return re.search(pattern, text) is not None


@pytest.fixture
def dc_cluster(tmp_path):
    config = internode_yaml(tmp_path, make_ca(tmp_path), "dc", mode="dc")
    directory = tmp_path / "cluster"
    varve_cluster(directory, "start", "--nodes", "3", "--dcs", "2", *DC_PORTS, "--", "--config", str(config))
    yield directory
    varve_cluster(directory, "stop", check=False)


def test_with_dc_only_links_between_data_centres_are_tls(dc_cluster):
    # Nodes 1 and 2 are dc1, node 3 is dc2.
    c, s = pinned(HOSTS[0], port=DC_NATIVE)
    try:
        s.execute("CREATE KEYSPACE dks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 2, 'dc2': 1}")
        s.execute("CREATE TABLE dks.t (k int PRIMARY KEY, v text)")
        for k, level in enumerate([ConsistencyLevel.EACH_QUORUM, ConsistencyLevel.ALL]):
            s.execute(SimpleStatement("INSERT INTO dks.t (k, v) VALUES (%s, 'x')", consistency_level=level), (k,))
    finally:
        c.shutdown()
    c, s = pinned(HOSTS[2], port=DC_NATIVE)
    try:
        rows = s.execute(SimpleStatement("SELECT k FROM dks.t", consistency_level=ConsistencyLevel.ALL))
        assert sorted(r.k for r in rows) == [0, 1]
    finally:
        c.shutdown()
    deadline = time.monotonic() + CLEAR_LINK_WAIT_S
    while not (opened(dc_cluster, 1, HOSTS[1], False) and opened(dc_cluster, 2, HOSTS[0], False)):
        assert time.monotonic() < deadline, "no clear-text link inside dc1:\n" + "\n".join(logs(dc_cluster))
        time.sleep(0.2)
    for node, peer in ((1, HOSTS[2]), (2, HOSTS[2]), (3, HOSTS[0]), (3, HOSTS[1])):
        assert opened(dc_cluster, node, peer, True), (node, peer)
        assert not opened(dc_cluster, node, peer, False), (node, peer)
    assert answer_to_plain_hello(HOSTS[0], HOSTS[2]) == (VERB_HELLO_REJECT, REJECT_ENCRYPTION_REQUIRED)
    assert answer_to_plain_hello(HOSTS[2], HOSTS[0]) == (VERB_HELLO_REJECT, REJECT_ENCRYPTION_REQUIRED)
    assert answer_to_plain_hello(HOSTS[0], STRANGER) == (VERB_HELLO_REJECT, REJECT_ENCRYPTION_REQUIRED)
    assert answer_to_plain_hello(HOSTS[0], HOSTS[1])[0] == VERB_HELLO_ACK


# --- internode_encryption: all, logins, client TLS ------------------------


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    dir = tmp_path_factory.mktemp("cluster_tls")
    ca = make_ca(dir)
    secured = ("authenticator: PasswordAuthenticator\nauthorizer: CassandraAuthorizer\n"
               f"client_encryption_options:\n  enabled: true\n  keystore: {keystore(dir, ca, 'client')}\n")
    config = internode_yaml(dir, ca, "member", extra=secured)
    directory = dir / "cluster"
    varve_cluster(directory, "start", "--nodes", "3", *PORTS, "--", "--config", str(config))
    yield dir, directory
    varve_cluster(directory, "stop", check=False)


def secure(dir, host, user=SUPERUSER):
    return pinned(host, client_context(dir), user=user)


def test_nodes_replicate_over_mutual_tls(tls_cluster):
    dir, _ = tls_cluster
    c, s = secure(dir, HOSTS[0])
    try:
        s.execute(f"CREATE KEYSPACE IF NOT EXISTS tks WITH replication = {REPLICATION}")
        s.execute("CREATE TABLE IF NOT EXISTS tks.t (k int PRIMARY KEY, v text)")
        for i, _ in enumerate(HOSTS):
            s.execute(SimpleStatement("INSERT INTO tks.t (k, v) VALUES (%s, %s)",
                                      consistency_level=ConsistencyLevel.ALL), (i, "x" * 20000))
    finally:
        c.shutdown()
    for host in HOSTS:
        c, s = secure(dir, host)
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


def cqlsh(dir, host, user, password, statement):
    home = dir / "cqlsh-home"
    home.mkdir(exist_ok=True)
    env = dict(os.environ, HOME=str(home), SSL_CERTFILE=str(dir / "ca.pem"), SSL_VALIDATE="true")
    return subprocess.run([CQLSH, host, str(NATIVE), "--ssl", "-u", user, "-p", password, "--connect-timeout", "20",
                           "--request-timeout", "20", "-e", statement], capture_output=True, text=True,
                          timeout=CQLSH_TIMEOUT_S, env=env, stdin=subprocess.DEVNULL)


def test_a_role_made_on_one_node_logs_in_over_tls_on_the_others_at_once(tls_cluster):
    dir, _ = tls_cluster
    c, admin = secure(dir, HOSTS[0])
    try:
        admin.execute(f"CREATE KEYSPACE sks WITH replication = {REPLICATION}")
        admin.execute("CREATE TABLE sks.t (k int PRIMARY KEY, v text)")
        admin.execute("INSERT INTO sks.t (k, v) VALUES (1, 'granted')")
        admin.execute("CREATE ROLE reader WITH PASSWORD = 'r3ad' AND LOGIN = true")
        admin.execute("GRANT SELECT ON KEYSPACE sks TO reader")
    finally:
        c.shutdown()
    # No wait: each statement returned once every node applied it.
    for host in HOSTS[1:]:
        c, s = secure(dir, host, user=("reader", "r3ad"))
        try:
            assert [r.v for r in s.execute("SELECT v FROM sks.t WHERE k = 1")] == ["granted"], host
            with pytest.raises(Unauthorized, match="User reader has no MODIFY permission on <table sks.t>"):
                s.execute("INSERT INTO sks.t (k, v) VALUES (2, 'not granted')")
        finally:
            c.shutdown()
    out = cqlsh(dir, HOSTS[2], "reader", "r3ad", "SELECT v FROM sks.t WHERE k = 1")
    assert out.returncode == 0 and "granted" in out.stdout, out.stdout + out.stderr
    out = cqlsh(dir, HOSTS[1], "reader", "r3ad", "DROP TABLE sks.t")
    assert out.returncode != 0 and "has no DROP permission" in out.stdout + out.stderr, out.stdout + out.stderr


def test_a_node_with_an_untrusted_certificate_is_refused(tls_cluster):
    dir, directory = tls_cluster
    config = internode_yaml(dir, trustme.CA(), "stranger")
    node = VarveNode(dir / "stranger", ["--seeds", HOSTS[0], "--config", str(config)],
                     listen=STRANGER, storage_port=STORAGE)
    # The seed's refusal (crates/cluster/src/net/inbound.rs, `refused`).
    refused = lambda: any("internode: TLS handshake failed" in text for text in logs(directory))  # noqa: E731
    try:
        # Never ready: it cannot join. A few seconds show it; the harness's
        # whole READY_TIMEOUT_S would only make the test slower.
        with pytest.raises(RuntimeError):
            node.start(port=NATIVE, admin_port=ADMIN, timeout_s=STRANGER_WAIT_S)
        assert eventually(refused), "the refusal is logged"
        c, s = secure(dir, HOSTS[0])
        try:
            assert STRANGER not in {str(r.peer) for r in s.execute("SELECT peer FROM system.peers")}
        finally:
            c.shutdown()
    finally:
        if node.running:
            node.stop()
