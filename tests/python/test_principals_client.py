"""Two principals over Streamable HTTP with the python MCP SDK (`mcp` 2.3.0) as the client
(issue 37): a tokens file names `alice` and `bob`, each connecting with its own bearer token,
in both protocol generations. Each sees only its own event resources and paged results: the
other's resource URI and `read_more` continuation are answered exactly like made-up ones, so
ids cannot be probed. (The raw-HTTP counterpart is tests/http_principals.rs.)
"""

from __future__ import annotations

import os
import secrets
import tempfile
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from fake_event_socket import FakeEventSocket
from test_exec_client import GROUP_ID, SELF_ID
from test_http_client import call, client, http_server, mode_param, run

ALICE = "py-alice-" + secrets.token_hex(8)
BOB = "py-bob-" + secrets.token_hex(8)


def tokens_file() -> str:
    fd, path = tempfile.mkstemp(prefix="snowluma-tokens-")
    with os.fdopen(fd, "w") as f:
        f.write(f"# two clients\nalice {ALICE}\nbob {BOB}\n")
    os.chmod(path, 0o600)
    return path


def diagnostics(result: dict[str, Any]) -> dict[str, Any]:
    return result["diagnostics"]


def swap(text: str, old: str, new: str) -> str:
    return text.replace(old, new)


@mode_param
def test_two_principals_see_only_their_own_resources_and_pages(mode: str) -> None:
    fake = FakeEventSocket()
    tokens = tokens_file()
    env = {
        "SNOWLUMA_MCP_HTTP_TOKENS_FILE": tokens,
        "SNOWLUMA_MCP_MODE": "read",
        "SNOWLUMA_MCP_ENDPOINT": "http://127.0.0.1:9/",
        "SNOWLUMA_MCP_EVENTS_URL": fake.url,
    }
    try:
        with http_server(env) as server:

            async def body() -> None:
                async with client(server, mode, token=ALICE) as a, client(server, mode, token=BOB) as b:
                    sub = await call(a, "subscribe_events", {"self_id": SELF_ID, "group_ids": [GROUP_ID]})
                    uri = sub["result"]["uri"]
                    made_up = uri[:-2] + ("00" if not uri.endswith("00") else "11")
                    assert uri in [str(r.uri) for r in (await a.list_resources()).resources]
                    assert uri not in [str(r.uri) for r in (await b.list_resources()).resources]

                    # resources/read: the same protocol error as for a made-up URI.
                    errors = []
                    for target in (uri, made_up):
                        with pytest.raises(MCPError) as raised:
                            await b.read_resource(target)
                        errors.append((raised.value.error.code, swap(raised.value.error.message, target, "<uri>")))
                    assert errors[0] == errors[1], errors

                    # read_events: the same tool error (unknown_resource) as for a made-up URI.
                    foreign = await call(b, "read_events", {"uri": uri})
                    unknown = await call(b, "read_events", {"uri": made_up})
                    assert diagnostics(foreign)["kind"] == "unknown_resource", foreign
                    assert swap(diagnostics(foreign)["message"], uri, "<uri>") == swap(
                        diagnostics(unknown)["message"], made_up, "<uri>"
                    )
                    assert (await a.read_resource(uri)).contents

                    # read_more: Alice's continuation reads like a made-up one for Bob.
                    listing = await call(a, "list_actions", {})
                    continuation = diagnostics(listing)["page"]["continuation"]
                    assert continuation, "list_actions is paged over HTTP"
                    theirs = await call(b, "read_more", {"continuation": continuation})
                    invented = await call(b, "read_more", {"continuation": "slp1.made-up"})
                    assert diagnostics(theirs)["kind"] == "invalid_arguments", theirs
                    assert diagnostics(theirs) == diagnostics(invented)
                    own = await call(a, "read_more", {"continuation": continuation})
                    assert diagnostics(own)["outcome"] == "success", own

            run(body)
        log = "".join(server.log)
        assert ALICE not in log and BOB not in log, "a token was logged"
        assert 'principal="alice"' in log and 'principal="bob"' in log
    finally:
        fake.close()
        os.unlink(tokens)
