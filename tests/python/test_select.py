"""SELECT: partition key restrictions, clustering slices, multi-column
relations, token() ranges checked against the driver's own Murmur3 tokens,
full scans, LIMIT / PER PARTITION LIMIT, ORDER BY, DISTINCT, COUNT, aliases,
ALLOW FILTERING and the native functions."""

import datetime
import struct
import time
import uuid

import pytest
from cassandra import InvalidRequest
from cassandra.metadata import Murmur3Token
from cassandra.util import max_uuid_from_time, min_uuid_from_time

from helpers import raises, rows, unique

PARTITIONS = 40
CLUSTERS = 4


def token_of_int(k):
    return Murmur3Token.from_key(struct.pack(">i", k)).value


@pytest.fixture(scope="module")
def grid(session, keyspace):
    """k in 0..39, (c1, c2) in 0..3 x 0..3, v = k*100 + c1*10 + c2, w = c2."""
    name = unique("grid")
    session.execute(f"CREATE TABLE {name} (k int, c1 int, c2 int, v int, w int, s text STATIC,"
                    " PRIMARY KEY (k, c1, c2))")
    insert = session.prepare(f"INSERT INTO {name} (k, c1, c2, v, w) VALUES (?, ?, ?, ?, ?)")
    futures = []
    for k in range(PARTITIONS):
        for c1 in range(CLUSTERS):
            for c2 in range(CLUSTERS):
                futures.append(session.execute_async(insert, (k, c1, c2, k * 100 + c1 * 10 + c2, c2)))
    for f in futures:
        f.result()
    session.execute(f"UPDATE {name} SET s = 'static' WHERE k = 1")
    return name


@pytest.fixture(scope="module")
def desc(session, keyspace):
    name = unique("desc")
    session.execute(f"CREATE TABLE {name} (k int, c int, v text, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)")
    for c in range(10):
        session.execute(f"INSERT INTO {name} (k, c, v) VALUES (0, {c}, 'v{c}')")
    return name


def cs(result):
    return [(r.c1, r.c2) for r in result]


def test_partition_key_equality_and_in(session, grid):
    assert len(rows(session, f"SELECT * FROM {grid} WHERE k = 3")) == CLUSTERS * CLUSTERS
    got = rows(session, f"SELECT k, c1, c2 FROM {grid} WHERE k IN (5, 2, 5, 7) AND c1 = 0 AND c2 = 0")
    assert sorted(r.k for r in got) == [2, 5, 7]  # duplicates in IN collapse
    assert rows(session, f"SELECT * FROM {grid} WHERE k = 1000") == []
    prepared = session.prepare(f"SELECT v FROM {grid} WHERE k IN ? AND c1 = ? AND c2 = ?")
    assert sorted(r.v for r in session.execute(prepared, ([1, 2], 3, 3))) == [133, 233]


def test_clustering_slices(session, grid):
    assert cs(session.execute(f"SELECT c1, c2 FROM {grid} WHERE k = 1 AND c1 = 2")) == [(2, i) for i in range(4)]
    assert cs(session.execute(f"SELECT c1, c2 FROM {grid} WHERE k = 1 AND c1 = 2 AND c2 > 1")) == [(2, 2), (2, 3)]
    assert cs(session.execute(f"SELECT c1, c2 FROM {grid} WHERE k = 1 AND c1 = 2 AND c2 >= 1 AND c2 < 3")) == \
        [(2, 1), (2, 2)]
    assert cs(session.execute(f"SELECT c1, c2 FROM {grid} WHERE k = 1 AND c1 > 2")) == [(3, i) for i in range(4)]
    assert cs(session.execute(f"SELECT c1, c2 FROM {grid} WHERE k = 1 AND c1 <= 0")) == [(0, i) for i in range(4)]
    assert cs(session.execute(f"SELECT c1, c2 FROM {grid} WHERE k = 1 AND c1 IN (3, 1) AND c2 = 0")) == [(1, 0), (3, 0)]
    assert rows(session, f"SELECT * FROM {grid} WHERE k = 1 AND c1 > 2 AND c1 < 1") == []
    # c2 cannot be restricted while c1 is unrestricted (without ALLOW FILTERING).
    raises(session, InvalidRequest, f"SELECT * FROM {grid} WHERE k = 1 AND c2 = 1")
    # A slice on c1 followed by a restriction on c2 is not a slice either.
    raises(session, InvalidRequest, f"SELECT * FROM {grid} WHERE k = 1 AND c1 > 1 AND c2 = 1")


