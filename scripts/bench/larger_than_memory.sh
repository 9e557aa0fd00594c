#!/bin/bash
# Issue 24: a node holding several times its memory. One server (Varve or Cassandra 5.0.4) in a
# memory cgroup (v1, page cache included) of CAP, ROWS rows of VALUE_SIZE bytes in
# ../shared/bench/latte/mixed.rn's table (8 GB at the defaults), then the seeds' 5:4:1
# read/write/delete mix: at RATE/s, unthrottled, at RATE/s once compactions settled again
# (before-gc: the state the garbagecollect starts from), at RATE/s while `nodetool garbagecollect`
# runs, and at RATE/s after it. Server CPU from /proc, per-second throughput and p99 from latte's
# sampling log (latte_seconds.py). Needs root (cgroups, drop_caches) and latte.
#
#   SERVER=varve CAP=1536M scripts/bench/larger_than_memory.sh
#   SERVER=cassandra CAP=1536M scripts/bench/larger_than_memory.sh
#
# Env: ROWS (2000000), VALUE_SIZE (4096), RATE (3000), PHASE_S (120), GC_MAX_S (900),
#      OUT (/tmp/varve-bench/ltm-$SERVER-$CAP), KEEP=1 reuses a loaded data directory,
#      VARVE (target/release/varve), VARVE_YAML (extra lines for Varve's config),
#      CASS_HEAP (1G).
set -u
SERVER=${SERVER:?varve or cassandra}; CAP=${CAP:?e.g. 1536M}
ROWS=${ROWS:-2000000}; VALUE_SIZE=${VALUE_SIZE:-4096}; RATE=${RATE:-3000}; PHASE_S=${PHASE_S:-120}
GC_MAX_S=${GC_MAX_S:-900}
here=$(cd "$(dirname "$0")" && pwd); repo=$(cd "$here/../.." && pwd)
W=$repo/../shared/bench/latte/mixed.rn
out=${OUT:-/tmp/varve-bench/ltm-$SERVER-$CAP}; mkdir -p "$out"; out=$(realpath "$out"); cd "$out"
P="-P rows=$ROWS -P value_size=$VALUE_SIZE"
CG=/sys/fs/cgroup/memory/ltm-$SERVER

log() { echo "[$(date +%T)] $*" | tee -a "$out/summary.txt"; }

. "$here/capped_varve.sh"   # capped_cgroup, start_capped_varve

cgroup() { # a fresh memory cgroup of CAP
  capped_cgroup "$CG" "$CAP"
  log "cgroup $CG: limit $(cat "$CG/memory.limit_in_bytes") bytes"
}

drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches; }

if [ "$SERVER" = varve ]; then
  V=$(realpath "${VARVE:-$repo/target/release/varve}")
  HOST=127.0.0.1:9043; ADMIN=9183
  nt() { "$V" nodetool -p $ADMIN "$@"; }
  start() { start_capped_varve "$V" "$CG" "$out" $ADMIN; }
  stop() { [ -n "${SP:-}" ] || return 0; kill "$SP"; wait "$SP"; SP=; }
  wipe() { rm -rf "$out/vdata"; }

else
  HOST=127.0.0.2:9042
  NAME=ltm
  nt() { CASS_NAME=$NAME "$here/cassandra_nodetool.sh" "$@"; }
  start() {
    bash -c "echo \$\$ > $CG/cgroup.procs; HEAP=${CASS_HEAP:-1G} ADDR=127.0.0.2 \
      $repo/../shared/cassandra/start.sh $NAME" >> "$out/server.log" 2>&1
    SP=$(cat /tmp/cass-lab/$NAME/cassandra.pid)
  }
  stop() { "$repo/../shared/cassandra/stop.sh" $NAME >> "$out/server.log" 2>&1; }
  wipe() { FRESH=1; rm -rf /tmp/cass-lab/$NAME; }

fi

# Pending compactions, or "running" while one runs.
pending() { nt compactionstats | awk '/pending tasks/ {p=$3} /compaction type/ {r=1} END {print (r ? "running" : p)}'; }

settle() { # waits until no compaction is pending for 30 s in a row (at most an hour)
  local calm=0
  sleep 10
  for _ in $(seq 720); do
    p=$(pending)
    if [ "${p:-1}" = 0 ]; then calm=$((calm + 1)); else calm=0; fi
    [ $calm -ge 6 ] && break
    sleep 5
  done
  log "pending compactions: $(pending); $(nt compactionstats | head -3 | tr '\n' ' ')"
}

# Varve: "chunk-cache-hits misses client-reads" from its metrics (totals since start).
chunk_counts() {
  [ "$SERVER" = varve ] || return 0
  curl -s "localhost:$ADMIN/metrics" | awk '
    /^varve_chunk_cache_hits_total / {h=$2} /^varve_chunk_cache_misses_total / {m=$2}
    /^varve_client_request_latency_seconds_count\{operation="read"\}/ {r=$2}
    END {print h+0, m+0, r+0}'
}

