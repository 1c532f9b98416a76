"""Third-party-client tests of execution: the official python MCP SDK (`mcp` 2.3.0) drives the
real snowluma-mcp binary in read and write mode against the fake SnowLuma, once per protocol
generation (``mode="legacy"``: `initialize`; ``mode="auto"``: `server/discover`, 2026-07-28).

The fake is the debug example binary (`cargo build --examples`), started once per module with an
access token; it prints `FAKE_SNOWLUMA_URL=...` and serves until its stdin closes. The server gets
SNOWLUMA_MCP_MODE/ENDPOINT/TOKEN through `StdioServerParameters.env` (the SDK's stdio transport
passes only a few variables of its own plus `env`).

Binaries: $SNOWLUMA_MCP_BIN, default <repo>/target/debug/snowluma-mcp (`cargo build`), and
$SNOWLUMA_MCP_FAKE_BIN, default <repo>/target/debug/examples/fake_snowluma (`cargo build --examples`).
"""

from __future__ import annotations

import contextlib

import json
import os
import re
import secrets
import select
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import mcp_types as types
import pytest
from mcp import Client
from schema_check import assert_matches_output_schema
from mcp.client.stdio import StdioServerParameters

REPO = Path(__file__).resolve().parents[2]
BIN = os.environ.get("SNOWLUMA_MCP_BIN") or str(REPO / "target" / "debug" / "snowluma-mcp")
FAKE_BIN = os.environ.get("SNOWLUMA_MCP_FAKE_BIN") or str(REPO / "target" / "debug" / "examples" / "fake_snowluma")

MODES = ["legacy", "auto"]

#: Bound on one whole test body (process start, handshake, all requests, shutdown).
TEST_TIMEOUT_S = 60
#: Bound on each single request/response round trip.
READ_TIMEOUT_S = 15
#: Bound on the fake announcing its URL.
FAKE_START_TIMEOUT_S = 20

#: The fake's canned identities (tests/support/fake_snowluma.rs).
SELF_ID = 10001
GROUP_ID = 20001
MESSAGE_ID = -123456
MISSING_MESSAGE_ID = 999
CONNECTION_CHECKS = ("get_login_info", "get_status", "get_version_info")

TRACEPARENT_RE = re.compile(r"^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")

T = TypeVar("T")


# --------------------------------------------------------------------------- fake SnowLuma


@dataclass(frozen=True)
class Fake:
    url: str
    token: str


def _require_executable(path: str, what: str, build: str, variable: str) -> None:
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail(
            f"{what} not found at {path}: run `{build}` in the repository root or point {variable} at it",
            pytrace=False,
        )


@contextlib.contextmanager
def start_fake(*args: str) -> Iterator[Fake]:
    """A fake SnowLuma process with a fresh token and `args`; stopped by closing its stdin."""
    _require_executable(FAKE_BIN, "fake SnowLuma example", "cargo build --examples", "SNOWLUMA_MCP_FAKE_BIN")
    token = "tok-" + secrets.token_hex(12)
    proc = subprocess.Popen(
        [FAKE_BIN, "--token", token, "--port", "0", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if not k.startswith("SNOWLUMA_MCP_")},
        cwd=str(REPO),
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], FAKE_START_TIMEOUT_S)
        line = proc.stdout.readline().decode("utf-8", "replace").strip() if ready else ""
        match = re.fullmatch(r"FAKE_SNOWLUMA_URL=(http://127\.0\.0\.1:\d+/)", line)
        assert match, f"fake SnowLuma did not announce its URL within {FAKE_START_TIMEOUT_S}s (got {line!r})"
        yield Fake(url=match[1], token=token)
    finally:
        try:
            if proc.stdin:
                proc.stdin.close()
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture(scope="module")
def fake() -> Iterator[Fake]:
    """The fake SnowLuma with a fresh token, shared by a module's tests."""
    with start_fake() as running:
        yield running


# --------------------------------------------------------------------------- helpers


def server_params(fake: Fake, server_mode: str) -> StdioServerParameters:
    _require_executable(BIN, "snowluma-mcp binary", "cargo build", "SNOWLUMA_MCP_BIN")
    return StdioServerParameters(
        command=BIN,
        args=[],
        cwd=str(REPO),
        env={
            "SNOWLUMA_MCP_MODE": server_mode,
            "SNOWLUMA_MCP_ENDPOINT": fake.url,
            "SNOWLUMA_MCP_TOKEN": fake.token,
            "SNOWLUMA_MCP_LOG": "warn",
        },
    )


