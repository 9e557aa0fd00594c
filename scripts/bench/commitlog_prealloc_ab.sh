#!/bin/bash
# Preallocated commitlog segments on and off (docs/benchmarks.md, session 28): three release nodes
# (`varve cluster start`, RF 3, QUORUM), each round plain writes then uncontended LWTs, modes
# alternating. usage: commitlog_prealloc_ab.sh   VARVE=path/to/release/varve  OUT=dir  ROUNDS=3
V=${VARVE:-target/release/varve}; OUT=${OUT:-/tmp/varve-prealloc-ab}; ROUNDS=${ROUNDS:-3}
H=127.0.0.1:9043,127.0.0.2:9043,127.0.0.3:9043
mkdir -p "$OUT"
for round in $(seq "$ROUNDS"); do
  for mode in false true; do
    D=$OUT/c-$mode-$round; rm -rf "$D"; mkdir -p "$D"
    echo "commitlog_preallocate_segments: $mode" > "$D.yaml"
    "$V" cluster start --nodes 3 --dir "$D" --native-port 9043 --admin-port 9183 --storage-port 17100 \
      -- --config "$D.yaml" > "$D.start.log" 2>&1
    sleep 2
    "$V" stress write --pop seq=1..100000000 --duration 10s --warmup 20000 --concurrency 32 --cl QUORUM \
      --replication-factor 3 --hosts $H > "$OUT/plain-$mode-$round.txt" 2>&1
    "$V" stress write --workload lwt --lwt-keys 100000000 --pop seq=1..100000000 --duration 10s \
      --warmup 2000 --concurrency 32 --cl QUORUM --replication-factor 3 --hosts $H > "$OUT/lwt-$mode-$round.txt" 2>&1
    "$V" cluster --dir "$D" stop > /dev/null 2>&1
    echo "preallocate=$mode round $round: plain $(grep -E '^write +total' "$OUT/plain-$mode-$round.txt" | awk '{print $4}') /s," \
      "lwt $(grep -E '^write +total' "$OUT/lwt-$mode-$round.txt" | awk '{print $4}') /s"
  done
done
