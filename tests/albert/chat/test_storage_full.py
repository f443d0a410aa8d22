"""Storage that fills up before or during a turn: the user is told, and never told a turn
finished that is not stored.

The real chat service runs on a real SQLite file through the platform's SQL adapter, capped
as the local runtime caps an object's storage; the scripted model streams over real HTTP.
Storage fills for real: another connection takes every page left under the cap
(tests/support/full_storage.py), at a chosen frame of the turn, and gives them back later.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import Field

from albert.chat.recorder import NOT_KEPT_MESSAGE
from albert.chat.service import ChatService
from albert.composition import build_chat_service
from albert.tools.base import LocalTool, ToolInput, ToolResult
from miniflare import install_shims
from tests.support.full_storage import OVER_A_PAGE, StorageFiller
from tests.support.object_sql import object_sql
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall

install_shims()

MAX_BYTES = 1 << 20
# One piece of the answer larger than a page: storing it needs new pages.
LONG_PIECE = "Its supply is fixed and its holders are many. " * (OVER_A_PAGE // 46 + 1)


class Sockets:
    """The client's socket: frames as parsed JSON; `on_send` sees each as it goes out."""

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []
        self.on_send: Callable[[dict[str, Any]], None] | None = None

    def send(self, text: str) -> None:
        frame = json.loads(text)
        if frame["type"] == "mcp_status":
            return
        self.frames.append(frame)
        if self.on_send is not None:
            self.on_send(frame)

    def close(self, code: int, reason: str) -> None:
        pass

    def sockets(self) -> list[Sockets]:
        return [self]

    def take(self) -> list[dict[str, Any]]:
        """The frames sent since the last take."""
        frames, self.frames = self.frames, []
        return frames


class _Query(ToolInput):
    symbol: str = Field(description="token symbol")


