"""Paging while the data move and change between pages: a flush moves the rest
of the partition from the memtable into an sstable mid-query, a major
compaction merges the sstables the query started on, and inserts, updates and
deletes (row tombstones, range deletions, a partition deletion) land ahead of
the paging position and behind it.

Paging is stateless (the state is the last row returned), so each page must be
what a correct Cassandra gives at the moment it is read: the first PAGE live
rows after the last row returned, in the query's order. The test keeps its own
model of the table ({(k, c): v}), applies every write to it too, and checks
every page against the model's rows after the cursor: a row deleted ahead of
the cursor never appears, a row inserted ahead of it appears once, in order,
and what happens behind it does not matter.
"""

import itertools
import re
import struct

import pytest
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.metadata import Murmur3Token
from cassandra.query import SimpleStatement

from conftest import nodetool
from helpers import unique

PAGE = 25
BIG_KEY = 1000
BIG_ROWS = 1200  # clustering 0, 2, 4, ...: the odd ones are free for rows inserted between
SMALL_ROWS = 20


def token(k):
    return Murmur3Token.from_key(struct.pack(">i", k)).value


# Two small partitions before the big one in token order and four after it, so
# that a scan crosses partitions on its first pages, is inside the big
# partition when the flushes, compactions and writes happen, and has
# partitions ahead of it to delete.
SMALL_BEFORE = [k for k in range(BIG_KEY) if token(k) < token(BIG_KEY)][:2]
SMALL_AFTER = [k for k in range(BIG_KEY) if token(k) > token(BIG_KEY)][:4]
SMALL_KEYS = SMALL_BEFORE + SMALL_AFTER

# name: (the SELECT's WHERE/ORDER BY, which partitions it reads, a row's place in its order)
QUERIES = {
    "forward": (f"WHERE k = {BIG_KEY}", lambda k: k == BIG_KEY, lambda k, c: (c,)),
    "reverse": (f"WHERE k = {BIG_KEY} ORDER BY c DESC", lambda k: k == BIG_KEY, lambda k, c: (-c,)),
    "scan": ("", lambda k: True, lambda k, c: (token(k), k, c)),
}


def initial_rows():
    rows = [(BIG_KEY, c, f"big:{c}") for c in range(0, 2 * BIG_ROWS, 2)]
    rows += [(k, c, f"{k}:{c}") for k in SMALL_KEYS for c in range(0, 2 * SMALL_ROWS, 2)]
    return rows


def sstable_count(node, keyspace, table):
    text = nodetool(node, "tablestats", f"{keyspace}.{table}")
    return int(re.search(r"SSTable count: (\d+)", text).group(1))


