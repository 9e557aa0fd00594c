"""Lightweight transactions on a cluster of real `varve server` processes:
Paxos across the three replicas of RF 3 (docs/design/paxos.md).
Conditional statements answer as on one node, from whichever node
coordinates them; SERIAL reads see the last commit; clients on three
coordinators incrementing shared counters by compare-and-set never lose
or double an increment, also while a node is killed, frozen or cut off
from the others by the network (and a coordinator on it), and a hot
key's statements from every node meet on its home replica; too few
replicas is Unavailable at SERIAL; a replica down at commit gets the
commits as hints.
"""

import os
import signal
import threading
import time

import pytest

import netcut
from test_cluster_data import ADMIN, FIXED_PORTS, NATIVE, PORTS, STORAGE, create_schema, freeze, metric, session, statement  # noqa: F401
from test_cluster_launcher import eventually, node_states, varve_cluster


@pytest.fixture
def three_nodes(tmp_path):
    directory = tmp_path / "cluster"
    varve_cluster(directory, "start", "--nodes", "3", *PORTS)
    try:
        create_schema(directory, "{'class': 'SimpleStrategy', 'replication_factor': 3}")
        c, s = session("127.0.0.1")
        s.execute("CREATE TABLE ks.counters (k int PRIMARY KEY, v int)")
        c.shutdown()
        yield directory
    finally:
        varve_cluster(directory, "stop", check=False)


def test_conditional_statements_answer_the_same_from_every_coordinator(three_nodes):
    from cassandra import ConsistencyLevel as CL

    sessions = [session(f"127.0.0.{i}") for i in (1, 2, 3)]
    (_, s1), (_, s2), (_, s3) = sessions
    r = s1.execute("INSERT INTO ks.t (k, v) VALUES (1, 'a') IF NOT EXISTS")
    assert r.was_applied
    r = s2.execute("INSERT INTO ks.t (k, v) VALUES (1, 'b') IF NOT EXISTS")
    assert not r.was_applied and r.one().v == "a", "the row that exists comes back"
    r = s3.execute("UPDATE ks.t SET v = 'c' WHERE k = 1 IF v = 'a'")
    assert r.was_applied
    r = s1.execute("UPDATE ks.t SET v = 'd' WHERE k = 1 IF v = 'a'")
    assert not r.was_applied and r.one().v == "c"
    for s in (s1, s2, s3):
        assert s.execute(statement("SELECT v FROM ks.t WHERE k = 1", CL.SERIAL)).one().v == "c"
        # Committed at QUORUM at least; every replica has it by now.
        assert s.execute(statement("SELECT v FROM ks.t WHERE k = 1", CL.ALL)).one().v == "c"
    r = s2.execute("DELETE FROM ks.t WHERE k = 1 IF EXISTS")
    assert r.was_applied
    assert s3.execute(statement("SELECT v FROM ks.t WHERE k = 1", CL.SERIAL)).one() is None
    for c, _ in sessions:
        c.shutdown()


def increment_forever(host, key, stop, history):
    """Increments `key` by compare-and-set until `stop`, recording each
    attempt as (old, outcome): 'applied', 'not applied' or 'unknown'."""
    from cassandra import ConsistencyLevel as CL
    from cassandra import OperationTimedOut, ReadTimeout, Unavailable, WriteTimeout

    cluster, s = session(host)
    read = statement("SELECT v FROM ks.counters WHERE k = %s", CL.SERIAL)
    update = statement("UPDATE ks.counters SET v = %s WHERE k = %s IF v = %s", CL.QUORUM)
    try:
        while not stop.is_set():
            try:
                old = s.execute(read, (key,)).one().v
            except (ReadTimeout, Unavailable, OperationTimedOut):
                time.sleep(0.05)
                continue
            except Exception as e:  # a coordinator being killed
                history.append((None, f"read error {type(e).__name__}"))
                time.sleep(0.05)
                continue
            try:
                applied = s.execute(update, (old + 1, key, old)).was_applied
                history.append((old, "applied" if applied else "not applied"))
            except (WriteTimeout, OperationTimedOut):
                history.append((old, "unknown"))
            except Unavailable:
                time.sleep(0.05)
            except Exception as e:
                history.append((old, f"unknown {type(e).__name__}"))
    finally:
        cluster.shutdown()


