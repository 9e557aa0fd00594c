#!/bin/bash
# Issues 18 and 19: a three-node Varve cluster (`varve cluster start --nodes 3`, 127.0.0.1-3) beside a
# three-node Cassandra 5.0.4 cluster (../shared/cassandra/cluster.sh start 3, 127.0.0.11-13), RF 3,
# the same latte workloads and concurrency against each in turn. Server CPU is summed over the three
# processes of each cluster (measure_cpu.py with three PIDs), for operations per server CPU-second.
#
# usage: cluster_side_by_side.sh [PHASES]        PHASES: any of stress lwt (default: both)
#   VARVE=path/to/release/varve   OUT=dir (default /tmp/varve-cluster-bench)   D=seconds per run (20)
#   CONC=client concurrency (64)   ROWS=rows loaded before reads (200000)   SKIP_CASSANDRA=1
# Cassandra is started by this script unless it already runs, and left running at the end
# (../shared/cassandra/cluster.sh stop stops it).
set -u
phases=${1:-"stress lwt"}
here=$(cd "$(dirname "$0")" && pwd)
V=$(realpath "${VARVE:-target/release/varve}")
out=${OUT:-/tmp/varve-cluster-bench}; mkdir -p "$out"; out=$(realpath "$out")
D=${D:-20}; CONC=${CONC:-64}; ROWS=${ROWS:-200000}
S=/work/shared/bench/latte/stress.rn; L=/work/shared/bench/latte/lwt.rn
CASS=/work/shared/cassandra/cluster.sh
VH=127.0.0.1:9043; CH=127.0.0.11:9042
cd "$out"

# run LABEL PIDS HOST WORKLOAD FUNCTION CONSISTENCY [latte args...]
run() {
  local label=$1 pids=$2 host=$3 w=$4 fn=$5 cl=$6; shift 6
  python3 "$here/measure_cpu.py" "$pids" "$D" "$out/$label.txt" -- \
    latte run "$w" -f "$fn" -P rf=3 "$@" -p "$CONC" -d "${D}s" -w 5s --consistency "$cl" -q "$host" \
    > "$out/$label.measure"
  local thr p99 cpu
  thr=$(grep -E 'Throughput' "$out/$label.txt" | head -1 | tr -s ' ' | cut -d' ' -f4)
  p99=$(grep -E '^ +99 ' "$out/$label.txt" | head -1 | tr -s ' ' | cut -d' ' -f3)
  cpu=$(sed -E 's/.*server_cpu_measured_last_[0-9]+s=([0-9.]+)s.*/\1/' "$out/$label.measure")
  local per_cpu
  per_cpu=$(python3 -c "t=float('${thr:-0}' or 0); c=float('${cpu:-0}' or 0); print(round(t*$D/c) if c else 0)")
  echo "$label: ops/s=$thr p99_ms=$p99 server_cpu_s=$cpu ops_per_cpu_s=$per_cpu | $(cat "$out/$label.measure")" | tee -a "$out/summary.txt"
  # Varve's LWT counters so far (conditions not met, unknown results), summed over its nodes.
  if [ "$host" = "$VH" ]; then
    for i in 1 2 3; do curl -s "http://127.0.0.$i:9183/metrics"; done \
      | grep -E '^varve_cas_(condition_not_met|unknown_results)' \
      | awk '{split($1, a, "{"); t[a[1]] += $2} END {for (k in t) printf "%s=%d ", k, t[k]; print ""}' \
      | sed "s/^/$label totals so far: /" | tee -a "$out/summary.txt"
  fi
}

load() { # HOST COL_SIZE
  latte schema "$S" -P rf=3 -P col_size="$2" "$1" > /dev/null 2>&1
  latte load "$S" -P rf=3 -P col_size="$2" -P rows="$ROWS" --concurrency "$CONC" --consistency QUORUM -q "$1" > /dev/null 2>&1
}

stress() { # NAME PIDS HOST
  local n=$1 pids=$2 host=$3
  for size in 34 818; do
    latte schema "$S" -P rf=3 -P col_size=$size "$host" > /dev/null 2>&1
    run "$n-write-$size-quorum" "$pids" "$host" "$S" write QUORUM -P col_size=$size
    run "$n-write-$size-local_quorum" "$pids" "$host" "$S" write LOCAL_QUORUM -P col_size=$size
    load "$host" $size
    run "$n-read-$size-quorum" "$pids" "$host" "$S" read QUORUM -P col_size=$size -P rows="$ROWS"
    run "$n-read-$size-local_quorum" "$pids" "$host" "$S" read LOCAL_QUORUM -P col_size=$size -P rows="$ROWS"
  done
}

lwt() { # NAME PIDS HOST
  local n=$1 pids=$2 host=$3
  latte schema "$L" -P rf=3 "$host" > /dev/null 2>&1
  run "$n-plain_insert" "$pids" "$host" "$L" plain_insert QUORUM
  run "$n-lwt_insert" "$pids" "$host" "$L" lwt_insert QUORUM
  run "$n-cas_max" "$pids" "$host" "$L" cas_max QUORUM
  # Every client on one key, a condition that always holds: each statement applies.
  run "$n-cas_exists" "$pids" "$host" "$L" cas_exists QUORUM
}

# Varve
rm -rf "$out/varve"
"$V" cluster start --nodes 3 --dir "$out/varve" --native-port 9043 --admin-port 9183 --storage-port 17100
vpids=$(for i in 1 2 3; do echo "$(cat "$out/varve/node$i/pid")"; done | paste -sd,)
for p in $phases; do $p varve "$vpids" "$VH"; done
for i in 1 2 3; do echo "varve node$i RSS: $(grep VmRSS /proc/$(cat "$out/varve/node$i/pid")/status)"; done | tee -a "$out/summary.txt"
"$V" cluster --dir "$out/varve" stop
rm -rf "$out/varve"

# Cassandra
[ -n "${SKIP_CASSANDRA:-}" ] && exit 0
if ! "$CASS" status 2>/dev/null | grep -q "c3 up"; then FRESH=1 "$CASS" start 3; fi
cpids=$(for i in 1 2 3; do echo "$(cat /tmp/cass-lab/c$i/cassandra.pid)"; done | paste -sd,)
for p in $phases; do $p cassandra "$cpids" "$CH"; done
