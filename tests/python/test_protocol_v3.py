"""Native protocol v3 with the Python driver pinned to it: a tour of what an
application does (DDL, prepared statements, paging, batches, LWT, errors,
events), the types v3 has no id for (sent as custom marshal classes), and
what v3 lacks (warnings, v4's error codes). Checked against Cassandra 5.0.4
(docs/format/native-protocol.md, "Protocol v3")."""

import datetime
import socket
import struct
import time

import pytest
from cassandra import InvalidRequest
from cassandra.query import BatchStatement, SimpleStatement
from cassandra.util import Date, Duration, Time

from conftest import connect, make_keyspace

V3 = 3


@pytest.fixture(scope="module")
def v3(varve_addr):
    c = connect(*varve_addr, V3)
    s = c.connect()
    ks = make_keyspace(s)
    s.set_keyspace(ks)
    yield c, s, ks
    s.execute(f"DROP KEYSPACE IF EXISTS {ks}")
    c.shutdown()


def test_the_driver_speaks_v3_and_loads_metadata(v3):
    cluster, session, ks = v3
    assert cluster.protocol_version == 3
    assert session.execute("SELECT release_version FROM system.local").one().release_version == "5.0.4"
    assert "system" in cluster.metadata.keyspaces
    assert ks in cluster.metadata.keyspaces


