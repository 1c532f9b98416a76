"""Third-party-client tests: the official python MCP SDK (`mcp` 2.3.0) drives the real
snowluma-mcp binary over stdio, once per protocol generation.

* ``mode="legacy"``: `initialize` handshake (a <= 2025-11-25 revision).
* ``mode="auto"`` (the SDK default): probes `server/discover` and, against this dual-era
  server, adopts 2026-07-28 (stateless, per-request `_meta` envelope).

The server runs in docs mode (no SNOWLUMA_MCP_* variables; the SDK's stdio transport passes
only HOME/LOGNAME/PATH/SHELL/TERM/USER plus what `StdioServerParameters.env` adds).

The SDK hides some wire details: on a legacy session it drops 2026-only result keys (`ttlMs`,
`cacheScope`) before parsing, and its models default them to 0/"private". Presence and absence
of those keys are therefore checked on the wire too: through a recording transport wrapped
around the SDK's own stdio transport, and by a plain subprocess speaking JSON lines.

Binary: $SNOWLUMA_MCP_BIN, default <repo>/target/debug/snowluma-mcp (`cargo build`).
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import mcp_types as types
import pytest
from mcp import Client
from schema_check import assert_matches_output_schema
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

REPO = Path(__file__).resolve().parents[2]
BIN = os.environ.get("SNOWLUMA_MCP_BIN") or str(REPO / "target" / "debug" / "snowluma-mcp")

MODES = ["legacy", "auto"]
MODERN = "2026-07-28"
LATEST_LEGACY = "2025-11-25"

#: Bound on one whole test body (process start, handshake, all requests, shutdown).
TEST_TIMEOUT_S = 60
#: Bound on each single request/response round trip.
READ_TIMEOUT_S = 15

#: One YAML file per action under spec/actions/<category>/ (so adding an action keeps this green).
ACTION_COUNT = sum(
    1 for category in (REPO / "spec" / "actions").iterdir() for f in category.iterdir() if f.suffix == ".yaml"
)  # iterdir, not glob: action files such as .get_word_slices.yaml start with a dot
CATEGORY_COUNT = 11
TOOL_NAMES = {"list_actions", "search_actions", "get_action", "list_categories", "get_runtime_info", "preview_message", "read_more"}
CATALOG_URI = "snowluma://onebot/actions"
ACTION_TEMPLATE = "snowluma://onebot/actions/{name}"
CATALOG_TTL_MS = 300_000

CALLER_TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
CALLER_TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN_ID = "00f067aa0ba902b7"
TRACEPARENT_RE = re.compile(r"^00-(?P<trace>[0-9a-f]{32})-(?P<span>[0-9a-f]{16})-(?P<flags>[0-9a-f]{2})$")

#: Legacy (`initialize`) servers answer an unknown resource with -32002; 2026-07-28 with -32602.
RESOURCE_NOT_FOUND_LEGACY = -32002
INVALID_PARAMS = -32602

T = TypeVar("T")


# --------------------------------------------------------------------------- helpers


def _require_binary() -> None:
    if not (os.path.isfile(BIN) and os.access(BIN, os.X_OK)):
        pytest.fail(
            f"snowluma-mcp binary not found at {BIN}: run `cargo build` in the repository root "
            "or point SNOWLUMA_MCP_BIN at the binary",
            pytrace=False,
        )


def server_params() -> StdioServerParameters:
    _require_binary()
    # No SNOWLUMA_MCP_* variables: docs mode, the default.
    return StdioServerParameters(command=BIN, args=[], cwd=str(REPO))


def run_with_client(mode: str, body: Callable[[Client], Awaitable[T]], **client_kwargs: Any) -> T:
    """Starts the binary, connects an SDK `Client` in `mode`, runs `body`, shuts everything down."""

    async def main() -> T:
        with anyio.fail_after(TEST_TIMEOUT_S):
            async with Client(
                client_kwargs.pop("server", None) or server_params(),
                mode=mode,
                read_timeout_seconds=READ_TIMEOUT_S,
                **client_kwargs,
            ) as client:
                return await body(client)

    return anyio.run(main)


def check_traceparent(value: Any) -> re.Match[str]:
    assert isinstance(value, str), f"traceparent must be a string, got {value!r}"
    match = TRACEPARENT_RE.match(value)
    assert match, f"not a valid W3C traceparent (version 00): {value!r}"
    assert match["trace"] != "0" * 32, f"all-zero trace id in {value!r}"
    assert match["span"] != "0" * 16, f"all-zero span id in {value!r}"
    return match


def check_envelope(result: types.CallToolResult) -> dict[str, Any]:
    """The result shape every tool returns: structuredContent {result, diagnostics}, a text block
    with the same JSON, and `_meta.traceparent`. Returns structuredContent."""
    structured = result.structured_content
    assert isinstance(structured, dict), f"structuredContent missing or not an object: {result!r}"
    assert set(structured) == {"result", "diagnostics"}, f"structuredContent keys: {sorted(structured)}"
    diagnostics = structured["diagnostics"]
    assert isinstance(diagnostics, dict) and diagnostics.get("outcome") in {"success", "failed", "unknown"}, diagnostics
    texts = [block for block in result.content if isinstance(block, types.TextContent)]
    assert texts, f"no text content block: {result.content!r}"
    assert any(json.loads(block.text) == structured for block in texts), (
        f"no text block carries the structuredContent JSON: {[b.text[:200] for b in texts]}"
    )
    assert result.meta is not None and "traceparent" in result.meta, f"result _meta lacks traceparent: {result.meta!r}"
    check_traceparent(result.meta["traceparent"])
    if result.is_error:
        assert structured["result"] is None, f"a tool error must have result null: {structured!r}"
        assert diagnostics["outcome"] == "failed", diagnostics
    return structured


async def call(client: Client, name: str, arguments: dict[str, Any] | None = None, **kwargs: Any):
    """call_tool plus the envelope checks; returns (CallToolResult, structuredContent)."""
    result = await client.call_tool(name, arguments or {}, **kwargs)
    structured = check_envelope(result)
    await assert_matches_output_schema(client, name, structured)
    return result, structured


async def call_ok(client: Client, name: str, arguments: dict[str, Any] | None = None, **kwargs: Any) -> Any:
    result, structured = await call(client, name, arguments, **kwargs)
    assert not result.is_error, f"{name}({arguments}) failed: {structured}"
    assert structured["diagnostics"]["outcome"] == "success", structured
    return structured["result"]


async def call_err(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result, structured = await call(client, name, arguments)
    assert result.is_error, f"{name}({arguments}) should be a tool error (isError), got {structured}"
    return structured["diagnostics"]


def names(entries: list[dict[str, Any]]) -> list[str]:
    return [entry["name"] for entry in entries]


def resource_text(result: types.ReadResourceResult) -> str:
    assert len(result.contents) == 1, result.contents
    content = result.contents[0]
    assert isinstance(content, types.TextResourceContents), content
    assert content.mime_type == "application/json", content.mime_type
    return content.text


mode_param = pytest.mark.parametrize("mode", MODES)


# --------------------------------------------------------------------------- era


@mode_param
def test_negotiated_era(mode: str) -> None:
    async def body(client: Client):
        session = client.session
        version = client.protocol_version
        if mode == "legacy":
            assert session.initialize_result is not None, "legacy mode must complete initialize"
            assert session.discover_result is None
            assert version in HANDSHAKE_PROTOCOL_VERSIONS and version <= LATEST_LEGACY, version
            assert version == LATEST_LEGACY, f"the client offers {LATEST_LEGACY}; server answered {version}"
            assert session.initialize_result.protocol_version == version
        else:
            assert session.discover_result is not None, "auto mode must adopt server/discover"
            assert session.initialize_result is None, "auto mode must not fall back to initialize"
            assert version == MODERN, version
            assert MODERN in session.discover_result.supported_versions
        assert client.server_info is not None and client.server_info.name == "snowluma-mcp", client.server_info
        caps = client.server_capabilities
        assert caps.tools is not None and caps.resources is not None, caps

    run_with_client(mode, body)


# --------------------------------------------------------------------------- tools/list


@mode_param
def test_tools_list(mode: str) -> None:
    async def body(client: Client):
        listing = await client.list_tools(cache_mode="bypass")
        assert listing.next_cursor is None
        got = [tool.name for tool in listing.tools]
        assert len(got) == len(TOOL_NAMES) and set(got) == TOOL_NAMES, got
        for tool in listing.tools:
            assert isinstance(tool.output_schema, dict) and tool.output_schema, f"{tool.name}: no outputSchema"
            assert tool.output_schema.get("type") == "object", f"{tool.name}: {tool.output_schema}"
            assert {"result", "diagnostics"} <= set(tool.output_schema.get("properties", {})), tool.name
            assert tool.annotations is not None, f"{tool.name}: no annotations"
            assert tool.annotations.read_only_hint is True, f"{tool.name}: {tool.annotations}"
            assert tool.input_schema.get("type") == "object", tool.name

    run_with_client(mode, body)


# --------------------------------------------------------------------------- list_actions


@mode_param
def test_list_actions_without_pagination(mode: str) -> None:
    async def body(client: Client):
        result = await call_ok(client, "list_actions")
        assert set(result) == {"count", "actions"}, f"unpaginated keys: {sorted(result)}"
        assert "total" not in result and "next_offset" not in result
        assert result["count"] == ACTION_COUNT
        assert len(result["actions"]) == ACTION_COUNT
        assert len(set(names(result["actions"]))) == ACTION_COUNT

    run_with_client(mode, body)


@mode_param
def test_list_actions_last_page(mode: str) -> None:
    async def body(client: Client):
        everything = await call_ok(client, "list_actions")
        last = ACTION_COUNT - 8
        page = await call_ok(client, "list_actions", {"limit": 10, "offset": last})
        assert page["count"] == 8, page["count"]
        assert page["total"] == ACTION_COUNT, page["total"]
        assert "next_offset" in page and page["next_offset"] is None, page.get("next_offset", "<absent>")
        assert names(page["actions"]) == names(everything["actions"])[last:]

        first = await call_ok(client, "list_actions", {"limit": 10, "offset": 0})
        assert (first["count"], first["total"], first["next_offset"]) == (10, ACTION_COUNT, 10)
        assert names(first["actions"]) == names(everything["actions"])[:10]

    run_with_client(mode, body)


@mode_param
def test_list_actions_bad_pagination(mode: str) -> None:
    async def body(client: Client):
        for limit in (0, 201):
            diagnostics = await call_err(client, "list_actions", {"limit": limit})
            message = diagnostics.get("message", "")
            assert "limit" in message, diagnostics
            assert re.search(r"\b1\b.*\b200\b", message), f"message should name the range 1..200: {message!r}"
            assert diagnostics.get("kind") == "invalid_arguments", diagnostics

        diagnostics = await call_err(client, "list_actions", {"offset": -1})
        assert "offset" in diagnostics.get("message", ""), diagnostics
        assert diagnostics.get("kind") == "invalid_arguments", diagnostics

    run_with_client(mode, body)


# --------------------------------------------------------------------------- search_actions


@mode_param
def test_search_substring_in_catalog_order(mode: str) -> None:
    async def body(client: Client):
        order = {name: i for i, name in enumerate(names((await call_ok(client, "list_actions"))["actions"]))}

        found = await call_ok(client, "search_actions", {"query": "group_ban"})
        got = names(found["actions"])
        assert "set_group_ban" in got, got
        assert found["count"] == len(got)
        assert got == sorted(got, key=order.__getitem__), f"not in catalog order: {got}"

        # A query with many hits: still catalog order, case-insensitive.
        many = names((await call_ok(client, "search_actions", {"query": "GROUP"}))["actions"])
        assert len(many) > 10 and "set_group_ban" in many, many
        assert many == sorted(many, key=order.__getitem__), f"not in catalog order: {many}"

    run_with_client(mode, body)


@mode_param
def test_search_keywords(mode: str) -> None:
    async def body(client: Client):
        for query in ("群 禁言", "mute someone in a group"):
            found = await call_ok(client, "search_actions", {"query": query, "match": "keywords"})
            top = names(found["actions"])[:3]
            assert "set_group_ban" in top, f"{query!r}: top 3 are {top}"

    run_with_client(mode, body)


@mode_param
def test_call_log_messages_only_when_asked(mode: str) -> None:
    """The call's log line as `notifications/message`: a legacy session asks with
    `logging/setLevel`, a 2026-07-28 client stamps `_meta` logLevel on its requests (the SDK's
    `log_level`). Before it asks, nothing arrives; the message names the tool, never the query."""
    received: list[types.LoggingMessageNotificationParams] = []

    async def collect(params: types.LoggingMessageNotificationParams) -> None:
        received.append(params)

    async def body(client: Client):
        if mode == "legacy":
            await call_ok(client, "search_actions", {"query": "禁言", "match": "keywords"})
            assert received == [], received
            await client.set_logging_level("info")
        result, _ = await call(client, "search_actions", {"query": "禁言", "match": "keywords"})
        with anyio.fail_after(READ_TIMEOUT_S):
            while not received:
                await anyio.sleep(0.01)
        assert len(received) == 1, received
        message = received[0]
        assert message.level == "info", message
        assert message.logger == "snowluma-mcp", message
        assert message.data["tool"] == "search_actions", message
        assert message.data["outcome"] == "success", message
        assert message.data["traceparent"] == result.meta["traceparent"], message
        assert "禁言" not in json.dumps(message.data, ensure_ascii=False), message

    extra = {} if mode == "legacy" else {"log_level": "info"}
    run_with_client(mode, body, logging_callback=collect, **extra)


# --------------------------------------------------------------------------- get_action


@mode_param
def test_get_action_by_name(mode: str) -> None:
    async def body(client: Client):
        contract = await call_ok(client, "get_action", {"name": "send_group_msg"})
        assert contract["name"] == "send_group_msg"
        assert isinstance(contract["inputSchema"], dict) and contract["inputSchema"], contract.keys()
        assert isinstance(contract["returnsSchema"], dict) and contract["returnsSchema"], contract.keys()
        assert isinstance(contract["examples"], list) and contract["examples"], contract.keys()
        for example in contract["examples"]:
            assert example["summary"] and isinstance(example["params"], dict), example

    run_with_client(mode, body)


@mode_param
def test_get_action_by_alias(mode: str) -> None:
    async def body(client: Client):
        contract = await call_ok(client, "get_action", {"name": "get_ptt_text"})
        assert contract["name"] == "fetch_ptt_text", contract["name"]
        assert "get_ptt_text" in contract["aliases"], contract["aliases"]
        assert "returnsSchema" in contract and "examples" in contract

    run_with_client(mode, body)


@mode_param
def test_get_action_unknown_name_suggests(mode: str) -> None:
    async def body(client: Client):
        # A near miss: the error suggests the real action.
        diagnostics = await call_err(client, "get_action", {"name": "send_grup_msg"})
        assert diagnostics.get("kind") == "unknown_action", diagnostics
        assert "send_grup_msg" in diagnostics.get("message", ""), diagnostics
        assert "send_group_msg" in diagnostics.get("next_step", ""), f"no suggestion: {diagnostics}"

        # Nothing close: still an error that says where to look.
        diagnostics = await call_err(client, "get_action", {"name": "zzzz_no_such_thing"})
        assert diagnostics.get("kind") == "unknown_action", diagnostics
        assert "search_actions" in diagnostics.get("next_step", ""), diagnostics

    run_with_client(mode, body)


# --------------------------------------------------------------------------- categories, runtime


@mode_param
def test_list_categories(mode: str) -> None:
    async def body(client: Client):
        categories = await call_ok(client, "list_categories")
        assert isinstance(categories, list) and len(categories) == CATEGORY_COUNT, categories
        assert sum(category["count"] for category in categories) == ACTION_COUNT
        assert len({category["id"] for category in categories}) == CATEGORY_COUNT

    run_with_client(mode, body)


@mode_param
def test_get_runtime_info_docs_mode(mode: str) -> None:
    async def body(client: Client):
        info = await call_ok(client, "get_runtime_info")
        assert info["mode"] == "docs"
        assert info["execution_enabled"] is False
        assert info["write_enabled"] is False
        assert info["server_support"] == "unknown"
        assert "transport" in info and info["transport"] is None
        assert info["connection_checked"] is False
        assert info["action_count"] == ACTION_COUNT
        serialized = json.dumps(info).lower()
        assert "token" not in serialized and "endpoint" not in serialized, info

    run_with_client(mode, body)


# --------------------------------------------------------------------------- tracing


@mode_param
def test_trace_context(mode: str) -> None:
    async def body(client: Client):
        # With a caller traceparent: same trace id, new span id — on successes and tool errors.
        for name, arguments in (("list_categories", {}), ("list_actions", {"limit": 0})):
            result, _ = await call(client, name, arguments, meta={"traceparent": CALLER_TRACEPARENT})
            returned = check_traceparent(result.meta["traceparent"])
            assert returned["trace"] == CALLER_TRACE_ID, f"{name}: trace id not kept: {result.meta}"
            assert returned["span"] != CALLER_SPAN_ID, f"{name}: span id reused: {result.meta}"

        # Two calls with the same parent get different spans.
        first, _ = await call(client, "get_runtime_info", meta={"traceparent": CALLER_TRACEPARENT})
        second, _ = await call(client, "get_runtime_info", meta={"traceparent": CALLER_TRACEPARENT})
        assert first.meta["traceparent"] != second.meta["traceparent"]

        # Without one: an independent trace per call.
        third, _ = await call(client, "get_runtime_info")
        fourth, _ = await call(client, "get_runtime_info")
        t3, t4 = check_traceparent(third.meta["traceparent"]), check_traceparent(fourth.meta["traceparent"])
        assert t3["trace"] != CALLER_TRACE_ID and t3["trace"] != t4["trace"]

        # An invalid parent does not reject the call; it starts a new trace.
        fifth, structured = await call(client, "get_runtime_info", meta={"traceparent": "not-a-traceparent"})
        assert not fifth.is_error, structured
        assert check_traceparent(fifth.meta["traceparent"])["trace"] != CALLER_TRACE_ID

    run_with_client(mode, body)


# --------------------------------------------------------------------------- resources


@mode_param
def test_resource_listings(mode: str) -> None:
    async def body(client: Client):
        resources = await client.list_resources(cache_mode="bypass")
        uris = [str(resource.uri) for resource in resources.resources]
        assert CATALOG_URI in uris, uris
        templates = await client.list_resource_templates(cache_mode="bypass")
        uri_templates = [template.uri_template for template in templates.resource_templates]
        assert ACTION_TEMPLATE in uri_templates, uri_templates

    run_with_client(mode, body)


@mode_param
def test_read_catalog_resource(mode: str) -> None:
    async def body(client: Client):
        catalog = json.loads(resource_text(await client.read_resource(CATALOG_URI, cache_mode="bypass")))
        actions = catalog["actions"]
        assert len(actions) == ACTION_COUNT
        missing = [a["name"] for a in actions if "returnsSchema" not in a or not a.get("examples")]
        assert not missing, f"actions without returnsSchema/examples: {missing}"

    run_with_client(mode, body)


@mode_param
def test_read_action_resource_by_alias(mode: str) -> None:
    async def body(client: Client):
        text = resource_text(await client.read_resource("snowluma://onebot/actions/get_record_text", cache_mode="bypass"))
        contract = json.loads(text)
        assert contract["name"] == "fetch_ptt_text", contract.get("name")
        assert "get_record_text" in contract["aliases"]
        assert isinstance(contract["returnsSchema"], dict) and contract["examples"]
        # The same contract get_action serves.
        tool_contract = await call_ok(client, "get_action", {"name": "fetch_ptt_text"})
        assert tool_contract["returnsSchema"] == contract["returnsSchema"]
        assert tool_contract["examples"] == contract["examples"]

    run_with_client(mode, body)


@mode_param
def test_read_unknown_action_resource(mode: str) -> None:
    expected = RESOURCE_NOT_FOUND_LEGACY if mode == "legacy" else INVALID_PARAMS

    async def body(client: Client):
        uri = "snowluma://onebot/actions/no_such_action"
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri, cache_mode="bypass")
        assert caught.value.code == expected, f"{mode}: got {caught.value.code} {caught.value.message!r}"
        assert "no_such_action" in caught.value.message
        # The connection survives the error.
        assert (await client.list_resources(cache_mode="bypass")).resources

    run_with_client(mode, body)


# --------------------------------------------------------------------------- cache hints


@asynccontextmanager
async def recording_stdio(params: StdioServerParameters, received: list[dict[str, Any]]):
    """The SDK's own stdio transport, with every message the server sends recorded as raw JSON."""
    async with stdio_client(params) as (read_stream, write_stream):
        forward_send, forward_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def pump() -> None:
            async with forward_send:
                async for item in read_stream:
                    if isinstance(item, SessionMessage):
                        received.append(item.message.model_dump(by_alias=True, mode="json", exclude_unset=True))
                    await forward_send.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)
            try:
                yield forward_receive, write_stream
            finally:
                tg.cancel_scope.cancel()


