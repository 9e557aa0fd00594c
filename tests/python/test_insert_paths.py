"""A prepared INSERT with a marker for every value takes a compiled path
(crates/query/src/insert_plan.rs); any other INSERT takes the general one.
These tests write the same values through both, into two identical tables,
and check that the tables then hold the same data (values, write times and
TTLs) and that bad values fail with the same errors.

The general path is reached by the same statement with one more column
given as a literal, which the compiler does not take."""

import datetime
import decimal
import ipaddress
import random
import uuid

import pytest
from cassandra import InvalidRequest
from cassandra.query import UNSET_VALUE

from helpers import unique

COLUMNS = "k1 int, k2 text, c1 timestamp, c2 blob, s text static, b blob, i int, t text, " \
    "l list<int>, m map<text, int>, bo boolean, vi varint, de decimal, " \
    "tu frozen<tuple<int, text>>, u uuid, ip inet, d double, extra int"
NAMES = ["k1", "k2", "c1", "c2", "s", "b", "i", "t", "l", "m", "bo", "vi", "de", "tu", "u", "ip", "d"]
REGULAR_FROM = 4  # NAMES[4:] are static and regular columns: they may be null or unset


@pytest.fixture
def tables(session, keyspace):
    names = (unique("fast"), unique("slow"))
    for n in names:
        session.execute(f"CREATE TABLE {n} ({COLUMNS}, PRIMARY KEY ((k1, k2), c1, c2))")
    markers = ", ".join("?" for _ in NAMES)
    cols = ", ".join(NAMES)
    fast = session.prepare(
        f"INSERT INTO {names[0]} ({cols}) VALUES ({markers}) USING TTL ? AND TIMESTAMP ?")
    slow = session.prepare(
        f"INSERT INTO {names[1]} ({cols}, extra) VALUES ({markers}, 0) USING TTL ? AND TIMESTAMP ?")
    return names, fast, slow


def random_value(rng, name):
    return {
        "s": lambda: rng.choice(["", "static", "é"]),
        "b": lambda: bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40))),
        "i": lambda: rng.randrange(-2**31, 2**31),
        "t": lambda: rng.choice(["", "text", "naïve ☃"]),
        "l": lambda: [rng.randrange(100) for _ in range(rng.randrange(0, 4))],
        "m": lambda: {f"k{j}": j for j in range(rng.randrange(0, 3))},
        "bo": lambda: rng.random() < 0.5,
        "vi": lambda: rng.randrange(-10**30, 10**30),
        "de": lambda: decimal.Decimal(rng.randrange(-10**6, 10**6)) / 100,
        "tu": lambda: (rng.randrange(10), rng.choice(["a", "b"])),
        "u": lambda: uuid.UUID(int=rng.getrandbits(128)),
        "ip": lambda: ipaddress.ip_address(rng.choice(["10.0.0.1", "::1", "192.168.7.9"])),
        "d": lambda: rng.choice([0.0, -1.5, 3.25e100]),
    }[name]()


def random_row(rng):
    key = [rng.randrange(4), rng.choice(["a", "b"]),
           datetime.datetime(2020, 1, 1) + datetime.timedelta(seconds=rng.randrange(3)),
           bytes([rng.randrange(3)])]
    rest = []
    for name in NAMES[REGULAR_FROM:]:
        r = rng.random()
        rest.append(None if r < 0.15 else UNSET_VALUE if r < 0.3 else random_value(rng, name))
    ttl = rng.choice([0, 0, 86400])
    return key + rest + [ttl, rng.randrange(1, 1000)]


def contents(session, table):
    cols = ", ".join(NAMES)
    extra = ", ".join(f"writetime({c}), ttl({c})" for c in ["b", "i", "t", "bo", "vi", "u"])
    got = session.execute(f"SELECT {cols}, {extra} FROM {table}")
    # TTLs count down between the two reads: compare whether one is set.
    return sorted(tuple(v if not k.startswith("ttl") else v is not None for k, v in r._asdict().items())
                  for r in got)


def test_both_paths_store_the_same_rows(session, tables):
    (fast_table, slow_table), fast, slow = tables
    rng = random.Random(7)
    for _ in range(300):
        values = random_row(rng)
        session.execute(fast, values)
        session.execute(slow, values)
    got_fast = contents(session, fast_table)
    assert len(got_fast) > 20
    assert got_fast == contents(session, slow_table)


# (A null or unset partition key cannot be sent here: the driver computes
# the routing key from it first and fails on the client.)
@pytest.mark.parametrize("place, bad, match", [
    (2, None, "null"),             # clustering column
    (3, UNSET_VALUE, "unset"),
    (3, b"x" * 65536, "Key length of 65536"),   # a clustering value over the limit
    (3, b"x" * 65535, None),        # the longest clustering value: accepted
], ids=["null-clustering", "unset-clustering", "clustering-over-limit", "clustering-at-limit"])
def test_both_paths_reject_bad_keys_alike(session, tables, place, bad, match):
    (fast_table, slow_table), fast, slow = tables
    values = random_row(random.Random(1))
    values[place] = bad
    outcomes = []
    for stmt in (fast, slow):
        try:
            session.execute(stmt, values)
            outcomes.append("ok")
        except InvalidRequest as e:
            outcomes.append(str(e))
    assert outcomes[0] == outcomes[1]
    if match is None:
        assert outcomes == ["ok", "ok"]
    else:
        assert match.lower() in outcomes[0].lower(), outcomes[0]