def run_with_client(mode: str, fake: Fake, server_mode: str, body: Callable[[Client], Awaitable[T]]) -> T:
    """Starts the binary in `server_mode` against the fake, connects an SDK `Client` in `mode`,
    runs `body`, shuts everything down."""

    async def main() -> T:
        with anyio.fail_after(TEST_TIMEOUT_S):
            async with Client(server_params(fake, server_mode), mode=mode, read_timeout_seconds=READ_TIMEOUT_S) as client:
                return await body(client)

    return anyio.run(main)


def assert_no_token(fake: Fake, what: str, value: Any) -> None:
    serialized = value.model_dump_json(by_alias=True) if hasattr(value, "model_dump_json") else json.dumps(value)
    assert fake.token not in serialized, f"{what}: the access token appears in the result"


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def check_envelope(result: types.CallToolResult) -> dict[str, Any]:
    """structuredContent {result, diagnostics}, a text block with the same JSON, `_meta.traceparent`."""
    structured = result.structured_content
    assert isinstance(structured, dict), f"structuredContent missing or not an object: {result!r}"
    assert set(structured) == {"result", "diagnostics"}, f"structuredContent keys: {sorted(structured)}"
    diagnostics = structured["diagnostics"]
    assert isinstance(diagnostics, dict) and diagnostics.get("outcome") in {"success", "failed", "unknown"}, diagnostics
    texts = [block for block in result.content if isinstance(block, types.TextContent)]
    # A page of a larger result starts with a summary line (not JSON) before the JSON block.
    assert any(_json_or_none(block.text) == structured for block in texts), (
        f"no text block carries the structuredContent JSON: {[b.text[:200] for b in texts]}"
    )
    assert result.meta is not None and TRACEPARENT_RE.match(str(result.meta.get("traceparent"))), result.meta
    if result.is_error:
        assert structured["result"] is None, f"a tool error must have result null: {structured!r}"
        assert diagnostics["outcome"] == "failed", diagnostics
    return structured


async def call(client: Client, fake: Fake, name: str, arguments: dict[str, Any]):
    """call_tool plus the envelope and no-token checks; returns (CallToolResult, structuredContent)."""
    result = await client.call_tool(name, arguments)
    assert_no_token(fake, f"{name}({arguments})", result)
    structured = check_envelope(result)
    await assert_matches_output_schema(client, name, structured)
    return result, structured


mode_param = pytest.mark.parametrize("mode", MODES)


# --------------------------------------------------------------------------- tools/list


@mode_param
def test_read_mode_lists_query_action_only(mode: str, fake: Fake) -> None:
    async def body(client: Client):
        listing = await client.list_tools(cache_mode="bypass")
        assert_no_token(fake, "tools/list", listing)
        return {tool.name: tool for tool in listing.tools}

    tools = run_with_client(mode, fake, "read", body)
    assert "query_action" in tools, sorted(tools)
    assert "invoke_action" not in tools, sorted(tools)
    query = tools["query_action"]
    assert query.annotations is not None and query.annotations.read_only_hint is True, query.annotations
    assert query.input_schema.get("type") == "object" and "action" in query.input_schema.get("properties", {})


@mode_param
def test_write_mode_lists_both_executing_tools(mode: str, fake: Fake) -> None:
    async def body(client: Client):
        return [tool.name for tool in (await client.list_tools(cache_mode="bypass")).tools]

    names = run_with_client(mode, fake, "write", body)
    assert {"query_action", "invoke_action"} <= set(names), names


# --------------------------------------------------------------------------- query_action


@mode_param
def test_query_get_login_info(mode: str, fake: Fake) -> None:
    async def body(client: Client):
        return await call(client, fake, "query_action", {"action": "get_login_info"})

    result, structured = run_with_client(mode, fake, "read", body)
    assert not result.is_error, structured
    assert structured["diagnostics"]["outcome"] == "success", structured
    envelope = structured["result"]
    assert envelope["status"] == "ok" and envelope["retcode"] == 0, envelope
    assert envelope["data"]["user_id"] == SELF_ID, envelope
    assert isinstance(envelope["data"].get("nickname"), str), envelope


@mode_param
def test_query_refuses_a_write_action(mode: str, fake: Fake) -> None:
    async def body(client: Client):
        return await call(client, fake, "query_action", {"action": "delete_msg", "params": {"message_id": -5}})

    result, structured = run_with_client(mode, fake, "read", body)
    assert result.is_error, f"query_action delete_msg should be a tool error: {structured}"
    diagnostics = structured["diagnostics"]
    assert diagnostics.get("kind") == "mode", diagnostics
    # The refusal names the tool to use; the text is checked where the client shows it (message
    # and next step), not in one field only.
    guidance = f"{diagnostics.get('message', '')} {diagnostics.get('next_step', '')}"
    assert "invoke_action" in guidance, diagnostics
    assert "delete_msg" in diagnostics.get("message", ""), diagnostics


