"""Cassandra 5.0's vector<T, n> through the Python driver: prepared
statements binding Python lists (the driver encodes them because the
prepared metadata names `org.apache.cassandra.db.marshal.VectorType`), the
values it decodes (fixed-width and length-prefixed elements, nested
vectors), raw bytes of the wrong size refused, similarity functions, the
driver's schema metadata, cqlsh's display, and vectors after a restart
(tests/differential 19_issue21_vector.cql checks the answers against
Cassandra)."""

import signal
import struct

from cassandra import InvalidRequest

from conftest import connect
from helpers import bind_raw, raises, rows, unique
from test_cqlsh import lines, run_cqlsh

VECTOR_CLASS = "org.apache.cassandra.db.marshal.VectorType"


def test_prepared_statements_bind_and_decode_vectors(session, keyspace):
    table = unique("vec")
    session.execute(
        f"CREATE TABLE {table} (k int, c vector<float, 2>, v vector<float, 3>, "
        f"t vector<text, 2>, n vector<vector<int, 2>, 2>, PRIMARY KEY (k, c))"
    )
    insert = session.prepare(f"INSERT INTO {table} (k, c, v, t, n) VALUES (?, ?, ?, ?, ?)")
    types = [m.type for m in insert.column_metadata]
    assert [t.typename for t in types[1:]] == [VECTOR_CLASS] * 4
    assert (types[2].vector_size, types[2].subtype.typename) == (3, "float")
    assert types[4].subtype.vector_size == 2

    session.execute(insert, [1, [1.0, 2.0], [0.5, -1.5, 3.0], ["a", "bc"], [[1, 2], [3, 4]]])
    session.execute(insert, [1, [-1.0, 2.0], None, ["", "é"], None])
    session.execute(insert, [1, [1.0, -2.0], [1.0, 1.0, 1.0], None, [[-1, 0], [0, 1]]])

    select = session.prepare(f"SELECT c, v, t, n FROM {table} WHERE k = ?")
    got = rows(session, select, [1])
    # Clustering order: element by element as floats, not bytewise.
    assert [r.c for r in got] == [[-1.0, 2.0], [1.0, -2.0], [1.0, 2.0]]
    assert got[2].v == [0.5, -1.5, 3.0]
    assert got[2].t == ["a", "bc"] and got[0].t == ["", "é"]
    assert got[2].n == [[1, 2], [3, 4]] and got[1].n == [[-1, 0], [0, 1]]
    assert got[0].v is None

    # A marker inside a vector literal is an element (Cassandra names it value(v)).
    partial = session.prepare(f"INSERT INTO {table} (k, c, v) VALUES (2, [0.0, 0.0], [?, ?, 3.0])")
    assert [(m.name, m.type.typename) for m in partial.column_metadata] == [
        ("value(v)", "float"),
        ("value(v)", "float"),
    ]
    session.execute(partial, [7.0, 8.0])
    [row] = rows(session, f"SELECT v FROM {table} WHERE k = 2")
    assert row.v == [7.0, 8.0, 3.0]

    # A vector in a WHERE clause, bound.
    slice_ = session.prepare(f"SELECT c FROM {table} WHERE k = ? AND c > ?")
    assert [r.c for r in rows(session, slice_, [1, [0.0, 5.0]])] == [[1.0, -2.0], [1.0, 2.0]]


def test_wrong_sizes_and_elements_are_refused(session, keyspace):
    table = unique("vecbad")
    session.execute(f"CREATE TABLE {table} (k int PRIMARY KEY, v vector<float, 3>, t vector<text, 2>)")
    insert = session.prepare(f"INSERT INTO {table} (k, v, t) VALUES (?, ?, ?)")
    # The driver refuses a list of the wrong length itself; send raw bytes.
    two_floats = struct.pack(">ff", 1.0, 2.0)
    raises(session, InvalidRequest, bind_raw(insert, [1, [0.0] * 3, None], {1: two_floats}),
           match="expected 12 bytes")
    four_floats = struct.pack(">ffff", 1.0, 2.0, 3.0, 4.0)
    raises(session, InvalidRequest, bind_raw(insert, [1, [0.0] * 3, None], {1: four_floats}),
           match="got 16")
    # A text element whose length runs past the end, and one too few elements.
    raises(session, InvalidRequest, bind_raw(insert, [1, None, ["a", "b"]], {2: b"\x01a\x05b"}),
           match="runs past the end")
    raises(session, InvalidRequest, bind_raw(insert, [1, None, ["a", "b"]], {2: b"\x01a"}),
           match="missing")
    raises(session, InvalidRequest, f"INSERT INTO {table} (k, v) VALUES (1, [1.0, 2.0])",
           match="expected 3 elements, but given 2")
    raises(session, InvalidRequest, f"INSERT INTO {table} (k, v) VALUES (1, [1.0, null, 2.0])",
           match="null is not supported inside vectors")
    assert rows(session, f"SELECT * FROM {table}") == []


