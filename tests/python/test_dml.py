"""INSERT, UPDATE (collection operations included) and DELETE at every
granularity, write timestamps (USING TIMESTAMP and the client-supplied one),
reconciliation, TTL expiry, writetime() and ttl()."""

import time

import pytest
from cassandra import InvalidRequest

from conftest import connect
from helpers import raises, rows, unique


@pytest.fixture
def kv(session, keyspace):
    name = unique("kv")
    session.execute(f"CREATE TABLE {name} (k int, c int, v text, w int, s int STATIC, PRIMARY KEY (k, c))")
    return name


@pytest.fixture
def coll(session, keyspace):
    name = unique("coll")
    session.execute(f"CREATE TABLE {name} (k int PRIMARY KEY, l list<int>, s set<text>, m map<text, int>,"
                    " fl frozen<list<int>>)")
    session.execute(f"INSERT INTO {name} (k, l, s, m, fl) VALUES (1, [1, 2, 3], {{'a', 'b'}}, {{'x': 1}}, [7])")
    return name


def one(session, statement, params=None):
    return session.execute(statement, params).one()


# --- INSERT / UPDATE ---------------------------------------------------------


def test_insert_update_upsert(session, kv):
    session.execute(f"INSERT INTO {kv} (k, c, v) VALUES (1, 1, 'a')")
    session.execute(f"INSERT INTO {kv} (k, c, w) VALUES (1, 1, 5)")  # upsert merges columns
    row = one(session, f"SELECT v, w FROM {kv} WHERE k = 1 AND c = 1")
    assert (row.v, row.w) == ("a", 5)
    session.execute(f"UPDATE {kv} SET v = 'b', w = 6 WHERE k = 1 AND c = 1")
    row = one(session, f"SELECT v, w FROM {kv} WHERE k = 1 AND c = 1")
    assert (row.v, row.w) == ("b", 6)
    # UPDATE of a missing row creates it (no row marker, but the cells are live).
    session.execute(f"UPDATE {kv} SET v = 'new' WHERE k = 2 AND c = 2")
    assert one(session, f"SELECT v FROM {kv} WHERE k = 2 AND c = 2").v == "new"
    # Setting the only cell of an UPDATE-created row to null removes the row.
    session.execute(f"UPDATE {kv} SET v = null WHERE k = 2 AND c = 2")
    assert one(session, f"SELECT * FROM {kv} WHERE k = 2 AND c = 2") is None
    # An INSERT-created row survives with all cells null (its row marker).
    session.execute(f"INSERT INTO {kv} (k, c, v) VALUES (3, 3, 'x')")
    session.execute(f"UPDATE {kv} SET v = null WHERE k = 3 AND c = 3")
    row = one(session, f"SELECT * FROM {kv} WHERE k = 3 AND c = 3")
    assert row is not None and row.v is None


def test_static_column_writes(session, kv):
    session.execute(f"UPDATE {kv} SET s = 10 WHERE k = 5")
    # A partition with only a static row reads as one row with null clustering.
    row = one(session, f"SELECT k, c, s FROM {kv} WHERE k = 5")
    assert (row.k, row.c, row.s) == (5, None, 10)
    session.execute(f"INSERT INTO {kv} (k, c, v) VALUES (5, 1, 'a')")
    session.execute(f"INSERT INTO {kv} (k, c, v) VALUES (5, 2, 'b')")
    assert [r.s for r in session.execute(f"SELECT s FROM {kv} WHERE k = 5")] == [10, 10]
    raises(session, InvalidRequest, f"UPDATE {kv} SET s = 1, v = 'x' WHERE k = 5")  # v needs c


def test_missing_key_parts_rejected(session, kv):
    raises(session, InvalidRequest, f"INSERT INTO {kv} (k, v) VALUES (1, 'a')", match="c")
    raises(session, InvalidRequest, f"INSERT INTO {kv} (c, v) VALUES (1, 'a')", match="k")
    raises(session, InvalidRequest, f"UPDATE {kv} SET v = 'a' WHERE c = 1")
    raises(session, InvalidRequest, f"INSERT INTO {kv} (k, c, v) VALUES (null, 1, 'a')")


