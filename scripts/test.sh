#!/usr/bin/env bash
# Runs the whole test suite: the Rust tests of both crates (codegen fixtures, catalog, search
# quality, stdio protocol with rmcp's client and raw JSON lines, the fake SnowLuma), the
# third-party client tests (python `mcp` 2.3.0 in a repo-local virtualenv, the TypeScript SDK v2
# tasks client in tests/ts) and the preview
# panel's browser tests (headless Chromium, node's test runner).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export INSTA_UPDATE="${INSTA_UPDATE:-no}"
# Every tool the suites below need, checked before minutes of building (README "Prerequisites").
bash scripts/prerequisites.sh
# The binary and examples (fake SnowLuma, stdio echo) are what the python tests drive.
cargo build --all-targets --examples
cargo test --workspace
bash tests/python/run.sh
bash tests/ts/run.sh
bash ui/test/run.sh
