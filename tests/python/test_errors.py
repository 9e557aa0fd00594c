"""Errors: each kind with its code and a message naming the problem, values
the driver would never send (wrong length, invalid UTF-8), key size limits,
malformed frames over a raw socket; and the server keeps serving."""

import struct

import pytest
from cassandra import AlreadyExists, InvalidRequest
from cassandra.protocol import ConfigurationException, SyntaxException

from conftest import connect
from helpers import (ERROR_PROTOCOL, OPCODE_ERROR, OPCODE_OPTIONS, OPCODE_READY, OPCODE_STARTUP,
                     OPCODE_SUPPORTED, bind_raw, error_code, open_socket, raises, read_frame, rows, string_map, unique,
                     v4_frame)

KEY_LIMIT = 65535
MAX_FRAME = 256 * 1024 * 1024


@pytest.fixture(scope="module")
def table(session, keyspace):
    name = unique("e")
    session.execute(f"CREATE TABLE {name} (k text, c int, t text, a ascii, i int, b bigint, u uuid, d double,"
                    " PRIMARY KEY (k, c))")
    return name


def still_serving(varve_addr, protocol_version):
    """A brand-new driver session connects and queries."""
    c = connect(*varve_addr, protocol_version)
    try:
        s = c.connect()
        assert s.execute("SELECT release_version FROM system.local").one() is not None
    finally:
        c.shutdown()


@pytest.mark.parametrize("cql", [
    "SELEC * FROM t",
    "SELECT * FROM",
    "SELECT * FROM t WHERE",
    "INSERT INTO t VALUES (1)",
    "SELECT * FROM t WHERE k = 'unterminated",
    "CREATE TABLE (k int PRIMARY KEY)",
    "UPDATE t SET WHERE k = 1",
    "SELECT * FROM t; SELECT * FROM t",
    "\x00\x01garbage",
])
def test_syntax_errors(session, keyspace, cql):
    raises(session, SyntaxException, cql)


def test_invalid_requests_name_the_problem(session, table):
    raises(session, InvalidRequest, "SELECT * FROM no_such_table_x", match="no_such_table_x")
    raises(session, InvalidRequest, f"SELECT nosuchcol FROM {table}", match="nosuchcol")
    raises(session, InvalidRequest, f"INSERT INTO {table} (k, c, nosuchcol) VALUES ('a', 1, 1)", match="nosuchcol")
    raises(session, InvalidRequest, f"INSERT INTO {table} (k, c, i) VALUES ('a', 1, 'text')", match="i")
    raises(session, InvalidRequest, f"SELECT * FROM {unique('no_ks')}.t", match="no_ks")
    raises(session, InvalidRequest, f"UPDATE {table} SET k = 'x' WHERE k = 'a' AND c = 1", match="k")
    raises(session, InvalidRequest, f"INSERT INTO {table} (k, c, i, i) VALUES ('a', 1, 1, 2)")
    raises(session, InvalidRequest, f"INSERT INTO {table} (k, c, i) VALUES ('a', 1)")


def test_already_exists_carries_names(session, keyspace, table):
    exc = raises(session, AlreadyExists, f"CREATE TABLE {table} (k int PRIMARY KEY)")
    assert (exc.keyspace, exc.table) == (keyspace, table)
    exc = raises(session, AlreadyExists, f"CREATE KEYSPACE {keyspace} WITH replication ="
                 " {'class': 'SimpleStrategy', 'replication_factor': 1}")
    assert exc.keyspace == keyspace and not exc.table


def test_configuration_exception(session, keyspace):
    raises(session, ConfigurationException, f"CREATE TABLE {unique()} (k int PRIMARY KEY)"
           " WITH compaction = {'class': 'BogusStrategy'}", match="BogusStrategy")


def test_partition_key_size_limit(session, table):
    insert = session.prepare(f"INSERT INTO {table} (k, c, i) VALUES (?, 1, 1)")
    session.execute(insert, ("x" * KEY_LIMIT,))
    assert session.execute(f"SELECT i FROM {table} WHERE k = %s", ("x" * KEY_LIMIT,)).one().i == 1
    with pytest.raises(InvalidRequest) as info:
        session.execute(insert, ("y" * (KEY_LIMIT + 1),))
    assert "65535" in str(info.value) or "long" in str(info.value).lower()
    # Same limit for literals.
    raises(session, InvalidRequest, f"INSERT INTO {table} (k, c, i) VALUES ('{'z' * (KEY_LIMIT + 1)}', 1, 1)")
    # Multi-byte characters count in bytes: 32768 two-byte characters is 65536 bytes.
    with pytest.raises(InvalidRequest):
        session.execute(insert, ("\u00e9" * 32768,))


