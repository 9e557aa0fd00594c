"""Conditional statements: IF NOT EXISTS, IF EXISTS, IF col = x (and other
operators), the `[applied]` result shape, and linearizability of
compare-and-set under concurrent clients."""

import threading

import pytest
from cassandra import InvalidRequest

from conftest import connect
from helpers import raises, unique


@pytest.fixture
def table(session, keyspace):
    name = unique("lwt")
    session.execute(f"CREATE TABLE {name} (k int, c int, v int, t text, l list<int>, s int STATIC,"
                    " PRIMARY KEY (k, c))")
    return name


def test_insert_if_not_exists(session, table):
    result = session.execute(f"INSERT INTO {table} (k, c, v, t) VALUES (1, 1, 10, 'a') IF NOT EXISTS")
    assert result.was_applied
    row = result.one()
    assert result.column_names == ["[applied]"] and row[0] is True
    result = session.execute(f"INSERT INTO {table} (k, c, v, t) VALUES (1, 1, 20, 'b') IF NOT EXISTS")
    assert not result.was_applied
    row = result.one()
    # Not applied: [applied] = false and the whole existing row.
    assert result.column_names[0] == "[applied]"
    assert set(result.column_names) >= {"[applied]", "k", "c", "v", "t"}
    assert (row[0], row.k, row.c, row.v, row.t) == (False, 1, 1, 10, "a")
    assert session.execute(f"SELECT v FROM {table} WHERE k = 1 AND c = 1").one().v == 10
    # Prepared, with bound values.
    prepared = session.prepare(f"INSERT INTO {table} (k, c, v) VALUES (?, ?, ?) IF NOT EXISTS")
    assert session.execute(prepared, (1, 2, 5)).was_applied
    assert not session.execute(prepared, (1, 2, 6)).was_applied


def test_update_if_condition(session, table):
    session.execute(f"INSERT INTO {table} (k, c, v, t) VALUES (2, 1, 10, 'a')")
    result = session.execute(f"UPDATE {table} SET v = 11 WHERE k = 2 AND c = 1 IF v = 10")
    assert result.was_applied and result.column_names == ["[applied]"]
    result = session.execute(f"UPDATE {table} SET v = 12 WHERE k = 2 AND c = 1 IF v = 10")
    assert not result.was_applied
    assert result.column_names == ["[applied]", "v"]
    assert result.one().v == 11
    # Several conditions: the not-applied row shows each conditioned column.
    result = session.execute(f"UPDATE {table} SET v = 12 WHERE k = 2 AND c = 1 IF v = 11 AND t = 'zz'")
    assert not result.was_applied
    assert (result.one().v, result.one().t) == (11, "a")
    assert session.execute(f"UPDATE {table} SET v = 12 WHERE k = 2 AND c = 1 IF v = 11 AND t = 'a'").was_applied
    # Other operators, IN, and null.
    assert session.execute(f"UPDATE {table} SET v = 13 WHERE k = 2 AND c = 1 IF v > 5 AND v <= 12").was_applied
    assert session.execute(f"UPDATE {table} SET v = 14 WHERE k = 2 AND c = 1 IF v != 99").was_applied
    assert session.execute(f"UPDATE {table} SET v = 15 WHERE k = 2 AND c = 1 IF v IN (1, 14)").was_applied
    assert session.execute(f"UPDATE {table} SET l = [1] WHERE k = 2 AND c = 1 IF l = null").was_applied
    assert not session.execute(f"UPDATE {table} SET v = 0 WHERE k = 2 AND c = 1 IF l = null").was_applied
    # A condition on a missing row is not applied and returns only [applied].
    result = session.execute(f"UPDATE {table} SET v = 1 WHERE k = 2 AND c = 99 IF v = 1")
    assert not result.was_applied and result.column_names == ["[applied]"]
    # Static column conditions need only the partition key.
    assert session.execute(f"UPDATE {table} SET s = 1 WHERE k = 2 IF s = null").was_applied
    assert not session.execute(f"UPDATE {table} SET s = 2 WHERE k = 2 IF s = 5").was_applied
    assert session.execute(f"SELECT v FROM {table} WHERE k = 2 AND c = 1").one().v == 15


def test_if_exists(session, table):
    result = session.execute(f"UPDATE {table} SET v = 1 WHERE k = 3 AND c = 1 IF EXISTS")
    assert not result.was_applied
    assert session.execute(f"SELECT * FROM {table} WHERE k = 3") .one() is None
    session.execute(f"INSERT INTO {table} (k, c, v) VALUES (3, 1, 0)")
    assert session.execute(f"UPDATE {table} SET v = 1 WHERE k = 3 AND c = 1 IF EXISTS").was_applied
    assert session.execute(f"SELECT v FROM {table} WHERE k = 3 AND c = 1").one().v == 1


def test_delete_if(session, table):
    session.execute(f"INSERT INTO {table} (k, c, v, t) VALUES (4, 1, 7, 'x')")
    result = session.execute(f"DELETE FROM {table} WHERE k = 4 AND c = 1 IF v = 8")
    assert not result.was_applied and result.one().v == 7
    assert session.execute(f"DELETE t FROM {table} WHERE k = 4 AND c = 1 IF v = 7").was_applied
    assert session.execute(f"SELECT t FROM {table} WHERE k = 4 AND c = 1").one().t is None
    assert session.execute(f"DELETE FROM {table} WHERE k = 4 AND c = 1 IF EXISTS").was_applied
    assert session.execute(f"SELECT * FROM {table} WHERE k = 4 AND c = 1").one() is None
    assert not session.execute(f"DELETE FROM {table} WHERE k = 4 AND c = 1 IF EXISTS").was_applied


