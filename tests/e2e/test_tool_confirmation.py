"""The confirmation round trip through the local runtime's WebSocket, with the scripted
model and a real `mcp` SDK server whose `delete_file` is annotated destructive: the turn
asks, waits, survives a reconnect (the question is replayed by `resume`), and runs the
tool only on a yes sent from whichever socket of the client answers."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.chat_client import ChatClient
from tests.support.mcp_test_server import InProcessMcpServer
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall

DELETE = ScriptedToolCall(name="delete_file", arguments={"path": "/reports/q3.csv"})


@pytest.fixture(scope="module")
def files() -> Iterator[InProcessMcpServer]:
    with InProcessMcpServer("destructive") as server:
        yield server


async def _client(runtime: RuntimeProcess, files: InProcessMcpServer) -> ChatClient:
    client = await ChatClient(runtime.url, runtime.ws_url).__aenter__()
    added = await client.http.post("/api/mcp/servers", json={"name": "files", "url": files.url})
    assert added.status_code == 201, added.text
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        servers = (await client.http.get("/api/mcp/status")).json()["servers"]
        if any(s["name"] == "files" and s["state"] == "ready" for s in servers):
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError(f"files never ready: {servers}")
    await client.connect()
    return client


def _confirm(asked: dict[str, Any], approved: bool) -> str:
    return json.dumps(
        {
            "type": "confirm",
            "thread_id": asked["thread_id"],
            "turn_id": asked["turn_id"],
            "call_id": asked["call_id"],
            "approved": approved,
        }
    )


async def test_the_question_survives_a_reconnect_and_a_yes_from_the_new_socket_runs_it(
    runtime: RuntimeProcess, model: ScriptedModelServer, files: InProcessMcpServer
) -> None:
    files.served.clear()
    client = await _client(runtime, files)
    try:
        thread = await client.new_thread()
        model.script(Reply(text=["Deleting. "], tool_calls=[DELETE]), Reply(text=["Gone."]))
        turn_id = await client.ask(thread, "delete the q3 report")
        before = await client.frames_until("confirm_tool", turn_id=turn_id)
        asked = before[-1]
        assert (asked["server"], asked["tool"]) == ("files", "delete_file")
        assert json.loads(asked["arguments"]) == {"path": "/reports/q3.csv"}
        # The browser drops off while the question is open; nothing runs meanwhile.
        assert client.ws is not None
        await client.ws.close()
        await asyncio.sleep(0.3)
        assert files.served["delete_file"] == 0
        await client.connect()
        await client.send_raw(
            json.dumps({"type": "resume", "thread_id": thread, "turn_id": turn_id, "after_seq": 0})
        )
        replayed = await client.frames_until("resync")
        assert replayed[-1]["running"] is True
        [again] = [f for f in replayed if f["type"] == "confirm_tool"]
        assert again == asked  # the same question, same seq, from the turn's record
        await client.send_raw(_confirm(again, approved=True))
        rest = await client.frames_until("done", turn_id=turn_id)
        kinds = [f["type"] for f in rest]
        assert kinds.index("tool_decision") < kinds.index("tool_result")
        [result] = [f for f in rest if f["type"] == "tool_result"]
        assert result["ok"] and "delete_file done" in result["content"]
        assert rest[-1]["finish_reason"] == "stop"
        assert files.served["delete_file"] == 1
        # A second yes to the settled call is refused and runs nothing.
        await client.send_raw(_confirm(again, approved=True))
        refused = await client.next_frame()
        assert refused["type"] == "error" and refused["code"] == "nothing_to_confirm"
        assert files.served["delete_file"] == 1
    finally:
        await client.__aexit__(None, None, None)


async def test_a_no_is_kept_with_the_thread_and_the_tool_never_runs(
    runtime: RuntimeProcess, model: ScriptedModelServer, files: InProcessMcpServer
) -> None:
    files.served.clear()
    client = await _client(runtime, files)
    other = ChatClient(runtime.url, runtime.ws_url, token=client.token)
    await other.__aenter__()
    try:
        await other.connect()
        thread = await client.new_thread()
        model.script(Reply(tool_calls=[DELETE]), Reply(text=["Left it in place, as you asked."]))
        turn_id = await client.ask(thread, "delete the q3 report")
        # Both tabs of the client are asked; the second one answers.
        asked = (await other.frames_until("confirm_tool", turn_id=turn_id))[-1]
        await other.send_raw(_confirm(asked, approved=False))
        frames = await client.frames_until("done", turn_id=turn_id)
        [decision] = [f for f in frames if f["type"] == "tool_decision"]
        assert decision["decision"] == "declined"
        [result] = [f for f in frames if f["type"] == "tool_result"]
        assert not result["ok"] and "declined to run delete_file" in result["content"]
        assert frames[-1]["finish_reason"] == "stop"
        assert "declined" in model.requests[-1]["messages"][-1]["content"]
        assert files.served["delete_file"] == 0
        # A reloaded thread shows what was decided.
        stored = await client.thread(thread)
        [tool] = [m for m in stored["messages"] if m["role"] == "tool"]
        assert tool["meta"]["confirmation"] == "declined" and tool["status"] == "error"
    finally:
        await other.__aexit__(None, None, None)
        await client.__aexit__(None, None, None)