def run_increments(three_nodes, disturb, seconds=6.0, hosts=("127.0.0.1", "127.0.0.2", "127.0.0.1", "127.0.0.2"),
                   keys=(1, 2), histories=None):
    """Clients on `hosts` increment `keys` while `disturb` runs a third of
    the way in; checks the counts and returns {(host, n): history}, filled
    into `histories` as the clients go when one is given."""
    from cassandra import ConsistencyLevel as CL

    _, s = session("127.0.0.1")
    for key in keys:
        s.execute("INSERT INTO ks.counters (k, v) VALUES (%s, 0)", (key,))
    stop = threading.Event()
    histories = {} if histories is None else histories
    threads = []
    for n, host in enumerate(hosts):
        key = keys[n % len(keys)]
        history = histories.setdefault((host, n), [])
        t = threading.Thread(target=increment_forever, args=(host, key, stop, history))
        t.start()
        threads.append((key, history, t))
    time.sleep(seconds / 3)
    disturb()
    time.sleep(2 * seconds / 3)
    stop.set()
    for _, _, t in threads:
        t.join(timeout=30)
    for key in keys:
        entries = [e for k, h, _ in threads if k == key for e in h]
        applied = [old for old, outcome in entries if outcome == "applied"]
        unknown = [old for old, outcome in entries if outcome.startswith("unknown")]
        # Each old value is incremented at most once: two applied CAS from
        # the same value would be a lost update.
        assert len(applied) == len(set(applied)), f"key {key}: {sorted(applied)}"
        final = s.execute(statement("SELECT v FROM ks.counters WHERE k = %s", CL.SERIAL), (key,)).one().v
        assert len(applied) <= final <= len(applied) + len(unknown), (key, final, len(applied), len(unknown))
        assert len(applied) > 5, f"key {key}: only {len(applied)} increments applied"
    return histories


def metric_sum(host, name, selector):
    """The sum of a metric's series on a node whose labels contain `selector`."""
    import re
    import urllib.request

    with urllib.request.urlopen(f"http://{host}:{ADMIN}/metrics", timeout=5) as r:
        text = r.read().decode()
    pattern = rf"^{name}(?:\{{([^}}]*)\}})? (\S+)$"
    return sum(float(v) for labels, v in re.findall(pattern, text, re.M) if selector in labels)


def test_compare_and_set_from_two_coordinators_never_loses_an_increment(three_nodes):
    run_increments(three_nodes, disturb=lambda: None)
    # The coordinators measured every phase of their rounds.
    for phase in ("prepare", "propose", "commit"):
        count = sum(metric_sum(h, "varve_paxos_phase_latency_seconds_count", f'phase="{phase}"')
                    for h in ("127.0.0.1", "127.0.0.2"))
        assert count > 10, (phase, count)


def test_a_hot_key_on_one_coordinator_is_decided_in_shared_rounds_without_a_lost_increment(three_nodes):
    """Eight clients on one coordinator and one key: their statements
    queue behind each other and each round decides several of them, in
    order, each on the state the one before it left."""
    run_increments(three_nodes, disturb=lambda: None, hosts=("127.0.0.1",) * 8, keys=(1,))
    rounds = metric_sum("127.0.0.1", "varve_paxos_round_statements_count", "")
    statements = metric_sum("127.0.0.1", "varve_paxos_round_statements_sum", "")
    assert statements > rounds > 0, (statements, rounds)


