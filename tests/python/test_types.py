"""Every CQL type through the driver: written as a literal and as a bound
value, read back equal; used as a key; sorted as a clustering column; and
wrong-typed values refused with InvalidRequest."""

import datetime
import math
import uuid
from decimal import Decimal

import pytest
from cassandra import InvalidRequest
from cassandra.util import Date, Duration, Time

from helpers import raises, rows, unique

HUGE = 2**200 + 12345
TIMEUUID = uuid.UUID("d2177dd0-eaa2-11de-a572-001b779c76e3")  # version 1
DURATION_NS = ((3 * 60 + 4) * 60 + 5) * 10**9 + 6 * 10**6 + 7 * 10**3 + 8

# column -> (cql type, CQL literal, Python value the driver must return and can bind)
COLUMNS = {
    "a_ascii": ("ascii", "'plain ascii'", "plain ascii"),
    "a_text": ("text", "'h\u00e9llo \u2713 \U0001F600 ''quoted'''", "h\u00e9llo \u2713 \U0001F600 'quoted'"),
    "a_varchar": ("varchar", "''", ""),
    "a_blob": ("blob", "0xcafebabe00ff", b"\xca\xfe\xba\xbe\x00\xff"),
    "a_boolean": ("boolean", "true", True),
    "a_tinyint": ("tinyint", "-128", -128),
    "a_smallint": ("smallint", "32767", 32767),
    "a_int": ("int", "-2147483648", -2147483648),
    "a_bigint": ("bigint", "9223372036854775807", 9223372036854775807),
    "a_varint": ("varint", str(HUGE), HUGE),
    "a_varint_neg": ("varint", str(-HUGE), -HUGE),
    "a_float": ("float", "3.5", 3.5),
    "a_double": ("double", "2.718281828459045", 2.718281828459045),
    "a_decimal": ("decimal", "-123456789012345678901234567890.000000000987654321",
                  Decimal("-123456789012345678901234567890.000000000987654321")),
    "a_uuid": ("uuid", "550e8400-e29b-41d4-a716-446655440000", uuid.UUID("550e8400-e29b-41d4-a716-446655440000")),
    "a_timeuuid": ("timeuuid", str(TIMEUUID), TIMEUUID),
    "a_timestamp": ("timestamp", "'2020-01-02T03:04:05.678+0000'", datetime.datetime(2020, 1, 2, 3, 4, 5, 678000)),
    "a_date": ("date", "'2020-02-29'", Date(datetime.date(2020, 2, 29))),
    "a_time": ("time", "'13:14:15.123456789'", Time("13:14:15.123456789")),
    "a_duration": ("duration", "1mo2d3h4m5s6ms7us8ns", Duration(1, 2, DURATION_NS)),
    "a_inet4": ("inet", "'192.168.1.254'", "192.168.1.254"),
    "a_inet6": ("inet", "'2001:db8::ff00:42:8329'", "2001:db8::ff00:42:8329"),
    "a_list": ("list<int>", "[3, 1, 2, 1]", [3, 1, 2, 1]),
    "a_set": ("set<text>", "{'b', 'a', 'c'}", {"a", "b", "c"}),
    "a_map": ("map<text, int>", "{'z': 26, 'a': 1}", {"a": 1, "z": 26}),
    "a_flist": ("frozen<list<text>>", "['x', 'y']", ["x", "y"]),
    "a_fset": ("frozen<set<int>>", "{5, -1}", {-1, 5}),
    "a_fmap": ("frozen<map<int, text>>", "{2: 'b', 1: 'a'}", {1: "a", 2: "b"}),
    "a_nested": ("map<text, frozen<list<frozen<set<int>>>>>", "{'k': [{1, 2}, {3}]}", {"k": [{1, 2}, {3}]}),
    "a_tuple": ("tuple<int, text, double>", "(1, null, 2.5)", (1, None, 2.5)),
    "a_tuple_nested": ("frozen<tuple<int, frozen<list<int>>, tuple<text, boolean>>>",
                       "(7, [1, 2], ('t', false))", (7, [1, 2], ("t", False))),
    "a_list_tuples": ("list<frozen<tuple<int, text>>>", "[(1, 'a'), (2, null)]", [(1, "a"), (2, None)]),
}


