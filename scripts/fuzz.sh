#!/usr/bin/env bash
# Runs every fuzz target in fuzz/ for a short, fixed time; exits non-zero
# (printing the crashing input's path) if any input crashes, hangs or runs
# out of memory. Usage: scripts/fuzz.sh [seconds per target, default 20]
#
# Works on stable Rust with nothing installed beyond cargo and a C++
# compiler: it builds the fuzz crate itself with the instrumentation flags
# cargo-fuzz would pass (none of them needs nightly when no sanitizer is
# asked for) and runs the libFuzzer binaries directly. The targets run side
# by side, one per core. See docs/design/fuzzing.md.
#
# Environment:
#   VARVE_FUZZ_PROFILE     cargo profile to build (default dev: opt-level 1,
#                          fast to build; use release for long campaigns)
#   VARVE_FUZZ_TARGET_DIR  where to build (default $CARGO_TARGET_DIR/fuzz,
#                          else fuzz/target); kept apart from the main
#                          workspace because the RUSTFLAGS differ
#   VARVE_FUZZ_TARGETS     space-separated subset of targets to run
#   VARVE_FUZZ_ARGS        extra libFuzzer flags, e.g. "-seed=1 -jobs=2"
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

seconds="${1:-20}"
case "$seconds" in
    '' | *[!0-9]*) echo "usage: $0 [seconds per target]" >&2; exit 2 ;;
esac

read -r -a targets <<< "${VARVE_FUZZ_TARGETS:-frame_decoder cql_parser sstable_reader row_index commitlog_replay internode_frame sasl_plain}"
profile="${VARVE_FUZZ_PROFILE:-dev}"
if [ -n "${VARVE_FUZZ_TARGET_DIR:-}" ]; then
    target_dir="$VARVE_FUZZ_TARGET_DIR"
elif [ -n "${CARGO_TARGET_DIR:-}" ]; then
    target_dir="$CARGO_TARGET_DIR/fuzz"
else
    target_dir="$root/fuzz/target"
fi
case "$target_dir" in
    /*) ;;
    *) target_dir="$root/$target_dir" ;;
esac
triple=$(rustc -vV | sed -n 's/^host: //p')
case "$profile" in
    dev) profile_dir=debug ;;
    *) profile_dir="$profile" ;;
esac

# The flags of `cargo fuzz build -s none` (cargo-fuzz 0.13): coverage
# counters and comparison tracing for libFuzzer, `cfg(fuzzing)`, and debug
# assertions so integer overflow panics instead of wrapping silently.
# `--target` keeps them away from build scripts and proc macros.
rustflags="-Cpasses=sancov-module \
-Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares \
-Cllvm-args=-sanitizer-coverage-stack-depth \
--cfg fuzzing -Cdebug-assertions -Coverflow-checks"

echo "building fuzz targets (profile $profile, $target_dir)"
build_start=$(date +%s)
RUSTFLAGS="$rustflags" CARGO_TARGET_DIR="$target_dir" \
    cargo build --quiet --manifest-path fuzz/Cargo.toml \
    --target "$triple" --profile "$profile" --bins
echo "built in $(( $(date +%s) - build_start )) s"

bin_dir="$target_dir/$triple/$profile_dir"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# libFuzzer writes new inputs into the first directory only: a scratch one,
# so the checked-in seeds stay as they are. The regressions are replayed
# first, as seeds.
max_len_frame_decoder=4096
max_len_cql_parser=1024
max_len_sstable_reader=65536
max_len_commitlog_replay=65536
max_len_internode_frame=8192

declare -A pids
for t in "${targets[@]}"; do
    mkdir -p "$scratch/$t" "fuzz/artifacts/$t" "fuzz/regressions/$t" "fuzz/corpus/$t"
    max_len_var="max_len_$t"
    args=(
        -max_total_time="$seconds"
        -timeout=10
        -rss_limit_mb=2048
        -max_len="${!max_len_var:-4096}"
        -print_final_stats=1
        -artifact_prefix="$root/fuzz/artifacts/$t/"
    )
    if [ -f "fuzz/dict/$t.dict" ]; then
        args+=(-dict="fuzz/dict/$t.dict")
    fi
    # shellcheck disable=SC2206 # word splitting of extra flags is wanted
    args+=(${VARVE_FUZZ_ARGS:-})
    "$bin_dir/$t" "${args[@]}" "$scratch/$t" "fuzz/regressions/$t" "fuzz/corpus/$t" \
        > "$scratch/$t.log" 2>&1 &
    pids[$t]=$!
done

failed=0
passed=0
for t in "${targets[@]}"; do
    log="$scratch/$t.log"
    rc=0
    wait "${pids[$t]}" || rc=$?
    if ! grep -q 'inline 8-bit counters' "$log"; then
        echo "FAIL $t: the binary is not instrumented for coverage"
        tail -n 20 "$log"
        failed=$((failed + 1))
        continue
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 || true)
    if [ "$rc" -ne 0 ]; then
        echo "FAIL $t (libFuzzer exit $rc) after ${runs:-?} runs"
        grep -v '^#[0-9]' "$log" | tail -n 60
        # The panic message first, in case the stack trace pushed it out.
        grep -A 2 'panicked at' "$log" || true
        artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
        echo "crashing input: ${artifact:-(none written; see the log above)}"
        echo "keep it as a regression: cp ${artifact:-<input>} fuzz/regressions/$t/"
        failed=$((failed + 1))
    else
        echo "ok   $t: ${runs:-?} runs in ${seconds} s, ${cov:-cov: ?}"
        passed=$((passed + 1))
    fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
