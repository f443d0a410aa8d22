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


# Every step sends every tool's entry, and a spec does not change once made (one per tool,
# shared by the objects of a process: albert.tools.base.described): its entry, the schema
# walked for references and inlined, is made once per spec. Keyed by the spec's identity;
# the entry holds the spec, so that identity cannot pass to another one while it is kept.
# Entries are shared by every request that sends them: read, never changed.
_ENTRIES = 1024
_entries: dict[int, tuple[ToolSpec, dict[str, Any]]] = {}


def tool_payload(spec: ToolSpec) -> dict[str, Any]:
    """The OpenAI `tools` entry for a tool spec (its schema with references inlined)."""
    found = _entries.get(id(spec))
    if found is not None and found[0] is spec:
        return found[1]
    entry = {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": inline_refs(spec.parameters),
        },
    }
    if len(_entries) >= _ENTRIES:
        _entries.clear()  # remote tools come and go: the cache stays bounded
    _entries[id(spec)] = (spec, entry)
    return entry


# How deep one reference may expand inside another, and how many expansions one schema
# may have in all (a definition that refers to itself in several places would otherwise
# grow as its branching to this depth), before a reference is cut.
MAX_REF_DEPTH = 8
MAX_REF_EXPANSIONS = 500
_DEFINITIONS = ("$defs", "definitions")


