#!/usr/bin/env bash
# Benchmarks: criterion (catalog paths) and the end-to-end stdio and HTTP scripts. Loopback only.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release --examples --bins
python3 benches/e2e.py "$@"
python3 benches/exec_e2e.py
python3 benches/stream_e2e.py
python3 benches/http_e2e.py
cargo bench --bench catalog
