"""Input completion with a third-party client: the official python MCP SDK (`mcp` 2.3.0) answers
the server's prompts for missing params through its `elicitation_callback`, in both protocol
generations: `mode="legacy"` gets `elicitation/create`, `mode="auto"` (2026-07-28) gets
`input_required` and the SDK retries with `inputResponses` + `requestState` itself.

Shares the fake SnowLuma fixture and helpers with test_exec_client.py.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from test_exec_client import (  # noqa: F401  (fake is a pytest fixture)
    GROUP_ID,
    READ_TIMEOUT_S,
    TEST_TIMEOUT_S,
    Fake,
    call,
    fake,
    server_params,
)

MODES = ["legacy", "auto"]
mode_param = pytest.mark.parametrize("mode", MODES)


def run_answering(mode: str, fake: Fake, answers: list[types.ElicitResult], body):
    """Runs `body(client, prompts)` with a client whose form elicitation answers with `answers`
    in order; `prompts` collects every elicitation the server sent."""
    prompts: list[types.ElicitRequestParams] = []

    async def on_elicit(_context, params):
        prompts.append(params)
        return answers.pop(0)

    async def main():
        with anyio.fail_after(TEST_TIMEOUT_S):
            async with Client(
                server_params(fake, "write"),
                mode=mode,
                read_timeout_seconds=READ_TIMEOUT_S,
                elicitation_callback=on_elicit,
            ) as client:
                return await body(client, prompts)

    return anyio.run(main)


def accept(params: Any) -> types.ElicitResult:
    text = params if isinstance(params, str) else json.dumps(params)
    return types.ElicitResult(action="accept", content={"params_json": text})


@mode_param
def test_accepted_answer_runs_the_action(mode: str, fake: Fake) -> None:
    async def body(client: Client, prompts):
        result, structured = await call(
            client, fake, "invoke_action_with_input", {"action": "send_group_msg", "params": {"group_id": GROUP_ID}}
        )
        return result, structured, prompts

    result, structured, prompts = run_answering(mode, fake, [accept({"message": "Hello"})], body)
    assert not result.is_error, structured
    assert structured["diagnostics"]["outcome"] == "success", structured
    assert structured["result"]["retcode"] == 0, structured
    assert len(prompts) == 1, prompts
    assert "message" in prompts[0].message, prompts[0].message
    assert list(prompts[0].requested_schema["properties"]) == ["params_json"], prompts[0].requested_schema


@mode_param
def test_complete_arguments_get_no_prompt(mode: str, fake: Fake) -> None:
    async def body(client: Client, prompts):
        result, structured = await call(
            client, fake, "query_action_with_input", {"action": "get_group_info", "params": {"group_id": GROUP_ID}}
        )
        return result, structured, prompts

    result, structured, prompts = run_answering(mode, fake, [], body)
    assert not result.is_error, structured
    assert structured["diagnostics"]["outcome"] == "success", structured
    assert prompts == []


REFUSALS = [
    (types.ElicitResult(action="decline"), "input_declined", None),
    (types.ElicitResult(action="cancel"), "input_cancelled", None),
    (accept("{not json"), "input_invalid", None),
    (accept({"group_id": "twenty"}), "input_invalid", "group_id"),
    (accept({"group_id": GROUP_ID, "surprise": 1}), "input_invalid", None),
]


@mode_param
@pytest.mark.parametrize("answer,kind,field", REFUSALS, ids=["decline", "cancel", "json", "type", "extra"])
def test_refused_answers_run_nothing(mode: str, fake: Fake, answer, kind: str, field: str | None) -> None:
    async def body(client: Client, prompts):
        return await call(client, fake, "query_action_with_input", {"action": "get_group_info"})

    result, structured = run_answering(mode, fake, [answer], body)
    assert result.is_error, structured
    diagnostics = structured["diagnostics"]
    assert diagnostics.get("kind") == kind, diagnostics
    assert "nothing was run" in diagnostics.get("next_step", ""), diagnostics
    if field:
        assert diagnostics.get("field") == field, diagnostics
        assert field in diagnostics.get("message", ""), diagnostics


@mode_param
def test_overwrite_attempt_is_refused(mode: str, fake: Fake) -> None:
    async def body(client: Client, prompts):
        return await call(
            client, fake, "invoke_action_with_input", {"action": "send_group_msg", "params": {"group_id": GROUP_ID}}
        )

    result, structured = run_answering(mode, fake, [accept({"message": "x", "group_id": 1})], body)
    assert result.is_error, structured
    assert structured["diagnostics"].get("kind") == "input_invalid", structured
    assert structured["diagnostics"].get("field") == "group_id", structured


@mode_param
def test_client_without_forms_is_told_to_use_the_original_tool(mode: str, fake: Fake) -> None:
    async def main():
        with anyio.fail_after(TEST_TIMEOUT_S):
            async with Client(server_params(fake, "write"), mode=mode, read_timeout_seconds=READ_TIMEOUT_S) as client:
                return await call(client, fake, "invoke_action_with_input", {"action": "send_group_msg", "params": {"group_id": GROUP_ID}})

    result, structured = anyio.run(main)
    assert result.is_error, structured
    assert structured["diagnostics"].get("kind") == "input_unsupported", structured
    assert "invoke_action" in structured["diagnostics"].get("next_step", ""), structured
