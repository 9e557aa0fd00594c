"""system.size_estimates and system.table_estimates after writes and a
flush: a row per table and primary range of the node, estimated from the
sstables (crates/query/src/system/estimates.rs)."""

import pytest

from conftest import connect, make_keyspace, nodetool

MIN_TOKEN = -(2 ** 63)


@pytest.fixture
def node_session(start_varve):
    node = start_varve()
    c = connect(node.host, node.port, 4)
    yield node, c.connect()
    c.shutdown()


def test_estimates_follow_the_sstables(node_session):
    node, s = node_session
    ks = make_keyspace(s)
    s.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v text)")
    s.execute(f"CREATE TABLE {ks}.empty (k int PRIMARY KEY)")
    ins = s.prepare(f"INSERT INTO {ks}.t (k, v) VALUES (?, ?)")
    for k in range(2000):
        s.execute(ins, (k, "x" * 100))
    # Memtables are not counted, as in Cassandra.
    rows = list(s.execute(f"SELECT * FROM system.size_estimates WHERE keyspace_name = '{ks}' AND table_name = 't'"))
    tokens = sorted(int(t) for t in s.execute("SELECT tokens FROM system.local").one().tokens)
    # A range per token, the one that wraps cut in two at the minimum token.
    assert len(rows) == len(tokens) + 1
    assert all(r.partitions_count == 0 for r in rows)
    nodetool(node, "flush", ks)
    rows = list(s.execute(f"SELECT * FROM system.size_estimates WHERE keyspace_name = '{ks}' AND table_name = 't'"))
    ends = sorted(int(r.range_end) for r in rows)
    assert set(tokens) <= set(ends) and MIN_TOKEN in ends
    for r in rows:
        start, end = int(r.range_start), int(r.range_end)
        assert start < end or end == MIN_TOKEN
    total = sum(r.partitions_count for r in rows)
    assert abs(total - 2000) <= len(rows), total
    assert all(100 <= r.mean_partition_size <= 1000 for r in rows), [r.mean_partition_size for r in rows]
    empty = list(s.execute(f"SELECT partitions_count FROM system.size_estimates WHERE keyspace_name = '{ks}' "
                           "AND table_name = 'empty'"))
    assert len(empty) == len(rows) and all(r.partitions_count == 0 for r in empty)
    typed = list(s.execute(f"SELECT * FROM system.table_estimates WHERE keyspace_name = '{ks}' AND table_name = 't'"))
    assert {r.range_type for r in typed} == {"primary", "local_primary"}
    assert len(typed) == 2 * len(rows)
    primary = {(r.range_start, r.range_end): r.partitions_count for r in typed if r.range_type == "primary"}
    assert primary == {(r.range_start, r.range_end): r.partitions_count for r in rows}
    # System keyspaces have no rows.
    assert not list(s.execute("SELECT * FROM system.size_estimates WHERE keyspace_name = 'system'"))
