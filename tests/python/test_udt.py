"""User-defined types through the Python driver: a UDT mapped to a class
with `cluster.register_user_type`, written and read back through prepared
statements (frozen, non-frozen, a clustering key, inside a list), a field
set on its own, the driver's metadata after CREATE and ALTER TYPE, and the
types and values after a restart (tests/differential 17_issue21_udt.cql
checks the answers against Cassandra)."""

import signal

from conftest import connect
from helpers import rows, unique


class Address:
    def __init__(self, street=None, zip=None):
        self.street = street
        self.zip = zip

    def __eq__(self, other):
        return (self.street, self.zip) == (other.street, other.zip)

    def __repr__(self):
        return f"Address({self.street!r}, {self.zip!r})"


def make_type_and_table(session, keyspace):
    udt = unique("addr")
    table = unique("people")
    session.execute(f"CREATE TYPE {udt} (street text, zip int)")
    session.execute(
        f"CREATE TABLE {table} (k int, c frozen<{udt}>, home frozen<{udt}>, work {udt}, "
        f"old list<frozen<{udt}>>, PRIMARY KEY (k, c))"
    )
    session.cluster.register_user_type(keyspace, udt, Address)
    return udt, table


def test_prepared_statements_write_and_read_a_registered_class(session, keyspace):
    udt, table = make_type_and_table(session, keyspace)
    insert = session.prepare(f"INSERT INTO {table} (k, c, home, work, old) VALUES (?, ?, ?, ?, ?)")
    marker_types = [m.type.typename for m in insert.column_metadata]
    assert marker_types[1:4] == [udt, udt, udt]
    session.execute(insert, [1, Address("b", 2), Address("main st", 10), Address(None, 7),
                             [Address("x", 1), Address("y", None)]])
    session.execute(insert, [1, Address("a", 9), None, None, None])
    session.execute(insert, [1, Address("a", None), Address("z"), None, []])

    select = session.prepare(f"SELECT c, home, work, old FROM {table} WHERE k = ?")
    got = rows(session, select, [1])
    # Clustering order: field by field, a null field first.
    assert [r.c for r in got] == [Address("a", None), Address("a", 9), Address("b", 2)]
    last = got[2]
    assert isinstance(last.home, Address) and last.home == Address("main st", 10)
    assert last.work == Address(None, 7)
    assert last.old == [Address("x", 1), Address("y", None)]
    assert got[0].home == Address("z", None)

    # One field of the non-frozen value, bound; the rest stays.
    update = session.prepare(f"UPDATE {table} SET work.street = ? WHERE k = ? AND c = ?")
    session.execute(update, ["side st", 1, Address("b", 2)])
    fields = session.prepare(f"SELECT work, work.zip, home.street FROM {table} WHERE k = ? AND c = ?")
    [row] = rows(session, fields, [1, Address("b", 2)])
    assert row.work == Address("side st", 7)
    assert (row.work_zip, row.home_street) == (7, "main st")


def test_the_driver_metadata_follows_create_and_alter_type(session, keyspace):
    cluster = session.cluster
    udt = unique("meta")
    session.execute(f"CREATE TYPE {udt} (a int, b text)")
    cluster.refresh_user_type_metadata(keyspace, udt)
    t = cluster.metadata.keyspaces[keyspace].user_types[udt]
    assert (t.field_names, t.field_types) == (["a", "b"], ["int", "text"])

    session.execute(f"ALTER TYPE {udt} ADD c frozen<list<int>>")
    session.execute(f"ALTER TYPE {udt} RENAME a TO first")
    cluster.refresh_user_type_metadata(keyspace, udt)
    t = cluster.metadata.keyspaces[keyspace].user_types[udt]
    assert t.field_names == ["first", "b", "c"]
    assert t.field_types == ["int", "text", "frozen<list<int>>"]
    assert f"CREATE TYPE {keyspace}.{udt}" in t.export_as_string()

    session.execute(f"DROP TYPE {udt}")
    cluster.refresh_keyspace_metadata(keyspace)
    assert udt not in cluster.metadata.keyspaces[keyspace].user_types


def test_schema_change_events_reach_another_client(session, keyspace, varve_addr):
    """A second driver learns of a new type from the SCHEMA_CHANGE event
    alone (no explicit refresh), as drivers rely on it."""
    import time

    other = connect(*varve_addr, 5)
    other.connect()
    udt = unique("evt")
    session.execute(f"CREATE TYPE {udt} (x int)")
    deadline = time.monotonic() + 10
    while udt not in other.metadata.keyspaces[keyspace].user_types:
        assert time.monotonic() < deadline, "the other driver never saw the type"
        time.sleep(0.1)
    other.shutdown()


def test_types_and_values_survive_a_restart(start_varve, tmp_path):
    node = start_varve(data_dir=tmp_path / "udt-node")
    cluster = connect(node.host, node.port, 5)
    s = cluster.connect()
    s.execute("CREATE KEYSPACE ru WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TYPE ru.addr (street text, zip int)")
    s.execute('CREATE TYPE ru."Person" (name text, home frozen<addr>)')
    s.execute('CREATE TABLE ru.t (k int PRIMARY KEY, p frozen<"Person">, a addr)')
    s.execute("INSERT INTO ru.t (k, p, a) VALUES (1, {name: 'ann', home: {street: 's', zip: 5}}, {zip: 6})")
    s.execute("ALTER TYPE ru.addr ADD city text")
    before = cluster.metadata.keyspaces["ru"].export_as_string()
    cluster.shutdown()

    node.stop(signal.SIGKILL)
    node.start()
    cluster = connect(node.host, node.port, 5)
    s = cluster.connect()
    assert cluster.metadata.keyspaces["ru"].export_as_string() == before
    [row] = rows(s, "SELECT p.home, a FROM ru.t WHERE k = 1")
    assert (row.p_home.street, row.p_home.zip, row.p_home.city) == ("s", 5, None)
    assert (row.a.zip, row.a.street, row.a.city) == (6, None, None)
    cluster.shutdown()