class PagedQuery:
    """One query paged by hand over `table`, the writes made between its pages,
    and the model both are checked against."""

    def __init__(self, session, node, keyspace, table, model, query):
        self.session, self.node, self.keyspace, self.table = session, node, keyspace, table
        self.model = model
        self.query = query
        clause, self.reads, self.place = QUERIES[query]
        self.stmt = SimpleStatement(f"SELECT k, c, v FROM {table} {clause}", fetch_size=PAGE)
        self.cursor = None  # the place of the last row returned
        self.written = set(model)  # every (k, c) ever written: inserts never reuse one
        self.inserted_ahead, self.deleted_ahead = set(), set()
        self.seen = []
        self.insert_stmt = session.prepare(f"INSERT INTO {table} (k, c, v) VALUES (?, ?, ?)")

    # --- the model

    def is_ahead(self, k, c):
        return self.reads(k) and (self.cursor is None or self.place(k, c) > self.cursor)

    def ordered(self):
        rows = [(k, c, v) for (k, c), v in self.model.items() if self.reads(k)]
        return sorted(rows, key=lambda r: self.place(r[0], r[1]))

    def ahead(self):
        return [r for r in self.ordered() if self.is_ahead(r[0], r[1])]

    def behind(self):
        return [r for r in self.ordered() if not self.is_ahead(r[0], r[1])]

    def cursor_key(self):
        return self.cursor[1] if self.query == "scan" else BIG_KEY

    # --- writes, to the table and the model

    def insert(self, k, c, v):
        if self.is_ahead(k, c):
            self.inserted_ahead.add((k, c))
        self.session.execute(self.insert_stmt, (k, c, v))
        self.model[(k, c)] = v
        self.written.add((k, c))

    def delete(self, where, params, matches):
        """DELETE ... WHERE `where`; `matches(k, c)` tells the rows it deletes."""
        self.session.execute(f"DELETE FROM {self.table} WHERE {where}", params)
        for k, c in [key for key in self.model if matches(*key)]:
            if self.is_ahead(k, c):
                self.deleted_ahead.add((k, c))
            del self.model[(k, c)]

    def free_after(self, k, c):
        """A clustering never written in partition `k`, just after `c` in this query's order."""
        step = -1 if self.query == "reverse" else 1
        return next(n for n in itertools.count(c + step, step) if (k, n) not in self.written)

    # --- paging

    def run(self, events):
        """Pages to the end; after page i (from 0) runs `events[i](self)`."""
        state = None
        for page_no in itertools.count():
            assert page_no < 10 * len(self.model) // PAGE + 10, "paging does not end"
            result = self.session.execute(self.stmt, paging_state=state)
            page = [(r.k, r.c, r.v) for r in result.current_rows]
            expected = self.ahead()
            assert page == expected[:PAGE], (
                f"page {page_no} after {self.cursor}: got {page[:4]}... ({len(page)} rows), "
                f"expected {expected[:4]}... ({min(len(expected), PAGE)} rows)")
            self.seen.extend(page)
            if page:
                self.cursor = self.place(page[-1][0], page[-1][1])
            state = result.paging_state
            if state is None:
                assert len(expected) <= PAGE, f"paging stopped at page {page_no} with rows left: {expected[PAGE:][:4]}"
                break
            if page_no in events:
                events[page_no](self)
        keys = [(k, c) for k, c, _ in self.seen]
        assert len(keys) == len(set(keys)), "a row came twice"
        assert not self.deleted_ahead & set(keys), sorted(self.deleted_ahead & set(keys))
        assert {key for key in self.inserted_ahead if key in self.model} <= set(keys)


# --- what happens between pages


def flush(p):
    before = sstable_count(p.node, p.keyspace, p.table)
    nodetool(p.node, "flush", p.keyspace)
    assert sstable_count(p.node, p.keyspace, p.table) == before + 1, "the flush wrote no sstable"


def compact(p):
    assert sstable_count(p.node, p.keyspace, p.table) >= 2, "nothing to merge"
    nodetool(p.node, "compact", p.keyspace, p.table)
    assert sstable_count(p.node, p.keyspace, p.table) == 1


def write(p):
    """New rows ahead of the cursor and behind it, and a new value for a row ahead."""
    ahead, behind = p.ahead(), p.behind()
    assert len(ahead) > 60 and len(behind) > 20, (len(ahead), len(behind))
    for k, c, _ in ahead[1:40:6]:
        n = p.free_after(k, c)
        p.insert(k, n, f"new:{k}:{n}")
    k, c, _ = ahead[3]
    p.insert(k, c, f"updated:{k}:{c}")
    for k, c, _ in behind[-20::7]:
        n = p.free_after(k, c)
        p.insert(k, n, f"new:{k}:{n}")
    if p.query == "scan":
        # A new partition ahead of the cursor's token and one behind it.
        cursor_token = p.cursor[0]
        used = {k for k, _ in p.written}
        fresh = [k for k in range(5000, 6000) if k not in used]
        for k in (next(k for k in fresh if token(k) > cursor_token), next(k for k in fresh if token(k) < cursor_token)):
            for c in (0, 2, 4):
                p.insert(k, c, f"new:{k}:{c}")


