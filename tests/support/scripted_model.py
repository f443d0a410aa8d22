"""A scripted OpenAI-compatible chat-completions server on loopback.

It streams real SSE over real HTTP, so the project's real client code runs:
text, tool calls (arguments split across chunks), HTTP errors, 429s, and
streams cut off mid-answer, or a provider's recorded stream byte for byte. Every
request body is recorded for assertions.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from typing import Any

from pydantic import BaseModel, Field

from tests.support.asgi_server import AsgiServer


class ScriptedToolCall(BaseModel):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str | None = None
    # The call's id as the model gives it; None: one unique to the request and position.
    id: str | None = None


class Reply(BaseModel):
    """One scripted answer to one chat-completions request."""

    text: list[str] = Field(default_factory=list)
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    status: int = 200
    error_message: str = "scripted failure"
    retry_after: int | None = None
    cut_after_chunks: int | None = None
    delay_seconds: float = 0.0
    chunk_delay_seconds: float = 0.0
    pause_after_chunks: int | None = None
    pause_seconds: float = 0.0
    prompt_tokens: int = 11
    completion_tokens: int = 7
    stream_error: str | None = None  # an error event after the text, as gateways send
    # A recorded body sent as it is (tests/albert/ai/fixtures/streams), in pieces of this
    # many bytes: the reading must not depend on where the network cuts it.
    recorded: bytes | None = None
    piece_bytes: int = 4096


async def _client_left_within(receive: Any, seconds: float) -> bool:
    """Wait `seconds`, or less if the client disconnects first; True when it did."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    for _ in range(1_000):
        remaining = deadline - loop.time()
        if remaining <= 0:
            return False
        try:
            message = await asyncio.wait_for(receive(), remaining)
        except TimeoutError:
            return False
        if message.get("type") == "http.disconnect":
            return True
    return False


class _CutStream(Exception):
    """Raised inside the body to drop the connection without finishing the response."""


class ScriptedModelServer:
    """Serves scripted replies in order; `default` answers when the script runs out."""

    def __init__(self, default: Reply | None = None) -> None:
        self._http = AsgiServer(self._app)
        self.port = self._http.port
        self.replies: deque[Reply] = deque()
        self.default = default or Reply(text=["Scripted ", "answer."])
        self.requests: list[dict[str, Any]] = []
        self._call = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *replies: Reply) -> None:
        """Queue replies for the next requests."""
        self.replies.extend(replies)

    def start(self) -> ScriptedModelServer:
        self._http.start()
        return self

    def stop(self) -> None:
        self._http.stop()

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if not scope["path"].endswith("/chat/completions"):
            await _respond(send, 404, {"error": {"message": "not found"}})
            return
        self.requests.append(json.loads(body))
        reply = self.replies.popleft() if self.replies else self.default
        self._call += 1
        if reply.delay_seconds:
            await asyncio.sleep(reply.delay_seconds)
        if reply.status != 200:
            headers = {"retry-after": str(reply.retry_after)} if reply.retry_after else {}
            await _respond(send, reply.status, {"error": {"message": reply.error_message}}, headers)
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream"),
                    (b"cache-control", b"no-cache"),
                ],
            }
        )
        if reply.recorded is not None:
            body, size = reply.recorded, max(1, reply.piece_bytes)
            for start in range(0, len(body), size):
                piece = body[start : start + size]
                await send({"type": "http.response.body", "body": piece, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        for index, chunk in enumerate(self._chunks(reply)):
            if reply.cut_after_chunks is not None and index >= reply.cut_after_chunks:
                raise _CutStream()
            # A client that goes away ends the stream, as a gateway's does (uvicorn would
            # drop the later sends silently and hold its own stop until the last one).
            if reply.chunk_delay_seconds and await _client_left_within(
                receive, reply.chunk_delay_seconds
            ):
                return
            if reply.pause_after_chunks is not None and index == reply.pause_after_chunks:
                # The stream goes quiet, as a stalled gateway does; a client that goes away
                # meanwhile ends it (uvicorn drops later sends silently, so a long pause
                # would otherwise hold the server's stop).
                if await _client_left_within(receive, reply.pause_seconds):
                    return
            await send({"type": "http.response.body", "body": chunk.encode(), "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    def _chunks(self, reply: Reply) -> list[str]:
        base = {
            "id": f"chatcmpl-{self._call}",
            "object": "chat.completion.chunk",
            "model": "scripted",
        }

        def event(payload: dict[str, Any]) -> str:
            return f"data: {json.dumps({**base, **payload})}\n\n"

        out = [event({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})]
        out += [event({"choices": [{"index": 0, "delta": {"content": t}}]}) for t in reply.text]
        if reply.stream_error is not None:
            return [*out, f"data: {json.dumps({'error': {'message': reply.stream_error}})}\n\n"]
        for i, call in enumerate(reply.tool_calls):
            arguments = (
                call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments)
            )
            half = len(arguments) // 2
            head = {
                "index": i,
                "id": call.id if call.id is not None else f"call_{self._call}_{i}",
                "type": "function",
                "function": {"name": call.name, "arguments": arguments[:half]},
            }
            out.append(event({"choices": [{"index": 0, "delta": {"tool_calls": [head]}}]}))
            tail = {"index": i, "function": {"arguments": arguments[half:]}}
            out.append(event({"choices": [{"index": 0, "delta": {"tool_calls": [tail]}}]}))
        finish = "tool_calls" if reply.tool_calls else "stop"
        out.append(event({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}))
        usage = {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        }
        out.append(event({"choices": [], "usage": usage}))
        out.append("data: [DONE]\n\n")
        return out


async def _respond(
    send: Any, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
) -> None:
    raw = [(b"content-type", b"application/json")] + [
        (k.encode(), v.encode()) for k, v in (headers or {}).items()
    ]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": json.dumps(payload).encode()})
