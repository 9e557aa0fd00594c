"""Prepared statements: prepare/execute, named markers, UNSET values, result
metadata after ALTER TABLE, re-preparing after the server forgot, and the
routing key the driver uses for token-aware routing."""

import time

import pytest
from cassandra import InvalidRequest
from cassandra.metadata import Murmur3Token
from cassandra.policies import ConstantReconnectionPolicy
from cassandra.query import UNSET_VALUE

from conftest import connect
from helpers import unique


@pytest.fixture
def table(session, keyspace):
    name = unique("p")
    session.execute(f"CREATE TABLE {name} (k int, c text, v int, w text, PRIMARY KEY (k, c))")
    return name


def test_prepare_and_execute(session, table):
    insert = session.prepare(f"INSERT INTO {table} (k, c, v, w) VALUES (?, ?, ?, ?)")
    assert len(insert.column_metadata) == 4
    assert [c.name for c in insert.column_metadata] == ["k", "c", "v", "w"]
    for i in range(10):
        session.execute(insert, (1, f"c{i}", i, None))
    select = session.prepare(f"SELECT c, v FROM {table} WHERE k = ? AND c > ?")
    assert [c[2] for c in select.result_metadata] == ["c", "v"]  # (keyspace, table, name, type)
    got = [(r.c, r.v) for r in session.execute(select, (1, "c6"))]
    assert got == [("c7", 7), ("c8", 8), ("c9", 9)]
    # Preparing the same text twice gives the same id.
    assert session.prepare(f"INSERT INTO {table} (k, c, v, w) VALUES (?, ?, ?, ?)").query_id == insert.query_id
    # Statements without markers prepare too.
    assert session.execute(session.prepare(f"SELECT count(*) AS n FROM {table} WHERE k = 1")).one().n == 10
    # Too many values: the driver refuses before sending (too few are sent as unset).
    with pytest.raises(ValueError):
        session.execute(insert, (1, "x", 1, "w", 5))


def test_prepare_errors(session, table):
    with pytest.raises(InvalidRequest):
        session.prepare(f"SELECT * FROM {unique('nope')} WHERE k = ?")
    with pytest.raises(InvalidRequest):
        session.prepare(f"SELECT nope FROM {table} WHERE k = ?")
    from cassandra.protocol import SyntaxException
    with pytest.raises(SyntaxException):
        session.prepare("SELEC * FROM x")


def test_named_bind_markers(session, table):
    insert = session.prepare(f"INSERT INTO {table} (k, c, v, w) VALUES (:key, :col, :value, :text)")
    assert [c.name for c in insert.column_metadata] == ["key", "col", "value", "text"]
    session.execute(insert, {"key": 2, "col": "a", "value": 5, "text": "named"})
    select = session.prepare(f"SELECT v, w FROM {table} WHERE k = :key AND c IN :cols")
    row = session.execute(select, {"key": 2, "cols": ["a", "zz"]}).one()
    assert (row.v, row.w) == (5, "named")
    # The same name twice binds one value to both places.
    update = session.prepare(f"UPDATE {table} SET v = :n WHERE k = :n AND c = 'twice'")
    session.execute(update, {"n": 3})
    assert session.execute(f"SELECT v FROM {table} WHERE k = 3 AND c = 'twice'").one().v == 3
    # Named markers in simple statements are sent as named values.
    session.execute(f"INSERT INTO {table} (k, c, v) VALUES (%(k)s, %(c)s, %(v)s)", {"k": 2, "c": "b", "v": 6})
    assert session.execute(f"SELECT v FROM {table} WHERE k = 2 AND c = 'b'").one().v == 6


def test_unset_values_leave_columns_untouched(session, table, protocol_version):
    session.execute(f"INSERT INTO {table} (k, c, v, w) VALUES (4, 'a', 1, 'keep')")
    insert = session.prepare(f"INSERT INTO {table} (k, c, v, w) VALUES (?, ?, ?, ?)")
    session.execute(insert, (4, "a", 2, UNSET_VALUE))
    row = session.execute(f"SELECT v, w FROM {table} WHERE k = 4 AND c = 'a'").one()
    assert (row.v, row.w) == (2, "keep")
    # None is a real null: it deletes the cell.
    session.execute(insert, (4, "a", UNSET_VALUE, None))
    row = session.execute(f"SELECT v, w FROM {table} WHERE k = 4 AND c = 'a'").one()
    assert (row.v, row.w) == (2, None)
    update = session.prepare(f"UPDATE {table} SET v = ?, w = ? WHERE k = ? AND c = ?")
    session.execute(update, (UNSET_VALUE, "w2", 4, "a"))
    row = session.execute(f"SELECT v, w FROM {table} WHERE k = 4 AND c = 'a'").one()
    assert (row.v, row.w) == (2, "w2")
    # Trailing values may be left out entirely (they are unset) with a dict.
    session.execute(update, {"v": 9, "k": 4, "c": "a"})
    row = session.execute(f"SELECT v, w FROM {table} WHERE k = 4 AND c = 'a'").one()
    assert (row.v, row.w) == (9, "w2")
    # An unset key column is an error (the driver itself refuses an unset partition key).
    with pytest.raises(InvalidRequest):
        session.execute(update, (1, "x", 4, UNSET_VALUE))
    # Unset USING TTL means no TTL.
    ttl = session.prepare(f"INSERT INTO {table} (k, c, v) VALUES (?, ?, ?) USING TTL ?")
    session.execute(ttl, (4, "b", 1, UNSET_VALUE))
    assert session.execute(f"SELECT ttl(v) AS t FROM {table} WHERE k = 4 AND c = 'b'").one().t is None