def test_multi_column_relations(session, grid):
    got = cs(session.execute(f"SELECT c1, c2 FROM {grid} WHERE k = 2 AND (c1, c2) > (2, 2)"))
    assert got == [(2, 3), (3, 0), (3, 1), (3, 2), (3, 3)]
    got = cs(session.execute(f"SELECT c1, c2 FROM {grid} WHERE k = 2 AND (c1, c2) >= (1, 2) AND (c1, c2) < (2, 1)"))
    assert got == [(1, 2), (1, 3), (2, 0)]
    got = cs(session.execute(f"SELECT c1, c2 FROM {grid} WHERE k = 2 AND (c1, c2) IN ((3, 3), (0, 1), (9, 9))"))
    assert got == [(0, 1), (3, 3)]
    got = cs(session.execute(f"SELECT c1, c2 FROM {grid} WHERE k = 2 AND (c1) < (1)"))
    assert got == [(0, i) for i in range(4)]
    got = cs(session.execute(f"SELECT c1, c2 FROM {grid} WHERE k = 2 AND (c1, c2) = (1, 1)"))
    assert got == [(1, 1)]
    prepared = session.prepare(f"SELECT c1, c2 FROM {grid} WHERE k = ? AND (c1, c2) > (?, ?) AND (c1, c2) <= ?")
    assert cs(session.execute(prepared, (2, 0, 3, (1, 1)))) == [(1, 0), (1, 1)]


def test_token_function_matches_driver(session, cluster, grid):
    got = {r.k: r.t for r in session.execute(f"SELECT DISTINCT k, token(k) AS t FROM {grid}")}
    assert len(got) == PARTITIONS
    for k, t in got.items():
        assert t == token_of_int(k), k
    # The cluster's token map places every key on the one node.
    ring = cluster.metadata.token_map
    host = cluster.metadata.all_hosts()[0]
    assert all(host in ring.get_replicas(cluster.metadata.keyspaces and session.keyspace,
                                         Murmur3Token(t)) for t in list(got.values())[:5])


def test_token_vectors_for_text_and_composite_keys(session, keyspace):
    name = unique()
    session.execute(f"CREATE TABLE {name} (k text PRIMARY KEY)")
    session.execute(f"INSERT INTO {name} (k) VALUES ('test')")
    session.execute(f"INSERT INTO {name} (k) VALUES ('xd')")
    got = {r.k: r.t for r in session.execute(f"SELECT k, token(k) AS t FROM {name}")}
    assert got == {"test": -6017608668500074083, "xd": 4507812186440344727}  # REFERENCE.md vectors
    comp = unique()
    session.execute(f"CREATE TABLE {comp} (a int, b text, PRIMARY KEY ((a, b)))")
    insert = session.prepare(f"INSERT INTO {comp} (a, b) VALUES (?, ?)")
    for a, b in [(1, "x"), (2, "yy"), (-3, "")]:
        bound = insert.bind((a, b))
        session.execute(bound)
        row = session.execute(f"SELECT token(a, b) AS t FROM {comp} WHERE a = %s AND b = %s", (a, b)).one()
        # The driver hashes the routing key it built: [u16 len][bytes][0x00] per component.
        assert row.t == Murmur3Token.from_key(bound.routing_key).value


