"""Server-sent events parsing (the subset chat-completion streams use)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from pydantic import BaseModel


class SseEvent(BaseModel):
    """One dispatched event."""

    event: str = "message"
    data: str = ""


async def parse_sse(lines: AsyncIterator[str]) -> AsyncIterator[SseEvent]:
    """Turn a stream of lines into events, per the WHATWG event-stream rules."""
    event_type = ""
    data_lines: list[str] = []
    async for raw in lines:
        line = raw.rstrip("\r\n")
        if line == "":
            if data_lines:
                yield SseEvent(event=event_type or "message", data="\n".join(data_lines))
            event_type, data_lines = "", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            data_lines.append(value)
        elif field == "event":
            event_type = value
    # A final event without its blank line is discarded, as the spec says: the
    # stream was cut before the event was complete.