async def _holders(args: _Query) -> ToolResult:
    # A long result: the tool message and its whole output need new pages.
    return ToolResult.text(f"{args.symbol} holders: " + "0xabc… 1.0%; " * (OVER_A_PAGE // 12))


class Client:
    """One client's object (on a capped SQLite file) and its socket."""

    def __init__(self, service: ChatService, sockets: Sockets) -> None:
        self.service = service
        self.sockets = sockets

    async def send(self, **frame: Any) -> list[dict[str, Any]]:
        """Send one frame; the frames it got (a chat frame: its whole turn)."""
        await self.service.handle_frame(self.sockets, json.dumps(frame))
        return self.sockets.take()

    def fill_at(self, filler: StorageFiller, kind: str) -> None:
        """Fill the storage as the first frame of `kind` goes out."""

        def on_send(frame: dict[str, Any]) -> None:
            if frame["type"] == kind:
                self.sockets.on_send = None
                filler.fill()

        self.sockets.on_send = on_send

    def shape(self, thread: str) -> list[tuple[str, str, str | None, str | None]]:
        """The thread as stored: role, status, finish reason and `meta.ended_by` of each
        message."""
        return [
            (m.role, m.status, m.finish_reason, m.meta.get("ended_by"))
            for m in self.service.store.history(thread)
        ]


@asynccontextmanager
async def chat(path: Path, model: ScriptedModelServer) -> AsyncIterator[Client]:
    """The client's object, started on `path` (capped at MAX_BYTES)."""
    sockets = Sockets()
    async with httpx.AsyncClient() as http:
        service = build_chat_service(
            sql=object_sql(path, MAX_BYTES),
            hub=sockets,
            env={"MODEL_BASE_URL": model.base_url},
            http=http,
            extra_tools=[LocalTool("holders", "Lists a token's holders.", _Query, _holders)],
        )
        yield Client(service, sockets)


def text_of(frames: list[dict[str, Any]]) -> str:
    return "".join(f["delta"] for f in frames if f["type"] == "text_delta")


@pytest.fixture
def model() -> AsyncIterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


def assert_not_kept(frames: list[dict[str, Any]], turn: str) -> None:
    """The turn ended with the not-kept error frame, and no `done`."""
    assert [f["type"] for f in frames].count("done") == 0, frames
    last = frames[-1]
    assert last["type"] == "error", frames
    assert (last["code"], last["turn_id"], last["retryable"]) == ("storage_unavailable", turn, True)
    assert last["message"] == NOT_KEPT_MESSAGE


async def test_storage_full_mid_answer_ends_the_turn_with_an_error_never_done(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    path = tmp_path / "object.sqlite"
    filler = StorageFiller(path, MAX_BYTES)
    async with chat(path, model) as client:
        thread = client.service.store.create_thread("t1", None).id
        # The long first piece is stored and sent; then storage is full, and the next
        # piece cannot be stored (the journal's entry would need new pages).
        model.script(
            Reply(text=[LONG_PIECE, "So ", "it is ", "a memecoin."], chunk_delay_seconds=0.05)
        )
        client.fill_at(filler, "text_delta")
        frames = await client.send(type="chat", thread_id=thread, message_id="m1", text="PEPE?")

        assert_not_kept(frames, "m1")
        seen = text_of(frames)
        assert seen == LONG_PIECE  # nothing the storage did not take went out
        # The question is kept; of the answer, nothing yet: its end waits for space.
        assert client.shape(thread) == [("user", "complete", None, None)]
        entry = client.service.turns.journal.entry("m1")
        assert entry is not None and (entry.state, entry.partial) == ("unsaved", seen)

    # A restart while storage is still full: the object starts, the end still waits.
    async with chat(path, model) as client:
        assert client.shape(thread) == [("user", "complete", None, None)]
        assert await client.send(type="ping") == [{"type": "pong"}]

    # Space back, then a restart: the turn's end is stored with what the user saw.
    filler.free()
    async with chat(path, model) as client:
        assert client.shape(thread) == [
            ("user", "complete", None, None),
            ("assistant", "incomplete", "error", "storage"),
        ]
        assert client.service.store.history(thread)[-1].content == seen
        assert client.service.turns.journal.unended() == []
        # Resending the question retries it, and it is answered in full.
        model.script(Reply(text=["PEPE is ", "a memecoin."]))
        frames = await client.send(type="chat", thread_id=thread, message_id="m1", text="PEPE?")
        assert frames[-1]["type"] == "done" and frames[-1]["finish_reason"] == "stop"
        assert client.service.store.history(thread)[-1].content == "PEPE is a memecoin."


async def test_storage_full_at_the_final_commit_sends_no_done(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    path = tmp_path / "object.sqlite"
    filler = StorageFiller(path, MAX_BYTES)
    async with chat(path, model) as client:
        thread = client.service.store.create_thread("t1", None).id
        # The whole answer is streamed (stored before it is sent), then storage is full
        # when the answer and its outcome are committed.
        model.script(Reply(text=[LONG_PIECE]))
        client.fill_at(filler, "text_delta")
        frames = await client.send(type="chat", thread_id=thread, message_id="m1", text="PEPE?")

        assert_not_kept(frames, "m1")
        assert text_of(frames) == LONG_PIECE
        assert client.shape(thread) == [("user", "complete", None, None)]

        # Space back while the object runs: the next frame stores the turn's end.
        filler.free()
        assert await client.send(type="ping") == [{"type": "pong"}]
        assert client.shape(thread) == [
            ("user", "complete", None, None),
            ("assistant", "incomplete", "error", "storage"),
        ]
        assert client.service.store.history(thread)[-1].content == LONG_PIECE
        assert client.service.turns.journal.unended() == []

        # And turns go on as before.
        frames = await client.send(type="chat", thread_id=thread, message_id="m2", text="More?")
        assert frames[-1]["type"] == "done" and frames[-1]["finish_reason"] == "stop"

    # Nothing is left for a restart to end again.
    async with chat(path, model) as client:
        assert [(m.turn_id, m.role) for m in client.service.store.history(thread)] == [
            ("m1", "user"),
            ("m1", "assistant"),
            ("m2", "user"),
            ("m2", "assistant"),
        ]
        assert client.service.turns.journal.unended() == []


async def test_storage_full_while_a_tool_runs_keeps_no_half_of_its_result(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    path = tmp_path / "object.sqlite"
    filler = StorageFiller(path, MAX_BYTES)
    async with chat(path, model) as client:
        thread = client.service.store.create_thread("t1", None).id
        model.script(
            Reply(
                text=["Looking it up."],
                tool_calls=[ScriptedToolCall(name="holders", arguments={"symbol": "PEPE"})],
            ),
            Reply(text=["Never asked for."]),
        )
        client.fill_at(filler, "tool_call")
        frames = await client.send(type="chat", thread_id=thread, message_id="m1", text="Who?")

        kinds = [f["type"] for f in frames]
        assert "tool_call" in kinds and "tool_result" not in kinds, kinds
        errors = [f for f in frames if f["type"] == "error"]
        assert [e["code"] for e in errors] == ["storage_unavailable"]
        # A closing marker may still fit where the result did not: then the turn's end is
        # stored and `done` says `error`; if not, the error frame alone ends it.
        done = [f["finish_reason"] for f in frames if f["type"] == "done"]
        assert done in ([], ["error"])
        assert len(model.requests) == 1  # the model never got a result that is not kept

        filler.free()
        await client.send(type="ping")
        # The step the user saw (its text and its call), then the turn's end; no tool result.
        assert [(m.role, m.finish_reason) for m in client.service.store.history(thread)] == [
            ("user", None),
            ("assistant", "tool_calls"),
            ("assistant", "error"),
        ]
        assert client.service.outputs.read(thread, "call_1_0", 0, 10) is None
        assert client.service.turns.journal.unended() == []


async def test_storage_full_before_a_turn_refuses_the_message_and_the_socket_goes_on(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    path = tmp_path / "object.sqlite"
    filler = StorageFiller(path, MAX_BYTES)
    async with chat(path, model) as client:
        thread = client.service.store.create_thread("t1", None).id
        filler.fill()
        # A question longer than a page (pasted text): storing it needs new pages.
        question = "Summarise this: " + LONG_PIECE
        chat_frame = {"type": "chat", "thread_id": thread, "message_id": "m1", "text": question}
        frames = await client.send(**chat_frame)
        assert len(frames) == 1, frames  # no ack, no turn
        refused = frames[0]
        assert (refused["type"], refused["code"], refused["thread_id"]) == (
            "error",
            "storage_unavailable",
            thread,
        )
        assert refused["retryable"] and "could not be saved" in refused["message"]
        assert refused.get("turn_id") is None
        assert client.service.store.history(thread) == []
        assert model.requests == []

        # The socket goes on.
        assert await client.send(type="ping") == [{"type": "pong"}]

        # Space back: the same message is answered.
        filler.free()
        frames = await client.send(**chat_frame)
        assert [f["type"] for f in frames][:2] == ["ack", "start"]
        assert frames[-1]["type"] == "done" and frames[-1]["finish_reason"] == "stop"
        assert [m.role for m in client.service.store.history(thread)] == ["user", "assistant"]
