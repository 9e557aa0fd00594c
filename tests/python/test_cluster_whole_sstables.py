"""Whole-sstable streaming: a node that bootstraps receives as whole files
the sstables of the nodes that lose its ranges whose token span lies
inside one of those ranges, and everything else in pages
(docs/design/topology.md, section 4).

Real `varve server` processes on 127.0.0.x (the ports of the bootstrap
tests). The three first nodes each hold sstables of one row (a flush
after each row, compaction off, so each stays one token wide) and, in
their memtables, rows written since, which their flush before the stream
puts in one sstable spanning most of the ring: some sstables go whole,
the rest in pages. The fourth node then counts the files it received,
and every row reads back through it.
"""

import re
import subprocess
import urllib.request

from conftest import connect, varve_bin
from test_cluster_bootstrap import ADMIN, NATIVE, missing_rows, nodes, pinned, start_node  # noqa: F401 (nodes: a fixture)
FIXED_PORTS = NATIVE  # conftest.py: modules on this port set run in order

SINGLES = 12
ROWS = 400


def flush(index):
    url = f"http://127.0.0.{index}:{ADMIN}/nodetool/flush?keyspace=ks&tables=t"
    urllib.request.urlopen(urllib.request.Request(url, method="POST"), timeout=30).read()


def metric(index, name, direction):
    text = urllib.request.urlopen(f"http://127.0.0.{index}:{ADMIN}/metrics", timeout=10).read().decode()
    found = re.search(rf'varve_{name}_total\{{direction="{direction}"\}} (\d+)', text)
    return int(found.group(1)) if found else 0


def test_a_bootstrap_streams_the_sstables_inside_its_ranges_whole(tmp_path, nodes):
    for index in range(1, 4):
        nodes.append(start_node(tmp_path, index))
    cluster = connect("127.0.0.1", NATIVE, 5)
    session = cluster.connect()
    session.execute("CREATE KEYSPACE ks WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 3}")
    session.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH compaction = "
                    "{'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}")
    from cassandra import ConsistencyLevel
    from cassandra.concurrent import execute_concurrent_with_args

    insert = session.prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
    insert.consistency_level = ConsistencyLevel.ALL
    for k in range(SINGLES):
        session.execute(insert, (k, f"single {k}"))
        for index in range(1, 4):
            flush(index)
    insert.consistency_level = ConsistencyLevel.QUORUM
    results = execute_concurrent_with_args(
        session, insert, [(k, f"row {k}") for k in range(SINGLES, SINGLES + ROWS)], concurrency=64)
    assert all(ok for ok, _ in results)

    nodes.append(start_node(tmp_path, 4))
    log = nodes[3].log()
    assert "bootstrap: done; this node is Normal" in log, nodes[3].log_tail()
    files = metric(4, "streaming_files", "in")
    sent = sum(metric(index, "streaming_files", "out") for index in range(1, 4))
    # Each one-row sstable whose key the new node gains comes whole from
    # the one node that loses the key (with these tokens, most of them).
    assert 3 <= files <= SINGLES, (files, nodes[3].log_tail())
    assert sent == files, (sent, files)
    streamed = re.search(r"bootstrap: streamed .* (\d+) whole sstables\)", log)
    assert streamed and int(streamed.group(1)) == files, nodes[3].log_tail()
    # The rows written since the last flush came in pages.
    assert metric(4, "streaming_bytes", "in") > 0
    netstats = subprocess.run([varve_bin(), "nodetool", "-h", "127.0.0.4", "-p", str(ADMIN),
                               "netstats"], capture_output=True, text=True, timeout=30)
    assert f"Whole sstables received {files}, sent 0" in netstats.stdout, netstats.stdout

    keys = list(range(SINGLES + ROWS))
    new_cluster, new_session = pinned("127.0.0.4")
    try:
        # At ONE the new node's coordinator reads its own replica of every
        # key it replicates.
        assert missing_rows(new_session, keys, "ONE") == []
        rows = new_session.execute("SELECT v FROM ks.t WHERE k = 0")
        assert [r.v for r in rows] == ["single 0"]
    finally:
        new_cluster.shutdown()
    assert missing_rows(session, keys, "ALL") == []
    cluster.shutdown()
