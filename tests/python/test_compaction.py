"""`nodetool compact` on a real node: sstables merge into one, deleted data
and (past gc_grace_seconds) its tombstones go, live data stays."""

import re

from conftest import connect, nodetool


def stat(text, name):
    return int(re.search(rf"{name}: (\d+)", text).group(1))


def test_major_compaction_merges_and_purges(start_varve, tmp_path):
    node = start_varve(data_dir=tmp_path / "compact-node")
    cluster = connect(node.host, node.port, 5)
    s = cluster.connect()
    s.execute("CREATE KEYSPACE c WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE c.t (k int, c int, v text, PRIMARY KEY (k, c)) WITH gc_grace_seconds = 0")
    insert = s.prepare("INSERT INTO c.t (k, c, v) VALUES (?, ?, ?)")
    for batch in range(3):
        for i in range(200):
            s.execute(insert, (i % 20, batch * 1000 + i, "x" * 200))
        nodetool(node, "flush", "c", "t")
    for k in range(10):
        s.execute("DELETE FROM c.t WHERE k = %s", (k,))
    nodetool(node, "flush", "c", "t")
    before = nodetool(node, "tablestats", "c.t")
    assert stat(before, "SSTable count") == 4
    nodetool(node, "compact", "c", "t")
    after = nodetool(node, "tablestats", "c.t")
    assert stat(after, "SSTable count") == 1
    # Half the partitions were deleted and gc_grace_seconds is 0: their data
    # and tombstones are gone from disk.
    assert stat(after, "Space used \\(live\\)") < stat(before, "Space used \\(live\\)") * 0.7
    assert s.execute("SELECT count(*) FROM c.t").one()[0] == 300
    assert s.execute("SELECT count(*) FROM c.t WHERE k = 3").one()[0] == 0
    assert s.execute("SELECT count(*) FROM c.t WHERE k = 13").one()[0] == 30
    cluster.shutdown()
    # And it all survives a restart.
    node.stop()
    node.start()
    cluster = connect(node.host, node.port, 5)
    s = cluster.connect()
    assert s.execute("SELECT count(*) FROM c.t").one()[0] == 300
    cluster.shutdown()


def test_compaction_throughput_is_read_and_changed_at_runtime(start_varve, tmp_path):
    config = tmp_path / "throughput.yaml"
    config.write_text("compaction_throughput: 32MiB/s\n")
    node = start_varve("--config", str(config), data_dir=tmp_path / "throughput-node")
    assert "32 MiB/s" in nodetool(node, "getcompactionthroughput")
    nodetool(node, "setcompactionthroughput", "0")
    assert "0 MiB/s" in nodetool(node, "getcompactionthroughput")
    nodetool(node, "setcompactionthroughput", "128")
    assert "128 MiB/s" in nodetool(node, "getcompactionthroughput")
