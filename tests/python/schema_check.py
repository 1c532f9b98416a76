"""Checks a tool result against the outputSchema the server advertised for that tool.

Shared by the python client tests: every structuredContent a test receives goes through
`assert_matches_output_schema`, so a result that drifts from its schema fails the suite.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from mcp import Client

#: Every built-in tool's schemas, as the server commits and serves them.
COMMITTED = Path(__file__).resolve().parents[2] / "runtime" / "server" / "snapshots" / "tool_schemas.snap.jsonl"


@cache
def committed_output_schemas() -> dict[str, Any]:
    lines = COMMITTED.read_text(encoding="utf-8").splitlines()
    return {tool["name"]: tool["outputSchema"] for tool in map(json.loads, lines)}


async def assert_matches_output_schema(client: Client, name: str, structured: Any) -> None:
    """Validates `structured` against the outputSchema the server advertised to this client for
    the named tool. A tool the server did not list for this client (called anyway, which the gate
    must answer) is checked against the schema the server defines for it; a tool the server
    neither lists nor defines fails the check."""
    listing = await client.list_tools(cache_mode="bypass")
    schema = next((t.output_schema for t in listing.tools if t.name == name), None)
    if schema is None:
        schema = committed_output_schemas().get(name)
    assert schema, f"{name}: the server neither lists this tool for this client nor defines an outputSchema for it"
    validator = Draft202012Validator(schema)
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(structured)]
    assert not errors, f"{name}: structuredContent does not match the advertised outputSchema: {errors}"
