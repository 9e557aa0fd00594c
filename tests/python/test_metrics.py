"""Metrics of a real node: `GET /metrics` (Prometheus text) before and after
a known number of requests through the Python driver, the system_views
tables, and `varve nodetool info`.

Counts are exact: every request is a prepared statement run once (the
driver retries nothing that succeeds), and the driver's own queries of
system tables are not client requests (virtual tables, as in Cassandra).
"""

import math
import re
import time
import urllib.request

from conftest import connect, make_keyspace, nodetool

# One sample line: name, optional {labels}, a value (Go-style floats).
SAMPLE_RE = re.compile(
    r'^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)'
    r'(?:\{(?P<labels>(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*)\})?'
    r' (?P<value>\S+)$'
)
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

WRITES, READS, SCANS, LWT_APPLIED, LWT_NOT_APPLIED = 20, 7, 3, 5, 4


def scrape(node):
    """{(name, frozenset(labels)): value} of every sample; checks each line."""
    url = f"http://127.0.0.1:{node.admin_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = r.read().decode()
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("# HELP ") or line.startswith("# TYPE "):
            continue
        m = SAMPLE_RE.match(line)
        assert m, f"unparsable sample line: {line!r}"
        value = float(m["value"])  # accepts NaN, +Inf, -Inf
        labels = frozenset(LABEL_RE.findall(m["labels"] or ""))
        key = (m["name"], labels)
        assert key not in samples, f"duplicate series: {line!r}"
        samples[key] = value
    return samples


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def latency_count(samples, op):
    return value(samples, "varve_client_request_latency_seconds_count", operation=op)


