#!/usr/bin/env bash
# Benchmarks. Loopback only; every child is stopped at the end.
#
# The main figure is ONE table of ratios from examples/bench_driver.rs: our release server
# against native baselines run in the same invocation (a Rust stdio echo padded to each reply's
# size; a raw keep-alive Rust HTTP client against the same fake SnowLuma, 16 connections for
# the concurrent figure; a native stdio relay making that same HTTP call behind a stdio hop, to
# show what the hop alone costs; a native client reading the same download frames). The docs
# and query_action rows are measured again with every process on one CPU. The TypeScript server @snowluma/mcp is not on npm (checked
# 2026-12-01), so its column reads n/a; the bench itself talks only to loopback.
#
# Usage: scripts/bench.sh [--all] [bench_driver options]
#   --all  also runs the secondary python drivers (python baselines), the HTTP transport
#          bench (query_action over Streamable HTTP against stdio) and the criterion benches.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
all=0
if [[ "${1:-}" == "--all" ]]; then
    all=1
    shift
fi
# The server on its own first: built together with the examples, it would get the features
# that dev-dependencies turn on (a 13.4 MB binary with 364 KB of relocated data, against the
# 12.9 MB and 250 KB users get from `cargo build --release`). Building the examples afterwards
# leaves the server binary as it is.
cargo build --release --bin snowluma-mcp
cargo build --release --examples
echo "load: $(uptime)"
target/release/examples/bench_driver "$@"
if [[ $all == 1 ]]; then
    echo "--- secondary: python drivers (python clients and baselines) ---"
    python3 benches/e2e.py
    python3 benches/exec_e2e.py
    python3 benches/stream_e2e.py
    python3 benches/http_e2e.py
    cargo bench --bench events
    cargo bench --bench catalog
fi
