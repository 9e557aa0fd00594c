"""Batches: logged and unlogged BatchStatements mixing prepared and simple
statements, inline BEGIN BATCH text, batch timestamps, conditional batches."""

import pytest
from cassandra import InvalidRequest
from cassandra.protocol import SyntaxException
from cassandra.query import BatchStatement, BatchType, SimpleStatement

from conftest import connect
from helpers import raises, rows, unique


@pytest.fixture
def table(session, keyspace):
    name = unique("b")
    session.execute(f"CREATE TABLE {name} (k int, c int, v text, s int STATIC, PRIMARY KEY (k, c))")
    return name


def content(session, table, k):
    return [(r.c, r.v) for r in session.execute(f"SELECT c, v FROM {table} WHERE k = %s", (k,))]


@pytest.mark.parametrize("batch_type", [BatchType.LOGGED, BatchType.UNLOGGED], ids=["logged", "unlogged"])
def test_batch_statement_prepared_and_simple(session, table, batch_type):
    insert = session.prepare(f"INSERT INTO {table} (k, c, v) VALUES (?, ?, ?)")
    batch = BatchStatement(batch_type=batch_type)
    for c in range(5):
        batch.add(insert, (1, c, f"p{c}"))
    batch.add(SimpleStatement(f"INSERT INTO {table} (k, c, v) VALUES (%s, %s, %s)"), (2, 0, "simple"))
    batch.add(f"UPDATE {table} SET v = 'upd' WHERE k = 1 AND c = 4")
    batch.add(SimpleStatement(f"DELETE FROM {table} WHERE k = 1 AND c = 0"))
    result = session.execute(batch)
    assert list(result) == []
    assert content(session, table, 1) == [(1, "p1"), (2, "p2"), (3, "p3"), (4, "upd")]
    assert content(session, table, 2) == [(0, "simple")]


def test_inline_batch_text(session, table):
    session.execute(f"""
        BEGIN BATCH
          INSERT INTO {table} (k, c, v) VALUES (3, 1, 'a');
          INSERT INTO {table} (k, c, v) VALUES (3, 2, 'b');
          UPDATE {table} SET s = 9 WHERE k = 3;
          DELETE v FROM {table} WHERE k = 3 AND c = 1
        APPLY BATCH""")
    assert content(session, table, 3) == [(1, None), (2, "b")]
    session.execute(f"BEGIN UNLOGGED BATCH INSERT INTO {table} (k, c, v) VALUES (4, 1, 'u');"
                    f" INSERT INTO {table} (k, c, v) VALUES (5, 1, 'u') APPLY BATCH")
    assert content(session, table, 4) == [(1, "u")] and content(session, table, 5) == [(1, "u")]
    # Bind markers in an inline batch, prepared.
    prepared = session.prepare(f"BEGIN BATCH INSERT INTO {table} (k, c, v) VALUES (?, ?, ?);"
                               f" INSERT INTO {table} (k, c, v) VALUES (?, ?, ?) APPLY BATCH")
    session.execute(prepared, (6, 1, "x", 6, 2, "y"))
    assert content(session, table, 6) == [(1, "x"), (2, "y")]
    # Only modification statements may appear in a batch.
    raises(session, SyntaxException, f"BEGIN BATCH SELECT * FROM {table}; APPLY BATCH")


