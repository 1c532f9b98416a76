"""Checks a tool result against the outputSchema the server advertised for that tool.

Shared by the python client tests: every structuredContent a test receives goes through
`assert_matches_output_schema`, so a result that drifts from its schema fails the suite.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from mcp import Client


async def assert_matches_output_schema(client: Client, name: str, structured: Any) -> None:
    """Lists the tools as this client sees them and validates `structured` against the named
    tool's outputSchema; a tool the server did not list for this client has none to check."""
    listing = await client.list_tools(cache_mode="bypass")
    schema = next((t.output_schema for t in listing.tools if t.name == name), None)
    if not schema:
        return
    validator = Draft202012Validator(schema)
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(structured)]
    assert not errors, f"{name}: structuredContent does not match the advertised outputSchema: {errors}"
