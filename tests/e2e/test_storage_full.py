"""An object's storage fills up before or in the middle of a turn, in the real runtime
process: the user gets an error frame (never a `done` for a turn that is not stored), the
socket goes on, restarts tell the truth, and turns work again once there is space.

The runtime caps each object's SQLite file (`ALBERT_LOCAL_OBJECT_MAX_BYTES`, as the
platform limits an object's storage); the test takes the space left under the cap from
another connection on the object's file, as another writer filling a disk would
(tests/support/full_storage.py), while the turn waits on the scripted model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from miniflare.objects import STORAGE_LIMIT_ENV
from tests.support.asgi_server import AsgiServer
from tests.support.chat_client import ChatClient, answer_text
from tests.support.full_storage import OVER_A_PAGE, StorageFiller
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer

MAX_BYTES = 2 << 20
# Larger than a page: storing it needs new pages.
LONG_PIECE = "PEPE's supply is fixed and its holders are many. " * (OVER_A_PAGE // 50 + 1)


def runtime_for(state: Path, model: ScriptedModelServer, platform: AsgiServer) -> RuntimeProcess:
    variables = {
        "ALBERT_MODE": "local",
        "MODEL_BASE_URL": model.base_url,
        "PLATFORM_API_URL": platform.url,
        "MCP_DEFAULT_SERVER_URL": "",  # no MCP server: nothing but the turns writes
    }
    return RuntimeProcess(state, variables, env={STORAGE_LIMIT_ENV: str(MAX_BYTES)})


def shape(thread: dict[str, Any]) -> list[tuple[str, str, str | None, str | None]]:
    return [
        (m["role"], m["status"], m["finish_reason"], (m.get("meta") or {}).get("ended_by"))
        for m in thread["messages"]
    ]


async def ping(client: ChatClient) -> dict[str, Any]:
    await client.send_raw('{"type": "ping"}')
    return await client.next_frame()


async def test_storage_full_mid_answer_in_the_runtime(
    tmp_path: Path, model: ScriptedModelServer, platform: AsgiServer
) -> None:
    # The first piece is stored and sent; the stream then waits, storage fills, and the
    # rest cannot be stored.
    model.script(
        Reply(
            text=[LONG_PIECE, "So ", "it is ", "a memecoin."],
            pause_after_chunks=2,
            pause_seconds=3,
        )
    )
    with runtime_for(tmp_path, model, platform) as runtime:
        async with ChatClient(runtime.url, runtime.ws_url) as client:
            await client.connect()
            thread = await client.new_thread()
            [path] = runtime.object_files("ChatDurableObject")
            filler = StorageFiller(path, MAX_BYTES)

            turn = await client.ask(thread, "What is PEPE?")
            frames = await client.frames_until("text_delta", turn_id=turn)
            filler.fill()
            frames += await client.frames_until("error", turn_id=turn)

            assert "done" not in [f["type"] for f in frames], frames
            error = frames[-1]
            assert (error["code"], error["retryable"]) == ("storage_unavailable", True)
            assert "could not be saved" in error["message"]
            seen = answer_text(frames)
            assert seen == LONG_PIECE
            # Kept: the question. Not kept: an answer (nothing claims one).
            assert shape(await client.thread(thread)) == [("user", "complete", None, None)]
            assert await ping(client) == {"type": "pong"}

        # A restart while still full: the object starts and says no more than it has.
        runtime.restart()
        async with ChatClient(runtime.url, runtime.ws_url, token=client.token) as again:
            await again.connect()
            assert shape(await again.thread(thread)) == [("user", "complete", None, None)]
            assert await ping(again) == {"type": "pong"}

        # Space back and a restart: the turn's end is stored, with the text the user saw.
        filler.free()
        runtime.restart()
        async with ChatClient(runtime.url, runtime.ws_url, token=client.token) as again:
            await again.connect()
            stored = await again.thread(thread)
            assert shape(stored) == [
                ("user", "complete", None, None),
                ("assistant", "incomplete", "error", "storage"),
            ]
            assert stored["messages"][-1]["content"] == seen

            # Turns work again: the same question, answered in full.
            model.script(Reply(text=["PEPE is ", "a memecoin."]))
            frames = await again.turn(thread, "What is PEPE?", message_id=turn)
            assert frames[-1]["finish_reason"] == "stop"
            stored = await again.thread(thread)
            assert stored["messages"][-1]["content"] == "PEPE is a memecoin."


async def test_storage_full_before_a_turn_in_the_runtime(
    tmp_path: Path, model: ScriptedModelServer, platform: AsgiServer
) -> None:
    with runtime_for(tmp_path, model, platform) as runtime:
        async with ChatClient(runtime.url, runtime.ws_url) as client:
            await client.connect()
            thread = await client.new_thread()
            [path] = runtime.object_files("ChatDurableObject")
            filler = StorageFiller(path, MAX_BYTES)
            filler.fill()

            # Pasted text longer than a page: storing it needs new pages.
            question = "Summarise this: " + LONG_PIECE
            asked = len(model.requests)
            turn = await client.ask(thread, question)
            refused = await client.next_frame()
            assert (refused["type"], refused["code"], refused["thread_id"]) == (
                "error",
                "storage_unavailable",
                thread,
            )
            assert refused["retryable"] and refused.get("turn_id") is None
            # The socket goes on; nothing was stored, nothing asked of the model.
            assert await ping(client) == {"type": "pong"}
            assert (await client.thread(thread))["messages"] == []
            assert len(model.requests) == asked

            # Space back: the same message is answered, and kept.
            filler.free()
            model.script(Reply(text=["A summary."]))
            frames = await client.turn(thread, question, message_id=turn)
            assert [f["type"] for f in frames][:2] == ["ack", "start"]
            assert frames[-1]["finish_reason"] == "stop"
            assert shape(await client.thread(thread)) == [
                ("user", "complete", None, None),
                ("assistant", "complete", "stop", None),
            ]
