#!/usr/bin/env python3
"""Writes the MCP Bundle's manifest.json from manifest.template.json.

The tool list is not written by hand: the binary is started with every setting a bundle user
can turn on (write mode, an endpoint and an events URL, all on loopback and never contacted,
since listing tools opens no connection), asked for tools/list over stdio, and its names and
descriptions go into the manifest. So the manifest lists exactly what that binary serves.

usage: manifest.py --binary PATH --version X.Y.Z --repository URL --platform linux --out FILE
Standard library only.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Loopback addresses that nothing listens on: listing tools never connects, and if a future
# change made it connect, the refused connection would show instead of a silent hang.
UNUSED_ENDPOINT = "http://127.0.0.1:9/"
UNUSED_EVENTS_URL = "ws://127.0.0.1:9/"
TIMEOUT_SECS = 60


def rpc(proc, message):
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    if "id" not in message:
        return None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"manifest.py: the server ended before answering {message['method']}")
        reply = json.loads(line)
        if reply.get("id") == message["id"]:
            if "error" in reply:
                raise SystemExit(f"manifest.py: {message['method']} failed: {reply['error']}")
            return reply["result"]


def list_tools(binary):
    with tempfile.TemporaryDirectory() as home:
        downloads = Path(home) / "downloads"
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": home,
            "SNOWLUMA_MCP_MODE": "write",
            "SNOWLUMA_MCP_ENDPOINT": UNUSED_ENDPOINT,
            "SNOWLUMA_MCP_EVENTS_URL": UNUSED_EVENTS_URL,
            "SNOWLUMA_MCP_DOWNLOAD_DIR": str(downloads),
            "SNOWLUMA_MCP_LOG": "warn",
        }
        proc = subprocess.Popen(
            [binary], env=env, text=True, encoding="utf-8",
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        try:
            rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "snowluma-mcp-bundle", "version": "1"}}})
            rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            tools, cursor, next_id = [], None, 2
            while True:
                params = {"cursor": cursor} if cursor else {}
                page = rpc(proc, {"jsonrpc": "2.0", "id": next_id, "method": "tools/list",
                                  "params": params})
                tools += page["tools"]
                cursor, next_id = page.get("nextCursor"), next_id + 1
                if not cursor:
                    break
        finally:
            proc.stdin.close()
            try:
                proc.wait(timeout=TIMEOUT_SECS)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return [{"name": t["name"], "description": t.get("description", "")} for t in tools]


def main():
    parser = argparse.ArgumentParser()
    for flag in ("--binary", "--version", "--repository", "--platform", "--out"):
        parser.add_argument(flag, required=True)
    args = parser.parse_args()
    manifest = json.loads((HERE / "manifest.template.json").read_text(encoding="utf-8"))
    tools = list_tools(args.binary)
    if not tools:
        sys.exit("manifest.py: the binary listed no tools")
    manifest["version"] = args.version
    manifest["repository"]["url"] = args.repository
    manifest["tools"] = tools
    manifest["compatibility"]["platforms"] = [args.platform]
    Path(args.out).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n",
                              encoding="utf-8")


if __name__ == "__main__":
    main()
