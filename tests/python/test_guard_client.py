"""Confirmation (SNOWLUMA_MCP_CONFIRM=writes) with a third-party client: the official python MCP
SDK (`mcp` 2.3.0) answers the server's confirmation through its `elicitation_callback` in both
protocol generations (`mode="legacy"`: `elicitation/create`; `mode="auto"`: `input_required`,
retried by the SDK with `inputResponses` + `requestState`).

The python fake records nothing, so what ran is read from the server's audit log
(SNOWLUMA_MCP_AUDIT_LOG): an executed write is a line with outcome success/failed/unknown, a
refusal a line with outcome `refused`.
"""

from __future__ import annotations

import json
from pathlib import Path
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

SEND = {"action": "send_group_msg", "params": {"group_id": GROUP_ID, "message": "今晚八点开会"}}


def run_confirming(mode: str, fake: Fake, log: Path, answers: list[types.ElicitResult] | None):
    """Calls invoke_action(SEND) once with a client that answers prompts with `answers` (no
    elicitation capability at all when None); returns (result, structured, prompts, log lines)."""
    params = server_params(fake, "write")
    params.env = {**(params.env or {}), "SNOWLUMA_MCP_CONFIRM": "writes", "SNOWLUMA_MCP_AUDIT_LOG": str(log)}
    prompts: list[types.ElicitRequestParams] = []

    async def on_elicit(_context, request):
        prompts.append(request)
        assert answers, "more prompts than answers"
        return answers.pop(0)

    async def main():
        with anyio.fail_after(TEST_TIMEOUT_S):
            kwargs: dict[str, Any] = {}
            if answers is not None:
                kwargs["elicitation_callback"] = on_elicit
            async with Client(params, mode=mode, read_timeout_seconds=READ_TIMEOUT_S, **kwargs) as client:
                return await call(client, fake, "invoke_action", SEND)

    result, structured = anyio.run(main)
    lines = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return result, structured, prompts, lines


@mode_param
def test_accepted_confirmation_runs_the_send_once(mode: str, fake: Fake, tmp_path: Path) -> None:
    accept = types.ElicitResult(action="accept", content={"confirm": True})
    result, structured, prompts, lines = run_confirming(mode, fake, tmp_path / "audit.jsonl", [accept])
    assert not result.is_error, structured
    assert structured["diagnostics"]["outcome"] == "success", structured
    assert len(prompts) == 1, prompts
    message = prompts[0].message
    assert "send_group_msg" in message and f"group:{GROUP_ID}" in message and "今晚八点开会" in message, message
    assert list(prompts[0].requested_schema["properties"]) == ["confirm"], prompts[0].requested_schema
    assert [(line["action"], line["outcome"]) for line in lines] == [("send_group_msg", "success")], lines


@mode_param
@pytest.mark.parametrize(
    "answer,kind",
    [
        (types.ElicitResult(action="decline"), "input_declined"),
        (types.ElicitResult(action="cancel"), "input_cancelled"),
        (types.ElicitResult(action="accept", content={"confirm": False}), "input_declined"),
    ],
    ids=["decline", "cancel", "accept-false"],
)
def test_declined_or_cancelled_confirmation_sends_nothing(
    mode: str, fake: Fake, tmp_path: Path, answer: types.ElicitResult, kind: str
) -> None:
    result, structured, prompts, lines = run_confirming(mode, fake, tmp_path / "audit.jsonl", [answer])
    assert result.is_error, structured
    assert structured["diagnostics"]["kind"] == kind, structured
    assert "nothing was sent" in structured["diagnostics"]["message"], structured
    assert len(prompts) == 1, prompts
    assert [(line["outcome"], line.get("kind")) for line in lines] == [("refused", kind)], lines


@mode_param
def test_client_without_elicitation_gets_confirmation_unavailable(mode: str, fake: Fake, tmp_path: Path) -> None:
    result, structured, prompts, lines = run_confirming(mode, fake, tmp_path / "audit.jsonl", None)
    assert result.is_error, structured
    diagnostics = structured["diagnostics"]
    assert diagnostics["kind"] == "confirmation_unavailable", diagnostics
    assert "elicitation" in diagnostics["next_step"] and "SNOWLUMA_MCP_CONFIRM" in diagnostics["next_step"], diagnostics
    assert prompts == []
    assert [(line["outcome"], line.get("kind")) for line in lines] == [("refused", "confirmation_unavailable")], lines