def test_a_hot_key_from_three_coordinators_meets_on_its_home_replica(three_nodes):
    """Nine clients, three on each node, on one key: once their rounds
    duel, the two nodes that are not the key's home hand its statements
    to the home (docs/design/paxos.md, section 7.1), which decides them
    in shared rounds; no increment is lost or doubled."""
    hosts = ("127.0.0.1", "127.0.0.2", "127.0.0.3") * 3
    run_increments(three_nodes, disturb=lambda: None, hosts=hosts, keys=(1,))
    nodes = ("127.0.0.1", "127.0.0.2", "127.0.0.3")
    forwarded = {h: metric_sum(h, "varve_cas_forwarded_total", "") for h in nodes}
    served = {h: metric_sum(h, "varve_cas_forwards_served_total", "") for h in nodes}
    # One home serves them (a node that gossip thought DOWN for a moment
    # could move some elsewhere: at least nine in ten).
    home = max(nodes, key=lambda h: served[h])
    assert served[home] >= 0.9 * sum(served.values()), (forwarded, served)
    assert all(forwarded[h] > 0 for h in nodes if h != home), (forwarded, served)
    # Every statement handed over was run (nothing declined or lost).
    assert sum(served.values()) == sum(forwarded.values()), (forwarded, served)
    rounds = metric_sum(home, "varve_paxos_round_statements_count", "")
    statements = metric_sum(home, "varve_paxos_round_statements_sum", "")
    assert statements > rounds > 0, (statements, rounds)


def test_a_frozen_home_stalls_its_hot_key_once_and_increments_go_on(three_nodes):
    """A hot key's home frozen (SIGSTOP) while the two other nodes keep
    incrementing it: a statement forwarded to the home gets no answer
    within 1 s plus a write timeout, and its coordinator then runs the
    key's statements itself with the two live replicas (a quorum),
    instead of handing every next one to the frozen home until gossip
    marks it DOWN. Increments go on during the freeze, none lost or
    doubled."""
    nodes = ("127.0.0.1", "127.0.0.2", "127.0.0.3")
    # Which node is the key's home: the one that serves the forwards.
    run_increments(three_nodes, disturb=lambda: None, seconds=3.0, hosts=nodes * 2, keys=(1,))
    served = {h: metric_sum(h, "varve_cas_forwards_served_total", "") for h in nodes}
    home = max(nodes, key=lambda h: served[h])
    assert served[home] > 0, served
    others = tuple(h for h in nodes if h != home)
    pid = int((three_nodes / f"node{nodes.index(home) + 1}" / "pid").read_text())
    histories, at_freeze, at_thaw = {}, {}, {}

    def thaw():
        at_thaw.update({k: len(h) for k, h in histories.items()})
        os.kill(pid, signal.SIGCONT)

    timer = threading.Timer(7.0, thaw)

    def freeze_home():
        freeze(pid)
        at_freeze.update({k: len(h) for k, h in histories.items()})
        timer.start()

    try:
        # Frozen from 4 s to 11 s of 12, thawed before the final check
        # (which reads through node 1).
        run_increments(three_nodes, disturb=freeze_home, seconds=12.0, hosts=others * 3,
                       keys=(1,), histories=histories)
    finally:
        timer.cancel()
        os.kill(pid, signal.SIGCONT)
    during = [e for k, h in histories.items() for e in h[at_freeze.get(k, 0):at_thaw.get(k, len(h))]]
    applied = [old for old, outcome in during if outcome == "applied"]
    unknown = [old for old, outcome in during if outcome.startswith("unknown")]
    # With every statement stuck on the frozen home for 9 s (before), none
    # would apply in these 7 s.
    assert len(applied) >= 5, (len(applied), len(unknown), len(during))


def test_increments_go_on_through_a_killed_replica_and_none_is_lost(three_nodes):
    run_increments(three_nodes, disturb=lambda: varve_cluster(three_nodes, "kill", "3"))


def test_increments_go_on_while_a_replica_is_frozen(three_nodes):
    pid = int((three_nodes / "node3" / "pid").read_text())
    try:
        run_increments(three_nodes, disturb=lambda: freeze(pid))
    finally:
        os.kill(pid, signal.SIGCONT)


def test_two_of_three_down_is_unavailable_at_serial(three_nodes):
    from cassandra import ConsistencyLevel as CL
    from cassandra import Unavailable

    varve_cluster(three_nodes, "kill", "2")
    varve_cluster(three_nodes, "kill", "3")
    c, s = session("127.0.0.1")
    # The failure detector needs a few seconds to see them DOWN.
    deadline = time.monotonic() + 30
    while True:
        try:
            s.execute(statement("INSERT INTO ks.t (k, v) VALUES (9, 'x') IF NOT EXISTS", CL.QUORUM))
        except Unavailable as e:
            # Named QUORUM, as Cassandra 5.0.4 (Paxos v1, its default) names
            # a SERIAL round's quorum (tests/differential 09_consistency).
            assert (e.consistency, e.required_replicas, e.alive_replicas) == (CL.QUORUM, 2, 1)
            break
        except Exception:
            pass
        assert time.monotonic() < deadline, "never Unavailable"
        time.sleep(0.5)
    with pytest.raises(Unavailable) as read:
        s.execute(statement("SELECT v FROM ks.t WHERE k = 9", CL.SERIAL))
    assert read.value.consistency == CL.QUORUM
    c.shutdown()