# --- collections ---------------------------------------------------------------


def test_list_operations(session, coll):
    session.execute(f"UPDATE {coll} SET l = l + [4, 5] WHERE k = 1")
    assert one(session, f"SELECT l FROM {coll} WHERE k = 1").l == [1, 2, 3, 4, 5]
    session.execute(f"UPDATE {coll} SET l = [-1, 0] + l WHERE k = 1")
    assert one(session, f"SELECT l FROM {coll} WHERE k = 1").l == [-1, 0, 1, 2, 3, 4, 5]
    session.execute(f"UPDATE {coll} SET l = l - [2, 4] WHERE k = 1")
    assert one(session, f"SELECT l FROM {coll} WHERE k = 1").l == [-1, 0, 1, 3, 5]
    session.execute(f"UPDATE {coll} SET l[1] = 99 WHERE k = 1")
    assert one(session, f"SELECT l FROM {coll} WHERE k = 1").l == [-1, 99, 1, 3, 5]
    session.execute(f"DELETE l[0] FROM {coll} WHERE k = 1")
    assert one(session, f"SELECT l FROM {coll} WHERE k = 1").l == [99, 1, 3, 5]
    raises(session, InvalidRequest, f"UPDATE {coll} SET l[10] = 1 WHERE k = 1", match="index")
    # Bound values for the same operations.
    append = session.prepare(f"UPDATE {coll} SET l = l + ? WHERE k = ?")
    session.execute(append, ([6], 1))
    assert one(session, f"SELECT l FROM {coll} WHERE k = 1").l == [99, 1, 3, 5, 6]
    session.execute(f"UPDATE {coll} SET l = [] WHERE k = 1")
    assert one(session, f"SELECT l FROM {coll} WHERE k = 1").l is None
    # Appending to a missing list creates it.
    session.execute(f"UPDATE {coll} SET l = l + [1] WHERE k = 2")
    assert one(session, f"SELECT l FROM {coll} WHERE k = 2").l == [1]


def test_set_operations(session, coll):
    session.execute(f"UPDATE {coll} SET s = s + {{'c', 'a'}} WHERE k = 1")
    assert set(one(session, f"SELECT s FROM {coll} WHERE k = 1").s) == {"a", "b", "c"}
    session.execute(f"UPDATE {coll} SET s = s - {{'b', 'zz'}} WHERE k = 1")
    assert list(one(session, f"SELECT s FROM {coll} WHERE k = 1").s) == ["a", "c"]
    session.execute(f"UPDATE {coll} SET s = {{'only'}} WHERE k = 1")
    assert list(one(session, f"SELECT s FROM {coll} WHERE k = 1").s) == ["only"]
    session.execute(f"UPDATE {coll} SET s = s - {{'only'}} WHERE k = 1")
    assert one(session, f"SELECT s FROM {coll} WHERE k = 1").s is None


def test_map_operations(session, coll):
    session.execute(f"UPDATE {coll} SET m['y'] = 2 WHERE k = 1")
    session.execute(f"UPDATE {coll} SET m = m + {{'z': 3, 'x': 10}} WHERE k = 1")
    assert dict(one(session, f"SELECT m FROM {coll} WHERE k = 1").m) == {"x": 10, "y": 2, "z": 3}
    session.execute(f"UPDATE {coll} SET m = m - {{'x'}} WHERE k = 1")
    session.execute(f"DELETE m['y'] FROM {coll} WHERE k = 1")
    assert dict(one(session, f"SELECT m FROM {coll} WHERE k = 1").m) == {"z": 3}
    put = session.prepare(f"UPDATE {coll} SET m[?] = ? WHERE k = ?")
    session.execute(put, ("w", 4, 1))
    assert list(one(session, f"SELECT m FROM {coll} WHERE k = 1").m.items()) == [("w", 4), ("z", 3)]
    # Frozen collections are replaced whole; element operations are refused.
    raises(session, InvalidRequest, f"UPDATE {coll} SET fl = fl + [8] WHERE k = 1")
    raises(session, InvalidRequest, f"UPDATE {coll} SET fl[0] = 8 WHERE k = 1")
    session.execute(f"UPDATE {coll} SET fl = [8, 9] WHERE k = 1")
    assert one(session, f"SELECT fl FROM {coll} WHERE k = 1").fl == [8, 9]


