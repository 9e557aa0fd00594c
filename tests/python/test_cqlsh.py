"""cqlsh (from PyPI, the venv's `cqlsh` executable) against a real `varve server`.

- a script run with `-f` and statements run with `-e`: the printed tables of
  SELECT, DESCRIBE KEYSPACES and DESCRIBE TABLE;
- the schema round trip: a keyspace with several tables (composite keys,
  DESC clustering, static columns, collections, tuples, LCS/TWCS compaction,
  a comment with quotes, quoted names, ...) is described, the DESCRIBE
  KEYSPACE output is replayed with `cqlsh -f` on a fresh node, and
  describing it there prints the very same text.

cqlsh prints "WARNING: cqlsh was built against X, but this server is Y" on
stdout whenever the server's release_version is not exactly the one cqlsh was
built for (it does so against real Cassandra too); `output()` drops that line.
"""

import os
import subprocess
import sys

import pytest

from helpers import unique

CQLSH = os.path.join(os.path.dirname(sys.executable), "cqlsh")
CQLSH_TIMEOUT_S = 60
VERSION_WARNING = "WARNING: cqlsh was built against "


def run_cqlsh(addr, *args, home, check=True):
    """Runs cqlsh on `addr` with `args`; returns the CompletedProcess.

    HOME points at a test directory so no user cqlshrc or history is read."""
    host, port = addr
    assert os.access(CQLSH, os.X_OK), f"cqlsh not found at {CQLSH}: pip install -r tests/python/requirements.txt"
    env = dict(os.environ, HOME=str(home))
    proc = subprocess.run(
        [CQLSH, host, str(port), "--connect-timeout", "20", "--request-timeout", "20", *args],
        capture_output=True, text=True, timeout=CQLSH_TIMEOUT_S, env=env, stdin=subprocess.DEVNULL,
    )
    if check:
        assert proc.returncode == 0 and not proc.stderr.strip(), (
            f"cqlsh {' '.join(args)} exited {proc.returncode}\n"
            f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        )
    return proc


def output(proc):
    """cqlsh's stdout without the build-version warning line."""
    return "".join(line for line in proc.stdout.splitlines(keepends=True) if not line.startswith(VERSION_WARNING))


def lines(proc):
    """The non-empty output lines, right-stripped."""
    return [line.rstrip() for line in output(proc).splitlines() if line.strip()]


@pytest.fixture
def home(tmp_path):
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.mark.parametrize("protocol_version", [4, 5], ids=lambda v: f"v{v}")
def test_script_file_prints_select_results(varve_addr, home, tmp_path, protocol_version):
    ks = unique("cqlsh")
    script = tmp_path / "script.cql"
    script.write_text(f"""
CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}};
USE {ks};
CREATE TABLE t (k int, c int, v text, s set<int>, PRIMARY KEY (k, c));
INSERT INTO t (k, c, v, s) VALUES (1, 1, 'one', {{3, 1, 2}});
INSERT INTO t (k, c, v) VALUES (1, 2, 'it''s two');
INSERT INTO t (k, c) VALUES (2, 1);
SELECT * FROM t WHERE k = 1;
SELECT k, c, v FROM t WHERE k = 2;
SELECT count(*) FROM t WHERE k = 1;
""")
    proc = run_cqlsh(varve_addr, "--protocol-version", str(protocol_version), "-f", str(script), home=home)
    assert lines(proc) == [
        " k | c | s         | v",
        "---+---+-----------+----------",
        " 1 | 1 | {1, 2, 3} |      one",
        " 1 | 2 |      null | it's two",
        "(2 rows)",
        " k | c | v",
        "---+---+------",
        " 2 | 1 | null",
        "(1 rows)",
        " count",
        "-------",
        "     2",
        "(1 rows)",
    ], output(proc)


def test_execute_option_select_and_describe(varve_addr, home):
    ks = unique("cqlsh")
    run_cqlsh(varve_addr, "-e", (
        f"CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}};"
        f"CREATE TABLE {ks}.kv (k text PRIMARY KEY, v bigint);"
        f"INSERT INTO {ks}.kv (k, v) VALUES ('a', -5);"
    ), home=home)

    proc = run_cqlsh(varve_addr, "-e", f"SELECT k, v FROM {ks}.kv", home=home)
    assert lines(proc) == [" k | v", "---+----", " a | -5", "(1 rows)"], output(proc)

    proc = run_cqlsh(varve_addr, "-e", "DESCRIBE KEYSPACES", home=home)
    names = output(proc).split()
    for name in (ks, "system", "system_schema"):
        assert name in names, output(proc)

    proc = run_cqlsh(varve_addr, "-e", f"DESCRIBE TABLE {ks}.kv", home=home)
    described = lines(proc)
    assert described[:4] == [
        f"CREATE TABLE {ks}.kv (",
        "    k text PRIMARY KEY,",
        "    v bigint",
        ") WITH additional_write_policy = '99p'",
    ], output(proc)
    assert described[-1].endswith(";"), output(proc)
    for option in (
        "    AND compaction = {'class': 'org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy', "
        "'max_threshold': '32', 'min_threshold': '4'}",
        "    AND gc_grace_seconds = 864000",
        "    AND comment = ''",
    ):
        assert option in described, output(proc)


