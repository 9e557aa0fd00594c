"""Query tracing against a real `varve server`, as drivers and cqlsh use it.

- `session.execute(..., trace=True)` for SELECT, INSERT, UPDATE, prepared
  statements, batches and LWTs: the response carries a tracing id, and
  `get_query_trace()` finds the session in system_traces.sessions (duration,
  request type, parameters as Cassandra 5.0.4 fills them) with its events
  (non-empty, source_elapsed never decreasing, Cassandra's activity texts);
- trace rows expire after a day (Cassandra's default TTL for query traces);
- untraced statements write nothing to system_traces;
- cqlsh `TRACING ON` prints the trace table after a query.
"""

import pytest
from cassandra.query import BatchStatement, SimpleStatement

from helpers import unique
from test_cqlsh import output, run_cqlsh

TRACE_TTL_S = 86400


@pytest.fixture(scope="module")
def table(session, keyspace):
    name = unique()
    session.execute(f"CREATE TABLE {name} (k int, c int, v text, PRIMARY KEY (k, c))")
    return name


def trace_of(result):
    trace = result.get_query_trace(max_wait_sec=5)
    assert trace.duration is not None and trace.duration.total_seconds() > 0
    elapsed = [e.source_elapsed for e in trace.events]
    assert elapsed, f"no events for {trace.request_type}"
    assert elapsed == sorted(elapsed), elapsed
    return trace, [e.description for e in trace.events]


def test_traced_insert_and_update_record_the_write_path(session, table):
    for stmt in (
        f"INSERT INTO {table} (k, c, v) VALUES (1, 1, 'a')",
        f"UPDATE {table} SET v = 'b' WHERE k = 1 AND c = 2",
    ):
        trace, steps = trace_of(session.execute(stmt, trace=True))
        assert trace.request_type == "Execute CQL3 query"
        assert trace.parameters["query"] == stmt
        assert trace.parameters["consistency_level"] == "LOCAL_ONE"
        assert trace.parameters["serial_consistency_level"] == "SERIAL"
        assert trace.parameters["page_size"] == "5000"
        assert steps[0] == f"Parsing {stmt}"
        assert steps[1:] == [
            "Preparing statement",
            "Determining replicas for mutation",
            "Appending to commitlog",
            f"Adding to {table} memtable",
        ]
        assert str(trace.client) == "127.0.0.1"
        assert trace.coordinator == "127.0.0.1"


def test_traced_select_records_the_read(session, table):
    session.execute(f"INSERT INTO {table} (k, c, v) VALUES (2, 1, 'x')")
    result = session.execute(f"SELECT * FROM {table} WHERE k = 2", trace=True)
    assert [r.v for r in result] == ["x"]
    trace, steps = trace_of(result)
    assert steps[2:] == [
        f"Executing single-partition query on {table}",
        "Acquiring sstable references",
        "Merged data from memtables and 0 sstables",
        "Read 1 live rows and 0 tombstone cells",
    ]


def test_traced_prepared_statement_records_its_bound_values(session, table):
    insert = session.prepare(f"INSERT INTO {table} (k, c, v) VALUES (?, ?, ?)")
    trace, steps = trace_of(session.execute(insert, (3, 1, "it's"), trace=True))
    assert trace.request_type == "Execute CQL3 prepared query"
    assert trace.parameters["query"] == insert.query_string
    assert trace.parameters["bound_var_0_k"] == "3"
    assert trace.parameters["bound_var_2_v"] == "'it''s'"
    assert not any(s.startswith("Parsing") for s in steps), "a prepared statement is not parsed again"
    select = session.prepare(f"SELECT v FROM {table} WHERE k = ? AND c = ?")
    trace, steps = trace_of(session.execute(select, (3, 1), trace=True))
    assert "Read 1 live rows and 0 tombstone cells" in steps


def test_traced_batch_and_lwt(session, table):
    insert = session.prepare(f"INSERT INTO {table} (k, c, v) VALUES (?, ?, ?)")
    batch = BatchStatement()
    batch.add(insert, (4, 1, "a"))
    batch.add(SimpleStatement(f"INSERT INTO {table} (k, c, v) VALUES (5, 1, 'b')"))
    trace, steps = trace_of(session.execute(batch, trace=True))
    assert trace.request_type == "Execute batch of CQL3 queries"
    assert set(trace.parameters) == {"consistency_level", "serial_consistency_level"}
    assert steps.count(f"Adding to {table} memtable") == 2

    lwt = f"INSERT INTO {table} (k, c, v) VALUES (6, 1, 'l') IF NOT EXISTS"
    result = session.execute(lwt, trace=True)
    assert result.was_applied
    trace, steps = trace_of(result)
    assert "Reading existing values for CAS precondition" in steps
    assert steps[-1] == "CAS applied successfully"
    trace, steps = trace_of(session.execute(lwt, trace=True))
    assert steps[-1] == "CAS precondition does not match current values"


def test_trace_rows_expire_after_a_day(session, table):
    result = session.execute(f"SELECT * FROM {table} WHERE k = 1", trace=True)
    trace_id = result.response_future.get_query_trace_ids()[0]
    row = session.execute(
        "SELECT ttl(duration) AS d, ttl(request) AS r FROM system_traces.sessions WHERE session_id = %s", (trace_id,)
    ).one()
    assert TRACE_TTL_S - 60 <= row.d <= TRACE_TTL_S and TRACE_TTL_S - 60 <= row.r <= TRACE_TTL_S
    ttls = [r.t for r in session.execute(
        "SELECT ttl(activity) AS t FROM system_traces.events WHERE session_id = %s", (trace_id,)
    )]
    assert ttls and all(TRACE_TTL_S - 60 <= t <= TRACE_TTL_S for t in ttls)


def test_untraced_statements_write_nothing_to_system_traces(session, table):
    def sessions():
        return {r.session_id for r in session.execute("SELECT session_id FROM system_traces.sessions")}

    before = sessions()
    result = session.execute(f"INSERT INTO {table} (k, c, v) VALUES (7, 1, 'u')")
    session.execute(f"SELECT * FROM {table} WHERE k = 7")
    session.execute(session.prepare(f"SELECT * FROM {table} WHERE k = ?"), (7,))
    assert not result.response_future._query_traces, "an untraced response carries no tracing id"
    assert sessions() == before


def test_cqlsh_tracing_on_prints_the_trace(varve_addr, tmp_path, keyspace, session):
    # A table of its own: under xdist the other tests of this module may
    # run on another worker, so their rows cannot be counted on.
    table = unique()
    session.execute(f"CREATE TABLE {table} (k int, c int, v text, PRIMARY KEY (k, c))")
    for c in (1, 2):
        session.execute(f"INSERT INTO {table} (k, c, v) VALUES (1, {c}, 'x')")
    script = tmp_path / "trace.cql"
    script.write_text(f"TRACING ON;\nSELECT * FROM {keyspace}.{table} WHERE k = 1;\n")
    out = output(run_cqlsh(varve_addr, "-f", str(script), home=tmp_path))
    assert "Now Tracing is enabled" in out or "TRACING set to ON" in out, out
    assert "Tracing session: " in out, out
    for text in ("activity", "source_elapsed", "Execute CQL3 query", f"Parsing SELECT * FROM {keyspace}.{table}",
                 "Read 2 live rows and 0 tombstone cells", "Request complete"):
        assert text in out, out
