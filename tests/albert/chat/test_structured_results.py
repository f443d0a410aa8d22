"""A tool result's structured content: on the tool_result frame, stored with the tool
message (so a reloaded thread draws the same card), bounded, and never sent to a model.

The chat service runs in-process on a real SQLite file (the local runtime's storage).
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
    ChatMessage,
    ChatToolCall,
    ModelEvent,
    ModelRequest,
    StepFinished,
    TextDelta,
    ToolCallRequest,
)
from albert.ai.openai_wire import conversation_payload
from albert.composition import build_chat_service
from albert.protocol.frames import MAX_STRUCTURED_CHARS
from albert.tools.base import LocalTool, ToolInput, ToolResult
from miniflare import install_shims
from tests.support.object_sql import object_sql
from tests.support.sockets import RecordingSockets

install_shims()


class _Query(ToolInput):
    size: int = Field(description="how many holders to list")
    fail: bool = Field(False, description="answer with an error")


async def _holders(args: _Query) -> ToolResult:
    if args.fail:
        return ToolResult.error("no holders on record")
    holders = [{"address": f"0x{i:040x}", "amount": i} for i in range(args.size)]
    return ToolResult.text(f"{args.size} holders", structured={"holders": holders})


class CallingModel:
    """Calls `holders` once with `arguments`, then answers; keeps every request it got."""

    model_name = "calling"

    def __init__(self, arguments: dict[str, Any]) -> None:
        self.arguments = arguments
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        if len(self.requests) == 1:
            call = ChatToolCall(id="call_1", name="holders", arguments=json.dumps(self.arguments))
            yield ToolCallRequest(call=call)
            yield StepFinished(reason="tool_calls")
            return
        yield TextDelta(text="Done.")
        yield StepFinished(reason="stop")


async def _turn(tmp_path: Path, model: CallingModel) -> tuple[Any, list[dict[str, Any]]]:
    sockets = RecordingSockets()
    async with httpx.AsyncClient() as http:
        service = build_chat_service(
            sql=object_sql(tmp_path / "o.sqlite"),
            hub=sockets,
            env={"ALBERT_MODE": "local"},
            http=http,
            model=model,
            extra_tools=[LocalTool("holders", "Lists holders.", _Query, _holders)],
        )
        service.store.create_thread("t1", "Named")
        frame = {"type": "chat", "thread_id": "t1", "message_id": "m1", "text": "Holders?"}
        await service.handle_frame(sockets, json.dumps(frame))
    return service, [f for f in sockets.frames if f["type"] != "mcp_status"]


def _result_frame(frames: list[dict[str, Any]]) -> dict[str, Any]:
    return next(f for f in frames if f["type"] == "tool_result")


def _tool_message(service: Any) -> Any:
    return next(m for m in service.store.history("t1") if m.role == "tool")


async def test_structured_content_crosses_the_wire_and_is_stored(tmp_path: Path) -> None:
    model = CallingModel({"size": 3})
    service, frames = await _turn(tmp_path, model)
    expected = {"holders": [{"address": f"0x{i:040x}", "amount": i} for i in range(3)]}
    assert _result_frame(frames)["structured"] == expected
    assert _tool_message(service).meta["structured"] == expected
    # The model is given the text only: the content stays out of what a gateway is sent.
    tool = next(m for m in model.requests[1].messages if m.role == "tool")
    assert isinstance(tool, ChatMessage) and tool.structured == expected
    sent = json.dumps(conversation_payload(model.requests[1]))
    assert "0x" + "0" * 39 + "2" not in sent and "structured" not in sent


async def test_content_over_the_bound_is_left_out_of_frame_and_store(tmp_path: Path) -> None:
    size = MAX_STRUCTURED_CHARS // 50  # each holder is more than 50 characters of JSON
    service, frames = await _turn(tmp_path, CallingModel({"size": size}))
    assert _result_frame(frames)["structured"] is None
    assert "structured" not in _tool_message(service).meta
    assert _result_frame(frames)["content"] == f"{size} holders"


@pytest.mark.parametrize("arguments", [{"size": 1, "fail": True}, {"size": "many"}])
async def test_a_failed_call_has_none(tmp_path: Path, arguments: dict[str, Any]) -> None:
    service, frames = await _turn(tmp_path, CallingModel(arguments))
    frame = _result_frame(frames)
    assert frame["ok"] is False and frame["structured"] is None
    assert "structured" not in _tool_message(service).meta


def test_the_frame_keeps_its_own_bound() -> None:
    from albert.protocol.frames import ToolResultFrame

    fields = {
        "thread_id": "t1",
        "turn_id": "m1",
        "step": 1,
        "call_id": "c1",
        "name": "holders",
        "ok": True,
        "duration_ms": 1.0,
        "truncated": False,
        "content": "ok",
    }
    small = {"rows": ["x" * 10]}
    assert ToolResultFrame(**fields, structured=small).structured == small
    big = {"rows": ["x" * MAX_STRUCTURED_CHARS]}
    assert ToolResultFrame(**fields, structured=big).structured is None
