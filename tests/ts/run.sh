#!/usr/bin/env bash
# Runs the TypeScript SDK v2 tests (tasks, the HTTP transport, events over HTTP) against the
# built binary and the fake SnowLuma example (`cargo build --all-targets --examples` first).
# Installs the locked node packages when absent or when package-lock.json changed since the last
# install (a stamp in node_modules).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
if ! cmp -s package-lock.json node_modules/.installed-package-lock.json 2>/dev/null; then
  npm ci --no-audit --no-fund
  cp package-lock.json node_modules/.installed-package-lock.json
fi
node --test tasks.test.mjs http.test.mjs http_events.test.mjs
