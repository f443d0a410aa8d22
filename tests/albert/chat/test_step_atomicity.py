"""Each piece of a step is stored in one transaction: a fault mid-way leaves none of it.

The chat service runs in-process on a real SQLite file (the local runtime's storage, with
its `transactionSync`); the model is an in-process client that calls one tool, then
answers. A fault is injected into the storage port at a chosen statement.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypeVar

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
from albert.cloudflare.sql import SqlError, WorkersSql
from albert.composition import build_chat_service
from albert.tools.base import LocalTool, ToolInput, ToolResult
from miniflare import install_shims
from tests.support.object_sql import object_sql
from tests.support.sockets import RecordingSockets

install_shims()
T = TypeVar("T")


Statement = tuple[str, tuple[Any, ...]]


def _never(_now: Statement, _before: Statement) -> bool:
    return False


class FaultySql:
    """The storage port, failing the first statement `fails(statement, previous one)`
    accepts; it notes every statement with the transaction depth it ran at."""

    def __init__(self, inner: WorkersSql) -> None:
        self._inner = inner
        self._depth = 0
        self._previous: Statement = ("", ())
        self.fails: Callable[[Statement, Statement], bool] = _never
        self.statements: list[tuple[int, str]] = []

    def execute(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        statement = (" ".join(sql.split()), params)
        if self.fails(statement, self._previous):
            self.fails = _never
            raise SqlError("disk I/O error (injected)")
        self._previous = statement
        self.statements.append((self._depth, statement[0][:40]))
        return self._inner.execute(sql, *params)

    def transaction(self, work: Callable[[], T]) -> T:
        self._depth += 1
        try:
            return self._inner.transaction(work)
        finally:
            self._depth -= 1


class _Query(ToolInput):
    symbol: str = Field(description="token symbol")


async def _lookup(args: _Query) -> ToolResult:
    return ToolResult.text(f"{args.symbol}: 42 holders")


class OneToolModel:
    """Step 1 calls `lookup`, step 2 answers."""

    model_name = "one-tool"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if not any(m.role == "tool" for m in request.messages[-2:]):
            call = ChatToolCall(id="call_a", name="lookup", arguments='{"symbol": "ETH"}')
            yield TextDelta(text="Looking it up.")
            yield ToolCallRequest(call=call)
            yield StepFinished(reason="tool_calls")
            return
        yield TextDelta(text="ETH has 42 holders.")
        yield StepFinished(reason="stop")


def _service(
    sql: FaultySql, sockets: RecordingSockets, http: httpx.AsyncClient, model: Any
) -> ChatService:
    """A chat service on `sql` with the lookup tool and one thread, "t1"."""
    service = build_chat_service(
        sql=sql,
        hub=sockets,
        env={"ALBERT_MODE": "local"},
        http=http,
        model=model,
        extra_tools=[LocalTool("lookup", "Looks a token up.", _Query, _lookup)],
    )
    service.store.create_thread("t1", "Named")
    return service


@pytest.fixture
async def chat(tmp_path: Path) -> AsyncIterator[tuple[ChatService, FaultySql, RecordingSockets]]:
    sql = FaultySql(object_sql(tmp_path / "o.sqlite"))
    sockets = RecordingSockets()
    async with httpx.AsyncClient() as http:
        yield _service(sql, sockets, http, OneToolModel()), sql, sockets


async def _turn(service: ChatService, sockets: RecordingSockets) -> list[dict[str, Any]]:
    frame = {"type": "chat", "thread_id": "t1", "message_id": "m1", "text": "ETH holders?"}
    await service.handle_frame(sockets, json.dumps(frame))
    return [f for f in sockets.frames if f["type"] != "mcp_status"]


def _rows(service: ChatService, sql: str) -> list[dict[str, Any]]:
    return service.store._sql.execute(sql)  # type: ignore[attr-defined]


async def test_each_piece_of_a_step_is_written_in_one_transaction(
    chat: tuple[ChatService, FaultySql, RecordingSockets],
) -> None:
    service, sql, sockets = chat
    sql.statements.clear()
    frames = await _turn(service, sockets)
    assert frames[-1]["type"] == "done" and frames[-1]["finish_reason"] == "stop"
    writes = [(d, s) for d, s in sql.statements if not s.startswith("SELECT")]
    # Nothing of a step is written outside a transaction but the journal's own entries.
    loose = [s for d, s in writes if d == 0]
    assert all("turn_journal" in s for s in loose), loose
    tool_piece = [s for d, s in writes if d == 1 and "tool" in s.lower()]
    assert tool_piece, writes
    assert [m.role for m in service.store.history("t1")] == [
        "user",
        "assistant",
        "tool",
        "assistant",
    ]


async def test_a_fault_while_storing_a_tool_result_leaves_no_half_of_it(
    chat: tuple[ChatService, FaultySql, RecordingSockets],
) -> None:
    service, sql, sockets = chat
    # The tool message fails after the tool's whole output was written in the same step.
    sql.fails = lambda now, _: now[0].startswith("INSERT INTO messages") and "tool" in now[1]
    frames = await _turn(service, sockets)

    kinds = [f["type"] for f in frames]
    assert "tool_call" in kinds and "tool_result" not in kinds, kinds
    assert frames[-2]["type"] == "error" and frames[-2]["code"] == "storage_unavailable"
    assert frames[-1]["type"] == "done" and frames[-1]["finish_reason"] == "error"
    assert _rows(service, "SELECT call_id FROM tool_outputs") == []
    history = service.store.history("t1")
    assert [m.role for m in history] == ["user", "assistant", "assistant"]
    step, ending = history[1], history[2]
    # The step the user saw stays whole: its text and the call it made.
    assert step.content == "Looking it up." and [c.id for c in step.tool_calls] == ["call_a"]
    assert ending.finish_reason == "error"
    assert _rows(service, "SELECT turn_id FROM turn_journal") == []


async def test_a_fault_while_storing_a_step_leaves_no_half_of_it(
    chat: tuple[ChatService, FaultySql, RecordingSockets],
) -> None:
    service, sql, sockets = chat
    # The step's message is written, then its thread's bump fails.
    assistant_written = False

    def bump_after_assistant(now: Statement, before: Statement) -> bool:
        nonlocal assistant_written
        if before[0].startswith("INSERT INTO messages") and "assistant" in before[1]:
            assistant_written = True
        return assistant_written and now[0].startswith("UPDATE threads SET updated_at")

    sql.fails = bump_after_assistant
    before = service.store.get_thread("t1").updated_at
    frames = await _turn(service, sockets)

    kinds = [f["type"] for f in frames]
    assert "tool_call" not in kinds and kinds[-1] == "done", kinds
    history = service.store.history("t1")
    # The user's message and the turn's ending; the step that failed left nothing.
    assert [m.role for m in history] == ["user", "assistant"]
    assert history[1].finish_reason == "error"
    assert not any(m.content == "Looking it up." and m.tool_calls for m in history)
    assert service.store.get_thread("t1").updated_at > before


class StoredBeforeSent(RecordingSockets):
    """Checks, as each text frame is sent, that storage already holds all of that step's
    text the user has seen: in the step's stored message or in the turn journal."""

    def __init__(self) -> None:
        super().__init__()
        self.sql: FaultySql | None = None
        self.seen: dict[int, str] = {}
        self.unstored: list[str] = []

    def send(self, text: str) -> None:
        frame = json.loads(text)
        if frame["type"] == "text_delta" and self.sql is not None:
            step = frame["step"]
            seen = self.seen[step] = self.seen.get(step, "") + frame["delta"]
            stored = [
                r["content"]
                for r in self.sql._inner.execute(
                    "SELECT content FROM messages WHERE turn_id = ? AND id LIKE ?",
                    frame["turn_id"],
                    f"%:a{step}",
                )
            ] + [
                r["partial"]
                for r in self.sql._inner.execute(
                    "SELECT partial FROM turn_journal WHERE turn_id = ? AND step = ?",
                    frame["turn_id"],
                    step,
                )
            ]
            if not any(s.startswith(seen) for s in stored):
                self.unstored.append(f"step {step}: {seen!r} not in {stored!r}")
        super().send(text)