def test_batch_level_timestamp(session, table):
    session.execute(f"BEGIN BATCH USING TIMESTAMP 5000"
                    f" INSERT INTO {table} (k, c, v) VALUES (7, 1, 'ts');"
                    f" INSERT INTO {table} (k, c, v) VALUES (7, 2, 'ts') APPLY BATCH")
    got = {r.c: r.wt for r in session.execute(f"SELECT c, writetime(v) AS wt FROM {table} WHERE k = 7")}
    assert got == {1: 5000, 2: 5000}
    # An older write loses to the batch, a newer one wins.
    session.execute(f"UPDATE {table} USING TIMESTAMP 4999 SET v = 'old' WHERE k = 7 AND c = 1")
    session.execute(f"UPDATE {table} USING TIMESTAMP 5001 SET v = 'new' WHERE k = 7 AND c = 2")
    assert content(session, table, 7) == [(1, "ts"), (2, "new")]
    # Statements inside a batch cannot carry their own timestamp when the batch has one.
    raises(session, InvalidRequest, f"BEGIN BATCH USING TIMESTAMP 1 INSERT INTO {table} (k, c, v) VALUES (7, 3, 'x')"
           " USING TIMESTAMP 2; APPLY BATCH")
    # Per-statement timestamps without a batch one are fine.
    session.execute(f"BEGIN BATCH INSERT INTO {table} (k, c, v) VALUES (7, 4, 'x') USING TIMESTAMP 42;"
                    " APPLY BATCH")
    assert session.execute(f"SELECT writetime(v) AS wt FROM {table} WHERE k = 7 AND c = 4").one().wt == 42


def test_batch_client_timestamp(varve_addr, protocol_version, keyspace):
    """A BatchStatement's client-supplied timestamp applies to every statement."""
    cluster = connect(*varve_addr, protocol_version, timestamp_generator=lambda: 123_456)
    try:
        s = cluster.connect(keyspace)
        name = unique()
        s.execute(f"CREATE TABLE {name} (k int PRIMARY KEY, v int)")
        insert = s.prepare(f"INSERT INTO {name} (k, v) VALUES (?, ?)")
        batch = BatchStatement()
        batch.add(insert, (1, 1))
        batch.add(insert, (2, 2))
        s.execute(batch)
        assert {r.wt for r in s.execute(f"SELECT writetime(v) AS wt FROM {name}")} == {123_456}
    finally:
        cluster.shutdown()


def test_conditional_batch(session, table):
    session.execute(f"INSERT INTO {table} (k, c, v) VALUES (8, 1, 'a')")
    batch = BatchStatement()
    batch.add(f"UPDATE {table} SET v = 'b' WHERE k = 8 AND c = 1 IF v = 'a'")
    batch.add(f"INSERT INTO {table} (k, c, v) VALUES (8, 2, 'new')")
    result = session.execute(batch)
    assert result.was_applied
    assert content(session, table, 8) == [(1, "b"), (2, "new")]
    # Same condition again: not applied, nothing written, the current values come back.
    batch = BatchStatement()
    batch.add(f"UPDATE {table} SET v = 'c' WHERE k = 8 AND c = 1 IF v = 'a'")
    batch.add(f"INSERT INTO {table} (k, c, v) VALUES (8, 3, 'never')")
    result = session.execute(batch)
    assert not result.was_applied
    row = result.one()
    assert row[0] is False and row.v == "b" and row.c == 1
    assert content(session, table, 8) == [(1, "b"), (2, "new")]
    # Several conditions on rows of one partition, inline.
    result = session.execute(f"BEGIN BATCH"
                             f" UPDATE {table} SET v = 'x' WHERE k = 8 AND c = 1 IF v = 'b';"
                             f" INSERT INTO {table} (k, c, v) VALUES (8, 9, 'y') IF NOT EXISTS;"
                             " APPLY BATCH")
    assert result.was_applied
    assert content(session, table, 8) == [(1, "x"), (2, "new"), (9, "y")]
    # Conditions spanning partitions are refused.
    raises(session, InvalidRequest, f"BEGIN BATCH UPDATE {table} SET v = 'z' WHERE k = 8 AND c = 1 IF v = 'x';"
           f" INSERT INTO {table} (k, c, v) VALUES (9, 1, 'z'); APPLY BATCH", match="partition")
    assert content(session, table, 9) == []


def test_batch_errors_apply_nothing(session, table):
    batch = BatchStatement()
    batch.add(f"INSERT INTO {table} (k, c, v) VALUES (10, 1, 'ok')")
    batch.add(f"INSERT INTO {table} (k, c, nope) VALUES (10, 2, 'bad')")
    with pytest.raises(InvalidRequest):
        session.execute(batch)
    assert rows(session, f"SELECT * FROM {table} WHERE k = 10") == []
