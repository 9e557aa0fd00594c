#!/bin/bash
# Full-ring scans on a local three-node cluster (RF 3), one build:
#   scripts/bench/range_scans.sh LABEL PATH/TO/varve
# Starts the cluster in /tmp/varve-range-scans-LABEL, loads 5,000 small
# partitions and 200 partitions of 20 rows, prints the median of five
# scans of each kind, and stops the cluster. Run two builds in turn
# (A B A B) to compare them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=/tmp/varve-range-scans-$1
rm -rf "$dir"
"$2" cluster start --nodes 3 --dir "$dir" > "$dir.log" 2>&1
"$here/../../.venv/bin/python" "$here/range_scans.py" "$1"
"$2" cluster stop --dir "$dir" > /dev/null 2>&1
