#!/usr/bin/env bash
# Issue 22: a local Cassandra 5.0.4 cluster (../shared/cassandra, nodes c1..cN on 127.0.0.11..) with
# each node's memory, page cache included, capped as `varve bench --memory-cap` caps Varve's nodes:
# every node in a fresh cgroup v1 memory cgroup of its own (/sys/fs/cgroup/memory/cass-capped-cN),
# joined by the shell that becomes start.sh, so the JVM it launches and every page it caches are
# charged there. ../shared/cassandra is used as it is (start.sh per node, with the settings
# cluster.sh gives each node), never modified. Needs root and cgroup v1 memory.
#
#   CAP=2G HEAP=1G scripts/bench/cassandra_capped.sh start 3   # FRESH=1 wipes the nodes' data first
#   scripts/bench/cassandra_capped.sh args                     # flags for `varve bench`, one a line:
#       mapfile -t cass < <(scripts/bench/cassandra_capped.sh args); varve bench ... "${cass[@]}"
#   scripts/bench/cassandra_capped.sh usage                    # each cgroup's cap, usage, peak, OOM kills
#   scripts/bench/cassandra_capped.sh stop                     # stop the nodes, print usage, remove cgroups
#
# The cap holds the JVM's heap (HEAP, default 1G, as cluster.sh) and its off-heap memory besides the
# page cache: give it at least HEAP + 1G.
#
# Each node runs a Jolokia agent (JMX over HTTP, fetched from Maven Central once into $LAB/jolokia)
# on its own address, port JOLOKIA_PORT (8778): `varve bench --jolokia` reads the numbers nodetool
# prints from it every second, where a nodetool call starts a JVM (docs/design/bench.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
shared=$(cd "$here/../../../shared/cassandra" && pwd)
ROOT=/sys/fs/cgroup/memory
PREFIX=cass-capped-c
LAB=/tmp/cass-lab
addr() { echo "127.0.0.$((10 + $1))"; }
JOLOKIA_VERSION=2.1.1
JOLOKIA_PORT=${JOLOKIA_PORT:-8778}
jolokia_jar() { # the agent's jar, fetched once
  local dir="$LAB/jolokia" jar="$LAB/jolokia/jolokia-agent-jvm-$JOLOKIA_VERSION-javaagent.jar"
  if [ ! -f "$jar" ]; then
    mvn -q dependency:copy -Dartifact="org.jolokia:jolokia-agent-jvm:$JOLOKIA_VERSION:jar:javaagent" \
      -DoutputDirectory="$dir" >&2
  fi
  echo "$jar"
}
cgroups() { ls -d "$ROOT/$PREFIX"* 2>/dev/null || true; }

check() {
  [ "$(id -u)" = 0 ] || { echo "needs root (cgroups)" >&2; exit 1; }
  [ -f "$ROOT/memory.limit_in_bytes" ] || { echo "no cgroup v1 memory controller at $ROOT" >&2; exit 1; }
}

start() { # N nodes, each in its own capped cgroup
  local n=$1 seed jar; seed="$(addr 1):7000"
  check
  jar=$(jolokia_jar)
  for i in $(seq 1 "$n"); do
    local cg="$ROOT/$PREFIX$i"
    [ -d "$cg" ] && { echo "$cg exists: stop first" >&2; exit 1; }
    mkdir "$cg"
    echo "${CAP:?e.g. CAP=2G}" > "$cg/memory.limit_in_bytes"
    # The settings cluster.sh gives node i, inside the cgroup.
    bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' _ "$cg" \
      env ADDR="$(addr "$i")" SEEDS="$seed" CLUSTER_NAME=cass-lab-cluster JMX_PORT=$((7200 + i)) \
      HEAP="${HEAP:-1G}" AUTO_BOOTSTRAP=false FRESH="${FRESH:-0}" \
      EXTRA_JVM_OPTS="-Dcassandra.skip_wait_for_gossip_to_settle=0 -javaagent:$jar=host=$(addr "$i"),port=$JOLOKIA_PORT ${EXTRA_JVM_OPTS:-}" \
      "$shared/start.sh" "c$i"
    echo "c$i: cgroup $cg, limit $(cat "$cg/memory.limit_in_bytes") bytes, pid $(cat "$LAB/c$i/cassandra.pid")"
  done
}

usage() {
  for cg in $(cgroups); do
    echo "$(basename "$cg"): cap $(( $(cat "$cg/memory.limit_in_bytes") >> 20 )) MiB," \
      "usage $(( $(cat "$cg/memory.usage_in_bytes") >> 20 )) MiB," \
      "peak $(( $(cat "$cg/memory.max_usage_in_bytes") >> 20 )) MiB," \
      "OOM kills $(awk '$1 == "oom_kill" {print $2}' "$cg/memory.oom_control")"
  done
}

args() { # what varve bench needs to sample these nodes, one word a line (mapfile -t)
  local hosts=() pids=() cgs=() agents=() i
  for cg in $(cgroups); do
    i=${cg##*$PREFIX}
    hosts+=("$(addr "$i"):9042")
    pids+=("$(cat "$LAB/c$i/cassandra.pid")")
    cgs+=("$cg")
    agents+=("http://$(addr "$i"):$JOLOKIA_PORT")
    printf '%s\n' --nodetool "env CASS_NAME=c$i CASS_JMX_PORT=$((7200 + i)) $here/cassandra_nodetool.sh"
    printf '%s\n' --gc-log "$LAB/c$i/logs/gc.log" --commitlog-dir "$LAB/c$i/commitlog"
  done
  [ ${#cgs[@]} -gt 0 ] || { echo "no capped Cassandra node runs" >&2; exit 1; }
  local IFS=,
  printf '%s\n' --hosts "${hosts[*]}" --server-pid "${pids[*]}" --memory-cgroup "${cgs[*]}" \
    --jolokia "${agents[*]}"
}

stop() {
  for cg in $(cgroups); do
    i=${cg##*$PREFIX}
    "$shared/stop.sh" "c$i" || true
  done
  usage
  for cg in $(cgroups); do
    for _ in $(seq 50); do [ -z "$(cat "$cg/cgroup.procs")" ] && break; sleep 0.2; done
    rmdir "$cg"
  done
}

case "${1:-}" in
  start) start "${2:-3}" ;;
  args) args ;;
  usage) usage ;;
  stop) stop ;;
  *) sed -n '2,/^set -euo/p' "$0" | grep '^#'; exit 2 ;;
esac