def test_similarity_functions(session, keyspace):
    table = unique("vecsim")
    session.execute(f"CREATE TABLE {table} (k int PRIMARY KEY, v vector<float, 3>)")
    insert = session.prepare(f"INSERT INTO {table} (k, v) VALUES (?, ?)")
    session.execute(insert, [1, [1.0, 2.0, 3.0]])
    session.execute(insert, [2, [1.5, 2.5, 3.5]])
    got = rows(
        session,
        f"SELECT k, similarity_cosine(v, [1.0, 2.0, 3.0]) AS c, "
        f"similarity_euclidean(v, [1.0, 2.0, 3.0]) AS e, "
        f"similarity_dot_product(v, [1.0, 2.0, 3.0]) AS d FROM {table} WHERE k IN (1, 2)",
    )
    # Recorded from Cassandra 5.0.4 (single-precision results).
    assert [(r.k, r.c, r.e, r.d) for r in got] == [
        (1, 1.0, 1.0, 7.5),
        (2, 0.9987074136734009, 0.5714285969734192, 9.0),
    ]
    raises(session, InvalidRequest,
           f"SELECT similarity_cosine(v, [0.0, 0.0, 0.0]) FROM {table} WHERE k = 1",
           match="doesn't support all-zero vectors")
    raises(session, InvalidRequest, f"SELECT similarity_cosine(v, [1.0]) FROM {table} WHERE k = 1",
           match="same vector dimensions")


def test_a_bound_query_vector_in_the_selection(session, keyspace):
    """`similarity_cosine(v, ?)`: the query embedding bound at each
    execution, typed as the other argument (Cassandra names the marker
    arg1(system.similarity_cosine)); and a typed marker in an arithmetic
    selector."""
    table = unique("vecbind")
    session.execute(f"CREATE TABLE {table} (k int PRIMARY KEY, v vector<float, 3>)")
    insert = session.prepare(f"INSERT INTO {table} (k, v) VALUES (?, ?)")
    session.execute(insert, [1, [1.0, 2.0, 3.0]])
    session.execute(insert, [2, [1.5, 2.5, 3.5]])
    query = session.prepare(
        f"SELECT k, similarity_dot_product(v, ?) AS d, (int)? + k AS s FROM {table} WHERE k IN (1, 2)")
    names = [(m.name, m.type.typename) for m in query.column_metadata]
    assert names == [("arg1(system.similarity_dot_product)", VECTOR_CLASS),
                     ("arg0(system._add)", "int")]
    got = [(r.k, r.d, r.s) for r in session.execute(query, [[1.0, 2.0, 3.0], 10])]
    assert got == [(1, 7.5, 11), (2, 9.0, 12)]  # (1 + dot) / 2, as Cassandra scales it
    # Another execution, other values: nothing of the first is kept.
    got = [(r.k, r.d, r.s) for r in session.execute(query, [[0.0, 0.0, 1.0], 100])]
    assert got == [(1, 2.0, 101), (2, 2.25, 102)]
    got = [(r.k, r.d, r.s) for r in session.execute(query, [None, None])]
    assert got == [(1, None, None), (2, None, None)]


def test_schema_metadata_cqlsh_and_a_restart(start_varve, tmp_path):
    node = start_varve(data_dir=tmp_path / "vec-node")
    cluster = connect(node.host, node.port, 5)
    s = cluster.connect()
    s.execute("CREATE KEYSPACE rv WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE rv.t (k vector<int, 2>, c int, v vector<float, 3>, "
              "l list<vector<text, 1>>, s vector<int, 1> static, PRIMARY KEY (k, c))")
    s.execute("INSERT INTO rv.t (k, c, v, l) VALUES ([1, 2], 0, [1.5, 2.5, 3.5], [['x'], ['y']])")
    table = cluster.metadata.keyspaces["rv"].tables["t"]
    assert table.columns["v"].cql_type == "vector<float, 3>"
    assert table.columns["l"].cql_type == "list<vector<text, 1>>"
    before = cluster.metadata.keyspaces["rv"].export_as_string()
    assert "v vector<float, 3>" in before
    cluster.shutdown()

    home = tmp_path / "home"
    home.mkdir()
    out = lines(run_cqlsh((node.host, node.port), "-e", "SELECT k, v, l FROM rv.t", home=home))
    assert out[-2] == " [1, 2] | [1.5, 2.5, 3.5] | [['x'], ['y']]"

    node.stop(signal.SIGKILL)
    node.start()
    cluster = connect(node.host, node.port, 5)
    s = cluster.connect()
    assert cluster.metadata.keyspaces["rv"].export_as_string() == before
    [row] = rows(s, "SELECT k, v, l FROM rv.t WHERE k = [1, 2]")
    assert (row.k, row.v, row.l) == ([1, 2], [1.5, 2.5, 3.5], [["x"], ["y"]])
    cluster.shutdown()