def test_composite_partition_key_size_limit(session, keyspace):
    name = unique()
    session.execute(f"CREATE TABLE {name} (a text, b text, PRIMARY KEY ((a, b)))")
    insert = session.prepare(f"INSERT INTO {name} (a, b) VALUES (?, ?)")
    # The serialized composite [u16 len][bytes][0] per component must fit in 65535 bytes.
    session.execute(insert, ("a" * 30000, "b" * 30000))
    with pytest.raises(InvalidRequest):
        session.execute(insert, ("a" * 40000, "b" * 40000))


@pytest.mark.parametrize("column,raw", [
    ("t", b"\xff\xfe invalid utf-8"),
    ("t", b"\xc3"),  # truncated two-byte sequence
    ("t", b"\xed\xa0\x80"),  # encoded surrogate: not valid UTF-8
    ("a", b"caf\xc3\xa9"),  # non-ASCII byte in ascii
    ("i", b"\x00\x00\x01"),  # int of 3 bytes
    ("i", b"\x00\x00\x00\x00\x01"),  # int of 5 bytes
    ("b", b"\x01\x02\x03\x04"),  # bigint of 4 bytes
    ("u", b"\x01" * 15),  # uuid of 15 bytes
    ("d", b"\x00" * 7),  # double of 7 bytes
], ids=["utf8-ff", "utf8-truncated", "utf8-surrogate", "ascii-8bit", "int-3", "int-5", "bigint-4", "uuid-15",
        "double-7"])
def test_malformed_bound_values_rejected(session, table, column, raw):
    prepared = session.prepare(f"INSERT INTO {table} (k, c, {column}) VALUES (?, ?, ?)")
    default = {"t": "ok", "a": "ok", "i": 1, "b": 1, "u": None, "d": 1.0}[column]
    bound = bind_raw(prepared, ("bad", 1, default), {2: raw})
    with pytest.raises(InvalidRequest):
        session.execute(bound)
    assert session.execute(f"SELECT * FROM {table} WHERE k = 'bad' AND c = 1").one() is None


def test_malformed_key_values_rejected(session, table):
    select = session.prepare(f"SELECT * FROM {table} WHERE k = ? AND c = ?")
    with pytest.raises(InvalidRequest):
        session.execute(bind_raw(select, ("k", 1), {0: b"\xff"}))
    with pytest.raises(InvalidRequest):
        session.execute(bind_raw(select, ("k", 1), {1: b"\x01\x02"}))


def test_server_keeps_serving_after_errors(session, table, varve_addr, protocol_version):
    for _ in range(20):
        with pytest.raises(Exception):
            session.execute("SELEC nonsense")
        with pytest.raises(InvalidRequest):
            session.execute(f"SELECT * FROM {table} WHERE nosuch = 1")
    session.execute(f"INSERT INTO {table} (k, c, i) VALUES ('after', 1, 5)")
    assert session.execute(f"SELECT i FROM {table} WHERE k = 'after' AND c = 1").one().i == 5
    still_serving(varve_addr, protocol_version)


# --- raw sockets ------------------------------------------------------------------


ERROR_INVALID = 0x2200


def expect_protocol_error_or_close(sock, codes=(ERROR_PROTOCOL,)):
    """The server answers an ERROR with one of `codes`, or closes."""
    frame = read_frame(sock)
    if frame is None:
        return "closed"
    opcode, body = frame
    assert opcode == OPCODE_ERROR, f"opcode {opcode:#x}"
    assert error_code(body) in codes, f"error code {error_code(body):#x}: {body[6:]!r}"
    return "error"


def test_raw_options_supported(varve_addr):
    """Sanity check of the raw framing used below."""
    with open_socket(*varve_addr) as sock:
        sock.sendall(v4_frame(OPCODE_OPTIONS, stream=3))
        opcode, body = read_frame(sock)
        assert opcode == OPCODE_SUPPORTED
        assert b"CQL_VERSION" in body and b"PROTOCOL_VERSIONS" in body


