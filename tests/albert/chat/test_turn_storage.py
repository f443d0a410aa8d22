"""What a turn asks of storage before the model starts: the history is read once.

The chat service runs in-process on a real SQLite file; the model is an in-process
client that notes which statements had run when its first step began.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from albert.ai.model import ModelError, ModelEvent, ModelRequest, StepFinished, TextDelta
from albert.chat.service import ChatService
from albert.cloudflare.sql import WorkersSql
from albert.composition import build_chat_service
from miniflare import install_shims
from tests.support.object_sql import object_sql
from tests.support.sockets import RecordingSockets

install_shims()

HISTORY_READ = "ORDER BY seq DESC"
T = TypeVar("T")


class CountingSql:
    """The storage port, noting every statement on the chat tables."""

    def __init__(self, inner: WorkersSql) -> None:
        self._inner = inner
        self.statements: list[str] = []

    def execute(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        if " messages" in sql or " threads" in sql:
            self.statements.append(" ".join(sql.split()))
        return self._inner.execute(sql, *params)

    def transaction(self, work: Callable[[], T]) -> T:
        return self._inner.transaction(work)


class NotingModel:
    """Answers "ok" (or fails once when told to), noting the statements run before each step."""

    model_name = "noting"

    def __init__(self, sql: CountingSql) -> None:
        self._sql = sql
        self.seen: list[list[str]] = []
        self.fail_next = False

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.seen.append(list(self._sql.statements))
        if self.fail_next:
            self.fail_next = False
            raise ModelError("http", "the gateway answered 500", status=500)
        yield TextDelta(text="ok")
        yield StepFinished(reason="stop")


SOCKETS = RecordingSockets()


@pytest.fixture
async def chat(tmp_path: Path) -> AsyncIterator[tuple[ChatService, CountingSql, NotingModel]]:
    sql = CountingSql(object_sql(tmp_path / "o.sqlite"))
    model = NotingModel(sql)
    async with httpx.AsyncClient() as http:
        service = build_chat_service(
            sql=sql, hub=SOCKETS, env={"ALBERT_MODE": "local"}, http=http, model=model
        )
        yield service, sql, model


async def turn(service: ChatService, sql: CountingSql, message_id: str) -> list[dict[str, Any]]:
    """The frames one chat message brings (its socket is the client's only one)."""
    SOCKETS.frames.clear()
    sql.statements.clear()
    frame = {"type": "chat", "thread_id": "t1", "message_id": message_id, "text": "hello"}
    await service.handle_frame(SOCKETS, json.dumps(frame))
    return [f for f in SOCKETS.frames if f["type"] != "mcp_status"]


async def test_a_follow_up_reads_the_history_once_in_five_statements(
    chat: tuple[ChatService, CountingSql, NotingModel],
) -> None:
    service, sql, model = chat
    service.store.create_thread("t1", "Named")
    await turn(service, sql, "m1")
    await turn(service, sql, "m2")
    before_model = model.seen[-1]
    assert sum(HISTORY_READ in s for s in before_model) == 1
    # the thread and the message id (one read), the user's message, its JSON as sent and
    # its thread's bump, the history.
    assert len(before_model) == 5, before_model


async def test_a_retried_turn_reads_the_history_once_and_stores_nothing_twice(
    chat: tuple[ChatService, CountingSql, NotingModel],
) -> None:
    service, sql, model = chat
    service.store.create_thread("t1", "Named")
    model.fail_next = True
    failed = await turn(service, sql, "m1")
    assert failed[-1]["type"] == "done" and failed[-1]["finish_reason"] == "error"
    retried = await turn(service, sql, "m1")
    assert retried[0] == {"type": "ack", "thread_id": "t1", "message_id": "m1", "duplicate": False}
    assert sum(HISTORY_READ in s for s in model.seen[-1]) == 1
    assert not any(s.startswith("INSERT INTO messages") for s in model.seen[-1])
    again = await turn(service, sql, "m1")  # answered now: a duplicate, no turn at all
    assert [f["type"] for f in again] == ["ack"] and again[0]["duplicate"] is True
    assert len(model.seen) == 2
    assert [m.role for m in service.store.history("t1")] == ["user", "assistant", "assistant"]
