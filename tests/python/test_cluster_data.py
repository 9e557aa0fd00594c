"""Data on a cluster of real `varve server` processes (`varve cluster`):
the coordinator stores each write on the replicas the ring gives its key,
answers at the statement's level, and says Unavailable or WriteTimeout
when the level cannot be met, as Cassandra does. Schema changes made on
one node reach every node through the metadata log.
"""

import os
import signal
import struct
import time

import pytest

from test_cluster_launcher import eventually, node_states, port_args, varve_cluster
from test_cluster_launcher import pinned as pinned_on

# A port set of its own (with test_cluster_lwt), so these modules run beside
# the launcher's (conftest.py).
NATIVE, ADMIN, STORAGE = 19942, 20080, 17900
FIXED_PORTS = NATIVE
PORTS = port_args(NATIVE, ADMIN, STORAGE)


def pinned(host):
    """A driver cluster that sends everything to `host`."""
    return pinned_on(host, NATIVE)


def statement(cql, level):
    """A statement at `level` that the driver does not retry, so the
    server's own error reaches the test."""
    from cassandra.policies import FallthroughRetryPolicy
    from cassandra.query import SimpleStatement

    return SimpleStatement(cql, consistency_level=level, retry_policy=FallthroughRetryPolicy())


def create_schema(directory, replication, nodes=3):
    """Keyspace `ks` and table `ks.t`, created on node 1 only: the metadata
    log takes them to every node before the statement returns."""
    cluster = pinned("127.0.0.1")
    s = cluster.connect()
    s.execute(f"CREATE KEYSPACE ks WITH replication = {replication}")
    s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
    cluster.shutdown()
    for i in range(2, nodes + 1):
        cluster = pinned(f"127.0.0.{i}")
        rows = cluster.connect().execute(
            "SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'ks'")
        cluster.shutdown()
        assert [r.table_name for r in rows] == ["t"], f"node {i}"


@pytest.fixture
def three_nodes(tmp_path):
    """Three nodes in one data centre, keyspace `ks` (SimpleStrategy, RF 3)
    and table `ks.t` on each; yields the cluster directory."""
    directory = tmp_path / "cluster"
    varve_cluster(directory, "start", "--nodes", "3", *PORTS)
    try:
        create_schema(directory, "{'class': 'SimpleStrategy', 'replication_factor': 3}")
        yield directory
    finally:
        varve_cluster(directory, "stop", check=False)


def freeze(pid):
    """SIGSTOP, and wait until the kernel shows the process stopped."""
    os.kill(pid, signal.SIGSTOP)

    def stopped():
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "T"

    assert eventually(stopped, timeout_s=10), f"process {pid} did not stop"


def session(host):
    cluster = pinned(host)
    return cluster, cluster.connect()


def test_quorum_writes_reach_every_replica_and_survive_a_killed_node(three_nodes):
    from cassandra import ConsistencyLevel as CL

    c1, s1 = session("127.0.0.1")
    insert = statement("INSERT INTO ks.t (k, v) VALUES (%s, %s)", CL.QUORUM)
    for k in range(50):
        s1.execute(insert, (k, f"v{k}"))
    # Every node holds every row: read at ONE from each node's own replica.
    for host in ("127.0.0.2", "127.0.0.3"):
        c, s = session(host)
        count = s.execute(statement("SELECT count(*) FROM ks.t", CL.ONE)).one().count
        c.shutdown()
        assert count == 50, host

    # A crash of one replica: QUORUM goes on at once (two of three answer),
    # before the failure detector has even convicted it.
    varve_cluster(three_nodes, "kill", "2")
    for k in range(50, 100):
        s1.execute(insert, (k, f"v{k}"))
    c1.shutdown()
    # Reads wait for the conviction: until speculative retry (the read
    # path's next step), a read that picked the dead replica times out.
    assert eventually(lambda: node_states(three_nodes, 3).get("127.0.0.2") == "DN")
    c3, s3 = session("127.0.0.3")
    select = statement("SELECT v FROM ks.t WHERE k = %s", CL.QUORUM)
    missing = [k for k in range(100) if s3.execute(select, (k,)).one() != (f"v{k}",)]
    c3.shutdown()
    assert missing == [], "acknowledged at QUORUM, then not read at QUORUM"


