#!/usr/bin/env bash
# Runs the preview panel's browser tests in headless Chromium (node's built-in test runner).
# Needs node >= 20, the locked npm packages (installed here when missing) and Chromium at
# /usr/bin/chromium (Debian: apt-get install -y chromium) or at $CHROMIUM_PATH.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v npm >/dev/null 2>&1; then
    echo "preview panel tests need node >= 20 and npm on PATH" >&2
    exit 1
fi
chromium="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ ! -x "$chromium" ]; then
    echo "preview panel tests need Chromium at $chromium: apt-get install -y chromium" \
        "(or set CHROMIUM_PATH)" >&2
    exit 1
fi
if [ ! -d node_modules ]; then
    npm ci --no-fund --no-audit --loglevel=error
fi
node --test test/panel.test.mjs
