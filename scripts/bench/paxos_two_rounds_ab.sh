#!/bin/bash
# The two-round Paxos path on and off (docs/design/paxos-two-rounds.md, docs/benchmarks.md session
# 34): three release nodes (`varve cluster start`, RF 3, QUORUM), each round plain writes then
# uncontended LWTs (`IF NOT EXISTS` on distinct keys; `varve stress` routes each to a replica),
# modes alternating. Prints each run's rate and the LWTs' share of the plain writes.
# usage: paxos_two_rounds_ab.sh   VARVE=path/to/release/varve  OUT=dir  ROUNDS=3  SECONDS_EACH=10
V=${VARVE:-target/release/varve}; OUT=${OUT:-/tmp/varve-two-rounds-ab}; ROUNDS=${ROUNDS:-3}
S=${SECONDS_EACH:-10}
H=127.0.0.1:9043,127.0.0.2:9043,127.0.0.3:9043
mkdir -p "$OUT"
rate() { grep -E '^write +total' "$1" | awk '{print $4}'; }
for round in $(seq "$ROUNDS"); do
  for mode in false true; do
    D=$OUT/c-$mode-$round; rm -rf "$D"; mkdir -p "$D"
    echo "paxos_two_round_path: $mode" > "$D.yaml"
    "$V" cluster start --nodes 3 --dir "$D" --native-port 9043 --admin-port 9183 --storage-port 17100 \
      -- --config "$D.yaml" > "$D.start.log" 2>&1
    sleep 2
    "$V" stress write --pop seq=1..100000000 --duration "${S}s" --warmup 20000 --concurrency 32 --cl QUORUM \
      --replication-factor 3 --hosts $H > "$OUT/plain-$mode-$round.txt" 2>&1
    "$V" stress write --workload lwt --lwt-keys 100000000 --pop seq=1..100000000 --duration "${S}s" \
      --warmup 2000 --concurrency 32 --cl QUORUM --replication-factor 3 --hosts $H > "$OUT/lwt-$mode-$round.txt" 2>&1
    curl -s http://127.0.0.1:9183/metrics | grep -E '^varve_cas_two_round_total|^varve_cas_check_refusals_total' \
      > "$OUT/metrics-$mode-$round.txt"
    "$V" cluster --dir "$D" stop > /dev/null 2>&1
    plain=$(rate "$OUT/plain-$mode-$round.txt"); lwt=$(rate "$OUT/lwt-$mode-$round.txt")
    echo "two_rounds=$mode round $round: plain $plain /s, lwt $lwt /s, lwt/plain" \
      "$(python3 -c "print(f'{float(\"${lwt:-0}\".replace(\",\",\"\")) / max(1.0, float(\"${plain:-0}\".replace(\",\",\"\"))):.3f}')")"
  done
done
