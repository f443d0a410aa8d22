"""A tool's progress reaches the socket as `tool_progress` frames, a few a second at most."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx

from albert.composition import build_chat_service
from albert.tools.base import LocalTool, ToolInput, ToolResult
from albert.tools.progress import current_reporter
from miniflare import install_shims
from tests.support.object_sql import object_sql
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall
from tests.support.sockets import RecordingSockets

install_shims()


class _NoArgs(ToolInput):
    pass


async def _busy(_: _NoArgs) -> ToolResult:
    reporter = current_reporter()
    assert reporter is not None
    for done in range(1, 101):  # a hundred reports in a burst, then one after a pause
        reporter(done, 101, f"row {done}")
    await asyncio.sleep(0.4)
    reporter(101, 101, "x" * 500)
    return ToolResult.text("finished")


async def test_progress_frames_name_the_call_and_are_throttled(tmp_path: Path) -> None:
    sockets = RecordingSockets()
    with ScriptedModelServer() as model:
        async with httpx.AsyncClient() as http:
            service = build_chat_service(
                sql=object_sql(tmp_path / "o.sqlite"),
                hub=sockets,
                env={"MODEL_BASE_URL": model.base_url},
                http=http,
                extra_tools=[LocalTool("busy", "works a while", _NoArgs, _busy)],
            )
            thread = service.store.create_thread("t_p", None).id
            model.script(Reply(tool_calls=[ScriptedToolCall(name="busy")]), Reply(text=["Done."]))
            frame = {"type": "chat", "thread_id": thread, "message_id": "m1", "text": "go"}
            await service.handle_frame(sockets, json.dumps(frame))
    kinds = [f["type"] for f in sockets.frames]
    [call] = [f for f in sockets.frames if f["type"] == "tool_call"]
    progress = [f for f in sockets.frames if f["type"] == "tool_progress"]
    assert [(f["progress"], f["total"]) for f in progress] == [(1, 101), (101, 101)]
    assert all(f["call_id"] == call["call_id"] for f in progress)
    assert progress[0]["message"] == "row 1" and len(progress[1]["message"]) == 200
    assert kinds.index("tool_call") < kinds.index("tool_progress") < kinds.index("tool_result")
