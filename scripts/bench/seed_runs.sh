#!/bin/bash
# Issues 4 and 5: varve bench tombstone-gc (garbagecollect, size 0.4) and docsize (full), Varve
# (embedded node, default config) then Cassandra (--hosts), each with a side-by-side report.
set -u
V=${VARVE:-target/release/varve}; here=$(dirname "$0"); out=${OUT:-/tmp/varve-bench}
CP=$(cat /tmp/cass-lab/bench/cassandra.pid)
mkdir -p $out; printf "commitlog_sync: periodic\n" > $out/varve-default.yaml
rm -rf $out/D-varve $out/D-cass $out/B-varve $out/B-cass
echo "== D varve $(date)"
$V bench tombstone-gc --variant garbagecollect --size 0.4 --nodes 1 --config $out/varve-default.yaml --out $out/D-varve --quiet
echo "== D cassandra $(date)"
$V bench tombstone-gc --variant garbagecollect --size 0.4 --hosts 127.0.0.2:9042 --nodetool $here/cassandra_nodetool.sh --server-pid $CP --out $out/D-cass --compare-with $out/D-varve --quiet
echo "== B varve $(date)"
$V bench docsize --size full --nodes 1 --config $out/varve-default.yaml --out $out/B-varve --quiet
echo "== B cassandra $(date)"
$V bench docsize --size full --hosts 127.0.0.2:9042 --server-pid $CP --out $out/B-cass --compare-with $out/B-varve --quiet
echo "== done $(date)"