def test_a_replica_down_at_commit_time_gets_the_commits_as_hints(three_nodes):
    """Commits that a DOWN replica missed reach it as hints once it is
    back. Nothing else could bring them: no later round touches these keys,
    and a read at ONE on node 3 reads its own replica without repair."""
    from cassandra import ConsistencyLevel as CL

    varve_cluster(three_nodes, "kill", "3")
    assert eventually(lambda: node_states(three_nodes, 1).get("127.0.0.3") == "DN")
    before = metric("127.0.0.1", "varve_hints_created_total")
    c1, s1 = session("127.0.0.1")
    insert = statement("INSERT INTO ks.t (k, v) VALUES (%s, %s) IF NOT EXISTS", CL.QUORUM)
    for k in range(20):
        assert s1.execute(insert, (k, f"c{k}")).was_applied
    c1.shutdown()
    assert metric("127.0.0.1", "varve_hints_created_total") - before >= 20

    varve_cluster(three_nodes, "start", "3")
    assert eventually(lambda: node_states(three_nodes, 1).get("127.0.0.3") == "UN")

    def node3_holds_every_commit():
        c3, s3 = session("127.0.0.3")
        try:
            select = statement("SELECT v FROM ks.t WHERE k = %s", CL.ONE)
            return all(s3.execute(select, (k,)).one() == (f"c{k}",) for k in range(20))
        finally:
            c3.shutdown()

    assert eventually(node3_holds_every_commit, timeout_s=30)


def test_increments_go_on_while_a_fourth_node_bootstraps_and_none_is_lost(three_nodes, tmp_path):
    """The joining node takes part in each round as a pending replica and
    receives the Paxos state of its ranges merged by ballot
    (docs/design/topology.md): no increment is lost or doubled across the
    change of replicas."""
    from conftest import VarveNode

    node = VarveNode(tmp_path / "node4", ["--seeds", "127.0.0.1", "--cluster-name", "varve-local"],
                     listen="127.0.0.4", storage_port=STORAGE)
    started = []

    def disturb():
        try:
            node.start(port=NATIVE, admin_port=ADMIN)
            started.append(True)
        except RuntimeError as e:  # the increments still stop; the test fails below
            started.append(e)

    try:
        run_increments(three_nodes, disturb, seconds=9)
        assert started == [True], started
        assert "bootstrap: done" in node.log(), node.log_tail()
    finally:
        if node.running:
            node.stop(signal.SIGKILL)


@pytest.mark.skipif(not netcut.available(), reason="network cuts need root (ip rule)")
def test_increments_go_on_while_a_replica_and_its_coordinator_are_cut_off_and_after(three_nodes):
    """Node 3 coordinates clients of both keys and is cut off from the two
    other nodes for two seconds, then the cut heals: its rounds fail or end
    unknown meanwhile, the majority's go on, and no increment is lost or
    doubled, also among the rounds node 3 runs once it is back."""
    cut_s = 2.0
    histories = {}

    def applied_via_3():
        return sum(1 for (host, _), h in list(histories.items()) if host == "127.0.0.3"
                   for _, outcome in list(h) if outcome == "applied")

    with netcut.Cuts(STORAGE) as cuts:
        at_cut, at_heal = [], []

        def heal():
            cuts.heal()
            at_heal.append(applied_via_3())

        def cut_then_heal():
            at_cut.append(applied_via_3())
            cuts.cut(["127.0.0.3"], ["127.0.0.1", "127.0.0.2"])
            threading.Timer(cut_s, heal).start()

        run_increments(three_nodes, disturb=cut_then_heal, seconds=9.0,
                       hosts=("127.0.0.1", "127.0.0.3", "127.0.0.2", "127.0.0.3"), histories=histories)
    assert len(at_heal) == 1, "the cut never healed"
    # While cut off, node 3 reached no quorum: at most the round each of
    # its two clients had in flight when the cut came was applied.
    assert at_heal[0] - at_cut[0] <= 2, (at_cut, at_heal)
    assert applied_via_3() > at_heal[0], {host: h[-5:] for (host, _), h in histories.items()}