@pytest.mark.parametrize("garbage", [
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    b"\x00" * 64,
    b"\xff" * 64,
    bytes(range(256)),
], ids=["http", "zeros", "ones", "ramp"])
def test_raw_garbage(varve_addr, session, garbage):
    with open_socket(*varve_addr) as sock:
        sock.sendall(garbage)
        expect_protocol_error_or_close(sock)
    assert session.execute("SELECT key FROM system.local").one().key == "local"


@pytest.mark.parametrize("version", [0x01, 0x02, 0x06, 0x07, 0x7f])
def test_raw_unsupported_version(varve_addr, session, version):
    """Drivers negotiate down on this protocol error (v3 is spoken since
    session 28; v6 is Cassandra's beta, which Varve does not speak). (v1/v2 headers are 8
    bytes, but Cassandra still answers with a protocol error in the client's
    version rather than just closing.)"""
    with open_socket(*varve_addr) as sock:
        sock.sendall(v4_frame(OPCODE_OPTIONS, version=version))
        assert expect_protocol_error_or_close(sock) == "error"
    assert session.execute("SELECT key FROM system.local").one().key == "local"


def test_raw_unknown_opcode(varve_addr, session):
    with open_socket(*varve_addr) as sock:
        sock.sendall(v4_frame(0x42, body=b"\x00\x00"))
        expect_protocol_error_or_close(sock)
    with open_socket(*varve_addr) as sock:
        # After a valid STARTUP too.
        sock.sendall(v4_frame(OPCODE_STARTUP, string_map({"CQL_VERSION": "3.0.0"})))
        opcode, _ = read_frame(sock)
        assert opcode == OPCODE_READY
        sock.sendall(v4_frame(0x42, stream=1))
        expect_protocol_error_or_close(sock)
    assert session.execute("SELECT key FROM system.local").one().key == "local"


def test_raw_oversized_frame(varve_addr, session):
    # Cassandra answers a frame over native_transport_max_frame_size with an
    # InvalidRequest ("Request is too big") and discards the body; a protocol
    # error or closing is as good.
    too_big = (ERROR_PROTOCOL, ERROR_INVALID)
    with open_socket(*varve_addr) as sock:
        # Announce a body over 256 MiB and send only a little of it: the server
        # must refuse on the header, not wait for (or allocate) the body.
        sock.sendall(v4_frame(OPCODE_OPTIONS, body=b"\x00" * 16, length=MAX_FRAME + 1))
        expect_protocol_error_or_close(sock, too_big)
    with open_socket(*varve_addr) as sock:
        sock.sendall(v4_frame(OPCODE_OPTIONS, length=0xFFFFFFFF))  # negative as a Java int
        expect_protocol_error_or_close(sock, too_big)
    assert session.execute("SELECT key FROM system.local").one().key == "local"


def test_raw_truncated_and_malformed_bodies(varve_addr, session):
    # A header announcing more than is sent, then the client goes away.
    with open_socket(*varve_addr) as sock:
        sock.sendall(v4_frame(OPCODE_OPTIONS, body=b"\x00" * 10, length=100))
    # STARTUP with a string map whose lengths overrun the body.
    with open_socket(*varve_addr) as sock:
        sock.sendall(v4_frame(OPCODE_STARTUP, body=b"\x00\x01\x00\xffCQL"))
        expect_protocol_error_or_close(sock)
    # A QUERY whose [long string] claims more bytes than the body has.
    with open_socket(*varve_addr) as sock:
        sock.sendall(v4_frame(OPCODE_STARTUP, string_map({"CQL_VERSION": "3.0.0"})))
        assert read_frame(sock)[0] == OPCODE_READY
        sock.sendall(v4_frame(0x07, stream=2, body=struct.pack(">i", 1000) + b"SELECT"))
        expect_protocol_error_or_close(sock)
    # A QUERY before STARTUP.
    with open_socket(*varve_addr) as sock:
        query = "SELECT key FROM system.local".encode()
        sock.sendall(v4_frame(0x07, body=struct.pack(">i", len(query)) + query + struct.pack(">HB", 1, 0)))
        expect_protocol_error_or_close(sock)
    assert session.execute("SELECT key FROM system.local").one().key == "local"
    assert rows(session, "SELECT keyspace_name FROM system_schema.keyspaces")
