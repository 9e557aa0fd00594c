#!/usr/bin/env python3
"""Each second of a `larger_than_memory_ab.sh gc` run: the client's read p99 beside what the
server did in that second (compaction bytes and completions, the throttle's share, live sstables,
read stage active / pending, chunk cache misses, disk reads / writes / busy ms and KiB per read, page cache MiB,
server CPU ticks), from DIR/marks.txt, DIR/samples.txt and latte's DIR/before.json and
DIR/during.json. Seconds whose read p99 is above SLOW_MS are marked `*`. The last line sums up
both phases: whole-phase read p99, the median second's p99, their ratios (during / before),
the slow seconds, and whether the garbagecollect ended within the phase (DIR/marks.txt's
gc_rc, the exit code of its nodetool, which fails when the phase's end stops the server).

usage: gc_seconds.py DIR
"""
import json
import statistics
import sys

P99 = 11  # index of p99 in latte's percentile list
SLOW_MS = 8.0


def load_samples(path):
    samples = {}
    for line in open(path):
        parts = line.split()
        values = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        samples[int(parts[0])] = values
    return samples


def number(values, key):
    try:
        return [int(x) for x in values[key].split(",")]
    except (KeyError, ValueError):
        return None


def delta(samples, t, key):
    a, b = samples.get(t - 1), samples.get(t)
    x, y = (number(a, key) if a else None), (number(b, key) if b else None)
    if x is None or y is None or len(x) != len(y):
        return None
    return [j - i for i, j in zip(x, y)]


def second_line(samples, t, elapsed, p99):
    now = samples.get(t, {})
    fields = [f"{'*' if p99 > SLOW_MS else ' '} {elapsed:4d}s read_p99={p99:6.2f}ms"]
    for key, label in (("comp_bytes", "compacted_MiB"), ("comps", "compactions"),
                       ("misses", "chunk_misses"), ("ticks", "cpu_ticks")):
        d = delta(samples, t, key)
        value = "-" if d is None else (d[0] // 1048576 if key == "comp_bytes" else d[0])
        fields.append(f"{label}={value}")
    d = delta(samples, t, "disk")
    if d is None:
        fields.append("disk=-")
    else:
        fields.append(f"disk_r={d[0]} disk_w={d[1]} busy_ms={d[2]}")
        if len(d) > 3:  # sectors of 512 B read
            fields.append(f"disk_read_KiB_per_read={d[3] / 2 / max(d[0], 1):.1f}")
    fields.append(f"share={now.get('share', '-')} sstables={now.get('sstables', '-')}")
    fields.append(f"read_stage={now.get('rs_active', '-')}/{now.get('rs_pending', '-')}")
    fields.append(f"cache_MiB={now.get('cache', '-')}")
    return " ".join(fields)


def phase(report_path):
    result = json.load(open(report_path))["result"]
    read = result["cycle_latency_by_fn"]["read"]
    seconds = [(round(s["time_s"]), s["cycle_latency_by_fn"]["read"]["percentiles"][P99]["value"])
               for s in result["log"]
               if s["duration_s"] > 0.5 and "read" in s["cycle_latency_by_fn"]]
    return read["percentiles"][P99]["value"], seconds


def main():
    d = sys.argv[1]
    marks = dict(line.split() for line in open(f"{d}/marks.txt"))
    samples = load_samples(f"{d}/samples.txt")
    summary = {}
    for name, mark in (("before", "before"), ("during", "gc")):
        whole, seconds = phase(f"{d}/{name}.json")
        print(f"# {name}")
        for elapsed, p99 in seconds:
            print(second_line(samples, int(marks[mark]) + elapsed, elapsed, p99))
        p99s = [p for _, p in seconds]
        summary[name] = (whole, statistics.median(p99s), sum(p > SLOW_MS for p in p99s), len(p99s))
    (b, bm, bs, bn), (g, gm, gs, gn) = summary["before"], summary["during"]
    # The server stops when the phase ends: a garbagecollect still running then fails.
    ended = marks.get("gc_rc") == "0"
    print(f"before read_p99={b:.2f}ms median_second={bm:.2f}ms slow_seconds={bs}/{bn} "
          f"during read_p99={g:.2f}ms median_second={gm:.2f}ms slow_seconds={gs}/{gn} "
          f"ratio_p99={g / b:.2f} ratio_median_second={gm / bm:.2f} gc_ended={'yes' if ended else 'no'}")


if __name__ == "__main__":
    main()
