#!/bin/bash
# Issue 4: major compaction throughput, Varve vs Cassandra, same data set (latte, 4 KiB rows),
# background compaction off (enabled: false) so that the major compaction merges every flush.
# SKIP_CASSANDRA=1 measures dd and Varve only.
set -u
W=/work/shared/bench/latte/stress.rn
V=${VARVE:-target/release/varve}; VH=127.0.0.1:9043; CH=127.0.0.2:9042
out=${OUT:-/tmp/varve-bench/C}; mkdir -p $out; here=$(dirname "$0")
CQLSH=${CQLSH:-$(realpath .venv/bin/cqlsh)}
# latte writes its JSON report and log into the working directory: run it in $out.
V=$(realpath "$V"); here=$(cd "$here" && pwd); out=$(realpath "$out"); cd "$out"
ROWS=${ROWS:-300000}
ALTER="ALTER TABLE keyspace1.standard1 WITH compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}"
echo "== disk sequential write (dd, 2 GiB, fdatasync)"
dd if=/dev/zero of=$out/dd.bin bs=1M count=2048 conv=fdatasync 2>&1 | tail -1; rm -f $out/dd.bin
echo "== varve"
rm -rf $out/vdata-c; mkdir -p $out/vdata-c
printf 'commitlog_sync: periodic\ncompaction_throughput: 0MiB/s\nmemtable_heap_space: 64MiB\n' > $out/varve-c.yaml
$V server --data-dir $out/vdata-c --port 9043 --admin-port 9183 --config $out/varve-c.yaml > $out/varve-c.log 2>&1 &
VP=$!; sleep 1
latte schema $W -P col_size=818 $VH > /dev/null
$CQLSH 127.0.0.1 9043 -e "$ALTER"
latte load $W -P col_size=818 -P rows=$ROWS --concurrency 64 -q $VH > $out/varve-load.txt 2>&1
$V nodetool -p 9183 flush keyspace1
$V nodetool -p 9183 tablestats keyspace1 | grep -E "SSTable count|Space used \(live\)"
t0=$(date +%s.%N); $V nodetool -p 9183 compact keyspace1 standard1; t1=$(date +%s.%N)
echo "varve compact seconds: $(echo "$t1 - $t0" | bc)"
$V nodetool -p 9183 tablestats keyspace1 | grep -E "SSTable count|Space used \(live\)"
kill $VP; wait $VP
[ -n "${SKIP_CASSANDRA:-}" ] && exit 0
echo "== cassandra"
latte schema $W -P col_size=818 $CH > /dev/null
$CQLSH 127.0.0.2 9042 -e "$ALTER"
latte load $W -P col_size=818 -P rows=$ROWS --concurrency 64 -q $CH > $out/cass-load.txt 2>&1
$here/cassandra_nodetool.sh flush keyspace1
$here/cassandra_nodetool.sh setcompactionthroughput 0
$here/cassandra_nodetool.sh tablestats keyspace1.standard1 | grep -E "SSTable count|Space used \(live\)"
t0=$(date +%s.%N); $here/cassandra_nodetool.sh compact keyspace1 standard1; t1=$(date +%s.%N)
echo "cassandra compact seconds (incl. ~1.5 s nodetool JVM start): $(echo "$t1 - $t0" | bc)"
t0=$(date +%s.%N); $here/cassandra_nodetool.sh version > /dev/null; t1=$(date +%s.%N)
echo "cassandra nodetool JVM start alone: $(echo "$t1 - $t0" | bc)"
$here/cassandra_nodetool.sh tablestats keyspace1.standard1 | grep -E "SSTable count|Space used \(live\)"
