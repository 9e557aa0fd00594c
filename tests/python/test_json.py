"""JSON through the driver: a prepared `INSERT ... JSON ?` bound as text
(its marker is the text column `[json]`), DEFAULT UNSET, fromJson(?) and
SELECT JSON read back as text with paging (tests/differential
16_issue21_json.cql checks the exact text against Cassandra)."""

import json

import pytest

from cassandra import InvalidRequest
from cassandra.query import SimpleStatement

from helpers import raises, rows, unique


def make_table(session):
    table = unique("json")
    session.execute(
        f'CREATE TABLE {table} (k int PRIMARY KEY, tx text, l list<int>, m map<int, text>, '
        f'ts timestamp, d decimal, "Up" int)'
    )
    return table


def test_prepared_insert_json_binds_text_and_select_json_reads_it_back(session, keyspace):
    table = make_table(session)
    insert = session.prepare(f"INSERT INTO {table} JSON ?")
    [marker] = insert.column_metadata
    assert marker.name == "[json]"
    assert marker.type.typename == "varchar"
    doc = {"k": 1, "tx": 'q"é', "l": [3, 1], "m": {"2": "b"}, "ts": "2015-05-03 13:30:54.234Z",
           "d": "1.50", '"Up"': 7}
    session.execute(insert, [json.dumps(doc)])

    select = session.prepare(f"SELECT JSON * FROM {table} WHERE k = ?")
    [(_, _, name, column_type)] = select.result_metadata
    assert (name, column_type.typename) == ("[json]", "varchar")
    [(text,)] = rows(session, select, [1])
    assert json.loads(text) == {"k": 1, '"Up"': 7, "d": 1.5, "l": [3, 1], "m": {"2": "b"},
                                "ts": "2015-05-03 13:30:54.234Z", "tx": 'q"é'}
    assert '"d": 1.50' in text  # the decimal keeps its scale in the text


def test_default_unset_keeps_what_the_json_leaves_out(session, keyspace):
    table = make_table(session)
    session.execute(f"INSERT INTO {table} JSON %s", ['{"k": 2, "tx": "kept", "l": [1]}'])
    unset = session.prepare(f"INSERT INTO {table} JSON ? DEFAULT UNSET")
    session.execute(unset, ['{"k": 2, "m": {"1": "a"}}'])
    [row] = rows(session, f"SELECT tx, l, m FROM {table} WHERE k = 2")
    assert (row.tx, row.l, row.m) == ("kept", [1], {1: "a"})
    # DEFAULT NULL (the default) clears them.
    session.execute(insert_json(table), ['{"k": 2}'])
    [row] = rows(session, f"SELECT tx, l, m FROM {table} WHERE k = 2")
    assert (row.tx, row.l, row.m) == (None, None, None)


def insert_json(table):
    return f"INSERT INTO {table} JSON %s"


def test_from_json_binds_text_in_values_and_where(session, keyspace):
    table = make_table(session)
    prepared = session.prepare(f"INSERT INTO {table} (k, l) VALUES (fromJson(?), fromJson(?))")
    assert [c.type.typename for c in prepared.column_metadata] == ["varchar", "varchar"]
    session.execute(prepared, ["3", "[5, 6]"])
    [(text,)] = rows(session, f"SELECT JSON k, l FROM {table} WHERE k = fromJson(%s)", ['"3"'])
    assert text == '{"k": 3, "l": [5, 6]}'


def test_select_json_pages(session, keyspace):
    table = make_table(session)
    for k in range(10):
        session.execute(insert_json(table), [json.dumps({"k": k, "tx": f"v{k}"})])
    statement = SimpleStatement(f"SELECT JSON k, tx AS \"Value\" FROM {table}", fetch_size=3)
    got = [json.loads(t) for (t,) in rows(session, statement)]
    assert sorted(g["k"] for g in got) == list(range(10))
    assert all(g['"Value"'] == f"v{g['k']}" for g in got)


def test_bad_json_is_an_invalid_request(session, keyspace):
    table = make_table(session)
    insert = session.prepare(f"INSERT INTO {table} JSON ?")
    raises(session, InvalidRequest, insert, ['{"k": 1,'], match="Could not decode JSON string as a map")
    raises(session, InvalidRequest, insert, ['{"k": 1, "nope": 2}'],
           match="JSON values map contains unrecognized column: nope")
    raises(session, InvalidRequest, insert, ['{"k": "x"}'], match="Error decoding JSON value for k")
    raises(session, InvalidRequest, insert, ['{"tx": "a"}'], match="Invalid null value")
    raises(session, InvalidRequest, insert, [None], match="Got null for INSERT JSON values")
    deep = "[" * 2000 + "]" * 2000
    raises(session, InvalidRequest, insert, ['{"k": 1, "l": %s}' % deep], match="nesting depth")


def test_prepare_reads_a_literal_json_as_cassandra_does(session, keyspace):
    table = make_table(session)
    with pytest.raises(InvalidRequest, match="unrecognized column: nope"):
        session.prepare(f"INSERT INTO {table} JSON '{{\"k\": 1, \"nope\": 1}}'")
    with pytest.raises(InvalidRequest, match="Error decoding JSON value for k"):
        session.prepare(f"INSERT INTO {table} JSON '{{\"k\": \"x\"}}'")
    # A missing key is only found at execution (it is null until then).
    prepared = session.prepare(f"INSERT INTO {table} JSON '{{\"tx\": \"a\"}}'")
    raises(session, InvalidRequest, prepared, match="Invalid null value")
    with pytest.raises(InvalidRequest, match="fromjson\\(\\) cannot be used in the selection clause"):
        session.prepare(f"SELECT fromJson('1') FROM {table}")
