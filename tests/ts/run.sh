#!/usr/bin/env bash
# Runs the TypeScript SDK v2 tasks tests against the built binary and the fake SnowLuma example
# (`cargo build --all-targets --examples` first). Installs the locked node packages when absent.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
if [ ! -d node_modules/@modelcontextprotocol/client ]; then
  npm ci --no-audit --no-fund
fi
node --test tasks.test.mjs http.test.mjs
