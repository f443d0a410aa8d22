"""The OpenAI-compatible client against a real scripted SSE server on loopback."""

from __future__ import annotations

import httpx
import pytest

from albert.ai.model import (
    ChatMessage,
    ModelError,
    ModelRequest,
    StepFinished,
    TextDelta,
    ToolCallRequest,
)
from albert.ai.openai_client import OpenAICompatibleClient
from albert.tools.base import ToolSpec
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall


@pytest.fixture(scope="module")
def model_server():
    with ScriptedModelServer() as server:
        yield server


def _client() -> httpx.AsyncClient:
    return httpx.AsyncClient()


async def _run(server: ScriptedModelServer, request: ModelRequest, **kw):
    async with _client() as http:
        client = OpenAICompatibleClient(
            http, base_url=server.base_url, api_key="sk-test", model="m1", **kw
        )
        return [e async for e in client.stream(request)]


REQUEST = ModelRequest(
    messages=[ChatMessage(role="user", content="hi")],
    tools=[
        ToolSpec(
            name="lookup",
            description="d",
            parameters={"type": "object", "properties": {"q": {"type": "string"}}},
        )
    ],
)


async def test_text_streams_in_order_with_usage(model_server: ScriptedModelServer) -> None:
    model_server.script(Reply(text=["Hel", "lo", "!"], prompt_tokens=5, completion_tokens=3))
    events = await _run(model_server, REQUEST)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello!"
    finish = events[-1]
    assert isinstance(finish, StepFinished)
    assert (finish.reason, finish.prompt_tokens, finish.completion_tokens) == ("stop", 5, 3)


async def test_tool_call_arguments_are_assembled_from_fragments(model_server) -> None:
    model_server.script(
        Reply(tool_calls=[ScriptedToolCall(name="lookup", arguments={"q": "pepe", "n": 2})])
    )
    events = await _run(model_server, REQUEST)
    calls = [e.call for e in events if isinstance(e, ToolCallRequest)]
    assert len(calls) == 1
    assert calls[0].name == "lookup"
    assert calls[0].arguments == '{"q": "pepe", "n": 2}'
    assert isinstance(events[-1], StepFinished) and events[-1].reason == "tool_calls"


async def test_request_body_carries_model_tools_and_auth(model_server) -> None:
    model_server.script(Reply(text=["ok"]))
    await _run(model_server, REQUEST)
    body = model_server.requests[-1]
    assert body["model"] == "m1" and body["stream"] is True
    assert body["tools"][0]["function"]["parameters"] == REQUEST.tools[0].parameters


async def test_request_body_is_the_json_httpx_would_send() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500, text="stop here")

    request = ModelRequest(
        messages=[
            ChatMessage(role="system", content="Réponds en français ✓ \u2028"),
            ChatMessage(role="user", content='quote " backslash \\ tab \t emoji 😀'),
        ],
        tools=[
            ToolSpec(
                name="search",
                description="d",
                parameters={"type": "object", "properties": {"apy": {"minimum": 0.5}}},
            )
        ],
    )
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        client = OpenAICompatibleClient(http, base_url="http://gateway/v1", api_key="k", model="m")
        with pytest.raises(ModelError):
            [e async for e in client.stream(request)]
        reference = http.build_request("POST", "http://gateway/", json=client.build_body(request))
    assert sent[0].content == reference.content
    assert sent[0].headers["content-type"] == "application/json"
    assert sent[0].headers["authorization"] == "Bearer k"


async def test_each_request_goes_to_the_same_url_with_the_same_timeout() -> None:
    # The URL is parsed once and reused; every request still names the same target,
    # query and path included, with the client's timeout for each phase.
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        client = OpenAICompatibleClient(
            http, base_url="http://gateway:8080/v1/", api_key="k", model="m", timeout=12.5
        )
        for _ in range(2):
            with pytest.raises(ModelError):
                [e async for e in client.stream(REQUEST)]
    assert [str(r.url) for r in sent] == ["http://gateway:8080/v1/chat/completions"] * 2
    assert all(r.extensions["timeout"] == httpx.Timeout(12.5).as_dict() for r in sent)