class StreamingModel:
    """Step 1 streams a sentence in pieces (some held back past the flush delay), then calls
    `lookup`; step 2 streams a long answer."""

    model_name = "streaming"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if not any(m.role == "tool" for m in request.messages[-2:]):
            for piece in ("Looking ", "it ", "up."):
                yield TextDelta(text=piece)
                await asyncio.sleep(0.03)  # past the 20 ms flush delay: sent piece by piece
            yield TextDelta(text=" Now.")  # held back when the step ends
            call = ChatToolCall(id="call_a", name="lookup", arguments='{"symbol": "ETH"}')
            yield ToolCallRequest(call=call)
            yield StepFinished(reason="tool_calls")
            return
        for i in range(40):
            yield TextDelta(text=f"word{i:02d} ")  # 280 characters: one piece sent by size
        yield StepFinished(reason="stop")


async def test_every_piece_of_text_is_stored_before_it_is_sent(tmp_path: Path) -> None:
    sql = FaultySql(object_sql(tmp_path / "o.sqlite"))
    sockets = StoredBeforeSent()
    async with httpx.AsyncClient() as http:
        service = _service(sql, sockets, http, StreamingModel())
        sockets.sql = sql
        frames = await _turn(service, sockets)
    assert frames[-1]["type"] == "done" and frames[-1]["finish_reason"] == "stop"
    assert sockets.seen == {
        1: "Looking it up. Now.",
        2: "".join(f"word{i:02d} " for i in range(40)),
    }
    assert sockets.unstored == []