def test_metrics_count_requests_tables_and_process(start_varve):
    node = start_varve()
    cluster = connect(node.host, node.port, 5)
    session = cluster.connect()
    try:
        ks = make_keyspace(session)
        session.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v text)")
        cluster.control_connection.wait_for_schema_agreement()
        insert = session.prepare(f"INSERT INTO {ks}.t (k, v) VALUES (?, ?)")
        read = session.prepare(f"SELECT v FROM {ks}.t WHERE k = ?")
        scan = session.prepare(f"SELECT * FROM {ks}.t")
        lwt = session.prepare(f"INSERT INTO {ks}.t (k, v) VALUES (?, ?) IF NOT EXISTS")

        before = scrape(node)
        for k in range(WRITES):
            session.execute(insert, (k, f"v{k}"))
        for k in range(READS):
            assert session.execute(read, (k,)).one().v == f"v{k}"
        for _ in range(SCANS):
            assert len(list(session.execute(scan))) == WRITES
        for k in range(LWT_APPLIED):
            assert session.execute(lwt, (1000 + k, "new")).was_applied
        for k in range(LWT_NOT_APPLIED):
            assert not session.execute(lwt, (k, "again")).was_applied
        after = scrape(node)

        def grew(f, *args, **kw):
            return f(after, *args, **kw) - f(before, *args, **kw)

        assert grew(latency_count, "write") == WRITES
        assert grew(latency_count, "read") == READS
        assert grew(latency_count, "range_slice") == SCANS
        assert grew(latency_count, "cas_write") == LWT_APPLIED + LWT_NOT_APPLIED
        assert grew(latency_count, "cas_read") == 0
        assert grew(value, "varve_cas_condition_not_met_total", operation="cas_write") == LWT_NOT_APPLIED
        assert grew(value, "varve_cas_contention_count", operation="cas_write") == LWT_APPLIED + LWT_NOT_APPLIED
        assert value(after, "varve_cas_unfinished_commits_total", operation="cas_write") == 0
        for op in ("read", "write", "cas_write", "range_slice"):
            assert value(after, "varve_client_request_timeouts_total", operation=op) == 0
            assert value(after, "varve_client_request_failures_total", operation=op) == 0
        assert value(after, "varve_client_request_latency_seconds_sum", operation="write") > 0
        # Per table: one tombstone sample per SELECT, one sstables sample per
        # partition read by key; no sstables yet.
        table = {"keyspace": ks, "table": "t"}
        assert value(after, "varve_table_tombstones_scanned_count", **table) == READS + SCANS
        assert value(after, "varve_table_sstables_per_read_count", **table) == READS
        assert value(after, "varve_table_live_sstables", **table) == 0
        # Today's native-transport counters are still there.
        assert value(after, "varve_requests_total", opcode="EXECUTE") >= WRITES + READS
        assert value(after, "varve_connections_open") >= 1

        nodetool(node, "flush", ks, "t")
        flushed = scrape(node)
        assert value(flushed, "varve_table_live_sstables", **table) >= 1
        assert value(flushed, "varve_table_live_disk_space_used_bytes", **table) > 0
        assert value(flushed, "varve_table_sstables_per_level", level="0", **table) >= 1
        assert (table_key := ("varve_table_pending_compactions", frozenset(table.items()))) in flushed, table_key
        assert value(flushed, "process_resident_memory_bytes") > 0
        assert value(flushed, "process_open_fds") > 0
        # The counter moves in clock ticks (10 ms): the work above may take
        # less CPU than one. Serve scans until it grows.
        cpu_before = value(before, "process_cpu_seconds_total")
        deadline = time.monotonic() + 30
        while value(scrape(node), "process_cpu_seconds_total") <= cpu_before:
            assert time.monotonic() < deadline, "process CPU never grew while the node served scans"
            for _ in range(20):
                list(session.execute(scan))
        assert ("varve_compaction_pending_tasks", frozenset()) in flushed
        assert ("varve_compaction_bytes_compacted_total", frozenset()) in flushed
        quantile = value(flushed, "varve_client_request_latency_seconds", operation="write", quantile="0.99")
        assert math.isnan(quantile) or quantile > 0

        # system_views: the same counts through CQL.
        def view(view_name, **where):
            cond = " AND ".join(f"{k} = %s" for k in where)
            q = f"SELECT * FROM system_views.{view_name}" + (f" WHERE {cond}" if cond else "")
            return list(session.execute(q, tuple(where.values())))

        row = view("coordinator_write_latency", keyspace_name=ks, table_name="t")[0]
        assert row.count == WRITES + LWT_APPLIED + LWT_NOT_APPLIED
        assert row.max_ms > 0 and 0 < row.p50th_ms <= row.max_ms and row.per_second >= 0
        assert view("coordinator_read_latency", keyspace_name=ks, table_name="t")[0].count == READS
        assert view("coordinator_scan_latency", keyspace_name=ks, table_name="t")[0].count == SCANS
        tomb = view("tombstones_per_read", keyspace_name=ks, table_name="t")[0]
        assert tomb.count == READS + SCANS and tomb.max == 0
        assert any(r.keyspace_name == ks for r in view("coordinator_read_latency"))
        assert view("settings", name="num_tokens")[0].value == "16"
        assert view("sstable_tasks") == [] or all(r.unit == "bytes" for r in view("sstable_tasks"))
        rows = view("varve_metrics", name="client_request_latency")
        counts = {r.labels: r.value for r in rows if r.field == "count"}
        assert counts["operation=write"] == WRITES
        listed = {r.table_name for r in session.execute(
            "SELECT table_name FROM system_virtual_schema.tables WHERE keyspace_name = 'system_views'")}
        assert {"coordinator_read_latency", "settings", "sstable_tasks", "varve_metrics"} <= listed

        # A dropped table's series go away.
        session.execute(f"DROP TABLE {ks}.t")
        cluster.control_connection.wait_for_schema_agreement()
        dropped = scrape(node)
        assert not [k for k in dropped if ("table", "t") in k[1] and ("keyspace", ks) in k[1]]
    finally:
        cluster.shutdown()

    info = nodetool(node, "info")
    assert re.search(r"^Uptime \(seconds\) +: \d+$", info, re.M), info
    assert re.search(r"^Load +: [\d.]+ (bytes|KiB|MiB|GiB)$", info, re.M), info
    assert re.search(r"^Native Transport active: true$", info, re.M), info
    assert re.search(r"^Resident memory \(MB\) +: [\d.]+$", info, re.M), info
