#!/bin/bash
# Issue 24: an A/B of Varve builds (or settings) on data larger than memory, each run starting
# from the same loaded data. `load` loads ROWS rows of VALUE_SIZE bytes of
# ../shared/bench/latte/mixed.rn's table once (8 GB at the defaults), waits for compactions to
# settle and keeps that data directory as PRISTINE. Each `run` restores it (sstables hard-linked,
# smaller files copied: sstables are never written in place), drops the page cache, starts the
# node in a memory cgroup of CAP, offers the 5:4:1 mix at 3,000/s for WARM_S, then unthrottled for
# RUN_S, and prints one line: operations, server CPU ticks (1/100 s) and operations per server
# CPU-second of the unthrottled phase, with the chunk cache's lookups and misses and the disk's
# reads over it, and the cgroup's peak anonymous memory from then on. `gc` restores it the same
# way, offers 3,000/s for WARM_S, measures BEFORE_S more
# seconds at that rate, then runs `nodetool garbagecollect` with the client at 3,000/s for at most
# GC_MAX_S, and prints both phases' read latencies and the ratio of their p99s; meanwhile it
# samples the server's metrics, the disk and the cgroup every second (OUT/NAME/samples.txt), and
# gc_seconds.py lays each second's read p99 beside them (OUT/NAME/seconds.txt).
# Needs root (cgroups, drop_caches) and latte.
#
#   scripts/bench/larger_than_memory_ab.sh load target/release/varve
#   for r in 1 2 3; do
#     scripts/bench/larger_than_memory_ab.sh run /tmp/varve-a a$r
#     scripts/bench/larger_than_memory_ab.sh run /tmp/varve-b b$r
#   done
#   WARM_S=60 scripts/bench/larger_than_memory_ab.sh gc /tmp/varve-a gc-a1
#
# Env: CAP (2560M), ROWS (2000000), VALUE_SIZE (4096), WARM_S (30), RUN_S (40), BEFORE_S (60),
#      GC_MAX_S (180), OUT (/tmp/varve-bench/ltm-ab), PRISTINE (OUT/pristine),
#      VARVE_YAML (extra config lines),
#      PERF=1 records a profile of the unthrottled phase (OUT/NAME/perf.data).
set -u
CMD=${1:?load, run or gc}; V=$(realpath "${2:?varve binary}"); NAME=${3:-load}
CAP=${CAP:-2560M}; ROWS=${ROWS:-2000000}; VALUE_SIZE=${VALUE_SIZE:-4096}
WARM_S=${WARM_S:-30}; RUN_S=${RUN_S:-40}; BEFORE_S=${BEFORE_S:-60}; GC_MAX_S=${GC_MAX_S:-180}
here=$(cd "$(dirname "$0")" && pwd); repo=$(cd "$here/../.." && pwd)
W=$repo/../shared/bench/latte/mixed.rn
P="-P rows=$ROWS -P value_size=$VALUE_SIZE"
base=${OUT:-/tmp/varve-bench/ltm-ab}; PRISTINE=${PRISTINE:-$base/pristine}
out=$base/$NAME; mkdir -p "$out"
CG=/sys/fs/cgroup/memory/ltm-ab
HOST=127.0.0.1:9043; ADMIN=9183
. "$here/capped_varve.sh"   # capped_cgroup, start_capped_varve
. "$here/settle.sh"         # settle SECONDS NODETOOL...
capped_cgroup $CG "$CAP"