def _has_refs(node: Any) -> bool:
    if isinstance(node, dict):
        return "$ref" in node or any(_has_refs(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_refs(v) for v in node)
    return False


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with every local `$ref` (`#/$defs/X`, `#/definitions/X`) replaced by what
    it names, and the definitions dropped: some OpenAI-compatible gateways refuse
    references. A recursive definition is expanded at most MAX_REF_DEPTH deep (and the
    schema MAX_REF_EXPANSIONS times in all), then stands as a plain object, keeping its own
    keywords beside the `$ref`; a reference that names nothing local is left as it is. The
    tool's own schema is not changed."""
    if not _has_refs(schema):
        return schema
    definitions: dict[str, Any] = {}
    for key in _DEFINITIONS:
        found = schema.get(key)
        if isinstance(found, dict):
            definitions.update({f"#/{key}/{name}": value for name, value in found.items()})
    inlined = _RefInliner(definitions).inline(schema, ())
    for key in _DEFINITIONS:
        inlined.pop(key, None)
    return dict(inlined)


class _RefInliner:
    def __init__(self, definitions: dict[str, Any]) -> None:
        self.definitions = definitions
        self.left = MAX_REF_EXPANSIONS

    def inline(self, node: Any, expanding: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [self.inline(item, expanding) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        rest = {k: self.inline(v, expanding) for k, v in node.items() if k != "$ref"}
        if not isinstance(ref, str) or ref not in self.definitions:
            return rest if ref is None else {**rest, "$ref": ref}
        if expanding.count(ref) >= MAX_REF_DEPTH or self.left <= 0:
            return {"type": "object", **rest}
        self.left -= 1
        target = self.inline(self.definitions[ref], (*expanding, ref))
        return {**target, **rest} if isinstance(target, dict) else target


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


class ToolCalls(dict[int, ToolCallBuffer]):
    """The step's streamed tool calls by slot, put together from their parts.

    A part's wire `index` names its call, and a call's later parts carry the same index
    (and usually no id). Some providers give every call of a step `index: 0` (Ollama,
    some vLLM and SGLang builds): a part whose id differs from that of the call its index
    points at, or that names a tool again once the call has its name, opens a new call,
    and the index then points at that one. A part without an index (Workers AI's whole
    calls) is placed by its position in the chunk, by the same rule.
    """

    def __init__(self) -> None:
        super().__init__()
        self._by_index: dict[int, int] = {}

    def add(self, parts: list[Any]) -> None:
        """Add one chunk's tool-call parts."""
        for position, part in enumerate(parts):
            if not isinstance(part, dict):
                continue
            fn = part.get("function") if isinstance(part.get("function"), dict) else {}
            name = fn.get("name") or part.get("name")
            arguments = fn.get("arguments", part.get("arguments"))
            call_id = part.get("id")
            if not call_id and not name and arguments in (None, ""):
                # The closing sentinel some models send ({id: null, function: {name: null}}).
                continue
            call = self.setdefault(self._slot(part, fn, position, call_id, name), ToolCallBuffer())
            call.id = str(call_id or call.id)
            call.name = str(name or call.name)
            if arguments not in (None, ""):
                call.arguments.append(_arguments_text(arguments))

    def _slot(
        self, part: dict[str, Any], fn: dict[str, Any], position: int, call_id: Any, name: Any
    ) -> int:
        index = part.get("index")
        key = int(index) if index is not None else position
        slot = self._by_index.get(key)
        if slot is not None and not self._opens_another(self[slot], call_id, name):
            return slot
        slot = key if key not in self else self._next_free()
        self._by_index[key] = slot
        return slot

    @staticmethod
    def _opens_another(call: ToolCallBuffer, call_id: Any, name: Any) -> bool:
        """Whether a part at this call's index is the first part of another call: its id
        differs, or (without ids) it names a tool again after this call's own name."""
        if call_id and call.id:
            return str(call_id) != call.id
        if name and call.name:
            return str(name) != call.name or bool(call.arguments)
        return False

    def _next_free(self) -> int:
        return max(self, default=-1) + 1

    def assembled(self) -> list[ToolCallRequest]:
        """The streamed tool calls, complete and in slot order (a missing id gets one)."""
        return [
            ToolCallRequest(
                call=ChatToolCall(
                    id=buf.id or f"call_{slot}", name=buf.name, arguments="".join(buf.arguments)
                )
            )
            for slot, buf in sorted(self.items())
        ]


def content_text(content: Any) -> str:
    """The answer text of a delta's `content`: a string, or a list of typed parts.

    Mistral's Magistral models stream `[{"type": "thinking", ...}, {"type": "text", ...}]`:
    text parts are the answer; thinking (or any other kind of) part is not, and is never
    shown as it.
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("type") in ("text", "output_text"):
            text = part.get("text")
            texts.append(text if isinstance(text, str) else "")
    return "".join(texts)


def chunk_error(chunk: dict[str, Any]) -> Any:
    """What a chunk reports instead of an answer, in the shapes providers use, or None.

    `{"error": {...}}` (OpenAI, OpenRouter, llama.cpp, SGLang), `{"errors": [...]}`
    (Workers AI), and a chunk that is itself the error, `{"object": "error", "message":
    ...}` (vLLM).
    """
    error = chunk.get("error") or chunk.get("errors")
    if error:
        return error
    return chunk if chunk.get("object") == "error" else None


def error_reason(error: Any) -> str:
    """The provider's own words for an error object: its message, else the object as text."""
    if isinstance(error, list):
        return "; ".join(error_reason(item) for item in error[:3])
    if isinstance(error, dict):
        message = error.get("message") or error.get("detail") or error.get("error")
        if isinstance(message, str | int | float) and str(message):
            return str(message)
        if isinstance(message, dict | list):
            return error_reason(message)
        return json.dumps(error, ensure_ascii=False)
    return str(error)


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
        self.calls = ToolCalls()
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] = {}
        self.done = False
        # Chunks read before `[DONE]`: a stream of none is a failure, not an empty answer.
        self.chunks_read = 0
        self.refused = False

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
        self.chunks_read += 1
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
            content = delta.get("content")
            if content:
                texts.append(content if type(content) is str else content_text(content))
            if delta.get("refusal"):
                texts.append(self._refusal(delta["refusal"]))
            calls = delta.get("tool_calls")
            if calls:
                self.calls.add(calls)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        return texts[0] if len(texts) == 1 else "".join(texts)

    def _refusal(self, text: Any) -> str:
        # OpenAI streams a refusal in `delta.refusal` instead of `delta.content`: it is
        # the answer the user gets, and the step ends as a refusal.
        self.refused = True
        return str(text)

    def check_finished(self, stream: str) -> None:
        """A stream that stopped with neither `[DONE]` nor a finish reason was cut; one that
        brought `[DONE]` and not a single chunk answered nothing, which is a failure too."""
        if not self.done and self.finish_reason is None:
            raise ModelError("stream_cut", f"{stream} ended before it finished")
        if self.chunks_read == 0:
            raise ModelError("bad_response", f"{stream} ended without a single chunk")

    def note_usage(self, chunk: dict[str, Any]) -> None:
        """Keep the token counts a chunk carries (usually the last one)."""
        usage = chunk.get("usage")
        if isinstance(usage, dict) and usage:
            self.usage = usage

    def read_choices(self, chunk: dict[str, Any]) -> Iterator[TextDelta]:
        """The text of a chat-completion chunk's `choices[].delta`; tool calls are kept."""
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            text = content_text(delta.get("content"))
            if delta.get("refusal"):
                text += self._refusal(delta["refusal"])
            if text:
                yield TextDelta(text=text)
            self.calls.add(delta.get("tool_calls") or [])
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])

    def closing_events(self, reason: str) -> list[ModelEvent]:
        """The assembled tool calls, then the step's end with its token counts."""
        if self.refused and reason == "stop":
            reason = "refusal"
        return [
            *self.calls.assembled(),
            StepFinished(
                reason=reason,
                prompt_tokens=int(self.usage.get("prompt_tokens") or 0),
                completion_tokens=int(self.usage.get("completion_tokens") or 0),
            ),
        ]