@mode_param
def test_query_business_failure_is_data(mode: str, fake: Fake) -> None:
    async def body(client: Client):
        return await call(client, fake, "query_action", {"action": "get_msg", "params": {"message_id": MISSING_MESSAGE_ID}})

    result, structured = run_with_client(mode, fake, "read", body)
    assert not result.is_error, f"a OneBot business failure must not be isError: {structured}"
    assert structured["diagnostics"]["outcome"] == "failed", structured
    assert structured["diagnostics"].get("kind") == "onebot_failure", structured
    envelope = structured["result"]
    assert envelope["retcode"] == 100 and envelope["status"] == "failed", envelope


@mode_param
def test_query_invalid_params(mode: str, fake: Fake) -> None:
    async def body(client: Client):
        return await call(client, fake, "query_action", {"action": "get_msg", "params": {"message_id": 0}})

    result, structured = run_with_client(mode, fake, "read", body)
    assert result.is_error, f"message_id 0 should be rejected before sending: {structured}"
    assert structured["diagnostics"].get("kind") == "invalid_arguments", structured
    assert "get_msg" in structured["diagnostics"].get("message", ""), structured


# --------------------------------------------------------------------------- invoke_action


@mode_param
def test_invoke_send_group_msg(mode: str, fake: Fake) -> None:
    async def body(client: Client):
        return await call(
            client, fake, "invoke_action", {"action": "send_group_msg", "params": {"group_id": GROUP_ID, "message": "hi"}}
        )

    result, structured = run_with_client(mode, fake, "write", body)
    assert not result.is_error, structured
    assert structured["diagnostics"]["outcome"] == "success", structured
    envelope = structured["result"]
    assert envelope["status"] == "ok" and envelope["retcode"] == 0, envelope
    assert envelope["data"]["message_id"] == MESSAGE_ID, envelope


# --------------------------------------------------------------------------- get_runtime_info


@mode_param
def test_runtime_info_checks_the_connection(mode: str, fake: Fake) -> None:
    async def body(client: Client):
        return await call(client, fake, "get_runtime_info", {"check_connection": True})

    result, structured = run_with_client(mode, fake, "read", body)
    assert not result.is_error, structured
    assert structured["diagnostics"]["outcome"] == "success", structured
    info = structured["result"]
    assert info["mode"] == "read" and info["execution_enabled"] is True and info["write_enabled"] is False, info
    assert info["connection_checked"] is True, info
    assert info["catalog_matches_server"] is True, info
    checks = info["checks"]
    assert set(CONNECTION_CHECKS) <= set(checks), sorted(checks)
    for action in CONNECTION_CHECKS:
        check = checks[action]
        assert check["diagnostics"]["outcome"] == "success", f"{action}: {check}"
        assert check["result"]["status"] == "ok" and check["result"]["retcode"] == 0, f"{action}: {check}"
    assert checks["get_login_info"]["result"]["data"]["user_id"] == SELF_ID


# --------------------------------------------------------------------------- secrets


@mode_param
def test_token_never_in_results(mode: str, fake: Fake) -> None:
    """Successes, business failures, refusals and param errors in one session: the token is in
    none of them (each `call` checks the whole result, text blocks and _meta included)."""

    async def body(client: Client):
        assert_no_token(fake, "tools/list", await client.list_tools(cache_mode="bypass"))
        for name, arguments in (
            ("get_runtime_info", {}),
            ("get_runtime_info", {"check_connection": True}),
            ("query_action", {"action": "get_login_info"}),
            ("query_action", {"action": "get_msg", "params": {"message_id": MISSING_MESSAGE_ID}}),
            ("query_action", {"action": "get_msg", "params": {"message_id": 0}}),
            ("query_action", {"action": "delete_msg", "params": {"message_id": -5}}),
            ("invoke_action", {"action": "send_group_msg", "params": {"group_id": GROUP_ID, "message": "hi"}}),
            ("invoke_action", {"action": "delete_msg", "params": {"message_id": MISSING_MESSAGE_ID}}),
            ("query_action", {"action": "no_such_action"}),
        ):
            await call(client, fake, name, arguments)

    run_with_client(mode, fake, "write", body)