start() { start_capped_varve "$V" $CG "$out" $ADMIN; }
stop() { kill "$SP"; wait "$SP"; }
metric() { curl -s "localhost:$ADMIN/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
disk_reads() { awk '$3 !~ /[0-9]$/ || $3 ~ /^nvme[0-9]+n[0-9]+$/ {r += $4} END {print r}' /proc/diskstats; }
ticks() { awk '{print $14 + $15}' "/proc/$SP/stat"; }

if [ "$CMD" = load ]; then
  rm -rf "$out/vdata"; start
  latte schema "$W" $P $HOST > /dev/null
  latte load "$W" $P --concurrency 64 -q $HOST > "$out/load.txt"
  "$V" nodetool -p $ADMIN flush kv
  settle 3600 "$V" nodetool -p $ADMIN
  stop
  rm -rf "$PRISTINE"; cp -a "$out/vdata" "$PRISTINE"
  echo "loaded: $(du -sh "$PRISTINE" | cut -f1) in $PRISTINE"
  exit 0
fi

rm -rf "$out/vdata"; cp -al "$PRISTINE" "$out/vdata"
find "$PRISTINE" -type f -size -64M -printf '%P\n' |
  while read -r f; do cp --remove-destination "$PRISTINE/$f" "$out/vdata/$f"; done
sync; echo 3 > /proc/sys/vm/drop_caches
start
sampler() { # one line a second: time, metrics, disk (reads, writes, busy ms, sectors read), page cache, CPU ticks
  while kill -0 "$SP" 2>/dev/null; do
    m=$(curl -s --max-time 1 "localhost:$ADMIN/metrics")
    sum() { echo "$m" | awk -v k="$1" 'index($1, k) == 1 {s += $2} END {printf "%d", s}'; }
    echo "$(date +%s) comp_bytes=$(sum varve_compaction_bytes_compacted_total)" \
      "comps=$(sum varve_compactions_completed_total)" \
      "share=$(echo "$m" | awk '$1 ~ /^varve_compaction_throughput_share/ {print $2}')" \
      "sstables=$(sum varve_table_live_sstables) rs_active=$(sum varve_read_stage_active)" \
      "rs_pending=$(sum varve_read_stage_pending) misses=$(sum varve_chunk_cache_misses_total)" \
      "disk=$(awk '$3 !~ /[0-9]$/ || $3 ~ /^nvme[0-9]+n[0-9]+$/ {r += $4; w += $8; b += $13; s += $6} END {print r "," w "," b "," s}' /proc/diskstats)" \
      "cache=$(awk '$1 == "total_cache" {printf "%d", $2 / 1048576}' $CG/memory.stat) ticks=$(ticks)" >> "$out/samples.txt"
    sleep 1
  done
}
latte run "$W" -f read:5,write:4,delete:1 $P -r 3000 -p 64 -d "${WARM_S}s" -w 5s -q $HOST > "$out/warm.txt"
if [ "$CMD" = gc ]; then
  rm -f "$out/samples.txt" "$out/marks.txt"; sampler &
  echo "before $(date +%s)" >> "$out/marks.txt"
  latte run "$W" -f read:5,write:4,delete:1 $P -r 3000 -p 64 -d "${BEFORE_S}s" -w 0s -q \
    -o "$out/before.json" $HOST > /dev/null
  echo "gc $(date +%s)" >> "$out/marks.txt"
  ( "$V" nodetool -p $ADMIN garbagecollect kv keyvaluelargeblob_2 > "$out/gc.txt" 2>&1
    echo "gc_rc $?" >> "$out/marks.txt"; echo "gc_end $(date +%s)" >> "$out/marks.txt" ) &
  GCP=$!
  latte run "$W" -f read:5,write:4,delete:1 $P -r 3000 -p 64 -d "${GC_MAX_S}s" -w 0s -q \
    -o "$out/during.json" $HOST > /dev/null
  stop; wait "$GCP"
  python3 "$here/gc_seconds.py" "$out" > "$out/seconds.txt"
  echo "$NAME $(tail -1 "$out/seconds.txt")" | tee -a "$base/results.txt"
  exit 0
fi
h0=$(metric varve_chunk_cache_hits_total); m0=$(metric varve_chunk_cache_misses_total)
d0=$(disk_reads); t0=$(ticks)
PP=
if [ "${PERF:-0}" = 1 ]; then
  perf record -F 499 -g -p "$SP" -o "$out/perf.data" -- sleep "$RUN_S" > /dev/null 2>&1 &
  PP=$!
fi
( peak=0  # the cgroup's largest anonymous memory, sampled every second
  while kill -0 "$SP" 2>/dev/null; do
    rss=$(awk '$1 == "total_rss" {printf "%d", $2 / 1048576}' $CG/memory.stat)
    [ "$rss" -gt "$peak" ] && { peak=$rss; echo "$peak" > "$out/peak_rss_mib"; }
    sleep 1
  done ) &
latte run "$W" -f read:5,write:4,delete:1 $P -p 64 -d "${RUN_S}s" -w 0s -q $HOST > "$out/unthrottled.txt"
t1=$(ticks); d1=$(disk_reads)
h1=$(metric varve_chunk_cache_hits_total); m1=$(metric varve_chunk_cache_misses_total)
curl -s "localhost:$ADMIN/metrics" > "$out/metrics.txt"
[ -n "$PP" ] && wait "$PP"
stop
ops=$(awk '/Cycles *\[op\]/ {print $3}' "$out/unthrottled.txt")
echo "$NAME ops=$ops ops_s=$((ops / RUN_S)) cpu_ticks=$((t1 - t0)) ops_per_cpu_s=$((ops * 100 / (t1 - t0))) chunk_lookups=$((h1 - h0 + m1 - m0)) chunk_misses=$((m1 - m0)) disk_reads=$((d1 - d0)) peak_anonymous_mib=$(cat "$out/peak_rss_mib")" | tee -a "$base/results.txt"
