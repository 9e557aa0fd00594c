#!/usr/bin/env bash
# Every tokio::select! in the cluster crate must start with `biased;`
# (docs/design/cluster.md, section 3): tokio picks among ready branches at
# random unless the runtime is seeded, which needs --cfg tokio_unstable,
# and a simulation seed would then not replay. Prints each offending
# select! and fails; extra arguments replace the directories searched.
set -euo pipefail
cd "$(dirname "$0")/.."
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(crates/cluster/src)
offenders=$(find "${dirs[@]}" -name '*.rs' -print0 | sort -z | xargs -0 awk '
    FNR == 1 { want = 0 }
    want && /^[[:space:]]*(\/\/.*)?$/ { next }
    want {
        if ($0 !~ /^[[:space:]]*biased;/) print FILENAME ":" at ": select! without biased;"
        want = 0
    }
    /select![[:space:]]*\{/ && !/^[[:space:]]*\/\// {
        if ($0 !~ /biased;/) { want = 1; at = FNR }
    }
')
if [ -n "$offenders" ]; then
    echo "$offenders"
    exit 1
fi
