"""Collection elements and slices through the Python driver: prepared
selections with bound keys (the markers' names and types, the result
columns' names and types, decoded values), nulls when an element is
missing, refused null keys, writetime()/maxwritetime() of elements,
element conditions and map entries in WHERE bound as values, and
several prepends in one batch (tests/differential
20_issue21_collections.cql checks the answers against Cassandra)."""

import pytest
from cassandra import InvalidRequest
from cassandra.query import BatchStatement

from helpers import rows, unique


def make_table(session):
    table = unique("coll")
    session.execute(
        f"CREATE TABLE {table} (k int PRIMARY KEY, m map<text, int>, s set<int>, "
        f"fm frozen<map<text, int>>, l list<int>)"
    )
    session.execute(
        f"INSERT INTO {table} (k, m, s, fm) VALUES (1, {{'a': 1, 'b': 2, 'c': 3}}, {{1, 2, 5}}, "
        f"{{'x': 7, 'y': 8}}) USING TIMESTAMP 1000"
    )
    session.execute(f"UPDATE {table} USING TIMESTAMP 2000 SET m['d'] = 4 WHERE k = 1")
    return table


def test_bound_keys_are_typed_by_their_collection(session, keyspace):
    table = make_table(session)
    select = session.prepare(f"SELECT m[?], m[?..?], s[..?], fm[:key] FROM {table} WHERE k = ?")
    markers = [(m.name, m.type.cql_parameterized_type()) for m in select.column_metadata]
    assert markers == [("key(m)", "varchar"), ("key(m)", "varchar"), ("key(m)", "varchar"),
                       ("value(s)", "int"), ("key", "varchar"), ("k", "int")]
    got = rows(session, select, ["b", "b", "c", 2, "y", 1])
    assert list(got[0]._fields) == ["m", "m_", "s", "fm"]
    assert got[0][0] == 2
    assert dict(got[0][1]) == {"b": 2, "c": 3}
    assert set(got[0][2]) == {1, 2}
    assert got[0][3] == 8
    # A key that is not there is null; so is a slice with nothing in it.
    got = rows(session, select, ["nope", "q", "r", 0, "nope", 1])
    assert tuple(got[0]) == (None, None, None, None)
    result = session.execute(select, ["a", "a", "a", 1, "x", 1])
    names = [c for c in result.column_names]
    assert names == ["m[?]", "m[?..?]", "s[..?]", "fm[?]"]


def test_null_keys_are_refused_and_unset_bounds_are_open(session, keyspace):
    table = make_table(session)
    select = session.prepare(f"SELECT m[?] FROM {table} WHERE k = 1")
    with pytest.raises(InvalidRequest, match="Invalid null value for element selection on m"):
        session.execute(select, [None])
    slice_ = session.prepare(f"SELECT m[?..?] FROM {table} WHERE k = 1")
    with pytest.raises(InvalidRequest, match="Invalid null value for slice selection on m"):
        session.execute(slice_, ["a", None])


def test_lists_are_refused_at_prepare(session, keyspace):
    table = make_table(session)
    with pytest.raises(InvalidRequest, match="only allowed on sets and maps, but l is a list"):
        session.prepare(f"SELECT l[?] FROM {table} WHERE k = 1")


def test_writetime_of_elements_and_slices(session, keyspace):
    table = make_table(session)
    select = session.prepare(
        f"SELECT writetime(m[?]), writetime(m['b'..]), maxwritetime(m), maxwritetime(fm), "
        f"writetime(s[5]) FROM {table} WHERE k = 1"
    )
    got = rows(session, select, ["d"])[0]
    assert got[0] == 2000
    assert got[1] == [1000, 1000, 2000]
    assert got[2] == 2000
    assert got[3] == 1000
    assert got[4] == 1000
    assert rows(session, select, ["zz"])[0][0] is None


def test_element_conditions_and_map_entries_bound(session, keyspace):
    table = make_table(session)
    update = session.prepare(f"UPDATE {table} SET m['e'] = 5 WHERE k = 1 IF m[?] = ?")
    markers = [(m.name, m.type.cql_parameterized_type()) for m in update.column_metadata]
    assert markers[:2] == [("key(m)", "varchar"), ("value(m)", "int")]
    assert not session.execute(update, ["a", 2]).one()[0]
    assert session.execute(update, ["a", 1]).one()[0]
    with pytest.raises(InvalidRequest, match="Invalid null value for map element access"):
        session.execute(update, [None, 1])
    where = session.prepare(f"SELECT k FROM {table} WHERE m[?] = ? ALLOW FILTERING")
    assert [r.k for r in rows(session, where, ["e", 5])] == [1]
    assert rows(session, where, ["e", 6]) == []


def test_several_prepends_in_one_batch_all_stay_the_later_first(session, keyspace):
    table = make_table(session)
    prepend = session.prepare(f"UPDATE {table} SET l = ? + l WHERE k = 2")
    append = session.prepare(f"UPDATE {table} SET l = l + ? WHERE k = 2")
    batch = BatchStatement()
    batch.add(append, [[1]])
    batch.add(prepend, [[0]])
    batch.add(append, [[2]])
    batch.add(prepend, [[-2, -1]])
    session.execute(batch)
    assert rows(session, f"SELECT l FROM {table} WHERE k = 2")[0].l == [-2, -1, 0, 1, 2]
