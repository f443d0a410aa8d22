"""Chat end to end on both runtimes: real HTTP, real WebSocket, real SQLite storage."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.conformance.conftest import MAX_MESSAGE_CHARS
from tests.support.chat_client import ChatClient, answer_text
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall


def kinds(frames: list[dict]) -> list[str]:
    return [f["type"] for f in frames]


async def test_two_threads_with_a_tool_call_survive_a_runtime_restart(
    runtime: RuntimeProcess, model: ScriptedModelServer
) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        first = await client.new_thread("Tokens")
        second = await client.new_thread()

        model.script(
            Reply(
                tool_calls=[ScriptedToolCall(name="analyze_token", arguments={"symbol": "PEPE"})]
            ),
            Reply(text=["PEPE ", "is a ", "memecoin."]),
        )
        frames = await client.turn(first, "What is PEPE?")
        assert kinds(frames)[:4] == ["ack", "start", "tool_call", "tool_result"]
        tool_result = frames[3]
        assert tool_result["name"] == "analyze_token" and tool_result["ok"], tool_result
        assert "PEPE" in tool_result["content"]
        assert answer_text(frames) == "PEPE is a memecoin."
        assert frames[-1]["finish_reason"] == "stop" and frames[-1]["steps"] == 2
        # The model saw the tool's real output in the second step.
        assert model.requests[-1]["messages"][-1]["role"] == "tool"
        assert "PEPE" in model.requests[-1]["messages"][-1]["content"]

        model.script(Reply(text=["Second thread answer."]))
        frames = await client.turn(second, "Hello from thread two")
        assert answer_text(frames) == "Second thread answer."

        model.script(Reply(text=["Follow-up answer."]))
        await client.turn(first, "And its liquidity?")
        token = client.token

    runtime.restart()

    async with ChatClient(runtime.url, runtime.ws_url, token=token) as client:
        listing = (await client.http.get("/api/threads")).json()
        assert [t["id"] for t in listing["threads"]] == [first, second]
        one = await client.thread(first)
        assert [(m["role"], m["content"]) for m in one["messages"] if m["role"] != "tool"] == [
            ("user", "What is PEPE?"),
            ("assistant", ""),
            ("assistant", "PEPE is a memecoin."),
            ("user", "And its liquidity?"),
            ("assistant", "Follow-up answer."),
        ]
        roles = [m["role"] for m in one["messages"]]
        assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant"]
        assert one["messages"][1]["tool_calls"][0]["name"] == "analyze_token"
        assert one["messages"][2]["meta"]["arguments"] == {"symbol": "PEPE"}
        two = await client.thread(second)
        assert [m["content"] for m in two["messages"]] == [
            "Hello from thread two",
            "Second thread answer.",
        ]
        assert two["thread"]["title"] == "Hello from thread two"
        # The socket works after the restart too.
        await client.connect()
        model.script(Reply(text=["Still here."]))
        assert answer_text(await client.turn(second, "ping?")) == "Still here."


async def test_a_model_asking_for_tools_forever_stops_at_five_steps(
    runtime: RuntimeProcess, model: ScriptedModelServer
) -> None:
    loop_call = Reply(
        tool_calls=[ScriptedToolCall(name="search_feed", arguments={"query": "aave"})]
    )
    model.script(*[loop_call] * 4, Reply(tool_calls=loop_call.tool_calls, text=["Enough: "]))
    before = len(model.requests)
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        frames = await client.turn(thread, "loop forever")
    done = frames[-1]
    assert done["finish_reason"] == "step_limit" and done["steps"] == 5
    asked = model.requests[before:]
    assert len(asked) == 5
    assert ["tools" in body for body in asked] == [True, True, True, True, False]
    assert kinds(frames).count("tool_result") == 4
    assert answer_text(frames) == "Enough: "


async def test_two_clients_never_see_each_others_threads(runtime: RuntimeProcess, model) -> None:
    async with (
        ChatClient(runtime.url, runtime.ws_url) as alice,
        ChatClient(runtime.url, runtime.ws_url) as bob,
    ):
        secret = await alice.new_thread("Alice's plans")
        assert (await bob.http.get("/api/threads")).json()["threads"] == []
        assert (await bob.http.get(f"/api/threads/{secret}")).status_code == 404
        assert (
            await bob.http.patch(f"/api/threads/{secret}", json={"title": "x"})
        ).status_code == 404
        assert (await bob.http.delete(f"/api/threads/{secret}")).status_code == 404
        await bob.connect()
        await bob.ask(secret, "let me in")
        error = await bob.next_frame()
        assert error["type"] == "error" and error["code"] == "unknown_thread"
        assert (await alice.thread(secret))["messages"] == []


async def test_bad_input_gets_clear_errors_and_stores_nothing(
    runtime: RuntimeProcess, model
) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        cases = [
            ("{not json", "bad_frame"),
            (json.dumps({"type": "chat", "thread_id": thread}), "bad_frame"),
            (json.dumps({"type": "launch", "thread_id": thread}), "bad_frame"),
            (
                json.dumps(
                    {"type": "chat", "thread_id": "../etc", "message_id": "m1", "text": "x"}
                ),
                "bad_frame",
            ),
            (
                json.dumps(
                    {"type": "chat", "thread_id": "t_missing", "message_id": "m2", "text": "hi"}
                ),
                "unknown_thread",
            ),
            (
                json.dumps(
                    {
                        "type": "chat",
                        "thread_id": thread,
                        "message_id": "m3",
                        "text": "x" * (MAX_MESSAGE_CHARS + 1),
                    }
                ),
                "too_large",
            ),
            ("x" * 70_000, "too_large"),
            (b"\x00\xff binary junk", "bad_frame"),
        ]
        for raw, code in cases:
            await client.send_raw(raw)
            frame = await client.next_frame()
            assert frame["type"] == "error" and frame["code"] == code, (raw[:40], frame)
            assert frame["message"]
            # The socket stays usable after every bad frame.
            await client.send_raw(json.dumps({"type": "ping"}))
            assert (await client.next_frame())["type"] == "pong"
        assert (await client.thread(thread))["messages"] == []

    async with httpx.AsyncClient(base_url=runtime.url) as http:
        missing = await http.get("/api/threads")
        assert missing.status_code == 401 and "missing token" in missing.json()["detail"]
        forged = await http.get("/api/threads", headers={"authorization": "Bearer not.a-token"})
        assert forged.status_code == 401
    with pytest.raises(InvalidStatus) as refused:
        await connect(f"{runtime.ws_url}/api/chat", open_timeout=5)
    assert refused.value.response.status_code == 401


async def test_a_resent_message_is_stored_once(runtime: RuntimeProcess, model) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        model.script(Reply(text=["Once."]))
        await client.turn(thread, "hello", message_id="same-id-1")
        await client.ask(thread, "hello", message_id="same-id-1")
        ack = await client.next_frame()
        assert ack == {
            "type": "ack",
            "thread_id": thread,
            "message_id": "same-id-1",
            "duplicate": True,
        }
        other = await client.new_thread()
        await client.ask(other, "hello", message_id="same-id-1")
        assert (await client.next_frame())["code"] == "duplicate_id"
        messages = (await client.thread(thread))["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant"]


async def test_model_failure_keeps_the_message_and_a_retry_answers_it(runtime, model) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        model.script(Reply(status=429, retry_after=3))
        frames = await client.turn(thread, "rate limited?", message_id="retry-me")
        error = next(f for f in frames if f["type"] == "error")
        assert error["code"] == "rate_limited" and error["retryable"]
        assert frames[-1]["finish_reason"] == "error"
        model.script(Reply(text=["Answered on retry."]))
        frames = await client.turn(thread, "rate limited?", message_id="retry-me")
        assert answer_text(frames) == "Answered on retry."
        users = [m for m in (await client.thread(thread))["messages"] if m["role"] == "user"]
        assert len(users) == 1


async def test_a_cut_stream_keeps_the_partial_answer_marked_incomplete(runtime, model) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        model.script(Reply(text=["Partial ", "answer ", "never ends"], cut_after_chunks=3))
        frames = await client.turn(thread, "tell me a long story")
        assert answer_text(frames) == "Partial answer "
        error = next(f for f in frames if f["type"] == "error")
        assert error["code"] == "model_error" and error["retryable"]
        # Plain words for the user, the technical detail apart.
        assert "broke off" in error["message"] and "stream_cut" in error["detail"]
        last = (await client.thread(thread))["messages"][-1]
        assert (last["role"], last["content"], last["status"]) == (
            "assistant",
            "Partial answer ",
            "incomplete",
        )


async def test_a_busy_thread_refuses_a_second_message_and_cancel_keeps_partial(
    runtime, model
) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        model.script(Reply(text=["slow ", "words ", "here"], chunk_delay_seconds=0.5))
        turn = await client.ask(thread, "go slowly")
        await client.frames_until("text_delta")
        await client.ask(thread, "and another")
        busy = await client.frames_until("error")
        assert busy[-1]["code"] == "busy"
        await client.send_raw(json.dumps({"type": "cancel", "thread_id": thread}))
        frames = await client.frames_until("done", turn_id=turn)
        assert frames[-1]["finish_reason"] == "cancelled"
        await asyncio.sleep(0.1)
        last = (await client.thread(thread))["messages"][-1]
        assert last["status"] == "cancelled" and last["content"].startswith("slow")


async def test_thread_http_api_pages_renames_and_deletes(runtime, model) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        ids = [await client.new_thread(f"T{i}") for i in range(5)]
        page = (await client.http.get("/api/threads", params={"limit": 2})).json()
        assert [t["id"] for t in page["threads"]] == ids[::-1][:2]
        rest = (
            await client.http.get(
                "/api/threads", params={"limit": 10, "cursor": page["next_cursor"]}
            )
        ).json()
        assert [t["id"] for t in rest["threads"]] == ids[::-1][2:]
        assert rest["next_cursor"] is None
        renamed = await client.http.patch(f"/api/threads/{ids[0]}", json={"title": "  New   name "})
        assert renamed.json()["title"] == "New name"
        assert (
            await client.http.patch(f"/api/threads/{ids[0]}", json={"title": "x" * 500})
        ).status_code == 422
        assert (
            await client.http.patch(f"/api/threads/{ids[0]}", json={"name": "x"})
        ).status_code == 422
        assert (await client.http.get("/api/threads", params={"limit": 0})).status_code == 400
        assert (await client.http.get("/api/threads", params={"cursor": "%%%"})).status_code == 400
        assert (await client.http.delete(f"/api/threads/{ids[1]}")).status_code == 204
        assert (await client.http.get(f"/api/threads/{ids[1]}")).status_code == 404
        health = await client.http.get("/healthz")
        assert health.json() == {"ok": True}


async def test_the_page_is_told_what_answers(
    runtime: RuntimeProcess, model: ScriptedModelServer
) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        response = await client.http.get("/api/answerer")
        assert response.status_code == 200, response.text
        host = model.base_url.split("//", 1)[1].split("/", 1)[0]
        assert response.json() == {
            "kind": "model",
            "model": "gpt-4o-mini",
            "host": host,
            "text": f"Answers come from gpt-4o-mini at {host}.",
        }
        assert (await client.http.post("/api/answerer")).status_code == 405
    async with httpx.AsyncClient(base_url=runtime.url, timeout=10) as anonymous:
        assert (await anonymous.get("/api/answerer")).status_code == 401
