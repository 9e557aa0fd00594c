#!/bin/bash
# Issue 3: latte 180 B writes and reads, Varve (release build, default config, periodic commitlog)
# then Cassandra (../shared/cassandra/start.sh with ADDR=127.0.0.2 NAME=bench), server CPU from /proc.
set -u
W=/work/shared/bench/latte/stress.rn
V=${VARVE:-target/release/varve}; VH=127.0.0.1:9043; CH=127.0.0.2:9042
out=${OUT:-/tmp/varve-bench/A}; mkdir -p $out; here=$(dirname "$0")
# latte writes its JSON report and log into the working directory: run it in $out.
V=$(realpath "$V"); here=$(cd "$here" && pwd); out=$(realpath "$out"); cd "$out"
run() { # label pid host fn dur
  python3 $here/measure_cpu.py $2 $5 $out/$1.txt -- latte run $W -f $4 -P rows=2000000 -p 64 -d ${5}s -w 10s -q $3 > $out/$1.measure
  echo "$1: $(grep -E 'Throughput' $out/$1.txt | tr -s ' ') | $(cat $out/$1.measure)"
}
# Varve
rm -rf $out/vdata; mkdir -p $out/vdata; printf "commitlog_sync: periodic\ncommitlog_sync_period: 10000ms\n" > $out/varve.yaml
$V server --data-dir $out/vdata --port 9043 --admin-port 9183 --config $out/varve.yaml > $out/varve-server.log 2>&1 &
VP=$!; sleep 1
latte schema $W $VH > /dev/null
run varve-write1 $VP $VH write 30
run varve-write2 $VP $VH write 30
latte schema $W $VH > /dev/null
python3 $here/measure_cpu.py $VP 1 $out/varve-load.txt -- latte load $W -P rows=2000000 --concurrency 64 -q $VH > $out/varve-load.measure; cat $out/varve-load.measure
$V nodetool -p 9183 flush keyspace1; sleep 20; $V nodetool -p 9183 compactionstats | head -3
run varve-read1 $VP $VH read 30
run varve-read2 $VP $VH read 30
$V nodetool -p 9183 tablestats keyspace1 | grep -E "SSTable count|Space used \(live\)"
kill $VP; wait $VP
# Cassandra
CP=$(cat /tmp/cass-lab/bench/cassandra.pid)
latte schema $W $CH > /dev/null
run cass-write1 $CP $CH write 30
run cass-write2 $CP $CH write 30
latte schema $W $CH > /dev/null
python3 $here/measure_cpu.py $CP 1 $out/cass-load.txt -- latte load $W -P rows=2000000 --concurrency 64 -q $CH > $out/cass-load.measure; cat $out/cass-load.measure
$here/cassandra_nodetool.sh flush keyspace1; sleep 20; $here/cassandra_nodetool.sh compactionstats | head -3
run cass-read1 $CP $CH read 30
run cass-read2 $CP $CH read 30
$here/cassandra_nodetool.sh tablestats keyspace1 | grep -E "SSTable count|Space used \(live\)"
