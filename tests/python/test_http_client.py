"""The python MCP SDK (`mcp` 2.3.0) as a remote client of the Streamable HTTP transport
(`--transport http`), in both protocol generations (``mode="legacy"``: sessions with
Mcp-Session-Id; ``mode="auto"``: 2026-07-28, one POST per request): the docs surface, an
execution call with progress against the fake SnowLuma, an input round, an event
subscription; the bearer-token matrix, Host/Origin (DNS rebinding) refusals, the session limit,
idle expiry, and two sessions whose event resources stay apart. Every tools/call result is
checked against the advertised outputSchema.

The server listens on 127.0.0.1:0; its port is read from its start-up log line.
"""

from __future__ import annotations

import os
import re
import secrets
import select
import subprocess
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from fake_event_socket import FakeEventSocket, group_message
from test_exec_client import BIN, FAKE_BIN, GROUP_ID, READ_TIMEOUT_S, REPO, TEST_TIMEOUT_S, SELF_ID, check_envelope
from schema_check import assert_matches_output_schema

MODES = ["legacy", "auto"]
mode_param = pytest.mark.parametrize("mode", MODES)

TOKEN = "py-http-" + secrets.token_hex(10)
FILE_SIZE = 3 * 1024 * 1024
FILE_PATH = "/tmp/snowluma-stream/download/py.bin"
START_TIMEOUT_S = 20


class Server:
    def __init__(self, proc: subprocess.Popen, url: str, port: int) -> None:
        self.proc = proc
        self.url = url
        self.port = port
        self.log: list[str] = []


