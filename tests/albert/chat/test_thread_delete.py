"""Deleting a thread whose turn is running: the turn is cancelled first, its `done` sent.

Before, the delete answered 204 while the turn ran on and failed on a foreign key at its
next write, and the socket never got `done` or `error`.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx

from albert.composition import build_chat_service
from albert.web import HttpRequest
from miniflare import install_shims
from tests.support.callers import anonymous
from tests.support.object_sql import object_sql
from tests.support.scripted_model import Reply, ScriptedModelServer
from tests.support.sockets import RecordingSockets

install_shims()


async def test_deleting_a_thread_cancels_its_running_turn_first(tmp_path: Path) -> None:
    sockets = RecordingSockets()
    with ScriptedModelServer() as model:
        async with httpx.AsyncClient() as http:
            service = build_chat_service(
                sql=object_sql(tmp_path / "o.sqlite"),
                hub=sockets,
                env={"MODEL_BASE_URL": model.base_url},
                http=http,
            )
            thread = service.store.create_thread("t_del", None).id
            model.script(
                Reply(text=["Half ", "an ", "answer"], pause_after_chunks=1, pause_seconds=20)
            )
            frame = {"type": "chat", "thread_id": thread, "message_id": "m1", "text": "go"}
            turn = asyncio.ensure_future(service.handle_frame(sockets, json.dumps(frame)))
            for _ in range(200):
                if any(f["type"] == "text_delta" for f in sockets.frames):
                    break
                await asyncio.sleep(0.025)
            deleted = await service.handle_http(
                HttpRequest(method="DELETE", path=f"/api/threads/{thread}"), anonymous()
            )
            assert deleted.status == 204
            # The turn ended before the answer: cancelled, with its done frame.
            done = [f for f in sockets.frames if f["type"] == "done"]
            assert [(f["thread_id"], f["finish_reason"]) for f in done] == [(thread, "cancelled")]
            assert not [f for f in sockets.frames if f["type"] == "error"], sockets.frames
            await asyncio.wait_for(turn, 5)
            gone = await service.handle_http(
                HttpRequest(method="GET", path=f"/api/threads/{thread}"), anonymous()
            )
            assert gone.status == 404
            listed = await service.handle_http(
                HttpRequest(method="GET", path="/api/threads"), anonymous()
            )
            assert json.loads(listed.body)["threads"] == []
