#!/usr/bin/env bash
# The official MCP conformance suite against the Streamable HTTP transport (issue 37):
# @modelcontextprotocol/conformance 0.1.16 `--suite all` and 0.2.0-alpha.12
# `--requirements 2026-07-28`, pinned by package-lock.json here, each checked against its
# expected-failures file (scenarios that need the runner's fixture tools, prompts or
# resources). Both run twice in a row against one server, as a long-lived deployment sees
# them. The runner sends no token, so the server listens on loopback without one.
#
# Node 20 lacks fs.globSync, which the runner imports; shim/ adds it through a resolve hook.
#
# The server runs with the shipped defaults (SNOWLUMA_MCP_HTTP_MAX_CONNS_PER_PEER = 16 among
# them): the runner is one peer that never closes its sessions' GET streams.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
binary="${SNOWLUMA_MCP_BIN:-$root/target/debug/snowluma-mcp}"
cd "$here"
[ -x "$binary" ] || { echo "no server binary at $binary: run cargo build first" >&2; exit 1; }
command -v node >/dev/null || { echo "the conformance suite needs node >= 20 and npm" >&2; exit 1; }
npm ci --no-audit --no-fund --loglevel=error >/dev/null

log="$(mktemp)"
env -u SNOWLUMA_MCP_HTTP_TOKEN -u SNOWLUMA_MCP_HTTP_TOKEN_FILE -u SNOWLUMA_MCP_HTTP_TOKENS_FILE \
    SNOWLUMA_MCP_LOG=info,rmcp=warn \
    "$binary" --transport http --listen 127.0.0.1:0 2>"$log" &
server=$!
trap 'kill "$server" 2>/dev/null || true; [ -n "${KEEP_LOG:-}" ] && cp "$log" "$KEEP_LOG"; rm -f "$log"' EXIT
port=""
for _ in $(seq 1 200); do
    port="$(sed -n 's|.*serving MCP over HTTP at http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$log" | head -1)"
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || { cat "$log" >&2; echo "the server did not start" >&2; exit 1; }
url="http://127.0.0.1:$port/mcp"

run() {
    local package="$1" baseline="$2"
    shift 2
    local out
    out="$(mktemp)"
    if ! node --import ./shim/register.mjs "node_modules/$package/dist/index.js" server \
        --url "$url" "$@" --expected-failures "$baseline" >"$out" 2>&1; then
        cat "$out" >&2
        echo "conformance ($package $*): failures outside $baseline" >&2
        rm -f "$out"
        exit 1
    fi
    grep -a "Baseline check passed" "$out"
    rm -f "$out"
}

for round in 1 2; do
    echo "conformance round $round against $url"
    run conformance-0.1 expected-failures-0.1.16.yaml --suite all
    run conformance-0.2 expected-failures-0.2.0-alpha.12.yaml --requirements 2026-07-28
done
kill -0 "$server" || { cat "$log" >&2; echo "the server died during the suite" >&2; exit 1; }
