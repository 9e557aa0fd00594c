#!/bin/bash
# Issue 3: latte writes and reads of 2, 4, 8, 16 and 32 KiB rows (five blob columns of col_size bytes),
# Varve then Cassandra, one server at a time, server CPU from /proc (measure_cpu.py).
# Each size: a fresh table; a write run over new keys; the ROWS keys loaded; a flush; a read run.
# ROWS per size is chosen so that the loaded data (about 0.8-1 GB) is 3-4x Varve's default memtable
# budget (256 MiB). Cassandra must already run (ADDR=127.0.0.2 ../shared/cassandra/start.sh bench).
# SETTLE=seconds: before each read run, wait (up to that long) until the server has no compaction
# pending or running, so that the reads run over settled data and no compaction's CPU is counted
# against them (both servers alike). Unset: the reads start 10 s after the flush, as in R1-R5.
# usage: VARVE=target/release/varve OUT=/tmp/varve-bench/R [SIZES="32k:6544:25000"] [SETTLE=300] scripts/bench/latte_rowsizes.sh
set -u
W=/work/shared/bench/latte/stress.rn
V=${VARVE:-target/release/varve}; VH=127.0.0.1:9043; CH=127.0.0.2:9042
D=${DUR:-15}
out=${OUT:-/tmp/varve-bench/R}; mkdir -p $out; here=$(cd "$(dirname "$0")" && pwd)
V=$(realpath "$V"); out=$(realpath "$out"); cd "$out"
# size label, col_size, rows loaded
SIZES=${SIZES:-"2k:409:400000 4k:818:200000 8k:1636:100000 16k:3272:50000 32k:6544:25000"}
run() { # label pid host fn rows col
  python3 $here/measure_cpu.py $2 $D $out/$1.txt -- latte run $W -f $4 -P rows=$5 -P col_size=$6 -p 64 -d ${D}s -w 5s -q $3 > $out/$1.measure
  echo "$1: $(grep -E 'Throughput' $out/$1.txt | tr -s ' ') | $(cat $out/$1.measure) | p99 $(grep -E '^ +99 ' $out/$1.txt | head -1 | tr -s ' ')"
}
drop() { # host:port: a fresh keyspace for each size
  "$here/../../.venv/bin/python" -c "
from cassandra.cluster import Cluster
h, p = '$1'.split(':'); c = Cluster([h], port=int(p)); s = c.connect()
s.execute('DROP KEYSPACE IF EXISTS keyspace1', timeout=120); c.shutdown()" 2>/dev/null
}
. "$here/settle.sh"   # settle SECONDS NODETOOL...
side() { # name pid host flushcmd...
  local name=$1 pid=$2 host=$3; shift 3
  for s in $SIZES; do
    IFS=: read label col rows <<< "$s"
    drop $host
    latte schema $W -P col_size=$col $host > /dev/null 2>&1
    run $name-write-$label $pid $host write $rows $col
    latte load $W -P rows=$rows -P col_size=$col --concurrency 64 -q $host > /dev/null 2>&1
    "$@" flush keyspace1 > /dev/null; sleep 10
    [ -n "${SETTLE:-}" ] && settle "$SETTLE" "$@"
    run $name-read-$label $pid $host read $rows $col
  done
}
rm -rf $out/vdata; mkdir -p $out/vdata; printf "commitlog_sync: periodic\ncommitlog_sync_period: 10000ms\n" > $out/varve.yaml
$V server --data-dir $out/vdata --port 9043 --admin-port 9183 --config $out/varve.yaml > $out/varve-server.log 2>&1 &
VP=$!; sleep 1
side varve $VP $VH $V nodetool -p 9183
kill $VP; wait $VP
side cass $(cat /tmp/cass-lab/bench/cassandra.pid) $CH $here/cassandra_nodetool.sh
