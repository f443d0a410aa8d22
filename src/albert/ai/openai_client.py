"""OpenAI-compatible chat-completions client over httpx with real SSE parsing.

Talks to AI Gateway, Workers AI's OpenAI endpoint, OpenAI, Ollama and vLLM alike.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from albert.ai.gateway_errors import MAX_LOGGED_CHARS, http_error, stream_error
from albert.ai.model import (
    ChatMessage,
    ChatToolCall,
    ModelError,
    ModelEvent,
    ModelRequest,
    StepFinished,
    TextDelta,
    ToolCallRequest,
    tool_payload,
)
from albert.ai.sse import parse_sse


def message_payload(message: ChatMessage) -> dict[str, Any]:
    """A message in OpenAI's wire shape."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
        if not message.content:
            out["content"] = None
    if message.tool_call_id:
        out["tool_call_id"] = message.tool_call_id
    return out


class ToolCallBuffer:
    """Assembles one streamed tool call from its deltas (OpenAI and Workers AI streams alike)."""

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []


def assembled_calls(calls: dict[int, ToolCallBuffer]) -> list[ToolCallRequest]:
    """The streamed tool calls, complete and in index order (a missing id gets one)."""
    return [
        ToolCallRequest(
            call=ChatToolCall(
                id=buf.id or f"call_{index}", name=buf.name, arguments="".join(buf.arguments)
            )
        )
        for index, buf in sorted(calls.items())
    ]


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class OpenAICompatibleClient:
    """A streaming chat-completions client; one instance per object, reusing its httpx client."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        base_url: str,
        api_key: str,
        model: str,
        timeout: float = 60.0,
        extra_headers: dict[str, str] | None = None,
    ) -> None:
        self._http = http
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._headers.update(extra_headers or {})
        # What a gateway's error text must never carry past the log (redacted there too).
        self._secrets = [v for v in (api_key, *(extra_headers or {}).values()) if v]
        self._model = model
        self._timeout = timeout

    @property
    def model_name(self) -> str:
        return self._model

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent for a request."""
        body: dict[str, Any] = {
            "model": self._model,
            "messages": [message_payload(m) for m in request.messages],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = [tool_payload(t) for t in request.tools]
        return body

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        body = self.build_body(request)
        for attempt in (1, 2):
            answered = False
            try:
                async with self._http.stream(
                    "POST", self._url, json=body, headers=self._headers, timeout=self._timeout
                ) as response:
                    answered = True
                    if response.status_code != 200:
                        await self._raise_for_status(response)
                    async for event in self._events(response):
                        yield event
                return
            except httpx.TimeoutException as exc:
                raise ModelError("timeout", "the model gateway did not answer in time") from exc
            except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
                # A pooled connection the gateway closed as we reused it: nothing was
                # answered, so nothing was processed, and one fresh try is safe.
                if not answered and attempt == 1:
                    continue
                raise ModelError("stream_cut", "the model stream was cut off") from exc
            except httpx.TransportError as exc:
                kind = type(exc).__name__
                raise ModelError("network", f"cannot reach the model gateway ({kind})") from exc

    async def _raise_for_status(self, response: httpx.Response) -> None:
        body = b""
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_LOGGED_CHARS:
                break
        raise http_error(
            response.status_code,
            body.decode(errors="replace"),
            self._secrets,
            retry_after=_retry_after(response),
        )

    async def _events(self, response: httpx.Response) -> AsyncIterator[ModelEvent]:
        calls: dict[int, ToolCallBuffer] = {}
        finish_reason: str | None = None
        usage: dict[str, Any] = {}
        saw_done = False
        async for sse in parse_sse(response.aiter_lines()):
            if saw_done:
                continue  # read to the end, so httpx can reuse the connection
            if sse.data == "[DONE]":
                saw_done = True
                continue
            try:
                chunk = json.loads(sse.data)
            except ValueError as exc:
                raise ModelError("bad_response", "the model sent a malformed stream chunk") from exc
            if isinstance(chunk, dict) and chunk.get("error"):
                raise stream_error(json.dumps(chunk["error"]), self._secrets)
            if chunk.get("usage"):
                usage = chunk["usage"]
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                text = delta.get("content")
                if text:
                    yield TextDelta(text=text)
                for part in delta.get("tool_calls") or []:
                    buf = calls.setdefault(int(part.get("index", 0)), ToolCallBuffer())
                    buf.id = part.get("id") or buf.id
                    fn = part.get("function") or {}
                    buf.name = fn.get("name") or buf.name
                    if fn.get("arguments"):
                        buf.arguments.append(fn["arguments"])
                if choice.get("finish_reason"):
                    finish_reason = choice["finish_reason"]
        if not saw_done and finish_reason is None:
            raise ModelError("stream_cut", "the model stream ended before it finished")
        for event in assembled_calls(calls):
            yield event
        yield StepFinished(
            reason=finish_reason or ("tool_calls" if calls else "stop"),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        )
