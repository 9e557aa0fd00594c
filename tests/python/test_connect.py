"""Smoke tests: the node starts, drivers connect with v4 and v5 and load the
cluster metadata, and SIGTERM stops it cleanly."""

import signal
import socket
import struct
import time
import urllib.request

import pytest

from conftest import connect


def test_ready_line_and_admin_port(varve_server):
    assert f"varve ready: CQL on 127.0.0.1:{varve_server.port}" in varve_server.log()
    assert varve_server.ready_after_s < 5, f"ready after {varve_server.ready_after_s:.2f}s"
    base = f"http://127.0.0.1:{varve_server.admin_port}"
    with urllib.request.urlopen(f"{base}/health", timeout=5) as r:
        assert r.status == 200 and r.read() == b"ok\n"
    with urllib.request.urlopen(f"{base}/metrics", timeout=5) as r:
        text = r.read().decode()
    assert "varve_connections_open" in text
    assert 'varve_requests_total{opcode="STARTUP"}' in text


def test_metadata_loads(cluster, session, protocol_version):
    assert cluster.protocol_version == protocol_version
    meta = cluster.metadata
    assert "system" in meta.keyspaces
    assert "system_schema" in meta.keyspaces
    hosts = meta.all_hosts()
    assert len(hosts) == 1
    host = hosts[0]
    assert host.datacenter == "datacenter1" and host.rack == "rack1"
    assert host.release_version == "5.0.4"
    # Token-aware routing needs the node's tokens (num_tokens 16).
    assert meta.token_map is not None and len(meta.token_map.ring) == 16


def test_release_version(session):
    row = session.execute("SELECT release_version, cluster_name FROM system.local").one()
    assert row.release_version == "5.0.4"
    assert row.cluster_name == "Test Cluster"


def test_version_negotiation_falls_back_to_v5(varve_addr):
    from cassandra.cluster import Cluster, NoHostAvailable

    # Unpinned (with beta allowed the driver opens with v6): Varve's protocol
    # error makes the driver step down to v5.
    c = Cluster([varve_addr[0]], port=varve_addr[1], allow_beta_protocol_version=True)
    try:
        c.connect()
        assert c.protocol_version == 5
    finally:
        c.shutdown()
    # v1 and v2 are not spoken (v3 is: test_protocol_v3.py); a pinned
    # client gets the protocol error, as from Cassandra 5.0.
    for version in (1, 2):
        c = Cluster([varve_addr[0]], port=varve_addr[1], protocol_version=version)
        try:
            with pytest.raises(NoHostAvailable, match="ProtocolError"):
                c.connect()
        finally:
            c.shutdown()


def test_lz4_compression(varve_addr, protocol_version):
    c = connect(*varve_addr, protocol_version, compression="lz4")
    try:
        s = c.connect()
        # Large enough that LZ4 actually compresses the response.
        rows = list(s.execute("SELECT * FROM system_schema.columns"))
        assert rows
    finally:
        c.shutdown()


