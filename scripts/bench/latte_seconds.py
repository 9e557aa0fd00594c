#!/usr/bin/env python3
"""One line about a latte JSON report, second by second (latte samples every second).

usage: latte_seconds.py REPORT.json [OFFERED_RATE]

Prints the whole run's throughput (operations per second), read p50 / p99, write p99, the p99
of every operation, the errors, and
from the sampling log: how many seconds served less than 95% of OFFERED_RATE (0: not throttled,
nothing to compare), the slowest second's throughput, the median and worst of the per-second
read p99. Latencies in ms.
"""
import json
import statistics
import sys

P50, P99 = 6, 11  # indices of latte's percentile list (Min, P1, P2, P5, P10, P25, P50, ..., P99)


def pct(dist, i):
    return dist["percentiles"][i]["value"]


def main():
    report = json.load(open(sys.argv[1]))
    rate = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    r = report["result"]
    read = r["cycle_latency_by_fn"].get("read")
    write = r["cycle_latency_by_fn"].get("write")
    samples = [s for s in r["log"] if s["duration_s"] > 0.5]
    per_s = [s["cycle_count"] / s["duration_s"] for s in samples]
    read_p99s = [pct(s["cycle_latency_by_fn"]["read"], P99) for s in samples
                 if "read" in s["cycle_latency_by_fn"]]
    short = sum(1 for x in per_s if rate and x < 0.95 * rate)
    parts = [
        f"ops/s={r['cycle_throughput']['value']:.0f}",
        f"read_p50={pct(read, P50):.2f}ms" if read else "read_p50=-",
        f"read_p99={pct(read, P99):.2f}ms" if read else "read_p99=-",
        f"write_p99={pct(write, P99):.2f}ms" if write else "write_p99=-",
        f"p99={pct(r['cycle_latency'], P99):.2f}ms",
        f"errors={r['error_count']}",
        f"seconds={len(samples)}",
        f"seconds_below_95pct={short}",
        f"slowest_second={min(per_s):.0f}/s" if per_s else "slowest_second=-",
        f"median_second_read_p99={statistics.median(read_p99s):.2f}ms" if read_p99s else "",
        f"worst_second_read_p99={max(read_p99s):.2f}ms" if read_p99s else "",
    ]
    print(" ".join(p for p in parts if p))


if __name__ == "__main__":
    main()
