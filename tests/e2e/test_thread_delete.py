"""Deleting a thread while its answer streams, through the runtime process over loopback.

Before, the delete answered 204 while the turn ran on: its next write failed on a foreign
key and the socket never got `done` or `error`. Now the turn is cancelled first (stored as
cancelled, its `done` sent), then the thread is deleted.
"""

from __future__ import annotations

import asyncio
import time

from tests.support.chat_client import ChatClient
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer


async def test_deleting_a_thread_mid_answer_ends_its_turn_with_done(
    runtime: RuntimeProcess, model: ScriptedModelServer
) -> None:
    log_start = runtime.log_path.stat().st_size if runtime.log_path.exists() else 0
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        kept = await client.new_thread()
        # The answer pauses after its first piece, long past the test's own bounds.
        model.script(Reply(text=["Half ", "an ", "answer"], pause_after_chunks=1, pause_seconds=60))
        asked = len(model.requests)
        turn_id = await client.ask(thread, "tell me everything")
        await client.frames_until("start", turn_id=turn_id)
        # The model has the request and is paused mid-answer.
        for _ in range(100):
            if len(model.requests) > asked:
                break
            await asyncio.sleep(0.05)
        assert len(model.requests) > asked
        await asyncio.sleep(0.3)

        started = time.monotonic()
        deleted = await client.http.delete(f"/api/threads/{thread}")
        assert deleted.status_code == 204, deleted.text
        assert time.monotonic() - started < 8.0, "the delete waits only for the cancellation"

        frames = await client.frames_until("done", timeout=10, turn_id=turn_id)
        done = frames[-1]
        # Nothing of the answer after the pause was sent.
        assert "answer" not in "".join(f.get("delta", "") for f in frames)
        assert (done["thread_id"], done["finish_reason"]) == (thread, "cancelled")
        assert not [f for f in frames if f["type"] == "error"], frames

        assert (await client.http.get(f"/api/threads/{thread}")).status_code == 404
        listed = (await client.http.get("/api/threads")).json()["threads"]
        assert [t["id"] for t in listed] == [kept]

        # The socket stays usable: another thread's turn runs to its end.
        model.script(Reply(text=["still ", "here"]))
        frames = await client.turn(kept, "and now?")
        assert frames[-1]["finish_reason"] == "stop", frames[-1]
        assert not [f for f in frames if f["type"] == "error"], frames

    # Nothing the deleted turn did afterwards failed in the object.
    await asyncio.sleep(0.2)
    log = runtime.log_path.read_bytes()[log_start:].decode(errors="replace")
    assert "FOREIGN KEY" not in log.upper(), log[-2000:]
    assert "Traceback" not in log, log[-2000:]
