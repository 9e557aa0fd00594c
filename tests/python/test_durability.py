"""Durability of the real server process (issue 3): SIGKILL under write load,
drain, flush by memory budget, a corrupt sstable chunk, a torn commitlog tail,
TRUNCATE and DROP across a crash.

The crash tests are seeded: the seed is printed (pytest shows it for a failing
test) and `VARVE_DURABILITY_SEED=N` replays the same schedule (the timing of a
kill against the server's progress still varies from run to run)."""

import os
import random
import re
import signal
import struct
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import connect, varve_bin

PROTOCOL = 5
KS_CQL = "CREATE KEYSPACE {} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
WRITER_THREADS = 4
REPLAYED_RE = re.compile(r"replayed (\d+) commitlog entries")


# ---------------------------------------------------------------- helpers


def write_config(path, **settings):
    """A YAML config file with `settings` (values written as they are)."""
    path = Path(path)
    path.write_text("".join(f"{k}: {v}\n" for k, v in settings.items()))
    return str(path)


def start_with(start_varve, tmp_path, name, **settings):
    """A fresh node with a config file holding `settings`."""
    cfg = write_config(tmp_path / f"{name}.yaml", **settings)
    return start_varve("--config", cfg, data_dir=tmp_path / name)


def nodetool(node, *args, check=True):
    out = subprocess.run([varve_bin(), "nodetool", "-p", str(node.admin_port), *args],
                         capture_output=True, text=True, timeout=120)
    if check:
        assert out.returncode == 0, f"nodetool {args} failed: {out.stdout}{out.stderr}"
    return out


def open_session(node, keyspace=None):
    cluster = connect(node.host, node.port, PROTOCOL)
    session = cluster.connect(keyspace)
    return cluster, session


def log_since_last_start(node):
    return node.log()[node._log_offset:]


def replayed_count(node):
    """N of 'replayed N commitlog entries' in the log of the last start, or 0."""
    return sum(int(m) for m in REPLAYED_RE.findall(log_since_last_start(node)))


def restart(node, sig=signal.SIGKILL):
    code = node.stop(sig)
    if sig == signal.SIGTERM:
        assert code == 0, f"varve exited with {code} on SIGTERM:\n{node.log_tail()}"
    node.start()


def table_dir(node, ks, table):
    dirs = list((node.data_dir / ks).glob(f"{table}-*"))
    assert len(dirs) == 1, dirs
    return dirs[0]


def select_all(session, table, columns="k, v"):
    return {r[0]: tuple(r[1:]) for r in session.execute(f"SELECT {columns} FROM {table}")}


def seed_from_env():
    seed = int(os.environ.get("VARVE_DURABILITY_SEED") or random.SystemRandom().randrange(1 << 32))
    print(f"seed = {seed} (VARVE_DURABILITY_SEED={seed} to replay)")
    return seed


# ---------------------------------------------------------------- 1. crash under load


class KeyModel:
    """What a key may read as: `base` (values allowed before `ops`: the value
    observed at the last check, or absent for a new key), then the writes issued
    to it since, in order, each (value, acked). A delete's value is None.
    One writer thread owns each key, so its writes are issued one after another,
    and the driver's client timestamps order them as issued."""

    __slots__ = ("base", "ops")

    def __init__(self):
        self.base = {None}
        self.ops = []

    def allowed(self):
        """The values the key may read as: the last acknowledged write or any
        later one (whose outcome is unknown)."""
        last_ack = max((i for i, (_, acked) in enumerate(self.ops) if acked), default=None)
        if last_ack is None:
            return self.base | {v for v, _ in self.ops}
        return {self.ops[last_ack][0]} | {v for v, _ in self.ops[last_ack + 1:]}


