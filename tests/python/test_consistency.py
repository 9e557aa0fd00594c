"""Consistency levels on one node: what it can promise, it does; what it cannot, it refuses.

A single node is the one live replica of every token. A keyspace with replication factor 3 asks
QUORUM for two answers and ALL for three, so those writes and reads are Unavailable (code 0x1000,
with the level, required and alive), exactly as on a one-node Cassandra; ONE, LOCAL_ONE and ANY
go through. Levels a statement kind cannot use are InvalidRequest with Cassandra's messages.
Nothing refused is written.
"""

import urllib.request

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra import InvalidRequest, Unavailable
from cassandra.policies import FallthroughRetryPolicy
from cassandra.query import BatchStatement, SimpleStatement

from conftest import make_keyspace
from helpers import unique


def at(cql, level, serial=None):
    # Fallthrough: the driver's default policy tries the next host on Unavailable, and with one
    # host would report NoHostAvailable around it.
    return SimpleStatement(cql, consistency_level=level, serial_consistency_level=serial,
                           retry_policy=FallthroughRetryPolicy())


@pytest.fixture(scope="module")
def rf3(session):
    """A SimpleStrategy keyspace with factor 3 and a table in it."""
    ks = make_keyspace(session, rf=3)
    session.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v int)")
    yield ks
    session.execute(f"DROP KEYSPACE {ks}")


@pytest.fixture(scope="module")
def nts3(session):
    """NetworkTopologyStrategy with three replicas in this node's data centre."""
    ks = unique("nts")
    session.execute(f"CREATE KEYSPACE {ks} WITH replication = "
                    "{'class': 'NetworkTopologyStrategy', 'datacenter1': 3}")
    session.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v int)")
    yield ks
    session.execute(f"DROP KEYSPACE {ks}")


def unavailable(session, stmt):
    with pytest.raises(Unavailable) as e:
        session.execute(stmt)
    return e.value


@pytest.mark.parametrize("level, required", [
    (CL.TWO, 2), (CL.THREE, 3), (CL.QUORUM, 2), (CL.ALL, 3), (CL.LOCAL_QUORUM, 2), (CL.EACH_QUORUM, 2),
])
def test_writes_needing_more_replicas_than_alive_are_unavailable(session, rf3, level, required):
    err = unavailable(session, at(f"INSERT INTO {rf3}.t (k, v) VALUES (1, 1)", level))
    assert (err.consistency, err.required_replicas, err.alive_replicas) == (level, required, 1)
    assert "Cannot achieve consistency level" in str(err)
    got = session.execute(at(f"SELECT v FROM {rf3}.t WHERE k = 1", CL.ONE)).one()
    assert got is None, "a refused write was stored"


@pytest.mark.parametrize("level, required", [
    (CL.TWO, 2), (CL.QUORUM, 2), (CL.ALL, 3), (CL.LOCAL_QUORUM, 2), (CL.EACH_QUORUM, 2), (CL.SERIAL, 2),
])
def test_reads_needing_more_replicas_than_alive_are_unavailable(session, rf3, level, required):
    err = unavailable(session, at(f"SELECT v FROM {rf3}.t WHERE k = 1", level))
    assert (err.required_replicas, err.alive_replicas) == (required, 1)
    # A scan is checked the same way.
    err = unavailable(session, at(f"SELECT v FROM {rf3}.t", level))
    assert (err.required_replicas, err.alive_replicas) == (required, 1)


@pytest.mark.parametrize("level", [CL.ONE, CL.LOCAL_ONE, CL.ANY])
def test_levels_one_replica_can_answer_go_through(session, rf3, level):
    session.execute(at(f"INSERT INTO {rf3}.t (k, v) VALUES (2, {level})", level))
    read_level = CL.ONE if level == CL.ANY else level
    assert session.execute(at(f"SELECT v FROM {rf3}.t WHERE k = 2", read_level)).one().v == level


def test_network_topology_factors_count_per_data_centre(session, nts3):
    err = unavailable(session, at(f"INSERT INTO {nts3}.t (k, v) VALUES (1, 1)", CL.LOCAL_QUORUM))
    assert (err.required_replicas, err.alive_replicas) == (2, 1)
    err = unavailable(session, at(f"INSERT INTO {nts3}.t (k, v) VALUES (1, 1)", CL.EACH_QUORUM))
    assert (err.required_replicas, err.alive_replicas) == (2, 1)
    assert "in DC datacenter1" in str(err)
    session.execute(at(f"INSERT INTO {nts3}.t (k, v) VALUES (1, 1)", CL.LOCAL_ONE))