def normalize(value):
    """Driver collection types (SortedSet, OrderedMapSerializedKey) as plain
    Python ones, recursively, so they compare with the expected values."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, tuple):
        return tuple(normalize(v) for v in value)
    if isinstance(value, list):
        return [normalize(v) for v in value]
    if hasattr(value, "items"):
        return {normalize(k): normalize(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)) or type(value).__name__ == "SortedSet":
        return frozenset(normalize(v) for v in value)
    return value


def expected(value):
    return normalize(value)


@pytest.fixture(scope="module")
def all_types(session, keyspace):
    name = unique("all_types")
    cols = ", ".join(f"{c} {t}" for c, (t, _, _) in COLUMNS.items())
    session.execute(f"CREATE TABLE {name} (k int PRIMARY KEY, {cols})")
    return name


def check_row(row, skip=()):
    bad = []
    for col, (_, _, value) in COLUMNS.items():
        if col in skip:
            continue
        got = getattr(row, col)
        if normalize(got) != expected(value):
            bad.append(f"{col}: {got!r} != {value!r}")
    assert not bad, "\n".join(bad)


def test_literals_round_trip(session, all_types):
    names = ", ".join(COLUMNS)
    literals = ", ".join(lit for _, lit, _ in COLUMNS.values())
    session.execute(f"INSERT INTO {all_types} (k, {names}) VALUES (1, {literals})")
    check_row(session.execute(f"SELECT * FROM {all_types} WHERE k = 1").one())


def test_bound_values_round_trip(session, all_types):
    names = ", ".join(COLUMNS)
    marks = ", ".join("?" for _ in COLUMNS)
    prepared = session.prepare(f"INSERT INTO {all_types} (k, {names}) VALUES (?, {marks})")
    session.execute(prepared, [2] + [v for _, _, v in COLUMNS.values()])
    check_row(session.execute(session.prepare(f"SELECT * FROM {all_types} WHERE k = ?"), [2]).one())
    # Simple (non-prepared) statements with client-side formatting too.
    fmt = ", ".join("%s" for _ in COLUMNS)
    session.execute(f"INSERT INTO {all_types} (k, {names}) VALUES (%s, {fmt})", [3] + [v for _, _, v in COLUMNS.values()])
    # The driver formats a Decimal for a simple statement through float
    # (cql_encode_all_types gives -1.2345678901234568e+29), so the exact
    # decimal only survives the prepared path above.
    row = session.execute(f"SELECT * FROM {all_types} WHERE k = 3").one()
    check_row(row, skip=("a_decimal",))
    assert float(row.a_decimal) == float(COLUMNS["a_decimal"][2])


def test_nulls_and_empty_collections(session, all_types):
    session.execute(f"INSERT INTO {all_types} (k, a_int, a_text, a_list, a_flist, a_set, a_map)"
                    " VALUES (4, null, null, [], [], {}, {})")
    row = session.execute(f"SELECT * FROM {all_types} WHERE k = 4").one()
    assert row.a_int is None and row.a_text is None
    # An empty non-frozen collection is no cells at all: it reads as null.
    assert row.a_list is None and row.a_set is None and row.a_map is None
    # A frozen collection is one value: empty stays empty.
    assert row.a_flist == []
    # Unset columns read as null as well.
    assert row.a_uuid is None and row.a_tuple is None


def test_special_floats_and_edge_numbers(session, keyspace):
    name = unique()
    session.execute(f"CREATE TABLE {name} (k int PRIMARY KEY, f float, d double, v varint, m decimal, t tinyint)")
    session.execute(f"INSERT INTO {name} (k, f, d, v, m, t) VALUES (1, NaN, -Infinity, 0, 0.0, 127)")
    row = session.execute(f"SELECT * FROM {name} WHERE k = 1").one()
    assert math.isnan(row.f) and row.d == -math.inf and row.v == 0 and row.m == Decimal("0.0") and row.t == 127
    prepared = session.prepare(f"INSERT INTO {name} (k, f, d, v, m, t) VALUES (?, ?, ?, ?, ?, ?)")
    for k, v in enumerate([-1, 127, 128, -129, 255, 256, -(2**63), 2**64, -(2**64) - 1], start=10):
        session.execute(prepared, (k, math.inf, 1e308, v, Decimal("1E-30"), -1))
        row = session.execute(f"SELECT v, m, f FROM {name} WHERE k = %s", (k,)).one()
        assert (row.v, row.m, row.f) == (v, Decimal("1E-30"), math.inf)


SIMPLE_KEY_VALUES = {
    "ascii": "key", "text": "cl\u00e9", "blob": b"\x00\x01", "boolean": False, "tinyint": -5, "smallint": 300,
    "int": 42, "bigint": -(2**40), "varint": HUGE, "float": 1.25, "double": -0.5, "decimal": Decimal("3.14"),
    "uuid": uuid.UUID("550e8400-e29b-41d4-a716-446655440000"), "timeuuid": TIMEUUID,
    "timestamp": datetime.datetime(1969, 12, 31, 23, 59, 59, 1000), "date": Date(datetime.date(1900, 1, 1)),
    "time": Time("00:00:00.000000001"), "inet": "::1",
    "frozen<list<int>>": [1, 2], "frozen<map<text, int>>": {"a": 1}, "tuple<int, text>": (1, None),
}


@pytest.mark.parametrize("cql_type", list(SIMPLE_KEY_VALUES))
def test_type_as_partition_key(session, keyspace, cql_type):
    name = unique()
    session.execute(f"CREATE TABLE {name} (k {cql_type} PRIMARY KEY, v int)")
    value = SIMPLE_KEY_VALUES[cql_type]
    insert = session.prepare(f"INSERT INTO {name} (k, v) VALUES (?, ?)")
    session.execute(insert, (value, 1))
    row = session.execute(session.prepare(f"SELECT k, v FROM {name} WHERE k = ?"), (value,)).one()
    assert row is not None and normalize(row.k) == expected(value) and row.v == 1


# Values in Cassandra's sort order for each type.
SORTED = {
    "int": [-2147483648, -1, 0, 1, 2147483647],
    "bigint": [-(2**63), -1, 0, 2**63 - 1],
    "varint": [-HUGE, -256, -1, 0, 1, 255, HUGE],
    "decimal": [Decimal("-10"), Decimal("-0.5"), Decimal("0"), Decimal("0.001"), Decimal("1E+3")],
    "double": [-math.inf, -1.5, 0.0, 2.25, math.inf],
    "text": ["", "A", "Z", "a", "\u00e9", "\u4e2d"],
    "blob": [b"", b"\x00", b"\x00\x00", b"\x01", b"\x7f", b"\x80", b"\xff"],
    "boolean": [False, True],
    "timestamp": [datetime.datetime(1960, 1, 1), datetime.datetime(1970, 1, 1), datetime.datetime(2030, 1, 1)],
    "date": [Date(datetime.date(1, 1, 1)), Date(datetime.date(1970, 1, 1)), Date(datetime.date(2100, 1, 1))],
    # timeuuid sorts by time first; uuid by version, then time for v1.
    "timeuuid": [uuid.UUID("00000000-0000-1000-8000-000000000000"), TIMEUUID,
                 uuid.UUID("d2177dd0-eaa2-11df-a572-001b779c76e3")],
    # inet compares the address bytes unsigned, so ::1 (0x00...) sorts first.
    "inet": ["::1", "1.2.3.4", "9.0.0.0", "2001:db8::1"],
}


@pytest.mark.parametrize("cql_type", list(SORTED))
def test_clustering_sort_order(session, keyspace, cql_type):
    name = unique()
    session.execute(f"CREATE TABLE {name} (k int, c {cql_type}, PRIMARY KEY (k, c))")
    insert = session.prepare(f"INSERT INTO {name} (k, c) VALUES (0, ?)")
    values = SORTED[cql_type]
    for v in reversed(values):
        session.execute(insert, (v,))
    got = [r.c for r in session.execute(f"SELECT c FROM {name} WHERE k = 0")]
    assert got == values
    got_desc = [r.c for r in session.execute(f"SELECT c FROM {name} WHERE k = 0 ORDER BY c DESC")]
    assert got_desc == list(reversed(values))


@pytest.mark.parametrize("column,literal", [
    ("i", "'text'"), ("i", "1.5"), ("i", "2147483648"), ("t", "42"), ("ti", "200"), ("b", "'not a blob'"),
    ("u", "'not-a-uuid'"), ("u", "12"), ("tu", "550e8400-e29b-41d4-a716-446655440000"), ("ts", "'yesterday'"),
    ("d", "'2020-13-01'"), ("tm", "'25:00:00'"), ("ip", "'300.1.1.1'"), ("ip", "'not an ip'"),
    ("l", "['a']"), ("l", "{1}"),
    ("s", "[1]"), ("m", "{1: 'a'}"), ("tp", "(1, 2, 3)"), ("tp", "('a', 'b')"),
    ("bo", "1"), ("du", "'P1X'"),
])
def test_wrong_typed_literal_is_invalid_request(session, keyspace, column, literal):
    name = "wrong_types"
    session.execute(f"CREATE TABLE IF NOT EXISTS {name} (k int PRIMARY KEY, i int, t text, ti tinyint, b blob, u uuid,"
                    " tu timeuuid, ts timestamp, d date, tm time, ip inet, l list<int>, s set<int>,"
                    " m map<text, int>, tp tuple<int, text>, bo boolean, du duration)")
    key = abs(hash((column, literal))) % 2**31
    raises(session, InvalidRequest, f"INSERT INTO {name} (k, {column}) VALUES ({key}, {literal})")
    assert session.execute(f"SELECT {column} FROM {name} WHERE k = {key}").one() is None


def test_wrong_typed_where_value_is_invalid_request(session, keyspace):
    name = unique()
    session.execute(f"CREATE TABLE {name} (k int PRIMARY KEY, v text)")
    raises(session, InvalidRequest, f"SELECT * FROM {name} WHERE k = 'one'")
    raises(session, InvalidRequest, f"UPDATE {name} SET v = 1 WHERE k = 1")
    raises(session, InvalidRequest, f"DELETE FROM {name} WHERE k = 0x01")


def test_duration_not_allowed_in_keys(session, keyspace):
    # Cassandra refuses duration as a primary key column (durations do not order).
    raises(session, InvalidRequest, f"CREATE TABLE {unique()} (k duration PRIMARY KEY)")
    raises(session, InvalidRequest, f"CREATE TABLE {unique()} (k int, c duration, PRIMARY KEY (k, c))")
    assert rows(session, "SELECT * FROM system.local WHERE key = 'local'")