# Chunks looked up and missed per client read between two chunk_counts.
chunks_per_read() {
  [ "$SERVER" = varve ] || return 0
  echo "$1 $2" | awk '{r=$6-$3; if (r>0) printf "chunk cache: %.2f chunks looked up, %.2f missed per read (%d reads)", ($4-$1+$5-$2)/r, ($5-$2)/r, r}'
}

run() { # label rate(0: unthrottled) seconds
  local rate=""; [ "$2" != 0 ] && rate="-r $2"
  local before; before=$(chunk_counts)
  python3 "$here/measure_cpu.py" "$SP" "$3" "$out/$1.txt" -- \
    latte run "$W" -f read:5,write:4,delete:1 $P $rate -p 64 -d "${3}s" -w 5s -q \
      -o "$out/$1.json" $HOST > "$out/$1.measure"
  log "$1: $(cat "$out/$1.measure")"
  [ "$SERVER" = varve ] && log "$1: $(chunks_per_read "$before" "$(chunk_counts)")"
  log "$1: $(python3 "$here/latte_seconds.py" "$out/$1.json" ${2:-0})"
  log "$1: cgroup usage $(( $(cat $CG/memory.usage_in_bytes) >> 20 )) MiB, max $(( $(cat $CG/memory.max_usage_in_bytes) >> 20 )) MiB"
}

memory_sampler() { # every 5 s: the cgroup's anonymous memory, page cache and OOM kills
  while [ -d "$CG" ]; do
    echo "$(date +%T) $(awk '$1=="total_rss"||$1=="total_cache"{printf "%s=%dMiB ", $1, $2/1048576}' \
      "$CG/memory.stat") $(grep oom_kill "$CG/memory.oom_control" | tr '\n' ' ')" >> "$out/memory.txt"
    sleep 5
  done
}

cgroup
memory_sampler &
SAMPLER=$!
if [ "${KEEP:-0}" != 1 ]; then
  stop 2>/dev/null; wipe
  start
  latte schema "$W" $P $HOST > /dev/null
  log "loading $ROWS rows of $VALUE_SIZE B"
  python3 "$here/measure_cpu.py" "$SP" 1 "$out/load.txt" -- \
    latte load "$W" $P --concurrency 64 -q $HOST > "$out/load.measure"
  log "load: $(cat "$out/load.measure")"
  nt flush kv; settle
  stop
fi
drop_caches
start
log "started: $(grep -c . "$out/server.log") log lines; data $(du -sh "$out" | cut -f1)"
run steady "$RATE" "$PHASE_S"
run unthrottled 0 "$PHASE_S"
# The unthrottled phase leaves more sstables (reads touch about twice as many): let compactions
# settle, then measure the steady state the garbagecollect starts from.
settle
run before-gc "$RATE" "$PHASE_S"
# garbagecollect in the background; the client runs at RATE/s until it ends (at most GC_MAX_S).
gc_chunks=$(chunk_counts)
gc_start=$(date +%s.%N)
( nt garbagecollect kv keyvaluelargeblob_2 > "$out/gc.txt" 2>&1; date +%s.%N > "$out/gc.end" ) &
GCP=$!
python3 "$here/measure_cpu.py" "$SP" 1 "$out/during-gc.txt" -- bash -c "
  latte run $W -f read:5,write:4,delete:1 $P -r $RATE -p 64 -d ${GC_MAX_S}s -w 0 -q -o $out/during-gc.json $HOST &
  L=\$!; while kill -0 \$L 2>/dev/null && kill -0 $GCP 2>/dev/null; do sleep 1; done; kill -INT \$L 2>/dev/null; wait \$L" \
  > "$out/during-gc.measure"
wait $GCP
log "garbagecollect took $(python3 -c "print(round($(cat "$out/gc.end") - $gc_start, 1))") s: $(tail -1 "$out/gc.txt")"
log "during-gc: $(cat "$out/during-gc.measure")"
[ "$SERVER" = varve ] && log "during-gc: $(chunks_per_read "$gc_chunks" "$(chunk_counts)") (the garbagecollect's shadow lookups included)"
log "during-gc: $(python3 "$here/latte_seconds.py" "$out/during-gc.json" "$RATE")"
settle
run after "$RATE" "$PHASE_S"
stop
log "memory: $(awk '{for (i=2; i<=NF; i++) if ($i ~ /^total_rss=/) {v=substr($i,11)+0; if (v>m) m=v}} END {print "peak anonymous " m " MiB"}' "$out/memory.txt"), $(tail -1 "$out/memory.txt")"
kill $SAMPLER
log "done: $out"