def test_rf1_keyspaces_take_every_level(session, keyspace):
    t = unique("t")
    session.execute(f"CREATE TABLE {t} (k int PRIMARY KEY, v int)")
    for level in (CL.ONE, CL.QUORUM, CL.ALL, CL.LOCAL_QUORUM, CL.EACH_QUORUM, CL.LOCAL_ONE):
        session.execute(at(f"INSERT INTO {t} (k, v) VALUES ({level}, 1)", level))
        assert session.execute(at(f"SELECT v FROM {t} WHERE k = {level}", level)).one().v == 1
    assert session.execute(at(f"SELECT v FROM {t} WHERE k = 1", CL.SERIAL)).one().v == 1


def test_levels_a_statement_cannot_use_are_invalid(session, keyspace):
    t = unique("t")
    session.execute(f"CREATE TABLE {t} (k int PRIMARY KEY, v int)")
    with pytest.raises(InvalidRequest, match="ANY ConsistencyLevel is only supported for writes"):
        session.execute(at(f"SELECT v FROM {t} WHERE k = 1", CL.ANY))
    with pytest.raises(InvalidRequest, match="You must use conditional updates for serializable writes"):
        session.execute(at(f"INSERT INTO {t} (k, v) VALUES (1, 1)", CL.SERIAL))
    # A non-serial serial level the driver refuses to send: crates/query/tests/consistency.rs.
    with pytest.raises(InvalidRequest, match="is not supported as conditional update commit consistency"):
        session.execute(at(f"INSERT INTO {t} (k, v) VALUES (1, 1) IF NOT EXISTS", CL.LOCAL_SERIAL))
    assert session.execute(f"SELECT v FROM {t} WHERE k = 1").one() is None


def test_conditional_writes_need_a_serial_quorum(session, rf3):
    stmt = at(f"INSERT INTO {rf3}.t (k, v) VALUES (3, 3) IF NOT EXISTS", CL.ONE, serial=CL.SERIAL)
    err = unavailable(session, stmt)
    # Named as Cassandra's Paxos names it: the quorum its round needs.
    assert (err.consistency, err.required_replicas, err.alive_replicas) == (CL.QUORUM, 2, 1)
    stmt = at(f"INSERT INTO {rf3}.t (k, v) VALUES (3, 3) IF NOT EXISTS", CL.ONE, serial=CL.LOCAL_SERIAL)
    err = unavailable(session, stmt)
    assert err.consistency == CL.LOCAL_QUORUM
    assert session.execute(at(f"SELECT v FROM {rf3}.t WHERE k = 3", CL.ONE)).one() is None


def test_a_batch_is_refused_whole_when_one_keyspace_lacks_replicas(session, keyspace, rf3):
    t = unique("t")
    session.execute(f"CREATE TABLE {t} (k int PRIMARY KEY, v int)")
    batch = BatchStatement(consistency_level=CL.QUORUM, retry_policy=FallthroughRetryPolicy())
    batch.add(SimpleStatement(f"INSERT INTO {keyspace}.{t} (k, v) VALUES (1, 1)"))
    batch.add(SimpleStatement(f"INSERT INTO {rf3}.t (k, v) VALUES (4, 4)"))
    err = unavailable(session, batch)
    assert (err.required_replicas, err.alive_replicas) == (2, 1)
    assert session.execute(f"SELECT v FROM {keyspace}.{t} WHERE k = 1").one() is None


def test_system_tables_read_at_any_level_but_any(session):
    for level in (CL.ONE, CL.QUORUM, CL.ALL):
        assert session.execute(at("SELECT release_version FROM system.local", level)).one() is not None


def test_unavailables_are_counted(session, rf3, varve_server):
    def count():
        url = f"http://127.0.0.1:{varve_server.admin_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as r:
            text = r.read().decode()
        return sum(float(line.split()[-1]) for line in text.splitlines()
                   if line.startswith("varve_client_request_unavailables_total{"))
    before = count()
    unavailable(session, at(f"INSERT INTO {rf3}.t (k, v) VALUES (9, 9)", CL.QUORUM))
    assert count() == before + 1
