"""Paging: many small pages over several partitions and over one big one,
forward and reversed, the paging state handed back by the client (also on
another connection), prepared statements, LIMIT, DISTINCT, filtering."""

import struct
import time

import pytest
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.metadata import Murmur3Token
from cassandra.query import SimpleStatement

from helpers import unique

PAGE = 7
SMALL_PARTITIONS = 20
SMALL_ROWS = 60  # rows per small partition
BIG_KEY = 1000
BIG_ROWS = 1300


@pytest.fixture(scope="module")
def data(session, keyspace):
    name = unique("paged")
    session.execute(f"CREATE TABLE {name} (k int, c int, v text, PRIMARY KEY (k, c))")
    insert = session.prepare(f"INSERT INTO {name} (k, c, v) VALUES (?, ?, ?)")
    args = [(k, c, f"{k}:{c}") for k in range(SMALL_PARTITIONS) for c in range(SMALL_ROWS)]
    args += [(BIG_KEY, c, f"big:{c}") for c in range(BIG_ROWS)]
    for ok, result in execute_concurrent_with_args(session, insert, args, concurrency=64):
        assert ok, result
    return name


def token_order(keys):
    return sorted(keys, key=lambda k: Murmur3Token.from_key(struct.pack(">i", k)).value)


def pages_of(result):
    """Walks a ResultSet page by page; returns the list of pages."""
    pages = [list(result.current_rows)]
    while result.has_more_pages:
        result.fetch_next_page()
        pages.append(list(result.current_rows))
    return pages


def assert_full_pages(pages, total):
    assert sum(len(p) for p in pages) == total
    assert all(len(p) == PAGE for p in pages[:-1]), [len(p) for p in pages if len(p) != PAGE][:5]
    assert 1 <= len(pages[-1]) <= PAGE or (total % PAGE == 0 and not pages[-1])


def test_full_scan_many_pages(session, data):
    total = SMALL_PARTITIONS * SMALL_ROWS + BIG_ROWS
    pages = pages_of(session.execute(SimpleStatement(f"SELECT k, c FROM {data}", fetch_size=PAGE)))
    assert len(pages) >= total // PAGE
    assert_full_pages(pages, total)
    got = [(r.k, r.c) for p in pages for r in p]
    expected = [(k, c) for k in token_order(list(range(SMALL_PARTITIONS)) + [BIG_KEY])
                for c in range(BIG_ROWS if k == BIG_KEY else SMALL_ROWS)]
    assert got == expected


def test_big_partition_forward_and_reversed(session, data):
    fwd = pages_of(session.execute(SimpleStatement(f"SELECT c FROM {data} WHERE k = {BIG_KEY}", fetch_size=PAGE)))
    assert_full_pages(fwd, BIG_ROWS)
    assert [r.c for p in fwd for r in p] == list(range(BIG_ROWS))
    rev = pages_of(session.execute(SimpleStatement(
        f"SELECT c FROM {data} WHERE k = {BIG_KEY} ORDER BY c DESC", fetch_size=PAGE)))
    assert_full_pages(rev, BIG_ROWS)
    assert [r.c for p in rev for r in p] == list(range(BIG_ROWS - 1, -1, -1))
    # A slice, reversed, paged.
    got = [r.c for r in session.execute(SimpleStatement(
        f"SELECT c FROM {data} WHERE k = {BIG_KEY} AND c >= 100 AND c < 200 ORDER BY c DESC", fetch_size=PAGE))]
    assert got == list(range(199, 99, -1))


def test_in_query_paged(session, data):
    stmt = SimpleStatement(f"SELECT k, c FROM {data} WHERE k IN (3, {BIG_KEY}, 5)", fetch_size=PAGE)
    got = [(r.k, r.c) for r in session.execute(stmt)]
    assert len(got) == 2 * SMALL_ROWS + BIG_ROWS
    assert len(set(got)) == len(got)


def test_paging_state_reuse(cluster, session, data):
    stmt = SimpleStatement(f"SELECT k, c FROM {data} WHERE k = {BIG_KEY}", fetch_size=PAGE)
    first = session.execute(stmt)
    assert [r.c for r in first.current_rows] == list(range(PAGE))
    state = first.paging_state
    assert state is not None
    # Resuming twice from the same state gives the same page: the state is a value.
    for _ in range(2):
        again = session.execute(stmt, paging_state=state)
        assert [r.c for r in again.current_rows] == list(range(PAGE, 2 * PAGE))
    # The state is portable to another connection (another session).
    other = cluster.connect(session.keyspace)
    try:
        resumed = other.execute(stmt, paging_state=state)
        assert [r.c for r in resumed.current_rows] == list(range(PAGE, 2 * PAGE))
        # Walking on by hand to the end visits every remaining row once.
        seen = list(range(PAGE))
        state = first.paging_state
        while state is not None:
            page = other.execute(stmt, paging_state=state)
            seen.extend(r.c for r in page.current_rows)
            state = page.paging_state
        assert seen == list(range(BIG_ROWS))
    finally:
        other.shutdown()