def test_conditional_errors(session, table):
    # IF NOT EXISTS is for INSERT; USING TIMESTAMP is refused on conditional updates.
    raises(session, InvalidRequest, f"UPDATE {table} USING TIMESTAMP 5 SET v = 1 WHERE k = 5 AND c = 1 IF v = 1")
    raises(session, InvalidRequest, f"UPDATE {table} SET v = 1 WHERE k IN (5, 6) AND c = 1 IF v = 1")
    raises(session, InvalidRequest, f"UPDATE {table} SET v = 1 WHERE k = 5 AND c = 1 IF k = 1")
    raises(session, InvalidRequest, f"DELETE FROM {table} WHERE k = 5 AND c > 1 IF EXISTS")


def test_serial_read_sees_conditional_write(session, table):
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement
    session.execute(f"INSERT INTO {table} (k, c, v) VALUES (6, 1, 1) IF NOT EXISTS")
    stmt = SimpleStatement(f"SELECT v FROM {table} WHERE k = 6 AND c = 1", consistency_level=ConsistencyLevel.SERIAL)
    assert session.execute(stmt).one().v == 1


def test_concurrent_compare_and_set_is_linearizable(varve_addr, protocol_version, keyspace, session):
    """THREADS clients each apply INCREMENTS compare-and-set increments to one
    cell, retrying on not-applied with the value the server returned. Every
    applied CAS moved the value by one, so the final value is the number of
    applied updates, and each client saw its own increments applied exactly."""
    threads, increments = 4, 20
    name = unique("cas")
    session.execute(f"CREATE TABLE {name} (k int PRIMARY KEY, v int)")
    session.execute(f"INSERT INTO {name} (k, v) VALUES (0, 0)")
    applied_total = [0]
    seen_values = []
    lock = threading.Lock()
    errors = []
    clusters = [connect(*varve_addr, protocol_version) for _ in range(2)]

    def worker(s):
        try:
            cas = s.prepare(f"UPDATE {name} SET v = ? WHERE k = 0 IF v = ?")
            current = s.execute(f"SELECT v FROM {name} WHERE k = 0").one().v
            done = 0
            attempts = 0
            while done < increments:
                attempts += 1
                assert attempts < increments * 200, "starved"
                result = s.execute(cas, (current + 1, current))
                if result.was_applied:
                    with lock:
                        applied_total[0] += 1
                        seen_values.append(current + 1)
                    current += 1
                    done += 1
                else:
                    current = result.one().v
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    try:
        sessions = [c.connect(keyspace) for c in clusters]
        pool = [threading.Thread(target=worker, args=(sessions[i % 2],)) for i in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join(120)
        assert not errors, errors
        final = session.execute(f"SELECT v FROM {name} WHERE k = 0").one().v
        assert applied_total[0] == threads * increments
        assert final == applied_total[0]
        # Each new value was produced exactly once: no two CAS applied on the same old value.
        assert sorted(seen_values) == list(range(1, final + 1))
    finally:
        for c in clusters:
            c.shutdown()


def test_concurrent_insert_if_not_exists_single_winner(varve_addr, protocol_version, keyspace, session):
    name = unique("race")
    session.execute(f"CREATE TABLE {name} (k int PRIMARY KEY, owner int)")
    cluster = connect(*varve_addr, protocol_version)
    try:
        s = cluster.connect(keyspace)
        prepared = s.prepare(f"INSERT INTO {name} (k, owner) VALUES (?, ?) IF NOT EXISTS")
        for key in range(10):
            futures = [s.execute_async(prepared, (key, owner)) for owner in range(6)]
            results = [f.result() for f in futures]
            winners = [owner for owner, r in enumerate(results) if r.was_applied]
            assert len(winners) == 1, (key, winners)
            losers_saw = {r.one().owner for r in results if not r.was_applied}
            assert losers_saw == set(winners)
            assert session.execute(f"SELECT owner FROM {name} WHERE k = %s", (key,)).one().owner == winners[0]
    finally:
        cluster.shutdown()


def test_an_applied_update_is_never_hidden_by_a_client_clock_running_ahead(varve_addr, keyspace, session, table):
    """Issue 19's defect: a conditional write's cells carry the
    transaction's timestamp, not the client's. Session A's clock runs an
    hour ahead; it inserts IF NOT EXISTS. Session B, on time, updates IF v
    = 1 and is told it applied: the row must then read v = 2 (with the
    client's timestamps, A's cells hid B's update)."""
    import time

    ahead = connect(*varve_addr, 5, timestamp_generator=lambda: int((time.time() + 3600) * 1e6))
    try:
        a = ahead.connect(keyspace)
        assert a.execute(f"INSERT INTO {table} (k, c, v) VALUES (7, 7, 1) IF NOT EXISTS").was_applied
    finally:
        ahead.shutdown()
    assert session.execute(f"UPDATE {table} SET v = 2 WHERE k = 7 AND c = 7 IF v = 1").was_applied
    assert session.execute(f"SELECT v FROM {table} WHERE k = 7 AND c = 7").one().v == 2
    # The cells carry the server's time, not the hour-ahead client's.
    written = session.execute(f"SELECT writetime(v) AS w FROM {table} WHERE k = 7 AND c = 7").one().w
    assert abs(written - time.time() * 1e6) < 60e6, written
