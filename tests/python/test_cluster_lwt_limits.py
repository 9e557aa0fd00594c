"""A conditional statement's update against the largest mutation the
commitlog takes (`MAX_MUTATION_BYTES`: half a segment, here 32 KiB of a
64 KiB segment).

On one node (RF 1, no Paxos state) an `INSERT ... IF NOT EXISTS` at the
limit applies exactly as a plain insert does, one byte over it fails
with the same clear error, nothing of it is left behind, and the next
statement on the key is decided as if it never ran.

On three nodes (RF 3, Paxos) each replica writes the update twice: into
`system.paxos` when it accepts it, into the table when it commits it.
The state's entry holds one update and the ballots (docs/design/paxos.md,
section 4), so a conditional update fits wherever a plain write of it
does, but for those few bytes, also on a key whose last commit was as
large (until session 35 a save wrote the whole state, that commit
included, and such an update failed at half the limit). One byte more
and the coordinator refuses it before proposing, with the limit's error
as a WriteFailure (until session 35 every replica failed it and the
client got an unknown outcome)."""

import re

import pytest
from cassandra import WriteFailure

from test_cluster_data import FIXED_PORTS, session  # noqa: F401 (FIXED_PORTS: conftest groups the modules on those ports)
from test_cluster_lwt import three_nodes_configured
from test_durability import KS_CQL, open_session, start_with

SEGMENT = 64 * 1024
MAX_MUTATION = SEGMENT // 2


def largest(applies, low=MAX_MUTATION - 1024, high=MAX_MUTATION):
    """The largest size `applies(size)` takes, found by bisection: the
    limit is on the commitlog entry, whose overhead the test does not
    hard-code."""
    assert applies(low) and not applies(high)
    while high - low > 1:
        mid = (low + high) // 2
        if applies(mid):
            low = mid
        else:
            high = mid
    return low


def largest_plain_value(session, table, consistency=None):
    ins = session.prepare(f"INSERT INTO {table} (k, v) VALUES (?, ?)")
    if consistency is not None:
        ins.consistency_level = consistency

    def applies(size):
        try:
            session.execute(ins, (size, b"p" * size))
            return True
        except WriteFailure:
            return False
    return largest(applies)


def test_a_conditional_update_at_the_mutation_limit_applies_and_one_byte_over_fails_clearly(
        start_varve, tmp_path):
    node = start_with(start_varve, tmp_path, "limits", commitlog_segment_size="64KiB")
    cluster, s = open_session(node)
    s.execute(KS_CQL.format("lim"))
    s.execute("CREATE TABLE lim.plain (k int PRIMARY KEY, v blob)")
    s.execute("CREATE TABLE lim.cas (k int PRIMARY KEY, v blob)")
    n = largest_plain_value(s, "lim.plain")
    assert MAX_MUTATION - 200 < n < MAX_MUTATION, n
    cas = s.prepare("INSERT INTO lim.cas (k, v) VALUES (?, ?) IF NOT EXISTS")

    # At the limit: applied, and there.
    assert s.execute(cas, (1, b"a" * n)).one()[0] is True
    assert s.execute("SELECT v FROM lim.cas WHERE k = 1").one()[0] == b"a" * n

    # One byte over: the commitlog's own error, naming the sizes.
    with pytest.raises(WriteFailure) as failed:
        s.execute(cas, (2, b"b" * (n + 1)))
    assert re.search(rf"mutation of {MAX_MUTATION + 1} bytes is larger than the maximum {MAX_MUTATION}",
                     str(failed.value)), failed.value
    # Nothing of it was left: not in the table, and no accepted proposal
    # that a later round would finish.
    assert s.execute("SELECT v FROM lim.cas WHERE k = 2").one() is None
    assert s.execute(cas, (2, b"c")).one()[0] is True
    assert s.execute("SELECT v FROM lim.cas WHERE k = 2").one()[0] == b"c"
    # A conditional update over the limit on a row that exists changes nothing.
    upd = s.prepare("UPDATE lim.cas SET v = ? WHERE k = ? IF EXISTS")
    with pytest.raises(WriteFailure):
        s.execute(upd, (b"d" * (n + 64), 1))
    assert s.execute("SELECT v FROM lim.cas WHERE k = 1").one()[0] == b"a" * n
    assert s.execute(upd, (b"e", 1)).one()[0] is True
    assert s.execute("SELECT v FROM lim.cas WHERE k = 1").one()[0] == b"e"
    cluster.shutdown()


@pytest.fixture
def three_small_segments(tmp_path):
    yield from three_nodes_configured(tmp_path, f"commitlog_segment_size: {SEGMENT // 1024}KiB\n")


def test_on_three_replicas_a_conditional_update_as_large_as_the_last_commit_still_fits(
        three_small_segments):
    from cassandra import ConsistencyLevel as CL

    c, s = session("127.0.0.1")
    s.execute("CREATE TABLE ks.plain (k int PRIMARY KEY, v blob)")
    s.execute("CREATE TABLE ks.cas (k int PRIMARY KEY, v blob)")
    cas = s.prepare("INSERT INTO ks.cas (k, v) VALUES (?, ?) IF NOT EXISTS")
    cas.consistency_level = CL.QUORUM
    upd = s.prepare("UPDATE ks.cas SET v = ? WHERE k = ? IF EXISTS")
    upd.consistency_level = CL.QUORUM

    def conditional(size):
        try:
            return s.execute(cas, (size, b"c" * size)).one()[0] is True
        except WriteFailure as e:
            assert "conditional update not proposed" in str(e), e
            return False

    n = largest_plain_value(s, "ks.plain", CL.QUORUM)
    m = largest(conditional)
    # The state's entry is the update and the ballots, a little more than
    # the table's entry of the same update.
    print(f"largest plain value {n} bytes, largest conditional {m}")
    assert n - 512 < m <= n, (n, m)

    # A key whose last commit is m bytes takes another update of m bytes,
    # and another: each of the replica's entries holds one update.
    for fill in (b"d", b"e"):
        assert s.execute(upd, (fill * m, m)).one()[0] is True
        assert s.execute("SELECT v FROM ks.cas WHERE k = %s", (m,)).one()[0] == fill * m
    # One byte past the limit the coordinator refuses it before proposing:
    # a WriteFailure naming the sizes, as a plain write gets, not an
    # unknown outcome; and nothing of it stays: the next statement on the
    # key applies on the value before it.
    with pytest.raises(WriteFailure) as failed:
        s.execute(cas, (m + 1, b"f" * (m + 1)))
    assert re.search(rf"conditional update not proposed: .*mutation of {MAX_MUTATION + 1} bytes is larger "
                     rf"than the maximum {MAX_MUTATION}", str(failed.value)), failed.value
    assert s.execute("SELECT v FROM ks.cas WHERE k = %s", (m + 1,)).one() is None
    assert s.execute(cas, (m + 1, b"small")).one()[0] is True
    with pytest.raises(WriteFailure):
        s.execute(upd, (b"f" * (m + 64), m))
    assert s.execute(upd, (b"g", m)).one()[0] is True
    assert s.execute("SELECT v FROM ks.cas WHERE k = %s", (m,)).one()[0] == b"g"
    c.shutdown()