def test_paging_state_over_partitions(session, data):
    stmt = SimpleStatement(f"SELECT k, c FROM {data}", fetch_size=500)
    first = session.execute(stmt)
    head = [(r.k, r.c) for r in first.current_rows]
    rest = [(r.k, r.c) for r in session.execute(stmt, paging_state=first.paging_state)]
    full = [(r.k, r.c) for r in session.execute(SimpleStatement(f"SELECT k, c FROM {data}", fetch_size=5000))]
    assert head + rest == full


def test_prepared_statement_paging(session, data):
    prepared = session.prepare(f"SELECT c, v FROM {data} WHERE k = ? AND c >= ?")
    prepared.fetch_size = PAGE
    result = session.execute(prepared, (BIG_KEY, 50))
    pages = pages_of(result)
    assert_full_pages(pages, BIG_ROWS - 50)
    assert [r.c for p in pages for r in p] == list(range(50, BIG_ROWS))
    # Resume a prepared statement from its paging state.
    bound = prepared.bind((BIG_KEY, 0))
    first = session.execute(bound)
    second = session.execute(prepared.bind((BIG_KEY, 0)), paging_state=first.paging_state)
    assert [r.c for r in second.current_rows] == list(range(PAGE, 2 * PAGE))
    scan = session.prepare(f"SELECT k FROM {data}")
    scan.fetch_size = 333
    assert sum(1 for _ in session.execute(scan)) == SMALL_PARTITIONS * SMALL_ROWS + BIG_ROWS


def test_paging_with_limit(session, data):
    got = [r.c for r in session.execute(SimpleStatement(f"SELECT c FROM {data} WHERE k = {BIG_KEY} LIMIT 50",
                                                        fetch_size=PAGE))]
    assert got == list(range(50))
    got = list(session.execute(SimpleStatement(f"SELECT k, c FROM {data} LIMIT 300", fetch_size=PAGE)))
    assert len(got) == 300
    # LIMIT smaller than a page, and exactly a page.
    assert len(list(session.execute(SimpleStatement(f"SELECT c FROM {data} LIMIT 3", fetch_size=PAGE)))) == 3
    pages = pages_of(session.execute(SimpleStatement(f"SELECT c FROM {data} LIMIT {PAGE}", fetch_size=PAGE)))
    assert sum(len(p) for p in pages) == PAGE
    got = list(session.execute(SimpleStatement(f"SELECT k, c FROM {data} PER PARTITION LIMIT 3", fetch_size=PAGE)))
    assert len(got) == 3 * (SMALL_PARTITIONS + 1) and all(r.c < 3 for r in got)
    got = list(session.execute(SimpleStatement(
        f"SELECT k, c FROM {data} PER PARTITION LIMIT 10 LIMIT 45", fetch_size=PAGE)))
    assert len(got) == 45
    prepared = session.prepare(f"SELECT c FROM {data} WHERE k = ? LIMIT ?")
    prepared.fetch_size = PAGE
    assert [r.c for r in session.execute(prepared, (BIG_KEY, 30))] == list(range(30))


def test_distinct_count_and_filtering_paged(session, data):
    keys = [r.k for r in session.execute(SimpleStatement(f"SELECT DISTINCT k FROM {data}", fetch_size=3))]
    assert keys == token_order(list(range(SMALL_PARTITIONS)) + [BIG_KEY])
    count = session.execute(SimpleStatement(f"SELECT COUNT(*) AS n FROM {data}", fetch_size=PAGE)).one().n
    assert count == SMALL_PARTITIONS * SMALL_ROWS + BIG_ROWS
    # Filtering that matches few rows: pages may be sparse, the result is exact.
    got = [(r.k, r.c) for r in session.execute(SimpleStatement(
        f"SELECT k, c FROM {data} WHERE v = '7:57' ALLOW FILTERING", fetch_size=PAGE))]
    assert got == [(7, 57)]
    got = [r.c for r in session.execute(SimpleStatement(
        f"SELECT c FROM {data} WHERE c > 1290 ALLOW FILTERING", fetch_size=PAGE))]
    assert got == list(range(1291, BIG_ROWS))
