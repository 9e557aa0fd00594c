#!/bin/bash
# Two builds of Varve on uncontended LWTs (docs/benchmarks.md, session 35): three release nodes
# (`varve cluster start`, RF 3), `varve stress` with `IF NOT EXISTS` on distinct keys at QUORUM,
# 32 clients; the builds alternate, ROUNDS rounds. Prints each run's rate, the three nodes' CPU
# over the measured seconds, and operations per server CPU-second (the machine has two cores and
# the run is CPU-bound, so the last is the steadier figure).
# usage: lwt_ab.sh A_BIN B_BIN     OUT=dir  ROUNDS=3  SECONDS_EACH=12  WORKLOAD=lwt|plain
A=$1; B=$2; OUT=${OUT:-/tmp/varve-lwt-ab}; ROUNDS=${ROUNDS:-3}; S=${SECONDS_EACH:-12}
W=${WORKLOAD:-lwt}
H=127.0.0.1:9043,127.0.0.2:9043,127.0.0.3:9043
TICK=$(getconf CLK_TCK)
mkdir -p "$OUT"
ticks() { for p in "$@"; do awk '{s += $14 + $15} END {printf "%d ", s}' "/proc/$p/stat"; done; }
for round in $(seq "$ROUNDS"); do
  for which in A B; do
    bin=$A; [ $which = B ] && bin=$B
    D=$OUT/c-$which-$round; rm -rf "$D"; mkdir -p "$D"
    "$bin" cluster start --nodes 3 --dir "$D" --native-port 9043 --admin-port 9183 --storage-port 17100 \
      > "$D.start.log" 2>&1
    sleep 2
    pids=$(for i in 1 2 3; do cat "$D/node$i/pid"; echo; done)
    case $W in
      lwt) args="--workload lwt --lwt-keys 100000000 --warmup 2000" ;;
      *) args="--warmup 20000" ;;
    esac
    # CPU is read from second 4 (after the start transient) to the end.
    ( sleep 4; ticks $pids > "$D.t0"; sleep $((S - 5)); ticks $pids > "$D.t1" ) &
    "$bin" stress write $args --pop seq=1..100000000 --duration "${S}s" --concurrency 32 --cl QUORUM \
      --replication-factor 3 --hosts $H > "$OUT/$W-$which-$round.txt" 2>&1
    wait
    "$bin" cluster --dir "$D" stop > /dev/null 2>&1
    rate=$(grep -E '^write +total' "$OUT/$W-$which-$round.txt" | awk '{print $4}')
    python3 - "$D.t0" "$D.t1" "$rate" "$S" "$TICK" "$which" "$round" <<'PY'
import sys
t0, t1 = (list(map(int, open(f).read().split())) for f in sys.argv[1:3])
rate, secs, tick = float(sys.argv[3].replace(",", "")), int(sys.argv[4]), int(sys.argv[5])
cpu = (sum(t1) - sum(t0)) / tick / (secs - 5)
print(f"{sys.argv[6]} round {sys.argv[7]}: {rate:,.0f} ops/s, nodes {cpu:.2f} cores, "
      f"{rate / cpu:,.0f} ops per server CPU-second")
PY
  done
done
