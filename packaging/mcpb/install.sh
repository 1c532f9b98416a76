#!/usr/bin/env bash
# Installs the locked @anthropic-ai/mcpb into packaging/mcpb/node_modules when it is absent or
# package-lock.json changed since the last install (a stamp in node_modules).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
if ! cmp -s package-lock.json node_modules/.installed-package-lock.json 2>/dev/null; then
    npm ci --no-audit --no-fund --loglevel=error >&2
    cp package-lock.json node_modules/.installed-package-lock.json
fi
