#!/bin/bash
# Issues 18 and 24: wide partitions on three-node clusters, RF 3, read at QUORUM. A three-node Varve
# cluster (`varve cluster start`, 127.0.0.1-3) and then, unless SKIP_CASSANDRA=1, a three-node
# Cassandra 5.0.4 (../shared/cassandra/cluster.sh start 3, 127.0.0.11-13): the partitions of PARTS
# (PART:ROWS, default a 10-row partition and one of 200,000 rows of about 500 B, 100 MB) loaded at
# QUORUM by latte (latte/wide.rn -P rf=3), every node flushed, then one row, a 100-row slice and the
# last 10 rows in reverse timed one query at a time through node 1 (wide_partition.py --consistency
# QUORUM; the driver is token-aware, so a replica coordinates and asks one more).
#
#   VARVE=target/release/varve OUT=/tmp/varve-bench/wide-cluster scripts/bench/wide_partition_cluster.sh
# Cassandra is started by this script unless it already runs, and left running at the end.
set -u
here=$(cd "$(dirname "$0")" && pwd); repo=$(cd "$here/../.." && pwd)
V=$(realpath "${VARVE:-$repo/target/release/varve}")
PARTS=${PARTS:-"1:10 2:200000"}
REPEAT=${REPEAT:-100}
out=${OUT:-/tmp/varve-bench/wide-cluster}; mkdir -p "$out"; out=$(realpath "$out")
W=$here/latte/wide.rn; PY=${PY:-$repo/.venv/bin/python3}; CASS=$repo/../shared/cassandra/cluster.sh
log() { echo "[$(date +%T)] $*" | tee -a "$out/summary.txt"; }

# load_and_time NAME HOST FLUSH_COMMAND
load_and_time() {
  local name=$1 host=$2 flush=$3
  latte schema "$W" -P rf=3 "$host" > /dev/null
  for pr in $PARTS; do
    local part=${pr%%:*} rows=${pr##*:}
    latte load "$W" -P rf=3 -P part="$part" -P rows="$rows" --concurrency 64 --consistency QUORUM \
      -q "$host" > "$out/$name-load-$part.txt" 2>&1
    log "$name: loaded partition $part ($rows rows)"
  done
  $flush
  "$PY" "$here/wide_partition.py" "$host" "$out/$name-warmup" $PARTS --repeat 20 --consistency QUORUM > /dev/null
  "$PY" "$here/wide_partition.py" "$host" "$out/$name" $PARTS --repeat "$REPEAT" --consistency QUORUM \
    | tee -a "$out/summary.txt"
}

rm -rf "$out/varve"
"$V" cluster start --nodes 3 --dir "$out/varve" --native-port 9043 --admin-port 9183 --storage-port 17100 \
  > /dev/null
varve_flush() { for i in 1 2 3; do "$V" cluster --dir "$out/varve" nodetool "$i" flush wide > /dev/null; done; }
load_and_time varve 127.0.0.1:9043 varve_flush
"$V" cluster --dir "$out/varve" stop > /dev/null
rm -rf "$out/varve"

[ -n "${SKIP_CASSANDRA:-}" ] && exit 0
if ! "$CASS" status 2>/dev/null | grep -q "c3 up"; then FRESH=1 "$CASS" start 3 > /dev/null; fi
cass_flush() { for i in 1 2 3; do CASS_NAME=c$i CASS_JMX_PORT=$((7200 + i)) "$here/cassandra_nodetool.sh" flush wide; done; }
load_and_time cassandra 127.0.0.11:9042 cass_flush
