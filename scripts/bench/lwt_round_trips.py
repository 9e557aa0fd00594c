#!/usr/bin/env python3
"""Issue 19: how many round trips a statement takes on a three-node cluster.

usage: lwt_round_trips.py VARVE_BINARY DELAY_MS

Starts three nodes (`varve cluster start`, 127.0.0.1-3, ports 21142 / 21280 / 19100) with
`internode_send_delay_ms: DELAY_MS`, so that every internode round trip takes 2 x DELAY_MS, then
runs 30 of each statement through node 1 (a replica of every key: RF 3) and prints each median
in milliseconds and in round trips: a plain QUORUM insert, a QUORUM read, a SERIAL read, and an
uncontended INSERT ... IF NOT EXISTS committed at QUORUM, ONE and LOCAL_ONE. Uses the Python cassandra-driver
(.venv/bin/python of this repo) and the launcher helpers of tests/python.
"""
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "python"))
from test_cluster_launcher import port_args, pinned  # noqa: E402
from cassandra import ConsistencyLevel as CL
from cassandra.query import SimpleStatement
binary = sys.argv[1]; delay = int(sys.argv[2])
NATIVE, ADMIN, STORAGE = 21142, 21280, 19100
d = tempfile.mkdtemp(); conf = d + "/c.yaml"
open(conf, "w").write(f"internode_send_delay_ms: {delay}\n")
def vc(*a): return subprocess.run([binary, "cluster", "--dir", d + "/cluster", *a], capture_output=True, text=True, timeout=120)
r = vc("start", "--nodes", "3", *port_args(NATIVE, ADMIN, STORAGE), "--", "--config", conf); assert r.returncode == 0, r.stderr
try:
    c = pinned("127.0.0.1", NATIVE); s = c.connect()
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
    s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
    rtt = 2 * delay / 1000
    def timed(cql, level, n=30, serial=None):
        out = []
        for i in range(n):
            st = SimpleStatement(cql.format(i=i + int(time.time()*1000) % 1000000), consistency_level=level)
            t = time.monotonic(); s.execute(st); out.append(time.monotonic() - t)
        return statistics.median(out)
    for name, cql, level in [
        ("plain QUORUM insert", "INSERT INTO ks.t (k, v) VALUES ({i}, 1)", CL.QUORUM),
        ("QUORUM read", "SELECT v FROM ks.t WHERE k = {i}", CL.QUORUM),
        ("SERIAL read", "SELECT v FROM ks.t WHERE k = {i}", CL.SERIAL),
        ("INSERT IF NOT EXISTS (commit QUORUM)", "INSERT INTO ks.t (k, v) VALUES ({i}, 2) IF NOT EXISTS", CL.QUORUM),
        ("INSERT IF NOT EXISTS (commit ONE)", "INSERT INTO ks.t (k, v) VALUES ({i}, 3) IF NOT EXISTS", CL.ONE),
        ("INSERT IF NOT EXISTS (commit LOCAL_ONE, the driver's default)",
         "INSERT INTO ks.t (k, v) VALUES ({i}, 4) IF NOT EXISTS", CL.LOCAL_ONE),
    ]:
        m = timed(cql, level)
        print(f"{name}: median {m*1000:.1f} ms = {m/rtt:.2f} round trips of {rtt*1000:.0f} ms")
finally:
    vc("stop")
