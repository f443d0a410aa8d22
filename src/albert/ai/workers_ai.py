"""Workers AI as a model client: the `AI` binding, streaming, with tool calls.

The binding is passed in as an `AiRunner` (albert.cloudflare.ai.WorkersAiBinding
on Cloudflare), so this module never touches JS: it sends plain dicts and reads
the server-sent-events bytes the binding streams back.

Workers AI streams two chunk shapes, by model: its own envelope
(`{"response": "...", "tool_calls": [...], "usage": {...}}`) and OpenAI's
chat-completion chunks (`{"choices": [{"delta": ...}]}`); both are read here. A
tool call arrives either whole (`{"name", "arguments": {...}}`) or as deltas
(`{"index", "id", "function": {"name", "arguments": "<part>"}}`), possibly
closed by a sentinel with every field null.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import re
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any, Protocol

from albert.ai.model import (
    ModelError,
    ModelEvent,
    ModelRequest,
    StepFinished,
    TextDelta,
    tool_payload,
)
from albert.ai.openai_client import ToolCallBuffer, assembled_calls, message_payload
from albert.ai.sse import parse_sse


class AiRunner(Protocol):
    """The `AI` binding, already converted at the JS boundary."""

    async def run(self, model: str, inputs: dict[str, Any], *, stream: bool) -> Any:
        """Run a model: the result dict, or (stream=True) an async iterable of SSE bytes."""
        ...


# Workers AI error codes that mean "too much right now": capacity, rate and daily limits.
_RATE_LIMIT_CODES = {"3040", "3036", "3007", "429"}
_SERVER_CODES = {"3043", "3028", "5000", "500", "502", "503", "504"}


def classify_error(exc: BaseException) -> ModelError:
    """A ModelError for an exception the binding raised (a JS Error's message)."""
    message = str(exc) or type(exc).__name__
    codes = set(re.findall(r"\b\d{3,4}\b", message))
    lowered = message.lower()
    if codes & _RATE_LIMIT_CODES or "capacity" in lowered or "rate limit" in lowered:
        return ModelError("rate_limited", f"Workers AI is rate limiting requests ({message})")
    if "timed out" in lowered or "timeout" in lowered:
        return ModelError("timeout", "Workers AI did not answer in time")
    if codes & _SERVER_CODES or "internal" in lowered:
        return ModelError("http", f"Workers AI failed: {message}", status=500)
    return ModelError("http", f"Workers AI refused the request: {message}", status=400)


async def _lines(chunks: AsyncIterable[bytes | str]) -> AsyncIterator[str]:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending = ""
    async for chunk in chunks:
        pending += decoder.decode(chunk) if isinstance(chunk, bytes) else chunk
        *complete, pending = pending.split("\n")
        for line in complete:
            yield line
    pending += decoder.decode(b"", final=True)
    if pending:
        yield pending


def _arguments_text(arguments: Any) -> str:
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


class WorkersAIClient:
    """Streams one model step through the `AI` binding."""

    def __init__(
        self,
        ai: AiRunner,
        *,
        model: str,
        max_tokens: int = 2048,
        timeout: float = 60.0,
    ) -> None:
        self._ai = ai
        self._model = model
        self._max_tokens = max_tokens
        self._timeout = timeout

    @property
    def model_name(self) -> str:
        return self._model

    def build_inputs(self, request: ModelRequest) -> dict[str, Any]:
        """The inputs object sent with `AI.run` for a request."""
        inputs: dict[str, Any] = {
            "messages": [message_payload(m) for m in request.messages],
            "stream": True,
            "max_tokens": self._max_tokens,
        }
        if request.tools:
            inputs["tools"] = [tool_payload(t) for t in request.tools]
        return inputs

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one step; raises ModelError on failure."""
        inputs = self.build_inputs(request)
        try:
            body = await asyncio.wait_for(
                self._ai.run(self._model, inputs, stream=True), self._timeout
            )
        except TimeoutError as exc:
            raise ModelError("timeout", "Workers AI did not answer in time") from exc
        except ModelError:
            raise
        except Exception as exc:
            raise classify_error(exc) from exc
        try:
            async for event in self._events(body):
                yield event
        except ModelError:
            raise
        except Exception as exc:
            raise ModelError("stream_cut", f"the Workers AI stream broke off ({exc})") from exc
        finally:
            # Stop reading at once (at [DONE], on an error, or when the caller stops):
            # the adapter then releases the JS stream.
            aclose = getattr(body, "aclose", None)
            if aclose is not None:
                await aclose()

    async def _events(self, body: AsyncIterable[bytes | str]) -> AsyncIterator[ModelEvent]:
        calls: dict[int, ToolCallBuffer] = {}
        finish_reason: str | None = None
        usage: dict[str, Any] = {}
        saw_done = False
        async for sse in parse_sse(_lines(body)):
            if sse.data.strip() == "[DONE]":
                saw_done = True
                break
            try:
                chunk = json.loads(sse.data)
            except ValueError as exc:
                raise ModelError("bad_response", "Workers AI sent a malformed chunk") from exc
            if not isinstance(chunk, dict):
                raise ModelError("bad_response", "Workers AI sent a chunk that is not an object")
            if chunk.get("error") or chunk.get("errors"):
                raise classify_error(RuntimeError(str(chunk.get("error") or chunk.get("errors"))))
            if isinstance(chunk.get("usage"), dict):
                usage = chunk["usage"]
            if "choices" in chunk:
                for choice in chunk.get("choices") or []:
                    delta = choice.get("delta") or {}
                    if delta.get("content"):
                        yield TextDelta(text=str(delta["content"]))
                    self._collect(calls, delta.get("tool_calls") or [])
                    if choice.get("finish_reason"):
                        finish_reason = str(choice["finish_reason"])
                continue
            text = chunk.get("response")
            if isinstance(text, str) and text:
                yield TextDelta(text=text)
            self._collect(calls, chunk.get("tool_calls") or [])
            if chunk.get("finish_reason"):
                finish_reason = str(chunk["finish_reason"])
        if not saw_done and finish_reason is None:
            raise ModelError("stream_cut", "the Workers AI stream ended before it finished")
        if any(not call.name for call in calls.values()):
            raise ModelError("bad_response", "Workers AI sent a tool call without a name")
        for event in assembled_calls(calls):
            yield event
        if calls and finish_reason in (None, "stop"):
            finish_reason = "tool_calls"
        yield StepFinished(
            reason=finish_reason or "stop",
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        )

    @staticmethod
    def _collect(calls: dict[int, ToolCallBuffer], parts: list[Any]) -> None:
        for position, part in enumerate(parts):
            if not isinstance(part, dict):
                continue
            fn = part.get("function") if isinstance(part.get("function"), dict) else {}
            name = fn.get("name") or part.get("name")
            arguments = fn.get("arguments", part.get("arguments"))
            if not part.get("id") and not name and arguments in (None, ""):
                # The closing sentinel some models send ({id: null, function: {name: null}}).
                continue
            if part.get("index") is not None:
                index = int(part["index"])  # pieces of one streamed call share its index
            elif fn:
                index = position
            else:
                index = max(calls, default=-1) + 1  # a whole call: the next free slot
            call = calls.setdefault(index, ToolCallBuffer())
            call.id = str(part.get("id") or call.id)
            call.name = str(name or call.name)
            if arguments not in (None, ""):
                call.arguments.append(_arguments_text(arguments))
