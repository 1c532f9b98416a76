#!/usr/bin/env bash
# Runs the python MCP SDK client tests against the snowluma-mcp binary.
# The binary comes from SNOWLUMA_MCP_BIN, default <repo>/target/debug/snowluma-mcp (`cargo build`).
# Extra arguments go to pytest. Exits with pytest's exit code.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1

bash scripts/python-env.sh || exit $?

.venv/bin/python -m pytest -q tests/python "$@"
exit $?
