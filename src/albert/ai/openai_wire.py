"""OpenAI's chat-completions wire shape, shared by every client that speaks it.

The OpenAI-compatible client sends and reads it over HTTP; Workers AI takes the
same messages and tools through its binding and streams either its own envelope
or these very chunks. What is the same lives here: messages and tools going out,
`choices[].delta` chunks and streamed tool calls coming back.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from pydantic_core import from_json

from albert.ai.model import (
    ChatMessage,
    ChatToolCall,
    ModelError,
    ModelEvent,
    ModelRequest,
    StepFinished,
    TextDelta,
    ToolCallRequest,
)
from albert.ai.sse import SseEvent
from albert.tools.base import ToolSpec


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


def tool_payload(spec: ToolSpec) -> dict[str, Any]:
    """The OpenAI `tools` entry for a tool spec (schema passed through untouched)."""
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
        },
    }


def conversation_payload(request: ModelRequest) -> dict[str, Any]:
    """The streamed request's messages and tools (each client adds its own settings)."""
    payload: dict[str, Any] = {
        "messages": [message_payload(m) for m in request.messages],
        "stream": True,
    }
    if request.tools:
        payload["tools"] = [tool_payload(t) for t in request.tools]
    return payload


class ToolCallBuffer:
    """Assembles one streamed tool call from its deltas (OpenAI and Workers AI streams alike)."""

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []


def _arguments_text(arguments: Any) -> str:
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


def _slot(
    calls: dict[int, ToolCallBuffer], part: dict[str, Any], fn: dict[str, Any], position: int
) -> int:
    if part.get("index") is not None:
        return int(part["index"])  # pieces of one streamed call share its index
    if fn:
        return position
    return max(calls, default=-1) + 1  # a whole call: the next free slot


def collect_tool_calls(calls: dict[int, ToolCallBuffer], parts: list[Any]) -> None:
    """Add one chunk's tool-call parts: OpenAI deltas, or whole calls as Workers AI sends them."""
    for position, part in enumerate(parts):
        if not isinstance(part, dict):
            continue
        fn = part.get("function") if isinstance(part.get("function"), dict) else {}
        name = fn.get("name") or part.get("name")
        arguments = fn.get("arguments", part.get("arguments"))
        if not part.get("id") and not name and arguments in (None, ""):
            # The closing sentinel some models send ({id: null, function: {name: null}}).
            continue
        call = calls.setdefault(_slot(calls, part, fn, position), ToolCallBuffer())
        call.id = str(part.get("id") or call.id)
        call.name = str(name or call.name)
        if arguments not in (None, ""):
            call.arguments.append(_arguments_text(arguments))


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


def decode_chunk(data: str, sender: str) -> dict[str, Any]:
    """One JSON chunk of a stream; `sender` names who sent a malformed one."""
    try:
        # pydantic-core's parser: a quarter of `json.loads`'s time per chunk (one chunk per
        # token). It refuses what `json.loads` takes in one case, a lone surrogate escape (a
        # gateway may split a pair between chunks), so a refusal is decided by `json.loads`.
        chunk = from_json(data)
    except ValueError:
        try:
            chunk = json.loads(data)
        except ValueError as exc:
            raise ModelError("bad_response", f"{sender} sent a malformed stream chunk") from exc
    if not isinstance(chunk, dict):
        raise ModelError("bad_response", f"{sender} sent a stream chunk that is not an object")
    return chunk


class StreamedStep:
    """One model step as its chunks arrive: text goes out at once, the rest is kept."""

    def __init__(self) -> None:
        self.calls: dict[int, ToolCallBuffer] = {}
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] = {}
        self.done = False

    async def chunks(
        self,
        events: AsyncIterator[SseEvent],
        decode: Callable[[str], dict[str, Any]],
        *,
        drain: bool,
    ) -> AsyncIterator[dict[str, Any]]:
        """The decoded chunks up to `[DONE]`, their usage noted.

        With `drain`, the stream is read to its end after `[DONE]` (and the rest
        dropped), so an HTTP connection can go back to the pool.
        """
        async for sse in events:
            if self.done:
                continue
            chunk = self.accept(sse, decode)
            if chunk is not None:
                yield chunk
            elif self.done and not drain:
                break

    def accept(
        self, sse: SseEvent, decode: Callable[[str], dict[str, Any]]
    ) -> dict[str, Any] | None:
        """One event of the stream: its decoded chunk (usage noted), or None for `[DONE]`
        and for anything after it."""
        if self.done:
            return None
        if sse.data.strip() == "[DONE]":
            self.done = True
            return None
        chunk = decode(sse.data)
        self.note_usage(chunk)
        return chunk

    def choices_text(self, chunk: dict[str, Any]) -> str:
        """`read_choices` as one string: the chunk's text, its tool calls kept.

        The same reading, without an event object and a generator per chunk (one chunk
        per token is the hot path of a streamed answer)."""
        choices = chunk.get("choices")
        if not choices:
            return ""
        texts = []
        for choice in choices:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                texts.append(str(delta["content"]))
            calls = delta.get("tool_calls")
            if calls:
                collect_tool_calls(self.calls, calls)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        return texts[0] if len(texts) == 1 else "".join(texts)

    def check_finished(self, stream: str) -> None:
        """A stream that stopped with neither `[DONE]` nor a finish reason was cut."""
        if not self.done and self.finish_reason is None:
            raise ModelError("stream_cut", f"{stream} ended before it finished")

    def note_usage(self, chunk: dict[str, Any]) -> None:
        """Keep the token counts a chunk carries (usually the last one)."""
        usage = chunk.get("usage")
        if isinstance(usage, dict) and usage:
            self.usage = usage

    def read_choices(self, chunk: dict[str, Any]) -> Iterator[TextDelta]:
        """The text of a chat-completion chunk's `choices[].delta`; tool calls are kept."""
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                yield TextDelta(text=str(delta["content"]))
            collect_tool_calls(self.calls, delta.get("tool_calls") or [])
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])

    def closing_events(self, reason: str) -> list[ModelEvent]:
        """The assembled tool calls, then the step's end with its token counts."""
        return [
            *assembled_calls(self.calls),
            StepFinished(
                reason=reason,
                prompt_tokens=int(self.usage.get("prompt_tokens") or 0),
                completion_tokens=int(self.usage.get("completion_tokens") or 0),
            ),
        ]
