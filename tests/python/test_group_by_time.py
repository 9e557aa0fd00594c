"""GROUP BY a time bucket through the Python driver: `floor(t, ?)` bound as
a duration at each execution, in the selection and in GROUP BY, with the
bind markers named as Cassandra 5.0.4 names them (`[selection]`), and
groups that survive paging. Corpus 28_issue21_group_by_functions holds the
literal forms, recorded from Cassandra."""

import datetime

import pytest
from cassandra.query import SimpleStatement
from cassandra.util import Duration

from conftest import connect, make_keyspace

HOUR = Duration(0, 0, 3600 * 10**9)
HALF_HOUR = Duration(0, 0, 1800 * 10**9)
BASE = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC


@pytest.fixture
def session(start_varve):
    node = start_varve()
    c = connect(node.host, node.port, 4)
    s = c.connect()
    ks = make_keyspace(s)
    s.set_keyspace(ks)
    s.execute("CREATE TABLE ev (k int, t timestamp, v int, PRIMARY KEY (k, t))")
    ins = s.prepare("INSERT INTO ev (k, t, v) VALUES (?, ?, ?)")
    for i in range(6):
        s.execute(ins, (0, BASE + i * 25 * 60_000, i))
    yield s
    c.shutdown()


def utc(h, m=0, day=14):
    return datetime.datetime(2023, 11, day, h, m)


def test_a_bound_duration_sets_the_buckets_at_each_execution(session):
    p = session.prepare("SELECT k, floor(t, ?), count(*), sum(v) FROM ev WHERE k = ? GROUP BY k, floor(t, ?)")
    assert [(c.name, c.type.typename) for c in p.column_metadata] == [
        ("[selection]", "duration"),
        ("k", "int"),
        ("[selection]", "duration"),
    ]
    hours = [tuple(r) for r in session.execute(p, (HOUR, 0, HOUR))]
    assert hours == [(0, utc(22), 2, 1), (0, utc(23), 3, 9), (0, utc(0, day=15), 1, 5)]
    halves = [tuple(r)[1:3] for r in session.execute(p, (HALF_HOUR, 0, HALF_HOUR))]
    assert halves == [(utc(22), 1), (utc(22, 30), 1), (utc(23), 2), (utc(23, 30), 1), (utc(0, day=15), 1)]


def test_a_negative_bound_duration_is_refused_at_execution(session):
    from cassandra import InvalidRequest

    p = session.prepare("SELECT count(*) FROM ev WHERE k = 0 GROUP BY k, floor(t, ?)")
    with pytest.raises(InvalidRequest, match="Negative durations are not supported by the floor function"):
        session.execute(p, (Duration(0, 0, -3600 * 10**9),))


def test_groups_are_whole_across_pages(session):
    st = SimpleStatement("SELECT floor(t, 1h), count(*) FROM ev WHERE k = 0 GROUP BY k, floor(t, 1h)", fetch_size=1)
    rows = [tuple(r) for r in session.execute(st)]
    assert rows == [(utc(22), 2), (utc(23), 3), (utc(0, day=15), 1)]
