"""Real nodes cut off from each other by the network (netcut.py: the
internode traffic between two groups of addresses is dropped, while clients
still reach every node). A cut-off node is alive and takes requests, unlike
a killed or frozen one (test_cluster_data.py): its coordinator must answer
without hanging (Unavailable once its failure detector convicts the others,
with the level's counts), the side with the replicas a level needs goes on
at that level, and once the cut heals the hints each side kept bring the
other up to date. Lightweight transactions stay on the majority's side.
"""

import time

import pytest

import netcut
from test_cluster_launcher import eventually, node_states, port_args, varve_cluster
from test_cluster_launcher import pinned as pinned_on

# A port set of its own (conftest.py): the cuts match this storage port only.
NATIVE, ADMIN, STORAGE = 20142, 20280, 18100
FIXED_PORTS = NATIVE
PORTS = port_args(NATIVE, ADMIN, STORAGE)

# The longest a request that must not wait for the cut-off side may take:
# well under write_request_timeout (2 s), far under the driver's 20 s.
PROMPT_S = 1.5

pytestmark = pytest.mark.skipif(not netcut.available(), reason="network cuts need root (ip rule)")


def session(host):
    cluster = pinned_on(host, NATIVE)
    return cluster, cluster.connect()


def statement(cql, level):
    """A statement at `level` that the driver does not retry."""
    from cassandra.policies import FallthroughRetryPolicy
    from cassandra.query import SimpleStatement

    return SimpleStatement(cql, consistency_level=level, serial_consistency_level=None,
                           retry_policy=FallthroughRetryPolicy())


def timed(s, stmt, params=None):
    started = time.monotonic()
    result = s.execute(stmt, params)
    return result, time.monotonic() - started


def address(node):
    return f"127.0.0.{node}"


def sees(directory, node, others, state):
    """Whether `node`'s nodetool status shows every node of `others` in
    `state` ('UN' or 'DN')."""
    states = node_states(directory, node)
    return all(states.get(address(o)) == state for o in others)


def start(tmp_path, nodes, replication, *extra):
    directory = tmp_path / "cluster"
    varve_cluster(directory, "start", "--nodes", str(nodes), *extra, *PORTS)
    c, s = session(address(1))
    s.execute(f"CREATE KEYSPACE ks WITH replication = {replication}")
    s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
    c.shutdown()
    return directory


def values_on(host, keys, level):
    """{k: v} of the keys `host` reads at `level` (missing keys left out)."""
    c, s = session(host)
    try:
        select = statement("SELECT v FROM ks.t WHERE k = %s", level)
        rows = {k: s.execute(select, (k,)).one() for k in keys}
        return {k: row.v for k, row in rows.items() if row is not None}
    finally:
        c.shutdown()


def unavailable(s, stmt, params=None):
    """The Unavailable `stmt` gets, checked to come at once."""
    from cassandra import Unavailable

    started = time.monotonic()
    with pytest.raises(Unavailable) as info:
        s.execute(stmt, params)
    assert time.monotonic() - started < PROMPT_S, "Unavailable must come before anything is sent"
    return info.value


def test_a_node_cut_off_answers_at_once_and_both_sides_catch_up_after(tmp_path):
    from cassandra import ConsistencyLevel as CL

    directory = start(tmp_path, 3, "{'class': 'SimpleStrategy', 'replication_factor': 3}")
    insert = "INSERT INTO ks.t (k, v) VALUES (%s, %s)"
    try:
        with netcut.Cuts(STORAGE) as cuts:
            c1, s1 = session(address(1))
            c3, s3 = session(address(3))
            s1.execute(statement(insert, CL.ALL), (0, "before"))
            cuts.cut([address(3)], [address(1), address(2)])
            # The majority goes on at QUORUM at once, before any conviction.
            slowest = max(timed(s1, statement(insert, CL.QUORUM), (k, f"major{k}"))[1] for k in range(1, 11))
            assert slowest < PROMPT_S, f"a QUORUM write waited {slowest:.1f} s for the cut-off node"

            # Node 2 too: a QUORUM read it coordinates below must not pick node 3.
            for node, others in ((1, [3]), (2, [3]), (3, [1, 2])):
                assert eventually(lambda: sees(directory, node, others, "DN")), node_states(directory, node)
            on_1 = unavailable(s1, statement(insert, CL.ALL), (99, "x"))
            assert (on_1.consistency, on_1.required_replicas, on_1.alive_replicas) == (CL.ALL, 3, 2)
            on_3 = unavailable(s3, statement(insert, CL.QUORUM), (99, "x"))
            assert (on_3.consistency, on_3.required_replicas, on_3.alive_replicas) == (CL.QUORUM, 2, 1)
            read_3 = unavailable(s3, statement("SELECT v FROM ks.t WHERE k = 1", CL.QUORUM))
            assert (read_3.required_replicas, read_3.alive_replicas) == (2, 1)
            # Each side still serves ONE, the cut-off node included.
            for k in range(100, 105):
                _, took = timed(s3, statement(insert, CL.ONE), (k, f"minor{k}"))
                assert took < PROMPT_S, f"a ONE write on the cut-off node took {took:.1f} s"
            assert values_on(address(3), range(100, 105), CL.ONE) == {k: f"minor{k}" for k in range(100, 105)}
            assert values_on(address(2), range(11), CL.QUORUM) == {
                0: "before", **{k: f"major{k}" for k in range(1, 11)}}
            c1.shutdown()
            c3.shutdown()

            cuts.heal()
            assert eventually(lambda: sees(directory, 1, [3], "UN")), node_states(directory, 1)
            assert eventually(lambda: sees(directory, 3, [1, 2], "UN")), node_states(directory, 3)

        # Hints, not reads, bring each side up to date: read at ONE on the
        # replica that missed the writes (no read repair can happen at ONE
        # from a single replica).
        major = {k: f"major{k}" for k in range(1, 11)}
        minor = {k: f"minor{k}" for k in range(100, 105)}
        assert eventually(lambda: values_on(address(3), range(1, 11), CL.ONE) == major), \
            values_on(address(3), range(1, 11), CL.ONE)
        for node in (1, 2):
            assert eventually(lambda: values_on(address(node), range(100, 105), CL.ONE) == minor), \
                (node, values_on(address(node), range(100, 105), CL.ONE))
    finally:
        varve_cluster(directory, "stop", check=False)


