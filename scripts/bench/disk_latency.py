#!/usr/bin/env python3
"""Latency of 16 KiB random reads of FILE with O_DIRECT, one at a time: what a
client's chunk read that misses every cache waits for. Run it alone, then beside
a background reader or writer (`ionice -c3 dd ... iflag=direct bs=1M`) to see
how long a request of that size holds the disk (docs/benchmarks.md, session 14).

usage: disk_latency.py FILE [READS]"""
import mmap
import os
import random
import sys
import time

PIECE = 16384


def main():
    path = sys.argv[1]
    reads = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    pieces = os.fstat(fd).st_size // PIECE - 1
    buf = mmap.mmap(-1, PIECE)  # page-aligned, as O_DIRECT needs
    took = []
    for _ in range(reads):
        at = random.randrange(0, pieces) * PIECE
        start = time.perf_counter()
        os.preadv(fd, [buf], at)
        took.append(time.perf_counter() - start)
    took.sort()
    ms = lambda q: took[min(int(reads * q), reads - 1)] * 1e3
    print(f"p50={ms(0.5):.3f} p90={ms(0.9):.3f} p99={ms(0.99):.3f} max={took[-1] * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
