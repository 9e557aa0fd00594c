#!/usr/bin/env bash
# The one test command (README, .ci/run): formatting, lints, Rust tests,
# then the Python driver tests against a real `varve server` process.
# Needs cargo (rustup), python3 and apt (for Debian's chromium, unless
# VARVE_SKIP_BROWSER=1). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
# The heap-profiling build (docs/benchmarks.md, sessions 12-13) still compiles.
cargo clippy -p varve --features system-allocator -- -D warnings

step "every tokio::select! in crates/cluster is biased (scripts/check_biased_select.sh)"
bash scripts/check_biased_select.sh

step "cargo build (varve binary, needed by the driver tests)"
cargo build -p varve --bin varve

step "cargo test"
# A test that hangs must fail the run, not hold CI until its own limit
# (session 29's run waited 5400 s on one): the whole step, build of the
# test binaries included, gets CARGO_TEST_LIMIT_S.
CARGO_TEST_LIMIT_S=2400
if ! timeout --kill-after=30 "$CARGO_TEST_LIMIT_S" cargo test --workspace; then
    echo "cargo test failed or ran past ${CARGO_TEST_LIMIT_S} s" >&2
    exit 1
fi

step "fuzz (libFuzzer, 10 s per target)"
bash scripts/fuzz.sh 10

step "python venv (.venv)"
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
# Reinstall only when requirements.txt changed.
stamp=.venv/.requirements.sha256
want=$(sha256sum tests/python/requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt
    echo "$want" > "$stamp"
fi

step "headless Chromium (Debian's chromium; the report test opens report.html in it)"
if [ ! -x /usr/bin/chromium ] && [ -z "${VARVE_SKIP_BROWSER:-}" ]; then
    sudo_cmd=""
    if [ "$(id -u)" != 0 ] && command -v sudo > /dev/null; then sudo_cmd="sudo"; fi
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq chromium > /dev/null
fi

step "pytest tests/python"
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in
    /*) ;;
    *) target_dir="$(pwd)/$target_dir" ;;
esac
export VARVE_BIN="${VARVE_BIN:-$target_dir/debug/varve}"
# Four workers: the multi-node modules that share a port set run in order on
# one (conftest.py), the single-node tests go to any. Most of a multi-node
# test is waiting, so four workers keep two cores busy. The slowest tests
# are listed: the whole run must stay under 30 minutes.
# PYTEST_LIMIT_S bounds the whole step, for the same reason as cargo test's.
PYTEST_LIMIT_S=2400
timeout --kill-after=30 "$PYTEST_LIMIT_S" \
    .venv/bin/python -m pytest tests/python -n 4 --dist loadgroup --durations=15 "$@"
