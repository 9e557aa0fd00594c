#!/bin/bash
# Issue 19 / seed 003: `varve bench lwt` on three Varve nodes (`varve cluster start --nodes 3`,
# 127.0.0.1-3) and on three Cassandra 5.0.4 nodes (../shared/cassandra/cluster.sh start 3,
# 127.0.0.11-13), RF 3 at QUORUM, then `varve report` comparing the two runs.
#
# usage: lwt_bench_cluster.sh
#   VARVE=path/to/release/varve   OUT=dir (default /tmp/varve-lwt-bench)   SIZE=tiny|small|full (small)
#   SKIP_CASSANDRA=1 (Varve only)
#   DELAY_MS=N: Varve's nodes add N ms to every internode send (`internode_send_delay_ms`, a round
#     trip of 2N ms, as between seed 003's data centres); Cassandra's cannot (this kernel has no
#     netem), so with DELAY_MS set only Varve runs
# Cassandra is started by this script unless it already runs, and left running at the end
# (../shared/cassandra/cluster.sh stop stops it).
set -eu
V=$(realpath "${VARVE:-target/release/varve}")
OUT=${OUT:-/tmp/varve-lwt-bench}; SIZE=${SIZE:-small}
CASS=/work/shared/cassandra/cluster.sh
rm -rf "$OUT"; mkdir -p "$OUT"
pids_of() { for f in "$@"; do echo "$(cat "$f")"; done | paste -sd,; }

node_args=()
if [ -n "${DELAY_MS:-}" ]; then
  echo "internode_send_delay_ms: $DELAY_MS" > "$OUT/delay.yaml"
  node_args=(-- --config "$OUT/delay.yaml")
  SKIP_CASSANDRA=1
fi
"$V" cluster start --nodes 3 --dir "$OUT/vc" --native-port 9043 --admin-port 9183 --storage-port 17100 "${node_args[@]}"
vpids=$(pids_of "$OUT"/vc/node{1,2,3}/pid)
"$V" bench lwt --size "$SIZE" --out "$OUT/varve" --hosts 127.0.0.1:9043,127.0.0.2:9043,127.0.0.3:9043 \
  --admin http://127.0.0.1:9183,http://127.0.0.2:9183,http://127.0.0.3:9183 \
  --server-pid "$vpids" --replication-factor 3 --consistency QUORUM --quiet
"$V" cluster --dir "$OUT/vc" stop

[ -n "${SKIP_CASSANDRA:-}" ] && exit 0
if ! "$CASS" status 2>/dev/null | grep -q "c3 up"; then FRESH=1 "$CASS" start 3; fi
cpids=$(pids_of /tmp/cass-lab/c{1,2,3}/cassandra.pid)
"$V" bench lwt --size "$SIZE" --out "$OUT/cassandra" --hosts 127.0.0.11:9042 \
  --gc-log /tmp/cass-lab/c1/logs/gc.log --gc-log /tmp/cass-lab/c2/logs/gc.log --gc-log /tmp/cass-lab/c3/logs/gc.log \
  --server-pid "$cpids" --replication-factor 3 --consistency QUORUM --quiet
"$V" report "$OUT/varve" "$OUT/cassandra" --out "$OUT/compare"
