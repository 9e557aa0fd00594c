#!/usr/bin/env python3
"""Run one latte command while sampling a server's CPU (utime+stime from /proc/PID/stat).

usage: measure_cpu.py PID[,PID...] MEASURED_SECONDS OUTFILE -- latte run ...
Server CPU is reported for the last MEASURED_SECONDS before latte exits (latte's measured
phase comes last, after warm-up), interpolated between samples taken every 0.1 s, and
also for the whole invocation; several comma-separated PIDs (a cluster's nodes) are summed. RSS (VmRSS) is read when latte exits. The server's I/O over the
same measured window comes from /proc/PID/io: wchar (bytes handed to write(), each one copied into
the page cache) and write_bytes (bytes sent to the disk), in MiB.
"""
import os, subprocess, sys, time
TICK = os.sysconf("SC_CLK_TCK")
pids, measured_s, out = [int(p) for p in sys.argv[1].split(",")], float(sys.argv[2]), sys.argv[3]
cmd = sys.argv[sys.argv.index("--") + 1:]

def cpu_s():
    total = 0
    for pid in pids:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        total += (int(f[11]) + int(f[12])) / TICK   # utime, stime (fields 14, 15)
    return total

def rss_mib():
    total = 0
    for pid in pids:
        for l in open(f"/proc/{pid}/status"):
            if l.startswith("VmRSS:"):
                total += int(l.split()[1]) / 1024
    return total

def io_mib():
    wchar = disk = 0
    for pid in pids:
        f = dict(l.split(": ") for l in open(f"/proc/{pid}/io").read().splitlines())
        wchar += int(f["wchar"]) / 2**20
        disk += int(f["write_bytes"]) / 2**20
    return (wchar, disk)

samples = [(time.monotonic(), cpu_s())]
ios = [io_mib()]
with open(out, "w") as fo:
    p = subprocess.Popen(cmd, stdout=fo, stderr=subprocess.STDOUT)
    while p.poll() is None:
        time.sleep(0.1)
        samples.append((time.monotonic(), cpu_s()))
        ios.append(io_mib())
t_end, c_end = time.monotonic(), cpu_s()
samples.append((t_end, c_end))
ios.append(io_mib())
t_start = t_end - measured_s
c_start, io_start = samples[0][1], ios[0]
for i, ((t0, c0), (t1, c1)) in enumerate(zip(samples, samples[1:])):
    if t0 <= t_start <= t1:
        f = (t_start - t0) / (t1 - t0) if t1 > t0 else 0
        c_start = c0 + (c1 - c0) * f
        io_start = tuple(a + (b - a) * f for a, b in zip(ios[i], ios[i + 1]))
        break
wchar, disk = (e - s for e, s in zip(ios[-1], io_start))
line = (f"rc={p.returncode} wall={t_end - samples[0][0]:.1f}s server_cpu_total={c_end - samples[0][1]:.2f}s "
        f"server_cpu_measured_last_{measured_s:.0f}s={c_end - c_start:.2f}s rss_end={rss_mib():.1f}MiB "
        f"wchar_measured={wchar:.0f}MiB disk_write_measured={disk:.0f}MiB "
        f"loadavg={open('/proc/loadavg').read().split()[0]}")
print(line)
with open(out, "a") as fo:
    fo.write("\n# " + line + "\n")