def test_two_of_three_down_is_unavailable_at_quorum_and_one_goes_on(three_nodes):
    from cassandra import ConsistencyLevel as CL
    from cassandra import Unavailable

    varve_cluster(three_nodes, "kill", "2")
    varve_cluster(three_nodes, "kill", "3")
    both_down = lambda: all(node_states(three_nodes, 1).get(f"127.0.0.{i}") == "DN" for i in (2, 3))
    assert eventually(both_down), node_states(three_nodes, 1)
    c, s = session("127.0.0.1")
    with pytest.raises(Unavailable) as info:
        s.execute(statement("INSERT INTO ks.t (k, v) VALUES (1, 'x')", CL.QUORUM))
    assert info.value.consistency == CL.QUORUM
    assert (info.value.required_replicas, info.value.alive_replicas) == (2, 1)
    with pytest.raises(Unavailable):
        s.execute(statement("SELECT v FROM ks.t WHERE k = 1", CL.QUORUM))
    s.execute(statement("INSERT INTO ks.t (k, v) VALUES (1, 'one')", CL.ONE))
    row = s.execute(statement("SELECT v FROM ks.t WHERE k = 1", CL.ONE)).one()
    c.shutdown()
    assert row.v == "one"


def test_a_frozen_replica_makes_all_time_out_with_the_counts(three_nodes):
    from cassandra import ConsistencyLevel as CL
    from cassandra import WriteTimeout, WriteType

    pid = int((three_nodes / "node3" / "pid").read_text())
    c, s = session("127.0.0.1")
    freeze(pid)
    try:
        started = time.monotonic()
        with pytest.raises(WriteTimeout) as info:
            s.execute(statement("INSERT INTO ks.t (k, v) VALUES (7, 'x')", CL.ALL))
        waited = time.monotonic() - started
        # Still UP to the others (not yet convicted): sent, never answered.
        assert node_states(three_nodes, 1).get("127.0.0.3") == "UN"
        s.execute(statement("INSERT INTO ks.t (k, v) VALUES (8, 'y')", CL.QUORUM))
    finally:
        os.kill(pid, signal.SIGCONT)
        c.shutdown()
    assert info.value.consistency == CL.ALL
    assert (info.value.received_responses, info.value.required_responses) == (2, 3)
    assert info.value.write_type == WriteType.SIMPLE
    assert waited < 8, f"write_request_timeout is 2 s, waited {waited:.1f} s"


def coordinator_requests(host):
    """{placement: count} of `varve_coordinator_requests_total` on a node."""
    import re
    import urllib.request

    with urllib.request.urlopen(f"http://{host}:{ADMIN}/metrics", timeout=5) as r:
        text = r.read().decode()
    found = re.findall(r'^varve_coordinator_requests_total\{placement="(\w+)"\} (\d+)', text, re.M)
    return {placement: int(n) for placement, n in found}