# --- DELETE ---------------------------------------------------------------------


def fill(session, table, k, n=6):
    insert = session.prepare(f"INSERT INTO {table} (k, c, v, w) VALUES (?, ?, ?, ?)")
    for c in range(n):
        session.execute(insert, (k, c, f"v{c}", c))


def test_delete_cell_row_range_partition(session, kv):
    fill(session, kv, 1)
    session.execute(f"UPDATE {kv} SET s = 1 WHERE k = 1")
    session.execute(f"DELETE v FROM {kv} WHERE k = 1 AND c = 0")
    row = one(session, f"SELECT v, w FROM {kv} WHERE k = 1 AND c = 0")
    assert (row.v, row.w) == (None, 0)
    session.execute(f"DELETE FROM {kv} WHERE k = 1 AND c = 1")
    assert one(session, f"SELECT * FROM {kv} WHERE k = 1 AND c = 1") is None
    session.execute(f"DELETE FROM {kv} WHERE k = 1 AND c >= 3 AND c < 5")
    assert [r.c for r in session.execute(f"SELECT c FROM {kv} WHERE k = 1")] == [0, 2, 5]
    session.execute(f"DELETE FROM {kv} WHERE k = 1 AND c > 4")
    assert [r.c for r in session.execute(f"SELECT c FROM {kv} WHERE k = 1")] == [0, 2]
    # Static cell deletion.
    session.execute(f"DELETE s FROM {kv} WHERE k = 1")
    assert {r.s for r in session.execute(f"SELECT s FROM {kv} WHERE k = 1")} == {None}
    session.execute(f"DELETE FROM {kv} WHERE k = 1")
    assert rows(session, f"SELECT * FROM {kv} WHERE k = 1") == []
    # Writes after the partition deletion are visible again.
    session.execute(f"INSERT INTO {kv} (k, c, v) VALUES (1, 9, 'back')")
    assert [r.v for r in session.execute(f"SELECT v FROM {kv} WHERE k = 1")] == ["back"]
    # A range tombstone does not affect other partitions.
    fill(session, kv, 2, n=3)
    session.execute(f"DELETE FROM {kv} WHERE k = 3 AND c < 100")
    assert len(rows(session, f"SELECT * FROM {kv} WHERE k = 2")) == 3


def test_delete_in_and_multiple_partitions(session, kv):
    for k in (10, 11, 12):
        fill(session, kv, k, n=2)
    session.execute(f"DELETE FROM {kv} WHERE k IN (10, 11)")
    assert [r.k for r in session.execute(f"SELECT DISTINCT k FROM {kv} WHERE k IN (10, 11, 12)")] == [12]
    session.execute(f"DELETE FROM {kv} WHERE k = 12 AND c IN (0, 1)")
    assert rows(session, f"SELECT * FROM {kv} WHERE k = 12") == []


# --- timestamps and reconciliation ------------------------------------------------


