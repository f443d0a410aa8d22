"""Streams real providers sent, replayed byte for byte over a loopback HTTP server.

Each recording (fixtures/streams, with its provenance) goes through the real client in
pieces of several sizes, so where the network cuts a stream never matters. The classes
that broke the client before: parallel calls all at `index: 0` (Ollama), `content` as a
list of typed parts (Magistral), an error inside a `data:` chunk in vLLM's shape, a
stream of `[DONE]` and nothing else, a refusal in `delta.refusal`, and Workers AI's
`response` as a number or an object.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from albert.ai.model import (
    ChatMessage,
    ModelError,
    ModelEvent,
    ModelRequest,
    StepFinished,
    TextDelta,
    ToolCallRequest,
)
from albert.ai.openai_client import OpenAICompatibleClient
from albert.ai.tool_loop import ToolLoop
from albert.ai.workers_ai import WorkersAIClient
from albert.tools.base import LocalTool, ToolInput, ToolResult
from albert.tools.guard import ToolGuard
from albert.tools.registry import ToolRegistry
from tests.support.scripted_model import Reply, ScriptedModelServer

STREAMS = Path(__file__).parent / "fixtures" / "streams"
PIECES = (7, 64, 100_000)  # bytes per network read: mid-line, mid-event, all at once
# The key a gateway echoes back in vllm-error-object.sse: it must never reach the user.
ECHOED_KEY = "sk-live-0123456789abcdef"
REQUEST = ModelRequest(messages=[ChatMessage(role="user", content="hi")])


def recorded(name: str) -> bytes:
    return (STREAMS / name).read_bytes()


def payloads(name: str) -> Iterator[dict[str, Any]]:
    """The JSON of each data event of a recording (read here independently of the client)."""
    for line in recorded(name).decode().replace("\r\n", "\n").split("\n"):
        if line.startswith("data: ") and line[6:].strip() != "[DONE]":
            yield json.loads(line[6:])


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as model:
        yield model


async def replay(server: ScriptedModelServer, name: str, piece: int) -> list[ModelEvent]:
    server.script(Reply(recorded=recorded(name), piece_bytes=piece))
    async with httpx.AsyncClient() as http:
        client = OpenAICompatibleClient(
            http, base_url=server.base_url, api_key=ECHOED_KEY, model="recorded"
        )
        return [event async for event in client.stream(REQUEST)]


def text_of(events: list[ModelEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def calls_of(events: list[ModelEvent]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (e.call.id, e.call.name, json.loads(e.call.arguments))
        for e in events
        if isinstance(e, ToolCallRequest)
    ]


def finish_of(events: list[ModelEvent]) -> StepFinished:
    [finished] = [e for e in events if isinstance(e, StepFinished)]
    return finished


@pytest.mark.parametrize("piece", PIECES)
async def test_parallel_calls_that_all_say_index_0_stay_separate_calls(server, piece) -> None:
    events = await replay(server, "ollama-parallel-index0.sse", piece)
    sent = [
        part
        for chunk in payloads("ollama-parallel-index0.sse")
        for choice in chunk["choices"]
        for part in choice["delta"].get("tool_calls") or []
    ]
    assert {part["index"] for part in sent} == {0}  # what the provider really sends
    expected = [
        (p["id"], p["function"]["name"], json.loads(p["function"]["arguments"])) for p in sent
    ]
    assert calls_of(events) == expected
    assert finish_of(events).reason == "tool_calls"


@pytest.mark.parametrize("piece", PIECES)
async def test_parallel_calls_with_their_own_indices_still_assemble(server, piece) -> None:
    events = await replay(server, "openai-parallel-tool-calls.sse", piece)
    calls = calls_of(events)
    assert [name for _, name, _ in calls] == ["GetWeatherArgs", "get_stock_price"]
    assert len({call_id for call_id, _, _ in calls}) == 2
    assert all(isinstance(arguments, dict) and arguments for _, _, arguments in calls)


@pytest.mark.parametrize("piece", PIECES)
async def test_typed_content_parts_give_the_text_and_never_the_thinking(server, piece) -> None:
    events = await replay(server, "magistral-thinking.sse", piece)
    assert text_of(events) == "2 + 2 = 4"
    finished = finish_of(events)
    assert finished.reason == "stop" and finished.completion_tokens == 46


@pytest.mark.parametrize("piece", PIECES)
async def test_reasoning_content_is_never_the_answer(server, piece) -> None:
    events = await replay(server, "deepseek-reasoning.sse", piece)
    chunks = list(payloads("deepseek-reasoning.sse"))
    answer = "".join(
        c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices")
    )
    reasoning = "".join(
        c["choices"][0]["delta"].get("reasoning_content") or "" for c in chunks if c.get("choices")
    )
    assert answer and reasoning
    assert text_of(events) == answer


@pytest.mark.parametrize("piece", PIECES)
async def test_a_refusal_is_the_answer_and_the_step_ends_as_one(server, piece) -> None:
    events = await replay(server, "openai-refusal.sse", piece)
    assert text_of(events) == "I'm sorry, I can't assist with that request."
    finished = finish_of(events)
    assert finished.reason == "refusal"
    # The usage came in a final chunk with no choices.
    assert finished.prompt_tokens > 0 and finished.completion_tokens > 0


@pytest.mark.parametrize("piece", PIECES)
async def test_crlf_and_keep_alive_comments_change_nothing(server, piece) -> None:
    events = await replay(server, "openai-text-crlf-pings.sse", piece)
    assert text_of(events) == "Foo!"
    assert finish_of(events).reason == "stop"


@pytest.mark.parametrize("piece", PIECES)
async def test_an_error_object_in_vllms_shape_fails_the_step_redacted(server, piece) -> None:
    seen: list[ModelEvent] = []
    with pytest.raises(ModelError) as failed:
        server.script(Reply(recorded=recorded("vllm-error-object.sse"), piece_bytes=piece))
        async with httpx.AsyncClient() as http:
            client = OpenAICompatibleClient(
                http, base_url=server.base_url, api_key=ECHOED_KEY, model="recorded"
            )
            async for event in client.stream(REQUEST):
                seen.append(event)
    assert "KV cache" in str(failed.value) and ECHOED_KEY not in str(failed.value)
    assert text_of(seen) == "The "  # what came before the error is still the answer's
    assert not any(isinstance(e, StepFinished) for e in seen)


@pytest.mark.parametrize("piece", PIECES)
async def test_an_error_after_keep_alive_comments_fails_the_step(server, piece) -> None:
    seen: list[ModelEvent] = []
    with pytest.raises(ModelError) as failed:
        server.script(Reply(recorded=recorded("openrouter-midstream-error.sse"), piece_bytes=piece))
        async with httpx.AsyncClient() as http:
            client = OpenAICompatibleClient(
                http, base_url=server.base_url, api_key="k", model="recorded"
            )
            async for event in client.stream(REQUEST):
                seen.append(event)
    assert "Provider returned error" in str(failed.value)
    assert text_of(seen) == "Aave v3"


async def test_a_stream_of_done_and_nothing_else_is_a_failure_not_an_empty_answer(
    server,
) -> None:
    with pytest.raises(ModelError) as failed:
        await replay(server, "done-only.sse", 100_000)
    assert failed.value.kind == "bad_response"
    assert "without a single chunk" in str(failed.value)


class RecordedBinding:
    """The AI binding as albert.cloudflare.ai hands it over: the stream's bytes."""

    def __init__(self, body: bytes, piece: int) -> None:
        self._body = body
        self._piece = piece

    async def run(self, model: str, inputs: dict[str, Any], *, stream: bool) -> Any:
        async def pieces() -> AsyncIterator[bytes]:
            for start in range(0, len(self._body), self._piece):
                yield self._body[start : start + self._piece]

        return pieces()


