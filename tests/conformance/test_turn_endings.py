"""Every turn ends well: stalls, the turn bound, and resuming a stream after a reconnect."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.chat_client import ChatClient, answer_text
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply

STALL_SECONDS = 1.0
TURN_SECONDS = 3.0


@pytest.fixture(scope="module")
def runtime(
    tmp_path_factory: pytest.TempPathFactory, runtime_kind: str, model
) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp(f"endings-{runtime_kind}")
    variables = {
        "ALBERT_MODE": "local",
        "MODEL_BASE_URL": model.base_url,
        "MODEL_FIRST_CHUNK_TIMEOUT_SECONDS": str(STALL_SECONDS),
        "MODEL_CHUNK_TIMEOUT_SECONDS": str(STALL_SECONDS),
        "TURN_TIMEOUT_SECONDS": str(TURN_SECONDS),
    }
    with RuntimeProcess(state, variables, runtime=runtime_kind) as process:
        yield process


async def test_a_model_that_never_starts_ends_the_turn_within_the_first_chunk_bound(
    runtime, model
) -> None:
    model.script(Reply(text=["too late"], delay_seconds=8))
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        started = time.monotonic()
        frames = await client.turn(thread, "anyone there?")
        elapsed = time.monotonic() - started
    error = next(f for f in frames if f["type"] == "error")
    assert error["code"] == "timeout" and "not started answering" in error["detail"]
    assert "did not answer in time" in error["message"]
    assert frames[-1]["finish_reason"] == "error"
    assert elapsed < STALL_SECONDS + 2.5


async def test_a_stream_that_stops_sending_keeps_its_partial_text(runtime, model) -> None:
    model.script(
        Reply(
            text=["Half ", "an ", "answer ", "then silence"], pause_after_chunks=3, pause_seconds=8
        )
    )
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        started = time.monotonic()
        frames = await client.turn(thread, "go on")
        elapsed = time.monotonic() - started
        error = next(f for f in frames if f["type"] == "error")
        assert error["code"] == "timeout" and "not sent more" in error["detail"]
        assert answer_text(frames) == "Half an "
        assert elapsed < STALL_SECONDS + 2.5
        last = (await client.thread(thread))["messages"][-1]
        assert (last["content"], last["status"], last["finish_reason"]) == (
            "Half an ",
            "incomplete",
            "error",
        )


async def test_a_turn_longer_than_its_bound_is_stopped_with_the_timeout_outcome(
    runtime, model
) -> None:
    words = [f"w{i} " for i in range(40)]
    model.script(Reply(text=words, chunk_delay_seconds=0.25))
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        frames = await client.turn(thread, "a long one")
        assert frames[-1]["finish_reason"] == "timeout"
        streamed = answer_text(frames)
        assert streamed and len(streamed) < len("".join(words))
        last = (await client.thread(thread))["messages"][-1]
        assert last["finish_reason"] == "timeout" and last["content"] == streamed


class OrderedTurn:
    """Applies a turn's frames strictly in seq order, as the browser does."""

    def __init__(self) -> None:
        self.applied = 0
        self.pending: dict[int, dict] = {}
        self.text = ""
        self.done: dict | None = None

    def offer(self, frame: dict) -> None:
        seq = frame.get("seq", 0)
        if seq <= self.applied:
            return
        self.pending[seq] = frame
        while self.applied + 1 in self.pending:
            self.applied += 1
            current = self.pending.pop(self.applied)
            if current["type"] == "text_delta":
                self.text += current["delta"]
            elif current["type"] == "done":
                self.done = current


async def test_a_reconnect_mid_answer_resumes_without_losing_or_repeating_text(
    runtime, model
) -> None:
    words = [f"token{i} " for i in range(30)]
    full = "".join(words)
    model.script(Reply(text=words, chunk_delay_seconds=0.05))
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        turn_id = await client.ask(thread, "stream me something")
        ordered = OrderedTurn()
        for _ in range(200):
            frame = await client.next_frame()
            ordered.offer(frame)
            if frame["type"] == "text_delta" and ordered.text.count("token") >= 8:
                break
        await client.ws.close()  # the browser drops mid-answer
        await client.connect()
        await client.send_raw(
            json.dumps(
                {
                    "type": "resume",
                    "thread_id": thread,
                    "turn_id": turn_id,
                    "after_seq": ordered.applied,
                }
            )
        )
        resynced = False
        for _ in range(500):
            frame = await client.next_frame()
            if frame["type"] == "resync":
                assert frame["running"] and frame["turn_id"] == turn_id
                resynced = True
            ordered.offer(frame)
            if ordered.done is not None:
                break
        assert resynced
        assert ordered.done is not None and ordered.done["finish_reason"] == "stop"
        assert ordered.text == full
        stored = (await client.thread(thread))["messages"][-1]["content"]
        assert stored == full

        # Asking again after the turn ended: nothing is running, the browser loads the thread.
        await client.send_raw(
            json.dumps({"type": "resume", "thread_id": thread, "turn_id": turn_id, "after_seq": 3})
        )
        resync = await client.frames_until("resync")
        assert resync[-1]["running"] is False
