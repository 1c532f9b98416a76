#!/usr/bin/env bash
# Rebuilds the preview panel, ui/dist/preview-message.html, from ui/src: installs the locked
# npm packages, then bundles the panel into one self-contained HTML file. The output is
# reproducible; commit it, since building the Rust crate embeds it and never runs npm.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../ui"
npm ci --no-fund --no-audit --loglevel=error
npm run --silent build
echo "rebuilt ui/dist/preview-message.html"