def three_nodes_configured(tmp_path, yaml):
    """Three nodes started with `yaml` as their config and a keyspace `ks`
    of RF 3; yields the cluster's directory, and stops it after."""
    config = tmp_path / "nodes.yaml"
    config.write_text(yaml)
    directory = tmp_path / "cluster"
    varve_cluster(directory, "start", "--nodes", "3", *PORTS, "--", "--config", str(config))
    try:
        create_schema(directory, "{'class': 'SimpleStrategy', 'replication_factor': 3}")
        yield directory
    finally:
        varve_cluster(directory, "stop", check=False)


@pytest.fixture
def three_nodes_without_hints(tmp_path):
    """Three nodes that keep no hints, so that a replica that was down
    stays without the writes it missed until a read or a round repairs it."""
    yield from three_nodes_configured(tmp_path, "hinted_handoff_enabled: false\n")


def test_the_two_round_path_sees_a_quorum_write_its_own_replica_missed(three_nodes_without_hints):
    """docs/design/paxos-two-rounds.md: node 1, a replica, decides an
    `IF NOT EXISTS` on its own replica, which missed a QUORUM write while it
    was down. The other replicas hold the row, so their digests differ and
    they refuse the proposal; the statement falls back to the full round,
    whose quorum read sees the row: not applied, and the row comes back.
    Without the digest check node 1's insert would overwrite it. A fresh
    key takes the two-round path and applies."""
    from cassandra import ConsistencyLevel as CL

    directory = three_nodes_without_hints
    varve_cluster(directory, "kill", "1")
    assert eventually(lambda: node_states(directory, 2).get("127.0.0.1") == "DN")
    c2, s2 = session("127.0.0.2")
    s2.execute(statement("INSERT INTO ks.t (k, v) VALUES (7, 'plain')", CL.QUORUM))
    c2.shutdown()
    varve_cluster(directory, "start", "1")
    assert eventually(lambda: set(node_states(directory, 1).values()) == {"UN"} and
                      node_states(directory, 2).get("127.0.0.1") == "UN")

    c1, s1 = session("127.0.0.1")
    own = statement("SELECT v FROM ks.t WHERE k = 7", CL.ONE)
    assert s1.execute(own).one() is None, "node 1's own replica missed the write"
    outcome = 'varve_cas_two_round_total'
    fallbacks = metric_sum("127.0.0.1", outcome, 'outcome="fallback"')
    data_refusals = metric_sum("127.0.0.1", "varve_cas_check_refusals_total", 'reason="data"')
    r = s1.execute(statement("INSERT INTO ks.t (k, v) VALUES (7, 'lwt') IF NOT EXISTS", CL.QUORUM))
    assert not r.was_applied and r.one().v == "plain", "the row that exists comes back"
    assert metric_sum("127.0.0.1", outcome, 'outcome="fallback"') == fallbacks + 1
    assert metric_sum("127.0.0.1", "varve_cas_check_refusals_total", 'reason="data"') >= data_refusals + 1
    assert s1.execute(statement("SELECT v FROM ks.t WHERE k = 7", CL.SERIAL)).one().v == "plain"

    applied = metric_sum("127.0.0.1", outcome, 'outcome="applied"')
    assert s1.execute(statement("INSERT INTO ks.t (k, v) VALUES (8, 'new') IF NOT EXISTS", CL.QUORUM)).was_applied
    assert metric_sum("127.0.0.1", outcome, 'outcome="applied"') == applied + 1
    for host in ("127.0.0.2", "127.0.0.3"):
        c, s = session(host)
        assert s.execute(statement("SELECT v FROM ks.t WHERE k = 8", CL.SERIAL)).one().v == "new"
        c.shutdown()
    c1.shutdown()
