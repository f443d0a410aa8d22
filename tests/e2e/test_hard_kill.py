"""`kill -9` of the runtime in the middle of a streamed turn: nothing stored is lost, the
turn is ended at restart with what the user saw, and a resuming browser is told so."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.support.asgi_server import AsgiServer
from tests.support.chat_client import ChatClient, answer_text
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall


async def frames_until_quiet(client: ChatClient, quiet: float = 1.0) -> list[dict[str, Any]]:
    """Frames until none came for `quiet` seconds (the scripted stream is paused)."""
    frames: list[dict[str, Any]] = []
    for _ in range(1000):
        try:
            frames.append(await client.next_frame(timeout=quiet))
        except TimeoutError:
            return frames
    raise AssertionError("the stream never paused")


async def test_kill_9_mid_answer_keeps_everything_and_ends_the_turn_at_restart(
    tmp_path: Path, model: ScriptedModelServer, platform: AsgiServer
) -> None:
    model.script(
        Reply(tool_calls=[ScriptedToolCall(name="analyze_token", arguments={"symbol": "PEPE"})]),
        Reply(
            text=["PEPE ", "is ", "a ", "memecoin ", "that ", "never ", "gets ", "here."],
            pause_after_chunks=4,
            pause_seconds=120,
        ),
    )
    variables = {
        "ALBERT_MODE": "local",
        "MODEL_BASE_URL": model.base_url,
        "PLATFORM_API_URL": platform.url,
    }
    with RuntimeProcess(tmp_path, variables) as runtime:
        async with ChatClient(runtime.url, runtime.ws_url) as client:
            await client.connect()
            thread = await client.new_thread()
            turn = await client.ask(thread, "What is PEPE?")
            frames = await client.frames_until("tool_result", turn_id=turn)
            frames += await frames_until_quiet(client)
            seen = answer_text(frames)
            assert seen.startswith("PEPE ") and "here." not in seen, frames
            last_seq = max(f.get("seq", 0) for f in frames)

            runtime.kill()  # SIGKILL: no handler, no flush, no goodbye
            runtime.start()

            async with ChatClient(runtime.url, runtime.ws_url, token=client.token) as again:
                await again.connect()
                await again.send_raw(
                    json.dumps(
                        {
                            "type": "resume",
                            "thread_id": thread,
                            "turn_id": turn,
                            "after_seq": last_seq,
                        }
                    )
                )
                told = await again.next_frame()
                assert told["type"] == "turn_interrupted", told
                assert (told["thread_id"], told["turn_id"], told["reason"]) == (
                    thread,
                    turn,
                    "restart",
                )
                assert told["retryable"] and "restart" in told["message"]
                resync = await again.next_frame()
                assert resync["type"] == "resync" and resync["running"] is False

                messages = (await again.thread(thread))["messages"]
                assert [(m["role"], m["status"]) for m in messages] == [
                    ("user", "complete"),
                    ("assistant", "complete"),  # the step that called the tool
                    ("tool", "complete"),
                    ("assistant", "incomplete"),  # the step the kill cut off
                ]
                assert messages[0]["content"] == "What is PEPE?"
                assert [c["name"] for c in messages[1]["tool_calls"]] == ["analyze_token"]
                assert "PEPE" in messages[2]["content"]
                cut = messages[3]
                assert cut["finish_reason"] == "error" and cut["meta"]["ended_by"] == "restart"
                # Checkpointed before it was sent: exactly what the user saw, nothing less.
                assert cut["content"] == seen

                # The same message id retries the turn; it runs to the end this time.
                model.script(Reply(text=["PEPE is a memecoin."]))
                retried = await again.turn(thread, "What is PEPE?", message_id=turn)
                assert retried[-1]["type"] == "done" and retried[-1]["finish_reason"] == "stop"
                await again.send_raw(
                    json.dumps({"type": "resume", "thread_id": thread, "turn_id": turn})
                )
                after = await again.next_frame()
                assert after["type"] == "resync" and after["running"] is False


async def test_a_resume_of_a_turn_that_simply_ended_is_not_called_interrupted(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    model.script(Reply(text=["All ", "done."]))
    variables = {"ALBERT_MODE": "local", "MODEL_BASE_URL": model.base_url}
    with RuntimeProcess(tmp_path, variables) as runtime:
        async with ChatClient(runtime.url, runtime.ws_url) as client:
            await client.connect()
            thread = await client.new_thread()
            frames = await client.turn(thread, "hello")
            assert frames[-1]["finish_reason"] == "stop"
            runtime.kill()
            runtime.start()
            async with ChatClient(runtime.url, runtime.ws_url, token=client.token) as again:
                await again.connect()
                turn = frames[0]["message_id"]
                await again.send_raw(
                    json.dumps({"type": "resume", "thread_id": thread, "turn_id": turn})
                )
                frame = await asyncio.wait_for(again.next_frame(), 10)
                assert frame["type"] == "resync" and frame["running"] is False
                messages = (await again.thread(thread))["messages"]
                assert [(m["role"], m["status"]) for m in messages] == [
                    ("user", "complete"),
                    ("assistant", "complete"),
                ]
