"""Tables created WITH COMPACT STORAGE through the Python driver: the
driver's metadata (which it builds from system_schema's flags and columns,
hidden columns included), rows that live only through their values (TTL
expiry, deletes, no row marker), prepared statements and paging, and the
schema and data after a restart. tests/differential
26_issue21_compact_storage.cql checks the answers against Cassandra 5.0.4;
the metadata expected here is what the driver showed against it."""

import signal
import time

import pytest
from cassandra import InvalidRequest
from cassandra.query import SimpleStatement

from conftest import connect, nodetool
from helpers import raises, rows, unique


def table_meta(session, keyspace, table):
    cluster = session.cluster
    cluster.refresh_table_metadata(keyspace, table)
    return cluster.metadata.keyspaces[keyspace].tables[table]


def test_the_driver_sees_compact_tables_as_cassandra_describes_them(session, keyspace):
    st, dense, bare = unique("st"), unique("dense"), unique("bare")
    session.execute(f"CREATE TABLE {st} (k int PRIMARY KEY, v int, w text) WITH COMPACT STORAGE")
    session.execute(f"CREATE TABLE {dense} (k int, c1 int, c2 text, v blob, PRIMARY KEY (k, c1, c2)) "
                    "WITH COMPACT STORAGE")
    session.execute(f"CREATE TABLE {bare} (k int, c int, PRIMARY KEY (k, c)) "
                    "WITH COMPACT STORAGE AND CLUSTERING ORDER BY (c DESC)")

    t = table_meta(session, keyspace, st)
    assert t.is_compact_storage and t.is_cql_compatible
    assert [c.name for c in t.partition_key] == ["k"] and t.clustering_key == []
    # The statics of a static compact table are plain columns to the driver;
    # the hidden column1 and value are not shown.
    assert [(n, c.cql_type, c.is_static) for n, c in t.columns.items()] == [
        ("k", "int", False), ("v", "int", False), ("w", "text", False)]
    cql = t.export_as_string()
    assert cql.startswith(f"CREATE TABLE {keyspace}.{st} (\n    k int PRIMARY KEY,\n    v int,\n    w text\n"
                          ") WITH COMPACT STORAGE\n    AND additional_write_policy")

    t = table_meta(session, keyspace, dense)
    assert t.is_compact_storage
    assert [c.name for c in t.clustering_key] == ["c1", "c2"]
    assert list(t.columns) == ["k", "c1", "c2", "v"]

    t = table_meta(session, keyspace, bare)
    assert list(t.columns) == ["k", "c"]
    assert "WITH COMPACT STORAGE\n    AND CLUSTERING ORDER BY (c DESC)" in t.export_as_string()

    flags = {r.table_name: sorted(r.flags) for r in rows(
        session, f"SELECT table_name, flags FROM system_schema.tables WHERE keyspace_name = '{keyspace}'")}
    assert (flags[st], flags[dense], flags[bare]) == ([], ["compound", "dense"], ["dense"])
    kinds = {(r.column_name, r.kind, r.type) for r in rows(
        session, "SELECT column_name, kind, type FROM system_schema.columns "
                 f"WHERE keyspace_name = '{keyspace}' AND table_name = '{bare}'")}
    assert ("value", "regular", "empty") in kinds


def test_rows_live_only_through_their_values(session, keyspace):
    st, dense, bare = unique("st"), unique("dense"), unique("bare")
    session.execute(f"CREATE TABLE {st} (k int PRIMARY KEY, v int, w int) WITH COMPACT STORAGE")
    session.execute(f"CREATE TABLE {dense} (k int, c int, v int, PRIMARY KEY (k, c)) WITH COMPACT STORAGE")
    session.execute(f"CREATE TABLE {bare} (k int, c int, PRIMARY KEY (k, c)) WITH COMPACT STORAGE")

    raises(session, InvalidRequest, f"INSERT INTO {st} (k) VALUES (1)", match="clustering keys are missing: column1")
    raises(session, InvalidRequest, f"INSERT INTO {dense} (k, c) VALUES (1, 1)",
           match="Column v is mandatory for this COMPACT STORAGE table")
    raises(session, InvalidRequest, f"SELECT value FROM {bare}", match="Undefined column name value")

    session.execute(f"INSERT INTO {st} (k, v) VALUES (1, 1) USING TTL 1")
    session.execute(f"INSERT INTO {st} (k, v, w) VALUES (2, 2, 2) USING TTL 1")
    session.execute(f"UPDATE {st} SET w = 5 WHERE k = 2")
    session.execute(f"INSERT INTO {st} (k, v) VALUES (3, 3)")
    session.execute(f"DELETE v FROM {st} WHERE k = 3")
    session.execute(f"INSERT INTO {dense} (k, c, v) VALUES (1, 1, 1) USING TTL 1")
    session.execute(f"INSERT INTO {dense} (k, c, v) VALUES (1, 2, 2)")
    session.execute(f"DELETE v FROM {dense} WHERE k = 1 AND c = 2")
    session.execute(f"INSERT INTO {bare} (k, c) VALUES (1, 1) USING TTL 1")
    session.execute(f"INSERT INTO {bare} (k, c) VALUES (1, 2)")
    assert [tuple(r) for r in rows(session, f"SELECT * FROM {bare}")] == [(1, 1), (1, 2)]

    time.sleep(2.2)
    # The row goes with its last value: no row marker keeps it.
    assert [tuple(r) for r in rows(session, f"SELECT * FROM {st}")] == [(2, None, 5)]
    assert rows(session, f"SELECT * FROM {dense}") == []
    assert [tuple(r) for r in rows(session, f"SELECT * FROM {bare}")] == [(1, 2)]
    assert rows(session, f"SELECT count(*) FROM {st}")[0].count == 1


