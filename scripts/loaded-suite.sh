#!/usr/bin/env bash
# Runs the whole suite (scripts/test.sh) several times in a row while every core is kept busy by
# a bounded background load, and stops at the first failure. This is how a timing assumption
# that only holds on an idle machine shows up before CI's busy 2-core runner finds it.
#
#   bash scripts/loaded-suite.sh            # 3 runs, one busy loop per core
#   RUNS=1 LOAD_JOBS=4 bash scripts/loaded-suite.sh
#
# The load is plain CPU spinning (no disk, no network), one process per job, each ended by
# `timeout` after LOAD_SECS at the latest (default 3 hours) and killed when this script exits.
# Each run's output goes to target/loaded-suite/run-N.log; the summary line says which run
# failed, if any.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs="${RUNS:-3}"
jobs="${LOAD_JOBS:-$(nproc)}"
load_secs="${LOAD_SECS:-10800}"
logs=target/loaded-suite
mkdir -p "$logs"

load_pids=()
stop_load() {
    for pid in "${load_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap stop_load EXIT

for _ in $(seq "$jobs"); do
    timeout "$load_secs" sh -c 'while :; do :; done' &
    load_pids+=("$!")
done
echo "load: $jobs busy loop(s) for at most ${load_secs}s; $(nproc) core(s); $(uptime)"

for run in $(seq "$runs"); do
    started=$(date +%s)
    if bash scripts/test.sh >"$logs/run-$run.log" 2>&1; then
        echo "run $run/$runs passed in $(($(date +%s) - started)) s ($(uptime | sed 's/.*load/load/'))"
    else
        echo "run $run/$runs FAILED after $(($(date +%s) - started)) s: see $logs/run-$run.log" >&2
        grep -E "^(test .* FAILED|FAILED|failures:|---- )" "$logs/run-$run.log" | head -20 >&2 || true
        exit 1
    fi
done
echo "loaded runs: all $runs passed in a row"