def test_token_ranges_and_full_scan_order(session, grid):
    scan = [r.k for r in session.execute(f"SELECT DISTINCT k FROM {grid}")]
    tokens = [token_of_int(k) for k in scan]
    assert sorted(scan) == list(range(PARTITIONS))
    assert tokens == sorted(tokens), "a full scan returns partitions in token order"
    lo, hi = tokens[10], tokens[25]
    got = [r.k for r in session.execute(f"SELECT DISTINCT k FROM {grid} WHERE token(k) > %s AND token(k) <= %s",
                                        (lo, hi))]
    assert got == scan[11:26]
    got = [r.k for r in session.execute(f"SELECT DISTINCT k FROM {grid} WHERE token(k) >= %s", (hi,))]
    assert got == scan[25:]
    got = [r.k for r in session.execute(f"SELECT DISTINCT k FROM {grid} WHERE token(k) < %s", (lo,))]
    assert got == scan[:10]
    prepared = session.prepare(f"SELECT k, c1, c2 FROM {grid} WHERE token(k) > ? AND token(k) < ?")
    got = rows(session, prepared, (lo, hi))
    assert {r.k for r in got} == set(scan[11:25]) and len(got) == 14 * CLUSTERS * CLUSTERS
    # A token range bounded by the ring's extremes is a full scan.
    got = rows(session, f"SELECT k FROM {grid} WHERE token(k) >= {-(2**63)} AND token(k) <= {2**63 - 1}")
    assert len(got) == PARTITIONS * CLUSTERS * CLUSTERS
    # token(k) = a partition's token selects that partition.
    assert {r.k for r in session.execute(f"SELECT k FROM {grid} WHERE token(k) = %s", (tokens[3],))} == {scan[3]}


def test_full_scan_limit_and_per_partition_limit(session, grid):
    assert len(rows(session, f"SELECT * FROM {grid}")) == PARTITIONS * CLUSTERS * CLUSTERS
    assert len(rows(session, f"SELECT * FROM {grid} LIMIT 37")) == 37
    assert len(rows(session, f"SELECT * FROM {grid} WHERE k = 4 LIMIT 5")) == 5
    got = rows(session, f"SELECT k, c1, c2 FROM {grid} PER PARTITION LIMIT 2")
    assert len(got) == PARTITIONS * 2
    assert all((r.c1, r.c2) in ((0, 0), (0, 1)) for r in got)
    got = rows(session, f"SELECT k FROM {grid} PER PARTITION LIMIT 1 LIMIT 7")
    assert len(got) == 7 and len({r.k for r in got}) == 7
    got = rows(session, f"SELECT c1, c2 FROM {grid} WHERE k IN (1, 2) PER PARTITION LIMIT 3")
    assert len(got) == 6
    raises(session, InvalidRequest, f"SELECT * FROM {grid} LIMIT 0")
    raises(session, InvalidRequest, f"SELECT * FROM {grid} LIMIT -1")


def test_order_by(session, grid, desc):
    got = cs(session.execute(f"SELECT c1, c2 FROM {grid} WHERE k = 6 ORDER BY c1 DESC, c2 DESC LIMIT 3"))
    assert got == [(3, 3), (3, 2), (3, 1)]
    got = cs(session.execute(f"SELECT c1, c2 FROM {grid} WHERE k = 6 AND c1 = 1 ORDER BY c1 DESC"))
    assert got == [(1, 3), (1, 2), (1, 1), (1, 0)]
    # Mixed directions against the clustering order are refused.
    raises(session, InvalidRequest, f"SELECT * FROM {grid} WHERE k = 6 ORDER BY c1 ASC, c2 DESC")
    raises(session, InvalidRequest, f"SELECT * FROM {grid} WHERE k = 6 ORDER BY v")
    raises(session, InvalidRequest, f"SELECT * FROM {grid} ORDER BY c1 DESC")  # needs a partition restriction
    # A DESC table reads newest-first by default and ascending on request.
    assert [r.c for r in session.execute(f"SELECT c FROM {desc} WHERE k = 0")] == list(range(9, -1, -1))
    assert [r.c for r in session.execute(f"SELECT c FROM {desc} WHERE k = 0 ORDER BY c ASC")] == list(range(10))
    assert [r.c for r in session.execute(f"SELECT c FROM {desc} WHERE k = 0 AND c > 3 AND c <= 6")] == [6, 5, 4]
    assert [r.c for r in session.execute(f"SELECT c FROM {desc} WHERE k = 0 AND c > 3 ORDER BY c ASC LIMIT 2")] \
        == [4, 5]
    # ORDER BY with IN on the partition key merges partitions; only without paging.
    from cassandra.query import SimpleStatement
    stmt = SimpleStatement(f"SELECT k, c1, c2 FROM {grid} WHERE k IN (1, 2) AND c1 = 0 ORDER BY c1 DESC, c2 DESC",
                           fetch_size=None)
    got = [(r.c2, r.k) for r in session.execute(stmt)]
    assert [c2 for c2, _ in got] == [3, 3, 2, 2, 1, 1, 0, 0]


