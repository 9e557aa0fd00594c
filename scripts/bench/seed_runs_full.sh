#!/bin/bash
# Issue 5: the remaining full-size seed experiments, Varve (embedded node, default config) then
# Cassandra 5.0.4 (--hosts, started by ../shared/cassandra/start.sh on 127.0.0.2), each with a
# side-by-side report: tombstone-gc with provide_overlapping_tombstones (seed 000), compaction
# STCS -> LCS -> UCS (seed 002) and lwt (seed 003).
set -u
V=${VARVE:-target/release/varve}; here=$(dirname "$0"); out=${OUT:-/tmp/varve-bench}
CP=$(cat /tmp/cass-lab/bench/cassandra.pid)
mkdir -p $out; printf "commitlog_sync: periodic\n" > $out/varve-default.yaml
run() { # name, then the scenario arguments
  local name=$1; shift
  rm -rf $out/$name-varve $out/$name-cass
  echo "== $name varve $(date)"
  $V bench "$@" --size full --config $out/varve-default.yaml --out $out/$name-varve --quiet
  echo "== $name cassandra $(date)"
  $V bench "$@" --size full --hosts 127.0.0.2:9042 --nodetool $here/cassandra_nodetool.sh \
    --server-pid $CP --out $out/$name-cass --compare-with $out/$name-varve --quiet
}
run O tombstone-gc --variant overlapping
run C compaction
run L lwt
echo "== done $(date)"
