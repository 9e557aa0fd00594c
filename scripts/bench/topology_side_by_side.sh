#!/bin/bash
# Issue 20: growing and healing a cluster that holds data, Varve beside Cassandra 5.0.4. For each
# server in turn: three nodes (`varve cluster start --nodes 3` on 127.0.0.1-3,
# ../shared/cassandra/cluster.sh start 3 on 127.0.0.11-13), keyspace1.standard1 at RF 3 loaded with
# ROWS rows of 4 KiB (stress.rn, col_size 818), flushed, and left until no compaction is pending
# (up to SETTLE seconds, 900), then three phases, each under the same
# fixed-rate client load (latte, reads and writes 1:1 at QUORUM, RATE per second):
#   steady     STEADY_S seconds, nothing else happening;
#   repair     node 3 is stopped, 1% of the rows are written again at ONE, the hints on nodes 1
#              and 2 are dropped, node 3 comes back (10 s to settle); then `nodetool repair keyspace1` on node 1,
#              timed, while the client runs;
#   bootstrap  a fourth node joins (`varve cluster add`, `cluster.sh add`), timed from the command
#              to the node serving CQL, while the client runs.
# Each phase's client report is kept (latte JSON; SIGINT ends a run when its event is over) and
# summarised by latte_seconds.py. Both servers stream at their default 24 MiB/s per sending node.
#
# usage: topology_side_by_side.sh
#   VARVE=path/to/release/varve   OUT=dir (default /tmp/varve-topology-bench)   ROWS (250000)
#   RATE=client operations/s (400)   STEADY_S (60)   SKIP_CASSANDRA=1   SKIP_VARVE=1
#   ADD_THROUGHPUT: stream_throughput_outbound of Varve's new node (e.g. 8MiB/s; it paces what it
#   takes from each source), to see the pacer hold a limit below what the machine streams
# Cassandra's cluster is started fresh (FRESH=1) and stopped at the end.
set -u
here=$(cd "$(dirname "$0")" && pwd)
V=$(realpath "${VARVE:-target/release/varve}")
out=${OUT:-/tmp/varve-topology-bench}; mkdir -p "$out"; out=$(realpath "$out")
ROWS=${ROWS:-250000}; RATE=${RATE:-400}; STEADY_S=${STEADY_S:-60}; SETTLE=${SETTLE:-900}
S=/work/shared/bench/latte/stress.rn; P=(-P rf=3 -P col_size=818 -P rows="$ROWS")
CASS=/work/shared/cassandra/cluster.sh
cd "$out"

say() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$out/summary.txt"; }

# client LABEL HOST: the phase's client load, in the background; `client_stop` ends it.
client() {
  latte run "$S" -f read:1,write:1 "${P[@]}" -r "$RATE" -p 64 -d 3600s -w 0 \
    --consistency QUORUM -q -o "$out/$1.json" "$2" > "$out/$1.latte" 2>&1 &
  client_pid=$!
  client_label=$1
}
client_stop() {
  kill -INT "$client_pid"; wait "$client_pid"
  say "$client_label client: $(python3 "$here/latte_seconds.py" "$out/$client_label.json" "$RATE")"
}

# load HOST: the schema and ROWS rows, as fast as the cluster takes them.
load() {
  latte schema "$S" "${P[@]}" "$1" > /dev/null 2>&1
  local t0=$SECONDS
  latte load "$S" "${P[@]}" --concurrency 64 --consistency QUORUM -q "$1" > "$out/load.latte" 2>&1
  say "loaded $ROWS rows of 4 KiB in $((SECONDS - t0)) s"
}

# diverge HOST: 1% of the rows written again at ONE, from the middle of the key range.
diverge() {
  latte run "$S" -f write "${P[@]}" -p 64 -d $((ROWS / 100)) -w 0 --start-cycle $((ROWS / 2)) \
    --consistency ONE -q "$1" > "$out/diverge.latte" 2>&1
}

# steady NAME HOST
steady() {
  client "$1-steady" "$2"; sleep "$STEADY_S"; client_stop
}

# timed LABEL COMMAND...: runs the command, logs its wall time.
timed() {
  local label=$1; shift
  local t0; t0=$(date +%s.%N)
  "$@" > "$out/$label.out" 2>&1; local rc=$?
  say "$label: $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s (exit $rc)"
}

