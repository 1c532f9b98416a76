#!/usr/bin/env bash
# The soak run (issue 18): a bounded, loopback-only load on the release server, a script and
# not a test (it is in neither CI nor scripts/test.sh). examples/soak/main.rs drives one server
# over stdio through 20,000 mixed tool calls (16 in flight), 50,000 events through 16 event
# resources and 200 verified stream downloads, sampling the server's RSS and open descriptors
# from /proc; it prints the figures and exits non-zero when the server died, a reply was lost
# or unexpected, descriptors grew between phase ends, or the server's stderr holds a panic.
#
# Usage: scripts/soak.sh [--calls N] [--events N] [--downloads N] [--deadline-secs N]
# Linux only (/proc). Takes a minute or two on an idle machine; the driver's watchdog ends it
# after --deadline-secs (default 300).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The server on its own first, so it is the binary users get (see scripts/bench.sh).
cargo build --release --bin snowluma-mcp
cargo build --release --examples
echo "load: $(uptime)"
began=$(date +%s)
status=0
target/release/examples/soak "$@" || status=$?
echo "soak.sh: driver exit status $status after $(( $(date +%s) - began )) s"
exit "$status"