def test_schema_change_event_reaches_other_clients(varve_addr, protocol_version):
    writer = connect(*varve_addr, protocol_version)
    watcher = connect(*varve_addr, protocol_version)
    try:
        ws = writer.connect()
        watcher.connect()
        name = f"ks_event_v{protocol_version}_{int(time.time() * 1000) % 100000}"
        ws.execute(f"CREATE KEYSPACE {name} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
        # The watcher refreshes its metadata only when the SCHEMA_CHANGE event arrives.
        deadline = time.monotonic() + 15
        while name not in watcher.metadata.keyspaces and time.monotonic() < deadline:
            time.sleep(0.1)
        assert name in watcher.metadata.keyspaces
        ws.execute(f"DROP KEYSPACE {name}")
    finally:
        writer.shutdown()
        watcher.shutdown()


def test_sigterm_exits_zero_and_identity_persists(start_varve, tmp_path):
    node = start_varve(data_dir=tmp_path / "persist")
    host_id = (tmp_path / "persist" / "host_id").read_text().strip()
    tokens = (tmp_path / "persist" / "tokens").read_text().split()
    assert len(tokens) == 16
    c = connect(node.host, node.port, 5)
    try:
        row = c.connect().execute("SELECT host_id FROM system.local").one()
        assert str(row.host_id) == host_id
    finally:
        c.shutdown()
    assert node.stop(signal.SIGTERM) == 0, node.log_tail()
    assert "varve stopped" in node.log()
    again = start_varve(data_dir=tmp_path / "persist")
    assert (tmp_path / "persist" / "host_id").read_text().strip() == host_id
    assert (tmp_path / "persist" / "tokens").read_text().split() == tokens
    assert again.stop(signal.SIGINT) == 0, again.log_tail()


def _options_reply(sock):
    """Sends a v4 OPTIONS and returns (opcode, body) of the reply."""
    sock.sendall(bytes([4, 0, 0, 1, 0x05, 0, 0, 0, 0]))
    head = b""
    while len(head) < 9:
        chunk = sock.recv(9 - len(head))
        if not chunk:
            raise ConnectionError("closed before a reply")
        head += chunk
    length = struct.unpack(">I", head[5:9])[0]
    body = b""
    while len(body) < length:
        chunk = sock.recv(length - len(body))
        if not chunk:
            raise ConnectionError("closed inside a reply")
        body += chunk
    return head[4], body


def test_connections_past_the_limit_get_overloaded(start_varve, tmp_path):
    config = tmp_path / "varve.yaml"
    config.write_text("native_transport_max_concurrent_connections: 2\nsome_cassandra_only_key: 1\n")
    node = start_varve("--config", str(config))
    assert "unknown or unsupported key 'some_cassandra_only_key' ignored" in node.log()
    held = [socket.create_connection((node.host, node.port), timeout=5) for _ in range(2)]
    for s in held:
        assert _options_reply(s)[0] == 0x06  # SUPPORTED
    extra = socket.create_connection((node.host, node.port), timeout=5)
    opcode, body = _options_reply(extra)
    assert opcode == 0x00 and struct.unpack(">i", body[:4])[0] == 0x1001, body  # ERROR, Overloaded
    assert b"Too many connections" in body
    extra.close()
    held.pop().close()
    deadline = time.monotonic() + 5
    while True:
        s = socket.create_connection((node.host, node.port), timeout=5)
        opcode, _ = _options_reply(s)
        s.close()
        if opcode == 0x06 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert opcode == 0x06, "a slot frees when a connection closes"
    for s in held:
        s.close()
    assert node.stop() == 0, node.log_tail()


@pytest.mark.parametrize("compression", [None, "lz4"])
def test_long_values_arrive_whole(varve_server, protocol_version, compression):
    """Values at, below and above the server's splice threshold (4 KiB: long values are
    sent from their own buffers with vectored writes when the frame is not compressed), and
    far larger, read back byte for byte: from the memtable and from an sstable, one row at a
    time and many per page, and from 64 concurrent reads whose answers leave in bursts."""
    from cassandra.query import SimpleStatement

    from conftest import nodetool

    c = connect(varve_server.host, varve_server.port, protocol_version,
                **({"compression": compression} if compression else {}))
    try:
        s = c.connect()
        ks = f"splice_v{protocol_version}_{compression or 'none'}"
        s.execute(f"CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute(f"CREATE TABLE IF NOT EXISTS {ks}.t (k int PRIMARY KEY, a blob, b blob)")
        sizes = [0, 1, 4095, 4096, 4097, 65536, 300_000]
        want = {}
        insert = s.prepare(f"INSERT INTO {ks}.t (k, a, b) VALUES (?, ?, ?)")
        for k in range(64):
            n = sizes[k % len(sizes)]
            # Distinct bytes per row and column, so a value sent twice or out of place shows.
            a = bytes((k * 7 + i) % 251 for i in range(n))
            b = None if k % 5 == 0 else bytes((k * 13 + i) % 241 for i in range(sizes[(k + 3) % len(sizes)]))
            s.execute(insert, (k, a, b))
            want[k] = (a, b)
        select = s.prepare(f"SELECT a, b FROM {ks}.t WHERE k = ?")

        def check():
            futures = [(k, s.execute_async(select, (k,))) for k in want]
            for k, f in futures:
                row = f.result().one()
                assert (row.a, row.b) == want[k], k
            got = {r.k: (r.a, r.b) for r in s.execute(
                SimpleStatement(f"SELECT k, a, b FROM {ks}.t", fetch_size=1000))}
            assert got == want

        check()
        nodetool(varve_server, "flush", ks, "t")
        check()
    finally:
        c.shutdown()