def test_local_quorum_goes_on_while_the_other_data_centre_is_cut_off(tmp_path):
    from cassandra import ConsistencyLevel as CL

    replication = "{'class': 'NetworkTopologyStrategy', 'dc1': 2, 'dc2': 2}"
    directory = start(tmp_path, 4, replication, "--dcs", "2")
    dc1, dc2 = [address(1), address(2)], [address(3), address(4)]
    insert = "INSERT INTO ks.t (k, v) VALUES (%s, %s)"
    try:
        with netcut.Cuts(STORAGE) as cuts:
            c1, s1 = session(address(1))
            c3, s3 = session(address(3))
            s1.execute(statement(insert, CL.EACH_QUORUM), (0, "both"))
            cuts.cut(dc1, dc2)
            started = time.monotonic()
            for k in range(1, 21):
                s1.execute(statement(insert, CL.LOCAL_QUORUM), (k, f"dc1-{k}"))
                s3.execute(statement(insert, CL.LOCAL_QUORUM), (k + 100, f"dc2-{k}"))
            local_time = time.monotonic() - started
            assert local_time < 20 * PROMPT_S, f"LOCAL_QUORUM waited for the other DC ({local_time:.1f} s)"
            assert values_on(address(2), range(21), CL.LOCAL_QUORUM) == {
                0: "both", **{k: f"dc1-{k}" for k in range(1, 21)}}

            assert eventually(lambda: sees(directory, 1, [3, 4], "DN")), node_states(directory, 1)
            each = unavailable(s1, statement(insert, CL.EACH_QUORUM), (99, "x"))
            assert (each.consistency, each.required_replicas, each.alive_replicas) == (CL.EACH_QUORUM, 2, 0)
            quorum = unavailable(s1, statement(insert, CL.QUORUM), (99, "x"))
            assert (quorum.required_replicas, quorum.alive_replicas) == (3, 2)
            c1.shutdown()
            c3.shutdown()
            cuts.heal()
            assert eventually(lambda: sees(directory, 1, [3, 4], "UN")), node_states(directory, 1)
            assert eventually(lambda: sees(directory, 3, [1, 2], "UN")), node_states(directory, 3)

        from_dc1 = {k: f"dc1-{k}" for k in range(1, 21)}
        from_dc2 = {k + 100: f"dc2-{k}" for k in range(1, 21)}
        assert eventually(lambda: values_on(address(4), range(1, 21), CL.LOCAL_QUORUM) == from_dc1), \
            values_on(address(4), range(1, 21), CL.LOCAL_QUORUM)
        assert eventually(lambda: values_on(address(2), range(101, 121), CL.LOCAL_QUORUM) == from_dc2), \
            values_on(address(2), range(101, 121), CL.LOCAL_QUORUM)
    finally:
        varve_cluster(directory, "stop", check=False)


def test_lightweight_transactions_stay_on_the_majority_side_of_a_cut(tmp_path):
    from cassandra import ConsistencyLevel as CL

    directory = start(tmp_path, 3, "{'class': 'SimpleStrategy', 'replication_factor': 3}")
    try:
        with netcut.Cuts(STORAGE) as cuts:
            c1, s1 = session(address(1))
            c3, s3 = session(address(3))
            s1.execute(statement("INSERT INTO ks.t (k, v) VALUES (1, 'v0') IF NOT EXISTS", CL.QUORUM))
            cuts.cut([address(3)], [address(1), address(2)])
            assert eventually(lambda: sees(directory, 3, [1, 2], "DN")), node_states(directory, 3)
            update = "UPDATE ks.t SET v = %s WHERE k = 1 IF v = %s"
            # Named QUORUM, as Cassandra 5.0.4 names a SERIAL round's quorum.
            on_3 = unavailable(s3, statement(update, CL.QUORUM), ("minor", "v0"))
            assert (on_3.consistency, on_3.required_replicas, on_3.alive_replicas) == (CL.QUORUM, 2, 1)
            serial_read = unavailable(s3, statement("SELECT v FROM ks.t WHERE k = 1", CL.SERIAL))
            assert (serial_read.consistency, serial_read.required_replicas, serial_read.alive_replicas) == (CL.QUORUM, 2, 1)
            for n in range(1, 6):
                applied = s1.execute(statement(update, CL.QUORUM), (f"v{n}", f"v{n - 1}")).one()
                assert applied[0] is True, f"step {n}: {applied}"
            c1.shutdown()
            cuts.heal()
            assert eventually(lambda: sees(directory, 3, [1, 2], "UN")), node_states(directory, 3)
            # The cut-off node's coordinator now sees the majority's last
            # commit: a SERIAL read there finishes or reads it.
            row = s3.execute(statement("SELECT v FROM ks.t WHERE k = 1", CL.SERIAL)).one()
            assert row.v == "v5"
            stale = s3.execute(statement(update, CL.QUORUM), ("late", "v0")).one()
            assert stale[0] is False and stale.v == "v5", stale
            c3.shutdown()
    finally:
        varve_cluster(directory, "stop", check=False)
