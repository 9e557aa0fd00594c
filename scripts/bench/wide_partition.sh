#!/bin/bash
# Issue 24: wide partitions on one server (Varve or Cassandra 5.0.4). Loads partitions of rows of
# about 500 B into wide.t (scripts/bench/latte/wide.rn): PARTS is a list of PART:ROWS (default a
# 10-row partition, one of 200,000 rows (about 100 MB) and one of 2,000,000 rows (about 1 GB)),
# flushes, waits for compactions, then times one row, a 100-row slice and the last 10 rows in
# reverse on each (wide_partition.py, one query at a time). With CAP (e.g. 1536M) the server runs
# in a memory cgroup of that size and the script reports its peak memory; WHOLE=PART also reads
# that partition whole, paging, and counts its rows; MAJOR=1 runs `nodetool compact` on the table
# first, so that each partition lies in one sstable.
#
#   SERVER=varve scripts/bench/wide_partition.sh
#   SERVER=cassandra scripts/bench/wide_partition.sh
#   SERVER=varve CAP=1536M PARTS="4:4000000" WHOLE=4 MAJOR=1 scripts/bench/wide_partition.sh # 2 GB
set -u
SERVER=${SERVER:?varve or cassandra}
PARTS=${PARTS:-"1:10 2:200000 3:2000000"}
here=$(cd "$(dirname "$0")" && pwd); repo=$(cd "$here/../.." && pwd)
W=$here/latte/wide.rn
PY=${PY:-$repo/.venv/bin/python3}
out=${OUT:-/tmp/varve-bench/wide-$SERVER}; mkdir -p "$out"; out=$(realpath "$out"); cd "$out"
CG=/sys/fs/cgroup/memory/wide-$SERVER
log() { echo "[$(date +%T)] $*" | tee -a "$out/summary.txt"; }
in_cgroup() { if [ -n "${CAP:-}" ]; then echo "echo \$\$ > $CG/cgroup.procs;"; fi; }
if [ -n "${CAP:-}" ]; then
  [ -d "$CG" ] && rmdir "$CG" 2>/dev/null
  mkdir -p "$CG"; echo "$CAP" > "$CG/memory.limit_in_bytes"
  echo 0 > "$CG/memory.max_usage_in_bytes" 2>/dev/null
  log "cgroup $CG: $(cat $CG/memory.limit_in_bytes) bytes"
fi

if [ "$SERVER" = varve ]; then
  V=$(realpath "${VARVE:-$repo/target/release/varve}"); HOST=127.0.0.1:9043; ADMIN=9183
  nt() { "$V" nodetool -p $ADMIN "$@"; }
  rm -rf "$out/vdata"
  printf "commitlog_sync: periodic\n" > "$out/varve.yaml"
  bash -c "$(in_cgroup) exec $V server --data-dir $out/vdata --port 9043 --admin-port $ADMIN \
    --config $out/varve.yaml" >> "$out/server.log" 2>&1 &
  SP=$!
  for _ in $(seq 600); do grep -q "varve ready" "$out/server.log" && break; sleep 0.1; done
  stop() { kill "$SP"; wait "$SP"; }
else
  HOST=127.0.0.2:9042; NAME=wide
  nt() { CASS_NAME=$NAME "$here/cassandra_nodetool.sh" "$@"; }
  rm -rf /tmp/cass-lab/$NAME
  bash -c "$(in_cgroup) HEAP=${CASS_HEAP:-1G} ADDR=127.0.0.2 FRESH=1 $repo/../shared/cassandra/start.sh $NAME" \
    >> "$out/server.log" 2>&1
  SP=$(cat /tmp/cass-lab/$NAME/cassandra.pid)
  stop() { "$repo/../shared/cassandra/stop.sh" $NAME >> "$out/server.log" 2>&1; }
fi
pending() { nt compactionstats | awk '/pending tasks/ {p=$3} /compaction type/ {r=1} END {print (r ? "running" : p)}'; }

latte schema "$W" $HOST > /dev/null
for pr in $PARTS; do
  part=${pr%%:*}; rows=${pr##*:}
  start=$(date +%s.%N)
  latte load "$W" -P part=$part -P rows=$rows --concurrency 64 -q $HOST > "$out/load-$part.txt" 2>&1
  log "loaded partition $part: $rows rows in $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s"
done
nt flush wide > /dev/null
calm=0; sleep 10
for _ in $(seq 720); do
  p=$(pending); if [ "${p:-1}" = 0 ]; then calm=$((calm + 1)); else calm=0; fi
  [ $calm -ge 6 ] && break; sleep 5
done
log "compactions settled: $(nt tablestats wide | grep -E 'SSTable count' | tr -s ' \t' ' ')"
if [ -n "${MAJOR:-}" ]; then # one sstable: every partition merged whole
  start=$(date +%s.%N)
  nt compact wide t > /dev/null
  log "major compaction in $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s: \
$(nt tablestats wide | grep -E 'SSTable count' | tr -s ' \t' ' ')"
fi
# The data in the page cache for both servers (it fits in memory), so that the
# queries compare reading through a partition, not the disk.
if [ -z "${CAP:-}" ]; then
  if [ "$SERVER" = varve ]; then D="$out/vdata"; else D=/tmp/cass-lab/$NAME/data; fi
  find "$D" -type f -exec cat {} + > /dev/null
fi
"$PY" "$here/wide_partition.py" $HOST "$out/$SERVER-warmup" $PARTS --repeat 50 > /dev/null
"$PY" "$here/wide_partition.py" $HOST "$out/$SERVER" $PARTS --repeat 200 | tee -a "$out/summary.txt"
if [ -n "${WHOLE:-}" ]; then
  start=$(date +%s.%N)
  n=$("$PY" - "$HOST" "$WHOLE" <<'EOF'
import sys
from cassandra.cluster import Cluster
from cassandra.query import SimpleStatement
host, port = sys.argv[1].rsplit(":", 1)
s = Cluster([host], port=int(port), protocol_version=4).connect()
q = SimpleStatement(f"SELECT c FROM wide.t WHERE p = {int(sys.argv[2])}", fetch_size=5000)
expect, n = 0, 0
for row in s.execute(q, timeout=120):
    assert row.c == expect, (row.c, expect)
    expect += 1
    n += 1
print(n)
EOF
)
  log "read partition $WHOLE whole: $n rows in order in $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s"
fi
if [ -n "${CAP:-}" ]; then
  log "cgroup peak $(( $(cat $CG/memory.max_usage_in_bytes) >> 20 )) MiB (page cache included), \
OOM kills $(grep oom_kill $CG/memory.oom_control | awk '{print $2}' | tail -1)"
fi
stop
log "done: $out"