def test_cqlsh_reports_server_errors(varve_addr, home):
    proc = run_cqlsh(varve_addr, "-e", "SELECT * FROM no_such_keyspace_xyz.t", home=home, check=False)
    assert proc.returncode != 0
    assert "InvalidRequest" in proc.stderr and "no_such_keyspace_xyz" in proc.stderr, proc.stderr
    proc = run_cqlsh(varve_addr, "-e", "SELEKT 1", home=home, check=False)
    assert proc.returncode != 0
    assert "SyntaxException" in proc.stderr, proc.stderr


ROUND_TRIP_SCHEMA = """
CREATE KEYSPACE {ks} WITH replication = {{'class': 'NetworkTopologyStrategy', 'datacenter1': 1}}
    AND durable_writes = false;
USE {ks};
CREATE TABLE events (
    tenant text, day date, bucket int,
    at timestamp, seq bigint,
    owner text static,
    payload blob, tags set<text>, attrs map<text, int>,
    history list<frozen<tuple<int, text>>>, location frozen<tuple<double, double>>,
    PRIMARY KEY ((tenant, day, bucket), at, seq)
) WITH CLUSTERING ORDER BY (at DESC, seq ASC)
    AND compaction = {{'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': '160'}}
    AND comment = 'it''s the "events" table'
    AND gc_grace_seconds = 3600
    AND default_time_to_live = 86400;
CREATE TABLE simple (
    id uuid PRIMARY KEY, name text, n varint, d decimal, f float, db double, ip inet, dur duration,
    t time, ts timestamp, tu timeuuid, b boolean, ti tinyint, si smallint, a ascii, vc varchar,
    fl frozen<list<int>>, fs frozen<set<text>>, m map<timeuuid, frozen<map<text, blob>>>
) WITH caching = {{'keys': 'NONE', 'rows_per_partition': '10'}}
    AND speculative_retry = '50ms'
    AND compression = {{'enabled': 'false'}};
CREATE TABLE "MixedCase" (
    "Key" int, "Col" text, "select" int, v frozen<map<int, frozen<list<text>>>>,
    PRIMARY KEY ("Key", "Col", "select")
) WITH CLUSTERING ORDER BY ("Col" DESC, "select" ASC)
    AND compaction = {{'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'HOURS',
                      'compaction_window_size': '6'}}
    AND bloom_filter_fp_chance = 0.1
    AND read_repair = 'NONE';
CREATE TABLE stat (
    k int, c1 int, c2 text, s1 int static, s2 list<text> static, v tuple<int, text, boolean>,
    PRIMARY KEY (k, c1, c2)
) WITH CLUSTERING ORDER BY (c1 DESC, c2 DESC)
    AND compression = {{'class': 'ZstdCompressor', 'chunk_length_in_kb': '64'}}
    AND min_index_interval = 64 AND max_index_interval = 1024
    AND memtable_flush_period_in_ms = 3600000
    AND crc_check_chance = 0.5;
"""

# What the described schema must show, so the round trip cannot pass on an
# empty or truncated DESCRIBE.
ROUND_TRIP_MARKERS = (
    "AND durable_writes = false",
    "CREATE TABLE {ks}.events (",
    "CREATE TABLE {ks}.simple (",
    'CREATE TABLE {ks}."MixedCase" (',
    "CREATE TABLE {ks}.stat (",
    "PRIMARY KEY ((tenant, day, bucket), at, seq)",
    "WITH CLUSTERING ORDER BY (at DESC, seq ASC)",
    "owner text static,",
    "s2 list<text> static,",
    "history list<frozen<tuple<int, text>>>,",
    "AND comment = 'it''s the \"events\" table'",
    "org.apache.cassandra.db.compaction.LeveledCompactionStrategy",
    "'sstable_size_in_mb': '160'",
    "org.apache.cassandra.db.compaction.TimeWindowCompactionStrategy",
    "WITH CLUSTERING ORDER BY (\"Col\" DESC, \"select\" ASC)",
    "AND speculative_retry = '50ms'",
    "AND compression = {'enabled': 'false'}",
)


def test_describe_keyspace_replays_on_a_fresh_node(varve_addr, start_varve, home, tmp_path):
    ks = unique("rt")
    schema = tmp_path / "schema.cql"
    schema.write_text(ROUND_TRIP_SCHEMA.format(ks=ks))
    run_cqlsh(varve_addr, "-f", str(schema), home=home)
    first = output(run_cqlsh(varve_addr, "-e", f"DESCRIBE KEYSPACE {ks}", home=home))
    for marker in ROUND_TRIP_MARKERS:
        assert marker.replace("{ks}", ks) in first, f"{marker!r} missing from DESCRIBE KEYSPACE:\n{first}"

    fresh = start_varve()
    replay = tmp_path / "described.cql"
    replay.write_text(first)
    run_cqlsh((fresh.host, fresh.port), "-f", str(replay), home=home)
    second = output(run_cqlsh((fresh.host, fresh.port), "-e", f"DESCRIBE KEYSPACE {ks}", home=home))

    assert second == first
