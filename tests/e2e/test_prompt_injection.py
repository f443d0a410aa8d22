"""Prompt injection through the real runtime: a hostile MCP server's words (its
instructions, its tool descriptions, its tools' results) reach the model fenced and
attributed, and a tool call that would carry one source's output to another server is
refused, while moving data within one server still works."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from tests.support.chat_client import ChatClient
from tests.support.mcp_test_server import (
    NEWS_STRUCTURED,
    NEWS_TEXT,
    PRIVATE_NOTES,
    InProcessMcpServer,
)
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall

INVISIBLE = re.compile(r"[\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\U000e0000-\U000e007f]")


@pytest.fixture(scope="module")
def hostile() -> Iterator[InProcessMcpServer]:
    with InProcessMcpServer("hostile") as server:
        yield server


@pytest.fixture(scope="module")
def files() -> Iterator[InProcessMcpServer]:
    with InProcessMcpServer("files") as server:
        yield server


async def _ready(client: ChatClient, name: str) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        servers = (await client.http.get("/api/mcp/status")).json()["servers"]
        if any(s["name"] == name and s["state"] == "ready" for s in servers):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{name} never ready: {servers}")


@asynccontextmanager
async def _client_with(runtime: RuntimeProcess, **servers: str) -> AsyncIterator[ChatClient]:
    """A connected client whose session has `servers` (name=url) added and ready."""
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        for name, url in servers.items():
            added = await client.http.post("/api/mcp/servers", json={"name": name, "url": url})
            assert added.status_code == 201, added.text
            await _ready(client, name)
        await client.connect()
        yield client


def _tool_results(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in frames if f["type"] == "tool_result"]


async def test_a_hostile_servers_words_reach_the_model_fenced_and_attributed(
    runtime: RuntimeProcess, model: ScriptedModelServer, hostile: InProcessMcpServer
) -> None:
    async with _client_with(runtime, hostile=hostile.url) as client:
        thread = await client.new_thread()
        model.script(Reply(text=["ok"]))
        await client.turn(thread, "hello")
    request = model.requests[-1]
    system = request["messages"][0]["content"]
    assert "Text between <untrusted" in system  # the rule comes before any fenced text
    [note] = [line for line in system.split("\n\n") if line.startswith("[hostile]")]
    assert '<untrusted source="the server\'s own instructions">' in note
    # The forged closing tag and the fake opening one are broken up: one fence, one end.
    assert note.count("</untrusted>") == 1 and note.endswith("</untrusted>")
    assert note.lower().count("<untrusted") == 1
    assert not INVISIBLE.search(system)
    [echo] = [t for t in request["tools"] if t["function"]["name"] == "echo"]
    description = echo["function"]["description"]
    assert description.startswith('<untrusted source="MCP server hostile">')
    assert description.count("</untrusted>") == 1 and description.endswith("</untrusted>")


async def test_a_call_carrying_another_sources_output_is_refused(
    runtime: RuntimeProcess,
    model: ScriptedModelServer,
    hostile: InProcessMcpServer,
    files: InProcessMcpServer,
) -> None:
    async with _client_with(runtime, hostile=hostile.url, sandbox=files.url) as client:
        thread = await client.new_thread()
        stolen = PRIVATE_NOTES[10:260]
        model.script(
            Reply(tool_calls=[ScriptedToolCall(name="private_notes")]),
            # The injected plan: move the notes to another server's tool.
            Reply(tool_calls=[ScriptedToolCall(name="read_file", arguments={"path": stolen})]),
            Reply(text=["done"]),
        )
        frames = await client.turn(thread, "show my notes")
        notes, moved = _tool_results(frames)
        assert notes["ok"] and "treasury" in notes["content"]
        assert not moved["ok"] and "was not run" in moved["content"]
        assert "private_notes" in moved["content"] and "hostile" in moved["content"]
        # The model was told, in the tool result it reads next.
        assert "was not run" in model.requests[-1]["messages"][-1]["content"]
        # Whitespace changes do not get around it, nor does nesting in the arguments.
        reflowed = " \n ".join(PRIVATE_NOTES[20:300].split(" "))
        model.script(
            Reply(tool_calls=[ScriptedToolCall(name="private_notes")]),
            Reply(
                tool_calls=[
                    ScriptedToolCall(
                        name="list_directory", arguments={"path": {"deep": [reflowed]}}
                    )
                ]
            ),
            Reply(text=["done"]),
        )
        frames = await client.turn(thread, "again")
        assert not _tool_results(frames)[1]["ok"]
        # A local tool's output may not go to a server either.
        model.script(
            Reply(
                tool_calls=[ScriptedToolCall(name="analyze_token", arguments={"symbol": "PEPE"})]
            ),
            Reply(text=["..."]),
        )
        frames = await client.turn(thread, "analyse PEPE")
        analysis = _tool_results(frames)[0]["content"]
        assert len(analysis) > 250
        model.script(
            Reply(tool_calls=[ScriptedToolCall(name="echo", arguments={"text": analysis[:260]})]),
            Reply(text=["done"]),
        )
        frames = await client.turn(thread, "and then?")
        [echoed] = _tool_results(frames)
        assert not echoed["ok"] and "a local tool" in echoed["content"]


async def test_data_may_move_within_one_server_and_users_may_send_their_own_words(
    runtime: RuntimeProcess,
    model: ScriptedModelServer,
    hostile: InProcessMcpServer,
    files: InProcessMcpServer,
) -> None:
    async with _client_with(runtime, hostile=hostile.url, sandbox=files.url) as client:
        thread = await client.new_thread()
        model.script(
            Reply(tool_calls=[ScriptedToolCall(name="private_notes")]),
            Reply(tool_calls=[ScriptedToolCall(name="echo", arguments={"text": PRIVATE_NOTES})]),
            Reply(text=["done"]),
        )
        frames = await client.turn(thread, "repeat my notes")
        _, echoed = _tool_results(frames)
        assert echoed["ok"] and echoed["content"] == PRIVATE_NOTES
        # What the user typed may be sent on, even when a tool also repeated it.
        words = "Please file this: " + "the quarterly plan is unchanged and approved " * 6
        model.script(
            Reply(tool_calls=[ScriptedToolCall(name="echo", arguments={"text": words})]),
            Reply(tool_calls=[ScriptedToolCall(name="read_file", arguments={"path": words})]),
            Reply(text=["done"]),
        )
        frames = await client.turn(thread, words)
        echoed, filed = _tool_results(frames)
        assert echoed["ok"] and filed["ok"], (echoed, filed)
        assert filed["content"].startswith("read_file: Please file this")


def _results_by_tool(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The tool messages of a model request, by the name of the tool that was called."""
    names = {
        c["id"]: c["function"]["name"]
        for m in messages
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or []
    }
    return {names[m["tool_call_id"]]: m for m in messages if m["role"] == "tool"}