def _results_by_id(received: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    return {message["id"]: message["result"] for message in received if "result" in message and "id" in message}


@mode_param
def test_cache_hints(mode: str) -> None:
    """auto (2026-07-28): tools/list 5 min private, templates 5 min public, catalog read 5 min
    public (and resources/list 5 min private in docs mode); tool calls carry none. legacy: no
    ttlMs/cacheScope anywhere. Checked on the SDK's typed results and on the raw frames it got."""
    received: list[dict[str, Any]] = []

    async def body(client: Client):
        tools = await client.list_tools(cache_mode="bypass")
        templates = await client.list_resource_templates(cache_mode="bypass")
        catalog = await client.read_resource(CATALOG_URI, cache_mode="bypass")
        resources = await client.list_resources(cache_mode="bypass")
        await call_ok(client, "get_runtime_info")
        return tools, templates, catalog, resources

    tools, templates, catalog, resources = run_with_client(
        mode, body, server=recording_stdio(server_params(), received)
    )

    raw = [r for r in _results_by_id(received).values()]
    raw_tools = next(r for r in raw if "tools" in r)
    raw_templates = next(r for r in raw if "resourceTemplates" in r)
    raw_catalog = next(r for r in raw if "contents" in r)
    raw_resources = next(r for r in raw if "resources" in r)
    raw_call = next(r for r in raw if "structuredContent" in r)

    if mode == "auto":
        expected = {
            "tools/list": (tools, raw_tools, "private"),
            "resources/templates/list": (templates, raw_templates, "public"),
            "resources/read catalog": (catalog, raw_catalog, "public"),
            "resources/list": (resources, raw_resources, "private"),
        }
        for what, (typed, wire, scope) in expected.items():
            assert (wire.get("ttlMs"), wire.get("cacheScope")) == (CATALOG_TTL_MS, scope), f"{what} on the wire: {wire.get('ttlMs')}, {wire.get('cacheScope')}"
            assert {"ttl_ms", "cache_scope"} <= typed.model_fields_set, f"{what}: SDK did not see the hints"
            assert (typed.ttl_ms, typed.cache_scope) == (CATALOG_TTL_MS, scope), what
            assert wire.get("resultType") == "complete", what
        assert "ttlMs" not in raw_call and "cacheScope" not in raw_call, f"tool call got cache hints: {sorted(raw_call)}"
        assert raw_call.get("resultType") == "complete"
    else:
        for what, wire in {
            "tools/list": raw_tools,
            "resources/templates/list": raw_templates,
            "resources/read catalog": raw_catalog,
            "resources/list": raw_resources,
            "tools/call": raw_call,
        }.items():
            leaked = {"ttlMs", "cacheScope", "resultType"} & set(wire)
            assert not leaked, f"legacy {what} carries 2026-only fields {sorted(leaked)}"
        for typed in (tools, templates, catalog, resources):
            assert not {"ttl_ms", "cache_scope"} & typed.model_fields_set


# --------------------------------------------------------------------------- raw JSON lines


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")}
    return env  # no SNOWLUMA_MCP_*: docs mode


class RawServer:
    """The binary as a subprocess, spoken to in newline-delimited JSON-RPC with no SDK at all."""

    def __init__(self) -> None:
        _require_binary()
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [BIN],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=_clean_env(),
            cwd=str(REPO),
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.pending: dict[Any, dict[str, Any]] = {}
        self.next_id = 1
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout
        for line in self.proc.stdout:
            self.lines.put(line.decode("utf-8"))
        self.lines.put(None)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin
        self.proc.stdin.write((json.dumps(message) + "\n").encode("utf-8"))
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request_id = self.next_id
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        deadline = time.monotonic() + READ_TIMEOUT_S
        while request_id not in self.pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no response to {method} within {READ_TIMEOUT_S}s; stderr:\n{self.stderr_text()}")
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"server closed stdout while waiting for {method}; stderr:\n{self.stderr_text()}")
            frame = json.loads(line)
            if "id" in frame and ("result" in frame or "error" in frame):
                self.pending[frame["id"]] = frame
            # Notifications are not expected here; anything else is ignored.
        return self.pending.pop(request_id)

    def stderr_text(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode("utf-8", "replace")[-4000:]

    def close(self) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        finally:
            self.stderr.close()

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def modern_meta(**extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-json-lines", "version": "1.0.0"},
        **extra,
    }


def result_of(frame: dict[str, Any]) -> dict[str, Any]:
    assert "result" in frame, f"expected a result, got {json.dumps(frame)[:1000]}"
    return frame["result"]


CACHE_KEYS = {"ttlMs", "cacheScope"}


@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_raw_legacy_wire_has_no_modern_fields() -> None:
    with RawServer() as server:
        init = result_of(
            server.request(
                "initialize",
                {"protocolVersion": LATEST_LEGACY, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
            )
        )
        assert init["protocolVersion"] == LATEST_LEGACY
        assert "resultType" not in init and not CACHE_KEYS & set(init), sorted(init)
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

        frames = {
            "tools/list": server.request("tools/list"),
            "resources/list": server.request("resources/list"),
            "resources/templates/list": server.request("resources/templates/list"),
            "resources/read catalog": server.request("resources/read", {"uri": CATALOG_URI}),
            "resources/read action": server.request("resources/read", {"uri": "snowluma://onebot/actions/get_record_text"}),
            "tools/call": server.request(
                "tools/call",
                {"name": "list_categories", "arguments": {}, "_meta": {"traceparent": CALLER_TRACEPARENT}},
            ),
        }
        for what, frame in frames.items():
            result = result_of(frame)
            leaked = (CACHE_KEYS | {"resultType"}) & set(result)
            assert not leaked, f"legacy {what} carries {sorted(leaked)}"

        call_result = result_of(frames["tools/call"])
        returned = check_traceparent(call_result["_meta"]["traceparent"])
        assert returned["trace"] == CALLER_TRACE_ID and returned["span"] != CALLER_SPAN_ID
        assert json.loads(call_result["content"][0]["text"]) == call_result["structuredContent"]

        error = server.request("resources/read", {"uri": "snowluma://onebot/actions/no_such_action"})
        assert "error" in error and error["error"]["code"] == RESOURCE_NOT_FOUND_LEGACY, error


@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_raw_modern_wire_cache_hints() -> None:
    with RawServer() as server:
        discover = result_of(server.request("server/discover", {"_meta": modern_meta()}))
        assert MODERN in discover["supportedVersions"], discover["supportedVersions"]
        assert discover["resultType"] == "complete"

        expected = {
            "tools/list": (("tools/list", {}), "private"),
            "resources/list": (("resources/list", {}), "private"),
            "resources/templates/list": (("resources/templates/list", {}), "public"),
            "resources/read catalog": (("resources/read", {"uri": CATALOG_URI}), "public"),
        }
        for what, ((method, params), scope) in expected.items():
            result = result_of(server.request(method, {**params, "_meta": modern_meta()}))
            assert result.get("resultType") == "complete", f"{what}: {result.get('resultType')}"
            assert (result.get("ttlMs"), result.get("cacheScope")) == (CATALOG_TTL_MS, scope), (
                f"{what}: ttlMs={result.get('ttlMs')} cacheScope={result.get('cacheScope')}"
            )

        call_result = result_of(
            server.request(
                "tools/call",
                {"name": "get_runtime_info", "arguments": {}, "_meta": modern_meta(traceparent=CALLER_TRACEPARENT)},
            )
        )
        assert call_result.get("resultType") == "complete"
        assert not CACHE_KEYS & set(call_result), f"tool call carries cache hints: {sorted(call_result)}"
        returned = check_traceparent(call_result["_meta"]["traceparent"])
        assert returned["trace"] == CALLER_TRACE_ID and returned["span"] != CALLER_SPAN_ID

        error = server.request(
            "resources/read", {"uri": "snowluma://onebot/actions/no_such_action", "_meta": modern_meta()}
        )
        assert "error" in error and error["error"]["code"] == INVALID_PARAMS, error


@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_raw_modern_results_carry_server_info() -> None:
    """Feature doc ("Protocol compatibility"): modern replies carry the protocol's completion and
    server metadata, i.e. resultType plus `_meta["io.modelcontextprotocol/serverInfo"]` (a SHOULD
    for every 2026-07-28 result in the spec)."""
    key = "io.modelcontextprotocol/serverInfo"
    with RawServer() as server:
        missing = []
        for method, params in (
            ("server/discover", {}),
            ("tools/list", {}),
            ("resources/list", {}),
            ("resources/templates/list", {}),
            ("resources/read", {"uri": CATALOG_URI}),
            ("tools/call", {"name": "list_categories", "arguments": {}}),
        ):
            result = result_of(server.request(method, {**params, "_meta": modern_meta()}))
            info = (result.get("_meta") or {}).get(key)
            if not (isinstance(info, dict) and info.get("name") == "snowluma-mcp"):
                missing.append(method)
        assert not missing, f"2026-07-28 results without _meta[{key!r}]: {missing}"
