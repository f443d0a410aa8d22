"""A remote tool its server marks destructive runs only after the user says yes.

The chat service runs in-process on a real SQLite file, against the scripted model server
over real HTTP/SSE and a real `mcp` SDK server (its `delete_file` is annotated
`destructiveHint: true` and counts the calls it serves); the socket is a list of frames.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from albert.chat.confirmations import display_arguments
from albert.chat.service import ChatService
from miniflare import install_shims
from tests.support.chat_service import chat_service
from tests.support.mcp_test_server import InProcessMcpServer
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall
from tests.support.sockets import RecordingSockets

install_shims()

DELETE = ScriptedToolCall(name="delete_file", arguments={"path": "/reports/q3.csv"})


@pytest.fixture(scope="module")
def files() -> Iterator[InProcessMcpServer]:
    with InProcessMcpServer("destructive") as server:
        yield server


@pytest.fixture
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


class Chat:
    """One client's service with its recorded socket, and helpers to drive a turn."""

    def __init__(self, service: ChatService, sockets: RecordingSockets) -> None:
        self.service = service
        self.sockets = sockets
        self.thread = service.store.create_thread("t_files", None).id

    async def send(self, frame: dict[str, Any]) -> None:
        await self.service.handle_frame(self.sockets, json.dumps(frame))

    def start(self, message_id: str, text: str = "clean up") -> asyncio.Task[None]:
        """Start a turn; it runs until done while the test answers its questions."""
        frame = {"type": "chat", "thread_id": self.thread, "message_id": message_id, "text": text}
        return asyncio.create_task(self.send(frame))

    async def asked(self, count: int = 1, timeout: float = 15.0) -> list[dict[str, Any]]:
        """The confirm_tool frames, once `count` of them have been sent (bounded)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            asked = self.of("confirm_tool")
            if len(asked) >= count:
                return asked
            await asyncio.sleep(0.01)
        raise AssertionError(f"not asked {count} times; frames: {self.kinds()}")

    async def answer(self, frame: dict[str, Any], approved: bool) -> None:
        await self.send(
            {
                "type": "confirm",
                "thread_id": frame["thread_id"],
                "turn_id": frame["turn_id"],
                "call_id": frame["call_id"],
                "approved": approved,
            }
        )

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.sockets.frames if f["type"] == kind]

    def kinds(self) -> list[str]:
        return [f["type"] for f in self.sockets.frames if f["type"] != "mcp_status"]

    def tool_messages(self) -> list[Any]:
        messages, _ = self.service.store.list_messages(self.thread, 200)
        return [m for m in messages if m.role == "tool"]


@asynccontextmanager
async def open_chat(
    tmp_path: Path,
    model: ScriptedModelServer,
    files: InProcessMcpServer,
    **settings: str,
) -> AsyncIterator[Chat]:
    """A service against the scripted model and the files server, with `settings` on top."""
    files.served.clear()
    async with chat_service(tmp_path / "o.sqlite", model, files, "files", **settings) as built:
        yield Chat(*built)


@pytest.fixture
async def chat(
    tmp_path: Path, model: ScriptedModelServer, files: InProcessMcpServer
) -> AsyncIterator[Chat]:
    async with open_chat(tmp_path, model, files, TOOL_CONFIRM_TIMEOUT_SECONDS="10") as chat:
        yield chat


def _script_delete(model: ScriptedModelServer) -> None:
    model.script(
        Reply(text=["Deleting it. "], tool_calls=[DELETE]),
        Reply(text=["Finished."]),
    )


async def test_an_approved_call_runs_once_and_the_answer_is_stored(
    chat: Chat, model: ScriptedModelServer, files: InProcessMcpServer
) -> None:
    _script_delete(model)
    turn = chat.start("m1")
    [asked] = await chat.asked()
    # The question names the server, the tool and what would be sent; nothing ran yet.
    assert asked["server"] == "files" and asked["tool"] == "delete_file"
    assert json.loads(asked["arguments"]) == {"path": "/reports/q3.csv"}
    assert asked["timeout_seconds"] == 10 and not asked["arguments_cut"]
    assert files.served["delete_file"] == 0
    await chat.answer(asked, approved=True)
    await asyncio.wait_for(turn, 15)

    assert files.served["delete_file"] == 1
    kinds = chat.kinds()
    assert kinds.index("tool_call") < kinds.index("confirm_tool") < kinds.index("tool_decision")
    assert kinds.index("tool_decision") < kinds.index("tool_result")
    [decision] = chat.of("tool_decision")
    assert decision["decision"] == "approved" and decision["call_id"] == asked["call_id"]
    [result] = chat.of("tool_result")
    assert result["ok"] and result["content"] == "delete_file done: /reports/q3.csv [destructive]"
    done = chat.of("done")[-1]
    assert done["finish_reason"] == "stop" and done["steps"] == 2
    # The decision is stored with the call's tool message, for a reloaded thread.
    [stored] = chat.tool_messages()
    assert stored.meta["confirmation"] == "approved" and stored.status == "complete"


async def test_a_declined_call_never_reaches_the_server_and_the_model_is_told(
    chat: Chat, model: ScriptedModelServer, files: InProcessMcpServer
) -> None:
    _script_delete(model)
    turn = chat.start("m1")
    [asked] = await chat.asked()
    await chat.answer(asked, approved=False)
    await asyncio.wait_for(turn, 15)

    assert files.served["delete_file"] == 0
    [decision] = chat.of("tool_decision")
    assert decision["decision"] == "declined"
    [result] = chat.of("tool_result")
    assert not result["ok"] and "The user declined to run delete_file" in result["content"]
    # The loop went on: the model read why, and answered.
    told = model.requests[-1]["messages"][-1]
    assert told["role"] == "tool" and "declined" in told["content"]
    assert chat.of("done")[-1]["finish_reason"] == "stop"
    [stored] = chat.tool_messages()
    assert stored.meta["confirmation"] == "declined" and stored.status == "error"
    # The call is settled: answering it again is refused, with a reason.
    await chat.answer(asked, approved=True)
    refused = chat.sockets.frames[-1]
    assert refused["type"] == "error" and refused["code"] == "nothing_to_confirm"
    assert files.served["delete_file"] == 0


async def test_no_answer_in_time_means_the_tool_does_not_run(
    tmp_path: Path, model: ScriptedModelServer, files: InProcessMcpServer
) -> None:
    async with open_chat(tmp_path, model, files, TOOL_CONFIRM_TIMEOUT_SECONDS="0.4") as chat:
        _script_delete(model)
        await asyncio.wait_for(chat.start("m1"), 15)
        assert files.served["delete_file"] == 0
        [decision] = chat.of("tool_decision")
        assert decision["decision"] == "timeout"
        [result] = chat.of("tool_result")
        assert not result["ok"]
        assert result["content"].startswith("No confirmation within 0.4 s; delete_file")
        assert chat.of("done")[-1]["finish_reason"] == "stop"
        [stored] = chat.tool_messages()
        assert stored.meta["confirmation"] == "timeout"


async def test_a_cancel_during_the_wait_ends_the_turn_without_running_the_tool(
    chat: Chat, model: ScriptedModelServer, files: InProcessMcpServer
) -> None:
    _script_delete(model)
    turn = chat.start("m1")
    [asked] = await chat.asked()
    await chat.send({"type": "cancel", "thread_id": chat.thread})
    await asyncio.wait_for(turn, 15)
    assert chat.of("done")[-1]["finish_reason"] == "cancelled"
    assert files.served["delete_file"] == 0
    assert chat.tool_messages() == []
    # The question went with the turn: a late answer runs nothing.
    await chat.answer(asked, approved=True)
    assert chat.sockets.frames[-1]["code"] == "nothing_to_confirm"
    await asyncio.sleep(0.2)
    assert files.served["delete_file"] == 0


async def test_the_turn_bound_is_held_while_the_user_thinks(
    tmp_path: Path, model: ScriptedModelServer, files: InProcessMcpServer
) -> None:
    async with open_chat(tmp_path, model, files, TURN_TIMEOUT_SECONDS="1.5") as chat:
        # Connect first: the wait for the server counts against the turn's bound.
        model.script(Reply(text=["hi"]))
        await asyncio.wait_for(chat.start("m0", "hello"), 15)
        _script_delete(model)
        turn = chat.start("m1")
        [asked] = await chat.asked()
        await asyncio.sleep(2.0)  # longer than the whole turn may take
        await chat.answer(asked, approved=True)
        await asyncio.wait_for(turn, 15)
        assert chat.of("done")[-1]["finish_reason"] == "stop"
        assert files.served["delete_file"] == 1
        # ...and the bound still holds once the answer is in: a stall after it times out.
        model.script(
            Reply(text=["Deleting. "], tool_calls=[DELETE]),
            Reply(text=["slow"], delay_seconds=3.0),
        )
        turn = chat.start("m2")
        [_, again] = await chat.asked(2)
        await chat.answer(again, approved=True)
        await asyncio.wait_for(turn, 15)
        assert chat.of("done")[-1]["finish_reason"] == "timeout"
        assert files.served["delete_file"] == 2


async def test_calls_in_one_step_are_asked_separately(
    chat: Chat, model: ScriptedModelServer, files: InProcessMcpServer
) -> None:
    other = ScriptedToolCall(name="delete_file", arguments={"path": "/reports/q4.csv"})
    model.script(Reply(tool_calls=[DELETE, other]), Reply(text=["Done."]))
    turn = chat.start("m1")
    first, second = await chat.asked(2)
    assert first["call_id"] != second["call_id"]
    await chat.answer(second, approved=False)
    await chat.answer(first, approved=True)
    await asyncio.wait_for(turn, 15)
    assert files.served["delete_file"] == 1
    by_call = {f["call_id"]: f["decision"] for f in chat.of("tool_decision")}
    assert by_call == {first["call_id"]: "approved", second["call_id"]: "declined"}
    assert {m.meta["arguments"]["path"]: m.meta["confirmation"] for m in chat.tool_messages()} == {
        "/reports/q3.csv": "approved",
        "/reports/q4.csv": "declined",
    }


async def test_calls_given_one_id_by_the_model_are_asked_about_each_on_its_own(
    chat: Chat, model: ScriptedModelServer, files: InProcessMcpServer
) -> None:
    # The answer names a call by its id: one id for two calls would have one answer
    # settle both while the card showed one of them (and the second result was stored
    # over the first, failing the turn). Within a step, and across steps of the turn.
    harmless = ScriptedToolCall(name="append_line", arguments={"path": "/log"}, id="same")
    hidden = ScriptedToolCall(name="delete_file", arguments={"path": "/everything"}, id="same")
    again = ScriptedToolCall(name="delete_file", arguments={"path": "/more"}, id="same")
    model.script(
        Reply(tool_calls=[harmless, hidden]), Reply(tool_calls=[again]), Reply(text=["Done."])
    )
    turn = chat.start("m1")
    [first] = await chat.asked()
    assert first["tool"] == "delete_file" and json.loads(first["arguments"]) == {
        "path": "/everything"
    }
    calls = {f["call_id"]: f["name"] for f in chat.of("tool_call")}
    assert calls[first["call_id"]] == "delete_file" and len(calls) == 2
    await chat.answer(first, approved=False)
    _, second = await chat.asked(2)
    assert second["call_id"] not in calls
    assert json.loads(second["arguments"]) == {"path": "/more"}
    await chat.answer(second, approved=True)
    await asyncio.wait_for(turn, 15)
    assert files.served["delete_file"] == 1 and files.served["append_line"] == 1
    assert chat.of("done")[-1]["finish_reason"] == "stop"
    stored = chat.tool_messages()
    assert {m.meta["arguments"]["path"]: m.meta.get("confirmation") for m in stored} == {
        "/log": None,
        "/everything": "declined",
        "/more": "approved",
    }
    # What the model is sent back pairs each result with its own call.
    history = model.requests[-1]["messages"]
    asked_ids = [c["id"] for m in history if m.get("tool_calls") for c in m["tool_calls"]]
    answered = [m["tool_call_id"] for m in history if m["role"] == "tool"]
    assert len(set(asked_ids)) == 3 and sorted(asked_ids) == sorted(answered)


async def test_only_an_explicit_destructive_hint_asks(
    chat: Chat, model: ScriptedModelServer, files: InProcessMcpServer
) -> None:
    model.script(
        Reply(
            tool_calls=[
                # readOnlyHint wins over destructiveHint; destructiveHint false; no hints;
                # and a local platform tool.
                ScriptedToolCall(name="purge_cache"),
                ScriptedToolCall(name="append_line", arguments={"path": "/log"}),
                ScriptedToolCall(name="rename_file", arguments={"path": "/a"}),
                ScriptedToolCall(name="read_tool_result", arguments={"call_id": "x"}),
            ]
        ),
        Reply(text=["Done."]),
    )
    await asyncio.wait_for(chat.start("m1"), 15)
    assert chat.of("confirm_tool") == []
    assert files.served["purge_cache"] == files.served["append_line"] == 1
    assert files.served["rename_file"] == 1
    assert all("confirmation" not in m.meta for m in chat.tool_messages())


async def test_confirm_frames_that_name_nothing_get_clear_errors(chat: Chat) -> None:
    base = {"type": "confirm", "thread_id": chat.thread, "turn_id": "m9", "call_id": "c1"}
    await chat.send({**base, "approved": True})
    assert chat.sockets.frames[-1]["code"] == "nothing_to_confirm"
    assert "c1" in chat.sockets.frames[-1]["message"]
    await chat.send({**base, "thread_id": "t_nowhere", "approved": True})
    assert chat.sockets.frames[-1]["code"] == "unknown_thread"
    await chat.send(base)  # no answer in it
    bad = chat.sockets.frames[-1]
    assert bad["code"] == "bad_frame" and "approved" in bad["message"]
    await chat.send({**base, "approved": "sure"})
    assert chat.sockets.frames[-1]["code"] == "bad_frame"


def test_arguments_are_shown_with_every_hidden_character_escaped_and_bounded() -> None:
    sneaky = {"path": "/safe\u202e\u2066txt.exe\U000e0041", "note": "two\nlines", "n": 3}
    shown, cut = display_arguments(sneaky, 2_000)
    assert not cut and json.loads(shown) == sneaky  # exactly what would be sent
    assert "\\u202e" in shown and "\\u2066" in shown and "\\udb40\\udc41" in shown
    assert not any(ord(c) > 0x7E and not c.isprintable() for c in shown)
    assert "\\n" in shown and "two\nlines" not in shown
    long, cut = display_arguments({"text": "x" * 5_000}, 2_000)
    assert cut and long.startswith('{\n  "text": "xxx')
    # 5,016 characters of JSON ({, newline, indent, "text": and the quotes), 2,000 shown.
    assert long.endswith("(3,016 more characters not shown)")


def test_padding_cannot_push_the_rest_of_an_argument_out_of_the_card() -> None:
    # A long run of spaces (or any other space character) inside a value would wrap the
    # card's text into blank lines and hide what follows; each shows as an escape.
    padded = {
        "path": "/tmp/cache" + " " * 300 + "/../../home",
        "wide": "a\u3000\u2003\u00a0b",
        "quoted": 'say "   " \\   x',
        "nested": {"list": ["a  b", 1]},
    }
    shown, cut = display_arguments(padded, 2_000)
    assert not cut and json.loads(shown) == padded
    assert '"/tmp/cache  \\u0020\\u0020' in shown
    assert all("   " not in line.lstrip(" ") for line in shown.splitlines())
    assert '"a\\u3000\\u2003\\u00a0b"' in shown
    assert '"a  b"' in shown  # two spaces are text, as is the indentation
    assert '\n  "nested": {\n    "list": [' in shown


async def test_a_call_id_too_long_for_the_confirm_frame_is_replaced_and_can_be_confirmed(
    chat: Chat, model: ScriptedModelServer, files: InProcessMcpServer
) -> None:
    # The confirm frame takes ids up to 1,024 characters: kept as the model made it, this
    # call could never be approved, only time out.
    long = ScriptedToolCall(name="delete_file", arguments={"path": "/a"}, id="k" * 5_000)
    model.script(Reply(tool_calls=[long]), Reply(text=["Done."]))
    turn = chat.start("m1")
    [asked] = await chat.asked()
    assert len(asked["call_id"]) <= 128
    await chat.answer(asked, approved=True)
    assert chat.sockets.frames[-1]["type"] != "error"
    await asyncio.wait_for(turn, 15)
    assert files.served["delete_file"] == 1
    [decision] = chat.of("tool_decision")
    assert decision["decision"] == "approved" and decision["call_id"] == asked["call_id"]
    [stored] = chat.tool_messages()
    assert stored.tool_call_id == asked["call_id"] and stored.meta["confirmation"] == "approved"
    # The model reads back the id it is now known by, on its call and on its result.
    history = model.requests[-1]["messages"]
    [sent] = [c["id"] for m in history if m.get("tool_calls") for c in m["tool_calls"]]
    [answered] = [m["tool_call_id"] for m in history if m["role"] == "tool"]
    assert sent == answered == asked["call_id"]


async def test_calls_over_the_per_step_setting_are_not_asked_about_or_run(
    tmp_path: Path, model: ScriptedModelServer, files: InProcessMcpServer
) -> None:
    deletes = [ScriptedToolCall(name="delete_file", arguments={"path": f"/{i}"}) for i in range(5)]
    async with open_chat(tmp_path, model, files, MAX_TOOL_CALLS_PER_STEP="2") as chat:
        model.script(Reply(tool_calls=deletes), Reply(text=["Done."]))
        turn = chat.start("m1")
        first, second = await chat.asked(2)
        await chat.answer(first, approved=True)
        await chat.answer(second, approved=True)
        await asyncio.wait_for(turn, 15)
        assert len(chat.of("confirm_tool")) == 2 and files.served["delete_file"] == 2
        results = chat.of("tool_result")
        assert len(results) == 5 and sum(r["ok"] for r in results) == 2
        refused = [r["content"] for r in results if not r["ok"]]
        assert all("one step may call at most 2 tools" in c for c in refused)
        assert chat.of("done")[-1]["finish_reason"] == "stop"
        assert len(chat.tool_messages()) == 5


async def test_analytics_counts_unconfirmed_calls_apart_from_failures(
    tmp_path: Path, model: ScriptedModelServer, files: InProcessMcpServer
) -> None:
    events_log = tmp_path / "events.jsonl"
    paths = ["/yes", "/no", "/unanswered"]
    deletes = [ScriptedToolCall(name="delete_file", arguments={"path": p}) for p in paths]
    broken = ScriptedToolCall(name="delete_file", raw_arguments="{not json")
    async with open_chat(
        tmp_path,
        model,
        files,
        TOOL_CONFIRM_TIMEOUT_SECONDS="1.5",
        ANALYTICS_LOG_PATH=str(events_log),
    ) as chat:
        model.script(Reply(tool_calls=[*deletes, broken]), Reply(text=["Done."]))
        turn = chat.start("m1")
        asked = {json.loads(f["arguments"])["path"]: f for f in await chat.asked(3)}
        await chat.answer(asked["/yes"], approved=True)
        await chat.answer(asked["/no"], approved=False)
        await asyncio.wait_for(turn, 15)
    outcomes: list[tuple[bool, str]] = []
    for _ in range(100):
        lines = events_log.read_text().splitlines() if events_log.exists() else []
        events = [json.loads(line) for line in lines]
        outcomes = sorted(
            (e["event_properties"]["ok"], e["event_properties"]["outcome"])
            for e in events
            if e["event_type"] == "tool_invoked"
        )
        if len(outcomes) == 4:
            break
        await asyncio.sleep(0.05)
    # Not confirmed is not a failure of the tool: each has its own outcome (and ok stays
    # false, as before, for whoever counts on it).
    assert outcomes == [(False, "declined"), (False, "failed"), (False, "timeout"), (True, "ok")]