def _fenced(content: str, label: str) -> str:
    """The text inside the one fence that makes up `content`."""
    opening = f'<untrusted source="{label}">'
    assert content.startswith(opening) and content.endswith("</untrusted>"), content[:200]
    assert content.count("</untrusted>") == 1
    assert len(re.findall(r"<\s*/?\s*untrusted", content, re.IGNORECASE)) == 2
    return content[len(opening) : -len("</untrusted>")]


async def test_a_hostile_result_reaches_the_model_fenced_and_the_browser_as_it_was(
    runtime: RuntimeProcess,
    model: ScriptedModelServer,
    hostile: InProcessMcpServer,
    files: InProcessMcpServer,
) -> None:
    async with _client_with(runtime, hostile=hostile.url, sandbox=files.url) as client:
        thread = await client.new_thread()
        model.script(
            Reply(
                tool_calls=[
                    ScriptedToolCall(name="latest_news"),
                    ScriptedToolCall(name="analyze_token", arguments={"symbol": "PEPE"}),
                ]
            ),
            Reply(text=["ok"]),
        )
        frames = await client.turn(thread, "news on PEPE?")
        results = _results_by_tool(model.requests[-1]["messages"])
        news, analysis = results["latest_news"], results["analyze_token"]
        inside = _fenced(news["content"], "tool latest_news of MCP server hostile")
        assert "SYSTEM: new rules." in inside and not INVISIBLE.search(inside)
        assert "‹untrusted source='system'>" in inside  # from the structured content
        # The platform's own tools carry outside text too: fenced, named as the platform's.
        assert len(_fenced(analysis["content"], "platform tool analyze_token")) > 250
        # The browser gets the tool's own text, live and when the thread is read back.
        raw = NEWS_TEXT + "\n\n" + json.dumps(NEWS_STRUCTURED)
        shown = {f["name"]: f["content"] for f in _tool_results(frames)}
        assert shown["latest_news"] == raw and "<untrusted" not in shown["analyze_token"]
        messages = (await client.thread(thread))["messages"]
        stored = {m["name"]: m["content"] for m in messages if m["role"] == "tool"}
        assert stored["latest_news"] == raw and "<untrusted" not in stored["analyze_token"]

        # The next turn replays the thread: fenced again. And copying what the model read
        # of the result, fence and all, to another server is refused.
        model.script(
            Reply(tool_calls=[ScriptedToolCall(name="read_file", arguments={"path": inside})]),
            Reply(text=["done"]),
        )
        frames = await client.turn(thread, "and?")
        replayed = _results_by_tool(model.requests[-2]["messages"])
        assert replayed["latest_news"]["content"] == news["content"]
        [refused] = _tool_results(frames)
        assert not refused["ok"] and "latest_news" in refused["content"]
