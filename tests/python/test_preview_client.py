"""Third-party-client tests of `preview_message` and its MCP Apps panel: the official python MCP
SDK (`mcp` 2.3.0) drives the real snowluma-mcp binary in docs, read and write mode (read and
write against the fake SnowLuma), once per protocol generation (``legacy``: `initialize`;
``auto``: `server/discover`, 2026-07-28), as a plain client and as an Apps host (the SDK's
`advertise("io.modelcontextprotocol/ui", {"mimeTypes": [...]})`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.extension import advertise
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from test_exec_client import (  # noqa: F401 (the `fake` fixture is used by name)
    BIN,
    MESSAGE_ID,
    GROUP_ID,
    READ_TIMEOUT_S,
    TEST_TIMEOUT_S,
    Fake,
    _require_executable,
    call,
    fake,
)

MODES = ["legacy", "auto"]
PANEL_URI = "ui://snowluma/preview-message.html"
PANEL_MIME = "text/html;profile=mcp-app"
APPS_EXTENSION = "io.modelcontextprotocol/ui"
CSP_KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
CATALOG_TTL_MS = 300_000

T = TypeVar("T")

mode_param = pytest.mark.parametrize("mode", MODES)


def server_params(fake: Fake, server_mode: str) -> StdioServerParameters:
    _require_executable(BIN, "snowluma-mcp binary", "cargo build", "SNOWLUMA_MCP_BIN")
    env = {"SNOWLUMA_MCP_MODE": server_mode, "SNOWLUMA_MCP_LOG": "warn"}
    if server_mode != "docs":
        env |= {"SNOWLUMA_MCP_ENDPOINT": fake.url, "SNOWLUMA_MCP_TOKEN": fake.token}
    return StdioServerParameters(command=BIN, args=[], env=env)


def run(mode: str, fake: Fake, server_mode: str, apps: bool, body: Callable[[Client], Awaitable[T]]) -> T:
    extensions = [advertise(APPS_EXTENSION, {"mimeTypes": [PANEL_MIME]})] if apps else None

    async def main() -> T:
        with anyio.fail_after(TEST_TIMEOUT_S):
            async with Client(
                server_params(fake, server_mode),
                mode=mode,
                read_timeout_seconds=READ_TIMEOUT_S,
                extensions=extensions,
            ) as client:
                return await body(client)

    return anyio.run(main)


ARGS = {"message_type": "group", "target_id": GROUP_ID, "text": "[CQ:at,qq=all] hi", "reply_to": MESSAGE_ID}
INVOKE = {
    "action": "send_group_msg",
    "params": {
        "group_id": GROUP_ID,
        "message": [
            {"type": "reply", "data": {"id": MESSAGE_ID}},
            {"type": "text", "data": {"text": "[CQ:at,qq=all] hi"}},
        ],
    },
}


@mode_param
@pytest.mark.parametrize("server_mode", ["docs", "read", "write"])
def test_preview_in_every_mode(mode: str, server_mode: str, fake: Fake) -> None:
    async def body(client: Client):
        result, structured = await call(client, fake, "preview_message", ARGS)
        assert not result.is_error, structured
        return structured["result"]

    preview = run(mode, fake, server_mode, False, body)
    assert preview["can_send"] is (server_mode == "write"), preview
    assert preview["invoke_action"] == INVOKE, preview["invoke_action"]
    assert preview["text"] == "[CQ:at,qq=all] hi" and preview["reply_to"] == MESSAGE_ID
    assert f"group {GROUP_ID}" in preview["draft"]
    assert ("cannot send" in preview["draft"]) is (server_mode != "write")


@mode_param
def test_drafted_arguments_send_in_write_mode(mode: str, fake: Fake) -> None:
    async def body(client: Client):
        _, preview = await call(client, fake, "preview_message", ARGS)
        result, sent = await call(client, fake, "invoke_action", preview["result"]["invoke_action"])
        assert not result.is_error, sent
        return sent["result"]

    envelope = run(mode, fake, "write", True, body)
    assert envelope["status"] == "ok" and envelope["retcode"] == 0, envelope


@mode_param
@pytest.mark.parametrize(
    ("arguments", "field", "limit"),
    [
        ({"message_type": "group", "target_id": 0, "text": "x"}, "target_id", "9007199254740991"),
        ({"message_type": "private", "target_id": 1, "text": "x", "reply_to": 0}, "reply_to", "2147483647"),
    ],
)
def test_bad_arguments_name_the_field(mode: str, arguments: dict[str, Any], field: str, limit: str, fake: Fake) -> None:
    async def body(client: Client):
        result, structured = await call(client, fake, "preview_message", arguments)
        assert result.is_error, structured
        return structured["diagnostics"]

    diagnostics = run(mode, fake, "docs", False, body)
    assert diagnostics["kind"] == "invalid_arguments", diagnostics
    assert field in diagnostics["message"] and limit in diagnostics["message"], diagnostics


@mode_param
def test_apps_host_gets_tool_meta_and_panel(mode: str, fake: Fake) -> None:
    async def body(client: Client):
        tools = await client.list_tools(cache_mode="bypass")
        resources = await client.list_resources(cache_mode="bypass")
        panel = await client.read_resource(PANEL_URI, cache_mode="bypass")
        return tools, resources, panel

    tools, resources, panel = run(mode, fake, "docs", True, body)
    preview = next(t for t in tools.tools if t.name == "preview_message")
    assert preview.meta is not None and preview.meta["ui"]["resourceUri"] == PANEL_URI, preview.meta
    assert preview.meta["ui/resourceUri"] == PANEL_URI
    listed = next(r for r in resources.resources if str(r.uri) == PANEL_URI)
    assert listed.mime_type == PANEL_MIME
    assert len(panel.contents) == 1
    content = panel.contents[0]
    assert isinstance(content, types.TextResourceContents), content
    assert content.mime_type == PANEL_MIME
    assert 'data-snowluma-panel="preview-message"' in content.text
    for meta in (listed.meta, content.meta):
        assert meta is not None
        csp = meta["ui"]["csp"]
        assert all(csp[key] == [] for key in CSP_KEYS), csp
    if mode == "auto":
        assert (panel.ttl_ms, panel.cache_scope) == (CATALOG_TTL_MS, "public")
        assert (resources.ttl_ms, resources.cache_scope) == (CATALOG_TTL_MS, "private")


@mode_param
def test_plain_client_sees_neither_meta_nor_panel(mode: str, fake: Fake) -> None:
    async def body(client: Client):
        tools = await client.list_tools(cache_mode="bypass")
        resources = await client.list_resources(cache_mode="bypass")
        with pytest.raises(MCPError) as caught:
            await client.read_resource(PANEL_URI, cache_mode="bypass")
        return tools, resources, caught.value

    tools, resources, error = run(mode, fake, "docs", False, body)
    preview = next(t for t in tools.tools if t.name == "preview_message")
    assert not preview.meta or "ui" not in preview.meta, preview.meta
    assert PANEL_URI not in [str(r.uri) for r in resources.resources]
    assert PANEL_URI in error.message and APPS_EXTENSION in error.message, error.message
