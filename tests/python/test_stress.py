"""`varve stress` end to end: the real binary against a real `varve server`.

Each test runs the stress tool as a child process (quiet, into a temporary
run directory) on a keyspace of its own, then checks what it reports in
summary.json / intervals.csv against what the server holds. The slowed-server
tests put an asyncio TCP proxy that delays every client-to-server chunk by
20 ms in front of a separate node, and check that a fixed-rate schedule
charges queueing delay to latency while a throttled one does not.
"""

import asyncio
import csv
import json
import signal
import subprocess
import threading
import time

import pytest

from conftest import connect, varve_bin
from helpers import unique

RUN_TIMEOUT_S = 30
PROXY_DELAY_S = 0.020


def stress(node, tmp_path, *args, keyspace=None, timeout=RUN_TIMEOUT_S, hosts=None):
    """Runs `varve stress ARGS --out DIR` and returns (summary, intervals rows, completed process)."""
    out = tmp_path / unique("run")
    cmd = [varve_bin(), "stress", *args, "--hosts", hosts or f"{node.host}:{node.port}",
           "--admin-port", str(node.admin_port), "--out", str(out), "--quiet"]
    if keyspace:
        cmd += ["--keyspace", keyspace]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{cmd}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    summary = json.loads((out / "summary.json").read_text())
    with open(out / "intervals.csv", newline="") as f:
        intervals = list(csv.DictReader(f))
    assert str(out / "summary.json") in proc.stdout
    return summary, intervals, proc


def phase(summary, name=None):
    phases = summary["phases"]
    return phases[-1] if name is None else next(p for p in phases if p["name"] == name)


@pytest.fixture(scope="module")
def cql(varve_addr):
    cluster = connect(*varve_addr, 4)
    session = cluster.connect()
    yield session
    cluster.shutdown()


def test_write_seq_writes_every_key_once(varve_server, cql, tmp_path):
    ks = unique("ks")
    summary, intervals, proc = stress(varve_server, tmp_path, "write", "--n", "2000", "--pop", "seq=1..2000",
                                      "--concurrency", "16", keyspace=ks)
    write = phase(summary)["ops"]["write"]
    assert (write["count"], write["errors"]) == (2000, 0)
    assert phase(summary)["ops"]["total"]["count"] == 2000
    assert summary["format"] == 1 and summary["workload"]["name"] == "kv"
    assert summary["target"]["product"] == "varve"
    assert summary["workload"]["population"] == "seq=1..2000"
    rows = list(cql.execute(f"SELECT key FROM {ks}.standard1"))
    assert len(rows) == 2000
    # The keyspace is the seeds' kind: NetworkTopologyStrategy in the node's data centre.
    dc = cql.execute("SELECT data_center FROM system.local").one().data_center
    replication = cql.execute(
        "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s", [ks]).one().replication
    assert replication == {"class": "org.apache.cassandra.locator.NetworkTopologyStrategy", dc: "1"}, replication
    assert all(len(r.key) == 10 for r in rows)
    row = cql.execute(f'SELECT "C0", "C4" FROM {ks}.standard1 LIMIT 1').one()
    assert len(row.C0) == 34 and len(row.C4) == 34
    # The human table names every operation.
    assert "write" in proc.stdout and "p99 ms" in proc.stdout
    hlogs = list(tmp_path.glob("run_*/hdr/write.hlog"))
    assert len(hlogs) == 1
    lines = hlogs[0].read_text().splitlines()
    assert any(line.startswith("#[BaseTime: ") for line in lines)
    assert any(line.startswith("Tag=write,0.000,") for line in lines), lines[:5]


def test_mixed_ratio_splits_operations(varve_server, tmp_path):
    ks = unique("ks")
    stress(varve_server, tmp_path, "write", "--n", "300", "--concurrency", "8", keyspace=ks)
    summary, _, _ = stress(varve_server, tmp_path, "mixed", "--n", "2000", "--ratio", "write=1,read=1",
                           "--pop", "uniform=1..300", "--concurrency", "8", keyspace=ks)
    ops = phase(summary)["ops"]
    writes, reads = ops["write"]["count"], ops["read"]["count"]
    assert writes + reads == 2000
    assert 0.8 < writes / reads < 1.25, ops
    assert ops["total"]["errors"] == 0


def test_fixed_rate_holds_the_rate_and_intervals_are_per_second(varve_server, tmp_path):
    ks = unique("ks")
    summary, intervals, _ = stress(varve_server, tmp_path, "write", "--rate", "fixed=200/s", "--duration", "3s",
                                   "--concurrency", "8", "--pop", "uniform=1..1000", keyspace=ks)
    write = phase(summary)["ops"]["write"]
    assert 540 <= write["count"] <= 660, write
    assert 180 <= write["throughput"] <= 220, write
    assert summary["workload"]["rate"] == "fixed=200/s"
    rows = [r for r in intervals if r["op"] == "write"]
    # One row per second (t = 1, 2, 3); operations still in flight at the
    # deadline land in the last one.
    assert len(rows) == 3, rows
    for expected_t, row in zip([1.0, 2.0, 3.0], rows):
        assert abs(float(row["t"]) - expected_t) < 0.1, rows
        assert 170 <= int(row["count"]) <= 230, rows
        assert float(row["p50_ms"]) > 0
    assert {r["phase"] for r in intervals} == {"write"}


