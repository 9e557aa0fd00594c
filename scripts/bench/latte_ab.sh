#!/bin/bash
# One quick latte run against one Varve build, for back-to-back A/B comparisons of builds
# (docs/benchmarks.md, session 4). A fresh data directory per run; for reads, ROWS rows are
# loaded and flushed first. Prints throughput, server CPU (measure_cpu.py) and p99.
# usage: latte_ab.sh LABEL VARVE_BINARY write|read SECONDS [ROWS]
#   CONF=path/to/varve.yaml (default: periodic commitlog), OUT=dir (default /tmp/varve-ab),
#   RATE=ops/s (default: as fast as the client goes). A fixed rate gives both builds the same
#   work, so their server CPU compares directly; it is steadier on a noisy machine.
#   COL_SIZE=bytes per column (default 34: 180 B rows; 6544: 32 KiB rows).
#   LATTE_ARGS=extra connection arguments for every latte command (TLS and a login:
#   "--ssl --ssl-ca ca.pem --user cassandra --password cassandra"; docs/benchmarks.md, session 22).
#   Prints the server's anonymous memory (RssAnon) at the end, then deletes the run's data.
set -u
P="-P col_size=${COL_SIZE:-34}"
L=$1; B=$2; FN=$3; D=$4; ROWS=${5:-2000000}
W=/work/shared/bench/latte/stress.rn; H=127.0.0.1:9043
here=$(cd "$(dirname "$0")" && pwd); out=${OUT:-/tmp/varve-ab}; mkdir -p "$out"
conf=${CONF:-$out/varve.yaml}
[ -f "$conf" ] || printf "commitlog_sync: periodic\ncommitlog_sync_period: 10000ms\n" > "$conf"
rm -rf "$out/vdata-$L"; mkdir -p "$out/vdata-$L"
B=$(realpath "$B"); out=$(realpath "$out"); conf=$(realpath "$conf")
# latte writes its JSON report and log into the working directory: run it in $out.
cd "$out"
"$B" server --data-dir "$out/vdata-$L" --port 9043 --admin-port 9183 --config "$conf" > "$out/$L-server.log" 2>&1 &
VP=$!; sleep 1
latte schema $W $P ${LATTE_ARGS:-} $H > /dev/null 2>&1
if [ "$FN" = read ]; then
  latte load $W $P ${LATTE_ARGS:-} -P rows=$ROWS --concurrency 64 -q $H > /dev/null 2>&1
  "$B" nodetool -p 9183 flush keyspace1; sleep 5
fi
python3 "$here/measure_cpu.py" $VP $D "$out/$L.txt" -- latte run $W $P ${LATTE_ARGS:-} -f $FN -P rows=$ROWS -p 64 -d ${D}s -w 5s ${RATE:+-r $RATE} -q $H > "$out/$L.measure"
thr=$(grep -E 'Throughput' "$out/$L.txt" | tr -s ' ' | cut -d' ' -f4)
p99=$(grep -E '^ +99 ' "$out/$L.txt" | head -1 | tr -s ' ')
echo "$L $FN: thr=$thr | $(cat "$out/$L.measure") | p99:$p99"
grep RssAnon /proc/$VP/status
kill $VP; wait $VP 2>/dev/null
# A 25 s run of 32 KiB writes leaves several GB: keep the disk from filling over a series of runs.
rm -rf "$out/vdata-$L"
