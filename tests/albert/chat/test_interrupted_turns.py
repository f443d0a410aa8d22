"""Turns a restart cut off are ended when the object starts again, from the turn journal.

Storage is a real SQLite file through the platform's SQL adapter; the end-to-end case
(a real `kill -9` of the runtime process) is tests/e2e/test_hard_kill.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from albert.chat.history import history_for_model
from albert.chat.interrupted_turns import RESTART_MESSAGE, recover_interrupted_turns
from albert.clock import SystemClock
from albert.composition import build_chat_service
from albert.protocol.http import ToolCallRecord
from albert.storage.migrations import THREADS, migrate
from albert.storage.threads import ThreadStore
from albert.storage.turn_journal import TurnJournal
from miniflare import install_shims
from tests.support.object_sql import object_sql
from tests.support.scripted_model import Reply, ScriptedModelServer

install_shims()


class Sockets:
    """Collects what the service sends; `on_send` sees each frame as it goes out."""

    def __init__(self, on_send=None) -> None:
        self.frames: list[dict] = []
        self._on_send = on_send

    def send(self, text: str) -> None:
        frame = json.loads(text)
        self.frames.append(frame)
        if self._on_send is not None:
            self._on_send(frame)

    def close(self, code: int, reason: str) -> None:
        pass

    def sockets(self) -> list[Sockets]:
        return [self]


@pytest.fixture
def storage(tmp_path: Path) -> tuple[ThreadStore, TurnJournal]:
    sql = object_sql(tmp_path / "object.sqlite")
    migrate(sql, THREADS)
    clock = SystemClock()
    store = ThreadStore(sql, clock)
    store.create_thread("t1", None)
    store.add_message(
        message_id="m1", thread_id="t1", turn_id="m1", role="user", content="What is PEPE?"
    )
    return store, TurnJournal(sql, clock)


def test_the_text_of_a_step_cut_off_mid_stream_is_stored_as_its_answer(storage) -> None:
    store, journal = storage
    journal.begin(turn_id="m1", thread_id="t1", run="r1")
    journal.checkpoint("m1", 1, "PEPE is ")
    journal.checkpoint("m1", 1, "a memecoin")

    ended = recover_interrupted_turns(store, journal)

    assert [e.turn_id for e in ended] == ["m1"]
    last = store.history("t1")[-1]
    assert (last.id, last.role, last.content) == ("m1:r1:a1", "assistant", "PEPE is a memecoin")
    assert (last.status, last.finish_reason, last.meta["ended_by"]) == (
        "incomplete",
        "error",
        "restart",
    )
    assert journal.interrupted("t1", "m1") is not None
    assert journal.running() == []
    # A second start has nothing left to do.
    assert recover_interrupted_turns(store, journal) == []
    # The model is not asked to continue a cut text.
    assert [m.role for m in history_for_model(store.history("t1"))] == ["user"]


def test_a_new_step_starts_its_checkpointed_text_afresh(storage) -> None:
    store, journal = storage
    journal.begin(turn_id="m1", thread_id="t1", run="r1")
    journal.checkpoint("m1", 1, "Let me look that up.")
    store.add_message(
        message_id="m1:r1:a1",
        thread_id="t1",
        turn_id="m1",
        role="assistant",
        content="Let me look that up.",
        tool_calls=[ToolCallRecord(id="c1", name="analyze_token", arguments="{}")],
        finish_reason="tool_calls",
    )
    journal.checkpoint("m1", 2, "It is ")
    recover_interrupted_turns(store, journal)
    last = store.history("t1")[-1]
    assert (last.id, last.content) == ("m1:r1:a2", "It is ")


def test_a_turn_cut_off_while_its_tool_ran_gets_a_closing_marker(storage) -> None:
    store, journal = storage
    journal.begin(turn_id="m1", thread_id="t1", run="r1")
    journal.checkpoint("m1", 1, "Checking.")
    store.add_message(
        message_id="m1:r1:a1",
        thread_id="t1",
        turn_id="m1",
        role="assistant",
        content="Checking.",
        tool_calls=[ToolCallRecord(id="c1", name="analyze_token", arguments="{}")],
        finish_reason="tool_calls",
    )

    recover_interrupted_turns(store, journal)

    messages = store.history("t1")
    assert [m.id for m in messages] == ["m1", "m1:r1:a1", "m1:r1:end"]
    end = messages[-1]
    assert (end.content, end.status, end.finish_reason) == ("", "incomplete", "error")
    # The call that never got its result gets a stand-in, so the model API accepts it.
    model_view = history_for_model(messages)
    assert [m.role for m in model_view] == ["user", "assistant", "tool"]
    assert "interrupted" in (model_view[-1].content or "")


def test_an_answer_stored_whole_is_left_as_it_is(storage) -> None:
    store, journal = storage
    journal.begin(turn_id="m1", thread_id="t1", run="r1")
    journal.checkpoint("m1", 1, "PEPE is a memecoin.")
    # The last step was stored with its outcome; only the bookkeeping after it was cut.
    store.add_message(
        message_id="m1:r1:a1",
        thread_id="t1",
        turn_id="m1",
        role="assistant",
        content="PEPE is a memecoin.",
        finish_reason="stop",
    )
    assert recover_interrupted_turns(store, journal) == []
    assert [m.id for m in store.history("t1")] == ["m1", "m1:r1:a1"]
    assert journal.interrupted("t1", "m1") is None and journal.running() == []


def test_a_turn_of_a_deleted_thread_is_dropped(storage) -> None:
    store, journal = storage
    journal.begin(turn_id="m1", thread_id="t1", run="r1")
    store.delete_thread("t1")
    assert journal.running() == []
    journal.begin(turn_id="m9", thread_id="gone", run="r1")
    assert recover_interrupted_turns(store, journal) == []
    assert journal.running() == []


def test_a_retry_replaces_the_interrupted_entry(storage) -> None:
    store, journal = storage
    journal.begin(turn_id="m1", thread_id="t1", run="r1")
    recover_interrupted_turns(store, journal)
    assert journal.interrupted("t1", "m1") is not None
    journal.begin(turn_id="m1", thread_id="t1", run="r2")
    assert journal.interrupted("t1", "m1") is None
    journal.end("m1")
    assert journal.running() == []


@pytest.mark.parametrize(
    ("chunk_delay", "pieces"),
    [
        # Words 5 ms apart: the text goes out in timed pieces, all checkpointed.
        (0.005, "several"),
        # One burst: the last piece is still held back when the step ends, and goes out
        # once the step's message (which holds the whole text) is stored.
        (0.0, "one"),
    ],
)
async def test_every_piece_of_text_is_stored_before_it_is_sent(
    tmp_path: Path, chunk_delay: float, pieces: str
) -> None:
    checks: list[tuple[str, str]] = []
    service = None

    def stored_text(step: int) -> str:
        # Stored text of the step: its message once written, else the journal's checkpoints.
        assert service is not None
        answers = [m for m in service.store.history(thread) if m.role == "assistant"]
        if answers:
            return answers[-1].content
        entry = service.turns.journal.running()[0]
        return entry.partial if entry.step == step else ""

    def on_send(frame: dict) -> None:
        if frame["type"] != "text_delta":
            return
        seen = "".join(
            f["delta"]
            for f in sockets.frames
            if f["type"] == "text_delta" and f["step"] == frame["step"]
        )
        checks.append((seen, stored_text(frame["step"])))

    sockets = Sockets(on_send)
    words = [f"word{i} " for i in range(60 if pieces == "several" else 20)]
    with ScriptedModelServer() as model:
        async with httpx.AsyncClient() as http:
            service = build_chat_service(
                sql=object_sql(tmp_path / "o.sqlite"),
                hub=sockets,
                env={"MODEL_BASE_URL": model.base_url},
                http=http,
            )
            thread = service.store.create_thread("t1", None).id
            model.script(Reply(text=words, chunk_delay_seconds=chunk_delay))
            frame = {"type": "chat", "thread_id": thread, "message_id": "m1", "text": "go"}
            await service.handle_frame(sockets, json.dumps(frame))

    assert sockets.frames[-1]["type"] == "done"
    if pieces == "several":
        assert len(checks) > 3  # the stream went out in several pieces
    else:
        assert checks  # a burst under the size limit may go out as one piece
    assert all(seen == stored for seen, stored in checks), checks
    assert checks[-1][0] == "".join(words)
    # The turn ended: nothing left for a restart to recover.
    assert service.turns.journal.running() == []


async def test_a_resume_of_a_turn_a_restart_cut_off_is_answered_with_turn_interrupted(
    tmp_path: Path, storage
) -> None:
    _, journal = storage
    journal.begin(turn_id="m1", thread_id="t1", run="r1")
    journal.checkpoint("m1", 1, "PEPE is")
    sockets = Sockets()
    async with httpx.AsyncClient() as http:
        # The object starts again on the same file: its service recovers the turn.
        service = build_chat_service(
            sql=object_sql(tmp_path / "object.sqlite"),
            hub=sockets,
            env={"MODEL_BASE_URL": "http://127.0.0.1:9/v1"},
            http=http,
        )
        resume = {"type": "resume", "thread_id": "t1", "turn_id": "m1", "after_seq": 4}
        await service.handle_frame(sockets, json.dumps(resume))
        other = {"type": "resume", "thread_id": "t1", "turn_id": "m7", "after_seq": 0}
        await service.handle_frame(sockets, json.dumps(other))
    told, resync, only_resync = sockets.frames
    assert told == {
        "type": "turn_interrupted",
        "thread_id": "t1",
        "turn_id": "m1",
        "reason": "restart",
        "message": RESTART_MESSAGE,
        "retryable": True,
    }
    assert resync["type"] == only_resync["type"] == "resync"
    assert service.store.history("t1")[-1].content == "PEPE is"


def test_a_turn_storage_ended_is_stored_as_ended_by_storage_not_by_a_restart(storage) -> None:
    store, journal = storage
    journal.begin(turn_id="m1", thread_id="t1", run="r1")
    journal.checkpoint("m1", 1, "PEPE is ")
    # Storage refused the turn's end; its browser was told at once.
    journal.mark_unsaved("m1", "r1")
    assert journal.running() == [] and [e.state for e in journal.unended()] == ["unsaved"]

    assert [e.turn_id for e in recover_interrupted_turns(store, journal)] == ["m1"]
    last = store.history("t1")[-1]
    assert (last.content, last.status, last.finish_reason, last.meta["ended_by"]) == (
        "PEPE is ",
        "incomplete",
        "error",
        "storage",
    )
    # Not a restart: a resume of it is not told it was cut off, and nothing is left.
    assert journal.interrupted("t1", "m1") is None and journal.unended() == []
