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
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from typing import Any, Protocol

from albert.ai.model import ModelError, ModelEvent, ModelRequest, TextDelta
from albert.ai.openai_wire import (
    StreamedStep,
    chunk_error,
    conversation_payload,
    decode_chunk,
    error_reason,
)
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
        self.model_name = model
        self._max_tokens = max_tokens
        self._timeout = timeout

    def build_inputs(self, request: ModelRequest) -> dict[str, Any]:
        """The inputs object sent with `AI.run` for a request."""
        return {**conversation_payload(request), "max_tokens": self._max_tokens}

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one step; raises ModelError on failure."""
        inputs = self.build_inputs(request)
        try:
            body = await asyncio.wait_for(
                self._ai.run(self.model_name, inputs, stream=True), self._timeout
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
        step = StreamedStep()
        async for chunk in step.chunks(parse_sse(_lines(body)), _chunk, drain=False):
            for event in _read(step, chunk):
                yield event
        step.check_finished("the Workers AI stream")
        if any(not call.name for call in step.calls.values()):
            raise ModelError("bad_response", "Workers AI sent a tool call without a name")
        reason = step.finish_reason
        if step.calls and reason in (None, "stop"):
            reason = "tool_calls"
        for event in step.closing_events(reason or "stop"):
            yield event


def _chunk(data: str) -> dict[str, Any]:
    """One chunk of the stream; one reporting an error raises."""
    chunk = decode_chunk(data, "Workers AI")
    error = chunk_error(chunk)
    if error is not None:
        raise classify_error(RuntimeError(error_reason(error)))
    return chunk


def _read(step: StreamedStep, chunk: dict[str, Any]) -> Iterator[TextDelta]:
    """The text of one chunk, in either of the two shapes Workers AI streams."""
    if "choices" in chunk:
        yield from step.read_choices(chunk)
        return
    text = response_text(chunk.get("response"))
    if text:
        yield TextDelta(text=text)
    step.calls.add(chunk.get("tool_calls") or [])
    if chunk.get("finish_reason"):
        step.finish_reason = str(chunk["finish_reason"])


def response_text(response: Any) -> str:
    """Workers AI's `response` as text: a string as it is; a number or a JSON object (what
    JSON mode returns, as Cloudflare documents) as its JSON, so it is shown, not dropped."""
    if response is None or response == "":
        return ""
    if isinstance(response, str):
        return response
    return json.dumps(response, ensure_ascii=False)