class Writer(threading.Thread):
    """Inserts new keys, overwrites and deletes its own keys (k % WRITER_THREADS
    == index) until `stop` is set; records each write before sending it, then
    marks it acknowledged when the driver says so. A write that raised stays
    unknown."""

    def __init__(self, index, rng, session, stmts, models, next_key, tag, stop):
        super().__init__(daemon=True)
        self.index, self.rng, self.session, self.stmts = index, rng, session, stmts
        self.models, self.next_key, self.tag, self.stop = models, next_key, tag, stop
        self.acked = self.unknown = 0
        self.errors = []

    def run(self):
        own = [k for k in self.models if k % WRITER_THREADS == self.index]
        seq = 0
        while not self.stop.is_set():
            seq += 1
            r = self.rng.random()
            if not own or r < 0.45:
                k = self.next_key[self.index]
                self.next_key[self.index] += WRITER_THREADS
                own.append(k)
                self.models[k] = KeyModel()
                value = (seq, f"{self.tag}-{k}-{seq}-" + "x" * self.rng.randrange(200))
                stmt, params = self.stmts[table_of(k)][0], (k, *value)
            elif r < 0.85:
                k = self.rng.choice(own)
                value = (seq, f"{self.tag}-{k}-{seq}u-" + "y" * self.rng.randrange(200))
                stmt, params = self.stmts[table_of(k)][1], (*value, k)
            else:
                k = self.rng.choice(own)
                value = None
                stmt, params = self.stmts[table_of(k)][2], (k,)
            ops = self.models[k].ops
            ops.append((value, False))
            try:
                self.session.execute(stmt, params)
            except Exception as e:  # noqa: BLE001 - any failure leaves the outcome unknown
                self.unknown += 1
                self.errors.append(repr(e)[:200])
                if len(self.errors) > 3 or self.stop.is_set():
                    return
                time.sleep(0.05)
                continue
            ops[-1] = (value, True)
            self.acked += 1


