"""`nodetool garbagecollect`, `compactionstats` and `provide_overlapping_tombstones`
on a real node: data that a newer sstable deletes (ROW) or overwrites (CELL)
leaves the older sstable's files, reads stay the same, and the log says so."""

import os
import re
import subprocess
import time

from conftest import connect, varve_bin, nodetool

ROWS_PER_PARTITION = 25
PARTITIONS = 20
VALUE_BYTES = 1000


def stat(text, name):
    return int(re.search(rf"{name}: (\d+)", text).group(1))


def live_bytes(node, table):
    return stat(nodetool(node, "tablestats", table), "Space used \\(live\\)")


def fill(s, table):
    """PARTITIONS x ROWS_PER_PARTITION rows of VALUE_BYTES random bytes (hex)."""
    insert = s.prepare(f"INSERT INTO {table} (k, c, v) VALUES (?, ?, ?)")
    for k in range(PARTITIONS):
        for c in range(ROWS_PER_PARTITION):
            s.execute(insert, (k, c, os.urandom(VALUE_BYTES // 2).hex()))


def everything(s, table):
    return sorted(tuple(r) for r in s.execute(f"SELECT k, c, v FROM {table}"))


def test_garbagecollect_row_and_cell(start_varve, tmp_path):
    node = start_varve(data_dir=tmp_path / "gc-node")
    cluster = connect(node.host, node.port, 5)
    s = cluster.connect()
    s.execute("CREATE KEYSPACE g WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    # gc_grace_seconds stays at its default: no tombstone is purgeable, so
    # only shadowing can shrink the files.
    for t in ("rows", "cells"):
        s.execute(f"CREATE TABLE g.{t} (k int, c int, v text, PRIMARY KEY (k, c))")
        fill(s, f"g.{t}")
        nodetool(node, "flush", "g", t)

    # ROW: delete 18 of the 20 partitions in a newer sstable.
    for k in range(PARTITIONS - 2):
        s.execute("DELETE FROM g.rows WHERE k = %s", (k,))
    nodetool(node, "flush", "g", "rows")
    before_rows = everything(s, "g.rows")
    before = live_bytes(node, "g.rows")
    nodetool(node, "garbagecollect", "g", "rows")
    after = live_bytes(node, "g.rows")
    assert after < before * 0.2, (before, after)
    assert everything(s, "g.rows") == before_rows
    assert len(before_rows) == 2 * ROWS_PER_PARTITION
    log = node.log()
    assert "Starting Remove deleted data for g.rows" in log
    assert "Finished Remove deleted data for g.rows successfully" in log

    # CELL: overwrite every value with a short one in a newer sstable. ROW
    # granularity keeps the old versions, CELL drops them.
    update = s.prepare("UPDATE g.cells SET v = 'x' WHERE k = ? AND c = ?")
    for k in range(PARTITIONS):
        for c in range(ROWS_PER_PARTITION):
            s.execute(update, (k, c))
    nodetool(node, "flush", "g", "cells")
    before_cells = everything(s, "g.cells")
    before = live_bytes(node, "g.cells")
    nodetool(node, "garbagecollect", "-g", "ROW", "g", "cells")
    row_only = live_bytes(node, "g.cells")
    assert row_only > before * 0.8, (before, row_only)
    nodetool(node, "garbagecollect", "-g", "CELL", "-j", "2", "g", "cells")
    after = live_bytes(node, "g.cells")
    assert after < before * 0.3, (before, after)
    assert everything(s, "g.cells") == before_cells

    stats = nodetool(node, "compactionstats")
    assert re.search(r"pending tasks: \d+", stats), stats
    table_stats = nodetool(node, "tablestats", "g.cells")
    for line in ("SSTables in each level: [", "SSTable bytes in each level: [",
                 "Unleveled SSTables:", "Droppable tombstone ratio:", "Pending compactions:"):
        assert line in table_stats, table_stats

    bad = subprocess.run([varve_bin(), "nodetool", "-p", str(node.admin_port), "garbagecollect", "-g", "PAGE"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0
    cluster.shutdown()


def wait_for_sstables(node, table, count, timeout_s=60):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        n = stat(nodetool(node, "tablestats", table), "SSTable count")
        if n == count:
            return
        time.sleep(0.5)
    raise AssertionError(f"{table} never reached {count} sstables: {nodetool(node, 'tablestats', table)}")


def test_provide_overlapping_tombstones_row(start_varve, tmp_path):
    """Two big sstables of data compact together (STCS, min_threshold 2) while the
    small sstable of deletions stays out of the bucket: with ROW the output leaves
    the deleted rows out, with NONE it keeps them."""
    node = start_varve(data_dir=tmp_path / "pot-node")
    cluster = connect(node.host, node.port, 5)
    s = cluster.connect()
    s.execute("CREATE KEYSPACE p WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    sizes = {}
    for t, option in (("with_row", "ROW"), ("without", "NONE")):
        s.execute(f"CREATE TABLE p.{t} (k int, c int, v text, PRIMARY KEY (k, c)) "
                  "WITH compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}")
        fill(s, f"p.{t}")
        nodetool(node, "flush", "p", t)
        fill(s, f"p.{t}")  # the same rows again: a second sstable of the same size
        nodetool(node, "flush", "p", t)
        for k in range(PARTITIONS - 2):
            s.execute(f"DELETE FROM p.{t} WHERE k = %s", (k,))
        nodetool(node, "flush", "p", t)
        before = everything(s, f"p.{t}")
        s.execute(f"ALTER TABLE p.{t} WITH compaction = {{'class': 'SizeTieredCompactionStrategy', "
                  f"'min_threshold': '2', 'min_sstable_size': '1', "
                  f"'provide_overlapping_tombstones': '{option}'}}")
        wait_for_sstables(node, f"p.{t}", 2)
        sizes[t] = live_bytes(node, f"p.{t}")
        assert everything(s, f"p.{t}") == before
    # Both merged two copies of 20 partitions into one; ROW also dropped 18 of them.
    assert sizes["with_row"] < sizes["without"] * 0.3, sizes

    try:
        s.execute("ALTER TABLE p.without WITH compaction = {'class': 'SizeTieredCompactionStrategy', "
                  "'provide_overlapping_tombstones': 'PAGE'}")
        raise AssertionError("an invalid provide_overlapping_tombstones was accepted")
    except AssertionError:
        raise
    except Exception as e:  # noqa: BLE001 - the driver's InvalidRequest or ConfigurationException
        assert "provide_overlapping_tombstones" in str(e)
    cluster.shutdown()
