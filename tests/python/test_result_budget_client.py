"""Results that fit the client, driven by the python MCP SDK (`mcp` 2.3.0) in both protocol
generations (``mode="legacy"`` and ``mode="auto"``, 2026-07-28), over Streamable HTTP and
stdio, against the fake SnowLuma's large group (3,000 members, about 1.4 MB of JSON; a
history request for 500 messages, answered with 200 as SnowLuma caps it):

- unpaged (SNOWLUMA_MCP_RESULT_BUDGET=0) over HTTP the whole member list arrives: it is answered
  as one JSON body, where an SSE event of that size is refused by this SDK (over 1 MiB);
- paged at budgets 8,000 (the HTTP default) and 2,000, every page is valid JSON of the
  documented shape within the budget, and the pages read with `read_more` concatenate to
  exactly the original array;
- a typed action tool (SNOWLUMA_MCP_TOOLSETS) takes the same `budget` and pages the same way.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from schema_check import assert_matches_output_schema
from test_exec_client import (
    MODES,
    READ_TIMEOUT_S,
    Fake,
    check_envelope,
    server_params,
    start_fake,
)
from test_http_client import client as http_client
from test_http_client import http_server, TOKEN

LARGE_GROUP_ID = 20002
LARGE_GROUP_MEMBERS = 3000
#: Paging 3,000 members through a debug build takes a few hundred round trips.
BODY_TIMEOUT_S = 240

mode_param = pytest.mark.parametrize("mode", MODES)

MEMBERS = {"action": "get_group_member_list", "params": {"group_id": LARGE_GROUP_ID}}
#: 500 asked, 200 answered: SnowLuma caps one history request at 200 messages.
HISTORY = {"action": "get_group_msg_history", "params": {"group_id": LARGE_GROUP_ID, "count": 500}}


@pytest.fixture(scope="module")
def fake() -> Any:
    with start_fake() as running:
        yield running


def run(body) -> Any:
    async def main() -> Any:
        with anyio.fail_after(BODY_TIMEOUT_S):
            return await body()

    return anyio.run(main)


def text_chars(result: types.CallToolResult) -> int:
    return sum(len(block.text) for block in result.content if isinstance(block, types.TextContent))


async def call(c: Client, name: str, arguments: dict[str, Any]) -> tuple[types.CallToolResult, dict[str, Any]]:
    result = await c.call_tool(name, arguments)
    structured = check_envelope(result)
    await assert_matches_output_schema(c, name, structured)
    assert not result.is_error, structured
    return result, structured


def at_path(structured: dict[str, Any], path: str) -> list[Any]:
    value: Any = structured
    for key in path.split("."):
        value = value[key]
    assert isinstance(value, list), path
    return value


async def read_all(
    c: Client, arguments: dict[str, Any], budget: int, path: str, tool: str = "query_action"
) -> list[Any]:
    """`tool` (query_action by default), then read_more to the last page; checks every page;
    returns the elements."""
    result, structured = await call(c, tool, {**arguments, "budget": budget})
    joined: list[Any] = []
    pages = 0
    while True:
        pages += 1
        assert text_chars(result) <= budget, (text_chars(result), budget)
        first = result.content[0]
        assert isinstance(first, types.TextContent) and first.text.startswith("Page: elements "), first
        page = structured["diagnostics"]["page"]
        assert page["path"] == path and page["from"] == len(joined), page
        assert structured["result"]["status"] == "ok" and structured["result"]["retcode"] == 0
        elements = at_path(structured, path)
        assert page["returned"] == len(elements)
        joined.extend(elements)
        if page["continuation"] is None:
            assert page["total"] == len(joined)
            break
        result, structured = await call(c, "read_more", {"continuation": page["continuation"], "budget": budget})
    assert pages > 2, "the result spans several pages"
    return joined


@mode_param
def test_http_whole_member_list_arrives_as_plain_json(mode: str, fake: Fake) -> None:
    env = {
        "SNOWLUMA_MCP_HTTP_TOKEN": TOKEN,
        "SNOWLUMA_MCP_MODE": "read",
        "SNOWLUMA_MCP_ENDPOINT": fake.url,
        "SNOWLUMA_MCP_TOKEN": fake.token,
        "SNOWLUMA_MCP_RESULT_BUDGET": "0",
    }
    with http_server(env) as server:

        async def body() -> None:
            async with http_client(server, mode) as c:
                result, structured = await call(c, "query_action", MEMBERS)
                members = structured["result"]["data"]
                assert len(members) == LARGE_GROUP_MEMBERS
                text_bytes = sum(len(b.text.encode()) for b in result.content if isinstance(b, types.TextContent))
                # With structuredContent beside it, the one message is well over 1 MiB on the wire.
                assert text_bytes > 1_000_000, text_bytes

        run(body)


@mode_param
def test_http_pages_concatenate_to_the_original(mode: str, fake: Fake) -> None:
    env = {
        "SNOWLUMA_MCP_HTTP_TOKEN": TOKEN,
        "SNOWLUMA_MCP_MODE": "read",
        "SNOWLUMA_MCP_ENDPOINT": fake.url,
        "SNOWLUMA_MCP_TOKEN": fake.token,
    }
    with http_server(env) as server:

        async def body() -> None:
            # The originals, unpaged over stdio (the default budget there is unlimited).
            async with Client(server_params(fake, "read"), mode=mode, read_timeout_seconds=READ_TIMEOUT_S) as stdio:
                _, members = await call(stdio, "query_action", MEMBERS)
                _, history = await call(stdio, "query_action", HISTORY)
                assert "page" not in members["diagnostics"]
                # stdio pages too when asked to.
                paged = await read_all(stdio, HISTORY, 2000, "result.data.messages")
                assert paged == history["result"]["data"]["messages"]
            async with http_client(server, mode) as c:
                got = await read_all(c, MEMBERS, 8000, "result.data")
                assert got == members["result"]["data"]
                for budget in (8000, 2000):
                    got = await read_all(c, HISTORY, budget, "result.data.messages")
                    assert got == history["result"]["data"]["messages"]

        run(body)


@mode_param
def test_http_typed_tool_pages_like_query_action(mode: str, fake: Fake) -> None:
    env = {
        "SNOWLUMA_MCP_HTTP_TOKEN": TOKEN,
        "SNOWLUMA_MCP_MODE": "read",
        "SNOWLUMA_MCP_ENDPOINT": fake.url,
        "SNOWLUMA_MCP_TOKEN": fake.token,
        "SNOWLUMA_MCP_TOOLSETS": "extended",
    }
    with http_server(env) as server:

        async def body() -> None:
            async with Client(server_params(fake, "read"), mode=mode, read_timeout_seconds=READ_TIMEOUT_S) as stdio:
                _, history = await call(stdio, "query_action", HISTORY)
            messages = history["result"]["data"]["messages"]
            assert len(messages) == 200
            async with http_client(server, mode) as c:
                got = await read_all(c, HISTORY["params"], 2000, "result.data.messages", "get_group_msg_history")
                assert got == messages

        run(body)
