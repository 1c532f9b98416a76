#!/usr/bin/env bash
# Builds the MCP Bundle (.mcpb) for the host platform from a built binary:
#   bash scripts/bundle.sh [BINARY] [OUT_DIR]      (defaults: target/release/snowluma-mcp, dist)
# The bundle holds manifest.json (written by packaging/manifest.py, tools listed by the binary
# itself), server/snowluma-mcp, LICENSE and icon.png. `mcpb validate` checks the manifest and
# `mcpb pack` packs it (@anthropic-ai/mcpb, pinned in packaging/mcpb/package-lock.json). Zip
# entries carry SOURCE_DATE_EPOCH (default: the last commit's time) and fixed modes, so packing
# the same binary twice gives the same bytes. Prints the bundle's path.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
binary="${1:-target/release/snowluma-mcp}"
out_dir="${2:-dist}"
if [ ! -x "$binary" ]; then
    echo "bundle.sh: no executable at $binary; build it first (cargo build --release --locked)" >&2
    exit 1
fi
case "$(uname -s)" in
    Linux) platform=linux ;;
    Darwin) platform=darwin ;;
    *) echo "bundle.sh: $(uname -s) is not supported here (linux, darwin)" >&2; exit 1 ;;
esac
arch="$(uname -m)"
metadata="$(cargo metadata --no-deps --locked --format-version 1)"
field() { jq -r --arg f "$1" '.packages[] | select(.name == "snowluma-mcp") | .[$f]' <<<"$metadata"; }
version="$(field version)"
repository="$(field repository)"
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
    SOURCE_DATE_EPOCH="$(git log -1 --format=%ct 2>/dev/null)" || {
        echo "bundle.sh: not a git checkout; set SOURCE_DATE_EPOCH (seconds) for the zip timestamps" >&2
        exit 1
    }
fi
export SOURCE_DATE_EPOCH

tools="packaging/mcpb"
bash "$tools/install.sh"
mcpb() {
    TZ=UTC node --import "./$tools/pinned-clock.mjs" "$tools/node_modules/@anthropic-ai/mcpb/dist/cli/cli.js" "$@"
}

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/server"
install -m 0755 "$binary" "$stage/server/snowluma-mcp"
install -m 0644 LICENSE "$stage/LICENSE"
install -m 0644 packaging/icon.png "$stage/icon.png"
python3 packaging/manifest.py --binary "$stage/server/snowluma-mcp" --version "$version" \
    --repository "$repository" --platform "$platform" --out "$stage/manifest.json"
chmod 0644 "$stage/manifest.json"

mkdir -p "$out_dir"
bundle="$out_dir/snowluma-mcp-$version-$platform-$arch.mcpb"
mcpb validate "$stage/manifest.json" >&2
mcpb pack "$stage" "$bundle" >&2
echo "$bundle"