@pytest.mark.parametrize("piece", PIECES)
async def test_workers_ai_responses_that_are_objects_or_numbers_are_shown(piece) -> None:
    binding = RecordedBinding(recorded("workers-ai-response-object.sse"), piece)
    client = WorkersAIClient(binding, model="@cf/meta/llama-3.3-70b-instruct-fp8-fast")
    events = [event async for event in client.stream(REQUEST)]
    text = text_of(events)
    assert json.loads(text[: text.index("}") + 1]) == {"name": "India", "capital": "New Delhi"}
    assert text.endswith("42")
    assert finish_of(events).completion_tokens == 12


class _File(ToolInput):
    filePath: str
    content: str


async def test_the_tool_loop_runs_each_of_the_parallel_calls_a_provider_numbered_0(
    server,
) -> None:
    written: list[str] = []

    async def write(args: _File) -> ToolResult:
        written.append(args.filePath)
        return ToolResult.text(f"wrote {args.filePath}")

    tool = LocalTool("file_write", "Write content to a file", _File, write)
    server.script(
        Reply(recorded=recorded("ollama-parallel-index0.sse"), piece_bytes=64),
        Reply(text=["Both files are written."]),
    )
    async with httpx.AsyncClient() as http:
        model = OpenAICompatibleClient(http, base_url=server.base_url, api_key="k", model="m")
        loop = ToolLoop(model, ToolGuard(timeout_seconds=5, max_chars=50_000), max_steps=5)
        result = await loop.run(REQUEST.messages, ToolRegistry([tool]), _Silent())
    assert sorted(written) == ["hello.py", "world.py"]
    assert result.text == "Both files are written."
    # The model's second step saw both calls' results.
    tool_messages = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert sorted(m["content"] for m in tool_messages if "wrote" in m["content"]) != []
    assert len(tool_messages) == 2


class _Silent:
    """A turn observer that keeps nothing."""

    async def on_text(self, step: int, delta: str) -> None: ...

    async def on_step_end(self, step, text, calls, finish_reason) -> None: ...

    async def on_tool_call(self, step, call, arguments, source) -> None: ...

    def on_tool_progress(self, step, call, progress, total, message) -> None: ...

    async def on_tool_result(self, step, call, outcome, source) -> None: ...