async def test_a_base_url_httpx_cannot_parse_fails_each_request_not_the_client() -> None:
    async with httpx.AsyncClient() as http:
        client = OpenAICompatibleClient(http, base_url="http://[::1", api_key="", model="m")
        for _ in range(2):
            with pytest.raises(httpx.InvalidURL):
                [e async for e in client.stream(REQUEST)]


async def test_rate_limit_is_typed_and_retryable(model_server) -> None:
    model_server.script(Reply(status=429, retry_after=7))
    with pytest.raises(ModelError) as caught:
        await _run(model_server, REQUEST)
    assert caught.value.kind == "rate_limited"
    assert caught.value.retry_after == 7
    assert caught.value.retryable


async def test_server_error_names_the_status_and_keeps_the_body_for_the_log(model_server) -> None:
    model_server.script(Reply(status=500, error_message="upstream exploded"))
    with pytest.raises(ModelError) as caught:
        await _run(model_server, REQUEST)
    assert caught.value.status == 500 and caught.value.retryable
    assert "HTTP 500" in str(caught.value)
    # The gateway's own words go to the log (the failed turn's line), not to the browser.
    assert "upstream exploded" not in str(caught.value)
    assert "upstream exploded" in caught.value.gateway_said


async def test_bad_request_is_not_retryable(model_server) -> None:
    model_server.script(Reply(status=400, error_message="bad tools"))
    with pytest.raises(ModelError) as caught:
        await _run(model_server, REQUEST)
    assert not caught.value.retryable


async def test_cut_stream_raises_after_the_text_that_arrived(model_server) -> None:
    model_server.script(Reply(text=["one ", "two ", "three"], cut_after_chunks=3))
    seen: list[str] = []
    with pytest.raises(ModelError) as caught:
        async with _client() as http:
            client = OpenAICompatibleClient(
                http, base_url=model_server.base_url, api_key="", model="m"
            )
            async for event in client.stream(REQUEST):
                if isinstance(event, TextDelta):
                    seen.append(event.text)
    assert caught.value.kind == "stream_cut"
    assert "".join(seen) == "one two "


async def test_timeout_is_reported_as_timeout(model_server) -> None:
    model_server.script(Reply(text=["late"], delay_seconds=2))
    with pytest.raises(ModelError) as caught:
        await _run(model_server, REQUEST, timeout=0.3)
    assert caught.value.kind == "timeout"


async def test_unreachable_gateway_is_a_network_error(closed_port: int) -> None:
    async with _client() as http:
        client = OpenAICompatibleClient(
            http, base_url=f"http://127.0.0.1:{closed_port}/v1", api_key="", model="m"
        )
        with pytest.raises(ModelError) as caught:
            [e async for e in client.stream(REQUEST)]
    assert caught.value.kind == "network"


# A pooled connection the gateway closed as it was reused, as httpx says it and as the
# platform's fetch transport on workerd does (albert.cloudflare.fetch: "Network connection
# lost." before any response head).
FIRST_FAILURES = [
    httpx.RemoteProtocolError("Server disconnected without sending a response."),
    httpx.ConnectError("Network connection lost."),
]


@pytest.mark.parametrize("failure", FIRST_FAILURES, ids=["protocol", "connect"])
async def test_a_pooled_connection_closed_before_any_answer_is_retried_once(
    failure: httpx.TransportError,
) -> None:
    attempts: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        attempts.append(1)
        if len(attempts) == 1:
            raise failure
        body = (
            'data: {"choices":[{"index":0,"delta":{"content":"again"}}]}\n\n'
            'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
            "data: [DONE]\n\n"
        )
        return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        client = OpenAICompatibleClient(http, base_url="http://gateway/v1", api_key="", model="m")
        events = [e async for e in client.stream(REQUEST)]
    assert len(attempts) == 2
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["again"]


@pytest.mark.parametrize(
    ("failure", "kind"),
    list(zip(FIRST_FAILURES, ["stream_cut", "network"], strict=True)),
    ids=["protocol", "connect"],
)
async def test_a_connection_that_keeps_failing_is_reported_not_retried_forever(
    failure: httpx.TransportError, kind: str
) -> None:
    attempts: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        attempts.append(1)
        raise failure

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        client = OpenAICompatibleClient(http, base_url="http://gateway/v1", api_key="", model="m")
        with pytest.raises(ModelError) as caught:
            [e async for e in client.stream(REQUEST)]
    assert caught.value.kind == kind and len(attempts) == 2
