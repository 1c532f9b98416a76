"""Live events through the python MCP SDK (`mcp` 2.3.0) in both generations, against a fake
SnowLuma WebSocket adapter: subscribe_events -> update notification (legacy
resources/subscribe, modern Client.listen) -> resources/read -> read_events -> release."""

from __future__ import annotations

import json
import warnings
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from fake_event_socket import FakeEventSocket, group_message
from test_mcp_client import BIN, READ_TIMEOUT_S, REPO, TEST_TIMEOUT_S, _require_binary, call_ok, resource_text

TOKEN = "python-events-token"


def params(url: str) -> StdioServerParameters:
    _require_binary()
    env = {
        "SNOWLUMA_MCP_MODE": "read",
        "SNOWLUMA_MCP_ENDPOINT": "http://127.0.0.1:9/",
        "SNOWLUMA_MCP_TOKEN": TOKEN,
        "SNOWLUMA_MCP_EVENTS_URL": url,
    }
    return StdioServerParameters(command=BIN, args=[], cwd=str(REPO), env=env)


def page_of(result: types.ReadResourceResult) -> dict[str, Any]:
    return json.loads(resource_text(result))


def test_legacy_subscribe_notify_read_and_unsubscribe() -> None:
    fake = FakeEventSocket()
    updates: list[str] = []
    got_update = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.append(message.params.uri)
            got_update.set()

    async def main() -> None:
        with anyio.fail_after(TEST_TIMEOUT_S):
            async with Client(params(fake.url), mode="legacy", read_timeout_seconds=READ_TIMEOUT_S, message_handler=on_message) as client:
                tools = {tool.name for tool in (await client.list_tools()).tools}
                assert {"subscribe_events", "read_events", "unsubscribe_events"} <= tools
                assert fake.authorizations == [], "listing never connects"
                sub = await call_ok(client, "subscribe_events", {"self_id": 10001, "group_ids": [20001]})
                uri = sub["uri"]
                assert fake.authorizations == [f"Bearer {TOKEN}"]
                listed = [str(r.uri) for r in (await client.list_resources()).resources]
                assert uri in listed
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    await client.subscribe_resource(uri)
                fake.push(group_message(10001, 20001, 30001, "hello"))
                await got_update.wait()
                assert updates[0] == uri
                page = page_of(await client.read_resource(uri))
                assert [e["event"]["raw_message"] for e in page["entries"]] == ["hello"]
                assert page["gap"] is False and page["status"]["state"] == "connected"
                waited = await call_ok(client, "read_events", {"uri": uri, "after": page["next_cursor"], "wait_ms": 0})
                assert waited["entries"] == []
                fake.push(group_message(10001, 20001, 30001, "second"))
                later = await call_ok(client, "read_events", {"uri": uri, "after": page["next_cursor"], "wait_ms": 20000})
                assert later["entries"][0]["event"]["raw_message"] == "second"
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    await client.unsubscribe_resource(uri)
                with pytest.raises(MCPError):
                    await client.read_resource(uri)

    try:
        anyio.run(main)
        assert fake.wait_closed() == 0, "releasing the last resource closes the socket"
    finally:
        fake.close()


def test_modern_listen_read_and_unsubscribe_tool() -> None:
    fake = FakeEventSocket()

    async def main() -> None:
        with anyio.fail_after(TEST_TIMEOUT_S):
            async with Client(params(fake.url), mode="auto", read_timeout_seconds=READ_TIMEOUT_S) as client:
                sub = await call_ok(client, "subscribe_events", {"self_id": 10001, "types": ["message"]})
                uri = sub["uri"]
                async with client.listen(resource_subscriptions=[uri]) as stream:
                    fake.push(group_message(10001, 20001, 30001, "modern"))
                    async for event in stream:
                        assert getattr(event, "uri", None) == uri
                        break
                page = page_of(await client.read_resource(uri))
                assert page["entries"][0]["event"]["raw_message"] == "modern"
                released = await call_ok(client, "unsubscribe_events", {"uri": uri})
                assert released == {"released": uri}

    try:
        anyio.run(main)
        assert fake.wait_closed() == 0
    finally:
        fake.close()