def test_using_timestamp_and_reconciliation(session, kv):
    session.execute(f"INSERT INTO {kv} (k, c, v, w) VALUES (1, 1, 'first', 1) USING TIMESTAMP 1000")
    # An older write loses.
    session.execute(f"INSERT INTO {kv} (k, c, v) VALUES (1, 1, 'older') USING TIMESTAMP 999")
    row = one(session, f"SELECT v, writetime(v) AS wt FROM {kv} WHERE k = 1 AND c = 1")
    assert (row.v, row.wt) == ("first", 1000)
    # A newer one wins.
    session.execute(f"UPDATE {kv} USING TIMESTAMP 1001 SET v = 'newer' WHERE k = 1 AND c = 1")
    assert one(session, f"SELECT v FROM {kv} WHERE k = 1 AND c = 1").v == "newer"
    # Between live cells with equal timestamps the greater value wins, whatever the order.
    # (ASCII values only: whether Cassandra compares bytes signed or unsigned is not tested here.)
    session.execute(f"UPDATE {kv} USING TIMESTAMP 2000 SET v = 'b', w = 2 WHERE k = 1 AND c = 1")
    session.execute(f"UPDATE {kv} USING TIMESTAMP 2000 SET v = 'a', w = 1 WHERE k = 1 AND c = 1")
    row = one(session, f"SELECT v, w FROM {kv} WHERE k = 1 AND c = 1")
    assert (row.v, row.w) == ("b", 2)
    session.execute(f"UPDATE {kv} USING TIMESTAMP 2000 SET v = 'c' WHERE k = 1 AND c = 1")
    assert one(session, f"SELECT v FROM {kv} WHERE k = 1 AND c = 1").v == "c"
    # On a tie a deletion wins over the live cell.
    session.execute(f"DELETE v FROM {kv} USING TIMESTAMP 2000 WHERE k = 1 AND c = 1")
    row = one(session, f"SELECT v, w FROM {kv} WHERE k = 1 AND c = 1")
    assert row.v is None and row.w == 2
    # A later write at the same timestamp does not resurrect it.
    session.execute(f"UPDATE {kv} USING TIMESTAMP 2000 SET v = 'zzz' WHERE k = 1 AND c = 1")
    assert one(session, f"SELECT v FROM {kv} WHERE k = 1 AND c = 1").v is None
    # An older deletion does not remove newer data; a newer write survives an older row delete.
    session.execute(f"DELETE FROM {kv} USING TIMESTAMP 1500 WHERE k = 1 AND c = 1")
    assert one(session, f"SELECT w FROM {kv} WHERE k = 1 AND c = 1").w == 2
    # A partition deletion shadows everything at or below its timestamp only.
    session.execute(f"INSERT INTO {kv} (k, c, v) VALUES (1, 2, 'later') USING TIMESTAMP 5000")
    session.execute(f"DELETE FROM {kv} USING TIMESTAMP 3000 WHERE k = 1")
    assert [(r.c, r.v) for r in session.execute(f"SELECT c, v FROM {kv} WHERE k = 1")] == [(2, "later")]
    # A write older than a range tombstone stays hidden.
    session.execute(f"DELETE FROM {kv} USING TIMESTAMP 6000 WHERE k = 1 AND c >= 0 AND c <= 10")
    session.execute(f"INSERT INTO {kv} (k, c, v) VALUES (1, 5, 'hidden') USING TIMESTAMP 5999")
    assert rows(session, f"SELECT * FROM {kv} WHERE k = 1") == []


def test_client_supplied_timestamps(varve_addr, protocol_version, keyspace):
    """The driver sends its own timestamp with every QUERY/EXECUTE/BATCH; the
    server must use it (and USING TIMESTAMP in the text overrides it)."""
    clock = [10_000]
    cluster = connect(*varve_addr, protocol_version, timestamp_generator=lambda: clock[0])
    try:
        s = cluster.connect(keyspace)
        name = unique()
        s.execute(f"CREATE TABLE {name} (k int PRIMARY KEY, v int)")
        s.execute(f"INSERT INTO {name} (k, v) VALUES (1, 1)")
        assert one(s, f"SELECT writetime(v) AS wt FROM {name} WHERE k = 1").wt == 10_000
        clock[0] = 9_000  # an older client timestamp loses
        s.execute(f"INSERT INTO {name} (k, v) VALUES (1, 2)")
        s.execute(s.prepare(f"UPDATE {name} SET v = ? WHERE k = ?"), (3, 1))
        row = one(s, f"SELECT v, writetime(v) AS wt FROM {name} WHERE k = 1")
        assert (row.v, row.wt) == (1, 10_000)
        s.execute(f"DELETE FROM {name} WHERE k = 1")  # older: no effect
        assert one(s, f"SELECT v FROM {name} WHERE k = 1").v == 1
        clock[0] = 20_000
        s.execute(s.prepare(f"UPDATE {name} SET v = ? WHERE k = ?"), (4, 1))
        assert one(s, f"SELECT v, writetime(v) AS wt FROM {name} WHERE k = 1") == (4, 20_000)
        s.execute(f"UPDATE {name} USING TIMESTAMP 30000 SET v = 5 WHERE k = 1")
        assert one(s, f"SELECT writetime(v) AS wt FROM {name} WHERE k = 1").wt == 30_000
        clock[0] = 30_000  # tie: the delete wins
        s.execute(f"DELETE v FROM {name} WHERE k = 1")
        assert one(s, f"SELECT v FROM {name} WHERE k = 1").v is None  # the INSERT's row marker keeps the row
    finally:
        cluster.shutdown()


