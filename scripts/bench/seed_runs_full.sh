#!/bin/bash
# Issue 5: the seed experiments at full size, Varve (embedded node, default config) then
# Cassandra 5.0.4 (--hosts, started by ../shared/cassandra/start.sh on 127.0.0.2), each with a
# side-by-side report. Arguments pick the scenarios (default: all four):
#   O  tombstone-gc, provide_overlapping_tombstones = ROW (seed 000)
#   D  tombstone-gc, nodetool garbagecollect (seed 001)
#   C  compaction, STCS -> LCS -> UCS (seed 002)
#   L  lwt (seed 003)
# (docsize, seed 004, is in seed_runs.sh.)
set -u
V=${VARVE:-target/release/varve}; here=$(dirname "$0"); out=${OUT:-/tmp/varve-bench}
CP=$(cat /tmp/cass-lab/bench/cassandra.pid)
mkdir -p $out; printf "commitlog_sync: periodic\n" > $out/varve-default.yaml
run() { # name, then the scenario arguments
  local name=$1; shift
  rm -rf $out/$name-varve $out/$name-cass
  echo "== $name varve $(date)"
  $V bench "$@" --size full --nodes 1 --config $out/varve-default.yaml --out $out/$name-varve --quiet
  echo "== $name cassandra $(date)"
  $V bench "$@" --size full --hosts 127.0.0.2:9042 --nodetool $here/cassandra_nodetool.sh \
    --server-pid $CP --out $out/$name-cass --compare-with $out/$name-varve --quiet
}
for s in ${@:-O D C L}; do
  case $s in
    O) run O tombstone-gc --variant overlapping ;;
    D) run D tombstone-gc --variant garbagecollect ;;
    C) run C compaction ;;
    L) run L lwt ;;
    *) echo "unknown scenario $s"; exit 2 ;;
  esac
done
echo "== done $(date)"