@contextmanager
def http_server(env: dict[str, str], args: list[str] | None = None) -> Iterator[Server]:
    """snowluma-mcp --transport http on a free loopback port; stderr kept in `server.log`."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("SNOWLUMA_MCP_")}
    full_env.update({"SNOWLUMA_MCP_LOG": "info,rmcp=warn", **env})
    proc = subprocess.Popen(
        [BIN, "--transport", "http", "--listen", "127.0.0.1:0", *(args or [])],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=full_env,
        cwd=str(REPO),
    )
    try:
        assert proc.stderr is not None
        # One reader thread: select() on a buffered pipe misses lines already read ahead.
        server = Server(proc, "", 0)
        found = threading.Event()

        def drain() -> None:
            for raw in proc.stderr:  # type: ignore[union-attr]
                line = raw.decode("utf-8", "replace")
                server.log.append(line)
                match = re.search(r"serving MCP over HTTP at http://127\.0\.0\.1:(\d+)/mcp", line)
                if match and not found.is_set():
                    server.port = int(match[1])
                    server.url = f"http://127.0.0.1:{server.port}/mcp"
                    found.set()

        threading.Thread(target=drain, daemon=True).start()
        assert found.wait(START_TIMEOUT_S), f"the server did not announce its port: {server.log}"
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture(scope="module")
def fake_url() -> Iterator[str]:
    """The fake SnowLuma (no token) with one generated file to download."""
    proc = subprocess.Popen(
        [FAKE_BIN, "--port", "0", "--generated", f"py.bin:{FILE_SIZE}:7"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if not k.startswith("SNOWLUMA_MCP_")},
        cwd=str(REPO),
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], START_TIMEOUT_S)
        line = proc.stdout.readline().decode().strip() if ready else ""
        match = re.fullmatch(r"FAKE_SNOWLUMA_URL=(http://127\.0\.0\.1:\d+/)", line)
        assert match, line
        yield match[1]
    finally:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=10)


def client(server: Server, mode: str, token: str | None = TOKEN, **kwargs: Any) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = streamable_http_client(server.url, http_client=create_mcp_http_client(headers=headers))
    return Client(transport, mode=mode, read_timeout_seconds=READ_TIMEOUT_S, **kwargs)


async def call(c: Client, name: str, arguments: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    result = await c.call_tool(name, arguments, **kwargs)
    structured = check_envelope(result)
    await assert_matches_output_schema(c, name, structured)
    return structured


def run(body) -> Any:
    async def main() -> Any:
        with anyio.fail_after(TEST_TIMEOUT_S):
            return await body()

    return anyio.run(main)


def assert_no_token(server: Server) -> None:
    log = "".join(server.log)
    assert TOKEN not in log, "the HTTP token was logged"


@mode_param
def test_docs_execution_progress_and_input_round(mode: str, fake_url: str) -> None:
    downloads = tempfile.mkdtemp(prefix="snowluma-http-py-")
    env = {
        "SNOWLUMA_MCP_HTTP_TOKEN": TOKEN,
        "SNOWLUMA_MCP_MODE": "write",
        "SNOWLUMA_MCP_ENDPOINT": fake_url,
        "SNOWLUMA_MCP_DOWNLOAD_DIR": downloads,
    }
    prompts: list[Any] = []

    async def on_elicit(_context, params):
        prompts.append(params)
        return types.ElicitResult(action="accept", content={"params_json": '{"message": "hi over http"}'})

    with http_server(env) as server:

        async def body() -> None:
            async with client(server, mode, elicitation_callback=on_elicit) as c:
                names = {t.name for t in (await c.list_tools()).tools}
                assert {"search_actions", "get_action", "query_action", "invoke_action"} <= names
                found = await call(c, "search_actions", {"query": "mute member", "match": "keywords"})
                assert found["diagnostics"]["outcome"] == "success"
                contract = await call(c, "get_action", {"name": "get_login_info"})
                assert contract["diagnostics"]["outcome"] == "success"
                login = await call(c, "query_action", {"action": "get_login_info"})
                assert login["result"]["data"]["user_id"] == SELF_ID, login
                progress: list[tuple[float, float | None]] = []

                async def on_progress(value: float, total: float | None, _message: str | None) -> None:
                    progress.append((value, total))

                got = await call(
                    c,
                    "invoke_action",
                    {"action": "download_file_stream", "params": {"file": FILE_PATH, "chunk_size": 65536}},
                    progress_callback=on_progress,
                )
                assert got["result"]["size"] == FILE_SIZE, got
                assert progress, "no progress notification arrived over HTTP"
                assert progress[-1] == (FILE_SIZE, FILE_SIZE), progress
                sent = await call(
                    c, "invoke_action_with_input", {"action": "send_group_msg", "params": {"group_id": GROUP_ID}}
                )
                assert sent["diagnostics"]["outcome"] == "success", sent
                assert len(prompts) == 1

        run(body)
        assert_no_token(server)


@mode_param
def test_event_subscription(mode: str) -> None:
    fake = FakeEventSocket()
    env = {
        "SNOWLUMA_MCP_HTTP_TOKEN": TOKEN,
        "SNOWLUMA_MCP_MODE": "read",
        "SNOWLUMA_MCP_ENDPOINT": "http://127.0.0.1:9/",
        "SNOWLUMA_MCP_EVENTS_URL": fake.url,
    }
    updates: list[str] = []
    got_update = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))
            got_update.set()

    try:
        with http_server(env) as server:

            async def body() -> None:
                async with client(server, mode, message_handler=on_message) as c:
                    sub = await call(c, "subscribe_events", {"self_id": SELF_ID, "group_ids": [GROUP_ID]})
                    uri = sub["result"]["uri"]
                    if mode == "legacy":
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            await c.subscribe_resource(uri)
                        fake.push(group_message(SELF_ID, GROUP_ID, 30001, "over http"))
                        await got_update.wait()
                        assert updates[0] == uri
                    else:
                        async with c.listen(resource_subscriptions=[uri]) as stream:
                            fake.push(group_message(SELF_ID, GROUP_ID, 30001, "over http"))
                            async for event in stream:
                                assert getattr(event, "uri", None) == uri
                                break
                    read = await call(c, "read_events", {"uri": uri})
                    assert [e["event"]["raw_message"] for e in read["result"]["entries"]] == ["over http"]
                    released = await call(c, "unsubscribe_events", {"uri": uri})
                    assert released["result"] == {"released": uri}

            run(body)
    finally:
        fake.close()


def test_auth_matrix() -> None:
    with http_server({"SNOWLUMA_MCP_HTTP_TOKEN": TOKEN}) as server:
        for mode in MODES:
            for token in (None, "wrong-" + secrets.token_hex(6)):

                async def refused() -> None:
                    async with client(server, mode, token=token) as c:
                        await c.list_tools()

                with pytest.raises(Exception):
                    run(refused)

            async def accepted() -> None:
                async with client(server, mode) as c:
                    assert (await c.list_tools()).tools

            run(accepted)
        raw = httpx2.post(server.url, json={}, headers={"Accept": "application/json, text/event-stream"})
        assert raw.status_code == 401 and raw.headers["www-authenticate"] == "Bearer"
        assert_no_token(server)


def test_rebinding_host_and_origin_are_refused() -> None:
    with http_server({"SNOWLUMA_MCP_HTTP_TOKEN": TOKEN}) as server:
        base = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {TOKEN}"}
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "py", "version": "1"}}}
        for extra in ({"Host": "attacker.example"}, {"Origin": "http://attacker.example"},
                      {"Host": "attacker.example", "X-Forwarded-Host": "localhost"}):
            reply = httpx2.post(server.url, json=body, headers={**base, **extra})
            assert reply.status_code == 403, (extra, reply.text)
            assert reply.json()["error"]["data"]["rule"] in {"host", "origin"}
        ok = httpx2.post(server.url, json=body, headers={**base, "Origin": f"http://127.0.0.1:{server.port}"})
        assert ok.status_code == 200, ok.text


def test_session_limit_and_idle_expiry() -> None:
    args = ["--http-max-sessions", "1", "--http-idle-secs", "1"]
    with http_server({"SNOWLUMA_MCP_HTTP_TOKEN": TOKEN}, args) as server:

        async def body() -> None:
            async with client(server, "legacy") as first:
                await first.list_tools()

                async def second() -> None:
                    async with client(server, "legacy") as c:
                        await c.list_tools()

                with pytest.raises(Exception):
                    await second()
                # Modern requests need no session slot.
                async with client(server, "auto") as modern:
                    assert (await modern.list_tools()).tools
                await anyio.sleep(2.5)
                with pytest.raises(MCPError):
                    await first.list_tools(cache_mode="bypass")
            # The expired session freed its slot.
            async with client(server, "legacy") as again:
                assert (await again.list_tools()).tools

        run(body)


def test_two_sessions_are_isolated() -> None:
    fake = FakeEventSocket()
    env = {
        "SNOWLUMA_MCP_HTTP_TOKEN": TOKEN,
        "SNOWLUMA_MCP_MODE": "read",
        "SNOWLUMA_MCP_ENDPOINT": "http://127.0.0.1:9/",
        "SNOWLUMA_MCP_EVENTS_URL": fake.url,
    }
    try:
        with http_server(env) as server:

            async def body() -> None:
                async with client(server, "legacy") as a, client(server, "legacy") as b:
                    sub = await call(a, "subscribe_events", {"self_id": SELF_ID, "group_ids": [GROUP_ID]})
                    uri = sub["result"]["uri"]
                    assert uri in [str(r.uri) for r in (await a.list_resources()).resources]
                    assert uri not in [str(r.uri) for r in (await b.list_resources()).resources]
                    with pytest.raises(MCPError):
                        await b.read_resource(uri)
                    other = await b.call_tool("read_events", {"uri": uri})
                    assert other.is_error
                    assert (await a.read_resource(uri)).contents

            run(body)
    finally:
        fake.close()