def test_distinct_count_aliases(session, grid):
    got = rows(session, f"SELECT DISTINCT k, s FROM {grid} WHERE k IN (0, 1)")
    assert sorted((r.k, r.s) for r in got) == [(0, None), (1, "static")]
    assert len(rows(session, f"SELECT DISTINCT k FROM {grid}")) == PARTITIONS
    raises(session, InvalidRequest, f"SELECT DISTINCT c1 FROM {grid}")
    assert session.execute(f"SELECT COUNT(*) FROM {grid}").one().count == PARTITIONS * CLUSTERS * CLUSTERS
    assert session.execute(f"SELECT count(1) AS n FROM {grid} WHERE k = 3").one().n == CLUSTERS * CLUSTERS
    assert session.execute(f"SELECT COUNT(*) AS n FROM {grid} WHERE k = 3 AND c1 > 1").one().n == 8
    assert session.execute(f"SELECT COUNT(s) AS n FROM {grid} WHERE k = 1").one().n == CLUSTERS * CLUSTERS
    assert session.execute(f"SELECT COUNT(*) AS n FROM {grid} WHERE k = 999").one().n == 0
    row = session.execute(f"SELECT k AS key, c1 AS first, v AS value FROM {grid} WHERE k = 3 LIMIT 1").one()
    assert (row.key, row.first, row.value) == (3, 0, 300)
    assert session.execute(f"SELECT min(v) AS lo, max(v) AS hi, sum(w) AS total FROM {grid} WHERE k = 3").one() \
        == (300, 333, 4 * (0 + 1 + 2 + 3))


def test_allow_filtering(session, grid):
    raises(session, InvalidRequest, f"SELECT * FROM {grid} WHERE v = 123", match="ALLOW FILTERING")
    raises(session, InvalidRequest, f"SELECT * FROM {grid} WHERE k = 1 AND w = 1", match="ALLOW FILTERING")
    # (Cassandra words this one as "c2 cannot be restricted as preceding column c1 is not restricted".)
    raises(session, InvalidRequest, f"SELECT * FROM {grid} WHERE c2 = 1")
    got = rows(session, f"SELECT k, c1, c2 FROM {grid} WHERE v = 123 ALLOW FILTERING")
    assert [(r.k, r.c1, r.c2) for r in got] == [(1, 2, 3)]
    got = rows(session, f"SELECT v FROM {grid} WHERE k = 1 AND w > 2 ALLOW FILTERING")
    assert [r.v for r in got] == [103, 113, 123, 133]
    got = rows(session, f"SELECT v FROM {grid} WHERE w = 0 AND v < 300 ALLOW FILTERING")
    assert sorted(r.v for r in got) == [c1 * 10 + k * 100 for k in range(3) for c1 in range(4)]
    got = rows(session, f"SELECT k FROM {grid} WHERE c2 = 1 AND c1 = 1 ALLOW FILTERING")
    assert len(got) == PARTITIONS
    got = rows(session, f"SELECT k FROM {grid} WHERE s = 'static' ALLOW FILTERING")
    assert {r.k for r in got} == {1}
    # COUNT with filtering.
    assert session.execute(f"SELECT COUNT(*) AS n FROM {grid} WHERE w = 3 ALLOW FILTERING").one().n == \
        PARTITIONS * CLUSTERS


# --- functions -----------------------------------------------------------------


@pytest.fixture(scope="module")
def events(session, keyspace):
    name = unique("events")
    session.execute(f"CREATE TABLE {name} (k int, t timeuuid, ts timestamp, b blob, i int, txt text,"
                    " PRIMARY KEY (k, t))")
    return name


