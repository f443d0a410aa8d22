"""read_tool_result is kept per thread across turns, and still reads only its own thread.

The chat service runs in-process on a real SQLite file, against the scripted model server
over real HTTP/SSE; the socket is the port's simplest adapter, a list of frames.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from albert.chat.driver import KEPT_THREAD_TOOLS
from albert.composition import build_chat_service
from albert.tools.base import LocalTool, ToolInput, ToolResult
from miniflare import install_shims
from tests.support.object_sql import object_sql
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall
from tests.support.sockets import RecordingSockets

install_shims()

BIG = "".join(f"{i:07d}," for i in range(20_000))  # 160,000 characters: cut for the model


class _NoArgs(ToolInput):
    pass


async def _dump(_: _NoArgs) -> ToolResult:
    return ToolResult.text(BIG)


def _read(call_id: str, offset: int) -> Reply:
    return Reply(
        tool_calls=[
            ScriptedToolCall(
                name="read_tool_result", arguments={"call_id": call_id, "offset": offset}
            )
        ]
    )


async def _turn(service: Any, sockets: RecordingSockets, thread: str, message: str) -> None:
    frame = {"type": "chat", "thread_id": thread, "message_id": message, "text": "go"}
    await service.handle_frame(sockets, json.dumps(frame))
    assert sockets.frames[-1]["type"] == "done"


async def test_each_thread_reads_only_its_own_outputs_turn_after_turn(tmp_path: Path) -> None:
    sockets = RecordingSockets()
    with ScriptedModelServer() as model:
        async with httpx.AsyncClient() as http:
            service = build_chat_service(
                sql=object_sql(tmp_path / "o.sqlite"),
                hub=sockets,
                env={"MODEL_BASE_URL": model.base_url, "MODEL_CONTEXT_TOKENS": "100000"},
                http=http,
                extra_tools=[LocalTool("big_dump", "a large report", _NoArgs, _dump)],
            )
            first = service.store.create_thread("t_first", None).id
            others = [
                service.store.create_thread(f"t_other{i}", None).id
                for i in range(KEPT_THREAD_TOOLS + 1)
            ]
            model.script(
                Reply(tool_calls=[ScriptedToolCall(name="big_dump")]),
                _read("call_1_0", 100_000),
                Reply(text=["first"]),
            )
            await _turn(service, sockets, first, "m1")
            assert "characters 100,000–" in model.requests[2]["messages"][-1]["content"]

            # Another thread's turn cannot read the first thread's output by its call id,
            # and enough other threads push the first one's tool out of those kept.
            for index, other in enumerate(others):
                model.script(_read("call_1_0", 0), Reply(text=["other"]))
                await _turn(service, sockets, other, f"o{index}")
                refused = model.requests[-1]["messages"][-1]["content"]
                assert "no stored tool output with call_id 'call_1_0'" in refused

            # Back in the first thread (its tool built again): its output is readable.
            model.script(_read("call_1_0", 150_000), Reply(text=["again"]))
            await _turn(service, sockets, first, "m2")
            page = model.requests[-1]["messages"][-1]["content"]
            assert page.endswith(BIG[150_000:] + "</untrusted>") and "this is the end" in page

            # And twice in a row in the same thread (its tool kept): still its own output.
            model.script(_read("call_1_0", 159_000), Reply(text=["and again"]))
            await _turn(service, sockets, first, "m3")
            page = model.requests[-1]["messages"][-1]["content"]
            assert page.endswith(BIG[159_000:] + "</untrusted>")