def test_types_v3_has_no_id_for_travel_as_custom_classes(v3):
    _, s, _ = v3
    s.execute("CREATE TABLE newer (k int PRIMARY KEY, d date, t time, si smallint, ti tinyint, du duration, "
              "ld list<date>, m map<smallint, frozen<list<time>>>)")
    ins = s.prepare("INSERT INTO newer (k, d, t, si, ti, du, ld, m) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
    s.execute(ins, (1, Date(datetime.date(2024, 2, 29)), Time(3_600_000_000_001), -2, 7,
                    Duration(1, 2, 3), [Date(0)], {5: [Time(1)]}))
    s.execute("INSERT INTO newer (k, d, t, si, ti) VALUES (2, '1970-01-02', '00:00:01', 300, -128)")
    rs = s.execute("SELECT * FROM newer WHERE k = 1")
    # The metadata names the custom classes; the driver maps them back.
    types = {name: t.typename for name, t in zip(rs.column_names, rs.column_types)}
    assert types == {"k": "int", "d": "date", "t": "time", "si": "smallint", "ti": "tinyint",
                     "du": "duration", "ld": "list", "m": "map"}
    row = rs.one()
    assert row.d == Date(datetime.date(2024, 2, 29))
    assert row.t == Time(3_600_000_000_001)
    assert (row.si, row.ti) == (-2, 7)
    assert row.du == Duration(1, 2, 3)
    assert row.ld == [Date(0)]
    assert row.m == {5: [Time(1)]}
    row = s.execute("SELECT d, t, si, ti FROM newer WHERE k = 2").one()
    assert (row.d, row.t, row.si, row.ti) == (Date(1), Time(1_000_000_000), 300, -128)
    # Bound by a prepared statement's metadata, which is custom too.
    sel = s.prepare("SELECT k FROM newer WHERE d = ? AND si = ? ALLOW FILTERING")
    assert [r.k for r in s.execute(sel, (Date(1), 300))] == [2]


def raw_query(addr, version, cql):
    """STARTUP then QUERY on a bare socket; the RESULT frame's header and body."""
    def string(text, width=">H"):
        data = text.encode()
        return struct.pack(width, len(data)) + data

    with socket.create_connection(addr, timeout=10) as sock:
        def call(opcode, body):
            sock.sendall(struct.pack(">BBhBI", version, 0, 1, opcode, len(body)) + body)
            header = b""
            while len(header) < 9:
                header += sock.recv(9 - len(header))
            size, payload = struct.unpack(">I", header[5:9])[0], b""
            while len(payload) < size:
                payload += sock.recv(size - len(payload))
            return header, payload

        call(0x01, struct.pack(">H", 1) + string("CQL_VERSION") + string("3.0.0"))
        return call(0x07, string(cql, ">I") + b"\x00\x01\x00")


def test_the_wire_names_the_marshal_classes(v3, varve_addr):
    """The driver maps ids and classes to the same types, so look at the bytes."""
    _, s, ks = v3
    s.execute("CREATE TABLE wire (k int PRIMARY KEY, d date, du duration)")
    marshal = b"org.apache.cassandra.db.marshal."
    header, body = raw_query(varve_addr, 3, f"SELECT k, d, du FROM {ks}.wire")
    assert header[0] == 0x83
    assert marshal + b"SimpleDateType" in body and marshal + b"DurationType" in body
    _, body = raw_query(varve_addr, 4, f"SELECT k, d, du FROM {ks}.wire")
    assert marshal + b"SimpleDateType" not in body and marshal + b"DurationType" in body


def test_prepared_statements_paging_and_batches(v3):
    _, s, _ = v3
    s.execute("CREATE TABLE rows (p int, c int, v text, PRIMARY KEY (p, c))")
    ins = s.prepare("INSERT INTO rows (p, c, v) VALUES (?, ?, ?)")
    batch = BatchStatement()
    for c in range(40):
        batch.add(ins, (1, c, f"v{c}"))
    s.execute(batch)
    for c in range(40, 95):
        s.execute(ins, (1, c, None))
    stmt = SimpleStatement("SELECT c, v FROM rows WHERE p = 1", fetch_size=10)
    rs = s.execute(stmt)
    assert rs.has_more_pages
    rows = list(rs)
    assert [r.c for r in rows] == list(range(95))
    assert rows[3].v == "v3" and rows[60].v is None
    sel = s.prepare("SELECT v FROM rows WHERE p = ? AND c = ?")
    assert s.execute(sel, (1, 7)).one().v == "v7"
    # A null bound in v3 deletes the cell as in v4.
    s.execute(ins, (1, 7, None))
    assert s.execute(sel, (1, 7)).one().v is None


def test_lightweight_transactions(v3):
    _, s, _ = v3
    s.execute("CREATE TABLE lwt (k int PRIMARY KEY, v int)")
    assert s.execute("INSERT INTO lwt (k, v) VALUES (1, 1) IF NOT EXISTS").one().applied
    row = s.execute("INSERT INTO lwt (k, v) VALUES (1, 2) IF NOT EXISTS").one()
    assert not row.applied and row.v == 1
    upd = s.prepare("UPDATE lwt SET v = ? WHERE k = ? IF v = ?")
    assert s.execute(upd, (3, 1, 1)).one().applied
    assert not s.execute(upd, (4, 1, 1)).one().applied
    assert s.execute("SELECT v FROM lwt WHERE k = 1").one().v == 3


def test_errors_and_what_v3_gets_instead_of_function_failure(v3):
    _, s, _ = v3
    s.execute("CREATE TABLE errs (k int PRIMARY KEY, v int)")
    s.execute("INSERT INTO errs (k, v) VALUES (1, 1)")
    with pytest.raises(InvalidRequest, match="Undefined column name nope"):
        s.execute("SELECT nope FROM errs")
    # v3 has no Function_failure: Cassandra sends an Invalid with the code's name.
    with pytest.raises(InvalidRequest) as e:
        s.execute("SELECT v / 0 FROM errs WHERE k = 1")
    assert "ERROR FUNCTION_FAILURE: the operation 'int / int' failed: / by zero" in str(e.value)
    assert "code=2200" in str(e.value)


def test_no_warnings_in_v3(v3, varve_addr):
    _, s, ks = v3
    s.execute("CREATE TABLE warn (k int PRIMARY KEY, v text)")
    # A batch of two partitions past batch_size_warn_threshold (5 KiB) warns
    # in v4, not in v3.
    big = "x" * 6000
    batch = (f"BEGIN BATCH INSERT INTO {ks}.warn (k, v) VALUES (1, '{big}'); "
             f"INSERT INTO {ks}.warn (k, v) VALUES (2, 'y'); APPLY BATCH")
    assert s.execute(batch).response_future.warnings is None
    c = connect(*varve_addr, 4)
    try:
        warnings = c.connect().execute(batch).response_future.warnings
        assert warnings and "exceeding specified threshold" in warnings[0]
    finally:
        c.shutdown()


def test_lz4_and_schema_events_in_v3(varve_addr):
    writer = connect(*varve_addr, V3, compression="lz4")
    watcher = connect(*varve_addr, V3)
    try:
        ws = writer.connect()
        watcher.connect()
        name = f"ks_v3_event_{int(time.time() * 1000) % 100000}"
        make_keyspace(ws, name)
        ws.execute(f"CREATE TABLE {name}.t (k int PRIMARY KEY)")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and (
                name not in watcher.metadata.keyspaces or "t" not in watcher.metadata.keyspaces[name].tables):
            time.sleep(0.1)
        assert "t" in watcher.metadata.keyspaces[name].tables
        assert len(list(ws.execute("SELECT * FROM system_schema.columns"))) > 10
        ws.execute(f"DROP KEYSPACE {name}")
    finally:
        writer.shutdown()
        watcher.shutdown()


def test_an_unpinned_driver_still_negotiates_v5(varve_addr):
    from cassandra.cluster import Cluster

    c = Cluster([varve_addr[0]], port=varve_addr[1])
    try:
        c.connect()
        assert c.protocol_version == 5
    finally:
        c.shutdown()
