"""What the turn recorder stores for tool steps and for the turn's ending.

The chat service runs in-process on a real SQLite file (the local runtime's storage); the
model is an in-process client that calls a tool for a set number of steps, then answers.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import Field

from albert.ai.model import (
    ChatToolCall,
    ModelEvent,
    ModelRequest,
    StepFinished,
    TextDelta,
    ToolCallRequest,
)
from albert.chat.service import ChatService
from albert.composition import build_chat_service
from albert.tools.base import LocalTool, ToolInput, ToolResult
from miniflare import install_shims
from tests.support.object_sql import object_sql
from tests.support.sockets import RecordingSockets

install_shims()


class _Query(ToolInput):
    symbol: str = Field(description="token symbol")


async def _lookup(args: _Query) -> ToolResult:
    return ToolResult.text(f"{args.symbol}: 42 holders")


class ToolingModel:
    """Calls `lookup` (with `arguments`, as the model wrote them) for `tool_steps` steps,
    then answers; a call made when tools are off is made anyway (and not run)."""

    model_name = "tooling"

    def __init__(self, tool_steps: int, arguments: str = '{"symbol": "ETH"}') -> None:
        self.tool_steps = tool_steps
        self.arguments = arguments
        self.step = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.step += 1
        if self.step <= self.tool_steps:
            call = ChatToolCall(id=f"call_{self.step}", name="lookup", arguments=self.arguments)
            yield TextDelta(text=f"Step {self.step}.")
            yield ToolCallRequest(call=call)
            yield StepFinished(reason="tool_calls")
            return
        yield TextDelta(text="ETH has 42 holders.")
        yield StepFinished(reason="stop")


async def _turn(
    tmp_path: Path, model: ToolingModel, **env: str
) -> tuple[ChatService, list[dict[str, Any]]]:
    sockets = RecordingSockets()
    async with httpx.AsyncClient() as http:
        service = build_chat_service(
            sql=object_sql(tmp_path / "o.sqlite"),
            hub=sockets,
            env={"ALBERT_MODE": "local", **env},
            http=http,
            model=model,
            extra_tools=[LocalTool("lookup", "Looks a token up.", _Query, _lookup)],
        )
        service.store.create_thread("t1", "Named")
        frame = {"type": "chat", "thread_id": "t1", "message_id": "m1", "text": "ETH holders?"}
        await service.handle_frame(sockets, json.dumps(frame))
    return service, [f for f in sockets.frames if f["type"] != "mcp_status"]


@pytest.mark.parametrize(
    ("arguments", "stored"),
    [
        ('{"symbol": "ETH"}', {"symbol": "ETH"}),
        ('{"symbol": "ETH"', {}),  # not JSON: kept as nothing, the call still fails clearly
        ('"ETH"', "ETH"),
    ],
)
async def test_a_tool_result_keeps_the_call_arguments_in_its_meta(
    tmp_path: Path, arguments: str, stored: Any
) -> None:
    service, frames = await _turn(tmp_path, ToolingModel(1, arguments))
    assert frames[-1]["type"] == "done"
    tool = next(m for m in service.store.history("t1") if m.role == "tool")
    assert tool.meta["arguments"] == stored
    assert tool.meta["source"] == "local"


@pytest.mark.parametrize("tool_steps", [1, 2])
async def test_the_ending_leaves_every_step_s_tool_calls_stored(
    tmp_path: Path, tool_steps: int
) -> None:
    # The outcome is written onto the turn's last message: the steps that called tools
    # before it keep their calls, and the last one (an answer) has none to lose.
    service, frames = await _turn(tmp_path, ToolingModel(tool_steps))
    assert frames[-1]["type"] == "done" and frames[-1]["finish_reason"] == "stop"
    answers = [m for m in service.store.history("t1") if m.role == "assistant"]
    assert [[c.id for c in m.tool_calls] for m in answers] == [
        *([f"call_{s}"] for s in range(1, tool_steps + 1)),
        [],
    ]
    assert answers[-1].meta["steps"] == tool_steps + 1
    assert [m.finish_reason for m in answers] == ["tool_calls"] * tool_steps + ["stop"]


async def test_a_turn_stopped_by_the_step_cap_keeps_its_steps_tool_calls(
    tmp_path: Path,
) -> None:
    # Every step asks for a tool; the last allowed step has tools off, and its call is
    # not run, so the ending is written onto a message that never had calls.
    service, frames = await _turn(tmp_path, ToolingModel(10), MAX_MODEL_STEPS="3")
    assert frames[-1]["finish_reason"] == "step_limit"
    answers = [m for m in service.store.history("t1") if m.role == "assistant"]
    assert [[c.id for c in m.tool_calls] for m in answers] == [["call_1"], ["call_2"], []]
    assert answers[-1].status == "complete" and answers[-1].finish_reason == "step_limit"
    wire = json.loads(service.store.messages_page_items("t1", 10)[0].join((b"[", b"]")).decode())
    assert [[c["id"] for c in m["tool_calls"]] for m in wire if m["role"] == "assistant"] == [
        ["call_1"],
        ["call_2"],
        [],
    ]