def test_prepared_statements_and_paging(session, keyspace):
    st, bare = unique("st"), unique("bare")
    session.execute(f"CREATE TABLE {st} (k int PRIMARY KEY, v int) WITH COMPACT STORAGE")
    session.execute(f"CREATE TABLE {bare} (k int, c int, PRIMARY KEY (k, c)) WITH COMPACT STORAGE")
    insert = session.prepare(f"INSERT INTO {st} (k, v) VALUES (?, ?)")
    for k in range(10):
        session.execute(insert, [k, k * 10])
    select = session.prepare(f"SELECT * FROM {st}")
    assert [c[2] for c in select.result_metadata] == ["k", "v"]
    bound = select.bind([])
    bound.fetch_size = 3
    got = rows(session, bound)
    assert sorted(tuple(r) for r in got) == [(k, k * 10) for k in range(10)]

    add = session.prepare(f"INSERT INTO {bare} (k, c) VALUES (?, ?)")
    for c in range(7):
        session.execute(add, [1, c])
    paged = SimpleStatement(f"SELECT c FROM {bare} WHERE k = 1", fetch_size=2)
    assert [r.c for r in rows(session, paged)] == list(range(7))
    # INSERT ... JSON names the hidden clustering column of a static compact
    # table, which no statement may name: refused at PREPARE, as Cassandra does.
    with pytest.raises(InvalidRequest, match="Undefined column name column1"):
        session.prepare(f"INSERT INTO {st} JSON ?")


def test_compact_tables_survive_a_restart(start_varve, tmp_path):
    node = start_varve(data_dir=tmp_path / "compact-node")
    cluster = connect(node.host, node.port, 5)
    s = cluster.connect()
    s.execute("CREATE KEYSPACE rc WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE rc.st (k int PRIMARY KEY, v int, value int) WITH COMPACT STORAGE")
    s.execute("CREATE TABLE rc.bare (k int, c int, PRIMARY KEY (k, c)) WITH COMPACT STORAGE")
    s.execute("INSERT INTO rc.st (k, v, value) VALUES (1, 1, 1)")
    s.execute("INSERT INTO rc.bare (k, c) VALUES (1, 1)")
    # One row from an sstable, one from the commitlog.
    nodetool(node, "flush", "rc", "bare")
    s.execute("INSERT INTO rc.bare (k, c) VALUES (1, 2)")
    cluster.refresh_keyspace_metadata("rc")
    tables = cluster.metadata.keyspaces["rc"].tables
    before = {name: t.export_as_string() for name, t in tables.items()}
    assert sorted(before) == ["bare", "st"]
    columns = "SELECT table_name, column_name, kind, position, type FROM system_schema.columns " \
              "WHERE keyspace_name = 'rc'"
    schema_before = rows(s, columns)
    cluster.shutdown()

    node.stop(signal.SIGKILL)
    node.start()
    cluster = connect(node.host, node.port, 5)
    s = cluster.connect()
    tables = cluster.metadata.keyspaces["rc"].tables
    assert {name: t.export_as_string() for name, t in tables.items()} == before
    assert rows(s, columns) == schema_before
    assert ("value1", "regular", "blob") in {(r.column_name, r.kind, r.type) for r in schema_before}
    assert [tuple(r) for r in rows(s, "SELECT * FROM rc.st")] == [(1, 1, 1)]
    # Still no row marker after the restart: deleting the values deletes the row.
    s.execute("DELETE v, value FROM rc.st WHERE k = 1")
    assert rows(s, "SELECT * FROM rc.st") == []
    raises(s, InvalidRequest, "ALTER TABLE rc.bare ADD v int", match="Cannot add new column to a COMPACT STORAGE table")
    assert [tuple(r) for r in rows(s, "SELECT * FROM rc.bare")] == [(1, 1), (1, 2)]
    nodetool(node, "flush", "rc", "st")
    assert rows(s, "SELECT * FROM rc.st") == []
    cluster.shutdown()
