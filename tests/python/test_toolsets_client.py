"""Third-party-client tests of typed per-action tools (SNOWLUMA_MCP_TOOLSETS) and the deny list:
the python MCP SDK (`mcp` 2.3.0) lists and calls the typed tools of the real binary against the
fake SnowLuma, in both protocol generations; every result is checked against the advertised
outputSchema. Fixtures and helpers come from test_exec_client.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from test_exec_client import (  # noqa: F401  (fake is a pytest fixture)
    BIN,
    READ_TIMEOUT_S,
    REPO,
    SELF_ID,
    TEST_TIMEOUT_S,
    Fake,
    _require_executable,
    call,
    fake,
    mode_param,
)


def run(mode: str, fake: Fake, server_mode: str, extra: dict[str, str], body):
    _require_executable(BIN, "snowluma-mcp binary", "cargo build", "SNOWLUMA_MCP_BIN")
    params = StdioServerParameters(
        command=BIN,
        args=[],
        cwd=str(REPO),
        env={
            "SNOWLUMA_MCP_MODE": server_mode,
            "SNOWLUMA_MCP_ENDPOINT": fake.url,
            "SNOWLUMA_MCP_TOKEN": fake.token,
            "SNOWLUMA_MCP_LOG": "warn",
            **extra,
        },
    )

    async def main():
        with anyio.fail_after(TEST_TIMEOUT_S):
            async with Client(params, mode=mode, read_timeout_seconds=READ_TIMEOUT_S) as client:
                return await body(client)

    return anyio.run(main)


@mode_param
def test_typed_tools_are_listed_and_called(mode: str, fake: Fake) -> None:
    async def body(client: Client):
        tools = {t.name: t for t in (await client.list_tools(cache_mode="bypass")).tools}
        login = await call(client, fake, "get_login_info", {})
        group = await call(client, fake, "get_group_info", {"group_id": 20001})
        bad = await call(client, fake, "get_group_info", {})
        return tools, login, group, bad

    tools, (login, login_s), (group, group_s), (bad, bad_s) = run(
        mode, fake, "read", {"SNOWLUMA_MCP_TOOLSETS": "info,group_info"}, body
    )
    assert {"get_login_info", "get_status", "get_group_info", "get_group_list"} <= set(tools), sorted(tools)
    assert "send_group_msg" not in tools
    status = tools["get_status"]
    assert status.annotations is not None and status.annotations.read_only_hint is True
    assert "group_id" in tools["get_group_info"].input_schema.get("properties", {})
    assert not login.is_error and login_s["result"]["data"]["user_id"] == SELF_ID, login_s
    assert not group.is_error and group_s["result"]["data"]["group_name"] == "Test Group", group_s
    assert bad.is_error and bad_s["diagnostics"]["kind"] == "invalid_arguments", bad_s


@mode_param
def test_denied_action_is_refused_and_marked(mode: str, fake: Fake) -> None:
    async def body(client: Client):
        names = [t.name for t in (await client.list_tools(cache_mode="bypass")).tools]
        refused = await call(client, fake, "query_action", {"action": "get_status"})
        contract = await call(client, fake, "get_action", {"name": "get_status"})
        return names, refused, contract

    names, (refused, refused_s), (_, contract_s) = run(
        mode,
        fake,
        "read",
        {"SNOWLUMA_MCP_TOOLSETS": "info", "SNOWLUMA_MCP_DENY_ACTIONS": "get_status"},
        body,
    )
    assert "get_status" not in names and "get_login_info" in names, names
    assert refused.is_error, refused_s
    diagnostics: dict[str, Any] = refused_s["diagnostics"]
    assert diagnostics["kind"] == "denied" and "SNOWLUMA_MCP_DENY_ACTIONS" in diagnostics["message"], diagnostics
    assert contract_s["result"]["denied"] is True, contract_s