def test_a_token_aware_driver_sends_each_statement_to_a_replica(tmp_path):
    """With RF 1 each key has one replica: a token-aware driver must send
    every prepared statement to that node, which the nodes' counters of
    requests coordinated without holding a replica show."""
    from cassandra import ConsistencyLevel as CL

    from conftest import connect

    directory = tmp_path / "cluster"
    varve_cluster(directory, "start", "--nodes", "3", *PORTS)
    try:
        create_schema(directory, "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        cluster = connect("127.0.0.1", NATIVE, 5, local_dc="datacenter1", max_schema_agreement_wait=0)
        s = cluster.connect()
        insert = s.prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
        insert.consistency_level = CL.ONE
        select = s.prepare("SELECT v FROM ks.t WHERE k = ?")
        select.consistency_level = CL.ONE
        # The driver opens its pools to the other nodes in the background;
        # until they are open it sends a statement to whichever node it can.
        assert eventually(lambda: len([p for p in s.get_pools() if p.open_count > 0]) == 3)
        before = {i: coordinator_requests(f"127.0.0.{i}") for i in (1, 2, 3)}
        for k in range(60):
            s.execute(insert, (k, f"v{k}"))
        assert all(s.execute(select, (k,)).one().v == f"v{k}" for k in range(60))
        cluster.shutdown()
        after = {i: coordinator_requests(f"127.0.0.{i}") for i in (1, 2, 3)}
    finally:
        varve_cluster(directory, "stop", check=False)
    grew = {i: {p: after[i].get(p, 0) - before[i].get(p, 0) for p in ("replica", "not_replica")} for i in after}
    assert sum(g["replica"] for g in grew.values()) == 120, grew
    assert all(g["not_replica"] == 0 for g in grew.values()), grew
    assert sum(1 for g in grew.values() if g["replica"] > 0) >= 2, f"keys spread over the nodes: {grew}"


def metric(host, name):
    """The value of an unlabelled counter on a node's /metrics."""
    import re
    import urllib.request

    with urllib.request.urlopen(f"http://{host}:{ADMIN}/metrics", timeout=5) as r:
        text = r.read().decode()
    found = re.search(rf"^{name} (\d+)", text, re.M)
    return int(found.group(1)) if found else 0


def test_getendpoints_names_the_replicas_the_driver_computes(tmp_path):
    """`nodetool getendpoints` lists the replicas of a key as the driver's
    own token map and SimpleStrategy place them (an implementation of
    Cassandra's placement that is not ours), for a one-column key and a
    composite one given as `a:b`."""
    from conftest import connect

    directory = tmp_path / "cluster"
    varve_cluster(directory, "start", "--nodes", "3", *PORTS)
    try:
        create_schema(directory, "{'class': 'SimpleStrategy', 'replication_factor': 2}")
        cluster = connect("127.0.0.1", NATIVE, 5, local_dc="datacenter1", max_schema_agreement_wait=0)
        s = cluster.connect()
        s.execute("CREATE TABLE ks.c (a text, b int, v int, PRIMARY KEY ((a, b)))")
        by_int = s.prepare("SELECT v FROM ks.t WHERE k = ?")
        by_pair = s.prepare("SELECT v FROM ks.c WHERE a = ? AND b = ?")
        cluster.refresh_schema_metadata()
        cases = [("t", str(k), by_int.bind((k,))) for k in range(20)]
        cases += [("c", f"x{k}:{k}", by_pair.bind((f"x{k}", k))) for k in range(20)]
        for table, key, bound in cases:
            expected = [str(h.address) for h in cluster.metadata.get_replicas("ks", bound.routing_key)]
            out = varve_cluster(directory, "nodetool", str(1 + len(key) % 3), "getendpoints", "ks", table, key).stdout
            assert sorted(out.split()) == sorted(expected), (table, key, out, expected)
            assert len(expected) == 2
        cluster.shutdown()
        refused = varve_cluster(directory, "nodetool", "1", "getendpoints", "ks", "c", "only-one", check=False)
        assert refused.returncode != 0
        assert "2 component(s)" in refused.stdout + refused.stderr
    finally:
        varve_cluster(directory, "stop", check=False)


def test_a_node_back_from_the_dead_gets_its_hints(three_nodes):
    from cassandra import ConsistencyLevel as CL

    varve_cluster(three_nodes, "kill", "3")
    assert eventually(lambda: node_states(three_nodes, 1).get("127.0.0.3") == "DN")
    c1, s1 = session("127.0.0.1")
    insert = statement("INSERT INTO ks.t (k, v) VALUES (%s, %s)", CL.QUORUM)
    for k in range(40):
        s1.execute(insert, (k, f"v{k}"))
    c1.shutdown()
    assert metric("127.0.0.1", "varve_hints_created_total") >= 40
    status = varve_cluster(three_nodes, "nodetool", "1", "statushandoff").stdout
    assert "running" in status and not status.rstrip().endswith(" 0 bytes of hints on disk"), status

    # Paused, nothing is delivered; resumed, everything is.
    varve_cluster(three_nodes, "nodetool", "1", "pausehandoff")
    assert "(delivery paused)" in varve_cluster(three_nodes, "nodetool", "1", "statushandoff").stdout
    varve_cluster(three_nodes, "start", "3")
    assert eventually(lambda: node_states(three_nodes, 1).get("127.0.0.3") == "UN")
    time.sleep(1)
    assert metric("127.0.0.1", "varve_hints_replayed_total") == 0
    varve_cluster(three_nodes, "nodetool", "1", "resumehandoff")

    def node3_holds_everything():
        c3, s3 = session("127.0.0.3")
        try:
            # ONE on node 3 reads its own replica: what it holds, hints included.
            select = statement("SELECT v FROM ks.t WHERE k = %s", CL.ONE)
            return all(s3.execute(select, (k,)).one() == (f"v{k}",) for k in range(40))
        finally:
            c3.shutdown()

    assert eventually(node3_holds_everything, timeout_s=30)
    assert metric("127.0.0.1", "varve_hints_replayed_total") >= 40
    assert eventually(lambda: varve_cluster(three_nodes, "nodetool", "1", "statushandoff").stdout
                      .rstrip().endswith(" 0 bytes of hints on disk"))


def test_truncatehints_drops_what_a_down_node_would_have_got(three_nodes):
    from cassandra import ConsistencyLevel as CL

    varve_cluster(three_nodes, "kill", "3")
    assert eventually(lambda: node_states(three_nodes, 1).get("127.0.0.3") == "DN")
    c1, s1 = session("127.0.0.1")
    s1.execute(statement("INSERT INTO ks.t (k, v) VALUES (1, 'hinted')", CL.QUORUM))
    c1.shutdown()
    varve_cluster(three_nodes, "nodetool", "1", "truncatehints")
    assert varve_cluster(three_nodes, "nodetool", "1", "statushandoff").stdout.rstrip().endswith(
        " 0 bytes of hints on disk")
    varve_cluster(three_nodes, "start", "3")
    assert eventually(lambda: node_states(three_nodes, 1).get("127.0.0.3") == "UN")
    time.sleep(1)
    c3, s3 = session("127.0.0.3")
    row = s3.execute(statement("SELECT v FROM ks.t WHERE k = 1", CL.ONE)).one()
    c3.shutdown()
    assert row is None, "the hint was dropped: node 3 never got the write"
    assert metric("127.0.0.1", "varve_hints_replayed_total") == 0


def test_local_quorum_goes_on_while_the_other_data_centre_is_frozen(tmp_path):
    """Two data centres of three nodes, NetworkTopologyStrategy 3 + 3: with
    every node of dc2 frozen (SIGSTOP: it answers nothing, as if cut off),
    LOCAL_QUORUM in dc1 still succeeds at once, while levels that need dc2
    time out with their counts."""
    from cassandra import ConsistencyLevel as CL
    from cassandra import WriteTimeout

    directory = tmp_path / "cluster"
    varve_cluster(directory, "start", "--nodes", "6", "--dcs", "2", *PORTS)
    pids = [int((directory / f"node{i}" / "pid").read_text()) for i in (4, 5, 6)]
    frozen = False
    try:
        create_schema(directory, "{'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': 3}", nodes=6)
        c1, s1 = session("127.0.0.1")
        insert = "INSERT INTO ks.t (k, v) VALUES (%s, %s)"
        s1.execute(statement(insert, CL.EACH_QUORUM), (0, "both"))
        frozen = True
        for pid in pids:
            freeze(pid)
        started = time.monotonic()
        for k in range(1, 21):
            s1.execute(statement(insert, CL.LOCAL_QUORUM), (k, f"v{k}"))
        select = statement("SELECT v FROM ks.t WHERE k = %s", CL.LOCAL_QUORUM)
        assert all(s1.execute(select, (k,)).one() == (f"v{k}",) for k in range(1, 21))
        assert s1.execute(select, (0,)).one() == ("both",)
        local_time = time.monotonic() - started
        with pytest.raises(WriteTimeout) as each:
            s1.execute(statement(insert, CL.EACH_QUORUM), (99, "x"))
        with pytest.raises(WriteTimeout) as quorum:
            s1.execute(statement(insert, CL.QUORUM), (99, "x"))
        c1.shutdown()
    finally:
        if frozen:
            for pid in pids:
                os.kill(pid, signal.SIGCONT)
        varve_cluster(directory, "stop", check=False)
    assert local_time < 10, f"LOCAL_QUORUM must not wait for dc2 ({local_time:.1f} s for 40 requests)"
    # EACH_QUORUM: all three of dc1 answered (counted, as Cassandra counts
    # them), none of dc2's quorum of 2; QUORUM: 4 of 6 needed.
    assert (each.value.received_responses, each.value.required_responses) == (3, 4)
    assert (quorum.value.received_responses, quorum.value.required_responses) == (3, 4)


def restart_with_failpoint(directory, node, failpoint):
    """Kills node `node` and starts it again with VARVE_FAILPOINTS set."""
    import subprocess

    from conftest import varve_bin

    varve_cluster(directory, "kill", str(node))
    env = dict(os.environ, VARVE_FAILPOINTS=failpoint)
    done = subprocess.run([varve_bin(), "cluster", "--dir", str(directory), "start", str(node)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert eventually(lambda: node_states(directory, 2).get(f"127.0.0.{node}") == "UN")


def logged_batch(keys):
    from cassandra import ConsistencyLevel as CL
    from cassandra.policies import FallthroughRetryPolicy
    from cassandra.query import BatchStatement, BatchType, SimpleStatement

    batch = BatchStatement(batch_type=BatchType.LOGGED, consistency_level=CL.QUORUM,
                           retry_policy=FallthroughRetryPolicy())
    for k in keys:
        batch.add(SimpleStatement("INSERT INTO ks.t (k, v) VALUES (%s, %s)"), (k, f"b{k}"))
    return batch


def rows_on(host, keys):
    from cassandra import ConsistencyLevel as CL

    c, s = session(host)
    try:
        select = statement("SELECT v FROM ks.t WHERE k = %s", CL.QUORUM)
        return {k: s.execute(select, (k,)).one() for k in keys}
    finally:
        c.shutdown()


def test_a_logged_batch_leaves_no_batchlog_behind(three_nodes):
    c, s = session("127.0.0.1")
    s.execute(logged_batch(range(10, 16)))
    c.shutdown()
    assert all(v == (f"b{k}",) for k, v in rows_on("127.0.0.2", range(10, 16)).items())
    # The holders were told to forget it.
    logs = [three_nodes / f"node{i}" / "data" / "batchlog" for i in (1, 2, 3)]
    assert eventually(lambda: not any(any(d.glob("*.batch")) for d in logs), timeout_s=10)


def test_a_logged_batch_whose_coordinator_dies_after_logging_is_applied_whole(three_nodes):
    restart_with_failpoint(three_nodes, 1, "batch_after_log")
    keys = range(1, 6)
    c, s = session("127.0.0.1")
    # The coordinator aborts: the driver sees its connection close.
    with pytest.raises(Exception):
        s.execute(logged_batch(keys))
    c.shutdown()
    # Node 1 died after nodes 2 and 3 kept the batch and before any write
    # was sent: they replay it (after two write timeouts, checked every 10 s).
    # (Reads wait until node 2 knows node 1 is down, as a read that asked
    # the dead node would time out.)
    assert eventually(lambda: node_states(three_nodes, 2).get("127.0.0.1") == "DN")
    assert eventually(lambda: all(v == (f"b{k}",) for k, v in rows_on("127.0.0.2", keys).items()),
                      timeout_s=40)


def test_a_logged_batch_whose_coordinator_dies_before_logging_changes_nothing(three_nodes):
    restart_with_failpoint(three_nodes, 1, "batch_before_log")
    keys = range(1, 6)
    c, s = session("127.0.0.1")
    # The coordinator aborts: the driver sees its connection close.
    with pytest.raises(Exception):
        s.execute(logged_batch(keys))
    c.shutdown()
    # Past the holders' replay time: nothing was logged, so nothing is applied.
    time.sleep(15)
    assert eventually(lambda: node_states(three_nodes, 2).get("127.0.0.1") == "DN")
    assert all(v is None for v in rows_on("127.0.0.2", keys).values())


def test_a_restarted_node_knows_the_ring_before_it_serves(tmp_path):
    """Restarted alone (the other two dead), a node still knows from its
    metadata which keys it does not own: with RF 1, a write of such a key
    is Unavailable, never stored on the wrong node."""
    from cassandra import ConsistencyLevel as CL
    from cassandra import Unavailable

    directory = tmp_path / "cluster"
    varve_cluster(directory, "start", "--nodes", "3", *PORTS)
    try:
        create_schema(directory, "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        # Which keys node 1 owns, as a token-aware driver computes it.
        from conftest import connect
        driver = connect("127.0.0.1", NATIVE, 5, max_schema_agreement_wait=0)
        driver.connect()
        keys = range(300)
        owned = {k for k in keys
                 if {str(h.address) for h in driver.metadata.get_replicas("ks", struct.pack(">i", k))}
                 == {"127.0.0.1"}}
        driver.shutdown()
        for node in (3, 2, 1):
            varve_cluster(directory, "kill", str(node))
        varve_cluster(directory, "start", "1")
        c, s = session("127.0.0.1")
        insert = statement("INSERT INTO ks.t (k, v) VALUES (%s, 'x')", CL.ONE)
        stored, refused = [], []
        for k in keys:
            try:
                s.execute(insert, (k,))
                stored.append(k)
            except Unavailable as e:
                assert (e.required_replicas, e.alive_replicas) == (1, 0)
                refused.append(k)
        c.shutdown()
    finally:
        varve_cluster(directory, "stop", check=False)
    assert refused, "some keys belong to the dead nodes"
    assert set(stored) == owned, (sorted(stored), sorted(owned))


def test_range_scans_cross_the_ring_in_token_order_and_page_across_coordinators(tmp_path):
    """RF 2 on three nodes, so no node holds every row: a full scan, a
    token range and a filtered scan each find every matching row once, in
    token order; a scan paged at QUORUM goes on from one coordinator's
    paging state on another; with a node down, ALL and QUORUM are
    Unavailable and ONE still scans everything."""
    from cassandra import ConsistencyLevel as CL
    from cassandra import Unavailable
    from cassandra.metadata import Murmur3Token
    from cassandra.policies import FallthroughRetryPolicy
    from cassandra.query import SimpleStatement

    directory = tmp_path / "cluster"
    varve_cluster(directory, "start", "--nodes", "3", *PORTS)
    try:
        create_schema(directory, "{'class': 'SimpleStrategy', 'replication_factor': 2}")
        c1, s1 = session("127.0.0.1")
        insert = s1.prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
        insert.consistency_level = CL.QUORUM
        for k in range(300):
            s1.execute(insert, (k, "even" if k % 2 == 0 else "odd"))
        token = {k: Murmur3Token.from_key(struct.pack(">i", k)).value for k in range(300)}
        in_token_order = sorted(range(300), key=token.get)

        def scan(s, cql, level, fetch_size=37, paging_state=None):
            stmt = SimpleStatement(cql, consistency_level=level, fetch_size=fetch_size,
                                   retry_policy=FallthroughRetryPolicy())
            return s.execute(stmt, paging_state=paging_state)

        assert [r.k for r in scan(s1, "SELECT k FROM ks.t", CL.QUORUM)] == in_token_order
        low, high = token[in_token_order[50]], token[in_token_order[200]]
        ranged = scan(s1, f"SELECT k FROM ks.t WHERE token(k) > {low} AND token(k) <= {high}", CL.QUORUM)
        assert [r.k for r in ranged] == in_token_order[51:201]
        filtered = scan(s1, "SELECT k FROM ks.t WHERE v = 'odd' ALLOW FILTERING", CL.QUORUM)
        assert [r.k for r in filtered] == [k for k in in_token_order if k % 2]

        # One page from each coordinator in turn, each from the last one's paging state.
        sessions = [s1] + [session(f"127.0.0.{i}")[1] for i in (2, 3)]
        seen, paging_state, n = [], None, 0
        while True:
            page = scan(sessions[n % 3], "SELECT k FROM ks.t", CL.QUORUM, paging_state=paging_state)
            seen.extend(r.k for r in page.current_rows)
            paging_state, n = page.paging_state, n + 1
            if paging_state is None:
                break
        assert n >= 8, f"only {n} pages"
        assert seen == in_token_order, "pages from three coordinators did not add up to the table"

        varve_cluster(directory, "kill", "3")
        assert eventually(lambda: node_states(directory, 1).get("127.0.0.3") == "DN")
        for level in (CL.ALL, CL.QUORUM):  # RF 2: a quorum is both replicas
            with pytest.raises(Unavailable):
                list(scan(s1, "SELECT k FROM ks.t", level))
        assert [r.k for r in scan(s1, "SELECT k FROM ks.t", CL.ONE)] == in_token_order
        c1.shutdown()
    finally:
        varve_cluster(directory, "stop", check=False)