def table_of(k):
    """Keys live in two tables (t gets three quarters), so replay positions and
    segment release are per table and a flush of one table only matters."""
    return "u" if (k // WRITER_THREADS) % 4 == 0 else "t"


def check_against_models(session, models, seed, round_no):
    """Every key reads as one of its allowed values; no unknown key appears.
    Then each model's base becomes what was read (it is settled now)."""
    rows = {}
    problems = []
    for table in ("t", "u"):
        for k, v, w in session.execute(f"SELECT k, v, w FROM {table}"):
            rows[k] = (v, w)
            if k not in models or table_of(k) != table:
                problems.append(f"key {k} was never written to {table} but reads as {(v, w)}")
    for k, model in models.items():
        got = rows.get(k)
        allowed = model.allowed()
        if got not in allowed:
            acked = [v for v, a in model.ops if a]
            problems.append(f"key {k}: read {got}, allowed {sorted(map(str, allowed))[:4]}, "
                            f"{len(model.ops)} writes since last check, last acked {acked[-1:]}")
    assert not problems, (f"seed {seed}, after round {round_no}: {len(problems)} wrong keys "
                          f"of {len(models)}:\n" + "\n".join(problems[:15]))
    for k, model in models.items():
        model.base = {rows.get(k)}
        model.ops = []
    return len(rows)


# Rounds: what happens before the SIGKILL. "flush": a nodetool flush of both
# tables in the middle of the load, then more writes; "flush-t": the same for
# table t only; "kill-in-flush": the kill lands while a flush may still run.
CRASH_VARIANTS = {
    "batch": (dict(commitlog_sync="batch"),
              ["plain", "flush", "kill-in-flush", "flush-t", "plain", "flush"]),
    "group": (dict(commitlog_sync="group", commitlog_sync_group_window="15ms"),
              ["flush-t", "plain", "kill-in-flush", "flush", "plain"]),
    # Small segments and a small memtable budget: the kill also lands in the
    # middle of background flushes, segment switches and segment releases.
    "batch-small": (dict(commitlog_sync="batch", commitlog_segment_size="64KiB",
                         memtable_heap_space="256KiB"),
                    ["plain", "flush-t", "plain", "kill-in-flush", "plain", "plain"]),
    # SIGKILL keeps the page cache: whatever reached the segment file with
    # write() survives it, fsynced or not. A periodic append is acknowledged
    # only once the appending thread has written it to the segment file, so
    # periodic mode too must keep every acknowledged write. (A power loss may
    # lose up to commitlog_sync_period, simulated by the storage crate's model
    # test, not here.)
    "periodic": (dict(commitlog_sync="periodic", commitlog_sync_period="10000ms"),
                 ["flush", "plain"]),
}


@pytest.mark.parametrize("variant", list(CRASH_VARIANTS))
def test_sigkill_under_load_loses_no_acknowledged_write(start_varve, tmp_path, variant):
    seed = seed_from_env()
    rng = random.Random(f"{seed}-{variant}")
    settings, plans = CRASH_VARIANTS[variant]
    node = start_with(start_varve, tmp_path, f"crash-{variant}", **settings)
    cluster, s = open_session(node)
    s.execute(KS_CQL.format("crash"))
    for table in ("t", "u"):
        s.execute(f"CREATE TABLE crash.{table} (k int PRIMARY KEY, v int, w text)")
    cluster.shutdown()

    models = {}
    next_key = list(range(WRITER_THREADS))
    began = time.monotonic()
    for round_no, plan in enumerate(plans):
        cluster, s = open_session(node, "crash")
        if round_no > 0:
            seen = check_against_models(s, models, seed, round_no - 1)
            print(f"round {round_no - 1} checked: {seen} rows, replayed {replayed_count(node)}")
        stmts = {table: (s.prepare(f"INSERT INTO {table} (k, v, w) VALUES (?, ?, ?)"),
                         s.prepare(f"UPDATE {table} SET v = ?, w = ? WHERE k = ?"),
                         s.prepare(f"DELETE FROM {table} WHERE k = ?"))
                 for table in ("t", "u")}
        stop = threading.Event()
        writers = [Writer(i, random.Random(rng.random()), s, stmts, models, next_key,
                          f"r{round_no}", stop) for i in range(WRITER_THREADS)]
        for w in writers:
            w.start()
        time.sleep(rng.uniform(0.3, 2.0))
        flush = None
        if plan in ("flush", "flush-t"):
            nodetool(node, "flush", *(["crash", "t"] if plan == "flush-t" else []))
            time.sleep(rng.uniform(0.2, 1.0))
        elif plan == "kill-in-flush":
            flush = subprocess.Popen([varve_bin(), "nodetool", "-p", str(node.admin_port), "flush"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0.0, 0.15))
        node.stop(signal.SIGKILL)
        stop.set()
        for w in writers:
            w.join(timeout=30)
            assert not w.is_alive(), f"seed {seed}: writer {w.index} hung after the kill"
        if flush is not None:
            flush.wait(timeout=30)
        cluster.shutdown()
        acked = sum(w.acked for w in writers)
        print(f"round {round_no} ({plan}): {acked} acked, {sum(w.unknown for w in writers)} unknown, "
              f"errors {[e for w in writers for e in w.errors][:2]}")
        assert acked > 0, f"seed {seed}: no write was acknowledged in round {round_no}"
        node.start()
    cluster, s = open_session(node, "crash")
    seen = check_against_models(s, models, seed, len(plans) - 1)
    print(f"final check: {seen} rows of {len(models)} keys, {time.monotonic() - began:.1f}s")
    cluster.shutdown()


# ---------------------------------------------------------------- 2. drain


def test_drain_then_restart_replays_nothing(start_varve, tmp_path):
    node = start_varve(data_dir=tmp_path / "drain")
    cluster, s = open_session(node)
    s.execute(KS_CQL.format("dr"))
    s.execute("CREATE TABLE dr.t (k int, c int, v text, PRIMARY KEY (k, c))")
    ins = s.prepare("INSERT INTO dr.t (k, c, v) VALUES (?, ?, ?)")
    expected = {}
    for i in range(600):
        k, c = i % 37, i
        expected[(k, c)] = f"v{i}"
        s.execute(ins, (k, c, f"v{i}"))
    s.execute("DELETE FROM dr.t WHERE k = 5")
    expected = {kc: v for kc, v in expected.items() if kc[0] != 5}
    cluster.shutdown()

    nodetool(node, "drain")
    restart(node, signal.SIGTERM)
    assert replayed_count(node) == 0, log_since_last_start(node)
    cluster, s = open_session(node)
    got = {(r.k, r.c): r.v for r in s.execute("SELECT k, c, v FROM dr.t")}
    assert got == expected

    # Drain is what makes a restart cheap, not SIGTERM: after a drain even a
    # SIGKILL leaves nothing to replay.
    for i in range(600, 700):
        s.execute(ins, (i % 37, i, f"v{i}"))
        expected[(i % 37, i)] = f"v{i}"
    cluster.shutdown()
    nodetool(node, "drain")
    restart(node, signal.SIGKILL)
    assert replayed_count(node) == 0, log_since_last_start(node)
    cluster, s = open_session(node)
    assert {(r.k, r.c): r.v for r in s.execute("SELECT k, c, v FROM dr.t")} == expected
    cluster.shutdown()


def segments(node):
    return {p.name: p.stat().st_size for p in (node.data_dir / "commitlog").glob("CommitLog-*.log")}


def test_flushed_commitlog_segments_are_released_after_restart(start_varve, tmp_path):
    """A segment is released once every memtable it covers is flushed: after a
    drain nothing is unflushed, so once the restarted node has flushed (a drain
    again, with no write in between) no segment of before the restart is left.
    Without that, every restart leaves one more segment behind for good, and each
    later start reads them all again."""
    node = start_varve(data_dir=tmp_path / "release")
    cluster, s = open_session(node)
    s.execute(KS_CQL.format("rl"))
    s.execute("CREATE TABLE rl.t (k int PRIMARY KEY, v text)")
    ins = s.prepare("INSERT INTO rl.t (k, v) VALUES (?, ?)")
    for k in range(100):
        s.execute(ins, (k, "v"))
    cluster.shutdown()
    nodetool(node, "drain")
    before = segments(node)
    restart(node, signal.SIGTERM)
    assert replayed_count(node) == 0
    nodetool(node, "drain")
    left = set(before) & set(segments(node))
    assert not left, f"flushed segments kept after restart and drain: {sorted(left)}"


# ---------------------------------------------------------------- 3. memory budget


def sstable_count(node, name):
    out = nodetool(node, "tablestats", name).stdout
    m = re.search(r"SSTable count: (\d+)", out)
    assert m, out
    return int(m.group(1))


def test_memtable_budget_flushes_without_nodetool(start_varve, tmp_path):
    from cassandra.concurrent import execute_concurrent_with_args

    node = start_with(start_varve, tmp_path, "budget", memtable_heap_space="1MiB")
    cluster, s = open_session(node)
    s.execute(KS_CQL.format("mb"))
    s.execute("CREATE TABLE mb.t (k int PRIMARY KEY, b blob)")
    ins = s.prepare("INSERT INTO mb.t (k, b) VALUES (?, ?)")
    rng = random.Random(7)
    expected = {k: rng.randbytes(1000) for k in range(5000)}  # ~5 MB
    results = execute_concurrent_with_args(s, ins, list(expected.items()), concurrency=32,
                                           raise_on_first_error=True)
    assert all(ok for ok, _ in results)
    deadline = time.monotonic() + 10
    while (count := sstable_count(node, "mb.t")) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert count >= 2, f"only {count} sstables after 5 MB with a 1 MiB budget"
    data_files = list(table_dir(node, "mb", "t").glob("*.sst"))
    assert len(data_files) >= 2, data_files
    assert select_all(s, "mb.t", "k, b") == {k: (b,) for k, b in expected.items()}
    cluster.shutdown()

    restart(node, signal.SIGKILL)
    cluster, s = open_session(node)
    assert select_all(s, "mb.t", "k, b") == {k: (b,) for k, b in expected.items()}
    assert sstable_count(node, "mb.t") >= 2
    cluster.shutdown()


# ---------------------------------------------------------------- 4. corrupt sstable chunk

FOOTER_LEN = 156


def read_varint(buf, pos):
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def sstable_layout(data):
    """(chunk_length, chunk file offsets, data section end, [(key bytes, stream
    position, entry length)]) from an sstable image, per docs/format/sstable.md."""
    footer = data[-FOOTER_LEN:]
    assert footer[-8:] == b"VARVESST"
    chunk_length = struct.unpack(">I", footer[4:8])[0]
    sections = [struct.unpack(">QQI", footer[24 + 20 * i: 44 + 20 * i]) for i in range(6)]
    (data_off, data_len, _), (co_off, _, _), (idx_off, idx_len, _) = sections[:3]
    count = struct.unpack(">Q", data[co_off:co_off + 8])[0]
    offsets = list(struct.unpack(f">{count}Q", data[co_off + 8:co_off + 8 + 8 * count]))
    entries = []
    pos, end = idx_off, idx_off + idx_len
    while pos < end:
        n, pos = read_varint(data, pos)
        for _ in range(n):
            key_len = struct.unpack(">H", data[pos + 8:pos + 10])[0]
            key = bytes(data[pos + 10:pos + 10 + key_len])
            pos += 10 + key_len
            position, pos = read_varint(data, pos)
            length, pos = read_varint(data, pos)
            entries.append((key, position, length))
        pos += 4  # block CRC
    return chunk_length, offsets, data_off + data_len, entries


def server_error(e):
    """The server's error inside the driver's NoHostAvailable (the driver retries
    a ServerError on the next host and, having none, wraps it)."""
    from cassandra.cluster import NoHostAvailable

    if isinstance(e, NoHostAvailable) and len(e.errors) == 1:
        return next(iter(e.errors.values()))
    return e


def test_flipped_byte_in_sstable_chunk_fails_only_that_chunk(start_varve, tmp_path):
    from cassandra.concurrent import execute_concurrent_with_args

    node = start_varve(data_dir=tmp_path / "corrupt")
    cluster, s = open_session(node)
    s.execute(KS_CQL.format("cr"))
    for t in ("a", "b"):
        s.execute(f"CREATE TABLE cr.{t} (k int PRIMARY KEY, v text)"
                  " WITH compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 4}")
    rng = random.Random(11)
    expected = {k: rng.randbytes(40).hex() for k in range(3000)}
    for t in ("a", "b"):
        ins = s.prepare(f"INSERT INTO cr.{t} (k, v) VALUES (?, ?)")
        execute_concurrent_with_args(s, ins, list(expected.items()), concurrency=32,
                                     raise_on_first_error=True)
    assert select_all(s, "cr.a") == {k: (v,) for k, v in expected.items()}
    assert select_all(s, "cr.b") == {k: (v,) for k, v in expected.items()}
    cluster.shutdown()
    nodetool(node, "flush", "cr")
    node.stop(signal.SIGTERM)

    files = list(table_dir(node, "cr", "a").glob("*.sst"))
    assert len(files) == 1, files
    path = files[0]
    data = bytearray(path.read_bytes())
    chunk_length, offsets, data_end, entries = sstable_layout(data)
    assert len(offsets) >= 8, f"want several chunks, got {len(offsets)}"
    flip_at = (16 + data_end) // 2
    chunk = max(i for i, off in enumerate(offsets) if off <= flip_at)
    data[flip_at] ^= 0x5A
    path.write_bytes(data)
    lo, hi = chunk * chunk_length, (chunk + 1) * chunk_length
    damaged = {struct.unpack(">i", key)[0] for key, pos, length in entries
               if pos < hi and pos + length > lo}
    assert damaged and len(damaged) < len(expected) // 4, damaged

    node.start()
    cluster, s = open_session(node, "cr")
    sel_a = s.prepare("SELECT v FROM a WHERE k = ?")
    failures = {}
    for k in expected:
        try:
            got = s.execute(sel_a, (k,)).one()
        except Exception as e:  # noqa: BLE001 - inspected below
            failures[k] = e
            continue
        assert got is not None and got.v == expected[k], f"key {k}: {got}"
    assert set(failures) == damaged, (sorted(failures)[:10], sorted(damaged)[:10])
    for k, e in failures.items():
        e = server_error(e)
        assert type(e).__name__ in ("ReadFailure", "ServerError"), repr(e)
        message = str(e)
        assert path.name in message and str(path.parent.name) in message, message
        assert "offset" in message.lower(), message
        assert str(offsets[chunk]) in message, (offsets[chunk], message)
    # The other table, and the server itself, are unaffected.
    assert select_all(s, "b") == {k: (v,) for k, v in expected.items()}
    with pytest.raises(Exception) as scan_error:
        select_all(s, "a")
    assert path.name in str(scan_error.value), repr(scan_error.value)
    cluster.shutdown()
    cluster, s = open_session(node, "cr")
    assert s.execute("SELECT v FROM b WHERE k = 1").one().v == expected[1]
    s.execute("INSERT INTO a (k, v) VALUES (-1, 'new')")
    assert s.execute("SELECT v FROM a WHERE k = -1").one().v == "new"
    cluster.shutdown()
    assert node.running


# ---------------------------------------------------------------- 5. torn commitlog tail



def test_sigterm_stops_a_running_compaction_and_keeps_its_inputs(start_varve, tmp_path):
    """SIGTERM during a major compaction (throttled to 1 MiB/s over about 6 MiB,
    so it cannot finish first) stops it instead of waiting for it: the node
    exits 0, and after a restart the three input sstables are still the live
    ones, holding every row, with no compaction output left behind."""
    node = start_with(start_varve, tmp_path, "stopcompact", compaction_throughput="1MiB/s")
    cluster, s = open_session(node)
    s.execute(KS_CQL.format("sc"))
    s.execute("CREATE TABLE sc.t (k int PRIMARY KEY, v blob)"
              " WITH compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}")
    ins = s.prepare("INSERT INTO sc.t (k, v) VALUES (?, ?)")
    rng = random.Random(5)
    expected = {}
    for part in range(3):
        for k in range(part * 64, (part + 1) * 64):
            expected[k] = rng.randbytes(32 * 1024)
            s.execute(ins, (k, expected[k]))
        nodetool(node, "flush", "sc")
    cluster.shutdown()
    assert sstable_count(node, "sc.t") == 3
    compact = subprocess.Popen([varve_bin(), "nodetool", "-p", str(node.admin_port), "compact", "sc"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while "compaction type" not in nodetool(node, "compactionstats").stdout:  # its table header
            assert compact.poll() is None, f"the compaction ended first: {compact.communicate()}"
            time.sleep(0.05)
        code = node.stop(signal.SIGTERM)
        assert code == 0, f"varve exited with {code} on SIGTERM:\n{node.log_tail()}"
        assert compact.wait(timeout=60) != 0, "the compaction was reported done"
    finally:
        if compact.poll() is None:
            compact.kill()
    leftovers = [p.name for p in table_dir(node, "sc", "t").iterdir() if p.name.endswith(".tmp")]
    assert not leftovers, leftovers
    node.start()
    assert sstable_count(node, "sc.t") == 3
    cluster, s = open_session(node, "sc")
    assert select_all(s, "t") == {k: (v,) for k, v in expected.items()}
    cluster.shutdown()


def test_altered_crc_check_chance_applies_to_open_sstables(start_varve, tmp_path):
    """crc_check_chance = 0 reads a flipped byte back unchecked (the risk it
    takes); ALTER TABLE ... WITH crc_check_chance = 1.0 then checks every
    chunk of the sstables already open: the same read is a ReadFailure that
    names the file."""
    node = start_varve(data_dir=tmp_path / "chance")
    cluster, s = open_session(node)
    s.execute(KS_CQL.format("ch"))
    s.execute("CREATE TABLE ch.t (k int PRIMARY KEY, v text)"
              " WITH compression = {'enabled': 'false'} AND crc_check_chance = 0.0")
    ins = s.prepare("INSERT INTO ch.t (k, v) VALUES (?, ?)")
    for k in range(200):
        s.execute(ins, (k, f"value-{k:04d}"))
    cluster.shutdown()
    nodetool(node, "flush", "ch")
    node.stop(signal.SIGTERM)

    files = list(table_dir(node, "ch", "t").glob("*.sst"))
    assert len(files) == 1, files
    path = files[0]
    data = bytearray(path.read_bytes())
    at = data.find(b"value-0100")
    assert at > 0 and data.find(b"value-0100", at + 1) == -1, at
    data[at] = ord("V")
    path.write_bytes(data)

    node.start()
    cluster, s = open_session(node, "ch")
    sel = s.prepare("SELECT v FROM t WHERE k = ?")
    assert s.execute(sel, (100,)).one().v == "Value-0100", "unchecked at chance 0"
    s.execute("ALTER TABLE t WITH crc_check_chance = 1.0")
    with pytest.raises(Exception) as error:
        s.execute(sel, (100,))
    e = server_error(error.value)
    assert type(e).__name__ in ("ReadFailure", "ServerError"), repr(e)
    assert path.name in str(e), str(e)
    cluster.shutdown()

def newest_segment(node):
    segments = list((node.data_dir / "commitlog").glob("CommitLog-*.log"))
    assert segments, list((node.data_dir / "commitlog").iterdir())
    return max(segments, key=lambda p: int(p.stem.rsplit("-", 1)[1]))


def test_torn_commitlog_tail_replays_up_to_last_whole_entry(start_varve, tmp_path):
    # Segments that end with their last entry (a preallocated one ends with
    # zeros: test_preallocated_segments_...).
    node = start_with(start_varve, tmp_path, "torn", commitlog_sync="batch",
                      commitlog_preallocate_segments="false")
    cluster, s = open_session(node)
    s.execute(KS_CQL.format("tt"))
    s.execute("CREATE TABLE tt.t (k int PRIMARY KEY, v text)")
    ins = s.prepare("INSERT INTO tt.t (k, v) VALUES (?, ?)")
    for k in range(300):
        s.execute(ins, (k, f"value-{k}"))
    cluster.shutdown()
    node.stop(signal.SIGKILL)

    segment = newest_segment(node)
    size = segment.stat().st_size
    os.truncate(segment, size - 3)
    node.start()
    log = log_since_last_start(node)
    assert re.search(r"WARN.*commitlog.*(TornTail|torn)", log), log
    assert segment.name in log, log
    cluster, s = open_session(node)
    got = select_all(s, "tt.t")
    want = {k: (f"value-{k}",) for k in range(299)}
    assert {k: v for k, v in got.items() if k != 299} == want
    assert 299 not in got, "the torn last entry cannot have been replayed"

    # The node goes on logging after the torn tail; a second crash loses none of it.
    for k in range(300, 400):
        s.execute(ins, (k, f"value-{k}"))
    cluster.shutdown()
    restart(node, signal.SIGKILL)
    cluster, s = open_session(node)
    want.update({k: (f"value-{k}",) for k in range(300, 400)})
    assert select_all(s, "tt.t") == want
    cluster.shutdown()


def commitlog_spares(node):
    return list((node.data_dir / "commitlog").glob("CommitLog-spare-*.tmp"))


def test_preallocated_segments_end_in_zeros_and_replay_after_sigkill(start_varve, tmp_path):
    """Segments begin as a preallocated file of zeros of the segment size
    (docs/design/durability.md, "Preallocated segments"). After a SIGKILL the
    zeros after the last entry are a clean end (no warning); a damaged last
    entry over them is still a torn tail; a spare renamed to a segment name
    and never written (a crash right after the rename) is an empty segment,
    not corruption."""
    seg_bytes = 64 * 1024
    node = start_with(start_varve, tmp_path, "prealloc", commitlog_sync="batch",
                      commitlog_segment_size="64KiB")
    cluster, s = open_session(node)
    s.execute(KS_CQL.format("pa"))
    s.execute("CREATE TABLE pa.t (k int PRIMARY KEY, v text)")
    ins = s.prepare("INSERT INTO pa.t (k, v) VALUES (?, ?)")
    want = {}
    for k in range(250):
        want[k] = (f"{k}-" + "x" * 1000,)
        s.execute(ins, (k, want[k][0]))
    sizes = segments(node)
    assert len(sizes) >= 3, sizes
    assert set(sizes.values()) == {seg_bytes}, sizes
    deadline = time.monotonic() + 10
    while not commitlog_spares(node):
        assert time.monotonic() < deadline, "no spare is made for the next segment"
        time.sleep(0.05)
    from test_metrics import scrape, value
    samples = scrape(node)
    used = value(samples, "varve_commitlog_segments_preallocated_total")
    missed = value(samples, "varve_commitlog_segments_not_preallocated_total")
    assert used >= 1, samples
    assert used + missed >= len(sizes), (used, missed, sizes)
    cluster.shutdown()

    node.stop(signal.SIGKILL)
    node.start()
    log = log_since_last_start(node)
    assert not re.search(r"WARN.*commitlog", log), log
    assert not commitlog_spares(node) or len(commitlog_spares(node)) == 1
    cluster, s = open_session(node)
    assert select_all(s, "pa.t") == want
    s.execute(ins, (1000, "last"))
    cluster.shutdown()

    # Damage the last entry: zero its last non-zero byte (its checksum or its
    # payload). The zeros after it do not hide the damage.
    node.stop(signal.SIGKILL)
    segment = newest_segment(node)
    data = bytearray(segment.read_bytes())
    last = len(data.rstrip(b"\0")) - 1
    assert b"last" in data[last - 64:last + 1], "the newest entry is the last insert"
    data[last] = 0
    segment.write_bytes(bytes(data))
    # And a spare renamed to a newer segment's name, never written.
    spare = segment.with_name(f"CommitLog-1-{int(segment.stem.rsplit('-', 1)[1]) + 1}.log")
    spare.write_bytes(bytes(seg_bytes))
    node.start()
    log = log_since_last_start(node)
    assert re.search(rf"WARN.*commitlog.*(TornTail|torn).*{segment.name}|{segment.name}.*(TornTail|torn)",
                     log), log
    assert spare.name in log, log
    assert "Corruption" not in log and "corrupt" not in log.lower(), log
    cluster, s = open_session(node)
    assert select_all(s, "pa.t") == want, "everything but the damaged last write"
    cluster.shutdown()


# ---------------------------------------------------------------- 6. truncate and drop


def test_truncate_and_drop_survive_sigkill(start_varve, tmp_path):
    node = start_with(start_varve, tmp_path, "trunc", commitlog_sync="batch")
    cluster, s = open_session(node)
    s.execute(KS_CQL.format("td"))
    s.execute("CREATE TABLE td.t (k int PRIMARY KEY, v text)")
    ins = s.prepare("INSERT INTO td.t (k, v) VALUES (?, ?)")
    for k in range(200):
        s.execute(ins, (k, "old"))
    nodetool(node, "flush", "td")  # some old data in an sstable, some only in the commitlog
    for k in range(200, 400):
        s.execute(ins, (k, "old"))
    s.execute("TRUNCATE td.t")
    assert select_all(s, "td.t") == {}
    cluster.shutdown()
    restart(node, signal.SIGKILL)
    cluster, s = open_session(node)
    assert select_all(s, "td.t") == {}, "truncated rows came back after a crash"

    # Writes after a TRUNCATE are kept.
    ins = s.prepare("INSERT INTO td.t (k, v) VALUES (?, ?)")
    for k in range(1000, 1050):
        s.execute(ins, (k, "after-truncate"))
    cluster.shutdown()
    restart(node, signal.SIGKILL)
    cluster, s = open_session(node)
    assert select_all(s, "td.t") == {k: ("after-truncate",) for k in range(1000, 1050)}

    # DROP and re-CREATE with the same name: the new table starts empty and
    # stays so across a crash, though the old one's writes are in the commitlog.
    for k in range(200):
        s.execute(ins, (k, "old"))
    nodetool(node, "flush", "td")
    for k in range(200, 300):
        s.execute(ins, (k, "old"))
    s.execute("DROP TABLE td.t")
    s.execute("CREATE TABLE td.t (k int PRIMARY KEY, v text)")
    s.execute("INSERT INTO td.t (k, v) VALUES (7, 'new')")
    assert select_all(s, "td.t") == {7: ("new",)}
    cluster.shutdown()
    restart(node, signal.SIGKILL)
    cluster, s = open_session(node)
    assert select_all(s, "td.t") == {7: ("new",)}, "the dropped table's data came back"
    cluster.shutdown()
    restart(node, signal.SIGKILL)
    cluster, s = open_session(node)
    assert select_all(s, "td.t") == {7: ("new",)}
    cluster.shutdown()