. "$here/settle.sh"
# settled LABEL NODETOOL...: settle.sh's wait (up to SETTLE seconds) for no compaction pending or
# running, so that the steady phase is steady; logged.
settled() { local label=$1; shift; say "$label $(settle "$SETTLE" "$@")"; }

sizes() { # LABEL DIR...
  local label=$1; shift
  for d in "$@"; do say "$label $(basename "$(dirname "$d")")/$(basename "$d"): $(du -sm "$d" | cut -f1) MB"; done
}

varve() {
  local dir=$out/varve host=127.0.0.1:9043
  vt() { "$V" cluster --dir "$dir" "$@"; }
  rm -rf "$dir"
  vt start --nodes 3 --native-port 9043 --admin-port 9183 --storage-port 17100 > /dev/null
  load $host
  for i in 1 2 3; do vt nodetool $i flush; done
  for i in 1 2 3; do settled "varve node$i" vt nodetool $i; done
  sizes "varve loaded" "$dir"/node{1,2,3}/data
  steady varve $host
  vt nodetool 3 flush; vt kill 3
  diverge $host
  for i in 1 2; do vt nodetool $i truncatehints; done
  vt start 3 > /dev/null; sleep 10
  client varve-repair $host
  timed varve-repair vt nodetool 1 repair keyspace1
  client_stop
  tail -3 "$out/varve-repair.out" | sed 's/^/  /' | tee -a "$out/summary.txt"
  client varve-bootstrap $host
  local add=()
  if [ -n "${ADD_THROUGHPUT:-}" ]; then
    echo "stream_throughput_outbound: $ADD_THROUGHPUT" > "$out/add.yaml"
    add=(-- --config "$out/add.yaml")
  fi
  timed varve-bootstrap vt add "${add[@]}"
  client_stop
  sizes "varve after bootstrap" "$dir"/node{1,2,3,4}/data
  vt stop > /dev/null
}

cassandra() {
  local host=127.0.0.11:9042
  cn() { CASS_NAME=c$1 CASS_JMX_PORT=$((7200 + $1)) "$here/cassandra_nodetool.sh" "${@:2}"; }
  "$CASS" stop > /dev/null 2>&1
  rm -rf /tmp/cass-lab/c4
  FRESH=1 "$CASS" start 3 > "$out/cassandra-start.out" 2>&1 || { say "cassandra did not start"; return; }
  load $host
  for i in 1 2 3; do cn $i flush; done
  for i in 1 2 3; do settled "cassandra c$i" cn $i; done
  sizes "cassandra loaded" /tmp/cass-lab/c{1,2,3}/data
  steady cassandra $host
  cn 3 flush; /work/shared/cassandra/stop.sh c3 > /dev/null
  diverge $host
  for i in 1 2; do cn $i truncatehints; done
  ADDR=127.0.0.13 SEEDS=127.0.0.11:7000 CLUSTER_NAME=cass-lab-cluster JMX_PORT=7203 HEAP="${HEAP:-1G}" \
    AUTO_BOOTSTRAP=false EXTRA_JVM_OPTS="-Dcassandra.skip_wait_for_gossip_to_settle=0" \
    /work/shared/cassandra/start.sh c3 > "$out/cassandra-restart.out" 2>&1; sleep 10
  client cassandra-repair $host
  timed cassandra-repair cn 1 repair keyspace1
  client_stop
  tail -3 "$out/cassandra-repair.out" | sed 's/^/  /' | tee -a "$out/summary.txt"
  client cassandra-bootstrap $host
  timed cassandra-bootstrap "$CASS" add
  client_stop
  grep -hE 'Starting to bootstrap|Bootstrap completed|JOINING' /tmp/cass-lab/c4/logs/system.log \
    | cut -c1-160 | sed 's/^/  /' | tee -a "$out/summary.txt"
  sizes "cassandra after bootstrap" /tmp/cass-lab/c{1,2,3,4}/data
  "$CASS" stop > /dev/null 2>&1
}

say "topology bench: ROWS=$ROWS RATE=$RATE STEADY_S=$STEADY_S varve=$V ($(git -C "$here" rev-parse --short HEAD))"
[ -n "${SKIP_VARVE:-}" ] || varve
[ -n "${SKIP_CASSANDRA:-}" ] || cassandra
