"""The Workers AI model client over a scripted `AI` binding.

The streams below follow the two chunk formats Workers AI sends (its own
`{"response", "tool_calls", "usage"}` envelope and OpenAI chat-completion chunks),
as parsed by Cloudflare's own workers-ai-provider; they are written out by hand,
because no Workers AI call can be recorded from this machine.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from albert.ai.model import (
    ChatMessage,
    ChatToolCall,
    ModelError,
    ModelRequest,
    StepFinished,
    TextDelta,
    ToolCallRequest,
)
from albert.ai.workers_ai import WorkersAIClient
from albert.tools.base import ToolSpec

MODEL = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"


def sse(*payloads: Any) -> bytes:
    """Server-sent events, one `data:` line per payload."""
    out = []
    for payload in payloads:
        data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
        out.append(f"data: {data}\n\n")
    return "".join(out).encode()


def split(data: bytes, size: int) -> list[bytes]:
    """Cut bytes into fixed-size pieces (also through multi-byte characters)."""
    return [data[i : i + size] for i in range(0, len(data), size)]


class ScriptedAi:
    """An AiRunner that streams prepared bytes, or fails, and records its calls."""

    def __init__(self, chunks: list[bytes] | None = None, error: Exception | None = None) -> None:
        self.chunks = chunks or []
        self.error = error
        self.calls: list[tuple[str, dict[str, Any], bool]] = []
        self.hang = False

    async def run(self, model: str, inputs: dict[str, Any], *, stream: bool) -> Any:
        self.calls.append((model, inputs, stream))
        if self.hang:
            await asyncio.sleep(30)
        if self.error is not None:
            raise self.error

        async def body() -> AsyncIterator[bytes]:
            for chunk in self.chunks:
                await asyncio.sleep(0)
                yield chunk

        return body()


def request(tools: bool = False) -> ModelRequest:
    spec = ToolSpec(
        name="analyze_token",
        description="Risk and market data of one token.",
        parameters={
            "type": "object",
            "properties": {"address": {"type": "string", "description": "0x…"}},
            "required": ["address"],
        },
    )
    return ModelRequest(
        messages=[
            ChatMessage(role="system", content="You are Albert."),
            ChatMessage(role="user", content="Is 0xabc risky?"),
        ],
        tools=[spec] if tools else [],
    )


async def collect(client: WorkersAIClient, req: ModelRequest) -> list[Any]:
    return [event async for event in client.stream(req)]


async def test_native_text_stream_cut_anywhere_gives_the_whole_answer() -> None:
    body = sse(
        {"response": "Réponse: "},
        {"response": "pas de risque ✓"},
        {"response": "", "usage": {"prompt_tokens": 21, "completion_tokens": 7}},
        "[DONE]",
    )
    ai = ScriptedAi(split(body, 5))
    events = await collect(WorkersAIClient(ai, model=MODEL), request())
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "Réponse: pas de risque ✓"
    assert events[-1] == StepFinished(reason="stop", prompt_tokens=21, completion_tokens=7)
    [(model, inputs, stream)] = ai.calls
    assert model == MODEL and stream is True and inputs["stream"] is True


async def test_streamed_tool_call_deltas_and_the_null_sentinel() -> None:
    body = sse(
        {"response": "", "tool_calls": [{"index": 0, "id": "call_9", "type": "function",
                                          "function": {"name": "analyze_token"}}]},
        {"response": "", "tool_calls": [{"index": 0, "function": {"arguments": '{"addr'}}]},
        {"response": "", "tool_calls": [{"index": 0, "function": {"arguments": 'ess": "0xabc"}'}}]},
        {"response": "", "tool_calls": [{"id": None, "type": None, "function": {"name": None}}]},
        "[DONE]",
    )  # fmt: skip
    events = await collect(WorkersAIClient(ScriptedAi([body]), model=MODEL), request(True))
    calls = [e.call for e in events if isinstance(e, ToolCallRequest)]
    assert calls == [
        ChatToolCall(id="call_9", name="analyze_token", arguments='{"address": "0xabc"}')
    ]
    assert isinstance(events[-1], StepFinished) and events[-1].reason == "tool_calls"


async def test_whole_tool_calls_with_object_arguments() -> None:
    body = sse(
        {"response": "", "tool_calls": [
            {"name": "analyze_token", "arguments": {"address": "0xabc"}},
            {"name": "analyze_token", "arguments": {"address": "0xdef"}},
        ]},
        "[DONE]",
    )  # fmt: skip
    events = await collect(WorkersAIClient(ScriptedAi([body]), model=MODEL), request(True))
    calls = [e.call for e in events if isinstance(e, ToolCallRequest)]
    assert [json.loads(c.arguments)["address"] for c in calls] == ["0xabc", "0xdef"]
    assert [c.id for c in calls] == ["call_0", "call_1"]


async def test_openai_shaped_chunks() -> None:
    body = sse(
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Checking"}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "c1", "type": "function",
             "function": {"name": "analyze_token", "arguments": "{\"address\":"}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": " \"0xabc\"}"}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
         "usage": {"prompt_tokens": 50, "completion_tokens": 12}},
        "[DONE]",
    )  # fmt: skip
    events = await collect(WorkersAIClient(ScriptedAi([body]), model=MODEL), request(True))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Checking"]
    [call] = [e.call for e in events if isinstance(e, ToolCallRequest)]
    assert json.loads(call.arguments) == {"address": "0xabc"} and call.id == "c1"
    assert events[-1] == StepFinished(reason="tool_calls", prompt_tokens=50, completion_tokens=12)


async def test_a_stream_that_stops_early_is_a_cut_stream() -> None:
    ai = ScriptedAi([sse({"response": "Half an ans"})])
    with pytest.raises(ModelError) as caught:
        await collect(WorkersAIClient(ai, model=MODEL), request())
    assert caught.value.kind == "stream_cut" and caught.value.retryable


async def test_a_malformed_chunk_is_a_bad_response() -> None:
    ai = ScriptedAi([b"data: {not json\n\n"])
    with pytest.raises(ModelError) as caught:
        await collect(WorkersAIClient(ai, model=MODEL), request())
    assert caught.value.kind == "bad_response" and not caught.value.retryable


@pytest.mark.parametrize(
    ("message", "kind", "retryable"),
    [
        ("AiError: 3040: Capacity temporarily exceeded, please try again.", "rate_limited", True),
        ("AiError: 3036: Account limited: daily free allocation used", "rate_limited", True),
        ("AiError: 3043: Internal server error", "http", True),
        ("AiError: 5007: No such model @cf/nope or task", "http", False),
    ],
)
async def test_binding_errors_become_model_errors(message: str, kind: str, retryable: bool) -> None:
    ai = ScriptedAi(error=RuntimeError(message))
    with pytest.raises(ModelError) as caught:
        await collect(WorkersAIClient(ai, model=MODEL), request())
    assert caught.value.kind == kind and caught.value.retryable is retryable


async def test_a_binding_that_never_answers_times_out() -> None:
    ai = ScriptedAi()
    ai.hang = True
    with pytest.raises(ModelError) as caught:
        await collect(WorkersAIClient(ai, model=MODEL, timeout=0.05), request())
    assert caught.value.kind == "timeout"


def test_inputs_carry_the_conversation_and_the_tool_schemas_untouched() -> None:
    req = ModelRequest(
        messages=[
            ChatMessage(role="user", content="Is 0xabc risky?"),
            ChatMessage(
                role="assistant",
                tool_calls=[ChatToolCall(id="c1", name="analyze_token", arguments='{"a": 1}')],
            ),
            ChatMessage(role="tool", content='{"risk": "low"}', tool_call_id="c1"),
        ],
        tools=request(True).tools,
    )
    inputs = WorkersAIClient(ScriptedAi(), model=MODEL, max_tokens=512).build_inputs(req)
    assert inputs["max_tokens"] == 512 and inputs["stream"] is True
    assistant = inputs["messages"][1]
    assert assistant["content"] is None
    assert assistant["tool_calls"][0]["function"] == {
        "name": "analyze_token",
        "arguments": '{"a": 1}',
    }
    assert inputs["messages"][2] == {
        "role": "tool",
        "content": '{"risk": "low"}',
        "tool_call_id": "c1",
    }
    [tool] = inputs["tools"]
    assert tool["function"]["parameters"] == req.tools[0].parameters