def test_result_metadata_follows_alter_table(session, keyspace):
    name = unique("meta")
    session.execute(f"CREATE TABLE {name} (k int PRIMARY KEY, a int)")
    session.execute(f"INSERT INTO {name} (k, a) VALUES (1, 1)")
    select = session.prepare(f"SELECT * FROM {name} WHERE k = ?")
    assert session.execute(select, (1,)).one() == (1, 1)
    old_id = select.result_metadata_id
    session.execute(f"ALTER TABLE {name} ADD b text")
    session.execute(f"UPDATE {name} SET b = 'new' WHERE k = 1")
    # v5: the server sees the metadata id is stale and sends new metadata (and id);
    # v4: Cassandra drops the table's prepared statements on ALTER, the driver
    # re-prepares. Either way the client sees the new column.
    row = session.execute(select, (1,)).one()
    assert row._fields == ("k", "a", "b")
    assert row == (1, 1, "new")
    if session.cluster.protocol_version >= 5:
        assert select.result_metadata_id is not None and select.result_metadata_id != old_id
    session.execute(f"ALTER TABLE {name} DROP a")
    row = session.execute(select, (1,)).one()
    assert row._fields == ("k", "b") and row == (1, "new")


def test_reprepare_after_server_restart(start_varve, tmp_path, protocol_version):
    """A fresh server process does not know the statement: EXECUTE answers
    UNPREPARED and the driver re-prepares transparently."""
    node = start_varve(data_dir=tmp_path / "reprep")
    cluster = connect(node.host, node.port, protocol_version,
                      reconnection_policy=ConstantReconnectionPolicy(0.2, None))
    try:
        s = cluster.connect()
        schema = ["CREATE KEYSPACE IF NOT EXISTS rp WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
                  "CREATE TABLE IF NOT EXISTS rp.t (k int PRIMARY KEY, v int)"]
        for stmt in schema:
            s.execute(stmt)
        insert = s.prepare("INSERT INTO rp.t (k, v) VALUES (?, ?)")
        select = s.prepare("SELECT v FROM rp.t WHERE k = ?")
        s.execute(insert, (1, 1))
        port = node.port
        assert node.stop() == 0
        node.start(port=port)
        deadline = time.monotonic() + 20
        while True:
            try:
                for stmt in schema:  # the schema may or may not have survived: make sure
                    s.execute(stmt)
                break
            except Exception:  # noqa: BLE001 - the driver is still reconnecting
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        s.execute(insert, (2, 20))
        assert s.execute(select, (2,)).one().v == 20
    finally:
        cluster.shutdown()


def test_routing_key_and_token_awareness(session, cluster, keyspace):
    name = unique("route")
    session.execute(f"CREATE TABLE {name} (a int, b text, c int, v int, PRIMARY KEY ((a, b), c))")
    insert = session.prepare(f"INSERT INTO {name} (a, b, c, v) VALUES (?, ?, ?, ?)")
    # The server's PREPARED result names the partition key bind indexes.
    assert insert.routing_key_indexes == [0, 1]
    bound = insert.bind((7, "seven", 1, 1))
    assert bound.routing_key is not None
    session.execute(bound)
    token = session.execute(f"SELECT token(a, b) AS t FROM {name} WHERE a = 7 AND b = 'seven'").one().t
    assert token == Murmur3Token.from_key(bound.routing_key).value
    # Markers out of table order still map to the key columns.
    reordered = session.prepare(f"UPDATE {name} SET v = ? WHERE c = ? AND b = ? AND a = ?")
    assert reordered.routing_key_indexes == [3, 2]
    assert reordered.bind((2, 1, "seven", 7)).routing_key == bound.routing_key
    session.execute(reordered, (2, 1, "seven", 7))
    # A statement that does not bind the full partition key has no routing key.
    partial = session.prepare(f"SELECT * FROM {name} WHERE a = ? AND b = 'x'")
    assert partial.bind((1,)).routing_key is None
    # The token map knows the replica for that token.
    replicas = cluster.metadata.get_replicas(keyspace, bound.routing_key)
    assert [h.address for h in replicas] == ["127.0.0.1"]
    single = session.prepare(f"SELECT * FROM {name} WHERE a = ? AND b = ? AND c = ?")
    assert single.bind((7, "seven", 1)).routing_key == bound.routing_key
    assert session.execute(single, (7, "seven", 1)).one().v == 2
