# Sourced by the benchmark scripts: `settle SECONDS NODETOOL...` waits (up to SECONDS) until the
# node has no compaction pending or running: "pending tasks: 0" from Varve, "pending tasks   0"
# from Cassandra 5.0, and no table of running compactions (its header names the "compaction
# type" column). Prints "settled after Ns" or "not settled after Ns".
settle() {
  local limit=$1 waited=0; shift
  while [ "$waited" -lt "$limit" ]; do
    local stats; stats=$("$@" compactionstats 2>/dev/null)
    if echo "$stats" | grep -Eq '^pending tasks:? +0 *$' && ! echo "$stats" | grep -q 'compaction type'; then
      echo "settled after ${waited}s"; return
    fi
    sleep 2; waited=$((waited + 2))
  done
  echo "not settled after ${limit}s"
}
