"""`max_index_interval` on a real node: with no `index_summary_capacity` to
spare, a table's partition summary thins out to max_index_interval /
min_index_interval of its entries, a table whose max equals its min keeps
them all, and every partition is still found by a point read."""

import re
import time

from conftest import connect, nodetool


def summary_bytes(node, table):
    text = nodetool(node, "tablestats", table)
    return int(re.search(r"Index summary off heap memory used: (\d+)", text).group(1))


def test_summaries_downsample_to_max_index_interval(start_varve, tmp_path):
    config = tmp_path / "summary.yaml"
    config.write_text("index_summary_capacity: 0MiB\n")
    node = start_varve("--config", str(config), data_dir=tmp_path / "summary-node")
    cluster = connect(node.host, node.port, 5)
    s = cluster.connect()
    s.execute("CREATE KEYSPACE i WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE i.fixed (k int PRIMARY KEY, v int) "
              "WITH min_index_interval = 4 AND max_index_interval = 4")
    s.execute("CREATE TABLE i.thin (k int PRIMARY KEY, v int) "
              "WITH min_index_interval = 4 AND max_index_interval = 64")
    n = 2000
    for table in ("fixed", "thin"):
        insert = s.prepare(f"INSERT INTO i.{table} (k, v) VALUES (?, ?)")
        for k in range(n):
            s.execute(insert, (k, k * 3))
        nodetool(node, "flush", "i", table)
    # The flusher thread fits summaries to the budget once a second.
    deadline = time.time() + 20
    while time.time() < deadline:
        fixed, thin = summary_bytes(node, "i.fixed"), summary_bytes(node, "i.thin")
        if thin * 10 < fixed:
            break
        time.sleep(0.3)
    assert fixed > 0
    # 500 blocks of 4 partitions; thin keeps every 16th (32 entries).
    assert thin * 12 < fixed < thin * 20, (fixed, thin)
    select = s.prepare("SELECT v FROM i.thin WHERE k = ?")
    missing = [k for k in range(n) if s.execute(select, (k,)).one() != (k * 3,)]
    assert missing == []
    assert s.execute("SELECT v FROM i.thin WHERE k = %s", (n + 5,)).one() is None
    assert s.execute("SELECT count(*) FROM i.thin").one()[0] == n
    cluster.shutdown()
