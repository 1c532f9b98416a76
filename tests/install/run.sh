#!/usr/bin/env bash
# Checks the install routes on what `bash scripts/release.sh` built (run it first):
# the `cargo install` root, dist/ (binary, bundle, server.json, SHA256SUMS) and the container.
# pytest in the repo's .venv, then the bundle test with @anthropic-ai/mcpb's own unpacker and
# config resolution (node's test runner). A check that cannot run here (the container, without
# a container runtime) is reported as skipped by name, never as passed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
bash scripts/python-env.sh
.venv/bin/python -m pytest -q -c tests/install/pytest.ini tests/install "$@"
bash packaging/mcpb/install.sh
(cd packaging/mcpb && node --test test/)
