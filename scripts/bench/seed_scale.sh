#!/usr/bin/env bash
# Issue 22: one seed experiment at the seeds' scale, on three Varve nodes and then on three Cassandra
# 5.0.4 nodes, each node's memory capped at CAP_MIB (page cache included), RF 3 at LOCAL_QUORUM,
# compared in the seed's shape (bench-compare.md, compare.html). Needs root, cgroup v1 memory and,
# at SIZE=full, about 65 GB free per server (docs/design/bench.md, "Disk"): Varve's data is removed
# before Cassandra loads its own.
#
#   SIZE=full scripts/bench/seed_scale.sh tombstone-gc --variant garbagecollect   # seed 001
#   SIZE=full scripts/bench/seed_scale.sh tombstone-gc --variant overlapping      # seed 000
#   SIZE=full scripts/bench/seed_scale.sh docsize                                 # seed 004
#   SIZE=full scripts/bench/seed_scale.sh compaction --find-rate                  # seed 002: Cassandra's
#       rate search first, then Varve at the rate where Cassandra's LCS fell behind and above
#
# Env: VARVE (target/release/varve), OUT (/tmp/varve-seed-scale), SIZE (small), CAP_MIB (2048),
#      HEAP (Cassandra's heap per node, 1G), SKIP_CASSANDRA=1 (Varve only).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
V=$(realpath "${VARVE:-target/release/varve}")
OUT=${OUT:-/tmp/varve-seed-scale}; SIZE=${SIZE:-small}; CAP_MIB=${CAP_MIB:-2048}
scenario=${1:?scenario}; shift
mkdir -p "$OUT"
name="$scenario$(printf '%s' "$*" | tr -c 'a-z0-9' '-')"

varve() { # extra flags...
  "$V" bench "$scenario" "$@" --size "$SIZE" --nodes 3 --memory-cap "${CAP_MIB}MiB" \
    --out "$OUT/$name-varve" --quiet
  # The run's files stay; the nodes' data goes, to leave the disk to Cassandra.
  rm -rf "$OUT/$name-varve"/cluster/node*/data
}

cassandra() { # extra flags...
  CAP="${CAP_MIB}M" FRESH=1 "$here/cassandra_capped.sh" start 3
  mapfile -t cass < <("$here/cassandra_capped.sh" args)
  "$V" bench "$scenario" "$@" --size "$SIZE" "${cass[@]}" --replication-factor 3 \
    --out "$OUT/$name-cassandra" --quiet || true
  "$here/cassandra_capped.sh" stop
  rm -rf /tmp/cass-lab/c{1,2,3}/data
}

if [[ " $* " == *" --find-rate "* ]]; then
  # Seed 002: where Cassandra's LCS falls behind, then Varve there and above.
  cassandra "$@"
  rate=$(python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['bench']['rate_search']; \
print(int(s['first_behind_per_s'] or s['phases'][-1]['rate_per_s']))" "$OUT/$name-cassandra/summary.json")
  echo "Cassandra's LCS falls behind at $rate op/s; Varve at $rate, $((rate * 3 / 2)), $((rate * 2))"
  name="$name-at-$rate"
  varve --rates "$rate,$((rate * 3 / 2)),$((rate * 2))"
  exit 0
fi
varve "$@"
[ -n "${SKIP_CASSANDRA:-}" ] && exit 0
cassandra "$@" --compare-with "$OUT/$name-varve"
echo "compared: $OUT/$name-cassandra/bench-compare.md"
