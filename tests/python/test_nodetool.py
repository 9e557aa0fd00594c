"""`varve nodetool` against a real node: what `tablestats` counts (partitions,
sstables, bloom filter false positives and ratio), its errors, and the `-h`
host flag."""

import re
import socket
import subprocess

from cassandra.concurrent import execute_concurrent_with_args

from conftest import make_keyspace, nodetool, varve_bin
from helpers import unique

PARTITIONS = 500
ABSENT_READS = 2000


def run_nodetool(*args):
    """`varve nodetool ARGS` as given (no -p added); the CompletedProcess."""
    return subprocess.run([varve_bin(), "nodetool", *args], capture_output=True, text=True, timeout=120)


def stat(text, name):
    """The value of tablestats line `name:` (a number), or fails."""
    match = re.search(rf"^\t\t{re.escape(name)}: (\S+)$", text, re.MULTILINE)
    assert match, f"no {name!r} line in:\n{text}"
    return match.group(1)


def table_stats(node, keyspace, table):
    text = nodetool(node, "tablestats", f"{keyspace}.{table}")
    assert f"\t\tTable: {table}\n" in text, text
    return text


def read_each(session, table, keys):
    """A point read of each key; returns how many found a row."""
    select = session.prepare(f"SELECT v FROM {table} WHERE k = ?")
    found = 0
    for ok, result in execute_concurrent_with_args(session, select, [(k,) for k in keys], concurrency=32):
        assert ok, result
        found += len(list(result))
    return found


def test_tablestats_memtable_cell_count_counts_operations(varve_server, session):
    """"Memtable cell count" counts what Cassandra counts: each update's rows,
    static row, range tombstones and partition deletion (not its cells), and
    starts again from 0 after a flush."""
    ks = make_keyspace(session)
    try:
        session.execute(f"CREATE TABLE {ks}.t (k int, c int, s int STATIC, a int, b int, "
                        "PRIMARY KEY (k, c))")
        insert = session.prepare(f"INSERT INTO {ks}.t (k, c, a, b) VALUES (?, ?, ?, ?)")
        for c in range(10):
            session.execute(insert, (1, c, c, c))  # a row of two cells: 1 each
        session.execute(f"INSERT INTO {ks}.t (k, c, s, a) VALUES (2, 0, 7, 7)")  # row + static: 2
        session.execute(f"UPDATE {ks}.t SET s = 8 WHERE k = 3")  # static row only: 1
        session.execute(f"DELETE FROM {ks}.t WHERE k = 1 AND c = 3")  # row deletion: 1
        session.execute(f"DELETE FROM {ks}.t WHERE k = 1 AND c > 5")  # range tombstone: 1
        session.execute(f"DELETE FROM {ks}.t WHERE k = 4")  # partition deletion: 1
        assert int(stat(table_stats(varve_server, ks, "t"), "Memtable cell count")) == 10 + 2 + 1 + 1 + 1 + 1
        nodetool(varve_server, "flush", ks, "t")
        assert int(stat(table_stats(varve_server, ks, "t"), "Memtable cell count")) == 0
        session.execute(insert, (5, 0, 0, 0))
        assert int(stat(table_stats(varve_server, ks, "t"), "Memtable cell count")) == 1
    finally:
        session.execute(f"DROP KEYSPACE {ks}")


