#!/usr/bin/env python3
"""Issue 24: queries on wide partitions, one at a time, against any CQL server.

usage: wide_partition.py HOST:PORT LABEL PART:ROWS [PART:ROWS ...] [--repeat N] [--consistency CL]

For each partition PART of table wide.t (loaded by scripts/bench/latte/wide.rn with rows
0..ROWS), runs REPEAT times each of:
  one    SELECT v FROM wide.t WHERE p = ? AND c = ?             (a random row)
  slice  SELECT v FROM wide.t WHERE p = ? AND c >= ? AND c < ?  (100 rows from a random start)
  last   SELECT c, v FROM wide.t WHERE p = ? ORDER BY c DESC LIMIT 10
checks every answer (row counts, the last rows' clustering), and prints the median and p99 client
latency in ms per query and partition, as a table and as JSON (LABEL.json). The queries run at
the driver's default level (LOCAL_ONE), or at CL (e.g. QUORUM, on a cluster).
Uses the Python cassandra-driver (.venv/bin/python3 of this repo has it).
"""
import json
import random
import statistics
import sys
import time

from cassandra.cluster import Cluster


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    repeat = 200
    if "--repeat" in sys.argv:
        repeat = int(sys.argv[sys.argv.index("--repeat") + 1])
        args = [a for a in args if a != str(repeat)]
    level = None
    if "--consistency" in sys.argv:
        level = sys.argv[sys.argv.index("--consistency") + 1]
        args = [a for a in args if a != level]
    host, port = args[0].rsplit(":", 1)
    label = args[1]
    parts = [tuple(int(x) for x in a.split(":")) for a in args[2:]]
    cluster = Cluster([host], port=int(port), protocol_version=4)
    s = cluster.connect()
    one = s.prepare("SELECT v FROM wide.t WHERE p = ? AND c = ?")
    slc = s.prepare("SELECT v FROM wide.t WHERE p = ? AND c >= ? AND c < ?")
    last = s.prepare("SELECT c, v FROM wide.t WHERE p = ? ORDER BY c DESC LIMIT 10")
    if level:
        from cassandra import ConsistencyLevel
        for prepared in (one, slc, last):
            prepared.consistency_level = ConsistencyLevel.name_to_value[level]
    rng = random.Random(7)
    timings = {f"{part}:{rows}": {"one": [], "slice": [], "last": []} for part, rows in parts}
    # Round robin over the partitions, so that the machine's noise falls on
    # all of them alike and their ratios compare.
    for _ in range(repeat):
        for part, rows in parts:
            t_part = timings[f"{part}:{rows}"]
            c = rng.randrange(rows)
            t = time.perf_counter()
            got = list(s.execute(one, (part, c)))
            t_part["one"].append(time.perf_counter() - t)
            assert len(got) == 1, (part, c, len(got))
            c = rng.randrange(max(1, rows - 100))
            t = time.perf_counter()
            got = list(s.execute(slc, (part, c, c + 100)))
            t_part["slice"].append(time.perf_counter() - t)
            assert len(got) == min(100, rows - c), (part, c, len(got))
            t = time.perf_counter()
            got = list(s.execute(last, (part,)))
            t_part["last"].append(time.perf_counter() - t)
            assert [r.c for r in got] == list(range(rows - 1, max(-1, rows - 11), -1)), got[:3]
    results = {
        key: {
            q: {"median_ms": statistics.median(v) * 1e3, "p99_ms": percentile(v, 99) * 1e3}
            for q, v in t_part.items()
        }
        for key, t_part in timings.items()
    }
    cluster.shutdown()
    print(f"{label}: median / p99 ms over {repeat} queries each")
    print(f"{'partition':>16} {'one row':>16} {'100-row slice':>16} {'last 10 desc':>16}")
    for key, r in results.items():
        cells = [f"{r[q]['median_ms']:.2f} / {r[q]['p99_ms']:.2f}" for q in ("one", "slice", "last")]
        print(f"{key:>16} " + " ".join(f"{c:>16}" for c in cells))
    base = next(iter(results.values()))
    for key, r in list(results.items())[1:]:
        ratios = [r[q]["median_ms"] / base[q]["median_ms"] for q in ("one", "slice", "last")]
        print(f"{key:>16} " + " ".join(f"{x:>15.2f}x" for x in ratios) + "  (median, against the first)")
    with open(f"{label}.json", "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