def test_read_verify_detects_an_overwritten_row(varve_server, cql, tmp_path):
    ks = unique("ks")
    stress(varve_server, tmp_path, "write", "--n", "300", "--concurrency", "8", keyspace=ks)
    summary, _, _ = stress(varve_server, tmp_path, "read", "--n", "300", "--verify", "--concurrency", "8",
                           keyspace=ks)
    extra = phase(summary)["extra"]
    assert (extra["verified"], extra["verify_failures"]) == (300, 0)
    key = cql.execute(f"SELECT key FROM {ks}.standard1 LIMIT 1").one().key
    cql.execute(f'UPDATE {ks}.standard1 SET "C2" = 0x00 WHERE key = %s', (key,))
    summary, _, _ = stress(varve_server, tmp_path, "read", "--n", "300", "--verify", "--concurrency", "8",
                           keyspace=ks)
    extra = phase(summary)["extra"]
    assert extra["verify_failures"] == 1, extra
    assert extra["verified"] == 299, extra


def test_lwt_on_one_key_is_contended(varve_server, tmp_path):
    ks = unique("ks")
    summary, _, _ = stress(varve_server, tmp_path, "write", "--workload", "lwt", "--lwt-keys", "1", "--n", "300",
                           "--concurrency", "8", keyspace=ks)
    p = phase(summary)
    assert set(p["ops"]) == {"cas_write", "total"}
    assert p["extra"]["applied"] > 0, p
    assert p["extra"]["not_applied"] > 0, p
    cas = p["ops"]["cas_write"]
    assert cas["count"] + cas["errors"] == 300
    assert p["extra"]["applied"] + p["extra"]["not_applied"] == cas["count"]


def test_largeblob_and_timeseries_run(varve_server, tmp_path):
    ks = unique("ks")
    summary, _, _ = stress(varve_server, tmp_path, "mixed", "--workload", "largeblob", "--n", "400",
                           "--ratio", "read=5,write=4,delete=1", "--pop", "uniform=1..200", "--col-size", "256",
                           "--concurrency", "8", "--compaction", "{'class':'SizeTieredCompactionStrategy'}",
                           keyspace=ks)
    ops = phase(summary)["ops"]
    assert set(ops) == {"read", "write", "delete", "total"} and ops["total"]["errors"] == 0, ops
    summary, _, _ = stress(varve_server, tmp_path, "mixed", "--workload", "timeseries", "--n", "400",
                           "--ratio", "write=3,read=1", "--pop", "uniform=1..20", "--concurrency", "8",
                           keyspace=ks)
    ops = phase(summary)["ops"]
    assert ops["total"]["count"] == 400 and ops["total"]["errors"] == 0, ops


def test_ctrl_c_writes_an_interrupted_summary(varve_server, cql, tmp_path):
    """Ctrl-C once the write phase runs (its first row is stored: on a loaded
    machine the schema can take longer than any fixed sleep)."""
    out = tmp_path / "run"
    ks = unique("ks")
    cmd = [varve_bin(), "stress", "write", "--duration", "60s", "--rate", "throttle=500/s", "--concurrency", "4",
           "--hosts", f"{varve_server.host}:{varve_server.port}", "--keyspace", ks,
           "--out", str(out), "--quiet"]
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = started + 30
    while time.monotonic() < deadline:
        try:
            if cql.execute(f"SELECT key FROM {ks}.standard1 LIMIT 1").one() is not None:
                break
        except Exception:  # the keyspace or table does not exist yet
            pass
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    signalled_after = time.monotonic() - started
    stdout, stderr = proc.communicate(timeout=15)
    assert proc.returncode == 0, stderr
    p = phase(json.loads((out / "summary.json").read_text()))
    assert p["interrupted"] is True
    assert p["ops"]["write"]["count"] > 0
    assert p["end_t"] < signalled_after + 5, "the run stops at Ctrl-C, not at its 60 s"


# --- the slowed server ------------------------------------------------------

class DelayProxy:
    """A TCP proxy on 127.0.0.1 that forwards to `upstream`, delaying each
    client-to-server chunk by `delay_s` (server-to-client is not delayed)."""

    def __init__(self, upstream, delay_s):
        self.upstream, self.delay_s = upstream, delay_s
        self.loop = asyncio.new_event_loop()
        self.port = None
        started = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(started,), daemon=True)
        self.thread.start()
        assert started.wait(10), "proxy did not start"

    def _run(self, started):
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = self.server.sockets[0].getsockname()[1]
        started.set()
        self.loop.run_forever()

    async def _handle(self, client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_writer.close()
            return

        async def pump(reader, writer, delay_s):
            try:
                while data := await reader.read(65536):
                    if delay_s:
                        await asyncio.sleep(delay_s)
                    writer.write(data)
                    await writer.drain()
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                writer.close()

        await asyncio.gather(pump(client_reader, server_writer, self.delay_s),
                             pump(server_reader, client_writer, 0))

    def close(self):
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@pytest.fixture
def slow_node(start_varve):
    node = start_varve()
    proxy = DelayProxy((node.host, node.port), PROXY_DELAY_S)
    yield node, proxy
    proxy.close()


def test_fixed_rate_counts_queueing_delay(slow_node, tmp_path):
    node, proxy = slow_node
    hosts = f"127.0.0.1:{proxy.port}"
    # Above the rate one worker can sustain at 20 ms per request: the fixed
    # schedule falls behind and the wait counts as latency.
    summary, _, _ = stress(node, tmp_path, "write", "--rate", "fixed=200/s", "--duration", "3s",
                           "--concurrency", "1", "--pop", "uniform=1..1000", hosts=hosts)
    fixed = phase(summary)["ops"]["write"]
    assert fixed["latency_ms"]["p50"] > 200, fixed
    assert fixed["count"] < 300, fixed
    summary, _, _ = stress(node, tmp_path, "write", "--rate", "throttle=200/s", "--duration", "3s",
                           "--concurrency", "1", "--pop", "uniform=1..1000", "--no-schema", hosts=hosts)
    throttled = phase(summary)["ops"]["write"]
    assert PROXY_DELAY_S * 1000 <= throttled["latency_ms"]["p50"] < 60, throttled