def test_tablestats_partitions_and_bloom_filter(varve_server, session):
    """PARTITIONS partitions flushed into one sstable: tablestats counts them
    all; reads of present keys are never false positives; ABSENT_READS reads
    of absent keys make at most as many false positives (exactly as many when
    bloom_filter_fp_chance = 1, a filter that lets every key through), and the
    ratio is false / (false + true) positives."""
    ks = make_keyspace(session)
    try:
        for table, fp_chance in (("filtered", 0.01), ("unfiltered", 1.0)):
            session.execute(f"CREATE TABLE {ks}.{table} (k int PRIMARY KEY, v int) "
                            f"WITH bloom_filter_fp_chance = {fp_chance}")
            insert = session.prepare(f"INSERT INTO {ks}.{table} (k, v) VALUES (?, ?)")
            for ok, result in execute_concurrent_with_args(
                    session, insert, [(k, k) for k in range(PARTITIONS)], concurrency=32):
                assert ok, result
            before = table_stats(varve_server, ks, table)
            assert stat(before, "SSTable count") == "0"
            assert int(stat(before, "Number of partitions (estimate)")) == PARTITIONS  # in the memtable
            nodetool(varve_server, "flush", ks, table)
            flushed = table_stats(varve_server, ks, table)
            assert stat(flushed, "SSTable count") == "1"
            assert int(stat(flushed, "Number of partitions (estimate)")) == PARTITIONS
            assert int(stat(flushed, "Bloom filter false positives")) == 0
            assert float(stat(flushed, "Bloom filter false ratio")) == 0.0

            # Every present key: one true positive each, no false one.
            assert read_each(session, f"{ks}.{table}", range(PARTITIONS)) == PARTITIONS
            present = table_stats(varve_server, ks, table)
            assert int(stat(present, "Bloom filter false positives")) == 0
            assert float(stat(present, "Bloom filter false ratio")) == 0.0

            absent_keys = range(PARTITIONS, PARTITIONS + ABSENT_READS)
            assert read_each(session, f"{ks}.{table}", absent_keys) == 0
            after = table_stats(varve_server, ks, table)
            false_positives = int(stat(after, "Bloom filter false positives"))
            assert 0 <= false_positives <= ABSENT_READS
            if fp_chance == 1.0:
                assert false_positives == ABSENT_READS
            else:
                # A 1% filter passes about 20 of 2000; a quarter would mean it filters nothing much.
                assert false_positives < ABSENT_READS // 4, false_positives
            ratio = float(stat(after, "Bloom filter false ratio"))
            assert abs(ratio - false_positives / (false_positives + PARTITIONS)) <= 0.5e-5, (ratio, false_positives)
            assert int(stat(after, "Number of partitions (estimate)")) == PARTITIONS
            assert stat(after, "SSTable count") == "1"

        # The keyspace alone: both tables, under it.
        text = nodetool(varve_server, "tablestats", ks)
        assert "Total number of tables: 2\n" in text, text
        assert f"Keyspace : {ks}\n" in text, text
        assert "\t\tTable: filtered\n" in text and "\t\tTable: unfiltered\n" in text, text
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {ks}")


def test_tablestats_unknown_names_fail(varve_server, session, keyspace):
    table = unique("known")
    session.execute(f"CREATE TABLE {table} (k int PRIMARY KEY)")
    port = str(varve_server.admin_port)
    out = run_nodetool("-p", port, "tablestats", f"{keyspace}.no_such_table")
    assert out.returncode != 0
    assert "no_such_table" in out.stderr and "Unknown table" in out.stderr, out.stderr
    assert out.stderr.count("Unknown table") == 1, f"the error is printed once:\n{out.stderr}"
    assert "Table:" not in out.stdout, out.stdout
    out = run_nodetool("-p", port, "tablestats", f"no_such_keyspace.{table}")
    assert out.returncode != 0
    assert "no_such_keyspace" in out.stderr and "does not exist" in out.stderr, out.stderr
    out = run_nodetool("-p", port, "tablestats", "no_such_keyspace")
    assert out.returncode != 0
    assert "no_such_keyspace" in out.stderr, out.stderr


def test_host_flag(varve_server, session, keyspace):
    """-h/--host picks the node's address: the node (on 127.0.0.1) answers
    there and not on 127.0.0.3 with the same port; a port where nothing
    listens fails with the address in the message."""
    table = unique("host")
    session.execute(f"CREATE TABLE {table} (k int PRIMARY KEY, v int)")
    session.execute(f"INSERT INTO {table} (k, v) VALUES (1, 1)")
    port = str(varve_server.admin_port)
    host = varve_server.host
    assert host == "127.0.0.1"

    out = run_nodetool("-h", host, "-p", port, "tablestats", f"{keyspace}.{table}")
    assert out.returncode == 0, out.stderr
    assert stat(out.stdout, "SSTable count") == "0"
    out = run_nodetool("-h", host, "-p", port, "flush", keyspace, table)
    assert out.returncode == 0, out.stderr
    out = run_nodetool("--host", host, "-p", port, "tablestats", f"{keyspace}.{table}")
    assert out.returncode == 0, out.stderr
    assert stat(out.stdout, "SSTable count") == "1"  # the flush through -h happened

    # Another loopback address, where the node does not listen.
    out = run_nodetool("-h", "127.0.0.3", "-p", port, "tablestats", f"{keyspace}.{table}")
    assert out.returncode != 0
    assert f"127.0.0.3:{port}" in out.stderr, out.stderr
    assert out.stdout == ""
    out = run_nodetool("-h", "127.0.0.3", "-p", port, "flush", keyspace, table)
    assert out.returncode != 0
    assert f"127.0.0.3:{port}" in out.stderr, out.stderr

    # A port that is bound but not listening: the connection is refused.
    with socket.socket() as idle:
        idle.bind(("127.0.0.1", 0))
        idle_port = idle.getsockname()[1]
        out = run_nodetool("-h", "127.0.0.1", "-p", str(idle_port), "tablestats")
    assert out.returncode != 0
    assert f"127.0.0.1:{idle_port}" in out.stderr, out.stderr