def test_default_timestamps_are_now_in_microseconds(session, kv):
    before = int(time.time() * 1e6)
    session.execute(f"INSERT INTO {kv} (k, c, v) VALUES (50, 1, 'x')")
    after = int(time.time() * 1e6)
    wt = one(session, f"SELECT writetime(v) AS wt FROM {kv} WHERE k = 50 AND c = 1").wt
    assert before - 1_000_000 <= wt <= after + 1_000_000


def test_writetime_and_ttl_functions(session, kv):
    session.execute(f"INSERT INTO {kv} (k, c, v, w) VALUES (60, 1, 'x', 1) USING TTL 1000 AND TIMESTAMP 777")
    row = one(session, f"SELECT writetime(v) AS wt, ttl(v) AS t, ttl(w) AS tw FROM {kv} WHERE k = 60 AND c = 1")
    assert row.wt == 777
    assert 990 <= row.t <= 1000 and 990 <= row.tw <= 1000
    session.execute(f"UPDATE {kv} USING TIMESTAMP 778 SET w = 2 WHERE k = 60 AND c = 1")
    row = one(session, f"SELECT ttl(v) AS t, ttl(w) AS tw, writetime(w) AS ww FROM {kv} WHERE k = 60 AND c = 1")
    assert row.tw is None and row.ww == 778 and row.t is not None
    raises(session, InvalidRequest, f"SELECT writetime(k) FROM {kv}")  # not on primary key columns
    raises(session, InvalidRequest, f"INSERT INTO {kv} (k, c, v) VALUES (1, 1, 'x') USING TTL -1")


def test_ttl_expiry(session, kv, keyspace):
    """All expiring writes first, then one short sleep. The table is created
    before them: a schema change on a loaded machine can take longer than a
    TTL, and the rows must still be there when first counted."""
    table_ttl = unique("ttl_table")
    session.execute(f"CREATE TABLE {table_ttl} (k int PRIMARY KEY, v int) WITH default_time_to_live = 2")
    prepared = session.prepare(f"INSERT INTO {kv} (k, c, v) VALUES (?, ?, ?) USING TTL ?")
    session.execute(f"INSERT INTO {kv} (k, c, v, w) VALUES (70, 1, 'gone', 1) USING TTL 2")
    session.execute(f"INSERT INTO {kv} (k, c, v) VALUES (70, 2, 'stays')")
    session.execute(f"UPDATE {kv} USING TTL 2 SET w = 5 WHERE k = 70 AND c = 2")
    session.execute(prepared, (70, 3, "bound ttl", 2))
    session.execute(f"INSERT INTO {table_ttl} (k, v) VALUES (1, 1)")
    session.execute(f"INSERT INTO {table_ttl} (k, v) VALUES (2, 2) USING TTL 0")  # 0: never expires
    assert len(rows(session, f"SELECT * FROM {kv} WHERE k = 70")) == 3
    time.sleep(3.1)
    got = [(r.c, r.v, r.w) for r in session.execute(f"SELECT c, v, w FROM {kv} WHERE k = 70")]
    assert got == [(2, "stays", None)]
    assert [r.k for r in session.execute(f"SELECT k FROM {table_ttl}")] == [2]
