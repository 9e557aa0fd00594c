#!/usr/bin/env python3
"""Startup time and idle memory of a CQL node, for docs/benchmarks.md.

Launches the node, then polls (driver connect + `SELECT release_version FROM
system.local`) until it answers; that wall time, from just before the launch,
is "launch to first query served". Then it reads VmRSS of the server process
(/proc/PID/status) after a short settle, creates a keyspace and a table, and
reads VmRSS again.

  # Varve (release binary), 5 runs, median reported:
  scripts/bench-startup.py varve --bin /tmp/target-release/release/varve --runs 5
  # Cassandra 5.0.4 via ../shared/cassandra/start.sh (ADDR=127.0.0.2), 1 run:
  scripts/bench-startup.py cassandra --runs 1
  # With data already on disk: Varve on an existing data directory, Cassandra on
  # the data of /tmp/cass-lab/bench (neither wiped); after the first query, one
  # read of a user table is timed too:
  scripts/bench-startup.py varve --data-dir /tmp/startup/vdata \
      --first-read "SELECT key FROM keyspace1.standard1 LIMIT 1"
  scripts/bench-startup.py cassandra --keep-data \
      --first-read "SELECT key FROM keyspace1.standard1 LIMIT 1"

Needs cassandra-driver (e.g. .venv/bin/python). Prints one line per run and a
JSON summary on the last line.
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

POLL_INTERVAL_S = 0.01
START_TIMEOUT_S = 300
SETTLE_S = 5  # let background startup work finish before reading the idle RSS
CASSANDRA_DIR = Path(os.environ.get("CASSANDRA_DIR", "/work/shared/cassandra"))
CASSANDRA_NAME = "bench"
CASSANDRA_ADDR = "127.0.0.2"


def rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def try_query(host, port):
    """One connect + system.local query; True if it answered."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import WhiteListRoundRobinPolicy

    profile = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy([host]))
    cluster = Cluster([host], port=port, connect_timeout=1, control_connection_timeout=1,
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile}, protocol_version=4)
    try:
        session = cluster.connect()
        row = session.execute("SELECT release_version FROM system.local").one()
        return row is not None and row[0] is not None
    except Exception:  # noqa: BLE001 - not up yet
        return False
    finally:
        cluster.shutdown()


def wait_until_served(host, port, t0, alive):
    while time.monotonic() - t0 < START_TIMEOUT_S:
        if not alive():
            raise RuntimeError("server exited during startup")
        if try_query(host, port):
            return time.monotonic() - t0
        time.sleep(POLL_INTERVAL_S)
    raise RuntimeError(f"not served after {START_TIMEOUT_S}s")


def first_read(host, port, cql, t0):
    """Seconds from launch until `cql` (a read of a user table) has answered."""
    from cassandra.cluster import Cluster

    cluster = Cluster([host], port=port, protocol_version=4)
    try:
        cluster.connect().execute(cql, timeout=60).one()
        return time.monotonic() - t0
    finally:
        cluster.shutdown()


def schema_rss(host, port, pid):
    from cassandra.cluster import Cluster

    cluster = Cluster([host], port=port, protocol_version=4)
    session = cluster.connect()
    session.execute("CREATE KEYSPACE IF NOT EXISTS bench WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE TABLE IF NOT EXISTS bench.t (k int PRIMARY KEY, v text)")
    cluster.shutdown()
    time.sleep(SETTLE_S)
    return rss_kib(pid)


def run_varve(binary, port, data_dir, read_cql):
    with tempfile.TemporaryDirectory(prefix="varve-bench-") as tmp:
        cmd = [binary, "server", "--listen", "127.0.0.1", "--port", str(port), "--admin-port", "0",
               "--storage-port", "0", "--data-dir", data_dir or f"{tmp}/data"]
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            served_s = wait_until_served("127.0.0.1", port, t0, lambda: proc.poll() is None)
            read_s = first_read("127.0.0.1", port, read_cql, t0) if read_cql else None
            time.sleep(SETTLE_S)
            idle = rss_kib(proc.pid)
            after = schema_rss("127.0.0.1", port, proc.pid)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=300)
    return served_s, read_s, idle, after


def run_cassandra(keep_data, read_cql):
    env = dict(os.environ, ADDR=CASSANDRA_ADDR, FRESH="0" if keep_data else "1")
    pidfile = Path(f"/tmp/cass-lab/{CASSANDRA_NAME}/cassandra.pid")
    t0 = time.monotonic()
    launcher = subprocess.Popen([str(CASSANDRA_DIR / "start.sh"), CASSANDRA_NAME], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def alive():
        if not pidfile.exists():
            return launcher.poll() is None
        return Path(f"/proc/{pidfile.read_text().strip()}").exists()

    try:
        served_s = wait_until_served(CASSANDRA_ADDR, 9042, t0, alive)
        read_s = first_read(CASSANDRA_ADDR, 9042, read_cql, t0) if read_cql else None
        pid = int(pidfile.read_text().strip())
        time.sleep(SETTLE_S)
        idle = rss_kib(pid)
        after = schema_rss(CASSANDRA_ADDR, 9042, pid)
    finally:
        launcher.wait(timeout=60)
        stop_env = env if keep_data else dict(env, WIPE="1")
        subprocess.run([str(CASSANDRA_DIR / "stop.sh"), CASSANDRA_NAME], env=stop_env,
                       stdout=subprocess.DEVNULL, check=False)
    return served_s, read_s, idle, after


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("server", choices=["varve", "cassandra"])
    ap.add_argument("--bin", default="target/release/varve")
    ap.add_argument("--port", type=int, default=9142)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--data-dir", help="Varve: start on this existing data directory (not wiped)")
    ap.add_argument("--keep-data", action="store_true",
                    help="Cassandra: start on the data already under /tmp/cass-lab/bench (not wiped)")
    ap.add_argument("--first-read", metavar="CQL",
                    help="after the first query, time this read of a user table from launch")
    args = ap.parse_args()

    import cassandra.cluster  # noqa: F401 - import the driver before the clock starts (~0.3 s cold)

    results = []
    for i in range(args.runs):
        if args.server == "varve":
            served_s, read_s, idle, after = run_varve(args.bin, args.port, args.data_dir, args.first_read)
        else:
            served_s, read_s, idle, after = run_cassandra(args.keep_data, args.first_read)
        results.append({"served_s": served_s, "first_read_s": read_s, "rss_idle_kib": idle,
                        "rss_schema_kib": after})
        read = f"; first read after {read_s:.3f} s" if read_s is not None else ""
        print(f"run {i + 1}: first query served after {served_s:.3f} s{read}; "
              f"VmRSS idle {idle / 1024:.1f} MiB, after keyspace+table {after / 1024:.1f} MiB", flush=True)
    summary = {
        "server": args.server, "runs": len(results),
        "served_s_median": statistics.median(r["served_s"] for r in results),
        "rss_idle_mib_median": statistics.median(r["rss_idle_kib"] for r in results) / 1024,
        "rss_schema_mib_median": statistics.median(r["rss_schema_kib"] for r in results) / 1024,
        "results": results,
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
