#!/usr/bin/env python3
"""Writes server.json, the entry for the official MCP Registry, for one release.

Everything that must agree with the release is derived, never typed twice: the version and
the repository come from the crate's metadata (passed in by scripts/release.sh), the bundle's
file name and sha256 from the built bundle. The entry lists two packages: the crate
(`cargo install snowluma-mcp`) and the host platform's MCP Bundle, downloaded from the
release's assets.

usage: server_json.py --version X.Y.Z --repository URL --bundle PATH --out FILE
Standard library only.
"""

import argparse
import hashlib
import json
from pathlib import Path
from urllib.parse import urlparse

SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

# What a registry client may show when it asks the user for settings; the same variables as
# the bundle's user_config (packaging/manifest.template.json).
ENVIRONMENT = [
    {"name": "SNOWLUMA_MCP_MODE", "description": "docs (offline catalog), read or write; default: read with an endpoint, else docs",
     "choices": ["docs", "read", "write"], "isRequired": False},
    {"name": "SNOWLUMA_MCP_ENDPOINT", "description": "SnowLuma's OneBot HTTP root, e.g. http://127.0.0.1:3000/",
     "isRequired": False},
    {"name": "SNOWLUMA_MCP_TOKEN", "description": "SnowLuma's HTTP access token",
     "isRequired": False, "isSecret": True},
    {"name": "SNOWLUMA_MCP_DOWNLOAD_DIR", "description": "private directory for stream downloads (write mode)",
     "isRequired": False},
    {"name": "SNOWLUMA_MCP_UPLOAD_ROOT", "description": "the only directory automatic uploads may read from",
     "isRequired": False},
    {"name": "SNOWLUMA_MCP_EVENTS_URL", "description": "SnowLuma's OneBot WebSocket adapter, for live events",
     "isRequired": False},
]


def registry_name(repository):
    """io.github.<owner>/<repo>: the namespace the registry grants to a GitHub owner."""
    url = urlparse(repository)
    parts = [p for p in url.path.split("/") if p]
    if url.hostname != "github.com" or len(parts) != 2:
        raise SystemExit(f"server_json.py: cannot derive a registry name from {repository}")
    return f"io.github.{parts[0].lower()}/{parts[1].removesuffix('.git')}"


def main():
    parser = argparse.ArgumentParser()
    for flag in ("--version", "--repository", "--bundle", "--out"):
        parser.add_argument(flag, required=True)
    args = parser.parse_args()
    bundle = Path(args.bundle)
    digest = hashlib.sha256(bundle.read_bytes()).hexdigest()
    repository = args.repository.removesuffix("/")
    entry = {
        "$schema": SCHEMA,
        "name": registry_name(repository),
        "title": "SnowLuma (OneBot 11)",
        "description": "SnowLuma's OneBot 11 action catalog for LLMs, and the actions run against your SnowLuma",
        "repository": {"url": repository, "source": "github"},
        "version": args.version,
        "packages": [
            {
                "registryType": "cargo",
                "registryBaseUrl": "https://crates.io",
                "identifier": "snowluma-mcp",
                "version": args.version,
                "transport": {"type": "stdio"},
                "environmentVariables": ENVIRONMENT,
            },
            {
                "registryType": "mcpb",
                "identifier": f"{repository}/releases/download/v{args.version}/{bundle.name}",
                "version": args.version,
                "fileSha256": digest,
                "transport": {"type": "stdio"},
            },
        ],
    }
    Path(args.out).write_text(json.dumps(entry, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
