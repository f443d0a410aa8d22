"""The `AI` binding adapter: plain-Python inputs become JS objects, a JS stream becomes bytes."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from albert.ai.model import ChatMessage, ModelRequest, StepFinished, TextDelta
from albert.cloudflare.ai import (
    WorkersAiBinding,
    platform_model,
    read_stream,
    workers_ai_client,
)
from albert.cloudflare.fetch import outbound_transport
from tests.albert.ai.test_workers_ai import split, sse
from tests.cloudflare import fakes


class FakeReader:
    """`stream.getReader()`: `read()` resolves to {done, value: Uint8Array}."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = list(chunks)
        self.released = False

    async def read(self) -> fakes.JsObject:
        if not self._chunks:
            return fakes.JsObject({"done": True, "value": fakes.jsnull})
        return fakes.JsObject({"done": False, "value": fakes.JsUint8Array(self._chunks.pop(0))})

    def releaseLock(self) -> None:
        self.released = True


class FakeReadableStream(fakes.JsProxy):
    def __init__(self, chunks: list[bytes]) -> None:
        self.reader = FakeReader(chunks)

    def getReader(self) -> FakeReader:
        return self.reader


class FakeAi(fakes.JsProxy):
    """`env.AI`: `run(model, inputs, options?)` returns a Promise."""

    def __init__(self, result: Any) -> None:
        self.result = result
        self.calls: list[tuple[Any, ...]] = []

    async def run(self, *args: Any) -> Any:
        self.calls.append(args)
        return self.result


@pytest.fixture(autouse=True)
def js_fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, module in fakes.modules().items():
        monkeypatch.setitem(sys.modules, name, module)


async def test_inputs_cross_as_plain_js_objects_with_the_gateway_option() -> None:
    ai = FakeAi(FakeReadableStream([]))
    binding = WorkersAiBinding(ai, gateway_id="albert-gw")
    stream = await binding.run(
        "@cf/m", {"messages": [{"role": "user", "content": None}]}, stream=True
    )
    assert [chunk async for chunk in stream] == []
    model, inputs, options = ai.calls[0]
    assert model == "@cf/m"
    # An Object, not a Map (what to_js gives without a dict converter), and null, not undefined.
    assert type(inputs) is fakes.JsObject and inputs.stream is True
    assert inputs.messages[0].content is fakes.jsnull
    assert type(options) is fakes.JsObject and options.gateway.id == "albert-gw"


async def test_without_a_gateway_there_is_no_third_argument() -> None:
    ai = FakeAi(fakes.JsObject({"response": "hi", "usage": fakes.JsObject({"prompt_tokens": 3})}))
    result = await WorkersAiBinding(ai).run("@cf/m", {"prompt": "x"}, stream=False)
    assert len(ai.calls[0]) == 2
    assert result == {"response": "hi", "usage": {"prompt_tokens": 3}}


async def test_a_streamed_answer_through_the_binding_and_the_client() -> None:
    body = sse({"response": "Low "}, {"response": "risk."}, "[DONE]")
    stream = FakeReadableStream(split(body, 7))
    env = fakes.JsObject(
        {"AI": FakeAi(stream), "WORKERS_AI_MODEL": "@cf/meta/llama", "AI_GATEWAY_ID": ""}
    )
    client = workers_ai_client(env)
    assert client is not None and client.model_name == "@cf/meta/llama"
    req = ModelRequest(messages=[ChatMessage(role="user", content="Is 0xabc risky?")])
    events = [e async for e in client.stream(req)]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Low risk."
    assert isinstance(events[-1], StepFinished)
    assert stream.reader.released


async def test_read_stream_accepts_an_async_iterable_too() -> None:
    async def chunks():  # type: ignore[no-untyped-def]
        yield fakes.JsUint8Array(b"a")
        yield b"b"

    assert [c async for c in read_stream(chunks())] == [b"a", b"b"]


def test_no_client_without_the_binding_or_a_model() -> None:
    assert workers_ai_client(fakes.JsObject({"WORKERS_AI_MODEL": "@cf/m"})) is None
    assert workers_ai_client(fakes.JsObject({"AI": FakeAi(None), "WORKERS_AI_MODEL": ""})) is None


def test_cpython_keeps_httpx_default_transport() -> None:
    assert outbound_transport() is None


def test_an_openai_compatible_gateway_wins_over_the_binding() -> None:
    env = {"AI": FakeAi(None), "WORKERS_AI_MODEL": "@cf/m"}
    assert platform_model(fakes.JsObject(env)) is not None
    assert platform_model(fakes.JsObject({**env, "MODEL_BASE_URL": ""})) is not None
    assert (
        platform_model(fakes.JsObject({**env, "MODEL_BASE_URL": "https://gw.example/v1"})) is None
    )
