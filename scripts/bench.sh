#!/usr/bin/env bash
# Benchmarks. Loopback only; every child is stopped at the end.
#
# The main figure is ONE table of ratios from examples/bench_driver.rs: our release server
# against native baselines run in the same invocation (a Rust stdio echo padded to each reply's
# size; a raw keep-alive Rust HTTP client against the same fake SnowLuma, 16 connections for
# the concurrent figure). The TypeScript server @snowluma/mcp is included when npm has it;
# today it does not, so its column reads n/a.
#
# Usage: scripts/bench.sh [--all] [bench_driver options]
#   --all  also runs the secondary python drivers (python baselines) and the criterion benches.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
all=0
if [[ "${1:-}" == "--all" ]]; then
    all=1
    shift
fi
cargo build --release --examples --bins
if npm view @snowluma/mcp@1.11.1 version >/dev/null 2>&1; then
    echo "note: @snowluma/mcp is on npm now; bench_driver does not drive it yet" >&2
else
    echo "note: @snowluma/mcp is not on npm (npm view: not found); the TS column is n/a" >&2
fi
echo "load: $(uptime)"
target/release/examples/bench_driver "$@"
if [[ $all == 1 ]]; then
    echo "--- secondary: python drivers (python clients and baselines) ---"
    python3 benches/e2e.py
    python3 benches/exec_e2e.py
    python3 benches/stream_e2e.py
    cargo bench --bench catalog
fi
