# Sourced by the benchmark scripts that run one Varve node in a memory cgroup (v1, page cache
# included; needs root):
#   capped_cgroup CG CAP           a fresh cgroup directory CG limited to CAP (e.g. 2560M)
#   start_capped_varve V CG DIR ADMIN
#                                  writes DIR/varve.yaml (periodic commitlog, then the lines of
#                                  $VARVE_YAML), starts binary V in CG on 127.0.0.1:9043 with its
#                                  data in DIR/vdata and its admin port ADMIN, logs to
#                                  DIR/server.log, sets SP to its pid and waits until it is ready.
capped_cgroup() {
  [ -d "$1" ] && rmdir "$1" 2>/dev/null
  mkdir -p "$1"
  echo "$2" > "$1/memory.limit_in_bytes"
}

start_capped_varve() {
  local v=$1 cg=$2 dir=$3 admin=$4
  printf "commitlog_sync: periodic\n%b\n" "${VARVE_YAML:-}" > "$dir/varve.yaml"
  # The shell joins the cgroup, then becomes the server: everything it
  # allocates and every page it caches is charged there.
  bash -c "echo \$\$ > $cg/cgroup.procs; exec $v server --data-dir $dir/vdata --port 9043 \
    --admin-port $admin --config $dir/varve.yaml" >> "$dir/server.log" 2>&1 &
  SP=$!
  for _ in $(seq 600); do grep -q "varve ready" "$dir/server.log" && break; sleep 0.1; done
}
