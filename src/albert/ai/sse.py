"""Server-sent events parsing (the subset chat-completion streams use).

A streamed answer is hundreds of events per second, so this is a hot path: events are
plain slotted objects (no model built per event), and `parse_sse_bytes` splits the raw
body itself (C-level `bytes.splitlines`) rather than going through a text decoder and a
line iterator per line.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import NamedTuple


class SseEvent(NamedTuple):
    """One dispatched event."""

    event: str = "message"
    data: str = ""


class _EventBuilder:
    """The WHATWG event-stream field rules, one line at a time."""

    __slots__ = ("data_lines", "event_type")

    def __init__(self) -> None:
        self.event_type = ""
        self.data_lines: list[str] = []

    def feed(self, line: str) -> SseEvent | None:
        """Take one line (without its ending); a blank line dispatches the event."""
        if not line:
            event = None
            if self.data_lines:
                event = SseEvent(self.event_type or "message", "\n".join(self.data_lines))
            self.event_type, self.data_lines = "", []
            return event
        if line[0] == ":":
            return None
        field, _, value = line.partition(":")
        if value[:1] == " ":
            value = value[1:]
        if field == "data":
            self.data_lines.append(value)
        elif field == "event":
            self.event_type = value
        return None


async def parse_sse(lines: AsyncIterator[str]) -> AsyncIterator[SseEvent]:
    """Turn a stream of lines into events, per the WHATWG event-stream rules."""
    builder = _EventBuilder()
    async for raw in lines:
        event = builder.feed(raw.rstrip("\r\n"))
        if event is not None:
            yield event
    # A final event without its blank line is discarded, as the spec says: the
    # stream was cut before the event was complete.


async def parse_sse_bytes(chunks: AsyncIterator[bytes]) -> AsyncIterator[SseEvent]:
    """Events from the raw body (any chunking; CRLF, LF or CR line endings; UTF-8).

    Same rules and result as `parse_sse` over the body's lines.
    """
    async for batch in parse_sse_batches(chunks):
        for event in batch:
            yield event


async def parse_sse_batches(chunks: AsyncIterator[bytes]) -> AsyncIterator[list[SseEvent]]:
    """Like `parse_sse_bytes`, the events completed by each piece of the body together
    (never an empty list): a reader that lags behind gets a burst in one step."""
    builder = _EventBuilder()
    held = b""
    async for chunk in chunks:
        if not chunk:
            continue
        buffer = held + chunk if held else chunk
        lines = buffer.splitlines(keepends=True)
        last = lines[-1]
        # An unfinished last line waits for more; so does a lone CR, whose LF may follow.
        if last[-1:] == b"\r" or last[-1:] != b"\n":
            held = lines.pop()
        else:
            held = b""
        batch = _events_of(builder, lines)
        if batch:
            yield batch
    if held.endswith(b"\r"):
        batch = _events_of(builder, [held])
        if batch:
            yield batch


def _events_of(builder: _EventBuilder, lines: Iterable[bytes]) -> list[SseEvent]:
    out = []
    data_lines = builder.data_lines
    for raw in lines:
        line = raw.rstrip(b"\r\n")
        # A line break never falls inside a UTF-8 sequence, so each line decodes alone.
        if line.startswith(b"data: "):
            # Nearly every line of a completion stream: what `feed` does with it, inline.
            data_lines.append(line[6:].decode("utf-8", "replace"))
            continue
        event = builder.feed(line.decode("utf-8", "replace"))
        data_lines = builder.data_lines  # a dispatch starts a new list
        if event is not None:
            out.append(event)
    return out
