"""SIGKILL during background compactions: a node with many small sstables
compacting slowly (compaction_throughput 1 MiB/s, two compactors) is killed at
random moments, several rounds. After each restart every acknowledged row
reads back exactly once with its last value, deleted rows stay deleted, and
no temporary sstable file is left behind."""

import os
import random
import signal
import time
from pathlib import Path

from conftest import VarveNode, connect, nodetool

ROUNDS = 4
FLUSHES_PER_ROUND = 6
ROWS_PER_FLUSH = 60
# 4 KB values: an sstable holds ~240 KB, so at 1 MiB/s a compaction of a
# few of them runs for about a second, long enough to be killed inside.
VALUE_HEX_BYTES = 2000


def compaction_running(node):
    """Whether `compactionstats` lists a running compaction (its table
    header appears only then)."""
    return "compaction type" in nodetool(node, "compactionstats")


def leftovers(data_dir):
    return [p for p in Path(data_dir).rglob("*.tmp") if "commitlog" not in p.parts]


def test_sigkill_during_compactions_loses_and_resurrects_nothing(tmp_path):
    config = tmp_path / "crash.yaml"
    config.write_text("compaction_throughput: 1MiB/s\nconcurrent_compactors: 2\ncommitlog_sync: batch\n")
    node = VarveNode(tmp_path / "crash-node", ["--config", str(config)]).start()
    rng = random.Random(int(os.environ.get("VARVE_CRASH_SEED", "7")))
    expected = {}  # (k, c) -> value, acknowledged
    deleted = set()
    killed_mid_compaction = 0
    try:
        cluster = connect(node.host, node.port, 5)
        s = cluster.connect()
        s.execute("CREATE KEYSPACE x WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE x.t (k int, c int, v text, PRIMARY KEY (k, c)) WITH compaction = "
                  "{'class': 'SizeTieredCompactionStrategy', 'min_threshold': '2', 'min_sstable_size': '1'}")
        cluster.shutdown()
        for round_ in range(ROUNDS):
            cluster = connect(node.host, node.port, 5)
            s = cluster.connect()
            insert = s.prepare("INSERT INTO x.t (k, c, v) VALUES (?, ?, ?)")
            delete = s.prepare("DELETE FROM x.t WHERE k = ? AND c = ?")
            for f in range(FLUSHES_PER_ROUND):
                for _ in range(ROWS_PER_FLUSH):
                    k, c = rng.randrange(40), rng.randrange(50)
                    if rng.random() < 0.2:
                        s.execute(delete, (k, c))
                        expected.pop((k, c), None)
                        deleted.add((k, c))
                    else:
                        v = f"{round_}-{f}-" + os.urandom(VALUE_HEX_BYTES).hex()
                        s.execute(insert, (k, c, v))
                        expected[(k, c)] = v
                        deleted.discard((k, c))
                nodetool(node, "flush", "x", "t")
            cluster.shutdown()
            # Wait (bounded) for a compaction to run, then kill at a random
            # moment inside it.
            deadline = time.monotonic() + 10
            while not compaction_running(node) and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(rng.uniform(0.0, 0.3))
            killed_mid_compaction += compaction_running(node)
            node.stop(signal.SIGKILL)
            node.start()
            assert not leftovers(node.data_dir), leftovers(node.data_dir)
            cluster = connect(node.host, node.port, 5)
            s = cluster.connect()
            rows = list(s.execute("SELECT k, c, v FROM x.t"))
            got = {}
            for r in rows:
                assert (r.k, r.c) not in got, f"round {round_}: {(r.k, r.c)} read twice"
                got[(r.k, r.c)] = r.v
            assert got == expected, (
                f"round {round_}: missing {sorted(set(expected) - set(got))[:5]}, "
                f"resurrected {sorted(set(got) & deleted)[:5]}, "
                f"wrong {[key for key in expected if key in got and got[key] != expected[key]][:5]}"
            )
            cluster.shutdown()
        # The test is only worth its name if kills landed inside compactions
        # (seen running just before and just after the random pause).
        assert killed_mid_compaction >= ROUNDS // 2, killed_mid_compaction
    finally:
        node.stop(signal.SIGKILL)
