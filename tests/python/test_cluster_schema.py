"""Schema changes on a cluster of real processes go through the metadata
log: a DDL statement on any node is on every node before it returns, every
node reports the same schema_version (system.local and system.peers), a
driver's schema agreement wait passes at once, and clients registered on
another node hear SCHEMA_CHANGE; a user type travels like a table."""

import pytest

from test_cluster_launcher import FIXED_PORTS, PORTS, pinned, string_list, string_map, varve_cluster  # noqa: F401 (FIXED_PORTS: conftest.py)


@pytest.fixture
def cluster_dir(tmp_path):
    directory = tmp_path / "cluster"
    varve_cluster(directory, "start", "--nodes", "3", *PORTS)
    yield directory
    varve_cluster(directory, "stop", check=False)


def versions(host):
    """(system.local's schema_version, {peer: schema_version}) on `host`."""
    cluster = pinned(host)
    s = cluster.connect()
    local = s.execute("SELECT schema_version FROM system.local").one().schema_version
    peers = {str(r.peer): r.schema_version for r in s.execute("SELECT peer, schema_version FROM system.peers")}
    cluster.shutdown()
    return local, peers


def test_ddl_on_any_node_reaches_every_node_and_the_versions_agree(cluster_dir):
    from cassandra.cluster import Cluster

    # A driver with its default schema agreement wait (10 s): each DDL
    # returns once every node reports the new version, so none times out.
    for host, cql in (
        ("127.0.0.2", "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}"),
        ("127.0.0.3", "CREATE TABLE ks.t (k int PRIMARY KEY, v text)"),
        ("127.0.0.1", "ALTER TABLE ks.t ADD w int"),
        ("127.0.0.2", "CREATE TABLE ks.gone (k int PRIMARY KEY)"),
        ("127.0.0.3", "DROP TABLE ks.gone"),
    ):
        cluster = Cluster([host], port=19042, protocol_version=5)
        session = cluster.connect()
        session.execute(cql)
        assert cluster.control_connection.wait_for_schema_agreement(wait_time=0.1), cql
        cluster.shutdown()
    seen = [versions(f"127.0.0.{i}") for i in (1, 2, 3)]
    local_versions = {v for v, _ in seen}
    assert len(local_versions) == 1, seen
    assert all(set(peers.values()) == local_versions for _, peers in seen), seen
    for i in (1, 2, 3):
        cluster = pinned(f"127.0.0.{i}")
        cols = {r.column_name for r in cluster.connect().execute(
            "SELECT column_name FROM system_schema.columns WHERE keyspace_name = 'ks' AND table_name = 't'")}
        tables = {r.table_name for r in cluster.connect().execute(
            "SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'ks'")}
        cluster.shutdown()
        assert cols == {"k", "v", "w"} and tables == {"t"}, (i, cols, tables)


def test_concurrent_ddl_on_two_nodes_never_diverges(cluster_dir):
    import threading

    errors = []

    def create(host, name):
        cluster = pinned(host)
        try:
            s = cluster.connect()
            s.execute(f"CREATE KEYSPACE IF NOT EXISTS {name} WITH replication = "
                      "{'class': 'SimpleStrategy', 'replication_factor': 1}")
            for t in range(4):
                s.execute(f"CREATE TABLE IF NOT EXISTS {name}.t{t} (k int PRIMARY KEY)")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append((host, e))
        finally:
            cluster.shutdown()

    threads = [threading.Thread(target=create, args=(f"127.0.0.{i}", f"ks{i % 2}")) for i in (1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    seen = [versions(f"127.0.0.{i}") for i in (1, 2, 3)]
    assert len({v for v, _ in seen}) == 1, seen
    for i in (1, 2, 3):
        cluster = pinned(f"127.0.0.{i}")
        rows = cluster.connect().execute(
            "SELECT keyspace_name, table_name FROM system_schema.tables WHERE keyspace_name IN ('ks0', 'ks1')")
        cluster.shutdown()
        assert sorted((r.keyspace_name, r.table_name) for r in rows) == [
            (ks, f"t{t}") for ks in ("ks0", "ks1") for t in range(4)], i


def test_a_client_registered_on_another_node_hears_the_schema_change(cluster_dir):
    import struct

    from helpers import OPCODE_READY, OPCODE_STARTUP, open_socket, read_frame, v4_frame

    sock = open_socket("127.0.0.3", 19042, timeout=30)
    sock.sendall(v4_frame(OPCODE_STARTUP, string_map({"CQL_VERSION": "3.0.0"})))
    assert read_frame(sock)[0] == OPCODE_READY
    sock.sendall(v4_frame(0x0B, string_list(["SCHEMA_CHANGE"]), stream=1))
    assert read_frame(sock)[0] == OPCODE_READY
    cluster = pinned("127.0.0.1")
    cluster.connect().execute(
        "CREATE KEYSPACE evks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    cluster.shutdown()
    while True:
        opcode, body = read_frame(sock)
        if opcode == 0x0C:
            break
    (n,) = struct.unpack(">H", body[:2])
    assert body[2:2 + n].decode() == "SCHEMA_CHANGE"
    assert b"CREATED" in body and b"KEYSPACE" in body and b"evks" in body
    sock.close()


def test_a_user_type_reaches_every_node_with_its_values(cluster_dir):
    """CREATE and ALTER TYPE on one node: every node shows the type in
    system_schema.types, takes a table over it, and reads a value written
    on another node (the type travels in the log like a table)."""
    steps = (
        ("127.0.0.1", "CREATE KEYSPACE uks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}"),
        ("127.0.0.2", "CREATE TYPE uks.addr (street text, zip int)"),
        ("127.0.0.3", "CREATE TABLE uks.t (k int PRIMARY KEY, a frozen<addr>, n addr)"),
        ("127.0.0.1", "ALTER TYPE uks.addr ADD city text"),
    )
    for host, cql in steps:
        cluster = pinned(host)
        cluster.connect().execute(cql)
        cluster.shutdown()
    for i in (1, 2, 3):
        cluster = pinned(f"127.0.0.{i}")
        s = cluster.connect()
        [t] = s.execute("SELECT field_names, field_types FROM system_schema.types WHERE keyspace_name = 'uks'")
        assert (t.field_names, t.field_types) == (["street", "zip", "city"], ["text", "int", "text"]), i
        s.execute(f"INSERT INTO uks.t (k, a, n) VALUES ({i}, {{street: 's{i}'}}, {{zip: {i}}})")
        cluster.shutdown()
    cluster = pinned("127.0.0.2")
    s = cluster.connect()
    got = {r.k: (r.a_street, r.n_zip, r.n_city) for r in s.execute("SELECT k, a.street, n.zip, n.city FROM uks.t")}
    cluster.shutdown()
    assert got == {i: (f"s{i}", i, None) for i in (1, 2, 3)}