def test_now_uuid_and_time_conversions(session, events):
    before = time.time()
    session.execute(f"INSERT INTO {events} (k, t, ts, b, i, txt) VALUES (1, now(), toTimestamp(now()),"
                    " textAsBlob('hello'), 42, 'x')")
    after = time.time()
    row = session.execute(f"SELECT t, ts, b, toTimestamp(t) AS tts, toDate(t) AS d, toUnixTimestamp(t) AS ms,"
                          f" toUnixTimestamp(ts) AS tsms, toDate(ts) AS tsd, blobAsText(b) AS txt FROM {events}"
                          " WHERE k = 1").one()
    assert row.t.version == 1
    epoch = datetime.datetime(1970, 1, 1)
    t_seconds = (row.tts - epoch).total_seconds()
    assert before - 1 <= t_seconds <= after + 1
    assert abs((row.ts - row.tts).total_seconds()) < 1
    assert row.ms == int(round(t_seconds * 1000)) or abs(row.ms - t_seconds * 1000) <= 1
    today = datetime.datetime.utcfromtimestamp(t_seconds).date()
    assert row.d.date() == today and row.tsd.date() == today
    assert abs(row.tsms - (row.ts - epoch).total_seconds() * 1000) <= 1
    assert row.b == b"hello" and row.txt == "hello"
    # now() is evaluated per call: two inserts get two different timeuuids.
    session.execute(f"INSERT INTO {events} (k, t, i) VALUES (1, now(), 1)")
    assert len(rows(session, f"SELECT t FROM {events} WHERE k = 1")) == 2
    # uuid() is a random (version 4) uuid.
    u = session.execute(f"SELECT uuid() AS u FROM {events} WHERE k = 1 LIMIT 1").one().u
    assert isinstance(u, uuid.UUID) and u.version == 4
    n = session.execute(f"SELECT now() AS n FROM {events} WHERE k = 1 LIMIT 1").one().n
    assert n.version == 1


def test_blob_conversions_and_cast(session, events):
    session.execute(f"INSERT INTO {events} (k, t, b, i, txt) VALUES (2, minTimeuuid('2020-01-01 00:00:00+0000'),"
                    " intAsBlob(258), 7, '12')")
    row = session.execute(f"SELECT blobAsInt(b) AS bi, textAsBlob(txt) AS tb, blobAsText(textAsBlob(txt)) AS rt,"
                          f" CAST(i AS text) AS it, CAST(i AS double) AS idbl, CAST(i AS bigint) AS ib,"
                          f" CAST(txt AS text) AS tt FROM {events} WHERE k = 2").one()
    assert row.bi == 258 and row.tb == b"12" and row.rt == "12"
    assert row.it == "7" and row.idbl == 7.0 and row.ib == 7 and row.tt == "12"
    # Cassandra 5.0 accepts any argument where a blob is expected (every type
    # is value-compatible with blob): blobAsInt(int column) reads the int back.
    assert session.execute(f"SELECT blobAsInt(i) AS x FROM {events} WHERE k = 2").one().x == 7
    raises(session, InvalidRequest, f"SELECT CAST(b AS int) FROM {events} WHERE k = 2")
    raises(session, InvalidRequest, f"SELECT no_such_function(i) FROM {events} WHERE k = 2")


def test_min_max_timeuuid(session, events):
    insert = session.prepare(f"INSERT INTO {events} (k, t, i) VALUES (3, ?, ?)")
    base = datetime.datetime(2021, 6, 1, tzinfo=datetime.timezone.utc).timestamp()
    for day in range(5):
        session.execute(insert, (min_uuid_from_time(base + day * 86400 + 3600), day))
    got = [r.i for r in session.execute(
        f"SELECT i FROM {events} WHERE k = 3 AND t > maxTimeuuid('2021-06-02 00:00:00+0000')"
        " AND t < minTimeuuid('2021-06-04 00:59:59+0000')")]
    assert got == [1, 2]
    row = session.execute(f"SELECT minTimeuuid('2021-06-01 00:00:00+0000') AS lo,"
                          f" maxTimeuuid('2021-06-01 00:00:00+0000') AS hi FROM {events} WHERE k = 3 LIMIT 1").one()
    assert row.lo == min_uuid_from_time(base)
    # Cassandra's maxTimeuuid (UUIDGen.maxTimeUUID) is the millisecond's last
    # 100 ns tick with every clock-sequence and node byte 0x7f; the driver's
    # max_uuid_from_time helper differs, so compare with Cassandra's definition.
    assert row.hi.time == row.lo.time + 9999 and row.hi.bytes[8:] == b"\x7f" * 8