def delete(p):
    """Row tombstones ahead of the cursor, on the cursor row itself and behind
    it; a range deletion wholly ahead and one across the cursor; in a scan, a
    partition deletion ahead."""
    ahead, behind = p.ahead(), p.behind()
    assert len(ahead) > 60 and len(behind) > 20, (len(ahead), len(behind))
    for k, c, _ in (ahead[0], ahead[9], behind[-1], behind[-4]):
        p.delete("k = %s AND c = %s", (k, c), lambda k2, c2, k=k, c=c: (k2, c2) == (k, c))
    ahead = p.ahead()
    k = ahead[15][0]
    cs = [c for k2, c, _ in ahead[15:27] if k2 == k]
    lo, hi = min(cs), max(cs)
    p.delete("k = %s AND c >= %s AND c <= %s", (k, lo, hi), lambda k2, c2: k2 == k and lo <= c2 <= hi)
    # Across the cursor: from a row behind it to a row ahead, in its partition.
    k = p.cursor_key()
    behind_c = next(c for k2, c, _ in reversed(p.behind()[:-2]) if k2 == k)
    ahead_c = next(c for k2, c, _ in p.ahead()[2:] if k2 == k)
    lo, hi = sorted((behind_c, ahead_c))
    p.delete("k = %s AND c > %s AND c < %s", (k, lo, hi), lambda k2, c2: k2 == k and lo < c2 < hi)
    if p.query == "scan":
        later = [k2 for k2 in SMALL_AFTER if any(r[0] == k2 for r in p.ahead())]
        assert later, "no partition ahead to delete"
        p.delete("k = %s", (later[-1],), lambda k2, c2: k2 == later[-1])


def write_and_delete(p):
    write(p)
    delete(p)


def make_table(session, **options):
    name = unique("pc")
    with_ = " AND ".join(f"{k} = {v}" for k, v in options.items())
    session.execute(f"CREATE TABLE {name} (k int, c int, v text, PRIMARY KEY (k, c))"
                    + (f" WITH {with_}" if with_ else ""))
    return name


def load(session, table, rows):
    insert = session.prepare(f"INSERT INTO {table} (k, c, v) VALUES (?, ?, ?)")
    for ok, result in execute_concurrent_with_args(session, insert, rows, concurrency=64):
        assert ok, result


@pytest.mark.parametrize("query", list(QUERIES))
def test_paging_across_flushes_and_writes(session, keyspace, varve_server, query):
    """The query starts on a memtable; a flush after its second page moves the
    rest into an sstable; then writes and deletes go into fresh memtables over
    it, are flushed again and compacted, all between pages."""
    table = make_table(session)
    model = {(k, c): v for k, c, v in initial_rows()}
    load(session, table, initial_rows())
    assert sstable_count(varve_server, keyspace, table) == 0
    p = PagedQuery(session, varve_server, keyspace, table, model, query)
    p.run({1: flush, 3: write, 5: delete, 8: flush, 10: write_and_delete, 12: compact,
           14: write_and_delete, 16: flush, 18: write_and_delete})
    assert p.inserted_ahead and p.deleted_ahead


@pytest.mark.parametrize("query", list(QUERIES))
def test_paging_across_compaction(session, keyspace, varve_server, query):
    """The query starts on three sstables that each hold every third row of
    every partition (the newest also deletes and overwrites rows of the older
    ones); a major compaction merges them between pages, purging the deleted
    rows (gc_grace_seconds = 0), and again after writes and deletes."""
    table = make_table(session, gc_grace_seconds=0)
    rows = initial_rows()
    model = {}
    for batch in range(3):
        part = [r for r in rows if (r[1] // 2) % 3 == batch]
        load(session, table, part)
        model.update({(k, c): v for k, c, v in part})
        if batch == 2:
            # The newest sstable shadows rows of the older ones: a row
            # tombstone, a range deletion and an overwrite.
            session.execute(f"DELETE FROM {table} WHERE k = %s AND c = %s", (BIG_KEY, 600))
            session.execute(f"DELETE FROM {table} WHERE k = %s AND c >= %s AND c <= %s", (BIG_KEY, 1000, 1100))
            for key in [key for key in model if key[0] == BIG_KEY and (key[1] == 600 or 1000 <= key[1] <= 1100)]:
                del model[key]
            session.execute(f"UPDATE {table} SET v = 'overwritten' WHERE k = %s AND c = %s", (BIG_KEY, 1206))
            model[(BIG_KEY, 1206)] = "overwritten"
        nodetool(varve_server, "flush", keyspace, table)
    assert sstable_count(varve_server, keyspace, table) == 3
    p = PagedQuery(session, varve_server, keyspace, table, model, query)
    p.run({2: compact, 4: write_and_delete, 5: flush, 6: compact, 8: write_and_delete, 10: flush})
    assert p.inserted_ahead and p.deleted_ahead
